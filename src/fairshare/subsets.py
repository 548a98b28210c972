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

__all__ = ["floyd_rows"]


@njit(cache=_CACHE, nogil=True, parallel=True)
def _floyd(k: np.ndarray, start: np.ndarray, d: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    for r in prange(k.shape[0]):
        n = d[r]
        base = start[r]
        for i in range(k[r]):
            j = n - k[r] + i
            t = int(u[base + i] * (j + 1))
            if t > j:
                t = j
            if out[r, t]:
                t = j
            out[r, t] = True


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
    m = sizes.size
    flip = sizes > d - sizes
    k = np.where(flip, d - sizes, sizes)
    start = np.concatenate([[0], np.cumsum(k)[:-1]]) if m else np.zeros(0, np.int64)
    u = rng.random(int(k.sum()), dtype=np.float32)
    out = np.zeros((m, width or d), dtype=np.bool_)
    if m:
        _floyd(k, start.astype(np.int64), np.full(m, d, dtype=np.int64), u, out)
    if flip.any():
        out[flip, :d] = ~out[flip, :d]
    return out
