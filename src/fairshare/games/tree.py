"""TreeGame: a tree ensemble explained at one row, with exact values in polynomial time."""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from .._core.arguments import Arguments, Option
from .base import Game
from .cost import row_seconds, table_seconds
from ..results.explanation import Explanation
from ..indices.semivalues import Semivalue, resolve_index
from ..trees.ensemble import TreeEnsemble
from ..trees.interactions import leaf_interactions
from ..trees.links import MODEL_OUTPUTS, log_loss, probability_link
from ..trees.tabulate import TABLE_PLAYERS, interventional_table
from ..trees.inputs import tree_rows
from ..trees.paths import LeafPaths
from ..trees.classes import class_explanation
from ..trees.prepared import Prepared, planned, unreadable, verified
from .tree_outputs import class_outputs, feature_labels, link_rows, row_names
from ..trees.values import leaf_semivalues, path_weights, sign_tables

__all__ = ["TreeGame", "tree_values", "tree_values_array", "tree_explanation", "empty_value", "TREE_ARGUMENTS",
           "MODES"]

MODES = ("path-dependent", "interventional")
_BLOCK_ELEMENTS = 1 << 22
_DECISION_CELLS = 1 << 26  # row x node decisions held at once (64 MB of booleans)
_WALK_ROWS = 64            # rows sharing one compiled walk over the trees (arithmetic vectorized over them)


#: TreeGame's and tree_values' arguments (besides the model and the rows), checked before the model is read
TREE_ARGUMENTS = Arguments("tree_values", (
    Option("index", "shapley", "the semivalue (a name or a Semivalue)", check=resolve_index),
    Option("mode", "path-dependent", "path-dependent (the trees' cover) or interventional (a background)",
           allowed=MODES),
    Option("batch_size", None, "most coalitions per evaluation", kind="int", minimum=1, none_ok=True),
))


#: the output scale of a TreeGame (checked before the model is read)
MODEL_OUTPUT = Option("model_output", "raw", "raw (the trees' margin), probability (the model's predict_proba) or "
                      "log_loss (of the label y); the last two: interventional", allowed=MODEL_OUTPUTS)


def _check_mode(prep: Prepared, mode: str, background: Any) -> None:
    if mode == "interventional" and background is None:
        raise ValueError("background (a baseline row or rows) is required for mode='interventional'")
    if mode == "path-dependent" and background is not None:
        raise ValueError("background is only used with mode='interventional'")
    if mode == "path-dependent" and prep.ensemble.linear is not None:
        raise ValueError("path-dependent values of lightgbm linear trees are not defined: a leaf's linear model "
                         "needs the values of the features outside the coalition, which the tree's cover does not "
                         "give; use mode='interventional' with a background (explained exactly)")


