"""``fairshare.global_importance``: SAGE, the Shapley (or any semivalue) values of a model's loss reduction
(Covert, Lundberg and Lee 2020), estimated on the shared engine."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option, SeedLike, check_progress
from .._core.progress import reporting
from .._core.seeds import generator, streams
from .._core.model_rows import aligned_rows, number_columns
from .._core.tables import as_rows, check_finite, check_kinds, check_labels, frame_info, is_sparse, shared_dtypes
from ..engine.choice import Choice, choose
from ..engine.engine import run
from ..engine.row_permutations import row_permutations, row_permutations_need
from ..engine.row_regressions import row_regressions
from ..engine.solve import small_sample_factor
from ..engine.stopping import as_rule
from ..games.base import check_output_axes
from ..games.imputers import make_imputer
from ..games.loss import LOSSES, LossGame, row_losses
from ..games.model import as_predict, feature_groups
from ..indices.semivalues import resolve_index
from ..results.attribution import Attribution
from .estimate import common_arguments

__all__ = ["global_importance", "GLOBAL_IMPORTANCE"]

IMPUTATIONS = ("marginal", "conditional", "gaussian", "copula")


def _check_loss(value: Any) -> Any:
    if callable(value) or isinstance(value, str) and value in LOSSES:
        return value
    raise ValueError(f"loss must be one of {list(LOSSES)} or a callable loss(predictions, y) -> one loss per row, "
                     f"got {value!r}")


def _check_index(value: Any) -> Any:
    resolve_index(value)                      # refuses what is not a semivalue, naming index
    return value


def _check_folds(value: int) -> int:
    if value == 1:
        raise ValueError("folds must be 0 (none) or >= 2, got 1")
    return value


#: fs.global_importance's arguments (besides the model, the rows and their targets)
GLOBAL_IMPORTANCE = Arguments("global_importance", tuple(o for o in common_arguments() if o.name != "index") + (
    Option("index", "shapley", "the semivalue of the loss reduction: shapley (SAGE), banzhaf, beta-shapley(a,b), "
           "weighted-banzhaf(w), loo or a Semivalue", check=_check_index),
    Option("loss", "mse", "mse, log_loss, zero_one (on predict_proba) or loss(predictions, y) -> one loss per row",
           check=_check_loss),
    Option("background", None, "rows the features outside a coalition are imputed from (None: X, or 100 of its "
           "rows drawn with the seed)"),
    Option("imputation", "marginal", "marginal (the background's rows) or conditional (= gaussian), gaussian, copula "
           "(drawn given the known features)", allowed=IMPUTATIONS),
    Option("folds", 5, "independent folds of the rows for the data-sampling error (0: none)", kind="int", minimum=0,
           check=_check_folds),
    Option("batch_size", 1 << 16, "most model rows per model call (at least one row's imputed rows)", kind="int",
           minimum=1),
    Option("groups", None, "players that are groups of features: lists of positions or names, or a dict name -> "
           "features (every feature in one group); a coalition knows every feature of its groups"),
    Option("progress", False, "True for a bar, or progress(evaluations, cap, relative_error)", check=check_progress),
))


def _rows(value: Any, name: str) -> np.ndarray:
    """``value``'s rows as floats, or as objects where a column holds words or categories (a pipeline encodes them;
    imputed as they are, marginally); a missing or infinite value is refused by name."""
    if is_sparse(value):
        raise TypeError(f"{name}: sparse rows are not supported by global_importance (pass a dense array)")
    rows = as_rows(value, name)
    try:
        rows = np.asarray(rows, dtype=float)
    except (TypeError, ValueError):
        return _word_rows(np.asarray(rows, dtype=object), name, frame_info(value)[0])
    if not np.all(np.isfinite(rows)):
        raise ValueError(f"{name} holds {int((~np.isfinite(rows)).sum())} NaN or infinite values; impute or drop "
                         "them first")
    return rows


def _word_rows(rows: np.ndarray, name: str, columns: list[str] | None) -> np.ndarray:
    """Rows holding words (object): refused where a cell is missing, a number is not finite, or a column mixes
    numbers and words, naming the row and the column."""
    import pandas as pd

    check_finite(rows, name, columns, allow_nan=False)
    missing = np.argwhere(np.asarray(pd.isna(rows), dtype=bool))
    if missing.size:
        r, j = missing[0]
        label = repr(columns[j]) if columns is not None else str(j)
        raise ValueError(f"{name} holds a missing value at row {r}, column {label}; impute or drop it first")
    return rows


def _numbers_only(rows: np.ndarray, name: str, columns: list[str] | None, imputation: str) -> None:
    """A conditional imputer draws numbers: rows holding words are refused by name under it."""
    words = np.flatnonzero(~number_columns(rows))
    if words.size:
        j = int(words[0])
        label = repr(columns[j]) if columns is not None else str(j)
        raise ValueError(f"imputation={imputation!r} draws numbers, but {name}'s column {label} holds words "
                         f"(e.g. {rows[0, j]!r}); use imputation='marginal', or encode the column")


def _targets(model: Any, y: Any, n: int, loss: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(y as given, y as the loss reads it)``: class positions (through ``model.classes_``) for the
    classification losses."""
    raw = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if raw.ndim == 0 or raw.shape[0] != n:
        raise ValueError(f"y must hold one target per row of X ({n}), got {1 if raw.ndim == 0 else raw.shape[0]}")
    if callable(loss):
        return raw, raw
    check_labels(raw, "y")                                 # a missing label: refused by name, for every loss
    if loss == "mse":
        try:
            out = raw.astype(float)
        except (TypeError, ValueError):
            raise ValueError("y must hold numbers for loss='mse'") from None
        return raw, out
    if raw.ndim != 1:
        raise ValueError(f"y must be one label per row for loss={loss!r}, got shape {raw.shape}")
    classes = getattr(model, "classes_", None)
    if classes is not None:
        classes = np.asarray(classes)
        order = np.argsort(classes, kind="stable")           # classes_ in any order (the columns' order)
        at = np.minimum(np.searchsorted(classes[order], raw), classes.size - 1)
        if np.any(classes[order][at] != raw):
            raise ValueError(f"y holds labels the model does not know (its classes_: {classes.tolist()[:10]})")
        return raw, order[at].astype(np.int64)
    if raw.dtype.kind not in "biuf" or np.any(raw != np.round(raw)) or np.any(raw < 0):
        raise ValueError(f"y must hold class positions 0, 1, ... for loss={loss!r} (a model without classes_)")
    return raw, raw.astype(np.int64)


