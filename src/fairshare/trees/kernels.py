"""Compiled (numba) walks over tree ensembles: exact semivalues for many rows.

The walks take the flat arrays of :class:`~fairshare.trees.ensemble.TreeEnsemble` and the split
decisions of the rows at every node (:func:`decisions`, which with :func:`leaves` holds the one
implementation of every library's split rule), and add the rows' values into ``out``. They are the engine of
:func:`fairshare.games.tree_values` and of ``fairshare.doors.exact`` on a
:class:`~fairshare.games.TreeGame`; use those. Rows (or blocks of rows) run in parallel on numba's
threads; a call made while another thread runs a parallel kernel runs serially instead, so the
kernels compose with ``explain``'s threads.

*Path-dependent* (:func:`path_dependent_walk`, :func:`path_dependent_rows`): one depth-first walk
per tree for a whole block of rows. Along the way each distinct path feature ``f`` carries its
factor ``g_f(u) = R_f + u (A_f - R_f)`` (``A_f``: the row follows the path at every node on ``f``;
``R_f``: product of the cover ratios, the same for every row), and the prefix product
``P(u) = prod_f g_f(u)`` at the quadrature nodes of the semivalue's measure, per row. At a leaf,
player ``f`` gets ``(A_f - R_f) sum_q w_q P(u_q) / g_f(u_q)`` times the leaf value (see
:mod:`fairshare.trees.values`). The branchy walk is paid once per block; the arithmetic runs
over the rows in contiguous arrays. Cost: ``O(leaves * depth * (quadrature nodes + outputs))``
per row.

*Interventional* (:func:`interventional_rows`): for each (row, background row, tree), the walk
follows both rows where they agree and branches where they disagree on a feature not yet
decided on the path (the feature taken from the row, or from the background row), as
TreeSHAP's interventional algorithm. A reached leaf with ``p`` features from the row and ``q``
from the background is the game ``1[P in S, N out of S]``; its values come from
:func:`~fairshare.trees.values.sign_tables`. A linear leaf (lightgbm) is a sum of such games
(see :func:`_linear_leaf`). Trees that feed one output (one tree per class) touch only it.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE

__all__ = ["path_layout", "path_dependent_walk", "path_dependent_rows", "interventional_rows", "decisions", "leaves",
           "leaf_sums"]



@njit(cache=CACHE, nogil=True)
def path_layout(left: np.ndarray, right: np.ndarray, feature: np.ndarray, roots: np.ndarray,
                max_depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Per node reached by an edge: the factor slot of the edge's feature on the path from the root
    (slots numbered by first occurrence), whether the edge repeats a feature already on the path,
    and the number of distinct features on the path. Also the parent of every node.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> X = np.random.default_rng(0).random((200, 1)); y = np.sin(6 * X[:, 0])
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=2).fit(X, y))   # one feature, split twice per path
    >>> slot, repeat, n_slots, parent = path_layout(ens.left, ens.right, ens.feature, ens.roots, ens.depth())
    >>> int(n_slots.max()), bool(repeat.any())
    (1, True)
    """
    N = feature.shape[0]
    slot = np.zeros(N, dtype=np.int64)
    repeat = np.zeros(N, dtype=np.bool_)
    n_slots = np.zeros(N, dtype=np.int64)
    parent = np.full(N, -1, dtype=np.int64)
    levels = max_depth + 2
    path = np.empty(levels, dtype=np.int64)          # feature of each slot on the current path
    st_node = np.empty(levels + 1, dtype=np.int64)
    for t in range(roots.shape[0]):
        st_node[0] = roots[t]
        top = 1
        while top > 0:
            top -= 1
            c = st_node[top]
            p = parent[c]
            if p >= 0:
                # rebuild the slots of the path to p (at most depth steps) from the parents' records
                ns = n_slots[p]
                f = feature[p]
                j = -1
                node = p
                while parent[node] >= 0:
                    if not repeat[node]:
                        path[slot[node]] = feature[parent[node]]
                    node = parent[node]
                for i in range(ns):
                    if path[i] == f:
                        j = i
                        break
                if j >= 0:
                    slot[c], repeat[c], n_slots[c] = j, True, ns
                else:
                    slot[c], repeat[c], n_slots[c] = ns, False, ns + 1
            if feature[c] >= 0:
                parent[left[c]] = c
                parent[right[c]] = c
                st_node[top] = right[c]
                st_node[top + 1] = left[c]
                top += 2
    return slot, repeat, n_slots, parent


