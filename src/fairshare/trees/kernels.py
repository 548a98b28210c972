"""Compiled (numba) walks over tree ensembles: exact semivalues for many rows.

Both kernels take the flat arrays of :class:`~fairshare.trees.ensemble.TreeEnsemble` and the
split decisions of the rows at every node (``go_left[r, node]``, computed once in numpy with
each model's own split rule), and add each row's values into ``out[r, feature, output]``.

*Path-dependent* (:func:`path_dependent_walk`): one depth-first walk per row and tree. Along the
way each distinct path feature ``f`` carries its factor ``g_f(u) = R_f + u (A_f - R_f)``
(``A_f``: the row follows the path at every node on ``f``; ``R_f``: product of the cover
ratios), and the prefix product ``P(u) = prod_f g_f(u)`` at the quadrature nodes of the
semivalue's measure. At a leaf, player ``f`` gets
``(A_f - R_f) sum_q w_q P(u_q) / g_f(u_q)`` times the leaf value (see
:mod:`fairshare.trees.values`). A subtree where some factor is identically zero (a child no
training row reached, which the row does not follow) adds nothing and is skipped. Cost per
row: ``O(leaves * depth * (quadrature nodes + outputs))``.

*Interventional* (:func:`interventional_walk`): for each (row, background row, tree), the walk
follows both rows where they agree and branches where they disagree on a feature not yet
decided on the path (the feature taken from the row, or from the background row), as
TreeSHAP's interventional algorithm. A reached leaf with ``p`` features from the row and ``q``
from the background is the game ``1[P in S, N out of S]``; its values come from
:func:`~fairshare.trees.values.sign_tables`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["path_dependent_walk", "interventional_walk"]


@njit(cache=True, nogil=True)
def path_dependent_walk(left: np.ndarray, right: np.ndarray, feature: np.ndarray, cover: np.ndarray,
                        value: np.ndarray, roots: np.ndarray, go_left: np.ndarray, nodes: np.ndarray,
                        weights: np.ndarray, max_depth: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Add path-dependent semivalues of every row into ``out`` ``(rows, n_features, k)``.

    ``nodes, weights``: quadrature of the semivalue's measure, exact for degree ``max_depth``;
    ``max_depth``: the largest number of edges on a root-to-leaf path.
    """
    rows = go_left.shape[0]
    k = value.shape[1]
    Q = nodes.shape[0]
    levels = max_depth + 2
    P = np.empty((levels, Q))
    fac_feat = np.empty((levels, levels), dtype=np.int64)
    fac_a = np.empty((levels, levels))
    fac_r = np.empty((levels, levels))
    n_fac = np.zeros(levels, dtype=np.int64)
    stack_node = np.empty(levels + 1, dtype=np.int64)
    stack_parent = np.empty(levels + 1, dtype=np.int64)
    stack_level = np.empty(levels + 1, dtype=np.int64)
    for r in range(rows):
        for t in range(roots.shape[0]):
            root = roots[t]
            if feature[root] < 0:
                continue
            n_fac[0] = 0
            for q in range(Q):
                P[0, q] = 1.0
            stack_node[0], stack_parent[0], stack_level[0] = right[root], root, 1
            stack_node[1], stack_parent[1], stack_level[1] = left[root], root, 1
            top = 2
            while top > 0:
                top -= 1
                c, p, d = stack_node[top], stack_parent[top], stack_level[top]
                f = feature[p]
                went_left = left[p] == c
                a = 1.0 if go_left[r, p] == went_left else 0.0
                ratio = cover[c] / cover[p] if cover[p] > 0 else 0.0
                nf = n_fac[d - 1]
                j = -1
                for i in range(nf):
                    fac_feat[d, i] = fac_feat[d - 1, i]
                    fac_a[d, i] = fac_a[d - 1, i]
                    fac_r[d, i] = fac_r[d - 1, i]
                    if fac_feat[d, i] == f:
                        j = i
                if j >= 0:
                    new_a, new_r = fac_a[d, j] * a, fac_r[d, j] * ratio
                    fac_a[d, j], fac_r[d, j] = new_a, new_r
                    n_fac[d] = nf
                    if new_a == 0.0 and new_r == 0.0:
                        continue
                    for q in range(Q):       # recomputed, not divided: a factor may vanish at u = 0 or 1
                        prod = 1.0
                        for h in range(nf):
                            prod *= fac_r[d, h] + nodes[q] * (fac_a[d, h] - fac_r[d, h])
                        P[d, q] = prod
                else:
                    if a == 0.0 and ratio == 0.0:
                        continue
                    fac_feat[d, nf], fac_a[d, nf], fac_r[d, nf] = f, a, ratio
                    n_fac[d] = nf + 1
                    for q in range(Q):
                        P[d, q] = P[d - 1, q] * (ratio + nodes[q] * (a - ratio))
                if feature[c] >= 0:
                    stack_node[top], stack_parent[top], stack_level[top] = right[c], c, d + 1
                    stack_node[top + 1], stack_parent[top + 1], stack_level[top + 1] = left[c], c, d + 1
                    top += 2
                    continue
                # leaf: player f_i gets (A_i - R_i) int prod_{f != i} g_f
                for i in range(n_fac[d]):
                    ai, ri = fac_a[d, i], fac_r[d, i]
                    if ai == ri:
                        continue
                    s = 0.0
                    for q in range(Q):
                        gi = ri + nodes[q] * (ai - ri)
                        if gi != 0.0:
                            s += weights[q] * P[d, q] / gi
                        else:  # a node at u = 0 or 1 where this factor vanishes: product of the others
                            prod = 1.0
                            for h in range(n_fac[d]):
                                if h != i:
                                    prod *= fac_r[d, h] + nodes[q] * (fac_a[d, h] - fac_r[d, h])
                            s += weights[q] * prod
                    s *= ai - ri
                    fi = fac_feat[d, i]
                    for o in range(k):
                        out[r, fi, o] += s * value[c, o]


