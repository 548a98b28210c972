"""Root-to-leaf paths of a tree ensemble, and the factor form of a tree game.

For a coalition ``S`` both tree games are sums over leaves of products over the
features on the leaf's path (Karczmarz et al. 2022; Kernel Banzhaf paper, App. C):

    v(S) = base + sum_leaves value_L * prod_{f on path of L} (A_Lf if f in S else R_Lf)

where ``A_Lf = 1`` when the explicand follows the path at every node splitting on ``f``
(else 0), and ``R_Lf`` is, in *path-dependent* mode, the product of the cover ratios
``cover(child) / cover(node)`` of those nodes, in *interventional* mode the same
indicator for the baseline row. A feature repeated along a path is merged into one
factor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ensemble import TreeEnsemble

__all__ = ["LeafPaths", "leaf_paths"]


@dataclass
class LeafPaths:
    """Every root-to-leaf path.

    Attributes
    ----------
    node, went_left : (L, P) raw path nodes and directions (node -1 pads)
    ratio : (L, P) cover ratio of each step (1 at pads)
    slot : (L, P) merged factor each raw step belongs to (``D`` for pads)
    feature : (L, D) feature of each merged factor (``n_features`` for pads)
    n_factors : (L,) number of distinct features on the path
    value : (L, k) leaf outputs
    """

    node: np.ndarray
    went_left: np.ndarray
    ratio: np.ndarray
    slot: np.ndarray
    feature: np.ndarray
    n_factors: np.ndarray
    value: np.ndarray

    @property
    def depth(self) -> int:
        """Largest number of distinct features on one path."""
        return int(self.feature.shape[1])

    def follows(self, ens: TreeEnsemble, X: np.ndarray) -> np.ndarray:
        """``A[r, L, d]``: row ``X[r]`` follows leaf ``L``'s path at every node on feature ``feature[L, d]``.

        Pads are False (they enter products through ``R = 1``).
        """
        go_left = ens.decisions(np.atleast_2d(np.asarray(X, dtype=float)))        # (rows, nodes)
        valid = self.node >= 0
        nodes = np.where(valid, self.node, ens.roots[0])
        L, P = self.node.shape
        D = self.depth
        out = np.ones((go_left.shape[0], L, D + 1), dtype=bool)
        rows = np.arange(L)
        for j in range(P):
            ok = go_left[:, nodes[:, j]] == self.went_left[None, :, j]
            ok |= ~valid[None, :, j]
            out[:, rows, self.slot[:, j]] &= ok
        out[:, :, D] = False
        real = np.arange(D)[None, :] < self.n_factors[:, None]
        return out[:, :, :D] & real[None, :, :]

    def cover_ratios(self) -> np.ndarray:
        """``R[L, d]`` of path-dependent mode: product of the cover ratios of the nodes on each factor's feature."""
        L, P = self.node.shape
        D = self.depth
        out = np.ones((L, D + 1))
        rows = np.arange(L)
        for j in range(P):
            out[rows, self.slot[:, j]] *= self.ratio[:, j]
        return out[:, :D]


def leaf_paths(ens: TreeEnsemble) -> LeafPaths:
    """All root-to-leaf paths of ``ens``, built level by level (vectorized over the frontier).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((50, 3)); y = X[:, 0] + X[:, 1]
    >>> from fairshare.trees import read_ensemble
    >>> paths = leaf_paths(read_ensemble(DecisionTreeRegressor(max_depth=2).fit(X, y)))
    >>> paths.node.shape[0]        # four leaves
    4
    """
    frontier = ens.roots.copy()
    path_nodes = np.zeros((frontier.size, 0), dtype=np.int64)
    path_left = np.zeros((frontier.size, 0), dtype=bool)
    leaves, leaf_nodes, leaf_left = [], [], []
    while frontier.size:
        is_leaf = ens.feature[frontier] < 0
        leaves.append(frontier[is_leaf])
        leaf_nodes.append(path_nodes[is_leaf])
        leaf_left.append(path_left[is_leaf])
        inner = frontier[~is_leaf]
        nodes_in = path_nodes[~is_leaf]
        left_in = path_left[~is_leaf]
        frontier = np.concatenate([ens.left[inner], ens.right[inner]])
        path_nodes = np.concatenate([np.column_stack([nodes_in, inner]), np.column_stack([nodes_in, inner])])
        path_left = np.concatenate([np.column_stack([left_in, np.ones(inner.size, bool)]),
                                    np.column_stack([left_in, np.zeros(inner.size, bool)])])
    P = max(1, max(p.shape[1] for p in leaf_nodes))          # at least one (padding) step: single-leaf trees
    leaf = np.concatenate(leaves)
    node = np.concatenate([np.pad(p, ((0, 0), (0, P - p.shape[1])), constant_values=-1) for p in leaf_nodes])
    went_left = np.concatenate([np.pad(p, ((0, 0), (0, P - p.shape[1])), constant_values=False) for p in leaf_left])
    valid = node >= 0
    safe = np.where(valid, node, 0)
    child = np.where(went_left, ens.left[safe], ens.right[safe])
    next_node = np.where(np.roll(valid, -1, axis=1) & (np.arange(P) < P - 1)[None, :], np.roll(node, -1, axis=1), leaf[:, None])
    child = np.where(valid, next_node, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(valid, ens.cover[child] / ens.cover[safe], 1.0)
    ratio = np.where(np.isfinite(ratio), ratio, 0.0)
    feature = np.where(valid, ens.feature[safe], -1)
    # merge repeated features: slot of a step = rank of the first step on the same feature
    same = (feature[:, :, None] == feature[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    first_pos = np.argmax(same, axis=1)                                         # (L, P) first step with this feature
    is_first = (first_pos == np.arange(P)[None, :]) & valid
    rank = np.cumsum(is_first, axis=1) - 1
    n_factors = is_first.sum(axis=1)
    D = max(int(n_factors.max()), 1)
    slot = np.where(valid, np.take_along_axis(rank, first_pos, axis=1), D)
    merged = np.full((leaf.size, D + 1), ens.n_features, dtype=np.int64)
    merged[np.arange(leaf.size)[:, None], slot] = np.where(valid, feature, ens.n_features)
    return LeafPaths(node=node, went_left=went_left, ratio=ratio, slot=slot, feature=merged[:, :D],
                     n_factors=n_factors, value=ens.value[leaf])
