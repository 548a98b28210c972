"""NoisyGame: a game observed with Gaussian noise (the Kernel Banzhaf paper's robustness experiments)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import SeedLike, check_int, check_positive_float
from .._core.seeds import generator
from .base import Game, GameWrapper
from ..indices.semivalues import Semivalue

__all__ = ["NoisyGame"]


class NoisyGame(GameWrapper):
    """Adds fresh ``N(0, sigma^2)`` noise to every query of ``game``.

    With ``player`` given, only coalitions containing that player are perturbed
    (the one-player and adversarial-player settings of the Kernel Banzhaf paper,
    App. I). The noise has mean zero, so the exact values are those of ``game``.

    Parameters
    ----------
    game : Game
    sigma : float
        Standard deviation of the noise (>= 0).
    player : int, optional
        Perturb only coalitions that contain this player.
    seed : int, Generator or None
        Source of the noise (the sequence of queries fixes the draws).

    Examples
    --------
    >>> import fairshare as fs
    >>> base = fs.games.AdditiveGame([1.0, 2.0])
    >>> g = fs.games.NoisyGame(base, sigma=0.1, seed=0)
    >>> fs.exact(g, "shapley").values   # the closed form of the noise-free game
    array([1., 2.])
    """

    def __init__(self, game: Game, sigma: float, player: int | None = None, seed: SeedLike = None) -> None:
        if not isinstance(game, Game):
            raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
        super().__init__(game.n_players, player_names=game.player_names, batch_size=game.batch_size)
        self.game = game
        self.sigma = check_positive_float(sigma, "sigma", allow_zero=True)
        if player is not None:
            player = check_int(player, "player", minimum=0)
            if player >= game.n_players:
                raise ValueError(f"player must be in [0, {game.n_players}), got {player}")
        self.player = player
        self.rng = generator(seed)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        clean = self.game(coalitions)
        noise = self.rng.normal(0.0, self.sigma, size=clean.shape) if self.sigma > 0 else np.zeros_like(clean)
        if self.player is not None:
            hit = coalitions[:, self.player]
            noise = noise * (hit if clean.ndim == 1 else hit[:, None])
        return clean + noise

    def knows_exact_values(self, index: Semivalue) -> bool:
        return self.game.knows_exact_values(index)

    def exact_values(self, index: Semivalue) -> np.ndarray | None:
        return self.game.exact_values(index)
