"""The tree game of groups of a tree model's columns: a pipeline's raw columns, each one player for all the columns
it becomes (:mod:`fairshare.trees.grouped`), explained at one row or at many rows at once."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..indices.interactions import resolve_interaction_index, subsets_up_to
from ..indices.semivalues import Semivalue, resolve_index
from ..trees.interactions import leaf_interactions
from ..trees.prepared import Prepared
from .base import Game
from .tree import MODEL_OUTPUT, MODES, TreeGame, _exact_rows, empty_value
from .tree_outputs import class_outputs

__all__ = ["GroupedTreeGame", "grouped_tree_explanation", "grouped_tree_pairs"]

_BLOCK_ELEMENTS = 1 << 22


class GroupedTreeGame(TreeGame):
    """The game of a tree model whose players are groups of its columns, at one row ``x`` given in the model's
    columns: a coalition takes every column of its groups from ``x`` and the others from the background row
    (interventional) or from the trees' cover (path-dependent). Exact values come from one tree walk over the groups.

    Parameters
    ----------
    prep : the model read with its columns grouped (:func:`fairshare.trees.grouped.grouped`)
    x : the row in the model's columns ``(n_columns,)``, floats as the model reads them
    mode : "interventional" (with ``background``) or "path-dependent"
    background : rows in the model's columns ``(B, n_columns)``, interventional
    model : what the probabilities come from (a pipeline: its ``predict_proba`` of raw rows), for ``model_output``
        ``"probability"`` and ``"log_loss"``
    sample : a few raw rows ``model`` takes whose columns are ``background[:len(sample)]``: the margin's link is
        checked on them
    model_output, y : as :class:`~fairshare.games.TreeGame`
    verify : called once before the first value is computed (a door checks its reading of the trees there)

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from fairshare.trees.grouped import grouped
    >>> X = np.random.default_rng(0).random((200, 3)); y = X[:, 0] * X[:, 1] + X[:, 2]
    >>> model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    >>> g = GroupedTreeGame(grouped(model, [0, 0, 1], 2), X[0], "interventional", X[1:3], player_names=["ab", "c"])
    >>> phi = fs.exact(g, "shapley")                     # two players: columns 0 and 1 together, column 2
    >>> bool(np.isclose(phi.values.sum(), model.predict(X[:1])[0] - model.predict(X[1:3]).mean()))
    True
    """

    def __init__(self, prep: Prepared, x: np.ndarray, mode: str, background: np.ndarray | None = None,
                 player_names: Any = None, batch_size: int | None = None, model: Any = None, sample: Any = None,
                 model_output: str = "raw", y: Any = None, verify: Callable[[], Any] | None = None) -> None:
        model_output = MODEL_OUTPUT.validate(model_output)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
        if (mode == "interventional") != (background is not None):
            raise ValueError("background rows are given exactly in mode='interventional'")
        if model_output != "raw" and mode != "interventional":
            raise ValueError(f"model_output={model_output!r} is defined for mode='interventional' (a background)")
        ens = prep.ensemble
        if verify is None and not ens.settled:
            raise ValueError("this reading of the trees still owes its base (read without a model call): give verify, "
                             "which completes and checks it (fairshare.trees.prepared.verified)")
        Game.__init__(self, ens.n_features, player_names=player_names, batch_size=batch_size)
        self.prepared, self.model, self.mode, self._check_reading = prep, model, mode, verify
        self.x = np.asarray(x, dtype=float).reshape(-1)
        self.background = None if background is None else np.atleast_2d(np.asarray(background, dtype=float))
        self.group_of = ens.group_of
        self.n_outputs = ens.n_outputs if ens.n_outputs > 1 else 0
        self.model_output, self._link, self._output, self._label, self._link_rows = model_output, "identity", None, \
            None, None
        self._unchecked = verify is not None
        if model_output != "raw":
            if not len(getattr(model, "classes_", [])):
                raise ValueError(f"model_output={model_output!r} needs a classifier with classes_")
            self.n_outputs, self._label = class_outputs(model, ens, model_output, y)
            self._link_rows = sample                     # the link is found on them before the first value

    def _check(self) -> None:
        """The door's check of its reading of the trees (the ``verify`` it gave)."""
        self._check_reading()

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        if self._tabulated or self.mode != "interventional":
            return super()._evaluate(coalitions)            # the table of the groups, or path-dependent values
        self._read_checked()
        ens, B = self.prepared.ensemble, self.background.shape[0]
        width = self.x.size
        block = max(1, _BLOCK_ELEMENTS // max(B * width, 1))
        out = np.empty((coalitions.shape[0], max(self.n_outputs, 1) if self._output is not None else ens.n_outputs))
        for start in range(0, coalitions.shape[0], block):
            S = coalitions[start:start + block][:, self.group_of]             # every column of a group together
            rows = np.where(S[:, None, :], self.x[None, None, :], self.background[None, :, :])
            pred = ens.predict(rows.reshape(-1, width))
            if self._output is not None:
                pred = self._output(pred)
            out[start:start + block] = pred.reshape(S.shape[0], B, -1).mean(axis=1)
        return out if out.shape[1] > 1 else out[:, 0]

    def null_players(self) -> np.ndarray:
        """Groups no tree splits on, and (interventional) groups whose columns equal the row's in every
        background row."""
        ens = self.prepared.ensemble
        used = np.zeros(self.n_players, dtype=bool)
        used[ens.feature[ens.feature >= 0]] = True
        null = ~used
        if self.mode == "interventional":
            same = ((self.background == self.x[None, :]) | (np.isnan(self.background) & np.isnan(self.x)[None, :]))
            per_group = np.ones(self.n_players, dtype=bool)
            np.logical_and.at(per_group, self.group_of, same.all(axis=0))
            null |= per_group
        return null


def grouped_tree_explanation(prep: Prepared, X: np.ndarray, index: str | Semivalue = "shapley",
                             mode: str = "interventional", background: np.ndarray | None = None) -> dict:
    """Exact values of the groups of a grouped tree model for many rows at once (rows in the model's columns):
    ``values`` (rows, groups[, k]), ``empty_value``, ``grand_value`` (the raw output) and ``rows``, as
    :func:`~fairshare.games.tree.tree_explanation` gives them.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees.grouped import grouped
    >>> X = np.random.default_rng(0).random((100, 3)); model = DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0])
    >>> e = grouped_tree_explanation(grouped(model, [0, 1, 1], 2), X[:4], "shapley", "path-dependent")
    >>> e["values"].shape, bool(np.allclose(e["values"].sum(axis=1) + e["empty_value"], e["grand_value"]))
    ((4, 2), True)
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    if (mode == "interventional") != (background is not None):
        raise ValueError("background rows are given exactly in mode='interventional'")
    ens = prep.ensemble
    rows = np.atleast_2d(np.asarray(X, dtype=float))
    bg = None if background is None else np.atleast_2d(np.asarray(background, dtype=float))
    sv = resolve_index(index, ens.n_features)
    values = _exact_rows(prep, rows, sv, mode, bg)
    empty, grand = empty_value(prep, mode, bg), ens.predict(rows)
    if ens.n_outputs == 1:
        values, empty, grand = values[..., 0], float(empty[0]), grand[:, 0]
    return {"values": values, "empty_value": empty, "grand_value": grand, "rows": rows}


def grouped_tree_pairs(prep: Prepared, X: np.ndarray, kind: str, mode: str = "interventional",
                       background: np.ndarray | None = None) -> np.ndarray:
    """Exact pairwise interaction matrices ``(rows, groups, groups[, k])`` of a grouped tree model in the layout of
    ``kind`` (``"sii-matrix"``, ``"bii-matrix"``): each pair's value in both of its cells, each group's own value on
    the diagonal (as :meth:`fairshare.Interactions.matrix`).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees.grouped import grouped
    >>> X = np.random.default_rng(0).random((100, 3)); model = DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0])
    >>> grouped_tree_pairs(grouped(model, [0, 1, 1], 2), X[:4], "sii-matrix", "path-dependent").shape
    (4, 2, 2)
    """
    ens = prep.ensemble
    rows = np.atleast_2d(np.asarray(X, dtype=float))
    bg = None if background is None else np.atleast_2d(np.asarray(background, dtype=float))
    values = leaf_interactions(prep, rows, resolve_interaction_index(kind, 2), mode, bg)        # (rows, p, k)
    n = ens.n_features
    subsets = subsets_up_to(n, 2, 1)
    one, two = subsets[:, 1] < 0, subsets[:, 1] >= 0
    out = np.zeros((rows.shape[0], n, n, ens.n_outputs))
    out[:, subsets[one, 0], subsets[one, 0]] = values[:, one]
    out[:, subsets[two, 0], subsets[two, 1]] = out[:, subsets[two, 1], subsets[two, 0]] = values[:, two]
    return out[..., 0] if ens.n_outputs == 1 else out
