"""The interventional walk, compiled (numba): exact semivalues of rows against background rows.

For each (row, background row, tree), the walk follows both rows where they agree and branches where they
disagree on a feature not yet decided on the path (the feature taken from the row, or from the background row),
as TreeSHAP's interventional algorithm (:func:`_intervene_against`, one background row at a time). A reached
leaf with ``p`` features from the row and ``q`` from the background is the game ``1[P in S, N out of S]``; its
values come from :func:`~fairshare.trees.values.sign_tables`. A linear leaf (lightgbm's linear trees) is a sum of
such games (:func:`_linear_leaf`). Trees that feed one output (one tree per class) touch only it.
:mod:`fairshare.trees.kernels` runs rows, or chunks of the background, in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE

__all__: list[str] = []


@njit(cache=CACHE, nogil=True, inline="always")
def _add_game(path_f: np.ndarray, path_s: np.ndarray, nf: int, weight: float, o: int, pos: np.ndarray,
              neg: np.ndarray, out: np.ndarray, r: int) -> None:  # pragma: no cover - compiled
    """Add ``weight`` times the values of ``1[P in S, N out of S]`` (P: path features with side True) to output ``o``."""
    if nf == 0 or weight == 0.0:
        return
    vp, vn = _sign_values(path_s, nf, pos, neg, weight)
    for i in range(nf):
        out[r, path_f[i], o] += vp if path_s[i] else vn


@njit(cache=CACHE, nogil=True, inline="always")
def _sign_values(path_s: np.ndarray, nf: int, pos: np.ndarray, neg: np.ndarray,
                 weight: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """The value of a path feature taken from the row (``vp``) and from the background (``vn``), times ``weight``."""
    p = 0
    for i in range(nf):
        if path_s[i]:
            p += 1
    return pos[p, nf - p] * weight, neg[p, nf - p] * weight


@njit(cache=CACHE, nogil=True, inline="always")
def _side(path_f: np.ndarray, path_s: np.ndarray, nf: int, f: int) -> int:  # pragma: no cover - compiled
    """1: ``f`` is on the path taken from the row, 0: from the background row, -1: not decided."""
    for i in range(nf):
        if path_f[i] == f:
            return 1 if path_s[i] else 0
    return -1


@njit(cache=CACHE, nogil=True)
def _linear_leaf(r: int, b: int, node: int, o: int, path_f: np.ndarray, path_s: np.ndarray, nf: int,
                 ext_f: np.ndarray, ext_s: np.ndarray, value: np.ndarray, lin_ptr: np.ndarray,
                 lin_feat: np.ndarray, lin_coeff: np.ndarray, lin_fallback: np.ndarray, X: np.ndarray,
                 Z: np.ndarray, pos: np.ndarray, neg: np.ndarray, scale: float,
                 out: np.ndarray) -> None:  # pragma: no cover - compiled
    """A linear leaf ``const + sum_j a_j z_j`` (``fallback`` when some ``z_j`` is NaN) reached with path ``(P, N)``.

    Its term is ``F u(P, N) + C0 u(P', N') + sum_free a_j (x_j - b_j) u(P' + j, N')``: ``P', N'`` add the
    features whose linear term is defined only from the row (the background's value is NaN) or only from
    the background row, ``C0`` collects the constant, the fixed terms and ``a_j b_j`` of the free ones.
    """
    fallback = lin_fallback[node, o]
    _add_game(path_f, path_s, nf, fallback * scale, o, pos, neg, out, r)
    c0 = value[node, o] - fallback
    ne = nf
    for i in range(nf):
        ext_f[i] = path_f[i]
        ext_s[i] = path_s[i]
    for idx in range(lin_ptr[node], lin_ptr[node + 1]):
        j = lin_feat[idx]
        a = lin_coeff[idx]
        side = _side(path_f, path_s, nf, j)
        xj = X[r, j]
        bj = Z[b, j]
        if side == 1:
            if np.isnan(xj):
                return
            c0 += a * xj
        elif side == 0:
            if np.isnan(bj):
                return
            c0 += a * bj
        elif np.isnan(xj) and np.isnan(bj):
            return
        elif np.isnan(xj):                  # defined only with j taken from the background row
            if _side(ext_f, ext_s, ne, j) < 0:
                ext_f[ne] = j
                ext_s[ne] = False
                ne += 1
            c0 += a * bj
        elif np.isnan(bj):                  # defined only with j taken from the row
            if _side(ext_f, ext_s, ne, j) < 0:
                ext_f[ne] = j
                ext_s[ne] = True
                ne += 1
            c0 += a * xj
        else:
            c0 += a * bj
    _add_game(ext_f, ext_s, ne, c0 * scale, o, pos, neg, out, r)
    for idx in range(lin_ptr[node], lin_ptr[node + 1]):
        j = lin_feat[idx]
        xj = X[r, j]
        bj = Z[b, j]
        if _side(path_f, path_s, nf, j) < 0 and not np.isnan(xj) and not np.isnan(bj) and xj != bj:
            ext_f[ne] = j
            ext_s[ne] = True
            _add_game(ext_f, ext_s, ne + 1, lin_coeff[idx] * (xj - bj) * scale, o, pos, neg, out, r)


@njit(cache=CACHE, nogil=True)
def _intervene_row(r: int, left: np.ndarray, right: np.ndarray, feature: np.ndarray, value: np.ndarray,
                   roots: np.ndarray, tree_out: np.ndarray, go_x: np.ndarray, go_z: np.ndarray, pos: np.ndarray,
                   neg: np.ndarray, lin_ptr: np.ndarray, lin_feat: np.ndarray, lin_coeff: np.ndarray,
                   lin_fallback: np.ndarray, X: np.ndarray, Z: np.ndarray, max_depth: int, max_terms: int,
                   out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Interventional values of row ``r`` against every background row, added into ``out[r]``: the scratch of the
    walks, then :func:`_intervene_against` for each background row in turn."""
    B = go_z.shape[0]
    levels = max_depth + 2
    st_node = np.empty(2 * levels + 2, dtype=np.int64)
    st_n = np.empty(2 * levels + 2, dtype=np.int64)
    st_f = np.empty(2 * levels + 2, dtype=np.int64)
    st_s = np.empty(2 * levels + 2, dtype=np.bool_)
    path_f = np.empty(levels, dtype=np.int64)
    path_s = np.empty(levels, dtype=np.bool_)
    ext_f = np.empty(levels + max_terms, dtype=np.int64)
    ext_s = np.empty(levels + max_terms, dtype=np.bool_)
    scale = 1.0 / B
    for b in range(B):
        _intervene_against(r, b, left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr,
                           lin_feat, lin_coeff, lin_fallback, X, Z, scale, out, st_node, st_n, st_f, st_s, path_f,
                           path_s, ext_f, ext_s)


@njit(cache=CACHE, nogil=True)
def _intervene_against(r: int, b: int, left: np.ndarray, right: np.ndarray, feature: np.ndarray, value: np.ndarray,
                       roots: np.ndarray, tree_out: np.ndarray, go_x: np.ndarray, go_z: np.ndarray, pos: np.ndarray,
                       neg: np.ndarray, lin_ptr: np.ndarray, lin_feat: np.ndarray, lin_coeff: np.ndarray,
                       lin_fallback: np.ndarray, X: np.ndarray, Z: np.ndarray, scale: float, out: np.ndarray,
                       st_node: np.ndarray, st_n: np.ndarray, st_f: np.ndarray, st_s: np.ndarray, path_f: np.ndarray,
                       path_s: np.ndarray, ext_f: np.ndarray, ext_s: np.ndarray) -> None:  # pragma: no cover
    """Row ``r`` against background row ``b``: a depth-first walk per tree with the path kept per level (an entry of
    the stack carries the path length below it and the (feature, side) it decides, so siblings share their prefix
    and nothing is copied); each leaf's game, weighted by ``scale``, added into ``out[r]``."""
    k = value.shape[1]
    linear = lin_ptr.shape[0] > 1
    for t in range(roots.shape[0]):
        o_t = tree_out[t]
        st_node[0] = roots[t]
        st_n[0] = 0
        st_f[0] = -1
        top = 1
        while top > 0:
            top -= 1
            node = st_node[top]
            nf = st_n[top]
            if st_f[top] >= 0:
                path_f[nf - 1] = st_f[top]
                path_s[nf - 1] = st_s[top]
            f = feature[node]
            if f < 0:
                if linear and lin_ptr[node + 1] > lin_ptr[node]:
                    _linear_leaf(r, b, node, max(o_t, 0), path_f, path_s, nf, ext_f, ext_s, value, lin_ptr,
                                 lin_feat, lin_coeff, lin_fallback, X, Z, pos, neg, scale, out)
                elif nf > 0:
                    if o_t >= 0:
                        _add_game(path_f, path_s, nf, value[node, o_t] * scale, o_t, pos, neg, out, r)
                    else:                            # a leaf feeding every output: its sign values once
                        vp, vn = _sign_values(path_s, nf, pos, neg, scale)
                        for i in range(nf):
                            sv = vp if path_s[i] else vn
                            fi = path_f[i]
                            for o in range(k):
                                out[r, fi, o] += sv * value[node, o]
                continue
            gx = go_x[r, node]
            gz = go_z[b, node]
            if gx == gz:
                side = 1
            else:
                side = _side(path_f, path_s, nf, f)
            if side >= 0:                        # agree, or f already decided: one way on
                go = gx if side == 1 else gz
                st_node[top] = left[node] if go else right[node]
                st_n[top] = nf
                st_f[top] = -1
                top += 1
                continue
            # branch: f taken from the background row (out of S) or from the row (in S)
            st_node[top] = left[node] if gz else right[node]
            st_n[top] = nf + 1
            st_f[top] = f
            st_s[top] = False
            st_node[top + 1] = left[node] if gx else right[node]
            st_n[top + 1] = nf + 1
            st_f[top + 1] = f
            st_s[top + 1] = True
            top += 2


@njit(cache=CACHE, nogil=True)
def _intervene_serial(left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr, lin_feat,
                      lin_coeff, lin_fallback, X, Z, max_depth, max_terms, out):  # pragma: no cover - compiled
    for r in range(go_x.shape[0]):
        _intervene_row(r, left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr, lin_feat,
                       lin_coeff, lin_fallback, X, Z, max_depth, max_terms, out)


@njit(cache=CACHE, nogil=True, parallel=True)
def _intervene_parallel(left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr, lin_feat,
                        lin_coeff, lin_fallback, X, Z, max_depth, max_terms, out):  # pragma: no cover - compiled
    for r in prange(go_x.shape[0]):
        _intervene_row(r, left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr, lin_feat,
                       lin_coeff, lin_fallback, X, Z, max_depth, max_terms, out)


@njit(cache=CACHE, nogil=True)
def _intervene_chunks_serial(left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr, lin_feat,
                             lin_coeff, lin_fallback, X, Z, max_depth, max_terms, bounds, partial):  # pragma: no cover
    for c in range(bounds.shape[0] - 1):
        lo, hi = bounds[c], bounds[c + 1]
        for r in range(go_x.shape[0]):
            _intervene_row(r, left, right, feature, value, roots, tree_out, go_x, go_z[lo:hi], pos, neg, lin_ptr,
                           lin_feat, lin_coeff, lin_fallback, X, Z[lo:hi], max_depth, max_terms, partial[c])


@njit(cache=CACHE, nogil=True, parallel=True)
def _intervene_chunks(left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, lin_ptr, lin_feat,
                      lin_coeff, lin_fallback, X, Z, max_depth, max_terms, bounds, partial):  # pragma: no cover
    """Few rows, many background rows: chunks of the background in parallel, each into its own ``partial[c]``."""
    for c in prange(bounds.shape[0] - 1):
        lo, hi = bounds[c], bounds[c + 1]
        for r in range(go_x.shape[0]):
            _intervene_row(r, left, right, feature, value, roots, tree_out, go_x, go_z[lo:hi], pos, neg, lin_ptr,
                           lin_feat, lin_coeff, lin_fallback, X, Z[lo:hi], max_depth, max_terms, partial[c])
