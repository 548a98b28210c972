"""Compiled drawing of uniform random subsets: Floyd's algorithm, one row per subset, rows in parallel.

Floyd's algorithm draws a uniform ``k``-subset of ``range(d)`` with exactly ``k`` random numbers
(for ``j = d - k .. d - 1``: take a random ``t <= j``, or ``j`` itself when ``t`` is taken already),
using the row being written as the membership test: no per-size Python loop, no index arrays,
``O(sum of k)`` work for any mix of sizes. The uniform numbers come from the caller's numpy
generator in row order, so the draws do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .trees.kernels import _CACHE

__all__ = ["floyd_fill", "floyd_rows"]


@njit(cache=_CACHE, nogil=True, parallel=True)
def _floyd(k: np.ndarray, start: np.ndarray, n: np.ndarray, offset: np.ndarray, flip: np.ndarray, u: np.ndarray,
           out: np.ndarray) -> None:  # pragma: no cover - compiled
    for r in prange(k.shape[0]):
        c0 = offset[r]
        base = start[r]
        for i in range(k[r]):
            j = n[r] - k[r] + i
            t = int(u[base + i] * (j + 1))
            if t > j:
                t = j
            if out[r, c0 + t]:
                t = j
            out[r, c0 + t] = True
        if flip[r]:                              # a size above half: the complement of the drawn subset
            for c in range(c0, c0 + n[r]):
                out[r, c] = not out[r, c]


def floyd_fill(rng: np.random.Generator, out: np.ndarray, sizes: np.ndarray, n: np.ndarray | int,
               offset: np.ndarray | int = 0, draw_order: np.ndarray | None = None) -> np.ndarray:
    """Write into row ``r`` of ``out`` (False in columns ``offset[r] .. offset[r] + n[r] - 1``) a uniform random
    subset of ``sizes[r]`` of those columns; returns ``out``. ``out`` may be a strided view (every other row of
    a larger array, say). Random numbers are taken from ``rng`` for the rows in ``draw_order`` (default: row
    order), so a call draws what consecutive calls for the rows in that order would.

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
    u = rng.random(int(k.sum()), dtype=np.float32)
    if m:
        _floyd(k, start, np.ascontiguousarray(n), offset, flip, u, out)
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
