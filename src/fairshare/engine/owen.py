"""Owen values on the one engine: ``owen-permutation`` (permutation Monte Carlo over the orders that keep every
block together, the optimized walk); exact Owen values (the coalitions of whole sibling blocks only) live with the
other exact values in :mod:`fairshare.engine.exact` and are importable from here too.

A random order that keeps the hierarchy's blocks together is drawn by sorting the players on one random key
per node, level by level; its marginal contributions are unbiased for the Owen value, so the permutation
solver (means and standard errors per player) is the Shapley one, unchanged.
"""

from __future__ import annotations

import numpy as np

from .._core.arguments import Option
from ..indices.hierarchy import Hierarchy, OwenIndex
from .montecarlo import PermutationSolver
from .samplers import PermutationSampler
from .spec import MethodSpec, Setup

__all__ = ["OwenPermutations", "SPECS"]


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
