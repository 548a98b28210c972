"""The split rules of every library, compiled (numba): where a row goes at a node, which leaf it reaches, what the
trees add up to. :mod:`fairshare.trees.kernels` runs them over many rows (in parallel when the threads are free).

Each model's own split rule is kept exactly (:mod:`fairshare.trees.ensemble`): numerical splits compare ``x`` (as
float32 where the model does) with the threshold, strictly or not, a missing value following the node's default
way; categorical splits look a category up in the node's left and right sets (sorted ``node << 32 | category``
keys), anything else going the node's "other" way.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE

__all__ = ["numeric_left", "categorical_left"]


@njit(cache=CACHE, nogil=True, inline="always")
def _member(keys: np.ndarray, key: np.int64) -> bool:  # pragma: no cover - compiled
    pos = np.searchsorted(keys, key)
    return pos < keys.shape[0] and keys[pos] == key


@njit(cache=CACHE, nogil=True, inline="always")
def numeric_left(node: int, x: float, threshold: np.ndarray, default_left: np.ndarray, missing: np.ndarray,
                  strict: bool, float32: bool) -> bool:  # pragma: no cover - compiled
    """Whether value ``x`` goes left at numerical split ``node`` (the rules of :mod:`fairshare.trees.ensemble`).

    One exit and no categorical branch: either makes the compiled loops around it several times slower.
    """
    if float32:
        x = np.float64(np.float32(x))
    kind = missing[node]
    use_default = False
    if np.isnan(x):
        if kind != 2:                            # NaN goes the default way unless compared as 0
            use_default = True
        else:
            x = 0.0
    elif kind == 1 and x == 0.0:                 # zero is missing
        use_default = True
    t = threshold[node]
    result = (x < t) if strict else (x <= t)
    return default_left[node] if use_default else result


@njit(cache=CACHE, nogil=True, inline="always")
def categorical_left(node: int, x: float, default_left: np.ndarray, float32: bool, cat_left: np.ndarray,
                      cat_right: np.ndarray, cat_other_left: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether value ``x`` goes left at categorical split ``node``: its left set, its right set, else the other way."""
    if float32:
        x = np.float64(np.float32(x))
    if np.isnan(x):
        result = default_left[node]
    elif x < 0.0 or x >= 2147483648.0:
        result = cat_other_left[node]
    else:
        key = (np.int64(node) << 32) | np.int64(x)
        if _member(cat_left, key):
            result = True
        elif _member(cat_right, key):
            result = False
        else:
            result = cat_other_left[node]
    return result


@njit(cache=CACHE, nogil=True)
def _decide_row(r, feature, threshold, default_left, missing, strict, float32, categorical, cat_left, cat_right,
                cat_other_left, X, out):  # pragma: no cover - compiled
    if categorical.shape[0] == 0:
        for node in range(feature.shape[0]):
            f = feature[node]
            if f >= 0:
                out[r, node] = numeric_left(node, X[r, f], threshold, default_left, missing, strict, float32)
        return
    for node in range(feature.shape[0]):
        f = feature[node]
        if f < 0:
            continue
        if categorical[node]:
            out[r, node] = categorical_left(node, X[r, f], default_left, float32, cat_left, cat_right, cat_other_left)
        else:
            out[r, node] = numeric_left(node, X[r, f], threshold, default_left, missing, strict, float32)


@njit(cache=CACHE, nogil=True)
def _decisions_serial(feature, threshold, default_left, missing, strict, float32, categorical, cat_left, cat_right,
                      cat_other_left, X, out):  # pragma: no cover - compiled
    for r in range(X.shape[0]):
        _decide_row(r, feature, threshold, default_left, missing, strict, float32, categorical, cat_left, cat_right,
                    cat_other_left, X, out)


@njit(cache=CACHE, nogil=True, parallel=True)
def _decisions_parallel(feature, threshold, default_left, missing, strict, float32, categorical, cat_left, cat_right,
                        cat_other_left, X, out):  # pragma: no cover - compiled
    for r in prange(X.shape[0]):
        _decide_row(r, feature, threshold, default_left, missing, strict, float32, categorical, cat_left, cat_right,
                    cat_other_left, X, out)


@njit(cache=CACHE, nogil=True, inline="always")
def _leaf_of(r, root, feature, left, right, threshold, default_left, missing, strict, float32, has_cat, categorical,
             cat_left, cat_right, cat_other_left, X):  # pragma: no cover - compiled
    """The leaf row ``r`` of ``X`` reaches from ``root``."""
    node = root
    while feature[node] >= 0:
        if has_cat and categorical[node]:
            go = categorical_left(node, X[r, feature[node]], default_left, float32, cat_left, cat_right,
                                   cat_other_left)
        else:
            go = numeric_left(node, X[r, feature[node]], threshold, default_left, missing, strict, float32)
        node = left[node] if go else right[node]
    return node


@njit(cache=CACHE, nogil=True)
def _leaves_row(r, feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                cat_left, cat_right, cat_other_left, X, out):  # pragma: no cover - compiled
    has_cat = categorical.shape[0] > 0
    for t in range(roots.shape[0]):
        out[r, t] = _leaf_of(r, roots[t], feature, left, right, threshold, default_left, missing, strict, float32,
                             has_cat, categorical, cat_left, cat_right, cat_other_left, X)


@njit(cache=CACHE, nogil=True)
def _leaves_serial(feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                   cat_left, cat_right, cat_other_left, X, out):  # pragma: no cover - compiled
    for r in range(X.shape[0]):
        _leaves_row(r, feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                    cat_left, cat_right, cat_other_left, X, out)


@njit(cache=CACHE, nogil=True, parallel=True)
def _leaves_parallel(feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                     cat_left, cat_right, cat_other_left, X, out):  # pragma: no cover - compiled
    for r in prange(X.shape[0]):
        _leaves_row(r, feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                    cat_left, cat_right, cat_other_left, X, out)


@njit(cache=CACHE, nogil=True)
def _sum_row(r, feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
             cat_left, cat_right, cat_other_left, value, X, out):  # pragma: no cover - compiled
    has_cat = categorical.shape[0] > 0
    for t in range(roots.shape[0]):
        node = _leaf_of(r, roots[t], feature, left, right, threshold, default_left, missing, strict, float32,
                        has_cat, categorical, cat_left, cat_right, cat_other_left, X)
        for o in range(value.shape[1]):
            out[r, o] += value[node, o]


@njit(cache=CACHE, nogil=True)
def _sums_serial(feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                 cat_left, cat_right, cat_other_left, value, X, out):  # pragma: no cover - compiled
    for r in range(X.shape[0]):
        _sum_row(r, feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                 cat_left, cat_right, cat_other_left, value, X, out)


@njit(cache=CACHE, nogil=True, parallel=True)
def _sums_parallel(feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                   cat_left, cat_right, cat_other_left, value, X, out):  # pragma: no cover - compiled
    for r in prange(X.shape[0]):
        _sum_row(r, feature, left, right, roots, threshold, default_left, missing, strict, float32, categorical,
                 cat_left, cat_right, cat_other_left, value, X, out)
