"""The Moebius transform and interaction values from Moebius terms: pure array code shared by games, trees and
estimators.

Every index of :mod:`fairshare.interaction_indices` is ``I(S) = sum_{T >= S} c(|S|, |T|) m(T)``: a game that knows
its Moebius terms (a sum of unanimity games; a tree's leaves) has exact interaction values from the terms alone,
and the transform of all ``2^n`` values takes ``n`` butterfly passes.
"""

from __future__ import annotations

import numpy as np

from .interaction_indices import InteractionIndex

__all__ = ["moebius_transform", "interactions_from_terms", "subset_codes", "contains", "superset_sums_inplace",
           "popcount"]


def subset_codes(subsets: np.ndarray) -> np.ndarray:
    """The coalition number (bit ``i``: player ``i``) of each padded subset row of
    :func:`fairshare.interaction_indices.subsets_up_to`.

    Examples
    --------
    >>> subset_codes(np.array([[0, -1], [0, 2]]))
    array([1, 5])
    """
    bits = np.where(subsets >= 0, np.left_shift(1, np.maximum(subsets, 0)), 0)
    return bits.sum(axis=1).astype(np.int64)


def superset_sums_inplace(values: np.ndarray, n: int, sign: float, supersets: bool) -> np.ndarray:
    """In place over all ``2^n`` rows: subset sums (``sign=1``), the Moebius transform (``sign=-1``), or sums over
    supersets (``supersets=True``)."""
    k = values.shape[1]
    for i in range(n):
        view = values.reshape(-1, 2, 1 << i, k)
        if supersets:
            view[:, 0] += view[:, 1]
        else:
            view[:, 1] += sign * view[:, 0]
    return values


def moebius_transform(values: np.ndarray, n: int) -> np.ndarray:
    """``m(T)`` for all ``2^n`` coalitions, in :func:`all_coalitions` order, from their values ``(2^n,)`` or
    ``(2^n, k)``.

    Examples
    --------
    >>> moebius_transform(np.array([0.0, 1.0, 2.0, 5.0]), 2)      # v = x0 + 2 x1 + 2 x0 x1
    array([0., 1., 2., 2.])
    """
    v = np.array(values, dtype=float)
    flat = v.reshape(1 << n, -1)
    return superset_sums_inplace(flat, n, -1.0, False).reshape(v.shape)


def popcount(n: int) -> np.ndarray:
    sizes = np.zeros(1 << n, dtype=np.int64)
    for i in range(n):
        sizes.reshape(-1, 2, 1 << i)[:, 1] += 1
    return sizes


def contains(carriers: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """``out[t, p]``: coalition ``carriers[t]`` holds every member of ``subsets[p]`` (padded rows).

    Examples
    --------
    >>> contains(np.array([[True, True, False]]), np.array([[0, 1], [1, 2], [2, -1]]))
    array([[ True, False, False]])
    """
    carriers = np.asarray(carriers, dtype=bool)
    padded = np.concatenate([carriers, np.ones((carriers.shape[0], 1), dtype=bool)], axis=1)
    cols = np.where(subsets >= 0, subsets, carriers.shape[1])
    out = np.ones((carriers.shape[0], subsets.shape[0]), dtype=bool)
    for j in range(subsets.shape[1]):
        out &= padded[:, cols[:, j]]
    return out


def interactions_from_terms(carriers: np.ndarray, coefficients: np.ndarray, index: InteractionIndex,
                            subsets: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """The index's values ``(p, k)`` of a game ``v(S) = sum_t a_t [T_t subset of S]`` (a sum of unanimity games:
    its Moebius terms), from the terms alone.

    Examples
    --------
    >>> from fairshare.interaction_indices import subsets_up_to
    >>> T = np.array([[True, True, True]]); a = np.array([[6.0]])      # one unanimity game on 3 players
    >>> interactions_from_terms(T, a, InteractionIndex("k-sii", 2), subsets_up_to(3, 2))[:, 0]
    array([-1., -1., -1.,  3.,  3.,  3.])
    """
    carriers = np.asarray(carriers, dtype=bool)
    a = np.asarray(coefficients, dtype=float).reshape(carriers.shape[0], -1)
    sizes = carriers.sum(axis=1)
    c = index.coefficients(int(sizes.max(initial=0)))
    own = (subsets >= 0).sum(axis=1)
    out = np.zeros((subsets.shape[0], a.shape[1]))
    for start in range(0, subsets.shape[0], chunk):
        block = subsets[start:start + chunk]
        held = contains(carriers, block)                                   # (terms, p)
        weight = c[own[start:start + chunk][None, :], sizes[:, None]]       # (terms, p)
        out[start:start + chunk] = (held * weight).T @ a
    return out