def _says_it_is(model: Any, kind: str) -> bool:
    """Whether ``model`` says it is a ``"regressor"`` or a ``"classifier"`` (its estimator type, or scikit-learn's
    tags for an estimator of its own), without calling it."""
    if getattr(model, "_estimator_type", None) == kind:
        return True
    if not (hasattr(model, "get_params") and hasattr(model, "fit")):
        return False
    try:
        from sklearn.base import is_classifier, is_regressor

        return bool((is_regressor if kind == "regressor" else is_classifier)(model))
    except Exception:                                         # noqa: BLE001 - not a scikit-learn estimator
        return False


def _refuse_regressor(model: Any, loss: Any) -> None:
    """A classification loss on a model that says it is a regressor: refused without calling it."""
    if loss not in ("log_loss", "zero_one") or hasattr(model, "predict_proba"):
        return
    if _says_it_is(model, "regressor"):
        raise ValueError(f"loss={loss!r} needs class probabilities, but {type(model).__name__} is a regressor "
                         "(use loss='mse' or a callable loss)")


def _proba_columns(model: Any) -> int | None:
    """How many columns the model's predictions have, read from the model without calling it: a classifier whose
    ``predict_proba`` is what it is asked (``as_predict``) gives one per class of ``classes_`` (at least 2 for a
    scikit-learn classifier not yet fitted); None where the model does not say."""
    torch = type(model).__module__.startswith("torch") or hasattr(model, "forward") and hasattr(model, "parameters")
    if torch or not callable(getattr(model, "predict_proba", None)):      # as_predict asks a torch module's forward
        return None
    classes = getattr(model, "classes_", None)
    if classes is not None and np.ndim(classes) == 1 and np.size(classes) >= 2:
        return int(np.size(classes))
    return 2 if _says_it_is(model, "classifier") else None


