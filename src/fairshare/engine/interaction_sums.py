"""Sums of an interaction index over a coalition sample, without a loop over subsets (what the correction of
:mod:`fairshare.engine.interaction_regression` and its error bars read).

Every index is ``I(S) = sum_U v(U) g_s(|U|, |U & S|)``
(:meth:`~fairshare.indices.interactions.InteractionIndex.coalition_weights`). :func:`index_sums` computes
``sum_U h_U g_s(|U|, |U & S|)`` for every subset ``S`` and every column of ``h``: ``g_s(u, j)`` is expanded in the
binomial basis ``C(j, l)`` (forward differences in ``j``), and ``sum_U h_U C(|U & S|, l)`` is the sum over the
``l``-subsets ``L`` of ``S`` of the moments ``sum_U h_U prod_{i in L} U_i``: one matrix product per ``l``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..indices.interactions import subsets_up_to
from ..indices.moebius import SubsetIndex, contains
from .solve import indicator_product

__all__ = ["index_sums", "subset_moments"]


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
