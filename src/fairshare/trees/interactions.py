"""Exact interaction values of tree games, any index and order, from each leaf's Moebius terms.

A leaf's term of the tree game is a product over the distinct features ``F`` on its path,
``w(S) = prod_{f in F} (R_f + [f in S] d_f)`` with ``d_f = A_f - R_f`` (:mod:`fairshare.trees.paths`). Its
Moebius transform is ``m(T) = prod_{f in T} d_f prod_{f in F \\ T} R_f`` for ``T`` within ``F`` (0 elsewhere), so
an index ``I(S) = sum_{T >= S} c(|S|, |T|) m(T)`` (:mod:`fairshare.interaction_indices`) gives a subset ``S`` of
``F`` the value

    prod_{i in S} d_i * sum_r c(|S|, |S| + r) e_r,     e_r = [z^r] prod_{f in F \\ S} (R_f + d_f z),

and nothing to a subset with a player off the path. Cost ``O(leaves * C(depth, <= order) * depth^2)`` per row
(per row and background row, interventional), vectorized over rows and leaves; no dependence on ``n``.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..interaction_indices import InteractionIndex, subsets_up_to
from ..moebius import SubsetIndex
from .prepared import Prepared
from .values import factor_polynomial

__all__ = ["leaf_interactions"]

_CELLS = 1 << 23        # rows x background rows x leaves x depth held at once


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
    value = paths.value                                                       # (L, k)
    rows, B, k = A.shape[0], Rb.shape[0], value.shape[1]
    out = np.zeros((rows, where.size, k))
    chunk = max(1, _CELLS // max(B * L * D, 1))
    for s in range(min_size, min(order, D) + 1):
        for combo in itertools.combinations(range(D), s):
            ok = np.all(real[:, list(combo)], axis=1)                         # leaves with s real factors there
            if not ok.any():
                continue
            feats = np.sort(paths.feature[ok][:, list(combo)], axis=1)
            padded = np.pad(feats, ((0, 0), (0, order - s)), constant_values=-1)
            target = where(padded)                                            # (L_ok,)
            Aok, Rok = A[:, ok], Rb[:, ok]
            for start in range(0, rows, chunk):
                a = Aok[start:start + chunk, None]                            # (r, 1, L_ok, D)
                R = np.broadcast_to(Rok[None], (a.shape[0],) + Rok.shape)     # (r, B, L_ok, D)
                d = a - R
                lead = np.prod(d[..., list(combo)], axis=-1)                  # (r, B, L_ok)
                poly = factor_polynomial(R, d, combo)                              # (r, B, L_ok, D + 1)
                tail = poly[..., : D + 1 - s] @ coef[s, s:]                   # sum_r c(s, s + r) e_r
                per_leaf = (lead * tail).mean(axis=1)                         # (r, L_ok): background average
                contrib = per_leaf[:, :, None] * value[ok][None]              # (r, L_ok, k)
                np.add.at(out[start:start + chunk], (slice(None), target), contrib)
    return out
