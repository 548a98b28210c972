"""RestrictedGame: the game of a subset of the players, the others held absent."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..game import Game

__all__ = ["RestrictedGame"]


class RestrictedGame(Game):
    """The game of the players ``active`` of ``game``; the other players are never in a coalition.

    Used to drop null players before estimating (their values are 0 for every semivalue).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdditiveGame([1.0, 0.0, 2.0])
    >>> r = RestrictedGame(g, [0, 2])
    >>> r(np.array([[True, True]]))
    array([3.])
    """

    def __init__(self, game: Game, active: Any) -> None:
        idx = np.asarray(active, dtype=np.int64).reshape(-1)
        if idx.size < 1 or idx.min() < 0 or idx.max() >= game.n_players or np.unique(idx).size != idx.size:
            raise ValueError(f"active must list distinct player indices of the game, got {active!r}")
        super().__init__(idx.size, player_names=[game.player_names[i] for i in idx], batch_size=game.batch_size)
        self.game = game
        self.active = idx

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        full = np.zeros((coalitions.shape[0], self.game.n_players), dtype=bool)
        full[:, self.active] = coalitions
        return self.game(full)
