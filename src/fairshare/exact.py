"""Exact semivalues: a game's closed form, or enumeration of all 2^n coalitions in bounded chunks."""

from __future__ import annotations

import numpy as np

from .attribution import Attribution
from .game import Game
from .semivalues import Semivalue, resolve_index

__all__ = ["exact", "enumeration_values", "MAX_ENUMERATION_PLAYERS", "all_coalitions"]

#: Enumeration above this many players needs ``allow_large=True`` (2^22 = 4.2 million evaluations).
MAX_ENUMERATION_PLAYERS = 22
_DEFAULT_CHUNK = 1 << 16


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


def enumeration_values(game: Game, semivalue: Semivalue, chunk_size: int = _DEFAULT_CHUNK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    for start in range(0, total, chunk_size):
        stop = min(start + chunk_size, total)
        X = all_coalitions(n, start, stop)
        V = game(X)
        V = V[:, None] if V.ndim == 1 else V
        sizes = X.sum(axis=1)
        part = X.T.astype(float) @ (V * (w_in + w_out)[sizes][:, None]) - (V * w_out[sizes][:, None]).sum(axis=0)
        phi = part if phi is None else phi + part
        if start == 0:
            empty = V[0].copy()
        if stop == total:
            full = V[-1].copy()
    return phi, empty, full


def exact(game: Game, index: str | Semivalue = "shapley", *, via: str = "auto", allow_large: bool = False,
          chunk_size: int = _DEFAULT_CHUNK) -> Attribution:
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
    n = game.n_players
    before = game.n_evaluations
    if via != "enumeration":
        closed = game.exact_values(sv)
        if closed is not None:
            ends = game(game.empty_and_full())
            values = np.asarray(closed, dtype=float)
            return Attribution(values=values, stderr=np.zeros_like(values), index=sv.name, method="exact",
                               options={"via": "closed-form"}, n_evaluations=game.n_evaluations - before,
                               empty_value=_scalar(ends[0]), grand_value=_scalar(ends[1]),
                               player_names=list(game.player_names))
        if via == "closed-form":
            raise ValueError(f"{type(game).__name__} has no closed form for {sv.name}; use via='enumeration'")
    if n > MAX_ENUMERATION_PLAYERS and not allow_large:
        raise ValueError(
            f"exact enumeration of a {n}-player game needs 2^{n} = {float(2**n):.3g} evaluations; the limit is "
            f"{MAX_ENUMERATION_PLAYERS} players unless allow_large=True (or use fairshare.estimate)"
        )
    phi, empty, full = enumeration_values(game, sv, chunk_size)
    squeeze = not game.n_outputs
    values = phi[:, 0] if squeeze else phi
    return Attribution(values=values, stderr=np.zeros_like(values), index=sv.name, method="exact",
                       options={"via": "enumeration"}, n_evaluations=game.n_evaluations - before,
                       empty_value=_scalar(empty), grand_value=_scalar(full),
                       player_names=list(game.player_names))


def _scalar(v: np.ndarray) -> float | np.ndarray:
    v = np.asarray(v, dtype=float)
    return float(v.reshape(-1)[0]) if v.size == 1 else v
