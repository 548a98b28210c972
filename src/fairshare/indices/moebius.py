"""The Moebius transform and interaction values from Moebius terms: pure array code shared by games, trees and
estimators.

Every index of :mod:`fairshare.indices.interactions` is ``I(S) = sum_{T >= S} c(|S|, |T|) m(T)``: a game that knows
its Moebius terms (a sum of unanimity games; a tree's leaves) has exact interaction values from the terms alone.
From the values of all ``2^n`` coalitions, the transform takes ``n`` butterfly passes and each subset size ``s``
one pass of sums over supersets of ``c(s, |T|) m(T)``: ``O((order + 2) n 2^n)``, no loop over subsets.
"""

from __future__ import annotations

import numpy as np

from .interactions import InteractionIndex

__all__ = ["SubsetIndex", "subset_keys", "interactions_from_all_values", "moebius_transform", "interactions_from_terms", "subset_codes", "contains", "superset_sums",
           "popcount"]


def subset_codes(subsets: np.ndarray) -> np.ndarray:
    """The coalition number (bit ``i``: player ``i``) of each padded subset row of
    :func:`fairshare.indices.interactions.subsets_up_to`.

    Examples
    --------
    >>> subset_codes(np.array([[0, -1], [0, 2]]))
    array([1, 5])
    """
    bits = np.where(subsets >= 0, np.left_shift(1, np.maximum(subsets, 0)), 0)
    return bits.sum(axis=1).astype(np.int64)


def _butterflies(values: np.ndarray, n: int, step) -> np.ndarray:
    """``step(without_i, with_i)`` in place for each player ``i``, over all ``2^n`` rows of ``values`` (2-D)."""
    for i in range(n):
        view = values.reshape(-1, 2, 1 << i, values.shape[1])
        step(view[:, 0], view[:, 1])
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
    return _butterflies(v.reshape(1 << n, -1), n, lambda out, into: into.__isub__(out)).reshape(v.shape)


def superset_sums(values: np.ndarray, n: int) -> np.ndarray:
    """``sum_{T >= S} values(T)`` for all ``2^n`` coalitions ``S`` (``(2^n, k)``; a new array).

    Examples
    --------
    >>> superset_sums(np.array([[1.0], [2.0], [3.0], [4.0]]), 2)[:, 0]
    array([10.,  6.,  7.,  4.])
    """
    return _butterflies(np.array(values, dtype=float), n, lambda out, into: out.__iadd__(into))


def popcount(n: int) -> np.ndarray:
    """The number of players in each of the ``2^n`` coalitions, in :func:`all_coalitions` order."""
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
    >>> from fairshare.indices.interactions import subsets_up_to
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


def subset_keys(subsets: np.ndarray) -> np.ndarray:
    """One fixed-width byte key per padded subset row, whatever the order of its members and however many players
    (unlike :func:`subset_codes`, which holds 62 players at most).

    Examples
    --------
    >>> k = subset_keys(np.array([[2, 0], [0, 2], [0, -1], [70, 99]]))
    >>> bool(k[0] == k[1]), bool(k[0] == k[2]), bool(k[3] == k[0])
    (True, False, False)
    """
    rows = np.asarray(subsets, dtype=np.int64).reshape(len(subsets), -1)
    ordered = np.sort(np.where(rows >= 0, rows, np.iinfo(np.int64).max), axis=1)
    raw = np.ascontiguousarray(ordered.astype(">i8"))
    return raw.view(f"S{8 * max(raw.shape[1], 1)}").ravel() if raw.shape[1] else np.zeros(len(rows), "S8")


class SubsetIndex:
    """Where padded subsets (rows of :func:`~fairshare.indices.interactions.subsets_up_to`) sit in a list of them,
    for any number of players; the members of a row may come in any order.

    Examples
    --------
    >>> from fairshare.indices.interactions import subsets_up_to
    >>> where = SubsetIndex(subsets_up_to(3, 2))
    >>> where(np.array([[1, 2], [0, -1]])).tolist(), where.contains(np.array([[0, 1, 2]]))
    ([5, 0], array([False]))
    >>> pairs = subsets_up_to(100, 2)                                  # beyond 64 players too
    >>> pairs[SubsetIndex(pairs)(np.array([[99, 63]]))].tolist()
    [[63, 99]]
    """

    def __init__(self, subsets: np.ndarray) -> None:
        self.width = np.asarray(subsets).shape[1] if np.ndim(subsets) == 2 else 0
        keys = subset_keys(subsets)
        self._order = np.argsort(keys, kind="stable")
        self._sorted = keys[self._order]
        self.size = int(keys.size)

    def _at(self, subsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = np.asarray(subsets, dtype=np.int64).reshape(len(subsets), -1)
        if rows.shape[1] != self.width:                    # pad or cut the padding to the list's width
            extra = rows[:, self.width:]
            if np.any(extra >= 0):
                return np.zeros(len(rows), np.intp), np.zeros(len(rows), bool)
            rows = np.pad(rows[:, :self.width], ((0, 0), (0, max(self.width - rows.shape[1], 0))), constant_values=-1)
        keys = subset_keys(rows)
        if not self._sorted.size:
            return np.zeros(keys.shape, np.intp), np.zeros(keys.shape, bool)
        at = np.minimum(np.searchsorted(self._sorted, keys), self._sorted.size - 1)
        return at, self._sorted[at] == keys

    def contains(self, subsets: np.ndarray) -> np.ndarray:
        """Whether each row of ``subsets`` is in the list."""
        return self._at(subsets)[1]

    def __call__(self, subsets: np.ndarray) -> np.ndarray:
        """The position of each row of ``subsets`` (each must be in the list; KeyError otherwise)."""
        at, found = self._at(subsets)
        if not np.all(found):
            raise KeyError("a subset is not in the list")
        return self._order[at]


def interactions_from_all_values(values: np.ndarray, n: int, index: InteractionIndex,
                                 subsets: np.ndarray) -> np.ndarray:
    """The index's values ``(p, k)`` of ``subsets`` (padded rows) from the values ``(2^n, k)`` of every coalition.

    Examples
    --------
    >>> from fairshare.indices.interactions import subsets_up_to
    >>> v = np.array([0.0, 1.0, 2.0, 5.0])                               # x0 + 2 x1 + 2 x0 x1
    >>> interactions_from_all_values(v[:, None], 2, InteractionIndex("sii", 2), subsets_up_to(2, 2))[:, 0]
    array([2., 3., 2.])
    """
    m = moebius_transform(np.asarray(values, dtype=float).reshape(1 << n, -1), n)
    sizes = popcount(n)
    c = index.coefficients(n)
    codes = subset_codes(subsets)
    own = (subsets >= 0).sum(axis=1)
    out = np.zeros((subsets.shape[0], m.shape[1]))
    for s in np.unique(own):
        weighted = superset_sums(m * c[s, sizes][:, None], n)
        rows = own == s
        out[rows] = weighted[codes[rows]]
    return out
