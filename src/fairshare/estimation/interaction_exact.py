"""Exact interaction values: from all ``2^n`` values (fast Moebius transform), or from a game's Moebius terms.

Every index of :mod:`fairshare.interaction_indices` is ``I(S) = sum_{T >= S} c(|S|, |T|) m(T)``. With all
``2^n`` values the Moebius transform ``m`` takes ``n`` butterfly passes; then, per subset size ``s``, the
sums over supersets of ``c(s, |T|) m(T)`` take ``n`` more: ``O((order + 2) n 2^n)`` in all, no loop over
subsets. A game that knows its Moebius terms (a sum of unanimity games, a tree's leaves) needs no
evaluation beyond its two ends.
"""

from __future__ import annotations

import numpy as np

from ..interaction_indices import InteractionIndex
from ..moebius import moebius_transform, popcount, subset_codes, superset_sums_inplace
from .enumeration import DEFAULT_CHUNK, all_coalitions

__all__ = ["interactions_from_all_values", "enumerate_values"]


def interactions_from_all_values(values: np.ndarray, n: int, index: InteractionIndex,
                                 subsets: np.ndarray) -> np.ndarray:
    """The index's values ``(p, k)`` of ``subsets`` (padded rows) from the values ``(2^n, k)`` of every coalition.

    Examples
    --------
    >>> from fairshare.interaction_indices import subsets_up_to
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
        weighted = m * c[s, sizes][:, None]
        superset_sums_inplace(weighted, n, 1.0, True)
        rows = own == s
        out[rows] = weighted[codes[rows]]
    return out


def enumerate_values(game, chunk_size: int = DEFAULT_CHUNK) -> np.ndarray:
    """The values ``(2^n, k)`` of every coalition of ``game``, in :func:`all_coalitions` order, in chunks."""
    n = game.n_players
    total = 1 << n
    parts = []
    for start in range(0, total, chunk_size):
        V = np.asarray(game(all_coalitions(n, start, min(total, start + chunk_size))), dtype=float)
        parts.append(V.reshape(V.shape[0], -1))
    return np.concatenate(parts)


