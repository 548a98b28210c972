"""Exact semivalues: the game's closed form, or enumeration of all ``2^n`` coalitions in bounded chunks."""

from __future__ import annotations

import numpy as np

from ..games.base import Game
from ..indices.semivalues import Semivalue
from .spec import Estimate

__all__ = ["all_coalitions", "all_values", "enumeration_values", "exact_estimate", "MAX_ENUMERATION_PLAYERS", "DEFAULT_CHUNK"]

#: Enumeration above this many players needs ``allow_large=True`` (2^22 = 4.2 million evaluations).
MAX_ENUMERATION_PLAYERS = 22
#: coalitions evaluated per game call during enumeration
DEFAULT_CHUNK = 1 << 16


def all_coalitions(n_players: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Coalitions number ``start .. stop-1`` of all ``2^n`` (bit ``i`` of the number is player ``i``).

    Examples
    --------
    >>> all_coalitions(2).astype(int)
    array([[0, 0],
           [1, 0],
           [0, 1],
           [1, 1]])
    """
    stop = (1 << n_players) if stop is None else stop
    codes = np.arange(start, stop, dtype=np.uint64)
    shifts = np.arange(n_players, dtype=np.uint64)
    return ((codes[:, None] >> shifts[None, :]) & np.uint64(1)).astype(bool)


def _chunks(game: Game, chunk_size: int):
    """``(start, stop, coalitions, values (m, k))`` for all ``2^n`` coalitions, ``chunk_size`` at a time."""
    n = game.n_players
    total = 1 << n
    for start in range(0, total, chunk_size):
        stop = min(start + chunk_size, total)
        X = all_coalitions(n, start, stop)
        V = np.asarray(game(X), dtype=float)
        yield start, stop, X, V.reshape(V.shape[0], -1)


def all_values(game: Game, chunk_size: int = DEFAULT_CHUNK) -> np.ndarray:
    """The values ``(2^n, k)`` of every coalition of ``game``, in :func:`all_coalitions` order.

    Examples
    --------
    >>> import fairshare as fs
    >>> all_values(fs.games.AdditiveGame([1.0, 2.0]))[:, 0]
    array([0., 1., 2., 3.])
    """
    return np.concatenate([V for *_, V in _chunks(game, chunk_size)])


def enumeration_values(game: Game, semivalue: Semivalue,
                       chunk_size: int = DEFAULT_CHUNK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Semivalues by evaluating all ``2^n`` coalitions, ``chunk_size`` at a time.

    Uses ``phi_i = sum_S v(S) * (1[i in S] p_{|S|-1} - 1[i not in S] p_{|S|})``, so each
    chunk contributes one matrix product. Returns ``(values (n, k), v(empty) (k,), v(N) (k,))``.

    Examples
    --------
    >>> import fairshare as fs
    >>> phi, empty, full = enumeration_values(fs.games.AdditiveGame([1.0, 2.0]), fs.Semivalue.shapley())
    >>> phi[:, 0]
    array([1., 2.])
    """
    n = game.n_players
    p = semivalue.weights(n)
    w_in = np.concatenate([[0.0], p])   # by coalition size s: p_{s-1} when i is in S
    w_out = np.concatenate([p, [0.0]])  # p_s when i is not in S
    total = 1 << n
    phi = None
    empty = full = None
    for start, stop, X, V in _chunks(game, chunk_size):
        sizes = X.sum(axis=1)
        part = X.T.astype(float) @ (V * (w_in + w_out)[sizes][:, None]) - (V * w_out[sizes][:, None]).sum(axis=0)
        phi = part if phi is None else phi + part
        if start == 0:
            empty = V[0].copy()
        if stop == total:
            full = V[-1].copy()
    return phi, empty, full


def exact_estimate(game: Game, semivalue: Semivalue, via: str = "auto", allow_large: bool = False,
                   chunk_size: int = DEFAULT_CHUNK) -> Estimate:
    """Exact values ``(n, k)`` of ``game``: its closed form when it has one (and ``via`` allows it), else every
    coalition evaluated. Zero standard errors; ``info["via"]`` says which.

    Examples
    --------
    >>> import fairshare as fs
    >>> exact_estimate(fs.games.AdditiveGame([1.0, 2.0]), fs.Semivalue.banzhaf()).info
    {'via': 'closed-form'}
    """
    n = game.n_players
    if via != "enumeration":
        closed = game.exact_values(semivalue)
        if closed is not None:
            ends = np.asarray(game(game.empty_and_full()), dtype=float).reshape(2, -1)
            values = np.asarray(closed, dtype=float).reshape(n, -1)
            return Estimate(values=values, stderr=np.zeros_like(values), empty_value=ends[0], grand_value=ends[1],
                            info={"via": "closed-form"})
        if via == "closed-form":
            raise ValueError(f"{type(game).__name__} has no closed form for {semivalue.name}; use via='enumeration'")
    if n > MAX_ENUMERATION_PLAYERS and not allow_large:
        raise ValueError(
            f"exact enumeration of a {n}-player game needs 2^{n} = {float(2**n):.3g} evaluations; the limit is "
            f"{MAX_ENUMERATION_PLAYERS} players unless allow_large=True (or estimate the values with a budget)"
        )
    phi, empty, full = enumeration_values(game, semivalue, chunk_size)
    return Estimate(values=phi, stderr=np.zeros_like(phi), empty_value=empty, grand_value=full,
                    info={"via": "enumeration"})
