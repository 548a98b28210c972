"""Compiled drawing of uniform random subsets: Floyd's algorithm, one row per subset, rows in parallel.

Floyd's algorithm draws a uniform ``k``-subset of ``range(d)`` with exactly ``k`` random numbers
(for ``j = d - k .. d - 1``: take a random ``t <= j``, or ``j`` itself when ``t`` is taken already),
using the row being written as the membership test: no per-size Python loop, no index arrays,
``O(sum of k)`` work for any mix of sizes. The random numbers are made in the kernel by a
counter-based generator (the SplitMix64 output function of a seed drawn from the caller's numpy
generator by :func:`fairshare._core.seeds.integer_seed` and the number's index, each row's indices fixed
before the rows are shared out), so the draws depend on the seed alone, not on the number of threads, and no
array of them is written.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..._core.compiled import CACHE, threads_for
from ..._core.hashing import mix
from ..._core.seeds import integer_seed

__all__ = ["floyd_fill", "floyd_rows"]


@njit(cache=CACHE, nogil=True, inline="always")
def _floyd_row(k: np.ndarray, start: np.ndarray, n: np.ndarray, offset: np.ndarray, flip: np.ndarray,
               seed: np.uint64, out: np.ndarray, r: int) -> None:  # pragma: no cover - compiled
    golden = np.uint64(0x9E3779B97F4A7C15)
    c0 = offset[r]
    base = np.uint64(start[r])
    row = out[r]
    for i in range(k[r]):
        j = n[r] - k[r] + i
        x = mix(seed + (base + np.uint64(i)) * golden) >> np.uint64(32)       # 32 uniform bits
        t = np.int64((x * np.uint64(j + 1)) >> np.uint64(32))                # uniform on 0..j (bias < j / 2^32)
        t = j if row[c0 + t] else t          # a select, not a branch: taken about half the time near the end
        row[c0 + t] = True
    if flip[r]:                              # a size above half: the complement of the drawn subset
        for c in range(c0, c0 + n[r]):
            row[c] = not row[c]


@njit(cache=CACHE, nogil=True, parallel=True)
def _floyd(k: np.ndarray, start: np.ndarray, n: np.ndarray, offset: np.ndarray, flip: np.ndarray, seed: np.uint64,
           out: np.ndarray) -> None:  # pragma: no cover - compiled
    m = k.shape[0]
    stripes = min(m, 256)                    # rows dealt round-robin: callers sort rows by size, and a thread
    for stripe in prange(stripes):           # given a contiguous share would get all the large sizes
        for r in range(stripe, m, stripes):
            _floyd_row(k, start, n, offset, flip, seed, out, r)


def floyd_fill(rng: np.random.Generator, out: np.ndarray, sizes: np.ndarray, n: np.ndarray | int,
               offset: np.ndarray | int = 0, draw_order: np.ndarray | None = None) -> np.ndarray:
    """Write into row ``r`` of ``out`` (False in columns ``offset[r] .. offset[r] + n[r] - 1``) a uniform random
    subset of ``sizes[r]`` of those columns; returns ``out``. ``out`` may be a strided view (every other row of
    a larger array, say). One seed is taken from ``rng``; the rows take their random numbers from its stream
    in ``draw_order`` (default: row order).

    Examples
    --------
    >>> out = floyd_fill(np.random.default_rng(0), np.zeros((2, 6), bool), np.array([2, 5]), 5, offset=1)
    >>> out.sum(axis=1), bool(out[:, 0].any())
    (array([2, 5]), False)
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    m = sizes.size
    n = np.broadcast_to(np.asarray(n, dtype=np.int64), (m,))
    offset = np.ascontiguousarray(np.broadcast_to(np.asarray(offset, dtype=np.int64), (m,)))
    flip = sizes > n - sizes
    k = np.where(flip, n - sizes, sizes)
    order = np.arange(m) if draw_order is None else np.asarray(draw_order, dtype=np.int64)
    start = np.empty(m, dtype=np.int64)
    start[order] = np.concatenate([[0], np.cumsum(k[order])[:-1]]) if m else np.zeros(0, np.int64)
    seed = np.uint64(integer_seed(rng, 2**63))
    if m:
        with threads_for(int(k.sum()) + m):
            _floyd(k, start, np.ascontiguousarray(n), offset, flip, seed, out)
    return out


def floyd_rows(rng: np.random.Generator, d: int, sizes: np.ndarray, width: int | None = None) -> np.ndarray:
    """One uniform random subset of ``range(d)`` of each size in ``sizes``: bool ``(m, width or d)``.

    Sizes above ``d / 2`` are drawn as complements (fewer random numbers).

    Examples
    --------
    >>> S = floyd_rows(np.random.default_rng(0), 10, np.array([3, 7, 0, 10]))
    >>> S.sum(axis=1)
    array([ 3,  7,  0, 10])
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    return floyd_fill(rng, np.zeros((sizes.size, width or d), dtype=np.bool_), sizes, d)