def _refuse_outputs(model: Any, y: np.ndarray, loss: Any) -> None:
    """``loss="mse"`` on a classifier's probabilities with targets of another width (one per row, or columns not one
    per class): refused by naming ``y`` before any model call (the probe would see it only after calling it)."""
    columns = None if loss != "mse" else _proba_columns(model)
    if columns is None:
        return
    known = getattr(model, "classes_", None)
    classes = f" (classes_: {np.asarray(known).tolist()[:10]})" if known is not None else ""
    if y.ndim == 1:
        raise ValueError(f"y holds one target per row, but loss='mse' reads {type(model).__name__}'s predict_proba: "
                         f"{'at least ' if known is None else ''}{columns} columns{classes}; pass y with one column "
                         "per class (one-hot) or use loss='log_loss' / 'zero_one' on the labels")
    if known is not None and y.ndim == 2 and y.shape[1] != columns:
        raise ValueError(f"y has {y.shape[1]} columns, but loss='mse' reads {type(model).__name__}'s predict_proba: "
                         f"{columns} columns{classes}")


def _probe(game: Any) -> np.ndarray:
    """The model's own predictions of (up to 64 of) the game's rows, checked against the loss before any coalition;
    the rows count in ``game.model_rows`` (``info["model_rows"]``: every row sent to the model)."""
    y, loss = game.y, game.loss
    rows = game.X[:64]
    game.model_rows += rows.shape[0]
    pred = np.asarray(game.predict(game.model_input(rows)), dtype=float)
    check_output_axes(pred.shape)
    pred = pred.reshape(pred.shape[0], -1) if pred.ndim else pred.reshape(1, 1)
    if loss in ("log_loss", "zero_one"):
        if np.any(pred < 0) or np.any(pred > 1):
            raise ValueError(f"loss={loss!r} reads probabilities, but the model's output ranges over "
                             f"[{pred.min():.3g}, {pred.max():.3g}] (a regressor? use loss='mse')")
        top = 1 if pred.shape[1] == 1 else pred.shape[1] - 1
        if np.any(y > top):
            raise ValueError(f"y holds class positions up to {int(y.max())}, but the model gives "
                             f"{pred.shape[1]} output(s)")
    elif loss == "mse" and y.ndim == 2 and y.shape[1] != pred.shape[1]:
        raise ValueError(f"y has {y.shape[1]} columns, the model {pred.shape[1]} outputs")
    elif loss == "mse" and y.ndim == 1 and pred.shape[1] != 1:
        raise ValueError(f"loss='mse' with one target per row needs one output per row, the model gives "
                         f"{pred.shape[1]} (pass y with {pred.shape[1]} columns)")
    got = row_losses(loss, pred, y[: pred.shape[0]])
    if not np.all(np.isfinite(got)):
        raise ValueError("loss returned NaN or infinite values on the model's own predictions")
    return pred