@njit(cache=True, nogil=True)
def interventional_walk(left: np.ndarray, right: np.ndarray, feature: np.ndarray, value: np.ndarray,
                        roots: np.ndarray, go_x: np.ndarray, go_z: np.ndarray, pos: np.ndarray, neg: np.ndarray,
                        max_depth: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Add interventional semivalues of every row of ``go_x`` against the background rows of
    ``go_z`` (averaged) into ``out`` ``(rows, n_features, k)``.

    ``pos[p, q]`` / ``neg[p, q]``: value of a member of ``P`` / ``N`` in ``1[P in S, N out of S]``.
    """
    rows = go_x.shape[0]
    B = go_z.shape[0]
    k = value.shape[1]
    levels = max_depth + 2
    st_node = np.empty(levels + 1, dtype=np.int64)
    st_n = np.empty(levels + 1, dtype=np.int64)
    st_feat = np.empty((levels + 1, levels), dtype=np.int64)
    st_side = np.empty((levels + 1, levels), dtype=np.bool_)
    scale = 1.0 / B
    for r in range(rows):
        for b in range(B):
            for t in range(roots.shape[0]):
                st_node[0] = roots[t]
                st_n[0] = 0
                top = 1
                while top > 0:
                    top -= 1
                    node = st_node[top]
                    nf = st_n[top]
                    f = feature[node]
                    if f < 0:
                        if nf == 0:
                            continue
                        p = 0
                        for i in range(nf):
                            if st_side[top, i]:
                                p += 1
                        q = nf - p
                        vp = pos[p, q] * scale
                        vn = neg[p, q] * scale
                        for i in range(nf):
                            fi = st_feat[top, i]
                            sv = vp if st_side[top, i] else vn
                            for o in range(k):
                                out[r, fi, o] += sv * value[node, o]
                        continue
                    gx = go_x[r, node]
                    gz = go_z[b, node]
                    if gx == gz:
                        st_node[top] = left[node] if gx else right[node]
                        top += 1
                        continue
                    side = -1
                    for i in range(nf):
                        if st_feat[top, i] == f:
                            side = 1 if st_side[top, i] else 0
                            break
                    if side == 1:
                        st_node[top] = left[node] if gx else right[node]
                        top += 1
                        continue
                    if side == 0:
                        st_node[top] = left[node] if gz else right[node]
                        top += 1
                        continue
                    # branch: f taken from the row (in S) or from the background row (out of S)
                    for i in range(nf):
                        st_feat[top + 1, i] = st_feat[top, i]
                        st_side[top + 1, i] = st_side[top, i]
                    st_feat[top, nf], st_side[top, nf] = f, True
                    st_n[top] = nf + 1
                    st_node[top] = left[node] if gx else right[node]
                    st_feat[top + 1, nf], st_side[top + 1, nf] = f, False
                    st_n[top + 1] = nf + 1
                    st_node[top + 1] = left[node] if gz else right[node]
                    top += 2
