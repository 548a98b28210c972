"""Coalition pairs ``(S, S + i)`` for per-player Monte Carlo (Kernel Banzhaf paper, section 4.1), and
independent coalitions for maximum sample reuse.

Both draw ``S`` holding every player independently with probability ``w`` (1/2 for Banzhaf; the
parameter of a weighted Banzhaf value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exact import all_coalitions
from .subsets import random_subsets
from ..protocols import History, Sampler, doubling

__all__ = ["MarginalPairs", "MarginalBatch", "IndependentCoalitions", "WeightedCoalitions"]

_BLOCK_BOOLS = 1 << 26


@dataclass
class MarginalBatch:
    """Pairs ``(S, S + who)``: rows ``0..t-1`` of ``coalitions`` are ``S``, rows ``t..2t-1`` are ``S + who``."""

    who: np.ndarray          # (t,)
    coalitions: np.ndarray   # (2t, n)
    n_draws: int
    weights: np.ndarray | None = None      # probability of S given who (enumeration), None for draws
    fresh: bool = False


class _Independent(Sampler):
    """Coalitions holding each player independently with probability ``w``; every coalition at once (one round)
    when the budget covers them and ``n <= enumerable``."""

    enumerable = 62

    def __init__(self, rng: np.random.Generator, n_players: int, w: float) -> None:
        super().__init__(rng, n_players)
        self.w = w
        self.first = True

    def schedule(self, total: int, rounds: bool) -> list[int]:
        if self.d <= self.enumerable and total + 2 >= (1 << self.d):
            return [total]
        return doubling(total, max(4 * self.d, total // 64)) if rounds else [total]


class MarginalPairs(_Independent):
    """Pairs spread evenly over players, the remainder to random players.

    Examples
    --------
    >>> b = MarginalPairs(np.random.default_rng(0), 5, 0.5).propose(20, History())
    >>> np.bincount(b.who).tolist(), bool(np.all(b.coalitions[10:].sum(1) == b.coalitions[:10].sum(1) + 1))
    ([2, 2, 2, 2, 2], True)
    """

    unit_cost = 2
    enumerable = 16

    def propose(self, allowance: int, history: History) -> MarginalBatch | None:
        n = self.d
        first, self.first = self.first, False
        if self.enumerated:
            return None                                   # every pair was taken: nothing more to learn
        if first and n <= 16 and allowance + 2 >= (1 << n):        # (the empty and grand coalitions: known)
            self.enumerated = True
            # every pair (S, S + i): their 2^n coalitions, each S weighted by its probability
            S = all_coalitions(n)
            who = np.repeat(np.arange(n), S.shape[0])
            without = np.tile(S, (n, 1))
            keep = ~without[np.arange(who.size), who]
            who, without = who[keep], without[keep]
            with_i = without.copy()
            with_i[np.arange(who.size), who] = True
            h = without.sum(axis=1)
            p = self.w ** h * (1.0 - self.w) ** (n - 1 - h)
            return MarginalBatch(who, np.concatenate([without, with_i]), who.size, p)
        t = min(allowance // 2, max(1, _BLOCK_BOOLS // (2 * n)))
        if t < 1:
            return None
        counts = np.full(n, t // n)
        counts[self.rng.choice(n, t % n, replace=False)] += 1
        who = np.repeat(np.arange(n), counts)                            # sorted by player
        without = self.rng.random((t, n)) < self.w
        without[np.arange(t), who] = False
        with_i = without.copy()
        with_i[np.arange(t), who] = True
        return MarginalBatch(who, np.concatenate([without, with_i]), t)


@dataclass
class WeightedCoalitions:
    """Coalitions with a probability weight each (None: i.i.d. draws, equal weights)."""

    coalitions: np.ndarray
    weights: np.ndarray | None
    n_draws: int
    exact: bool = False
    fresh: bool = False


class IndependentCoalitions(_Independent):
    """Coalitions holding each player independently with probability ``w``; once the allowance covers
    all ``2^n`` coalitions, all of them with their probabilities (the estimate is then exact).

    Examples
    --------
    >>> b = IndependentCoalitions(np.random.default_rng(0), 3, 0.5).propose(8, History())
    >>> b.exact, float(b.weights.sum())
    (True, 1.0)
    """

    def propose(self, allowance: int, history: History) -> WeightedCoalitions | None:
        first, self.first = self.first, False
        n = self.d
        if self.enumerated:
            return None
        if first and n <= 22 and allowance + 2 >= (1 << n):        # (the empty and grand coalitions: known)
            self.enumerated = True
            S = all_coalitions(n)
            h = S.sum(axis=1)
            p = self.w ** h * (1.0 - self.w) ** (n - h)
            return WeightedCoalitions(S, p, S.shape[0], exact=True)
        m = min(allowance, max(1, _BLOCK_BOOLS // n))
        if m < 1:
            return None
        sizes = self.rng.binomial(n, self.w, size=m)
        return WeightedCoalitions(random_subsets(self.rng, n, sizes), None, m)