def global_importance(model: Any, X: Any, y: Any, loss: Any = "mse", background: Any = None,
                      imputation: str = "marginal", index: Any = "shapley", method: str = "auto",
                      budget: int | None = None, seed: SeedLike = None, tol: float | None = None, stop: Any = None,
                      folds: int = 5, batch_size: int = 1 << 16, progress: Any = False, groups: Any = None,
                      **options: Any) -> Attribution:
    """SAGE: how much of the model's loss each feature removes, shared out by the Shapley value (or a semivalue).

    The game (:class:`~fairshare.games.loss.LossGame`) is ``v(S) = L(empty) - L(S)``, ``L(S)`` the mean loss over
    the rows ``X, y`` of the model knowing only the features in ``S`` (the others imputed from ``background``);
    its values add up to ``v(all) = loss of the mean prediction - loss of the model`` (``e.grand_value``). One
    game evaluation is one coalition: ``len(X) x len(background)`` model rows under marginal imputation (the
    imputer's draws, 100 by default, instead of the background under a conditional one). ``budget`` counts
    coalitions; where it covers all ``2^d`` of them the values are exact by enumeration (``auto``). Below, ``auto``
    spends the budget one row at a time: under ``2d + 2`` coalitions as each row's own permutations
    (:mod:`~fairshare.engine.row_permutations`), from there on as each row's own regression of ``budget``
    coalitions (:mod:`~fairshare.engine.row_regressions`): the same model rows as the mean game's, but the rows'
    errors average out. From a quarter of all coalitions on, the mean game's regression with its interaction
    surrogate (``surrogate-regression``). A method, an option or a stopping rule runs the mean game as asked.

    Parameters
    ----------
    model : a fitted model (``predict_proba`` for classifiers, ``predict`` otherwise) or a function of rows
    X, y : the rows (finite numbers) and their targets (numbers for ``"mse"``, labels of ``model.classes_`` or
        class positions for ``"log_loss"`` / ``"zero_one"``)
    loss : "mse", "log_loss", "zero_one" (on class probabilities) or ``loss(predictions, y)`` -> one loss per row
    background : rows the features outside a coalition are imputed from (None: ``X``, or 100 of its rows drawn
        with the seed)
    imputation : "marginal" (the background's rows), or "conditional" (= "gaussian") or "copula": the unknown
        features drawn given the known ones (:mod:`fairshare.games.imputers`)
    index, method, budget, seed, tol, stop : as for :func:`fairshare.estimate` (``budget`` counts coalitions)
    folds : independent folds of the rows for the data-sampling error (0: none); they cost no model call
    batch_size : most model rows per model call
    groups : players that are groups of features (lists of positions or names, or a dict name -> features; every
        feature in exactly one): a coalition knows every feature of its groups (one-hot blocks, related measurements)
    progress : True for a bar, or ``progress(evaluations, cap, relative_error)``
    **options : the method's options (``fairshare methods``)

    Returns
    -------
    Attribution
        ``values``: the SAGE values of the features (``player_names``). ``stderr`` covers the estimator's error on
        the game of the rows used (zero when exact), not the sampling of the rows from their population: that
        error, estimated from the spread of the values of ``folds`` independent folds of the rows (computed from
        the same model calls, scaled by Student's quantile for their ``folds - 1`` degrees of freedom), is
        ``info["data_stderr"]``, and ``info["total_stderr"]`` combines both.
        ``info["stderr_covers"]`` says so in words; ``info["model_rows"]`` counts the rows sent to the model, the
        check of its output before the run included.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(200, 3)); y = X @ np.array([2.0, 1.0, 0.0])
    >>> e = fs.global_importance(lambda R: R @ np.array([2.0, 1.0, 0.0]), X, y, background=X[:50], budget=8)
    >>> e.method, np.round(e.values / np.var(X, axis=0), 1)              # beta_j^2 Var(x_j) (marginal, MSE)
    ('exact', array([4., 1., 0.]))
    """
    args = GLOBAL_IMPORTANCE.check(dict(index=index, method=method, budget=budget, seed=seed, tol=tol, stop=stop,
                                        loss=loss, background=background, imputation=imputation, folds=folds,
                                        batch_size=batch_size, progress=progress, groups=groups))
    game = _game(model, X, y, args)
    sv = resolve_index(args["index"], game.n_players)
    rule = as_rule(args["stop"], args["tol"])
    choice = choose(game, sv, args["method"], args["budget"], rule, options)      # options checked: no model call
    _probe(game)
    by_rows = _by_rows(game, sv, choice, rule, options)
    if by_rows is not None:
        with reporting(args["progress"], "global importance", "row" if by_rows == "row-regressions" else
                       "coalition") as report:
            return _result(_run_by_rows(game, sv, choice, seed, by_rows, report), game, args, choice.budget)
    choice = _with_surrogate(game, sv, choice, rule, options)
    with reporting(args["progress"], "global importance", "coalition") as report:
        phi = run(game, sv, choice, seed, rule, progress=report)
    return _result(phi, game, args, choice.budget)


#: each row's own regression while ``budget x ROWS_COVERAGE < 2^d``; above, the mean game's regression drawn without
#: replacement is the more accurate (measured: 6 features at 16-45 coalitions 1.2-1.9x; 8 features at 96, 1.1-1.2x)
ROWS_COVERAGE = 4
#: the regressions auto may answer for a SAGE game's Shapley values (plain, and with the surrogate: its default)
_REGRESSIONS = ("regression", "surrogate-regression")