class TreeGame(Game):
    """The game of a tree ensemble at one row ``x``; players are the model's features.

    Parameters
    ----------
    model : a tree model: xgboost, lightgbm, catboost, scikit-learn (decision trees, random and
        extra-trees forests, bagged trees, gradient boosting, HistGradientBoosting, IsolationForest);
        regressors and classifiers. Read once per model object (refitting it is noticed).
    x : row to explain (1-D array, pandas Series or one-row DataFrame (columns aligned by name,
        categoricals and nullable dtypes read as the model reads them), a sparse row)
    mode : {"path-dependent", "interventional"}
        ``"path-dependent"``: a feature outside ``S`` sends the path both ways,
        weighted by the training cover (TreeSHAP's ``tree_path_dependent``; Karczmarz et
        al. 2022). ``"interventional"``: features outside ``S`` take the values of a
        baseline row, and the value is averaged over the rows of ``background``.
    background : row or rows, required for ``"interventional"``
    model_output : {"raw", "probability", "log_loss"}
        ``"raw"`` (default): the model's raw output: margin for xgboost, lightgbm, catboost and gradient
        boosting, prediction for regressors, class probabilities for scikit-learn tree, forest and bagging
        classifiers, the average path length for IsolationForest; one output per class where there are several.
        ``"probability"`` (interventional): the model's own ``predict_proba`` of each hybrid row, averaged over
        the background (the margin's link found by reproducing ``predict_proba``, :mod:`fairshare.trees.links`),
        one output per class. ``"log_loss"`` (interventional, with the label ``y``): ``-log p(y)`` of each
        hybrid row, averaged. A probability is not a sum over trees, so these games have no polynomial closed
        form: ``fs.exact`` enumerates (n <= 22) and the estimators sample the fast game, with standard errors.
    y : the label whose log loss ``model_output="log_loss"`` explains (a class of the model)

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X = np.random.default_rng(0).random((200, 5)); y = X[:, 0] * X[:, 1] + X[:, 2]
    >>> model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    >>> g = fs.games.TreeGame(model, X[0], mode="interventional", background=X[1])
    >>> phi = fs.exact(g, "shapley")
    >>> bool(np.isclose(phi.values.sum(), model.predict(X[:1])[0] - model.predict(X[1:2])[0]))
    True
    """

    kind = "tree"

    def __init__(self, model: Any, x: Any, mode: str = "path-dependent", background: Any = None,
                 player_names: Any = None, batch_size: int | None = None, model_output: str = "raw",
                 y: Any = None) -> None:
        TREE_ARGUMENTS.check({"mode": mode, "batch_size": batch_size})
        model_output = MODEL_OUTPUT.validate(model_output)
        if model_output != "raw" and mode != "interventional":
            raise ValueError(f"model_output={model_output!r} is defined for mode='interventional' (a background); "
                             "the path-dependent game averages margins over the trees' cover")
        if (model_output == "log_loss") != (y is not None):
            raise ValueError("y (the label) is required for model_output='log_loss' and only used there")
        prep = planned(model)                  # no model call: the reading is checked before the first value
        _check_mode(prep, mode, background)
        ens = prep.ensemble
        super().__init__(ens.n_features, player_names=player_names if player_names is not None else
                         ens.feature_names, batch_size=batch_size)
        self.prepared, self.model = prep, model
        self.mode = mode
        rows = tree_rows(x, ens, "x")
        if rows.shape[0] != 1:
            raise ValueError(f"x must be one row, got {rows.shape[0]} rows (use fairshare.games.tree_values for many)")
        self.x = rows[0]
        self.background = tree_rows(background, ens, "background") if mode == "interventional" else None
        if self.background is not None and self.background.shape[0] == 0:
            raise ValueError("background must hold at least one row")
        self.n_outputs = ens.n_outputs if ens.n_outputs > 1 else 0
        self.model_output, self._link, self._output, self._label, self._link_rows = model_output, "identity", None, \
            None, None
        self._unchecked = not isinstance(model, (Prepared, TreeEnsemble))     # checked before the first value
        if model_output != "raw":
            if not callable(getattr(model, "predict_proba", None)):
                raise ValueError(f"model_output={model_output!r} needs a classifier with predict_proba; "
                                 f"{type(model).__name__} has none")
            self.n_outputs, self._label = class_outputs(model, ens, model_output, y)
            self._link_rows = link_rows(background, ens)      # the link is found on them before any value

    def _check(self) -> None:
        """The reading of the trees made ready and checked against the model (once per model: cached)."""
        verified(self.model, self.prepared)

    def _read_checked(self) -> None:
        """Before the first value: the reading of the trees checked against the model, and the margin's link to its
        probabilities found (the first link of :mod:`fairshare.trees.links` that reproduces predict_proba; once per
        model), so that a refused argument costs no model call."""
        if self._unchecked:
            self._check()
            self._unchecked = False
        if self._link_rows is None:
            return
        prep, sample = self.prepared, self._link_rows
        if "probability" not in prep.links:               # a property of the model: checked on its first rows
            prep.links["probability"] = probability_link(self.model, prep.ensemble.predict(
                self.background[:sample.shape[0]]), sample)
        self._link, to_probability = prep.links["probability"]
        k = to_probability(prep.ensemble.predict(self.background[:1])).shape[1]
        if self.model_output == "probability" and k != self.n_outputs:
            raise ValueError(f"model_output='probability': the {type(self.model).__name__} gives {k} probabilities, "
                             f"but its classes_ name {self.n_outputs}")
        label, self._link_rows = self._label, None
        self._output = to_probability if label is None else (lambda raw: log_loss(to_probability(raw), label)[:, None])

    @property
    def link(self) -> str:
        """The link from the trees' margin to the values: ``"identity"`` for the raw output, else the one found for
        the model's probabilities (asked first, it is found then: the reading checked, a few rows predicted)."""
        if self._link_rows is not None:
            self._read_checked()
        return self._link

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        self._read_checked()
        ens = self.prepared.ensemble
        if self._tabulated:                                      # a probability or loss, few features: the table
            codes = coalitions.astype(np.int64) @ (np.int64(1) << np.arange(self.n_players, dtype=np.int64))
            out = self._table[codes]
        elif self.mode == "interventional":
            B = self.background.shape[0]
            m = coalitions.shape[0]
            block = max(1, _BLOCK_ELEMENTS // max(B * self.n_players, 1))
            out = np.empty((m, max(self.n_outputs, 1) if self._output is not None else ens.n_outputs))
            for start in range(0, m, block):
                S = coalitions[start:start + block]
                rows = np.where(S[:, None, :], self.x[None, None, :], self.background[None, :, :])
                pred = ens.predict(rows.reshape(-1, self.n_players))
                if self._output is not None:                     # the link of each hybrid row, then the mean
                    pred = self._output(pred)
                out[start:start + block] = pred.reshape(S.shape[0], B, -1).mean(axis=1)
        else:
            # the empty and the grand coalition (what fs.exact asks for) without the leaf paths: the ensemble's
            # expected value and its prediction
            size = coalitions.sum(axis=1)
            out = np.empty((coalitions.shape[0], ens.n_outputs))
            out[size == 0] = self.prepared.expected_value
            full = size == self.n_players
            if full.any():
                out[full] = ens.predict(self.x[None, :])[0]
            rest = (size > 0) & ~full
            if rest.any():
                out[rest] = _path_dependent_values(self.prepared, self._follows, coalitions[rest])
        return out if out.shape[1] > 1 else out[:, 0]

    @property
    def _tabulated(self) -> bool:
        """A link of the margin (no sum over trees) on at most TABLE_PLAYERS features of constant-leaf trees: every
        coalition's value is tabulated once (:mod:`fairshare.trees.tabulate`), whatever the batches asked for."""
        return (self.model_output != "raw" and self.prepared.ensemble.linear is None
                and self.n_players <= TABLE_PLAYERS)

    @cached_property
    def _table(self) -> np.ndarray:
        """Every coalition's value ``(2^n, k)`` (all_coalitions order)."""
        return interventional_table(self.prepared, self.x, self.background, self._link, self._label)

    @cached_property
    def _follows(self) -> np.ndarray:
        """``A[L, d]`` of the explicand (path-dependent game values; not needed for exact values)."""
        return self.prepared.paths.follows(self.prepared.ensemble, self.x[None, :])[0]

    def cost(self) -> float:
        """Predicted seconds per evaluation: the model's rows (one per background row, interventional)."""
        rows = 1 if self.background is None else self.background.shape[0]
        return rows * row_seconds(self.model, self.n_players)

    def table_seconds(self) -> float | None:
        """Predicted seconds of the table of all ``2^n`` coalitions every evaluation reads (a probability or log loss
        on at most 16 features of constant-leaf trees: ``auto`` takes exact values from it); else None."""
        ens = self.prepared.ensemble
        return table_seconds(self.n_players, self.background.shape[0], ens.n_outputs, ens.feature.size) \
            if self._tabulated else None

    def null_players(self) -> np.ndarray:
        """Features no tree splits on, and (interventional) features equal to every background row."""
        ens = self.prepared.ensemble
        used = np.zeros(self.n_players, dtype=bool)
        used[ens.feature[ens.feature >= 0]] = True
        null = ~used
        if self.mode == "interventional":
            same = (self.background == self.x[None, :]) | (np.isnan(self.background) & np.isnan(self.x)[None, :])
            null |= same.all(axis=0)
        return null

    def knows_exact_values(self, index: Semivalue) -> bool:
        return self.model_output == "raw"

    def exact_values(self, index: Semivalue) -> np.ndarray:
        if self.model_output != "raw":                # a probability is no sum over trees: no closed form
            return None
        self._read_checked()
        values = _exact_rows(self.prepared, self.x[None, :], index, self.mode, self.background)[0]
        return values if self.prepared.ensemble.n_outputs > 1 else values[:, 0]

    def knows_exact_interactions(self, index: Any) -> bool:
        return self.model_output == "raw"

    def exact_interactions(self, index: Any, subsets: np.ndarray) -> np.ndarray:
        """Exact values of every subset of 1..order features (``subsets`` is :func:`subsets_up_to` ``(n, order)``)."""
        if self.model_output != "raw":
            return None
        self._read_checked()
        return leaf_interactions(self.prepared, self.x[None, :], index, self.mode, self.background)[0]


def _path_dependent_values(prep: Prepared, A: np.ndarray, coalitions: np.ndarray) -> np.ndarray:
    paths, ens = prep.paths, prep.ensemble
    L, D = paths.feature.shape
    padded = np.concatenate([coalitions, np.zeros((coalitions.shape[0], 1), bool)], axis=1)
    block = max(1, _BLOCK_ELEMENTS // max(L * D, 1))
    out = np.empty((coalitions.shape[0], ens.n_outputs))
    for start in range(0, coalitions.shape[0], block):
        S = padded[start:start + block][:, paths.feature]                  # (b, L, D)
        weight = np.where(S, A[None, :, :], prep.ratios[None, :, :]).prod(axis=2)
        out[start:start + block] = ens.base[None, :] + weight @ paths.value
    return out


def empty_value(prep: Prepared, mode: str, background: np.ndarray | None) -> np.ndarray:
    """``v(empty)`` of the tree game (the same for every row): ``(k,)``."""
    if mode == "interventional":
        return prep.ensemble.predict(background).mean(axis=0)
    return prep.expected_value


def _scatter(out: np.ndarray, contrib: np.ndarray, paths: LeafPaths, n: int) -> None:
    """Add per-factor contributions ``(b, L, D)`` times leaf values into ``out`` ``(b, n + 1, k)``."""
    b = contrib.shape[0]
    index = (paths.feature[None, :, :] + (n + 1) * np.arange(b)[:, None, None]).reshape(-1)
    for j in range(out.shape[2]):
        weighted = (contrib * paths.value[None, :, j, None]).reshape(-1)
        out[:, :, j] += np.bincount(index, weights=weighted, minlength=b * (n + 1)).reshape(b, n + 1)


def _linear_arrays(prep: Prepared) -> tuple:
    lin = prep.ensemble.linear
    if lin is None:
        return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 1))
    return lin.ptr, lin.feature, lin.coeff, lin.fallback