@njit(cache=CACHE, nogil=True)
def _latest_levels(lvl_slot: np.ndarray, d: int, from_level: np.ndarray) -> int:  # pragma: no cover - compiled
    """``from_level[slot]``: deepest level up to ``d`` that set each factor slot; returns the number of slots."""
    ns = 0
    for h in range(1, d + 1):
        from_level[lvl_slot[h]] = h
        ns = max(ns, lvl_slot[h] + 1)
    return ns


@njit(cache=CACHE, nogil=True)
def path_dependent_walk(left: np.ndarray, right: np.ndarray, feature: np.ndarray, ratio: np.ndarray,
                        parent: np.ndarray, slot: np.ndarray, repeat: np.ndarray, value: np.ndarray,
                        roots: np.ndarray, tree_out: np.ndarray, go_left_t: np.ndarray, nodes: np.ndarray,
                        weights: np.ndarray, max_depth: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Add path-dependent semivalues of a block of rows into ``out`` ``(n_features, k, rows)``.

    ``go_left_t[node, r]``: row ``r`` goes left at ``node``; ``ratio[c]``: cover of ``c`` over
    its parent's; ``parent, slot, repeat``: from :func:`path_layout`; ``nodes, weights``:
    quadrature of the semivalue's measure (nodes strictly inside (0, 1)), exact for degree
    ``distinct depth - 1``; ``tree_out[t]``: the one output tree ``t`` adds into (-1: several).
    The walk visits each node once for the whole block; the work per node and leaf runs over the
    rows in contiguous arrays.
    """
    b = go_left_t.shape[1]
    k = value.shape[1]
    Q = nodes.shape[0]
    levels = max_depth + 2
    P = np.empty((levels, Q, b))
    lvl_slot = np.empty(levels, dtype=np.int64)     # slot set by the edge into level d
    lvl_feat = np.empty(levels, dtype=np.int64)
    lvl_r = np.empty(levels)                        # R of that slot after the edge (row independent)
    lvl_a = np.empty((levels, b))                   # A of that slot after the edge, per row
    from_level = np.empty(levels, dtype=np.int64)
    inv0 = np.empty(Q)
    inv1 = np.empty(Q)
    sv = np.empty(b)
    st_node = np.empty(levels + 1, dtype=np.int64)
    st_level = np.empty(levels + 1, dtype=np.int64)
    for t in range(roots.shape[0]):
        root = roots[t]
        if feature[root] < 0:
            continue
        o_t = tree_out[t]
        for q in range(Q):
            for j in range(b):
                P[0, q, j] = 1.0
        st_node[0], st_level[0] = right[root], 1
        st_node[1], st_level[1] = left[root], 1
        top = 2
        while top > 0:
            top -= 1
            c, d = st_node[top], st_level[top]
            p = parent[c]
            went_left = left[p] == c
            rc = ratio[c]
            s = slot[c]
            prev = -1
            if repeat[c]:                            # merge with the same feature higher on the path
                for h in range(d - 1, 0, -1):
                    if lvl_slot[h] == s:
                        prev = h
                        break
                rc *= lvl_r[prev]
            lvl_slot[d], lvl_feat[d], lvl_r[d] = s, feature[p], rc
            for j in range(b):
                aj = 1.0 if go_left_t[p, j] == went_left else 0.0
                if prev >= 0:
                    aj *= lvl_a[prev, j]
                lvl_a[d, j] = aj
            if prev < 0:
                for q in range(Q):
                    u = nodes[q]
                    for j in range(b):
                        P[d, q, j] = P[d - 1, q, j] * (rc + u * (lvl_a[d, j] - rc))
            else:                                    # recompute the product over the path's factors
                ns = _latest_levels(lvl_slot, d, from_level)
                for q in range(Q):
                    u = nodes[q]
                    for j in range(b):
                        P[d, q, j] = 1.0
                    for i in range(ns):
                        h = from_level[i]
                        for j in range(b):
                            P[d, q, j] *= lvl_r[h] + u * (lvl_a[h, j] - lvl_r[h])
            if feature[c] >= 0:
                st_node[top], st_level[top] = right[c], d + 1
                st_node[top + 1], st_level[top + 1] = left[c], d + 1
                top += 2
                continue
            # leaf: player f_i gets (A_i - R_i) int prod_{f != i} g_f = (A_i - R_i) sum_q w_q P(u_q) / g_i(u_q),
            # with A_i in {0, 1}: 1 / g_i(u_q) is one of two numbers per factor, shared by all rows
            ns = _latest_levels(lvl_slot, d, from_level)
            for i in range(ns):
                h = from_level[i]
                ri = lvl_r[h]
                for q in range(Q):
                    u = nodes[q]
                    g0 = ri * (1.0 - u)
                    inv0[q] = weights[q] / g0 if g0 != 0.0 else 0.0      # g = 0 only for A = R = 0: no share
                    inv1[q] = weights[q] / (ri + u * (1.0 - ri))
                for j in range(b):
                    sv[j] = 0.0
                for q in range(Q):
                    for j in range(b):
                        sv[j] += P[d, q, j] * (inv1[q] if lvl_a[h, j] != 0.0 else inv0[q])
                for j in range(b):
                    sv[j] *= lvl_a[h, j] - ri
                fi = lvl_feat[h]
                for o in range(k):
                    if o_t >= 0 and o != o_t:
                        continue
                    vo = value[c, o]
                    for j in range(b):
                        out[fi, o, j] += sv[j] * vo


# ------------------------------------------------------------------------------------ decisions
@njit(cache=CACHE, nogil=True, inline="always")
def _member(keys: np.ndarray, key: np.int64) -> bool:  # pragma: no cover - compiled
    pos = np.searchsorted(keys, key)
    return pos < keys.shape[0] and keys[pos] == key


@njit(cache=CACHE, nogil=True, inline="always")
def _numeric_left(node: int, x: float, threshold: np.ndarray, default_left: np.ndarray, missing: np.ndarray,
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
def _categorical_left(node: int, x: float, default_left: np.ndarray, float32: bool, cat_left: np.ndarray,
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
                out[r, node] = _numeric_left(node, X[r, f], threshold, default_left, missing, strict, float32)
        return
    for node in range(feature.shape[0]):
        f = feature[node]
        if f < 0:
            continue
        if categorical[node]:
            out[r, node] = _categorical_left(node, X[r, f], default_left, float32, cat_left, cat_right, cat_other_left)
        else:
            out[r, node] = _numeric_left(node, X[r, f], threshold, default_left, missing, strict, float32)


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
            go = _categorical_left(node, X[r, feature[node]], default_left, float32, cat_left, cat_right,
                                   cat_other_left)
        else:
            go = _numeric_left(node, X[r, feature[node]], threshold, default_left, missing, strict, float32)
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


# ------------------------------------------------------------------------------- interventional
@njit(cache=CACHE, nogil=True, inline="always")
def _add_game(path_f: np.ndarray, path_s: np.ndarray, nf: int, weight: float, o: int, pos: np.ndarray,
              neg: np.ndarray, out: np.ndarray, r: int) -> None:  # pragma: no cover - compiled
    """Add ``weight`` times the values of ``1[P in S, N out of S]`` (P: path features with side True) to output ``o``."""
    if nf == 0 or weight == 0.0:
        return
    p = 0
    for i in range(nf):
        if path_s[i]:
            p += 1
    vp = pos[p, nf - p] * weight
    vn = neg[p, nf - p] * weight
    for i in range(nf):
        out[r, path_f[i], o] += vp if path_s[i] else vn


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
    """Interventional values of row ``r`` against every background row, added into ``out[r]``.

    Depth-first walk per (background row, tree) with the path kept per level: an entry of the stack
    carries the path length below it and the (feature, side) it decides, so siblings share their
    prefix and nothing is copied.
    """
    B = go_z.shape[0]
    k = value.shape[1]
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
    linear = lin_ptr.shape[0] > 1
    for b in range(B):
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
                            p = 0
                            for i in range(nf):
                                if path_s[i]:
                                    p += 1
                            vp = pos[p, nf - p] * scale
                            vn = neg[p, nf - p] * scale
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


# ------------------------------------------------------------------------------ path dependent
@njit(cache=CACHE, nogil=True)
def _path_dependent_serial(left, right, feature, ratio, parent, slot, repeat, value, roots, tree_out, go_left_t,
                           nodes, weights, max_depth, block, out):  # pragma: no cover - compiled
    rows = go_left_t.shape[1]
    for i in range((rows + block - 1) // block):
        lo, hi = i * block, min(rows, (i + 1) * block)
        path_dependent_walk(left, right, feature, ratio, parent, slot, repeat, value, roots, tree_out,
                            go_left_t[:, lo:hi], nodes, weights, max_depth, out[:, :, lo:hi])


@njit(cache=CACHE, nogil=True, parallel=True)
def _path_dependent_parallel(left, right, feature, ratio, parent, slot, repeat, value, roots, tree_out, go_left_t,
                             nodes, weights, max_depth, block, out):  # pragma: no cover - compiled
    rows = go_left_t.shape[1]
    for i in prange((rows + block - 1) // block):
        lo, hi = i * block, min(rows, (i + 1) * block)
        path_dependent_walk(left, right, feature, ratio, parent, slot, repeat, value, roots, tree_out,
                            go_left_t[:, lo:hi], nodes, weights, max_depth, out[:, :, lo:hi])


# ------------------------------------------------------------------------------------- drivers
_PARALLEL = threading.Lock()     # one parallel kernel at a time; a concurrent caller runs the serial one
_CHUNKS = 8                      # background chunks of a single explained row


def _run(serial, parallel, parallel_ok: bool, *args) -> None:
    if parallel_ok and _PARALLEL.acquire(blocking=False):
        try:
            parallel(*args)
        finally:
            _PARALLEL.release()
        return
    serial(*args)


def _split_arrays(ens) -> tuple:
    empty_bool, empty_keys = np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64)
    if ens.categorical is None:
        return empty_bool, empty_keys, empty_keys, empty_bool
    return ens.categorical, ens.cat_left, ens.cat_right, ens.cat_other_left


def decisions(ens, X: np.ndarray) -> np.ndarray:
    """``go_left[r, node]`` for every row of ``X`` at every internal node of ``ens`` (False at leaves).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=1).fit(np.arange(4.0)[:, None], [0, 0, 1, 1]))
    >>> decisions(ens, np.array([[0.0], [3.0]]))[:, 0]
    array([ True, False])
    """
    X = np.ascontiguousarray(X, dtype=float)
    out = np.zeros((X.shape[0], ens.feature.shape[0]), dtype=np.bool_)
    _run(_decisions_serial, _decisions_parallel, X.shape[0] * ens.feature.shape[0] > 1 << 20,
         ens.feature, ens.threshold, ens.default_left, ens.missing, ens.strict, ens.float32, *_split_arrays(ens), X,
         out)
    return out


def leaves(ens, X: np.ndarray) -> np.ndarray:
    """Leaf reached by every row of ``X`` in every tree of ``ens``: ``(m, T)`` node indices."""
    X = np.ascontiguousarray(X, dtype=float)
    out = np.empty((X.shape[0], ens.roots.shape[0]), dtype=np.int64)
    _run(_leaves_serial, _leaves_parallel, X.shape[0] * ens.roots.shape[0] > 1 << 14, ens.feature, ens.left,
         ens.right, ens.roots, ens.threshold, ens.default_left, ens.missing, ens.strict, ens.float32,
         *_split_arrays(ens), X, out)
    return out


def leaf_sums(ens, X: np.ndarray) -> np.ndarray:
    """The sum over trees of the reached leaves' values for every row of ``X``: ``(m, k)`` (constant leaves), in one
    compiled pass (no ``(rows, trees)`` table of leaves).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=1).fit(np.arange(4.0)[:, None], [0, 0, 1, 1]))
    >>> leaf_sums(ens, np.array([[0.0], [3.0]])).ravel().tolist()
    [0.0, 1.0]
    """
    X = np.ascontiguousarray(X, dtype=float)
    value = np.ascontiguousarray(ens.value, dtype=float)
    out = np.zeros((X.shape[0], value.shape[1]))
    _run(_sums_serial, _sums_parallel, X.shape[0] * ens.roots.shape[0] > 1 << 14, ens.feature, ens.left,
         ens.right, ens.roots, ens.threshold, ens.default_left, ens.missing, ens.strict, ens.float32,
         *_split_arrays(ens), value, X, out)
    return out


def interventional_rows(left: np.ndarray, right: np.ndarray, feature: np.ndarray, value: np.ndarray,
                        roots: np.ndarray, tree_out: np.ndarray, go_x: np.ndarray, go_z: np.ndarray, pos: np.ndarray,
                        neg: np.ndarray, linear: tuple, X: np.ndarray, Z: np.ndarray, max_depth: int,
                        out: np.ndarray) -> None:
    """Add the interventional values of every row of ``go_x`` against the background rows of ``go_z``
    (averaged) into ``out`` ``(rows, n_features, k)``; rows run in parallel.

    ``pos[p, q]`` / ``neg[p, q]``: value of a member of ``P`` / ``N`` in ``1[P in S, N out of S]``;
    ``linear``: ``(ptr, feature, coeff, fallback)`` of linear leaves (``ptr`` of length 1 when none)
    with ``X``, ``Z`` the raw rows and background rows they read.
    """
    import numba

    ptr, feat, coeff, fallback = linear
    max_terms = int(np.diff(ptr).max(initial=0)) if ptr.size > 1 else 0
    args = (left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, ptr, feat, coeff, fallback, X, Z,
            max_depth, max_terms)
    B = go_z.shape[0]
    if go_x.shape[0] < _CHUNKS and B >= 2 * _CHUNKS:
        # few rows (the per-row loop): the background in a fixed number of chunks, in parallel when the threads
        # are free and one after another otherwise; the same sums either way, whatever the threads
        bounds = np.linspace(0, B, _CHUNKS + 1).astype(np.int64)
        partial = np.zeros((_CHUNKS,) + out.shape)
        if numba.get_num_threads() > 1 and _PARALLEL.acquire(blocking=False):
            try:
                _intervene_chunks(*args, bounds, partial)
            finally:
                _PARALLEL.release()
        else:
            _intervene_chunks_serial(*args, bounds, partial)
        out += np.tensordot(np.diff(bounds) / B, partial, axes=1)
        return
    _run(_intervene_serial, _intervene_parallel, go_x.shape[0] > 1, *args, out)


def path_dependent_rows(left: np.ndarray, right: np.ndarray, feature: np.ndarray, ratio: np.ndarray,
                        parent: np.ndarray, slot: np.ndarray, repeat: np.ndarray, value: np.ndarray, roots: np.ndarray,
                        tree_out: np.ndarray, go_left_t: np.ndarray, nodes: np.ndarray, weights: np.ndarray,
                        max_depth: int, block: int, out: np.ndarray) -> None:
    """:func:`path_dependent_walk` over blocks of ``block`` rows of ``go_left_t`` ``(nodes, rows)`` into
    ``out`` ``(n_features, k, rows)``; blocks run in parallel."""
    _run(_path_dependent_serial, _path_dependent_parallel, go_left_t.shape[1] > block, left, right, feature, ratio,
         parent, slot, repeat, value, roots, tree_out, go_left_t, nodes, weights, max_depth, block, out)
