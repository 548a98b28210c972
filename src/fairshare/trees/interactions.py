"""Exact interaction values of tree games, any index and order, from each leaf's Moebius terms.

A leaf's term of the tree game is a product over the distinct features ``F`` on its path,
``w(S) = prod_{f in F} (R_f + [f in S] d_f)`` with ``d_f = A_f - R_f`` (:mod:`fairshare.trees.paths`). Its
Moebius transform is ``m(T) = prod_{f in T} d_f prod_{f in F \\ T} R_f`` for ``T`` within ``F`` (0 elsewhere), so
an index ``I(S) = sum_{T >= S} c(|S|, |T|) m(T)`` (:mod:`fairshare.indices.interactions`) gives a subset ``S`` of
``F`` the value

    prod_{i in S} d_i * sum_r c(|S|, |S| + r) e_r,     e_r = [z^r] prod_{f in F \\ S} (R_f + d_f z),

and nothing to a subset with a player off the path. A compiled kernel builds each leaf's full polynomial
``prod_f (R_f + d_f z)`` once per row (and background row) and divides the factors of ``S`` out (synthetic
division, run from the end where the divisor's larger coefficient sits, so it stays stable); a leaf with a
zero factor gives nothing (the factor is in ``S``: ``d = 0``; or outside it: the product is 0). Cost
``O(leaves * (depth^2 + C(depth, <= order) * order * depth))`` per row (per row and background row,
interventional), rows in parallel; no dependence on ``n``.
"""

from __future__ import annotations

import itertools

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE, threads_for
from ..indices.interactions import InteractionIndex, subsets_up_to
from ..indices.moebius import SubsetIndex
from .prepared import Prepared

__all__ = ["leaf_interactions"]


@njit(cache=CACHE, nogil=True, inline="always")
def _divide(q: np.ndarray, deg: int, r0: float, r1: float) -> None:  # pragma: no cover - compiled
    """``q`` (degree ``deg``) divided in place by ``r0 + r1 z`` (an exact factor of it), from the end whose
    coefficient is larger; the quotient has degree ``deg - 1``."""
    if abs(r0) >= abs(r1):
        prev = 0.0
        for i in range(deg):
            prev = (q[i] - r1 * prev) / r0
            q[i] = prev
    else:
        nxt = 0.0
        for i in range(deg, 0, -1):
            nxt = (q[i] - r0 * nxt) / r1
            q[i] = nxt
        for i in range(deg):
            q[i] = q[i + 1]
    q[deg] = 0.0


@njit(cache=CACHE, nogil=True, parallel=True)
def _subset_values(A: np.ndarray, R: np.ndarray, n_factors: np.ndarray, combos: np.ndarray, target: np.ndarray,
                   coef: np.ndarray, value: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[r, target[l, c]] += mean_b prod_{f in c} d_f * sum_i coef[i] [prod_{f not in c} (R_f + d_f z)]_i *
    value[l]`` for each row ``r``, leaf ``l`` and combination ``c`` of its factor positions (``target < 0``:
    skipped), ``d = A[r] - R[b]``."""
    rows, L, D = A.shape
    B = R.shape[0]
    C, s = combos.shape
    k = value.shape[1]
    for r in prange(rows):
        poly = np.empty(D + 1)
        q = np.empty(D + 1)
        for l in range(L):
            nf = n_factors[l]
            for b in range(B):
                poly[:] = 0.0
                poly[0] = 1.0
                deg = 0
                zero = False
                for f in range(nf):
                    r0 = R[b, l, f]
                    r1 = A[r, l, f] - r0
                    if r0 == 0.0 and r1 == 0.0:
                        zero = True
                        break
                    poly[deg + 1] = poly[deg] * r1
                    for i in range(deg, 0, -1):
                        poly[i] = poly[i] * r0 + poly[i - 1] * r1
                    poly[0] *= r0
                    deg += 1
                if zero:
                    continue
                for c in range(C):
                    t = target[l, c]
                    if t < 0:
                        continue
                    lead = 1.0
                    for j in range(s):
                        f = combos[c, j]
                        lead *= A[r, l, f] - R[b, l, f]
                    if lead == 0.0:
                        continue
                    q[:] = poly
                    dq = deg
                    for j in range(s):
                        f = combos[c, j]
                        _divide(q, dq, R[b, l, f], A[r, l, f] - R[b, l, f])
                        dq -= 1
                    tail = 0.0
                    for i in range(dq + 1):
                        tail += coef[i] * q[i]
                    w = lead * tail / B
                    for o in range(k):
                        out[r, t, o] += w * value[l, o]


def leaf_interactions(prep: Prepared, X: np.ndarray, index: InteractionIndex, mode: str,
                      background: np.ndarray | None, min_size: int = 1) -> np.ndarray:
    """Exact values ``(rows, p, k)`` of ``index`` for the subsets :func:`subsets_up_to` ``(n, order)`` (those
    smaller than ``min_size`` left at 0: not computed).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees.prepared import prepared
    >>> X = np.random.default_rng(0).random((200, 3)); y = X[:, 0] * X[:, 1]
    >>> prep = prepared(DecisionTreeRegressor(max_depth=4).fit(X, y))
    >>> leaf_interactions(prep, X[:2], InteractionIndex("k-sii", 2), "path-dependent", None).shape
    (2, 6, 1)
    """
    paths, ens = prep.paths, prep.ensemble
    n, order = ens.n_features, index.order
    where = SubsetIndex(subsets_up_to(n, order, 1))
    L, D = paths.feature.shape
    real = np.arange(D)[None, :] < paths.n_factors[:, None]                  # (L, D)
    A = np.where(real[None], paths.follows(ens, X), True).astype(float)    # (rows, L, D)
    if mode == "interventional":
        Rb = np.where(real[None], paths.follows(ens, background), True).astype(float)   # (B, L, D)
    else:
        Rb = np.where(real, prep.ratios, 1.0)[None]                          # (1, L, D)
    coef = index.coefficients(D)                                              # (order + 1, D + 1)
    value = np.ascontiguousarray(paths.value, dtype=float)                   # (L, k)
    rows, B, k = A.shape[0], Rb.shape[0], value.shape[1]
    out = np.zeros((rows, where.size, k))
    A, Rb = np.ascontiguousarray(A), np.ascontiguousarray(Rb)
    n_factors = np.ascontiguousarray(paths.n_factors, dtype=np.int64)
    for s in range(min_size, min(order, D) + 1):
        combos = np.array(list(itertools.combinations(range(D), s)), dtype=np.int64).reshape(-1, s)
        ok = n_factors[:, None] > combos.max(axis=1)[None, :]                  # (L, C): the leaf has those factors
        feats = np.sort(paths.feature[:, combos], axis=2)                      # (L, C, s)
        target = np.full(ok.shape, -1, dtype=np.int64)
        padded = np.pad(feats[ok], ((0, 0), (0, order - s)), constant_values=-1)
        target[ok] = where(padded)
        tail = np.zeros(D + 1)
        tail[: D + 1 - s] = coef[s, s:]                                        # c(s, s + i), i = 0..D - s
        with threads_for(rows * B * L * D * D):
            _subset_values(A, Rb, n_factors, combos, target, tail, value, out)
    return out
