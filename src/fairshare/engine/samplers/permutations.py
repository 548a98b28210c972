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

from ..protocols import History, Sampler

__all__ = ["PermutationSampler", "PermutationBatch", "draw_permutations", "TruncatedPermutations", "WalkBatch", "Walks"]

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
        # evaluations of a permutation (of an antithetic pair: the sampler never draws half of one)
        self.unit_cost = (n_players - 1 if reuse else 2 * n_players) * (2 if antithetic else 1)
        self.limit = permutations
        self.drawn = 0
        self.spare = np.zeros((0, n_players), dtype=np.int64)     # stratified: the rest of the last block drawn

    def schedule(self, total: int, rounds: bool) -> list[int]:
        if not rounds:
            return [total]
        return super().schedule(total, rounds) if total > 4 * self.unit_cost else [total]

    def draw(self, t: int) -> np.ndarray:
        """``t`` permutations (rows) from the sampler's stream: the same rows whether drawn at once or in rounds
        (stratified blocks are drawn whole and their rest kept for the next round)."""
        if not self.stratified:
            return draw_permutations(self.rng, t, self.d, self.antithetic, False)
        block = self.d * (2 if self.antithetic else 1)
        more = -(-max(t - self.spare.shape[0], 0) // block) * block
        rows = np.concatenate([self.spare, draw_permutations(self.rng, more, self.d, self.antithetic, True)])
        self.spare = rows[t:]
        return rows[:t]

    def propose(self, allowance: int, history: History) -> PermutationBatch | None:
        n = self.d
        t = allowance // self.unit_cost * (2 if self.antithetic else 1)
        t = min(t, max(2, _BLOCK_BOOLS // (n * n)))
        if self.limit is not None:
            t = min(t, self.limit - self.drawn)
        if self.antithetic:
            t -= t % 2                                  # never end mid-pair
        if t < 1:
            return None
        perms = self.draw(t)
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


# ------------------------------------------------------------------------------ truncated walks
@dataclass
class WalkBatch:
    """Steps of truncated permutation walks: row ``r`` is walk ``ids[r]`` after ``steps[r]`` players joined."""

    new_ids: np.ndarray          # (a,) walks started with this batch
    new_perms: np.ndarray        # (a, n) their permutations
    ids: np.ndarray              # (r,)
    steps: np.ndarray            # (r,) in 1 .. n - 1
    coalitions: np.ndarray       # (r, n)
    n_draws: int
    fresh: bool = False


class Walks:
    """Permutation walks under way: the values seen along each and where each was truncated.

    A walk is truncated at the first step ``j`` (all steps up to ``j`` known) that ends ``patience`` steps in a
    row whose values are within ``tol * |v(N)|`` of ``v(N)`` (every output): the players after it get a zero
    marginal (Ghorbani and Zou 2019, TMC-Shapley; their code waits for six steps in a row). ``tol = 0`` never
    truncates. The sampler and the solver each keep one and apply the same rule to the same values.

    Examples
    --------
    >>> w = Walks(3, 0.1, np.array([0.0]), np.array([1.0]))
    >>> w.start(np.array([0]), np.array([[2, 0, 1]]))
    >>> w.record(np.array([0]), np.array([1]), np.array([[0.95]])).tolist()     # within 10% after one step
    [0]
    """

    def __init__(self, n: int, tol: float, v0: np.ndarray, vN: np.ndarray, patience: int = 1) -> None:
        self.n, self.tol, self.patience = n, float(tol), int(patience)
        self.v0, self.vN = np.asarray(v0, dtype=float), np.asarray(vN, dtype=float)
        k = self.v0.size
        self.perms = np.zeros((0, n), dtype=np.int64)
        self.chain = np.zeros((0, n + 1, k))
        self.known = np.zeros((0, n + 1), dtype=bool)
        self.next = np.zeros(0, dtype=np.int64)       # the next step to propose
        self.cut = np.zeros(0, dtype=np.int64)        # truncation step (n: none)
        self.ids = np.zeros(0, dtype=np.int64)

    def start(self, ids: np.ndarray, perms: np.ndarray) -> None:
        a, n = ids.size, self.n
        if a == 0:
            return
        chain = np.zeros((a, n + 1, self.v0.size))
        chain[:, 0], chain[:, n] = self.v0, self.vN
        known = np.zeros((a, n + 1), dtype=bool)
        known[:, [0, n]] = True
        self.perms = np.concatenate([self.perms, perms])
        self.chain = np.concatenate([self.chain, chain])
        self.known = np.concatenate([self.known, known])
        self.next = np.concatenate([self.next, np.ones(a, dtype=np.int64)])
        self.cut = np.concatenate([self.cut, np.full(a, n, dtype=np.int64)])
        self.ids = np.concatenate([self.ids, ids])           # ascending: walks start in id order

    def record(self, ids: np.ndarray, steps: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Take the values of steps; returns the slots of the walks now finished (truncated or complete)."""
        rows = np.searchsorted(self.ids, ids)
        self.chain[rows, steps] = np.asarray(values, dtype=float).reshape(ids.size, -1)
        self.known[rows, steps] = True
        touched = np.unique(rows)
        if self.tol > 0:
            close = np.all(np.abs(self.chain[touched] - self.vN) <= self.tol * np.abs(self.vN), axis=2)
            close[:, 0] = False                                   # v(empty) never truncates
            prefix = np.cumprod(self.known[touched], axis=1).astype(bool)
            within = close & prefix & self.known[touched]
            steps = np.arange(self.n + 1)
            last_out = np.maximum.accumulate(np.where(within, -1, steps[None, :]), axis=1)
            hit = steps[None, :] - last_out >= self.patience        # ``patience`` steps in a row within tol
            first = np.where(hit.any(axis=1), hit.argmax(axis=1), self.n)
            self.cut[touched] = np.minimum(self.cut[touched], first)
        done = self.known[touched].all(axis=1) | (self.cut[touched] < self.n)
        return touched[done]

    def marginals(self, slots: np.ndarray) -> np.ndarray:
        """Marginal contributions in player order, ``(len(slots), n, k)``; zero after a truncation."""
        chain = self.chain[slots].copy()
        after = np.arange(self.n + 1)[None, :] > self.cut[slots][:, None]
        held = np.take_along_axis(chain, np.minimum(np.arange(self.n + 1)[None, :], self.cut[slots][:, None])[..., None],
                                  axis=1)
        chain = np.where(after[..., None], held, chain)
        marginal = np.diff(chain, axis=1)
        out = np.empty_like(marginal)
        out[np.arange(slots.size)[:, None], self.perms[slots]] = marginal
        return out

    def drop(self, slots: np.ndarray) -> None:
        keep = np.ones(self.ids.size, dtype=bool)
        keep[slots] = False
        self.perms, self.chain, self.known = self.perms[keep], self.chain[keep], self.known[keep]
        self.next, self.cut, self.ids = self.next[keep], self.cut[keep], self.ids[keep]

    @property
    def active(self) -> int:
        return int(self.ids.size)


class TruncatedPermutations(Sampler):
    """Permutation walks evaluated a stretch at a time, each stopped once its value is within ``tol`` of
    ``v(N)`` (TMC-Shapley). ``parallel`` walks are under way at once and each batch advances each of them
    by ``stride`` steps, so one batch holds ``parallel * stride`` independent evaluations (one Dask task
    each) and a truncated walk wastes at most ``stride - 1`` of them.

    Examples
    --------
    >>> s = TruncatedPermutations(np.random.default_rng(0), 6, tol=0.0, parallel=2, stride=2)
    >>> b = s.propose(100, History(empty_value=np.zeros(1), grand_value=np.ones(1)))
    >>> b.ids.tolist(), b.steps.tolist()
    ([0, 0, 1, 1], [1, 2, 1, 2])
    """

    def __init__(self, rng: np.random.Generator, n_players: int, tol: float, parallel: int = 1,
                 stride: int | None = None, patience: int = 1) -> None:
        super().__init__(rng, n_players)
        self.tol, self.parallel, self.patience = float(tol), int(parallel), int(patience)
        self.stride = int(stride) if stride else max(1, -(-n_players // 100))
        self.unit_cost = 1
        self.max_stale = 64               # steps of small coalitions repeat often: a round ends after 64 proposals in a
                                          # row that find nothing new (every coalition a walk can reach is known)
        self.walks: Walks | None = None
        self.cost_sum, self.cost_count = 0, 0
        self.seen = 0
        self.started = 0

    def propose(self, allowance: int, history: History) -> WalkBatch | None:
        n = self.d
        if self.walks is None:
            self.walks = Walks(n, self.tol, history.empty_value, history.grand_value, self.patience)
        walks = self.walks
        for batch, values in zip(history.batches[self.seen:], history.values[self.seen:]):
            if isinstance(batch, WalkBatch):
                done = walks.record(batch.ids, batch.steps, values)
                self.cost_sum += int((walks.next[done] - 1).sum())
                self.cost_count += int(done.size)
                walks.drop(done)
        self.seen = len(history.batches)
        pending = int((walks.next < n).sum())
        # start only the walks the allowance can expect to finish (a walk costs what finished walks cost on
        # average, n - 1 before any finished), after what the walks under way can expect to need
        expected = self.cost_sum / self.cost_count if self.cost_count else float(n - 1)
        under_way = walks.next[walks.next < n] - 1
        room = allowance - float(np.maximum(expected - under_way, np.minimum(n - 1 - under_way, self.stride)).sum())
        want = min(self.parallel - pending, int(max(room, 0.0) // max(expected, 1.0)))
        if pending == 0:
            want = max(want, 1)
        new_ids = np.arange(self.started, self.started + max(want, 0))
        new_perms = draw_permutations(self.rng, new_ids.size, n, False, False)
        walks.start(new_ids, new_perms)
        # the next stretch of every walk under way (ids ascending: walks are kept in start order)
        slots = np.flatnonzero(walks.next < n)
        length = np.minimum(n - walks.next[slots], self.stride)
        take = np.cumsum(length) <= allowance
        if not take.any():
            if slots.size == 0 or allowance < 1:
                walks.drop(np.flatnonzero(np.isin(walks.ids, new_ids)))
                return None
            length[0], take[0] = min(int(length[0]), allowance), True
        slots, length = slots[take], length[take]
        ids = walks.ids[slots]
        used = np.isin(new_ids, ids)
        rows = np.repeat(np.arange(slots.size), length)
        steps = walks.next[slots][rows] + (np.arange(rows.size) - np.repeat(np.cumsum(length) - length, length))
        perms = walks.perms[slots]
        ranks = np.empty_like(perms)
        ranks[np.arange(slots.size)[:, None], perms] = np.arange(n)[None, :]
        coalitions = ranks[rows] < steps[:, None]
        walks.next[slots] += length
        if not used.all():                      # new walks the allowance had no room for: never started
            walks.drop(np.flatnonzero(np.isin(walks.ids, new_ids[~used])))
        self.started += int(used.sum())
        return WalkBatch(new_ids[used], new_perms[used], ids[rows], steps, coalitions, int(rows.size))
