"""``fairshare.doors.explain``: attributions for many rows of a model, locally, in threads or on a Dask cluster, resumable.

One door for every model: its arguments are checked against one table before anything runs; the rows
are aligned by name to the model's features and checked for infinite values; one game is built per row
(a :class:`~fairshare.games.TreeGame` for tree models, a :class:`~fairshare.games.ModelGame` for any other
model or function, a :class:`~fairshare.games.TorchGame` for a torch module on tensors of any shape); the
method is chosen once, for every row, by :func:`fairshare.engine.choice.choose` from the first row's
game (the facts it uses are the same for every row); and each row runs through the one engine. Exact tree
values for many rows run in one batched walk.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option, SeedLike, check_client, check_progress
from .._core.compiled import call_with, thread_settings
from ..games.cached import CachedGame
from ..store.cache import RunCache, cache_folder, fingerprint, model_key
from .estimate import common_arguments
from ..engine.choice import Choice, choose
from ..engine.engine import run
from ..engine.registry import get_method
from ..engine.stopping import StoppingRule, as_rule
from ..results.explanation import Explanation
from ..indices.interactions import MATRIX_BASES, InteractionIndex
from .interaction_rows import how_pairs_are_computed, pair_rows
from ..games.base import Game
from ..games.distributed import DistributedGame
from ..games.imputers import Imputer, make_imputer
from ..games.model import IMPUTATIONS, LINKS, ModelError, ModelGame, as_predict
from ..trees.links import MODEL_OUTPUTS, log_loss
from ..games.torch_game import TorchGame
from ..games.tree import TreeGame, tree_explanation, tree_interactions
from ..indices.hierarchy import Hierarchy, OwenIndex, check_partition, resolve_value_index
from .._core.progress import reporter
from ..indices.semivalues import Semivalue
from ..inputs.sequence import (cell_names, check_finite_inputs, flat_predict, flat_rows, input_groups, is_shaped_input,
                               is_structured)
from ..inputs.text import check_mask_token, check_tokenizer, explain_texts, is_texts
from .._core.tables import (is_sparse, accepts_missing, aligned, as_rows, check_finite, frame_info, model_columns,
                            target_of)
from ..trees.prepared import unreadable
from ..trees.readers import is_tree_model

__all__ = ["explain", "default_budget", "EXPLAIN"]


def default_budget(n_players: int) -> int:
    """``2n + 2048`` evaluations (shap.KernelExplainer's default), never more than ``2^n``.

    Examples
    --------
    >>> default_budget(8), default_budget(30)
    (256, 2108)
    """
    return int(min(2 ** min(n_players, 62), 2 * n_players + 2048))


def _names(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise TypeError(f"feature_names must be a list of names, got {type(value).__name__}")
    return [str(v) for v in value]


def _partition_arg(value: Any) -> Any:
    return value if isinstance(value, str) and value in ("correlation", "sentences") else check_partition(value)


def _players_partition(partition: Any, names: list[str], rows: Any) -> Any:
    """The partition of ``explain`` over player positions: names replaced by positions, ``"correlation"``
    clustered from the background (features, not groups)."""
    if partition is None or isinstance(partition, Hierarchy):
        return partition
    if isinstance(partition, str):
        background = getattr(rows, "bg_rows", None)
        if getattr(rows, "groups", None) is not None:
            raise ValueError("partition='correlation' clusters features; with groups= give the partition of the "
                             "groups (their positions) instead")
        if background is None:
            raise ValueError("partition='correlation' clusters the background's features: pass background rows")
        dense = background.toarray() if is_sparse(background) else np.asarray(background, dtype=float)
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


#: fs.explain's arguments (besides the model, the rows, the background and the method's own options)
def _imputation_key(imputation: Any) -> Any:
    return imputation.describe() if isinstance(imputation, Imputer) else imputation


def check_imputation(value: Any) -> Any:
    """``imputation``: None, a name of :data:`~fairshare.games.model.IMPUTATIONS` or an Imputer."""
    if value is None or isinstance(value, Imputer) or isinstance(value, str) and value in IMPUTATIONS:
        return value
    raise ValueError(f"imputation must be one of {list(IMPUTATIONS)} or a fairshare.games.imputers.Imputer, "
                     f"got {value!r}")


EXPLAIN = Arguments("explain", common_arguments() + (
    Option("n_jobs", None, "rows explained in parallel threads", kind="int", minimum=1, none_ok=True),
    Option("client", None, "a dask.distributed.Client: one task per row", check=check_client),
    Option("cache", None, "a folder keeping finished rows and evaluated coalitions (an interrupted run resumes)",
           check=cache_folder),
    Option("progress", True, "True for a bar over rows, or progress(rows done, rows, None)", check=check_progress),
    Option("model_output", None, "what is explained: None (tree models: their raw output; other classifiers: "
           "predict_proba), raw, probability (the model's predict_proba; tree models: exactly, with a background) or "
           "log_loss (of the labels y)", allowed=(None,) + MODEL_OUTPUTS),
    Option("y", None, "the labels of the rows of X, for model_output='log_loss'"),
    Option("link", "identity", "identity, or logit: a black box's averaged probabilities explained on the log-odds "
           "scale", allowed=tuple(LINKS)),
    Option("imputation", None, "baseline (one background row), marginal (the average over the background) or "
           "conditional on the known features: conditional (= gaussian), gaussian, copula, empirical, or an Imputer",
           check=check_imputation),
    Option("groups", None, "lists of features (positions or names), each one player"),
    Option("partition", None, "index='owen': blocks of players (positions or names; nested lists: a hierarchy), or "
           "'correlation' (a hierarchy clustered from the background's feature correlations); texts: 'sentences'",
           check=_partition_arg),
    Option("tokenizer", None, "texts: None (words and punctuation), a regular expression or a callable text -> "
           "tokens", check=check_tokenizer),
    Option("mask_token", None, "texts: None deletes a removed token, a string replaces it", check=check_mask_token),
    Option("batch_size", None, "most model rows per call", kind="int", minimum=1, none_ok=True),
    Option("feature_names", None, "one name per feature (default: the columns of X)", check=_names),
    Option("interactions", None, "2 adds shap's pairwise interaction matrices per row (e.interactions, (rows, n, n"
           "[, k]): half of each pair's SII (Banzhaf values: BII) off the diagonal, the rest of each value on it, "
           "rows summing to the values), from the values' own run: both within the budget (default: 2n + 2048, or "
           "twice the pairs' minimum when more); exact for trees", kind="int", minimum=2, maximum=2, none_ok=True),
))


# ------------------------------------------------------------------------------------------------- rows
class TableRows:
    """Rows of a table for any model: aligned by name to the model's features, checked, one game per row.

    Players are the model's features in the model's order (or X's, when the model names none): a frame whose
    columns come in another order gets the same values per feature name.
    """

    def __init__(self, model: Any, X: Any, background: Any, imputation: str | None, groups: Any,
                 batch_size: int | None, feature_names: list[str] | None, model_output: str | None = None,
                 y: Any = None, link: str = "identity") -> None:
        X = _one_row(X)
        background = None if background is None else _one_row(background)
        if (X.shape[0] if hasattr(X, "shape") else len(X)) == 0:
            raise ValueError("X holds no rows to explain")
        conditional = imputation not in (None, "baseline", "marginal")
        self.model, self.tree = model, is_tree_model(model) and groups is None and not conditional
        # trees whose splits read several features at once (catboost's CTRs of combinations): with a background,
        # the same interventional game through the model's own predictions (its raw output, as the trees give it)
        self.unread = unreadable(model) if self.tree and background is not None else None
        self.tree = self.tree and self.unread is None
        self.model_output, self.link = model_output, link
        if link != "identity" and (self.tree or model_output == "log_loss"):
            raise ValueError(f"link={link!r} applies to a black box's averaged probabilities; "
                             + ("a tree model's scale is model_output ('raw': its margin)" if self.tree else
                                "the log loss is no probability"))
        if model_output == "raw" and not self.tree and self.unread is None:
            raise ValueError("model_output='raw' is the raw output of a tree model's trees; this model is explained "
                             "as a black box (its predict_proba or predict): leave model_output=None")
        if model_output in ("probability", "log_loss") and not callable(getattr(model, "predict_proba", None)):
            raise ValueError(f"model_output={model_output!r} needs a classifier with predict_proba; "
                             f"{type(model).__name__} has none")
        if (model_output == "log_loss") != (y is not None):
            raise ValueError("y (one label per row of X) is required for model_output='log_loss' and only used there")
        if self.tree and model_output in ("probability", "log_loss") and background is None:
            raise ValueError(f"model_output={model_output!r} of a tree model is defined with a background "
                             "(interventional); pass background rows")
        reference, source = model_columns(model)
        if reference is None and hasattr(X, "columns"):
            reference, source = [str(c) for c in X.columns], "the columns of X"
        if hasattr(X, "columns"):
            X = aligned(X, reference, "X", source)
        elif reference is not None and np.ndim(X) == 2 and np.shape(X)[1] == len(reference) and \
                source.startswith("the model"):
            import pandas as pd                 # numpy rows for a model fitted on a DataFrame: its names, by position

            X = pd.DataFrame(np.asarray(X), columns=reference)
        if background is not None:
            if hasattr(background, "columns"):
                background = aligned(background, reference if reference is not None else
                                     [str(c) for c in background.columns], "background", source or "X")
            elif hasattr(X, "columns") and np.ndim(background) == 2 and np.shape(background)[1] == X.shape[1]:
                import pandas as pd

                background = pd.DataFrame(np.asarray(background), columns=list(X.columns)).astype(X.dtypes.to_dict())
        self.X, self.background = X, background
        self.rows = as_rows(X, "X")
        n_features = self.rows.shape[1]
        columns, _ = frame_info(X)
        self.feature_names = feature_names if feature_names is not None else (
            columns or [f"x{i}" for i in range(n_features)])
        if len(self.feature_names) != n_features:
            raise ValueError(f"feature_names must have {n_features} names, got {len(self.feature_names)}")
        allow_nan = accepts_missing(model)
        check_finite(self.rows, "X", columns, allow_nan=allow_nan is not False)
        if background is None:
            if not self.tree:
                raise ValueError("background (a baseline row or rows) is required to explain a non-tree model")
            if imputation == "baseline":
                raise ValueError("imputation='baseline' takes one background row; none was given")
            self.bg_rows = None
        else:
            self.bg_rows = as_rows(background, "background")
            if self.bg_rows.shape[0] == 0:
                raise ValueError("background must hold at least one row")
            if self.bg_rows.shape[1] != n_features:
                raise ValueError(f"background has {self.bg_rows.shape[1]} columns but X has {n_features}")
            check_finite(self.bg_rows, "background", columns, allow_nan=allow_nan is not False)
            if imputation == "baseline" and self.bg_rows.shape[0] != 1:
                raise ValueError(f"imputation='baseline' takes one background row, got {self.bg_rows.shape[0]}; "
                                 "use imputation='marginal' to average over rows")
        self.imputation = imputation or ("baseline" if self.bg_rows is not None and self.bg_rows.shape[0] == 1
                                         else "marginal")
        if conditional:                                    # fitted once on the background, shared by every row
            if is_sparse(self.rows) or is_sparse(self.bg_rows):
                raise ValueError(f"imputation={_imputation_key(imputation)!r} models dense numeric features; sparse "
                                 "rows are imputed from the background rows (imputation='marginal' or 'baseline')")
            self.imputation = make_imputer(imputation, self.bg_rows)
        self.groups, self.batch_size = groups, batch_size
        self.predict = None if self.tree else as_predict(model)
        if self.unread is not None and model_output in (None, "raw"):

            def raw_formula_value(rows: Any) -> np.ndarray:       # catboost's margin, what its trees would give
                return np.asarray(model.predict(rows, prediction_type="RawFormulaVal"), dtype=float)

            self.predict = raw_formula_value
        self.n_rows = self.rows.shape[0]
        self.labels = None
        if y is not None:
            self.labels = list(np.asarray(y).ravel()) if np.ndim(y) else [y]
            if len(self.labels) != self.n_rows:
                raise ValueError(f"y must hold one label per row of X ({self.n_rows}), got {len(self.labels)}")
            classes = [c.item() if hasattr(c, "item") else c for c in getattr(model, "classes_", [])]
            self.labels = [v.item() if hasattr(v, "item") else v for v in self.labels]
            bad = [v for v in self.labels if classes and v not in classes]
            if bad:
                raise ValueError(f"y must hold classes of the model {classes}, got {bad[0]!r}")
        index = getattr(X, "index", None)
        self.row_names = [str(i) for i in index] if index is not None else [str(i) for i in range(self.n_rows)]

    def row(self, i: int) -> Any:
        return self.X.iloc[[i]] if hasattr(self.X, "iloc") else self.rows[i]

    def game(self, i: int) -> Game:
        """The game of row ``i``."""
        label = None if self.labels is None else self.labels[i]
        if self.tree:
            mode = "path-dependent" if self.background is None else "interventional"
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

    def exact_all(self, sv: Semivalue) -> dict | None:
        """Exact values of every row at once (tree models, raw output), or None where rows run one by one."""
        if not self.tree or self.model_output not in (None, "raw") or not isinstance(sv, Semivalue):
            return None
        mode = "path-dependent" if self.background is None else "interventional"
        return tree_explanation(self.model, self.X, sv, mode, self.background)

    def data(self) -> np.ndarray | None:
        """The explained rows' feature values for plots (sparse rows: densified up to 10 million cells)."""
        if self.groups is not None:
            return None
        if is_sparse(self.rows):
            return self.rows.toarray() if self.rows.shape[0] * self.rows.shape[1] <= 10_000_000 else None
        return self.rows

    def info(self) -> dict:
        if self.tree:
            out = {"probability": "probability (the model's predict_proba, from its trees)",
                   "log_loss": "log_loss (of the labels y)"}.get(self.model_output, "raw (the trees' margin or prediction)")
            return {"model_output": out, "tree_mode": "path-dependent" if self.background is None else "interventional"}
        if self.unread is not None:
            out = {"probability": "probability (the model's predict_proba)", "log_loss": "log_loss (of the labels y)"}
            return {"model_output": out.get(self.model_output, "raw (the model's RawFormulaVal)") +
                    ", through the model's own predictions: " + self.unread, "tree_mode": "interventional",
                    "imputation": _imputation_key(self.imputation)}
        target = target_of(self.model)
        output = getattr(self.predict, "__name__", "the function")
        described = f"{type(target).__name__}.{output}" if target is not self.model or hasattr(self.model, "predict") \
            else output
        if self.labels is not None:
            described = f"log_loss of {described}"
        elif self.link != "identity":
            described = f"{self.link} of the mean of {described}"
        return {"model_output": described, "imputation": _imputation_key(self.imputation)}


class TorchRows:
    """Inputs of any shape for a torch module: one :class:`~fairshare.games.TorchGame` per input, on the model's
    device (tensors end to end on a GPU)."""

    def __init__(self, module: Any, X: Any, background: Any, groups: Any, batch_size: int | None,
                 player_names: list[str] | None = None) -> None:
        self.module, self.X, self.groups, self.batch_size = module, X, groups, batch_size
        self.player_names = player_names
        self.n_rows = int(X.shape[0])
        if self.n_rows == 0:
            raise ValueError("X holds no inputs to explain")
        baseline = 0.0 if background is None else background
        shape, given = tuple(X.shape[1:]), tuple(getattr(baseline, "shape", np.shape(baseline)))
        if given and given != shape and not (len(given) == len(shape) + 1 and given[1:] == shape and given[0] > 0):
            raise ValueError(f"background must be a number, one input shaped {shape} or a batch of inputs "
                             f"(B, {', '.join(map(str, shape))}), got an array of shape {given}")
        if hasattr(baseline, "shape") and len(baseline.shape) == len(X.shape) and baseline.shape[0] == 1:
            baseline = baseline[0]
        self.baseline = baseline
        self.row_names = [str(i) for i in range(self.n_rows)]
        self.tree = False

    def game(self, i: int) -> Game:
        return TorchGame(self.module, self.X[i], baseline=self.baseline, groups=self.groups,
                         batch_size=self.batch_size, player_names=self.player_names)

    def exact_all(self, sv: Semivalue) -> None:
        return None

    def data(self) -> None:
        return None

    def info(self) -> dict:
        shape = tuple(getattr(self.baseline, "shape", ()))
        batch = len(shape) == len(self.X.shape)
        return {"model_output": "torch module outputs", "input_shape": list(self.X.shape[1:]),
                "imputation": f"marginal (the mean over {shape[0]} background inputs)" if batch else "baseline"}


def _one_row(obj: Any) -> Any:
    """A pandas Series or a 1-D array is one row: a one-row DataFrame or a (1, n) array."""
    if hasattr(obj, "to_frame") and hasattr(obj, "index") and not hasattr(obj, "columns"):
        import pandas as pd

        return pd.DataFrame([obj.to_numpy()], columns=list(obj.index), index=[obj.name]).infer_objects()
    if isinstance(obj, (list, tuple)) or (hasattr(obj, "shape") and len(getattr(obj, "shape")) == 1):
        arr = np.asarray(obj)
        return arr[None, :] if arr.ndim == 1 else arr
    return obj


def _is_torch_module(model: Any) -> bool:
    return hasattr(model, "forward") and hasattr(model, "parameters") and type(model).__module__.startswith("torch") \
        or any(c.__module__.startswith("torch.nn") for c in type(model).__mro__)


def _is_images(X: Any, background: Any) -> bool:
    """Inputs a TorchGame explains: a tensor (or array) with more than two dimensions, or a tensor of rows with
    at most one baseline (a number, a single input, or nothing)."""
    ndim = len(getattr(X, "shape", ()))
    if ndim > 2:
        return True
    single = background is None or np.ndim(background) == 0 or (hasattr(background, "shape") and len(background.shape) == 1)
    return ndim == 2 and type(X).__module__.startswith("torch") and single


# ---------------------------------------------------------------------------------------------- one row
def _explain_row(rows: Any, i: int, sv: Semivalue, choice: Choice, rule: Any, seed: Any, folder: Any,
                 client: Any = None) -> dict:
    """Explain row ``i`` (a top-level function so Dask can ship it to workers); a model that fails is reported
    with the row and the coalition."""
    try:
        game = rows.game(i)
        if folder is not None:
            game = CachedGame(game, folder)
        if client is not None:
            game = DistributedGame(game, client)
        phi = run(game, sv, choice, seed, rule)
    except ModelError as exc:
        raise ModelError(f"row {rows.row_names[i]}: {exc}") from exc.__cause__
    except ValueError as exc:
        if str(exc).startswith(("the game returned NaN", "predict returned")):
            raise ValueError(f"row {rows.row_names[i]}: {str(exc).replace('the game returned', 'the model returned')}"
                             ) from exc
        raise
    info = {k: v for k, v in phi.info.items() if k != "choice"}
    return dict(values=np.asarray(phi.values, dtype=float),
                stderr=None if phi.stderr is None else np.asarray(phi.stderr, dtype=float),
                empty=np.asarray(phi.empty_value, dtype=float), grand=np.asarray(phi.grand_value, dtype=float),
                n_evaluations=np.asarray(phi.n_evaluations), names=list(game.player_names), info=info)


# ------------------------------------------------------------------------------------------------- door
def explain(model: Any, X: Any, background: Any = None, *, index: str | Semivalue = "shapley", method: str = "auto",
            budget: int | None = None, seed: SeedLike = None, tol: float | None = None,
            stop: StoppingRule | None = None, n_jobs: int | None = None, client: Any = None, cache: Any = None,
            progress: Any = True, imputation: str | None = None, groups: Any = None, batch_size: int | None = None,
            feature_names: Any = None, interactions: int | None = None, model_output: str | None = None,
            y: Any = None, link: str = "identity", partition: Any = None, tokenizer: Any = None,
            mask_token: str | None = None, **options: Any) -> Explanation | list[Explanation]:
    """Explain the predictions of ``model`` on every row of ``X``.

    Parameters
    ----------
    model : a fitted model (scikit-learn, xgboost, lightgbm, catboost; classifiers are explained through their
        class probabilities, all classes at once, except tree models: their raw output, as shap.TreeExplainer),
        a bound method (``model.predict_proba``), a torch module, or a prediction function
    X : rows to explain (numpy array or pandas DataFrame; a Series or a 1-D array is one row); columns are
        aligned by name to the model's features. Or texts: a string or a list of strings, for a model that takes a
        list of strings (a scikit-learn text pipeline, any function); the players are each text's tokens and the
        result is one Explanation per text (a list, for a list), whose values add up to f(text) - f(every token
        removed)
    background : baseline row(s) for the absent features; required unless ``model`` is a tree model
        (then ``None`` means path-dependent tree values)
    index : "shapley", "banzhaf", "beta-shapley", "beta-shapley(a,b)", "weighted-banzhaf(w)", a Semivalue, or
        "owen" with ``partition``
    method : a registry method or "auto": exact tree values for tree models, enumeration when ``2^n`` fits the
        budget, else the most accurate estimator the budget affords (one choice for every row; the result's
        ``info["choice"]`` says which and why)
    budget : evaluations per row (default ``2n + 2048``)
    seed : same seed, same values, whatever ``n_jobs``, ``client`` or ``cache``
    tol, stop : a relative-error target or a :mod:`fairshare.stopping` rule, per row
    n_jobs : rows explained in parallel threads
    client : a ``dask.distributed.Client``: rows are explained on the cluster (one row: its batches of
        coalitions are; texts: one task per text)
    cache : a folder; finished rows and evaluated coalitions are kept there and an interrupted call
        with the same arguments resumes without evaluating the model again
    progress : True for a bar over rows, False, or a callable ``progress(rows done, rows, None)``
    imputation, groups, batch_size, feature_names : see :class:`fairshare.games.ModelGame`
    model_output : None (tree models: raw output, as shap.TreeExplainer; other classifiers: predict_proba),
        ``"raw"`` (tree models only), ``"probability"`` (the model's predict_proba; for a tree model computed from
        its trees with a background, exactly by enumeration when the budget covers 2^n, else estimated with
        standard errors) or ``"log_loss"`` (of the labels ``y``, one per row of X)
    y : labels of the rows of ``X`` for ``model_output="log_loss"``
    link : ``"identity"`` or ``"logit"`` (a black box's averaged probabilities on the log-odds scale, as shap's
        KernelExplainer; for tree models use ``model_output``)
    partition : for ``index="owen"``: blocks of players (feature positions or names, group positions with
        ``groups``; nested lists for hierarchical Owen values), or ``"correlation"``: a binary hierarchy clustered
        from the background's feature correlations (as shap's Partition explainer), so correlated features share
        credit inside their block before blocks compete
    tokenizer : texts: None (words and punctuation), a regular expression whose matches are the tokens, or a
        callable ``text -> tokens``; the whitespace after a token goes with it, so texts rebuild exactly
    mask_token : texts: None deletes removed tokens, a string (``"[MASK]"``, ``"..."``) replaces each
    interactions : 2 adds ``e.interactions``, ``(rows, n, n[, k])``: shap's ``shap_interaction_values``
        convention, the same matrices as :func:`fairshare.games.tree_interactions` (index ``"sii-matrix"`` of
        :func:`fairshare.doors.interactions`): each off-diagonal cell holds half the pair's Shapley interaction index
        (SII), the diagonal the rest of each Shapley value, so each row sums to the row's values. With
        ``index="banzhaf"`` the Banzhaf analogue (``"bii-matrix"``): half the pair's Banzhaf interaction index off
        the diagonal, rows summing to the Banzhaf values. Values and matrices come from one run per row of the pair
        index (SII or BII of order 2, whose singletons are the values; ``method`` is that run's: ``"auto"``,
        ``"exact"`` or an interaction method), so together they spend at most ``budget`` model evaluations per row
        (default ``2n + 2048``, or twice the pairs' minimum ``2 + n + C(n, 2)`` when that is more);
        ``e.interactions_stderr`` holds their standard errors and ``e.info["interactions"]`` how they were
        computed. Tree models: exact, from the trees. Other indices: ``fs.interactions(game, index=...)``
    **options : method options (``fairshare methods``)

    Returns
    -------
    Explanation (a list of them for a list of texts)

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.random.default_rng(0).random((50, 4)); y = X @ [1.0, 2.0, 0.0, -1.0]
    >>> model = LinearRegression().fit(X, y)
    >>> e = fs.explain(model, X[:3], background=X[:1], progress=False, seed=0)
    >>> e.values.shape, e.method
    ((3, 4), 'exact')
    """
    args = EXPLAIN.check(dict(index=index, method=method, budget=budget, seed=seed, tol=tol, stop=stop,
                              n_jobs=n_jobs, client=client, cache=cache, progress=progress, imputation=imputation,
                              groups=groups, batch_size=batch_size, feature_names=feature_names,
                              interactions=interactions, model_output=model_output, y=y, link=link,
                              partition=partition, tokenizer=tokenizer, mask_token=mask_token))
    rule = as_rule(args["stop"], args["tol"])
    if is_texts(X):
        return explain_texts(model, X, {**args, "background": background, "rule": rule}, options, seed)
    if tokenizer is not None or mask_token is not None:
        raise ValueError("tokenizer and mask_token are for texts; X holds no texts")
    shape = tuple(int(d) for d in X.shape[1:]) if is_shaped_input(X) else None
    structured = shape is not None and is_structured(groups, shape)
    grouped = input_groups(groups, shape, args["feature_names"]) if structured else None
    names = grouped[1] if grouped else cell_names(shape, args["feature_names"]) if structured else None
    torch_inputs = _is_torch_module(model) and _is_images(X, background)
    if shape is not None or torch_inputs:                  # shaped inputs: no NaN or inf reaches the model
        allow_nan = accepts_missing(model) is True
        check_finite_inputs(X, "X", allow_nan)
        if background is not None and np.ndim(background) > 0:
            single = len(getattr(background, "shape", np.shape(background))) == len(X.shape) - 1
            check_finite_inputs(background[None] if single and hasattr(background, "detach") else
                                np.asarray(background)[None] if single else background, "background", allow_nan)
    if torch_inputs:
        rows: Any = TorchRows(model, X, background, groups if grouped is None else grouped[0], args["batch_size"],
                              names)
    elif shape is not None:
        cells = groups if not structured else None if grouped is None else {
            name: np.flatnonzero(grouped[0].ravel() == g).tolist() for g, name in enumerate(grouped[1])}
        rows = TableRows(flat_predict(as_predict(model), shape), flat_rows(X, shape, "X"),
                         None if background is None else flat_rows(background, shape, "background"),
                         args["imputation"], cells, args["batch_size"],
                         cell_names(shape, args["feature_names"]), args["model_output"], args["y"], args["link"])
    else:
        rows = TableRows(model, X, background, args["imputation"], groups, args["batch_size"], args["feature_names"],
                         args["model_output"], args["y"], args["link"])
    if getattr(rows, "tree", False) and rows.background is None and unreadable(model) is not None:
        return _combination_classes(rows, model, args, seed)
    first = rows.game(0)
    sv = resolve_value_index(args["index"], first.n_players,
                             _players_partition(args["partition"], list(first.player_names), rows))
    pair_index = _pair_index(sv, args["interactions"])
    if pair_index is not None:
        return _with_interactions(rows, model, first, sv, pair_index, args, rule, seed, options, {} if shape is None
                                  else {"input_shape": list(shape),
                                        "input_groups": None if grouped is None else grouped[0].tolist()})
    row_budget = args["budget"] if args["budget"] is not None else default_budget(first.n_players)
    try:
        choice = choose(first, sv, args["method"], row_budget, rule, options)
    except ValueError as exc:
        if str(exc).startswith("unknown option"):
            raise ValueError(f"{exc} (explain's own arguments: {EXPLAIN.names()})") from None
        raise
    info = {"choice": choice.as_info(), **rows.info(), "budget": row_budget, "seed": str(seed)}
    if shape is not None:
        info["input_shape"] = list(shape)
        info["input_groups"] = None if grouped is None else grouped[0].tolist()
    batched = rows.exact_all(sv) if choice.method == "exact" and not options else None
    if batched is not None:
        return _all_rows(batched, rows, model, sv, list(first.player_names), dict(choice.options),
                         {**info, "via": "closed-form (tree walks, all rows)"})
    results, _ = _run_rows(rows, model, sv, choice, rule, seed, args)
    return _explanation(results, rows, model, sv, choice, info)


def _combination_classes(rows: TableRows, model: Any, args: dict, seed: Any) -> Explanation:
    """Path-dependent values of a catboost model whose CTRs combine features, as catboost's ShapValues define them
    (:mod:`fairshare.trees.catboost_classes`): exact, from the trees, for every row at once."""
    asked = {"method": args["method"] not in ("auto", "exact"), "interactions": args["interactions"] is not None,
             "partition": args["partition"] is not None}
    if any(asked.values()):
        wrong = [k for k, v in asked.items() if v][0]
        raise ValueError(f"{wrong}: this catboost model's CTRs combine features, so its path-dependent values are "
                         "catboost's combination-class values, exact from the trees; pass a background for the "
                         "interventional game, where every method runs")
    sv = resolve_value_index(args["index"], len(rows.feature_names), None)
    why = ("this catboost model's CTRs combine features: catboost's path-dependent values, each combination class's "
           "value shared equally among its features")
    return _all_rows(tree_explanation(model, rows.X, sv, "path-dependent"), rows, model, sv, list(rows.feature_names),
                     {}, {"choice": {"method": "exact", "why": why}, **rows.info(), "seed": str(seed),
                          "via": "closed-form (tree walks over catboost's combination classes)"})


def _all_rows(batched: dict, rows: Any, model: Any, sv: Any, names: list[str], options: dict,
              info: dict) -> Explanation:
    """One Explanation from exact values computed for every row at once (``tree_explanation``'s dict)."""
    values, n = batched["values"], rows.n_rows
    empty = np.broadcast_to(np.asarray(batched["empty_value"], dtype=float),
                            (n,) + np.shape(batched["empty_value"])).copy()
    return Explanation(values=values, stderr=np.zeros_like(values), empty_value=empty,
                       grand_value=batched["grand_value"], data=rows.data(), player_names=names, index=sv.name,
                       method="exact", output_names=_output_names(model, values), row_names=rows.row_names,
                       n_evaluations=np.zeros(n, dtype=np.int64), options=options, info=info)


def _explanation(results: list[dict], rows: Any, model: Any, sv: Semivalue, choice: Choice, info: dict) -> Explanation:
    """The rows' results as one Explanation."""
    values = np.stack([r["values"] for r in results])
    stderr = None if any(r["stderr"] is None for r in results) else np.stack([r["stderr"] for r in results])
    return Explanation(values=values, stderr=stderr, empty_value=np.stack([r["empty"] for r in results]),
                       grand_value=np.stack([r["grand"] for r in results]), data=rows.data(),
                       player_names=list(results[0]["names"]), index=sv.name, method=choice.method,
                       output_names=_output_names(model, values), row_names=rows.row_names,
                       n_evaluations=np.array([int(r["n_evaluations"]) for r in results]),
                       options=dict(choice.options), info={**info, "rows": [r["info"] for r in results]})


def _pair_index(sv: Semivalue, order: int | None) -> str | None:
    """The interaction matrix that extends ``sv`` (checked before any model call): shap's layout of SII for Shapley
    values (``"sii-matrix"``), of BII for Banzhaf values (``"bii-matrix"``); None without interactions."""
    if order is None:
        return None
    if isinstance(sv, OwenIndex):
        raise ValueError("interactions=2 extends Shapley (SII) or Banzhaf (BII) values, not Owen values")
    if sv.is_shapley:
        return "sii-matrix"
    if sv.is_banzhaf:
        return "bii-matrix"
    raise ValueError(f"interactions=2 extends Shapley (SII) or Banzhaf (BII) values, not index {sv.name!r}")


def _with_interactions(rows: Any, model: Any, first: Game, sv: Semivalue, kind: str, args: dict, rule: Any,
                       seed: Any, options: dict, shape_info: dict) -> Explanation:
    """Values and shap's interaction matrices of every row, both from one run per row of the pair index (SII or
    BII of order 2: its singletons are the values), so together they spend at most the budget per row
    (:mod:`fairshare.doors.interaction_rows`); exact from the trees for tree models."""
    base = InteractionIndex(MATRIX_BASES[kind], 2)
    budget = args["budget"]
    if budget is None:                              # enough for the pairs: twice their minimum when more
        need = get_method("iq-regression").budget_needed(first, base)
        budget = max(default_budget(first.n_players), min(2 * need, 1 << min(first.n_players, 62)))
    try:
        choice = choose(first, base, args["method"], budget, rule, options)
    except ValueError as exc:
        if str(exc).startswith("unknown option"):
            raise ValueError(f"{exc} (explain's own arguments: {EXPLAIN.names()})") from None
        if str(exc).startswith("method "):
            raise ValueError(f"{exc} (interactions=2: the values and the interactions come from one run of an "
                             "interaction method)") from None
        raise
    info = {"choice": choice.as_info(), **rows.info(), "budget": budget, "seed": str(seed), **shape_info,
            "interactions": how_pairs_are_computed(kind, choice)}
    names = list(first.player_names)
    batched = rows.exact_all(sv) if choice.method == "exact" and not options else None
    if batched is not None:                         # tree models: exact, every row at once, no model call
        expl = _all_rows(batched, rows, model, sv, names, dict(choice.options),
                         {**info, "via": "closed-form (tree walks, all rows)"})
        laid = tree_interactions(model, rows.X, order=2, index=kind, background=rows.background,
                                 mode="path-dependent" if rows.background is None else "interventional")
        matrices = np.stack([m.matrix() for m in laid])
        diagonal = np.arange(len(names))
        matrices[:, diagonal, diagonal] = 0.0
        matrices[:, diagonal, diagonal] = expl.values - matrices.sum(axis=2)
        expl.interactions, expl.interactions_stderr = matrices, np.zeros_like(matrices)
        return expl
    results = pair_rows(rows, model, kind, choice, rule, seed, args)
    expl = _explanation(results, rows, model, sv, choice, info)
    expl.interactions = np.stack([r["matrix"] for r in results])
    expl.interactions_stderr = np.stack([r["matrix_stderr"] for r in results])
    return expl


def _run_rows(rows: Any, model: Any, sv: Semivalue, choice: Choice, rule: Any, seed: Any, args: dict,
              scratch: str | None = None) -> tuple[list[dict], Any]:
    """Every row through the engine: from the cache, on Dask, in threads or in turn; saved as they finish."""
    n_rows = rows.n_rows
    seeds = np.random.SeedSequence(seed if not isinstance(seed, np.random.Generator)
                                   else seed.integers(2**63)).spawn(n_rows)
    run_cache = None
    if args["cache"] is not None:
        bg = getattr(rows, "bg_rows", None)
        data = rows.rows if hasattr(rows, "rows") else rows.X          # torch inputs: the tensor and its baseline
        key = fingerprint(data, bg, getattr(rows, "baseline", None), index=sv.name,
                          weights=list(np.round(sv.log_weights(rows.rows.shape[1] if hasattr(rows, "rows") else 1),
                                                12)) if sv.n_players is None else None,
                          method=choice.method, options=repr(sorted(choice.options.items())), budget=choice.budget,
                          stop=repr(rule), seed=str(seed), imputation=_imputation_key(getattr(rows, "imputation", None)),
                          groups=args["groups"], names=getattr(rows, "feature_names", None), model=model_key(model),
                          model_output=str(args["model_output"]), labels=repr(getattr(rows, "labels", None)),
                          link=args["link"], partition=repr(sv.hierarchy.nested()) if isinstance(sv, OwenIndex) else None)
        run_cache = RunCache(args["cache"], key, item=lambda i: data[i])
    results: list[dict | None] = [run_cache.row(i) if run_cache is not None else None for i in range(n_rows)]
    todo = [i for i in range(n_rows) if results[i] is None]
    report = reporter(args["progress"] if n_rows > 1 else False, "explaining rows", "row")
    done = [n_rows - len(todo)]

    def folder(i: int) -> Any:
        if run_cache is not None:
            return run_cache.coalition_folder(i)
        return None if scratch is None else Path(scratch) / f"row-{i}"

    def finish(i: int, result: dict) -> None:
        results[i] = result
        if run_cache is not None:
            run_cache.save_row(i, result)
        done[0] += 1
        if report is not None:
            report(done[0], n_rows, None)

    client, n_jobs = args["client"], args["n_jobs"]
    try:
        if client is not None and len(todo) > 1:
            _on_dask(client, rows, sv, choice, rule, seeds, todo, finish)
        elif client is not None and todo:
            finish(todo[0], _explain_row(rows, todo[0], sv, choice, rule, seeds[todo[0]], folder(todo[0]), client))
        elif n_jobs and n_jobs > 1 and len(todo) > 1:
            settings = thread_settings()                   # the workers compute as this thread would
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                futures = {i: pool.submit(call_with, settings, _explain_row, rows, i, sv, choice, rule, seeds[i],
                                          folder(i)) for i in todo}
                for i, fut in futures.items():
                    finish(i, fut.result())
        else:
            for i in todo:
                finish(i, _explain_row(rows, i, sv, choice, rule, seeds[i], folder(i)))
    finally:
        if report is not None:
            report.close()
    return results, folder  # type: ignore[return-value]


def _output_names(model: Any, values: np.ndarray) -> list[str] | None:
    if values.ndim != 3:
        return None
    k = values.shape[2]
    classes = getattr(target_of(model), "classes_", None)
    if classes is not None and len(classes) == k:
        return [str(c) for c in classes]
    return [str(j) for j in range(k)]


def _on_dask(client: Any, rows: Any, sv: Semivalue, choice: Choice, rule: Any, seeds: list, todo: list,
             finish: Any) -> None:
    """One task per row on the cluster; rows are saved as they complete. The rows live in the task graph
    (a worker that dies loses nothing) and every wait is bounded (:mod:`fairshare.backends.dask`)."""
    from ..backends.dask import Finished, hold, submit

    remote_rows = hold(client, rows)
    index_of, futures = {}, []
    for i in todo:
        fut = submit(client, _explain_row, remote_rows, i, sv, choice, rule, seeds[i], None)
        index_of[fut.key] = i
        futures.append(fut)
    for fut, result in Finished(client, futures):
        finish(index_of[fut.key], result)
