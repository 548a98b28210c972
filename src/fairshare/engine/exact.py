"""Exact values, in one place: semivalues from the game's closed form or by enumerating all ``2^n`` coalitions in
bounded chunks, interaction indices by the Moebius transform of all values, Owen values from the coalitions of
whole sibling blocks only; and the ``exact`` registry entry over them, charged to the budget.
"""

from __future__ import annotations

import numpy as np

from .._core.arguments import Option
from ..games.base import Game
from ..indices.hierarchy import Hierarchy, OwenIndex
from ..indices.owen_coalitions import check_owen_exact, owen_coalitions
from ..indices.interactions import InteractionIndex, subsets_up_to
from ..indices.moebius import interactions_from_all_values
from ..indices.semivalues import Semivalue
from .evaluation import BudgetedEvaluator, BudgetError
from .leave_one_out import all_but_one
from .spec import Estimate, MethodSpec

__all__ = ["all_coalitions", "all_values", "enumeration_values", "exact_estimate", "exact_interactions",
           "exact_owen", "owen_exact_cost", "owen_cost_lower_bound", "run_exact", "exact_from_evaluator",
           "covers_all", "budget_covers", "check_proxy_game", "SPECS",
           "MAX_ENUMERATION_PLAYERS", "DEFAULT_CHUNK"]

# ------------------------------------------------------------------------------- semivalues and interactions
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


def covers_all(n: int, count: int | None) -> bool:
    """Whether ``count`` evaluations (a budget, or those spent) reach every one of the ``2^n`` coalitions.

    Examples
    --------
    >>> covers_all(8, 256), covers_all(8, 255), covers_all(80, 10 ** 30), covers_all(8, None)
    (True, False, False, False)
    """
    return count is not None and n <= 62 and count >= (1 << n)


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
    if semivalue.name == "leave-one-out" and via != "enumeration":    # v(N) - v(N \ i): n + 2 coalitions
        rows = np.vstack([game.empty_and_full(), all_but_one(np.arange(n), n)])[:min(n + 2, 1 << n)]
        V = np.asarray(game(rows), dtype=float).reshape(rows.shape[0], -1)
        values = V[1] - (V[2:] if n > 1 else V[:1])     # one player: N \ {0} is the empty coalition, read once
        return Estimate(values=values, stderr=np.zeros_like(values), empty_value=V[0], grand_value=V[1],
                        info={"via": "leave-one-out"})
    if n > MAX_ENUMERATION_PLAYERS and not allow_large:
        raise ValueError(
            f"exact enumeration of a {n}-player game needs 2^{n} = {float(2**n):.3g} evaluations; the limit is "
            f"{MAX_ENUMERATION_PLAYERS} players unless allow_large=True (or estimate the values with a budget)"
        )
    phi, empty, full = enumeration_values(game, semivalue, chunk_size)
    return Estimate(values=phi, stderr=np.zeros_like(phi), empty_value=empty, grand_value=full,
                    info={"via": "enumeration"})


def exact_interactions(game: Game, index: InteractionIndex, allow_large: bool = False) -> Estimate:
    """Exact interaction values ``(p, k)`` of :func:`subsets_up_to` ``(n, order)``: the game's closed form (its
    Moebius terms, a tree's leaves), else the Moebius transform of all ``2^n`` values. ``info["via"]`` says which.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: (S[:, 0] & S[:, 1]).astype(float), n_players=3)
    >>> exact_interactions(g, fs.InteractionIndex("sii", 2)).values[:, 0]
    array([0.5, 0.5, 0. , 1. , 0. , 0. ])
    """
    n = game.n_players
    subsets = subsets_up_to(n, index.order, 1)
    closed = game.exact_interactions(index, subsets) if game.knows_exact_interactions(index) else None
    if closed is not None:
        ends = np.asarray(game(game.empty_and_full()), dtype=float).reshape(2, -1)
        values = np.asarray(closed, dtype=float).reshape(subsets.shape[0], -1)
        return Estimate(values=values, stderr=np.zeros_like(values), empty_value=ends[0], grand_value=ends[1],
                        info={"via": "closed-form"})
    if n > MAX_ENUMERATION_PLAYERS and not allow_large:
        raise ValueError(
            f"exact interaction values of a {n}-player game need 2^{n} = {float(2**n):.3g} evaluations; the limit "
            f"is {MAX_ENUMERATION_PLAYERS} players unless allow_large=True (or estimate them with a budget)")
    V = all_values(game)
    values = interactions_from_all_values(V, n, index, subsets)
    return Estimate(values=values, stderr=np.zeros_like(values), empty_value=V[0], grand_value=V[-1],
                    info={"via": "enumeration"})


# ----------------------------------------------------------------------------------------------- Owen values
_OWEN_ROWS = 1 << 16     # coalitions per game call of exact Owen values
_COUNT_ROWS = 1 << 22    # above this many coalitions (with repeats) the distinct ones are not counted


