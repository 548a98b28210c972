"""Rows of a table (a numpy array, a list of rows, one 1-D row) for any model: aligned to the model's features,
checked, one game per row. :mod:`.frame` (DataFrames) and :mod:`.sparse` (scipy sparse rows) are this kind with
their own reading.

Players are the model's features in the model's order (or X's, when the model names none): rows whose columns come
in another order get the same values per feature name. Tree models get a :class:`~fairshare.games.TreeGame` (exact
values of every row in one batched walk), any other model or function a :class:`~fairshare.games.ModelGame`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._core.arrays import to_numpy
from .._core.missing import accepts_missing
from .._core.model_rows import aligned_rows
from .._core.tables import as_rows, check_finite, check_kinds, frame_info, is_sparse, target_of
from ..games.base import Game
from ..games.imputers import Imputer, make_imputer
from ..games.model import ModelGame, as_predict
from ..games.torch_modes import warn_training
from ..games.grouped_tree import GroupedTreeGame, grouped_tree_explanation, grouped_tree_pairs
from ..games.tree import TreeGame, tree_explanation
from ..games.tree_interactions import tree_interactions
from ..engine.choice import Choice
from ..indices.hierarchy import Hierarchy, resolve_value_index
from ..indices.semivalues import Semivalue
from ..results.explanation import Explanation
from ..store.keys import content_key
from ..trees.links import log_loss
from ..trees.inputs import tree_rows
from ..trees.prepared import unchecked, unreadable, verified
from ..trees.readers import is_tree_model, library_rows, raw_output
from .base import Input, Plan, output_names
from .grouped_trees import tree_groups
from .pipeline_columns import is_pipeline
from .pipeline_missing import fills_missing, refuse_unfilled
from .outputs import check_outputs, describe_output, labels_of

__all__ = ["TableInput", "one_row", "imputation_key"]


def one_row(obj: Any, name: str = "X") -> Any:
    """A pandas Series or a 1-D array is one row: a one-row DataFrame or a (1, n) array; a numpy structured array
    is rows whose fields are the features: a DataFrame with a column per field, as is a list of records (dicts of
    feature -> value); a table of another library that converts itself (a pyarrow Table, a polars DataFrame:
    ``to_pandas()``) is read as that pandas DataFrame.

    Examples
    --------
    >>> one_row([1.0, 2.0]).shape
    (1, 2)
    >>> one_row(np.array([(1.0, 2)], dtype=[("a", float), ("b", int)])).columns.tolist()
    ['a', 'b']
    >>> one_row([{"a": 1.0, "b": 2}, {"a": 0.5, "b": 3}]).columns.tolist()
    ['a', 'b']
    >>> one_row([[1.0, 2.0], [3.0]], "background")
    Traceback (most recent call last):
    ...
    ValueError: background must be rows of one value per feature: its rows are not all of one length, or a cell \
holds a sequence
    """
    if callable(getattr(obj, "to_pandas", None)) and not hasattr(obj, "iloc"):    # its columns' names and dtypes
        obj = obj.to_pandas()
    records = isinstance(obj, (list, tuple)) and len(obj) > 0 and all(isinstance(r, Mapping) for r in obj)
    if records or isinstance(obj, np.ndarray) and obj.dtype.names is not None and obj.ndim <= 1:
        import pandas as pd

        return pd.DataFrame(list(obj)) if records else pd.DataFrame(obj.reshape(-1))
    if hasattr(obj, "to_frame") and hasattr(obj, "index") and not hasattr(obj, "columns"):
        import pandas as pd

        return pd.DataFrame([obj.to_numpy()], columns=list(obj.index), index=[obj.name]).infer_objects()
    if isinstance(obj, (list, tuple)) or (hasattr(obj, "shape") and len(getattr(obj, "shape")) == 1):
        try:
            arr = np.asarray(obj)
        except ValueError:                              # ragged rows: numpy's message names no argument
            raise ValueError(f"{name} must be rows of one value per feature: its rows are not all of one length, or "
                             "a cell holds a sequence") from None
        return arr[None, :] if arr.ndim == 1 else arr
    return obj


def imputation_key(imputation: Any) -> Any:
    """What a result records of an imputation: its name, or a fitted imputer's description."""
    return imputation.describe() if isinstance(imputation, Imputer) else imputation


