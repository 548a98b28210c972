"""Sums of an interaction index over a coalition sample, without a loop over subsets (what the correction of
:mod:`fairshare.engine.interaction_regression` and its error bars read).

Every index is ``I(S) = sum_U v(U) g_s(|U|, |U & S|)``
(:meth:`~fairshare.indices.interactions.InteractionIndex.coalition_weights`). :func:`index_sums` computes
``sum_U h_U g_s(|U|, |U & S|)`` for every subset ``S`` and every column of ``h``: ``g_s(u, j)`` is expanded in the
binomial basis ``C(j, l)`` (forward differences in ``j``), and ``sum_U h_U C(|U & S|, l)`` is the sum over the
``l``-subsets ``L`` of ``S`` of the moments ``sum_U h_U prod_{i in L} U_i``: one matrix product per ``l``.

:func:`bearing_units` counts, with the same sums, the drawn sampling units that hold a coalition weighing in each
subset's value: an index such as the Moebius transform weighs only the coalitions inside ``S``, so a subset's
estimate may rest on one drawn unit (or none) however large the sample, and its error cannot be estimated.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..indices.interactions import subsets_up_to
from ..indices.moebius import SubsetIndex, contains
from .solve import indicator_product

__all__ = ["index_sums", "bearing_units", "subset_moments"]


def _sub_subsets(subsets: np.ndarray, size: int) -> np.ndarray:
    """``(p, C(s, size), size)``: for each padded subset of ``s`` members, its sub-subsets of ``size`` members."""
    s = int((subsets[0] >= 0).sum()) if subsets.shape[0] else 0
    picks = np.array(list(itertools.combinations(range(s), size)), dtype=np.int64).reshape(-1, size)
    return subsets[:, picks]


def subset_moments(Z: np.ndarray, H: np.ndarray, subsets: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """``M[L, c] = sum_U H[U, c] prod_{i in L} Z[U, i]`` for each padded subset ``L`` (rows of ``subsets``, all of
    one size >= 1).

    Examples
    --------
    >>> Z = np.array([[True, True, False], [True, False, True]])
    >>> subset_moments(Z, np.array([[1.0], [10.0]]), np.array([[0, 1], [0, 2], [1, 2]])).ravel().tolist()
    [1.0, 10.0, 0.0]
    """
    size = int((subsets[0] >= 0).sum())
    if size == 1:
        return indicator_product(Z, H, transpose=True)[subsets[:, 0]]
    Zf = Z.astype(float)
    if size == 2:
        out = np.empty((subsets.shape[0], H.shape[1]))
        for c in range(H.shape[1]):                     # Z' diag(h) Z per column (n x n), read at the pairs
            out[:, c] = (Zf.T @ (Zf * H[:, c:c + 1]))[subsets[:, 0], subsets[:, 1]]
        return out
    out = np.empty((subsets.shape[0], H.shape[1]))
    for start in range(0, subsets.shape[0], chunk):
        out[start:start + chunk] = contains(Z, subsets[start:start + chunk]).astype(float).T @ H
    return out


def index_sums(Z: np.ndarray, sizes: np.ndarray, cols: np.ndarray, g: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """``T[S, c] = sum_U cols[U, c] g[|S|, |U|, |U & S|]`` ``(p, columns)`` for the padded ``subsets`` and the
    coalitions ``Z`` (``sizes`` their members), ``g`` shaped as ``coalition_weights``' ``(order+1, n+1, order+1)``.

    Examples
    --------
    >>> from fairshare.indices.interactions import InteractionIndex
    >>> Z = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]], bool)
    >>> v = (Z[:, :1] & Z[:, 1:2]).astype(float) * 3.0                    # 3 when players 0 and 1 are both in
    >>> g = InteractionIndex("sii", 2).coalition_weights(3)
    >>> index_sums(Z, Z.sum(axis=1), v, g, subsets_up_to(3, 2)).ravel().round(6).tolist()
    [1.5, 1.5, 0.0, 3.0, 0.0, 0.0]
    """
    n = Z.shape[1]
    own = (subsets >= 0).sum(axis=1)
    total = np.zeros((subsets.shape[0], cols.shape[1]))
    for s in np.unique(own):
        rows_s = np.flatnonzero(own == s)
        for ell in range(s + 1):
            # forward difference of g_s(u, .) of order ell at j = 0: g_s(u, j) = sum_l delta_l(u) C(j, l)
            delta = sum((-1.0) ** (ell - i) * math.comb(ell, i) * g[s, :, i] for i in range(ell + 1))
            h = cols * delta[sizes][:, None]
            if not np.any(h):
                continue
            if ell == 0:
                total[rows_s] += h.sum(axis=0)[None, :]
                continue
            lower = subsets_up_to(n, ell, ell)[:, :ell]
            M = subset_moments(Z, h, lower)
            parts = _sub_subsets(subsets[rows_s][:, :s], ell)          # (p_s, C(s, l), l)
            pos = SubsetIndex(lower)(parts.reshape(-1, ell)).reshape(parts.shape[:2])
            total[rows_s] += M[pos].sum(axis=1)
    return total


def bearing_units(Z: np.ndarray, certain: np.ndarray, unit: np.ndarray, g: np.ndarray,
                  subsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(units, exact)`` per subset: how many sampling units drawn at random (rows not ``certain``; a unit's rows
    share ``unit``) hold a coalition ``U`` with ``g[|S|, |U|, |U & S|] != 0``, and whether the subset's value is
    exact (no coalition of a size sampled at random, drawn or not, weighs in it: the sizes taken whole decide it).

    Examples
    --------
    >>> from fairshare.indices.interactions import InteractionIndex
    >>> Z = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [0, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1]], bool)
    >>> certain = np.array([True, True, False, False, False, False])    # two complementary pairs drawn
    >>> g = InteractionIndex("moebius", 1).coalition_weights(4)         # m({i}) = v({i}) - v(empty)
    >>> units, exact = bearing_units(Z, certain, np.array([-2, -1, 0, 0, 1, 1]), g, subsets_up_to(4, 1))
    >>> units.tolist(), exact.tolist()                                   # only {0} was drawn
    ([1.0, 0.0, 0.0, 0.0], [False, False, False, False])
    """
    scale = np.abs(g).max(axis=2, keepdims=True)
    bears = (np.abs(g) > 1e-9 * scale).astype(float)                  # (order+1, n+1, order+1)
    either = bears.copy()                                              # U or its complement N \ U bears
    for s in range(g.shape[0]):
        either[s, :, :s + 1] = np.maximum(bears[s, :, :s + 1], bears[s, ::-1, s::-1])
    sizes = Z.sum(axis=1)
    drawn = np.flatnonzero(~certain)
    drawn = drawn[np.argsort(unit[drawn], kind="stable")]                 # each unit's rows together
    _, first, count = np.unique(unit[drawn], return_index=True, return_counts=True)
    alone = np.zeros(Z.shape[0])                      # a row's share of its unit, read with ``bears``
    alone[drawn] = 1.0 / np.repeat(count, count)
    lead = drawn[first[count == 2]]
    follow = drawn[first[count == 2] + 1]
    pair = np.all(Z[lead] != Z[follow], axis=1)        # a complementary pair: its first row, read with ``either``
    paired = np.zeros(Z.shape[0])
    paired[lead[pair]] = 1.0
    alone[lead[pair]] = alone[follow[pair]] = 0.0
    units = (index_sums(Z, sizes, paired[:, None], either, subsets)
             + index_sums(Z, sizes, alone[:, None], bears, subsets))[:, 0]
    return units, _exact_sizes(Z, certain, bears, subsets)[(subsets >= 0).sum(axis=1)]


def _exact_sizes(Z: np.ndarray, certain: np.ndarray, bears: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Per subset size ``s``: whether no coalition of a size not taken whole weighs in a value of that size."""
    n = Z.shape[1]
    held = np.bincount(Z[certain].sum(axis=1), minlength=n + 1)
    whole = np.array([held[u] >= math.comb(n, u) for u in range(n + 1)])
    out = np.ones(bears.shape[0], dtype=bool)
    u = np.arange(n + 1)[:, None]
    for s in range(bears.shape[0]):
        j = np.arange(s + 1)[None, :]
        possible = (u - j >= 0) & (u - j <= n - s)                   # C(s, j) C(n - s, u - j) > 0
        out[s] = not np.any((bears[s, :, :s + 1] > 0) & possible & ~whole[:, None])
    return out
