"""KNNGame: the data-valuation game of a k-nearest-neighbour classifier, with exact Shapley values in closed form.

Players are training points. For a validation point ``t`` and a coalition ``S`` of training points,
``u_t(S) = (1 / K) sum_{k <= min(K, |S|)} 1[y_{a_k(S)} = y_t]`` where ``a_k(S)`` is ``t``'s ``k``-th
nearest neighbour in ``S``; the game is the mean of ``u_t`` over the validation points
(``v(empty) = 0``). Jia et al. (2019, "Efficient task-specific data valuation for nearest neighbor
algorithms", Theorem 1) give its Shapley values exactly: with the training points sorted by
distance to ``t`` (``a_1`` the closest),

    s_{a_N} = 1[y_{a_N} = y_t] / N            (times min(K, N) / K: for K > N no vote is full),
    s_{a_i} = s_{a_{i+1}} + (1[y_{a_i} = y_t] - 1[y_{a_{i+1}} = y_t]) / K * min(K, i) / i,

``O(N log N)`` per validation point; estimators are checked against them at thousands of players.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from .._core.arguments import check_int
from .base import Game
from ..indices.semivalues import Semivalue
from .._core.compiled import CACHE, threads_for

__all__ = ["KNNGame", "knn_shapley"]


@njit(parallel=True, cache=CACHE)
def _knn_accuracy(coalitions: np.ndarray, order: np.ndarray, match: np.ndarray, k: int) -> np.ndarray:
    """Mean over validation points of the share of the ``k`` nearest members that carry the right label
    (each walk stops at the ``k``-th member; zero for the empty coalition)."""
    m, T, n = coalitions.shape[0], order.shape[0], order.shape[1]
    out = np.zeros(m)
    for r in prange(m):
        total = 0.0
        for t in range(T):
            found = 0
            right = 0
            for j in range(n):
                p = order[t, j]
                if coalitions[r, p]:
                    found += 1
                    right += match[t, j]
                    if found == k:
                        break
            total += right
        out[r] = total / (k * T)
    return out

_CELLS = 1 << 24


def _orders(X_train: np.ndarray, X_val: np.ndarray) -> np.ndarray:
    """For each validation point, the training points by increasing distance (ties by index): ``(T, N)``. Both sets
    are centred on the training mean first: ``|x|^2 - 2 x.v + |v|^2`` of raw coordinates lost the order of points a
    unit apart at 1e8 (timestamps, unscaled amounts) to cancellation."""
    out = np.empty((X_val.shape[0], X_train.shape[0]), dtype=np.int64)
    step = max(1, _CELLS // max(X_train.shape[0], 1))
    centre = X_train.mean(axis=0) if X_train.shape[0] else 0.0
    X_train, X_val = X_train - centre, X_val - centre
    sq = (X_train**2).sum(axis=1)
    for lo in range(0, X_val.shape[0], step):
        v = X_val[lo:lo + step]
        dist = sq[None, :] - 2.0 * v @ X_train.T + (v**2).sum(axis=1)[:, None]
        out[lo:lo + step] = np.argsort(dist, axis=1, kind="stable")
    return out


def knn_shapley(X_train: Any, y_train: Any, X_val: Any, y_val: Any, k: int = 5) -> np.ndarray:
    """Exact Shapley values of the training points for a ``k``-nearest-neighbour classifier (Jia et al. 2019).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [5.0]]); y = np.array([0, 0, 1])
    >>> knn_shapley(X, y, np.array([[0.2]]), np.array([0]), k=1)      # either near point makes the vote right
    array([0.5, 0.5, 0. ])
    """
    X_train, X_val = np.asarray(X_train, dtype=float), np.asarray(X_val, dtype=float)
    y_train, y_val = np.asarray(y_train), np.asarray(y_val)
    k = check_int(k, "k", minimum=1)
    n = X_train.shape[0]
    orders = _orders(X_train, X_val)
    match = (y_train[orders] == y_val[:, None]).astype(float)                      # (T, N) in distance order
    i = np.arange(1, n + 1, dtype=float)
    s = np.zeros_like(match)
    s[:, -1] = match[:, -1] * min(k, n) / (k * n)          # the farthest point counts in the coalitions under k
    step = (match[:, :-1] - match[:, 1:]) / k * np.minimum(k, i[:-1]) / i[:-1]      # s_i - s_{i+1}
    s[:, :-1] = s[:, -1:] + np.cumsum(step[:, ::-1], axis=1)[:, ::-1]
    values = np.zeros((X_val.shape[0], n))
    np.put_along_axis(values, orders, s, axis=1)
    return values.mean(axis=0)


class KNNGame(Game):
    """Training points valued by a ``k``-nearest-neighbour classifier's validation accuracy (see the module).

    Examples
    --------
    >>> import fairshare as fs
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(8, 2)); y = (X[:, 0] > 0).astype(int)
    >>> g = fs.games.KNNGame(X[:6], y[:6], X[6:], y[6:], k=2)
    >>> bool(np.allclose(fs.exact(g, "shapley").values, fs.exact(g, "shapley", via="enumeration").values))
    True
    """

    kind = "data"

    def __init__(self, X_train: Any, y_train: Any, X_val: Any, y_val: Any, k: int = 5) -> None:
        self.X_train = np.asarray(X_train, dtype=float)
        self.X_val = np.asarray(X_val, dtype=float)
        self.y_train, self.y_val = np.asarray(y_train), np.asarray(y_val)
        if self.X_train.ndim != 2 or self.X_val.ndim != 2 or self.X_train.shape[1] != self.X_val.shape[1]:
            raise ValueError(f"X_train and X_val must be 2-D with the same columns, got {self.X_train.shape} and "
                             f"{self.X_val.shape}")
        if len(self.y_train) != len(self.X_train) or len(self.y_val) != len(self.X_val):
            raise ValueError("y_train and y_val must have one label per row of X_train and X_val")
        self.k = check_int(k, "k", minimum=1)
        super().__init__(self.X_train.shape[0])
        self._order = _orders(self.X_train, self.X_val)
        self._match = (self.y_train[self._order] == self.y_val[:, None]).astype(np.int64)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        with threads_for(coalitions.shape[0] * self._order.size // 4):     # walks stop early: a quarter, say
            return _knn_accuracy(np.ascontiguousarray(coalitions, dtype=np.bool_), self._order, self._match, self.k)

    def knows_exact_values(self, index: Semivalue) -> bool:
        return index.is_shapley

    def exact_values(self, index: Semivalue) -> np.ndarray | None:
        if not index.is_shapley:
            return None
        return knn_shapley(self.X_train, self.y_train, self.X_val, self.y_val, self.k)