def _background_required(model: Any, imputation: Any) -> str:
    """Why rows without a background cannot be explained: a non-tree model, or a tree model asked for a conditional
    imputation, which its trees' cover does not give (played through its predictions).

    Examples
    --------
    >>> _background_required(None, None)
    'background (a baseline row or rows) is required to explain a non-tree model'
    """
    if not is_tree_model(model):
        return "background (a baseline row or rows) is required to explain a non-tree model"
    asked = f"imputation={imputation_key(imputation)!r}"
    return (f"background (a baseline row or rows) is required for {asked} on a tree model: its players are explained "
            "through the model's predictions on rows completed from the background (path-dependent tree values, "
            f"without a background, are the trees' own); pass background rows, or leave out imputation")


def _own_rows(X: Any, name: str) -> Any:
    """``X`` read as rows where it is a tree library's own container (an xgboost ``DMatrix``, a catboost ``Pool``:
    :func:`fairshare.trees.readers.library_rows`, which refuses those whose rows cannot be read back), else ``X``."""
    rows = None if X is None or np.ndim(X) != 0 else library_rows(X, name)
    return X if rows is None else rows


class TableInput(Input):
    """Rows of a table for any model: aligned by name to the model's features, checked, one game per row.

    Examples
    --------
    >>> import numpy as np
    >>> rows = TableInput(lambda X: X.sum(axis=1), np.ones((2, 3)), np.zeros((1, 3)), {
    ...     "imputation": None, "groups": None, "batch_size": None, "feature_names": None, "model_output": None,
    ...     "y": None, "link": "identity"})
    >>> rows.n_items, rows.game(0).n_players
    (2, 3)
    """

    kind = "table"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return True                                      # the kind every other table kind refines

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        if is_tree_model(model):                 # a tree library's own container (DMatrix, Pool): read as rows
            X, background = _own_rows(X, "X"), _own_rows(background, "background")
        X = one_row(to_numpy(X), "X")                      # tensors of rows: read on the host, as any table
        if np.ndim(X) == 0:
            raise ValueError(f"X must be rows of features (a table, an array, or one row as a Series or 1-D "
                             f"array), got a single {type(X).__name__}")
        background = None if background is None else one_row(to_numpy(background), "background")
        if (X.shape[0] if hasattr(X, "shape") else len(X)) == 0:
            raise ValueError("X holds no rows to explain")
        imputation, groups = args["imputation"], args["groups"]
        conditional = imputation not in (None, "baseline", "marginal")
        self.model = model
        tree = is_tree_model(model) and not conditional            # groups: one grouped tree walk (grouped_trees)
        # trees whose splits read several features at once (catboost's CTRs of combinations): with a background,
        # the same interventional game through the model's own predictions (its raw output, as the trees give it).
        # Planned on the trees as read, no model call: the reading is checked before the first value
        self.unread = unreadable(model) if tree and background is not None else None
        self.tree = tree and self.unread is None
        self.classes_only = self.tree and background is None and unreadable(model) is not None
        if self.classes_only and groups is not None:
            raise ValueError("background (a baseline row or rows) is required for groups= on this catboost model: "
                             "its CTRs combine features, so without a background it has only catboost's own "
                             "combination-class values; pass background rows")
        self.model_output, self.link = args["model_output"], args["link"]
        check_outputs(model, self.tree, self.unread, args["model_output"], args["link"], args["y"], background)
        self.X, self.background = aligned_rows(model, X, background)
        check_kinds(self.X, self.background)
        self.rows = as_rows(self.X, "X")
        if self.rows.shape[1] == 0:
            raise ValueError(f"X has {self.rows.shape[0]} rows but no columns: no features to explain")
        self.prep = None
        if self.tree and not self.classes_only:      # rows the trees cannot read: refused here, naming X (not x)
            self.Xt = tree_rows(self.X, unchecked(model), "X")
        self._read_background(args)
        self.groups, self.batch_size = groups, args["batch_size"]
        if self.tree and groups is not None:
            self._group_trees()
        self.predict = None if self.tree else as_predict(model)         # a torch module: in eval mode
        warn_training(model)
        if self.unread is not None and self.model_output in (None, "raw"):
            self.predict = raw_output(model)                 # the model's own margin, what its trees would give
        self.n_items = self.rows.shape[0]
        self.labels = labels_of(model, args["y"], self.n_items)
        index = self.X.index if hasattr(self.X, "iloc") else None            # a DataFrame's rows name the items
        self.item_names = [str(i) for i in index] if index is not None else [str(i) for i in range(self.n_items)]

    def _read_background(self, args: dict) -> None:
        """Feature names, finite values, the background's rows and the imputation (fitted once, for every row)."""
        n_features = self.rows.shape[1]
        columns, _ = frame_info(self.X)
        names = args["feature_names"]
        self.feature_names = names if names is not None else (columns or [f"x{i}" for i in range(n_features)])
        if len(self.feature_names) != n_features:
            raise ValueError(f"feature_names must have {n_features} names, got {len(self.feature_names)}")
        allow_nan = self.takes_missing()
        check_finite(self.rows, "X", columns, allow_nan=allow_nan)
        imputation = args["imputation"]
        if self.background is None:
            if not self.tree and not self.classes_only:
                raise ValueError(_background_required(self.model, imputation))
            if imputation == "baseline":
                raise ValueError("imputation='baseline' takes one background row; none was given")
            self.bg_rows = None
        else:
            self.bg_rows = as_rows(self.background, "background")
            if self.bg_rows.shape[0] == 0:
                raise ValueError("background must hold at least one row")
            if self.bg_rows.shape[1] != n_features:
                raise ValueError(f"background has {self.bg_rows.shape[1]} columns but X has {n_features}")
            check_finite(self.bg_rows, "background", columns, allow_nan=allow_nan)
            if imputation == "baseline" and self.bg_rows.shape[0] != 1:
                raise ValueError(f"imputation='baseline' takes one background row, got {self.bg_rows.shape[0]}; "
                                 "use imputation='marginal' to average over rows")
        self.imputation = imputation or ("baseline" if self.bg_rows is not None and self.bg_rows.shape[0] == 1
                                         else "marginal")
        if imputation not in (None, "baseline", "marginal"):
            self.check_conditional(imputation)
            self.imputation = make_imputer(imputation, self.bg_rows)

    def _group_trees(self) -> None:
        """The trees read with the features grouped (no model call), the rows as they read them; or, where they have
        no grouped walk, the groups' game through the model's own raw output (which needs a background)."""
        self.prep, self.group_names, why = tree_groups(self.model, self.groups, list(self.feature_names))
        if self.prep is not None:
            self.Zt = None if self.background is None else tree_rows(self.background, unchecked(self.model),
                                                                     "background")
            return
        if self.background is None:
            raise ValueError(f"background (a baseline row or rows) is required for groups= on this model: {why}, so "
                             "its groups are explained through its predictions on rows completed from the background")
        self.tree, self.unread = False, why

    def _verify(self) -> None:
        """The grouped reading completed and checked against the model's own predictions (once per model)."""
        verified(self.model, self.prep)

    def takes_missing(self) -> bool:
        """Whether the model takes NaN in the rows (else NaN is refused, naming the argument, before any call): a
        pipeline's bound method (``pipe.predict``) where its imputers fill the rows' NaN column by column."""
        said, pipeline = accepts_missing(self.model), target_of(self.model)
        if said is False and is_pipeline(pipeline):
            if fills_missing(pipeline, [self.X, self.background]):
                return True
            refuse_unfilled(pipeline, {"X": self.X, "background": self.background})
        return said is not False

    def check_conditional(self, imputation: Any) -> None:
        """Refuse a conditional imputation the rows cannot take: sparse rows (:class:`~.sparse.SparseInput`), NaN in
        the rows or the background (a distribution fitted to the background neither conditions on a missing value
        nor draws one: the Gaussian took a column with NaN for a constant NaN), naming the argument, row and
        column."""
        if is_sparse(self.bg_rows):
            raise ValueError(f"imputation={imputation_key(imputation)!r} models dense numeric features; sparse "
                             "rows are imputed from the background rows (imputation='marginal' or 'baseline')")
        columns = frame_info(self.X)[0]
        for rows, name in ((self.rows, "X"), (self.bg_rows, "background")):
            try:
                missing = np.argwhere(np.isnan(np.asarray(rows, dtype=float)))
            except (TypeError, ValueError):             # words: refused as non-numeric where the imputer is fitted
                continue
            if missing.size:
                r, c = (int(i) for i in missing[0])
                raise ValueError(f"{name} holds NaN at row {r}, column {repr(columns[c]) if columns else c}: "
                                 f"imputation={imputation_key(imputation)!r} draws the absent features from a "
                                 "distribution fitted to the background, which takes no missing values (impute "
                                 "them first, or use imputation='marginal')")

    def row(self, i: int) -> Any:
        return self.X.iloc[[i]] if hasattr(self.X, "iloc") else self.rows[i]

    def game(self, i: int) -> Game:
        """The game of row ``i``."""
        label = None if self.labels is None else self.labels[i]
        if self.tree:
            mode = "path-dependent" if self.background is None else "interventional"
            if self.prep is not None:
                sample = None if self.background is None else (self.background.iloc[:20] if hasattr(
                    self.background, "iloc") else self.background[:20])      # where the link is checked
                return GroupedTreeGame(self.prep, self.Xt[i], mode, self.Zt, player_names=self.group_names,
                                       batch_size=self.batch_size, model=self.model, sample=sample,
                                       model_output=self.model_output or "raw", y=label, verify=self._verify)
            return TreeGame(self.model, self.row(i), mode=mode, background=self.background,
                            player_names=self.feature_names, batch_size=self.batch_size,
                            model_output=self.model_output or "raw", y=label)
        predict = self.predict
        if label is not None:
            position = [c.item() if hasattr(c, "item") else c for c in self.model.classes_].index(label) \
                if hasattr(self.model, "classes_") else int(label)
            proba = self.model.predict_proba

            def predict(rows: Any) -> np.ndarray:               # noqa: F811  (the log loss of the row's label)
                return log_loss(np.asarray(proba(rows), dtype=float), position)
        return ModelGame(predict, self.row(i), self.background, imputation=self.imputation, groups=self.groups,
                         batch_size=self.batch_size, feature_names=self.feature_names, link=self.link)

    def partition(self, game: Game, args: dict) -> Any:
        """The partition over player positions: names replaced by positions, ``"correlation"`` clustered from the
        background (features, not groups)."""
        partition, names = args["partition"], list(game.player_names)
        if partition is None or isinstance(partition, Hierarchy):
            return partition
        if isinstance(partition, str):
            if partition != "correlation":
                raise ValueError(f"partition of a table must be 'correlation', blocks of features or a Hierarchy, "
                                 f"got {partition!r}")
            if self.groups is not None:
                raise ValueError("partition='correlation' clusters features; with groups= give the partition of the "
                                 "groups (their positions) instead")
            if self.bg_rows is None:
                raise ValueError("partition='correlation' clusters the background's features: pass background rows")
            dense = self.bg_rows.toarray() if is_sparse(self.bg_rows) else np.asarray(self.bg_rows, dtype=float)
            return Hierarchy.from_correlation(dense)
        position = {name: i for i, name in enumerate(names)}

        def convert(block: Any) -> Any:
            if isinstance(block, str):
                if block not in position:
                    raise ValueError(f"partition: {block!r} is not a feature name; the players are {names[:20]}")
                return position[block]
            if isinstance(block, (list, tuple, np.ndarray)):
                return [convert(b) for b in block]
            return block

        return convert(partition)

    def value_index(self, args: dict) -> Any:
        if self.classes_only:
            return resolve_value_index(args["index"], len(self.feature_names), None)
        return super().value_index(args)

    def plans(self, args: dict, rule: Any, options: dict) -> list:
        if self.classes_only:                        # catboost's combination classes: exact, from the trees
            why = ("this catboost model's CTRs combine features: catboost's path-dependent values, each combination "
                   "class's value shared equally among its features")
            return [Plan(self.value_index(args), Choice("exact", {}, None, why), None)] * self.n_items
        return super().plans(args, rule, options)

    def check(self, args: dict) -> None:
        """A model explained by its combination classes takes no method, interactions or partition."""
        if not self.classes_only:
            return
        asked = {"method": args["method"] not in ("auto", "exact"), "interactions": args["interactions"] is not None,
                 "partition": args["partition"] is not None}
        wrong = [k for k, v in asked.items() if v]
        if wrong:
            raise ValueError(f"{wrong[0]}: this catboost model's CTRs combine features, so its path-dependent values "
                             "are catboost's combination-class values, exact from the trees; pass a background for "
                             "the interventional game, where every method runs")

    def closed_form(self, plans: list, args: dict, seed: Any, options: dict) -> Explanation | None:
        """Exact tree values of every row in one batched walk (raw output), or catboost's combination classes."""
        plan = plans[0]
        if self.classes_only:
            batched = tree_explanation(self.model, self.X, plan.sv, "path-dependent")
            info = {"choice": plan.choice.as_info(), **self.info(), "seed": str(seed),
                    "via": "closed-form (tree walks over catboost's combination classes)"}
            return self.all_rows(batched, plan, list(self.feature_names), {}, info)
        if plan.choice.method != "exact" or options or not self.tree or \
                self.model_output not in (None, "raw") or not isinstance(plan.sv, Semivalue):
            return None
        mode = "path-dependent" if self.background is None else "interventional"
        if self.prep is not None:
            self._verify()
            batched = grouped_tree_explanation(self.prep, self.Xt, plan.sv, mode, self.Zt)
        else:
            batched = tree_explanation(self.model, self.X, plan.sv, mode, self.background)
        info = {"choice": plan.choice.as_info(), **self.info(), "budget": plan.budget, "seed": str(seed),
                "via": "closed-form (tree walks, all rows)"}
        return self.all_rows(batched, plan, list(self.game(0).player_names), dict(plan.choice.options), info)

    def exact_pairs(self, kind: str) -> np.ndarray:
        """Exact interaction matrices ``(rows, n, n[, k])`` of a tree model in shap's layout of ``kind``
        (``"sii-matrix"``, ``"bii-matrix"``), every row at once."""
        mode = "path-dependent" if self.background is None else "interventional"
        if self.prep is not None:
            self._verify()
            return grouped_tree_pairs(self.prep, self.Xt, kind, mode, self.Zt)
        laid = tree_interactions(self.model, self.X, order=2, index=kind, background=self.background, mode=mode)
        return np.stack([m.matrix() for m in laid])

    def all_rows(self, batched: dict, plan: Plan, names: list[str], options: dict, info: dict) -> Explanation:
        """One Explanation from exact values computed for every row at once (``tree_explanation``'s dict)."""
        values, n = batched["values"], self.n_items
        empty = np.broadcast_to(np.asarray(batched["empty_value"], dtype=float),
                                (n,) + np.shape(batched["empty_value"])).copy()
        return Explanation(values=values, stderr=np.zeros_like(values), empty_value=empty,
                           grand_value=batched["grand_value"], data=self.data(), player_names=names,
                           index=plan.sv.name, method="exact",
                           output_names=output_names(self.model, values.shape[2] if values.ndim == 3 else None),
                           row_names=self.item_names, n_evaluations=np.zeros(n, dtype=np.int64), options=options,
                           info=info)

    def key(self) -> tuple[tuple, dict]:
        imputation = imputation_key(self.imputation)
        if isinstance(self.imputation, Imputer):        # by content: the data it was fitted on, its settings
            imputation = f"{imputation} {content_key(self.imputation)}"
        return (self.rows, self.bg_rows), dict(imputation=imputation, groups=self.groups,
                                               names=self.feature_names, model_output=str(self.model_output),
                                               labels=repr(self.labels), link=self.link)

    def item_data(self, i: int) -> Any:
        return self.rows[i]

    def data(self) -> np.ndarray | None:
        """The explained rows' feature values for plots (None where players are groups of features)."""
        return None if self.groups is not None else self.rows

    def info(self) -> dict:
        return describe_output(self.model, self.tree, self.unread, self.model_output, self.predict, self.labels,
                               self.link, self.background, imputation_key(self.imputation))
