"""Permutations for permutation Monte Carlo: uniform, stratified (cyclic shifts) or antithetic pairs.

A permutation walks from the empty to the grand coalition adding one player at a time; with
``reuse`` (the projected-SGD paper's Algorithm 1) its ``n - 1`` inner coalitions are evaluated
once and each serves two marginal contributions; without, every marginal ``v(S + i) - v(S)`` is
evaluated afresh (classic Monte Carlo, ``2n`` evaluations, for comparisons). Antithetic
permutations come in pairs (a permutation and its reverse) and a round never ends mid-pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import History, Sampler

__all__ = ["PermutationSampler", "PermutationBatch", "draw_permutations"]

_BLOCK_BOOLS = 1 << 26           # most booleans of coalition rows materialized per batch (64 MB)


def draw_permutations(rng: np.random.Generator, t: int, n: int, antithetic: bool, stratified: bool) -> np.ndarray:
    """``t`` permutations of ``range(n)`` as rows: uniform; with ``stratified``, blocks of ``n`` cyclic shifts
    of one random permutation (each player takes every position once per block); with ``antithetic``,
    every second permutation is the reverse of the one before.

    Examples
    --------
    >>> P = draw_permutations(np.random.default_rng(0), 4, 4, antithetic=False, stratified=True)
    >>> sorted(P[:, 0].tolist()) == [0, 1, 2, 3]     # every player first exactly once
    True
    """
    base_count = (t + 1) // 2 if antithetic else t
    if stratified:
        blocks = -(-base_count // n)
        seeds = np.argsort(rng.random((blocks, n)), axis=1)
        shifts = (np.arange(n)[None, :] + np.arange(n)[:, None]) % n          # (n shifts, n positions)
        base = seeds[:, shifts].reshape(-1, n)[:base_count]
    else:
        base = np.argsort(rng.random((base_count, n)), axis=1)
    if not antithetic:
        return base
    return np.stack([base, base[:, ::-1]], axis=1).reshape(-1, n)[:t]


@dataclass
class PermutationBatch:
    """Permutations and the coalitions to evaluate for them."""

    perms: np.ndarray            # (t, n)
    coalitions: np.ndarray       # reuse: (t (n - 1), n) inner chain; classic: (2 t n, n) before / after
    reuse: bool
    n_draws: int
    fresh: bool                  # classic: evaluate every row afresh (no reuse of earlier values)


class PermutationSampler(Sampler):
    """Permutations, as many as the allowance pays for (``permutations`` fixes their total).

    Examples
    --------
    >>> s = PermutationSampler(np.random.default_rng(0), 4, antithetic=True)
    >>> s.propose(9, History()).perms.shape           # 3 evaluations each, pairs only: 2 permutations
    (2, 4)
    """

    def __init__(self, rng: np.random.Generator, n_players: int, antithetic: bool = False, stratified: bool = False,
                 reuse: bool = True, permutations: int | None = None) -> None:
        super().__init__(rng, n_players)
        self.antithetic, self.stratified, self.reuse = antithetic, stratified, reuse
        self.unit_cost = n_players - 1 if reuse else 2 * n_players
        self.limit = permutations
        self.drawn = 0

    def schedule(self, total: int, rounds: bool) -> list[int]:
        if not rounds:
            return [total]
        per = 2 * self.unit_cost if self.antithetic else self.unit_cost
        return super().schedule(total, rounds) if total > 4 * per else [total]

    def propose(self, allowance: int, history: History) -> PermutationBatch | None:
        n = self.d
        t = allowance // self.unit_cost
        t = min(t, max(2, _BLOCK_BOOLS // (n * n)))
        if self.limit is not None:
            t = min(t, self.limit - self.drawn)
        if self.antithetic:
            t -= t % 2                                  # never end mid-pair
        if t < 1:
            return None
        perms = draw_permutations(self.rng, t, n, self.antithetic, self.stratified)
        self.drawn += t
        ranks = np.empty_like(perms)
        ranks[np.arange(t)[:, None], perms] = np.arange(n)[None, :]
        if self.reuse:
            # coalition after j players joined: players whose rank is below j (j = 1..n-1)
            X = ranks[:, None, :] < np.arange(1, n)[None, :, None]
            return PermutationBatch(perms, X.reshape(-1, n), True, t, False)
        before = ranks[:, None, :] < np.arange(n)[None, :, None]
        after = ranks[:, None, :] < np.arange(1, n + 1)[None, :, None]
        return PermutationBatch(perms, np.concatenate([before.reshape(-1, n), after.reshape(-1, n)]), False, t, True)
