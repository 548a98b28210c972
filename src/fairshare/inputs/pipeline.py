"""Rows for a scikit-learn Pipeline: the players are the user's raw columns, whatever the steps make of them.

A pipeline whose final step is a tree model (xgboost, lightgbm, scikit-learn trees, forests and gradient boosting,
catboost) and whose earlier steps transform columns one by one (ColumnTransformer with scalers, one-hot and ordinal
encoders, imputers, column-wise functions, ``remainder``, nested pipelines) is explained *exactly*: the rows and
the background are transformed once, each transformed column is traced to its raw column
(:mod:`.pipeline_columns`: declared by the steps and checked numerically), and the tree walk runs with each split's
column replaced by its raw column (:mod:`fairshare.trees.grouped`), so the values are the exact interventional
(with a background) or path-dependent (without) values of the game of the raw columns. The output is the tree
door's: the trees' margin by default, ``model_output="probability"`` or ``"log_loss"`` with a background.

A pipeline with a step that mixes columns (PCA, polynomial features, a mixing function), or that cannot be traced,
is explained as a black box on its raw columns (the same game, estimated through the pipeline's predictions), and
so is a pipeline with any other final estimator; ``e.info["pipeline"]`` says which and why.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .._core.missing import accepts_missing
from .._core.model_rows import aligned_rows
from .._core.tables import as_rows, is_sparse
from ..games.base import Game
from ..games.grouped_tree import GroupedTreeGame, grouped_tree_explanation, grouped_tree_pairs
from ..games.model import as_predict, feature_groups, player_of
from ..indices.hierarchy import resolve_value_index
from ..indices.semivalues import Semivalue
from ..results.explanation import Explanation
from ..trees.ensemble import UnreadableSplits
from ..trees.grouped import grouped, unchecked
from ..trees.inputs import tree_rows
from ..trees.prepared import verified
from ..trees.readers import is_tree_model, raw_output
from .outputs import check_outputs, labels_of
from .pipeline_columns import Untraced, check_fitted, check_rows, is_pipeline, trace_columns, transform_rows
from .pipeline_missing import fills_missing, refuse_unfilled
from .table import TableInput, imputation_key, one_row

__all__ = ["PipelineInput", "PipelineMargin"]

_LINK_ROWS = 20


class PipelineMargin:
    """The raw output of a pipeline whose final step is a tree model (the trees' margin) as a function of raw rows:
    what a pipeline that cannot be traced is explained on, the same scale as its exact values.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> X = np.random.default_rng(0).random((40, 3)); y = X[:, 0] > 0.5
    >>> pipe = make_pipeline(PCA(2), GradientBoostingClassifier(n_estimators=3)).fit(X, y)
    >>> bool(np.allclose(PipelineMargin(pipe)(X[:2]).ravel(), pipe.decision_function(X[:2])))
    True
    """

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline
        self.__name__ = "raw output"

    def __call__(self, rows: Any) -> np.ndarray:
        return raw_output(self.pipeline.steps[-1][1])(transform_rows(self.pipeline, rows, "X"))


def _not_exact(args: dict) -> str | None:
    """Why the arguments ask for the black box (or None)."""
    if args["imputation"] not in (None, "baseline", "marginal"):
        return f"imputation={imputation_key(args['imputation'])!r} is a conditional imputation"
    return None


def _unread(final: Any) -> str | None:
    """Why the final step's trees have no grouped walk (read without a model call), or None."""
    try:
        ens = unchecked(final)
    except UnreadableSplits as exc:
        return f"the final step's trees cannot be read ({exc})"
    if ens.linear is not None:
        return "the final step has linear leaves (lightgbm linear trees), which read the transformed columns"
    return None


class PipelineInput(TableInput):
    """Raw rows (a DataFrame, or an array for a pipeline fitted on one) for a scikit-learn Pipeline: the players are
    the raw columns; exact tree values through the pipeline where its steps are traced, else a black box.

    Examples
    --------
    >>> import pandas as pd, fairshare as fs
    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> X = pd.DataFrame({"city": list("abcab") * 8, "size": np.arange(40.0)})
    >>> pipe = make_pipeline(ColumnTransformer([("oh", OneHotEncoder(), ["city"])], remainder="passthrough"),
    ...                      GradientBoostingRegressor(n_estimators=5)).fit(X, X["size"] * (X["city"] == "a"))
    >>> e = fs.explain(pipe, X.iloc[:2], background=X.iloc[10:20], progress=False)
    >>> e.player_names, e.info["pipeline"]["exact"]
    (['city', 'size'], True)
    """

    kind = "pipeline"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return is_pipeline(model) and not is_sparse(X)

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        check_fitted(model)
        name, final = model.steps[-1]
        self.pipeline_info: dict = {"final_step": f"{name!r} ({type(final).__name__})"}
        self._pending: tuple | None = None
        if not is_tree_model(final):
            self.pipeline_info.update(exact=False, reason=f"the final step {self.pipeline_info['final_step']} is no "
                                      "tree model: a black box on the raw columns")
            super().__init__(model, X, background, args)
            check_rows(model, {"X": self.X, "background": self.background})      # before any model call
            return
        X = one_row(X)
        background = None if background is None else one_row(background)
        if (X.shape[0] if hasattr(X, "shape") else len(X)) == 0:
            raise ValueError("X holds no rows to explain")
        self.model, self.final = model, final
        self.tree, self.unread, self.classes_only, self.predict = True, None, False, None
        self.model_output, self.link = args["model_output"], args["link"]
        check_outputs(model, True, None, args["model_output"], args["link"], args["y"], background)
        self.X, self.background = aligned_rows(model, X, background)
        check_rows(model, {"X": self.X, "background": self.background})
        self.rows = as_rows(self.X, "X")
        self._read_background(args)                # names, inf and words refused, the imputation
        self.groups = args["groups"]
        lists, self.players = feature_groups(self.groups, list(self.feature_names))     # groups refused by name
        self.raw_group = player_of(lists, len(self.feature_names))                      # each raw column's player
        traced = _not_exact(args) or self._trace()
        self._pending = None if isinstance(traced, str) else traced      # the trees are read once checks are done
        if isinstance(traced, str):
            self._black_box(traced, background)
        self.batch_size = args["batch_size"]
        self.n_items = self.rows.shape[0]
        self.labels = labels_of(model, args["y"], self.n_items)
        index = getattr(self.X, "index", None)
        self.item_names = [str(i) for i in index] if index is not None else [str(i) for i in range(self.n_items)]

    def takes_missing(self) -> bool:
        """Raw rows with NaN are the pipeline's to handle (its imputers, its final tree model): they are refused
        only when the steps leave NaN for a final step that takes none."""
        if self.tree:
            return True
        if fills_missing(self.model, [self.X, self.background]):
            return True
        refuse_unfilled(self.model, {"X": self.X, "background": self.background})     # naming the raw column
        return accepts_missing(self.model) is not False

    def _trace(self) -> str | tuple:
        """The raw column of every transformed column and the transformed rows, in one pass (or why not)."""
        sample = self.X if self.background is None else _stack(self.background, self.X)
        carry = (self.X,) if self.background is None else (self.X, self.background)
        try:
            return trace_columns(self.model, sample, list(self.feature_names), carry)
        except Untraced as exc:
            return str(exc)

    def _ready(self) -> None:
        """Read the final step's trees and group them (no model call: the reading is checked against the model's
        predictions before the first value), or fall back to the black box where they have no grouped walk."""
        if self._pending is None:
            return
        traced, self._pending = self._pending, None
        reason = _unread(self.final)
        if reason is not None:
            self._black_box(reason, self.background)
        else:
            self._transformed(*traced)

    def value_index(self, args: dict) -> Any:
        """The index over the raw columns (the players whichever game explains them), resolved without a game."""
        if self._pending is None:
            return super().value_index(args)
        players = SimpleNamespace(player_names=list(self.players))
        return resolve_value_index(args["index"], len(self.players), self.partition(players, args))

    def _verify(self) -> None:
        """The reading of the final step's trees completed (its base, where one row finds it: this copy's, wherever
        it was sent) and checked against its own predictions (once per model: cached)."""
        verified(self.final, self.prep)

    def plans(self, args: dict, rule: Any, options: dict) -> list:
        self.value_index(args)                      # the index refused, if it must be, before the trees are read
        return super().plans(args, rule, options)

    def _transformed(self, group_of: np.ndarray, carried: list) -> None:
        """The rows and the background as the final step reads them, and its trees grouped by raw column."""
        ens = unchecked(self.final)
        self.Xt = _final_rows(carried[0], ens, "X", [self.feature_names[g] for g in group_of])
        self.Zt = None if self.background is None else _final_rows(carried[1], ens, "background",
                                                                   [self.feature_names[g] for g in group_of])
        self.prep = grouped(self.final, self.raw_group[group_of], len(self.players), list(self.players))
        counts = np.bincount(group_of, minlength=len(self.feature_names))
        self.pipeline_info.update(exact=True, columns=dict(zip(self.feature_names, counts.tolist())),
                                  transformed_columns=int(group_of.size))

    def _black_box(self, reason: str, background: Any) -> None:
        """Explain the raw columns through the pipeline's predictions (its margin unless asked otherwise)."""
        self.pipeline_info.update(exact=False, reason=f"{reason}: a black box on the raw columns")
        if background is None:
            raise ValueError(f"background: {reason}, so this pipeline is explained as a black box on its raw "
                             "columns, which needs background rows")
        self.tree, self.unread = False, reason
        self.predict = PipelineMargin(self.model) if self.model_output in (None, "raw") else as_predict(self.model)

    @property
    def mode(self) -> str:
        return "path-dependent" if self.background is None else "interventional"

    def game(self, i: int) -> Game:
        """The game of row ``i``: the grouped tree game (traced), else the black box's."""
        self._ready()
        if not self.tree:
            return super().game(i)
        sample = None if self.background is None else (
            self.background.iloc[:_LINK_ROWS] if hasattr(self.background, "iloc") else self.background[:_LINK_ROWS])
        return GroupedTreeGame(self.prep, self.Xt[i], self.mode, self.Zt, player_names=self.players,
                               batch_size=self.batch_size, model=self.model, sample=sample,
                               model_output=self.model_output or "raw",
                               y=None if self.labels is None else self.labels[i], verify=self._verify)

    def closed_form(self, plans: list, args: dict, seed: Any, options: dict) -> Explanation | None:
        """Exact values of every row in one grouped tree walk (the trees' margin)."""
        self._ready()
        plan = plans[0]
        if not self.tree or plan.choice.method != "exact" or options or self.model_output not in (None, "raw") \
                or not isinstance(plan.sv, Semivalue):
            return None
        self._verify()
        batched = grouped_tree_explanation(self.prep, self.Xt, plan.sv, self.mode, self.Zt)
        info = {"choice": plan.choice.as_info(), **self.info(), "budget": plan.budget, "seed": str(seed),
                "via": "closed-form (tree walks over the raw columns' groups, all rows)"}
        return self.all_rows(batched, plan, list(self.players), dict(plan.choice.options), info)

    def exact_pairs(self, kind: str) -> np.ndarray:
        self._ready()
        self._verify()
        return grouped_tree_pairs(self.prep, self.Xt, kind, self.mode, self.Zt)

    def info(self) -> dict:
        self._ready()
        if self.tree or self.unread is None:
            out = super().info()
        else:
            scale = {"probability": "probability (the pipeline's predict_proba)", "log_loss": "log_loss (of the "
                     "labels y)"}.get(self.model_output, "raw (the final step's margin, through the pipeline)")
            out = {"model_output": scale, "imputation": imputation_key(self.imputation)}
        return {**out, "pipeline": dict(self.pipeline_info)}


def _final_rows(rows: Any, ens: Any, name: str, sources: list[str]) -> np.ndarray:
    """Transformed ``rows`` as the final step's trees read them; a cell they refuse (infinite, or NaN for a model
    that takes none) is named by the raw column it comes from (``sources[k]``: transformed column ``k``'s)."""
    try:
        return tree_rows(rows, ens, name)
    except ValueError as exc:
        try:
            A = np.asarray(rows.toarray() if hasattr(rows, "toarray") else rows, dtype=float)
        except (TypeError, ValueError):
            raise exc from None
        bad = np.argwhere(np.isinf(A)) if np.isinf(A).any() else np.argwhere(np.isnan(A))
        if A.ndim != 2 or not bad.size:
            raise
        raise ValueError(f"{exc} (column {bad[0][1]} as the pipeline's final step receives it comes from the raw "
                         f"column {sources[bad[0][1]]!r})") from None


def _stack(first: Any, second: Any) -> Any:
    """Rows of both (frames or arrays): a few of each for the tracing."""
    if hasattr(first, "iloc") and hasattr(second, "iloc"):
        import pandas as pd

        return pd.concat([first.iloc[:12], second.iloc[:4]], ignore_index=True)
    return np.concatenate([np.asarray(first)[:12], np.asarray(second)[:4]], axis=0)