def owen_cost_lower_bound(hierarchy: Hierarchy) -> int:
    """A lower bound of :func:`owen_exact_cost` that needs no counting: the distinct coalitions the player with the
    most sibling blocks reads alone (``2^(blocks + 1)``).

    Examples
    --------
    >>> owen_cost_lower_bound(Hierarchy([[0, 1], [2, 3]], 4))
    8
    """
    b = int(hierarchy.sibling_counts().max())
    return 1 << 62 if b > 60 else 2 << b


def _owen_rows(hierarchy: Hierarchy):
    """``(player, S without the player (m, n), S with it (m, n), weights (m,))`` for every player."""
    for p in range(hierarchy.n_players):
        S, w = owen_coalitions(hierarchy, p)
        T = S.copy()
        T[:, p] = True
        yield p, S, T, w


def owen_exact_cost(hierarchy: Hierarchy) -> int:
    """The number of distinct coalitions exact Owen values of ``hierarchy`` evaluate (their budget); above 4 million
    coalitions counted with repeats, that count (an upper bound, and beyond any budget a sampler would be chosen
    under).

    Examples
    --------
    >>> owen_exact_cost(Hierarchy([[0, 1], [2, 3]], 4))   # 16 for Shapley; 12 keep the pairs whole
    12
    """
    cached = getattr(hierarchy, "_exact_cost", None)
    if cached is not None:
        return cached
    size = hierarchy.exact_size()
    if size > _COUNT_ROWS:
        cost = size                 # an upper bound (shared coalitions counted once per player): beyond any budget
    else:
        keys = [np.packbits(np.concatenate([S, T]), axis=1) for _, S, T, _ in _owen_rows(hierarchy)]
        cost = int(np.unique(np.concatenate(keys), axis=0).shape[0])
    hierarchy._exact_cost = cost
    return cost


def exact_owen(game, index: OwenIndex, evaluator: BudgetedEvaluator) -> Estimate:
    """Exact Owen values ``(n, k)`` of ``game``: every coalition of whole sibling blocks along each player's path,
    each evaluated once (the evaluator keeps values; the budget counts distinct coalitions).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: (S[:, 0] & S[:, 2]).astype(float), n_players=3)
    >>> ix = OwenIndex(Hierarchy([[0, 1], [2]], 3))
    >>> exact_owen(g, ix, BudgetedEvaluator(g, None)).values[:, 0]
    array([0.5, 0. , 0.5])
    """
    h = index.hierarchy
    n = h.n_players
    check_owen_exact(h)                                   # before the game is called
    ends = evaluator(np.array([np.zeros(n, bool), np.ones(n, bool)]))
    values = np.zeros((n, ends.shape[1]))
    for p, S, T, w in _owen_rows(h):
        for start in range(0, S.shape[0], _OWEN_ROWS):
            stop = start + _OWEN_ROWS
            both = evaluator(np.concatenate([S[start:stop], T[start:stop]]))
            m = min(stop, S.shape[0]) - start
            values[p] += w[start:stop] @ (both[m:] - both[:m])
    return Estimate(values=values, stderr=np.zeros_like(values), empty_value=ends[0], grand_value=ends[1],
                    info={"via": "enumeration", "coalitions": evaluator.n_spent})


def check_proxy_game(proxy: Game, n: int, sv: Semivalue, name: str = "control_variate") -> None:
    """Refuse, naming ``name``, a proxy game whose exact values the run would need but could not get: one of other
    than ``n`` players, or one without a closed form for ``sv`` beyond ``MAX_ENUMERATION_PLAYERS`` players (its
    values are enumerated; a 25-player proxy was refused only after the game's first evaluations, by a message about
    exact enumeration that named no argument).

    Examples
    --------
    >>> import fairshare as fs
    >>> check_proxy_game(fs.games.AdditiveGame([1.0] * 30), 30, fs.Semivalue.shapley())    # a closed form
    >>> check_proxy_game(fs.games.FunctionGame(lambda S: S.sum(axis=1), n_players=30), 30, fs.Semivalue.shapley())
    Traceback (most recent call last):
    ...
    ValueError: control_variate: a proxy game's exact shapley values are needed; FunctionGame has no closed form for \
them and its 2^30 coalitions are beyond enumeration (at most 22 players): give a game that knows its values \
(fs.games.AdditiveGame, ...) or proxy values of shape (30,)
    """
    if proxy.n_players != n:
        raise ValueError(f"{name} game has {proxy.n_players} players, the game has {n}")
    if n > MAX_ENUMERATION_PLAYERS and not proxy.knows_exact_values(sv):
        raise ValueError(f"{name}: a proxy game's exact {sv.name} values are needed; {type(proxy).__name__} has no "
                         f"closed form for them and its 2^{n} coalitions are beyond enumeration (at most "
                         f"{MAX_ENUMERATION_PLAYERS} players): give a game that knows its values "
                         f"(fs.games.AdditiveGame, ...) or proxy values of shape ({n},)")


