"""Tree ensembles whose players are groups of their features: the raw columns behind a pipeline's transformed ones.

A scikit-learn pipeline turns each raw column into one or several transformed columns (a scaled number, the
indicators of a one-hot encoding, a code) and its final tree model splits on the transformed columns. The game of
the raw columns sets a raw column from the explained row or from the background row, that is, *all* its
transformed columns at once. Both tree games only ever ask, at a node splitting on a transformed column, "is this
node's player in the coalition?", so the raw-column game is the transformed-column tree game with every node's
feature replaced by its group: the interventional walk branches where the row and the background row part on a
group not yet decided on the path, and follows the side already taken where the group was decided at an earlier
node; the path-dependent walk merges a group met several times on a path into one factor (the product of the
row's indicators and of the cover ratios), exactly as it merges a repeated feature. The values are those of the
raw-column game, exact, in one walk (``tests/test_pipelines.py`` checks both modes against enumeration).

:class:`GroupedEnsemble` is that relabelled ensemble: its ``feature`` holds the groups (what the walks read),
while rows (the transformed columns) are decided, and predicted, by the ensemble over the columns it keeps.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ensemble import TreeEnsemble
from .prepared import Prepared, remembered, unchecked

__all__ = ["GroupedEnsemble", "group_ensemble", "grouped", "unchecked"]


@dataclass
class GroupedEnsemble(TreeEnsemble):
    """A :class:`TreeEnsemble` whose ``feature`` holds each node's group (a raw column) and whose rows are decided by
    ``columns``, the ensemble over the transformed columns (``group_of[j]``: the group of column ``j``).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> X = np.random.default_rng(0).random((50, 3))
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0] + X[:, 2]))
    >>> g = group_ensemble(ens, np.array([0, 1, 0]), 2)
    >>> g.n_features, bool(np.array_equal(g.decisions(X[:4]), ens.decisions(X[:4])))
    (2, True)
    """

    columns: TreeEnsemble | None = None
    group_of: np.ndarray | None = None

    def decisions(self, X: np.ndarray) -> np.ndarray:
        return self.columns.decisions(X)

    def leaves(self, X: np.ndarray) -> np.ndarray:
        return self.columns.leaves(X)

    def leaf_outputs(self, X: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        return self.columns.leaf_outputs(X, leaves)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.columns.predict(X)


def group_ensemble(ens: TreeEnsemble, group_of: Any, n_groups: int,
                   names: list[str] | None = None) -> GroupedEnsemble:
    """``ens`` with each split's feature replaced by its group: ``group_of[j]`` in ``0 .. n_groups - 1`` for every
    column ``j`` of ``ens``.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> X = np.random.default_rng(0).random((50, 2))
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=2).fit(X, X[:, 1]))
    >>> sorted(set(group_ensemble(ens, [0, 0], 1).feature.tolist()))
    [-1, 0]
    """
    group_of = np.asarray(group_of, dtype=np.int64)
    if group_of.shape != (ens.n_features,):
        raise ValueError(f"group_of must give a group for each of the {ens.n_features} columns, got shape "
                         f"{group_of.shape}")
    if group_of.size and (group_of.min() < 0 or group_of.max() >= n_groups):
        raise ValueError(f"group_of must hold groups 0 .. {n_groups - 1}")
    if ens.linear is not None:
        raise ValueError("the leaves of lightgbm linear trees read the columns themselves: their groups have no "
                         "exact tree walk")
    feature = np.where(ens.feature >= 0, group_of[np.maximum(ens.feature, 0)], -1).astype(np.int64)
    fields = {f.name: getattr(ens, f.name) for f in dataclasses.fields(TreeEnsemble)}
    fields.update(feature=feature, n_features=int(n_groups), feature_names=names, category_maps={},
                  category_note=None, category_hash=None)
    return GroupedEnsemble(**fields, columns=ens, group_of=group_of)


def grouped(model: Any, group_of: Any, n_groups: int, names: list[str] | None = None) -> Prepared:
    """The tree model ``model`` read (:func:`unchecked`: no model call) with its columns grouped
    (:func:`group_ensemble`), kept while the model lives and is unchanged (as :func:`~fairshare.trees.prepared.
    prepared`), one reading per grouping; :func:`~fairshare.trees.prepared.verified` makes it ready for values.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((50, 2))
    >>> model = DecisionTreeRegressor(max_depth=2).fit(X, X[:, 1])
    >>> grouped(model, [0, 0], 1) is grouped(model, [0, 0], 1), grouped(model, [0, 0], 1).ensemble.n_features
    (True, 1)
    """
    group_of = np.asarray(group_of, dtype=np.int64)
    digest = hashlib.blake2b(group_of.tobytes() + repr((n_groups, names)).encode(), digest_size=16).hexdigest()
    return remembered(model, f"grouped:{digest}",
                      lambda m: Prepared(group_ensemble(unchecked(m), group_of, n_groups, names)))
