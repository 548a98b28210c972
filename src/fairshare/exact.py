"""``fairshare.exact``: exact semivalues, from a game's closed form or by enumerating its ``2^n`` coalitions."""

from __future__ import annotations

import numpy as np

from .attribution import Attribution
from .estimation.enumeration import DEFAULT_CHUNK, exact_estimate
from .game import Game
from .semivalues import Semivalue, resolve_index

__all__ = ["exact"]


def exact(game: Game, index: str | Semivalue = "shapley", *, via: str = "auto", allow_large: bool = False,
          chunk_size: int = DEFAULT_CHUNK) -> Attribution:
    """Exact semivalues of ``game``.

    Games that know their values (synthetic games, tree games) answer in closed
    form; otherwise every one of the ``2^n`` coalitions is evaluated, in chunks of
    ``chunk_size`` so memory stays bounded.

    Parameters
    ----------
    game : Game
    index : "shapley", "banzhaf" or Semivalue
    via : {"auto", "closed-form", "enumeration"}
        ``"auto"`` uses the closed form when the game has one.
    allow_large : bool
        Permit enumeration above ``MAX_ENUMERATION_PLAYERS`` players.
    chunk_size : int
        Coalitions evaluated per game call during enumeration.

    Returns
    -------
    Attribution
        ``stderr`` is all zeros; ``n_evaluations`` counts the game calls made.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.WeightedVotingGame([2, 1, 1], quota=3)
    >>> fs.exact(g, "shapley", via="enumeration").values
    array([0.66666667, 0.16666667, 0.16666667])
    """
    if not isinstance(game, Game):
        raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
    if via not in ("auto", "closed-form", "enumeration"):
        raise ValueError(f"via must be 'auto', 'closed-form' or 'enumeration', got {via!r}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    sv = resolve_index(index, game.n_players)
    before = game.n_evaluations
    result = exact_estimate(game, sv, via=via, allow_large=allow_large, chunk_size=chunk_size)
    squeeze = not game.n_outputs

    def out(a: np.ndarray) -> float | np.ndarray:
        a = np.asarray(a, dtype=float)
        a = a[..., 0] if squeeze else a
        return float(a) if a.ndim == 0 else a

    return Attribution(values=out(result.values), stderr=out(result.stderr), index=sv.name, method="exact",
                       options=dict(result.info), n_evaluations=game.n_evaluations - before,
                       empty_value=out(result.empty_value), grand_value=out(result.grand_value),
                       player_names=list(game.player_names))