def _by_rows(game: LossGame, sv: Any, choice: Choice, rule: Any, options: dict) -> str | None:
    """How ``auto`` spends the budget one row at a time (no stopping rule, no options), or None (the mean game):
    ``"row-permutations"`` below the regression's budget (Shapley values; every row affords a permutation),
    ``"row-regressions"`` from there on while the budget covers under a quarter of all coalitions (any semivalue:
    each row's regression, the rows' errors averaging out; above that the mean game's regression, drawn without
    replacement, is the more accurate: measured on 6 to 10 features)."""
    if not (choice.auto and rule is None and not options and choice.budget is not None and game.n_players >= 2):
        return None
    n = game.n_players
    if choice.method == "permutation" and sv.name == "shapley" and choice.budget >= row_permutations_need(n):
        return "row-permutations"
    few = n > 62 or choice.budget * ROWS_COVERAGE < (1 << n)
    return "row-regressions" if choice.method in _REGRESSIONS and few else None


def _with_surrogate(game: LossGame, sv: Any, choice: Choice, rule: Any, options: dict) -> Choice:
    """``auto``'s plain regression of the mean game upgraded to ``surrogate-regression`` (no options, no stopping
    rule), where ``auto`` gave the surrogate way for its predicted fit (the loss game declares no cost per
    evaluation): a coalition costs every row's model rows, so the surrogate's fit is nearly free beside it, and it
    gives the plain regression bit for bit where it does not pay (measured on SAGE games of 6 to 16 features: never
    worse, up to 9x lower error at high coverage). ``auto``'s own choice where it is already the surrogate."""
    if not (choice.auto and choice.method == "regression" and rule is None and not options):
        return choice
    upgraded = choose(game, sv, "surrogate-regression", choice.budget, rule, {})
    why = (f"{choice.reason}; upgraded to surrogate-regression: a coalition costs every row's model rows, so its "
           "surrogate fit is nearly free beside them (the plain regression bit for bit where it does not pay)")
    return dataclasses.replace(upgraded, reason=why, auto=True)


def _run_by_rows(game: LossGame, sv: Any, choice: Choice, seed: SeedLike, how: str, report: Any) -> Attribution:
    """Each row's own permutations (:mod:`fairshare.engine.row_permutations`) or regression
    (:mod:`fairshare.engine.row_regressions`) as an Attribution of the game's outputs (before :func:`_result`)."""
    if how == "row-permutations":
        values, stderr, grand, used, info = row_permutations(game, choice.budget, streams(generator(seed), 2)[0])
        if report is not None:
            report(used, choice.budget)
        why = (f"{choice.reason}; spent as row-stratified antithetic permutations (each row its own, "
               f"{info['per_row']:.2g} per row): at this budget one permutation of the mean game leaves the error of a "
               "single permutation")
    else:
        values, stderr, grand, used, info = row_regressions(game, sv, choose(game.row_game(0), sv, "regression",
                                                                             choice.budget), seed, report)
        why = (f"{choice.reason}; spent as each row's own regression of {choice.budget} coalitions: the rows' "
               "errors average out, where one regression of the mean game keeps its error whatever the rows")
    if game.folds is None:                  # one output: the shapes the engine gives a game of one value
        values, stderr, grand = values[:, 0], stderr[:, 0], float(grand[0])
    info["choice"] = {"method": how, "why": why}
    return Attribution(values=values, stderr=stderr, index=sv.name, method=how, options={}, info=info,
                       n_evaluations=used, empty_value=0.0, grand_value=grand, player_names=list(game.player_names))


