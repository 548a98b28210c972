"""The path-dependent walk, compiled (numba): exact semivalues of a block of rows from the trees' cover.

One depth-first walk per tree for a whole block of rows (:func:`path_dependent_walk`). Along the way each distinct
path feature ``f`` carries its factor ``g_f(u) = R_f + u (A_f - R_f)`` (``A_f``: the row follows the path at
every node on ``f``; ``R_f``: product of the cover ratios, the same for every row), and the prefix product
``P(u) = prod_f g_f(u)`` at the quadrature nodes of the semivalue's measure, per row. At a leaf, player ``f``
gets ``(A_f - R_f) sum_q w_q P(u_q) / g_f(u_q)`` times the leaf value (see :mod:`fairshare.trees.values`). The
branchy walk is paid once per block; the arithmetic runs over the rows in contiguous arrays. Cost:
``O(leaves * depth * (quadrature nodes + outputs))`` per row. :func:`path_layout` gives what the walk needs of
every node's place on its path; :mod:`fairshare.trees.kernels` runs blocks in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE

__all__ = ["path_layout", "path_dependent_walk"]


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
    quadrature of the semivalue's measure (nodes in (0, 1], a node at 1 for leave-one-out), exact for degree
    ``distinct depth - 1``; ``tree_out[t]``: the one output tree ``t`` adds into (-1: several).
    The walk (:func:`_walk_tree`, a tree at a time) visits each node once for the whole block; the
    work per node and leaf runs over the rows in contiguous arrays.
    """
    b = go_left_t.shape[1]
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
        if feature[roots[t]] >= 0:
            _walk_tree(roots[t], tree_out[t], left, right, feature, ratio, parent, slot, repeat, value, go_left_t,
                       nodes, weights, out, P, lvl_slot, lvl_feat, lvl_r, lvl_a, from_level, inv0, inv1, sv, st_node,
                       st_level)


@njit(cache=CACHE, nogil=True)
def _path_products(d: int, nodes: np.ndarray, P: np.ndarray, lvl_slot: np.ndarray, lvl_r: np.ndarray,
                   lvl_a: np.ndarray, from_level: np.ndarray) -> None:  # pragma: no cover - compiled
    """``P[d]``, the product over the path's factors recomputed (an edge that repeats a feature on the path)."""
    b = P.shape[2]
    ns = _latest_levels(lvl_slot, d, from_level)
    for q in range(nodes.shape[0]):
        u = nodes[q]
        for j in range(b):
            P[d, q, j] = 1.0
        for i in range(ns):
            h = from_level[i]
            for j in range(b):
                P[d, q, j] *= lvl_r[h] + u * (lvl_a[h, j] - lvl_r[h])


@njit(cache=CACHE, nogil=True)
def _add_at_one(i: int, h: int, ns: int, nodes: np.ndarray, weights: np.ndarray, from_level: np.ndarray,
                lvl_r: np.ndarray, lvl_a: np.ndarray, sv: np.ndarray) -> None:  # pragma: no cover - compiled
    """Add a node ``u = 1`` (leave-one-out's measure) to ``sv`` for the rows off factor ``i`` (``A_i = 0``): there
    ``g_i(1) = 0`` is no divisor of ``P(1)``, so ``prod_{f != i} g_f(1)`` is multiplied out over the other factors."""
    for q in range(nodes.shape[0]):
        u = nodes[q]
        if u != 1.0:
            continue
        for j in range(sv.shape[0]):
            if lvl_a[h, j] != 0.0:
                continue
            prod = weights[q]
            for i2 in range(ns):
                if i2 != i:
                    h2 = from_level[i2]
                    prod *= lvl_r[h2] + u * (lvl_a[h2, j] - lvl_r[h2])
            sv[j] += prod


@njit(cache=CACHE, nogil=True)
def _walk_tree(root: int, o_t: int, left: np.ndarray, right: np.ndarray, feature: np.ndarray, ratio: np.ndarray,
               parent: np.ndarray, slot: np.ndarray, repeat: np.ndarray, value: np.ndarray, go_left_t: np.ndarray,
               nodes: np.ndarray, weights: np.ndarray, out: np.ndarray, P: np.ndarray, lvl_slot: np.ndarray,
               lvl_feat: np.ndarray, lvl_r: np.ndarray, lvl_a: np.ndarray, from_level: np.ndarray, inv0: np.ndarray,
               inv1: np.ndarray, sv: np.ndarray, st_node: np.ndarray, st_level: np.ndarray) -> None:  # pragma: no cover
    """One tree's depth-first walk for the block (the scratch arrays are :func:`path_dependent_walk`'s): at each
    edge its slot's ``R``, per-row ``A`` and the prefix products ``P[d]``; at each leaf, every path feature's share."""
    b = go_left_t.shape[1]
    k = value.shape[1]
    Q = nodes.shape[0]
    at_one = False                               # a node u = 1 (leave-one-out): see _add_at_one
    for q in range(Q):
        at_one = at_one or nodes[q] == 1.0
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
        else:
            _path_products(d, nodes, P, lvl_slot, lvl_r, lvl_a, from_level)
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
                inv0[q] = weights[q] / g0 if g0 != 0.0 else 0.0      # g = 0: A = R = 0 (no share), or u = 1
                inv1[q] = weights[q] / (ri + u * (1.0 - ri))
            for j in range(b):
                sv[j] = 0.0
            for q in range(Q):
                for j in range(b):
                    sv[j] += P[d, q, j] * (inv1[q] if lvl_a[h, j] != 0.0 else inv0[q])
            if at_one and ri != 0.0:
                _add_at_one(i, h, ns, nodes, weights, from_level, lvl_r, lvl_a, sv)
            for j in range(b):
                sv[j] *= lvl_a[h, j] - ri
            fi = lvl_feat[h]
            for o in range(k):
                if o_t >= 0 and o != o_t:
                    continue
                vo = value[c, o]
                for j in range(b):
                    out[fi, o, j] += sv[j] * vo


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