def _exact_rows(prep: Prepared, X: np.ndarray, index: Semivalue, mode: str,
                background: np.ndarray | None) -> np.ndarray:
    """Exact values ``(rows, n, k)`` for every row of ``X`` (compiled walks over the trees)."""
    from ..trees.kernels import interventional_rows, path_dependent_rows

    ens = prep.ensemble
    n, k = ens.n_features, ens.n_outputs
    lay = prep.layout
    D = lay.distinct_depth
    out = np.zeros((X.shape[0], n, k))
    per = max(_WALK_ROWS, _DECISION_CELLS // max(ens.feature.size, 1))      # rows whose decisions are held at once
    if mode == "interventional":
        linear = _linear_arrays(prep)
        extra = int(np.diff(linear[0]).max(initial=0)) if linear[0].size > 1 else 0
        pos, neg = sign_tables(index, n, D + extra)
        go_z = prep.decisions(background)
        for start in range(0, X.shape[0], per):
            rows = X[start:start + per]
            interventional_rows(ens.left, ens.right, ens.feature, ens.value, ens.roots, prep.tree_out,
                                ens.decisions(rows), go_z, pos, neg, linear, np.ascontiguousarray(rows),
                                np.ascontiguousarray(background), prep.max_depth, out[start:start + per])
        return out
    quad = index.quadrature(D - 1)                 # leaving one factor out: degree <= D - 1 in u
    if quad is not None:
        for start in range(0, X.shape[0], per):
            go_left_t = np.ascontiguousarray(ens.decisions(X[start:start + per]).T)
            block = np.zeros((n, k, go_left_t.shape[1]))
            path_dependent_rows(ens.left, ens.right, ens.feature, lay.ratio, lay.parent, lay.slot, lay.repeat,
                                ens.value, ens.roots, prep.tree_out, go_left_t, quad[0], quad[1], prep.max_depth,
                                _WALK_ROWS, block)
            out[start:start + per] = block.transpose(2, 0, 1)
        return out
    # a semivalue given by its weights only (no measure): per-leaf polynomials in numpy
    paths = prep.paths
    real = np.arange(D)[None, :] < paths.n_factors[:, None]
    R = np.where(real, prep.ratios, 1.0)
    cw = path_weights(index, n, D)
    wide = np.zeros((X.shape[0], n + 1, k))
    per = max(1, _BLOCK_ELEMENTS // max(paths.feature.size, 1))
    for start in range(0, X.shape[0], per):
        A = paths.follows(ens, X[start:start + per]).astype(float)
        _scatter(wide[start:start + per], leaf_semivalues(A, R[None], paths.n_factors, cw), paths, n)
    return wide[:, :n, :]


def _tree_inputs(model: Any, X: Any, mode: str, background: Any) -> tuple[Prepared, np.ndarray, np.ndarray | None]:
    """The model read (cached; no model call: :func:`~fairshare.trees.prepared.verified` before any value), the rows
    and, interventional, the background as the model reads them; refused with the argument's name when empty or not
    matching the mode."""
    prep = planned(model)
    _check_mode(prep, mode, background)
    rows = tree_rows(X, prep.ensemble, "X")
    if rows.shape[0] == 0:
        raise ValueError("X holds no rows to explain")
    bg = tree_rows(background, prep.ensemble, "background") if mode == "interventional" else None
    if bg is not None and bg.shape[0] == 0:
        raise ValueError("background must hold at least one row")
    return prep, rows, bg


def tree_values(model: Any, X: Any, index: str | Semivalue = "shapley", mode: str = "path-dependent",
                background: Any = None) -> Explanation:
    """Exact values of a tree model for many rows at once, an :class:`~fairshare.Explanation`: ``values`` ``(rows,
    n_features[, k])``, ``empty_value`` per row, ``grand_value`` (the raw output), ``data`` (the rows as the model
    reads them); the array alone: :func:`tree_values_array`. The model is read once (cached while it lives). ``X``,
    ``background``: arrays, frames (aligned by column name; categoricals, nullable dtypes), sparse, a ``DMatrix``.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((100, 4)); model = DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0])
    >>> e = fs.games.tree_values(model, X[:5], "banzhaf")
    >>> e.values.shape, bool(np.array_equal(e.values, tree_values_array(model, X[:5], "banzhaf")))
    ((5, 4), True)
    """
    out = tree_explanation(model, X, index, mode, background)
    return Explanation.from_exact(out["values"], out["empty_value"], grand_value=out["grand_value"], data=out["rows"],
                                  index=resolve_index(index, out["values"].shape[1]).name, options={"mode": mode},
                                  player_names=feature_labels(model, X),
                                  row_names=row_names(X), output_names=getattr(model, "classes_", None),
                                  info={"via": "closed-form (tree walks, all rows)", "mode": mode})


def tree_values_array(model: Any, X: Any, index: str | Semivalue = "shapley", mode: str = "path-dependent",
                      background: Any = None) -> np.ndarray:
    """:func:`tree_values`' array alone, ``(rows, n_features[, k])``: ``tree_values_array(model, X).shape``."""
    return tree_explanation(model, X, index, mode, background)["values"]


def tree_explanation(model: Any, X: Any, index: str | Semivalue = "shapley", mode: str = "path-dependent",
                     background: Any = None) -> dict:
    """What :func:`tree_values` computes and what an explanation shows with it, for many rows at once: ``values``
    (rows, n[, k]), ``empty_value`` ((k,) or a number: the same for every row), ``grand_value`` (rows[, k]: the
    model's raw output) and ``rows``, the rows as the model reads them (floats, categories as codes).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((100, 4)); y = X[:, 0] - X[:, 3]
    >>> model = DecisionTreeRegressor(max_depth=3).fit(X, y)
    >>> e = tree_explanation(model, X[:5])
    >>> bool(np.allclose(e["values"].sum(axis=1) + e["empty_value"], e["grand_value"]))
    True
    """
    args = TREE_ARGUMENTS.check({"index": index, "mode": mode})
    if args["mode"] == "path-dependent" and unreadable(model) is not None:     # splits that read classes of features
        return class_explanation(model, X, args["index"])
    prep, rows, bg = _tree_inputs(model, X, mode, background)
    ens = prep.ensemble
    sv = resolve_index(args["index"], ens.n_features)
    verified(model, prep)                            # every argument checked: the reading checked, once per model
    values = _exact_rows(prep, rows, sv, mode, bg)
    empty = empty_value(prep, mode, bg)
    grand = ens.predict(rows)
    if ens.n_outputs == 1:
        values, empty, grand = values[..., 0], float(empty[0]), grand[:, 0]
    return {"values": values, "empty_value": empty, "grand_value": grand, "rows": rows}