def _game(model: Any, X: Any, y: Any, args: dict) -> LossGame:
    """The checked rows, targets, background and imputer as a LossGame (no model call)."""
    loss = args["loss"]
    background = args["background"]
    X, background = aligned_rows(model, X, background)    # by name; arrays for a model of names get them
    columns = frame_info(X)[0] if hasattr(X, "columns") else None
    Xr = _rows(X, "X")
    n = Xr.shape[0]
    if n == 0:
        raise ValueError("X has no rows: the loss is measured on at least one row")
    raw, yy = _targets(model, y, n, loss)
    rng = streams(generator(args["seed"]), 2)[1]           # the background's and the folds' draws
    if background is None:
        bg = Xr if n <= 100 else Xr[np.sort(rng.choice(n, 100, replace=False))]
    else:
        bg = _rows(background, "background")
        if bg.shape[1] != Xr.shape[1]:
            raise ValueError(f"background has {bg.shape[1]} columns but X has {Xr.shape[1]}")
        if bg.shape[0] == 0:
            raise ValueError("background has no rows: give at least one row to impute the unknown features from")
    K = args["folds"]
    if K > n:
        raise ValueError(f"folds={K} is more than the {n} rows of X")
    fold_of = None if K == 0 else np.empty(n, dtype=np.int64)
    if fold_of is not None:
        fold_of[rng.permutation(n)] = np.arange(n) % K
    _refuse_regressor(model, loss)
    _refuse_outputs(model, yy, loss)
    imputation = "gaussian" if args["imputation"] == "conditional" else args["imputation"]
    check_kinds(X, background)
    words = Xr.dtype == object or bg.dtype == object
    if words and imputation != "marginal":
        _numbers_only(Xr, "X", columns, imputation)
        _numbers_only(bg, "background", columns, imputation)
    imputer = make_imputer(imputation, bg) if imputation != "marginal" else None
    predict = as_predict(model)
    target = raw if callable(loss) else yy
    lists, players = (None, columns) if args["groups"] is None else feature_groups(
        args["groups"], columns or [f"x{j}" for j in range(Xr.shape[1])])           # refused by name, no call
    return LossGame(predict, Xr, target, bg, loss=loss, imputer=imputer, folds=fold_of, groups=lists,
                    row_batch=args["batch_size"], feature_names=players, frame_columns=columns,
                    dtypes=shared_dtypes(X, background) if words else None)


def _result(phi: Attribution, game: LossGame, args: dict, budget: int | None) -> Attribution:
    """The values of all rows (the game's first output), with the data-sampling error from the folds', and the
    budget (coalitions) and seed the run was given, as every door records them."""
    values = np.asarray(phi.values, dtype=float)
    stderr = None if phi.stderr is None else np.asarray(phi.stderr, dtype=float)
    grand = np.atleast_1d(np.asarray(phi.grand_value, dtype=float))
    info = dict(phi.info)
    if game.folds is not None:
        K = values.shape[1] - 1
        # the folds' spread has K - 1 degrees of freedom: Student's quantile makes two of it a 95% interval
        # (the normal one covered 0.71 at 2 folds, 0.86 at 5)
        data = values[:, 1:].std(axis=1, ddof=1) / np.sqrt(K) * float(small_sample_factor(K - 1))
        values, stderr = values[:, 0], None if stderr is None else stderr[:, 0]
        info["data_stderr"] = data
        info["total_stderr"] = np.sqrt(data ** 2 + (0.0 if stderr is None else stderr ** 2))
    empty = game.empty_losses()
    info.update(
        stderr_covers="stderr: the estimator's error on the game of the rows used (zero when exact); data_stderr: "
                      "the error of drawing those rows, from the spread of the values of independent folds (each "
                      "fold's estimator error included: conservative at small budgets), scaled by Student's quantile "
                      "for their few degrees of freedom; total_stderr: both",
        loss=args["loss"] if isinstance(args["loss"], str) else getattr(args["loss"], "__name__", "callable"),
        imputation=args["imputation"] if game.imputer is None else game.imputer.describe(),
        rows=int(game.X.shape[0]), background_rows=int(game.background.shape[0]), folds=args["folds"],
        model_rows=int(game.model_rows), loss_of_mean_prediction=float(empty.mean()),
        loss_of_model=float(empty.mean() - grand[0]), budget=budget, seed=str(args["seed"]))
    return Attribution(values=values, stderr=stderr, index=phi.index, method=phi.method, options=phi.options,
                       info=info, n_evaluations=phi.n_evaluations, empty_value=0.0, grand_value=float(grand[0]),
                       player_names=list(game.player_names))
