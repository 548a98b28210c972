"""Owen values on the one engine: exact (the coalitions of whole sibling blocks only) and ``owen-permutation``
(permutation Monte Carlo over the orders that keep every block together, the optimized walk).

A random order that keeps the hierarchy's blocks together is drawn by sorting the players on one random key
per node, level by level; its marginal contributions are unbiased for the Owen value, so the permutation
solver (means and standard errors per player) is the Shapley one, unchanged.
"""

from __future__ import annotations

import numpy as np

from .._core.arguments import Option
from ..indices.hierarchy import Hierarchy, OwenIndex, owen_coalitions
from .evaluation import BudgetedEvaluator
from .montecarlo import PermutationSolver
from .samplers import PermutationSampler
from .spec import Estimate, MethodSpec, Setup

__all__ = ["exact_owen", "owen_exact_cost", "owen_cost_lower_bound", "OwenPermutations", "SPECS"]

_ROWS = 1 << 16          # coalitions per game call of exact Owen values
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


def _rows(hierarchy: Hierarchy):
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
        keys = [np.packbits(np.concatenate([S, T]), axis=1) for _, S, T, _ in _rows(hierarchy)]
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
    ends = evaluator(np.array([np.zeros(n, bool), np.ones(n, bool)]))
    values = np.zeros((n, ends.shape[1]))
    for p, S, T, w in _rows(h):
        for start in range(0, S.shape[0], _ROWS):
            stop = start + _ROWS
            both = evaluator(np.concatenate([S[start:stop], T[start:stop]]))
            m = min(stop, S.shape[0]) - start
            values[p] += w[start:stop] @ (both[m:] - both[:m])
    return Estimate(values=values, stderr=np.zeros_like(values), empty_value=ends[0], grand_value=ends[1],
                    info={"via": "enumeration", "coalitions": evaluator.n_spent})


class OwenPermutations(PermutationSampler):
    """Random orders that keep every block of the hierarchy together (uniform over them), walked as the
    optimized permutation walk (``n - 1`` new coalitions per order at most; repeats cost nothing).

    Examples
    --------
    >>> from fairshare.engine.protocols import History
    >>> s = OwenPermutations(np.random.default_rng(0), Hierarchy([[0, 1], [2, 3]], 4))
    >>> s.propose(9, History()).perms.shape
    (3, 4)
    """

    def __init__(self, rng: np.random.Generator, hierarchy: Hierarchy, antithetic: bool = False,
                 permutations: int | None = None) -> None:
        super().__init__(rng, hierarchy.n_players, antithetic=antithetic, permutations=permutations)
        self.hierarchy = hierarchy

    def draw(self, t: int) -> np.ndarray:
        return self.hierarchy.permutations(self.rng, t, self.antithetic)


def _sampler(setup: Setup) -> OwenPermutations:
    o = setup.options
    return OwenPermutations(setup.sampler_rng, setup.semivalue.hierarchy, antithetic=o["antithetic"],
                            permutations=o["permutations"])


def _min_budget(n: int, ix: OwenIndex, opts: dict) -> int:
    count = opts.get("permutations") or (2 if opts.get("antithetic") else 1)
    return 2 + max(n - 1, 1) * count


SPECS = [MethodSpec(
    name="owen-permutation", indices=("owen",),
    description="Owen values: permutation Monte Carlo over the orders that keep every block of the partition "
                "(or hierarchy) together, the optimized walk",
    sampler=_sampler, solver=PermutationSolver,
    options=(Option("antithetic", False, "pair every order with its reverse", kind="bool"),
             Option("permutations", None, "number of orders (default: as many as the budget pays for)",
                    kind="int", minimum=1, none_ok=True)),
    min_budget=_min_budget, default_for={"owen": 10})]