def budget_covers(sv: Semivalue | InteractionIndex | OwenIndex, n: int, budget: int | None) -> bool:
    """Whether ``budget`` evaluations pay for every coalition the exact values of ``sv`` on ``n`` players read: the
    coalitions of whole blocks for Owen values, all ``2^n`` otherwise (``n`` up to ``MAX_ENUMERATION_PLAYERS``).

    Examples
    --------
    >>> import fairshare as fs
    >>> budget_covers(fs.Semivalue.shapley(), 3, 8), budget_covers(fs.Semivalue.shapley(), 3, 7)
    (True, False)
    """
    if budget is None:
        return False
    if isinstance(sv, OwenIndex):
        return owen_exact_cost(sv.hierarchy) <= budget
    return n <= MAX_ENUMERATION_PLAYERS and covers_all(n, budget)


def exact_from_evaluator(sv: Semivalue, evaluator: BudgetedEvaluator) -> Estimate | None:
    """Exact values through ``evaluator`` (the coalitions it holds cost nothing again) where every coalition they
    read fits its budget: Owen values (the coalitions of whole blocks), semivalues and interaction indices (all
    ``2^n``, ``n`` up to ``MAX_ENUMERATION_PLAYERS``); None otherwise. What a sampler that finds no new coalition
    leaves: its evaluations are (nearly) all the exact values need.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: S.sum(axis=1) ** 2.0, n_players=3)
    >>> ev = BudgetedEvaluator(g, 100); _ = ev(np.ones((1, 3), dtype=bool))
    >>> exact_from_evaluator(fs.Semivalue.shapley(), ev).values[:, 0].tolist(), ev.n_spent
    ([3.0, 3.0, 3.0], 8)
    >>> exact_from_evaluator(fs.Semivalue.shapley(), BudgetedEvaluator(g, 7)) is None
    True
    """
    n, budget = evaluator.game.n_players, evaluator.budget
    if isinstance(sv, OwenIndex):
        if budget is not None and owen_exact_cost(sv.hierarchy) > budget:
            return None
        try:
            return exact_owen(evaluator.game, sv, evaluator)
        except BudgetError:
            return None
    if n > MAX_ENUMERATION_PLAYERS or budget is not None and not covers_all(n, budget):
        return None
    try:
        if isinstance(sv, InteractionIndex):
            V = all_values(_Through(evaluator))
            phi, empty, full = interactions_from_all_values(V, n, sv, subsets_up_to(n, sv.order, 1)), V[0], V[-1]
        else:
            phi, empty, full = enumeration_values(_Through(evaluator), sv)
    except BudgetError:
        return None
    return Estimate(values=phi, stderr=np.zeros_like(phi), empty_value=empty, grand_value=full,
                    info={"via": "enumeration"})


class _Through:
    """``evaluator`` as :func:`enumeration_values` reads a game: its players and its (kept) values."""

    def __init__(self, evaluator: BudgetedEvaluator) -> None:
        self.evaluator, self.n_players = evaluator, evaluator.game.n_players

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        return self.evaluator(coalitions)


def run_exact(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, options: dict) -> Estimate:
    """The ``exact`` method as the engine runs it: Owen values by :func:`exact_owen` (through the evaluator),
    interaction indices by :func:`exact_interactions`, semivalues by :func:`exact_estimate`; the game's evaluations
    charged to the budget.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: S.sum(axis=1) ** 2.0, n_players=3)
    >>> ev = BudgetedEvaluator(g, 8)
    >>> run_exact(g, fs.Semivalue.shapley(), ev, {"allow_large": False}).values[:, 0].tolist(), ev.n_spent
    ([3.0, 3.0, 3.0], 8)
    """
    before = game.n_evaluations
    if isinstance(sv, OwenIndex):
        return exact_owen(game, sv, evaluator)
    if isinstance(sv, InteractionIndex):
        result = exact_interactions(game, sv, allow_large=options["allow_large"])
    else:
        result = exact_estimate(game, sv, allow_large=options["allow_large"])
    evaluator.charge(game.n_evaluations - before)
    return result


SPECS = [MethodSpec(
    name="exact", indices=("any semivalue", "interactions", "owen"),
    description=f"exact values: the game's closed form, or enumeration of all 2^n coalitions "
                f"(n <= {MAX_ENUMERATION_PLAYERS} unless allow_large); Owen values: the coalitions of whole blocks only",
    sampler=None, solver=None, exact=run_exact,
    options=(Option("allow_large", False, f"enumerate games of more than {MAX_ENUMERATION_PLAYERS} players",
                    kind="bool"),),
    min_budget=lambda n, sv, opts: owen_exact_cost(sv.hierarchy) if isinstance(sv, OwenIndex) else 2 ** n,
    needs_budget=False)]
