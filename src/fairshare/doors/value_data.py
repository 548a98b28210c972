"""Data valuation: what each training point is worth to a model, ``fs.value_data``.

The game is :class:`~fairshare.games.DataGame` (``v(S)``: the validation score of the model fitted on
the rows in ``S``) or, for a k-nearest-neighbour classifier, :class:`~fairshare.games.KNNGame` with its
closed-form Shapley values. The estimators are the registry's: for Banzhaf values Kernel Banzhaf (or
MSR), for Shapley values truncated Monte Carlo (TMC), for beta-Shapley and other semivalues the
semivalue regression, leave-one-out as its own method; every value comes with a standard error.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option, check_int, check_progress
from ..backends.clients import check_client
from ..games.data import _n_rows
from ..results.data_values import DataValues, detection_auc
from .data_oob import data_oob
from ..store.cache import cache_folder
from .estimate import common_arguments
from ..engine.choice import choose
from ..engine.engine import run
from ..engine.stopping import as_rule
from .._core.progress import reporting
from ..indices.semivalues import resolve_index

__all__ = ["value_data", "DataValues", "detection_auc", "VALUE_DATA"]


def _index_or_oob(check: Any) -> Any:
    """The semivalue check, letting Data-OOB's name through."""
    return lambda value: value if _is_oob(value) else check(value)


#: fs.value_data's arguments (besides the model, the data and the method's own options)
VALUE_DATA = Arguments("value_data", tuple(
    Option("index", None, o.doc + "; data-oob (out-of-bag scores of bootstrap fits, budget = fits); None: shapley "
           "for a KNN classifier (closed form), else banzhaf", check=_index_or_oob(o.check), none_ok=True)
    if o.name == "index" else o for o in common_arguments()) + (
    Option("scoring", None, "None (the model's score), a scikit-learn scorer name or scorer(model, X, y)"),
    Option("groups", None, "lists of training-row indices, each valued as one player"),
    Option("degenerate", None, "the value of a coalition the model cannot be fitted on (None: the constant "
           "predictor's score)", kind="float", none_ok=True),
    Option("client", None, "a dask.distributed.Client, a pyspark SparkSession or the ray module after ray.init(): "
           "tasks of a few fits", check=check_client),
    Option("cache", None, "a folder keeping every finished fit (an interrupted run resumes)", check=cache_folder),
    Option("progress", True, "True for a bar, or progress(fits, cap, relative_error)", check=check_progress),
))


def _is_oob(index: Any) -> bool:
    return isinstance(index, str) and index.strip().lower() in ("data-oob", "dataoob", "oob")


def _names(X: Any, n: int) -> list[str]:
    index = getattr(X, "index", None)
    if index is not None and len(index) == n:
        return [str(i) for i in index]
    return [f"row{i}" for i in range(n)]


def _table(X: Any, name: str) -> Any:
    """A feature table as the fits take it: plain lists as an array, 2-D."""
    from .._core.tables import is_sparse

    X = X if hasattr(X, "iloc") or is_sparse(X) or isinstance(X, np.ndarray) else np.asarray(X)
    if np.ndim(X) != 2:
        raise ValueError(f"{name} must be a table of rows x features (2-D), got {np.ndim(X)}-D with shape "
                         f"{np.shape(X)}")
    return X


def _labels(y: Any, name: str) -> Any:
    """Labels of one column (a single-column table as its column), none missing or infinite."""
    from .._core.tables import check_labels

    y = y if hasattr(y, "iloc") or isinstance(y, np.ndarray) else np.asarray(y)
    if np.ndim(y) == 2 and np.shape(y)[1] == 1:
        y = y.iloc[:, 0] if hasattr(y, "iloc") else y[:, 0]
    if np.ndim(y) != 1:
        raise ValueError(f"{name} must hold one label a row (1-D), got shape {np.shape(y)}")
    check_labels(y, name)
    held = np.asarray(y)
    if held.dtype == object and held.size:      # integers (or words) in an object array: scikit-learn reads neither
        kinds = {bool if isinstance(v, (bool, np.bool_)) else float if isinstance(v, (float, np.floating)) else
                 int if isinstance(v, (int, np.integer)) else str if isinstance(v, str) else object for v in held}
        if len(kinds) == 1 and object not in kinds:
            return np.array(held.tolist())
    return y


def _check_rows(model: Any, X: Any, name: str) -> None:
    """No infinite value, and NaN only for a model that takes missing values."""
    from .._core.missing import accepts_missing
    from .._core.tables import check_finite, frame_info, is_sparse

    rows = X if is_sparse(X) else np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X)
    if rows.dtype.kind in "fcO" or is_sparse(rows):
        check_finite(rows, name, frame_info(X)[0], allow_nan=accepts_missing(model) is not False)


def checked_training(model: Any, X_train: Any, y_train: Any) -> tuple[Any, Any]:
    """The training set as the fits need it, refused before any fit where no fit could use it: a 2-D table (plain
    lists as an array; a frame's index unique, as it names the points) without infinite values (NaN only for a model
    that takes them), one label a row with as many rows, and for a classifier class labels of two classes or more (one
    class leaves every coalition degenerate).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> checked_training(LogisticRegression(), np.zeros((3, 2)), ["a", "a", "a"])
    Traceback (most recent call last):
    ...
    ValueError: y_train holds one class only ('a'): a classifier needs two, every fit would be the constant predictor
    """
    from ..games.data import _class_labels, _is_classifier

    X_train, y_train = _table(X_train, "X_train"), _labels(y_train, "y_train")
    if _n_rows(X_train) != _n_rows(y_train):
        raise ValueError(f"X_train has {_n_rows(X_train)} rows but y_train has {_n_rows(y_train)} labels")
    _check_rows(model, X_train, "X_train")
    index = getattr(X_train, "index", None)
    if index is not None and not index.is_unique:       # the values are named by it: as_dict and dv[name] lost some
        raise ValueError(f"X_train's index holds {index[index.duplicated()][0]!r} more than once: each training point "
                         "is named by its index label; give unique labels (X_train.reset_index(drop=True))")
    if _is_classifier(model):
        _class_labels(y_train, "y_train", model)
        classes = np.unique(np.asarray(y_train))
        if classes.size == 1:
            raise ValueError(f"y_train holds one class only ({classes[:1].tolist()[0]!r}): a classifier needs two, "
                             "every fit would be the constant predictor")
    return X_train, y_train


def checked_sets(model: Any, X_train: Any, y_train: Any, X_val: Any, y_val: Any,
                 index: Any = None) -> tuple[Any, Any, Any, Any]:
    """The training and validation sets as the fits need them, refused before any fit where no fit could use them
    (a fit that raises is scored as a degenerate coalition, so bad data would be valued silently): the training set
    as :func:`checked_training` has it, a validation table with the same columns (a frame's matched to X_train's by
    name) and labels of one column, checked alike. A missing validation set is refused naming ``index`` (which
    needs it).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> checked_sets(LogisticRegression(), np.zeros((4, 2)), [0, 1, 0, 1], np.zeros((3, 3)), [0, 1, 1])
    Traceback (most recent call last):
    ...
    ValueError: X_val has 3 columns but X_train has 2: the model is fitted on X_train's columns and scored on X_val's
    """
    from .._core.tables import aligned, frame_info

    if X_val is None or y_val is None:
        raise ValueError(f"{'X_val' if X_val is None else 'y_val'}: required for index={index!r} (only "
                         "index='data-oob' values points without a validation set)")
    X_train, y_train = checked_training(model, X_train, y_train)
    X_val, y_val = _table(X_val, "X_val"), _labels(y_val, "y_val")
    if np.shape(X_val)[1] != np.shape(X_train)[1]:
        raise ValueError(f"X_val has {np.shape(X_val)[1]} columns but X_train has {np.shape(X_train)[1]}: the model "
                         "is fitted on X_train's columns and scored on X_val's")
    train_columns, val_columns = frame_info(X_train)[0], frame_info(X_val)[0]
    if train_columns is not None and val_columns is not None:   # by name, as every door: missing or unknown refused
        X_val = aligned(X_val, train_columns, "X_val", "the columns of X_train")
    _check_rows(model, X_val, "X_val")
    return X_train, y_train, X_val, y_val


def value_data(model: Any, X_train: Any, y_train: Any, X_val: Any = None, y_val: Any = None, index: Any = None,
               method: str = "auto", budget: int | None = None, stop: Any = None, tol: float | None = None,
               scoring: Any = None, groups: Any = None, degenerate: float | None = None, client: Any = None,
               cache: Any = None, seed: Any = None, progress: Any = True, **options: Any) -> DataValues:
    """Value every training point (or group of points) by what it adds to ``model``'s validation score.

    Parameters
    ----------
    model : a scikit-learn estimator or any ``fit`` / ``predict`` object (cloned for every fit); a
        ``KNeighborsClassifier`` with the default scoring is valued through its closed form
        (:class:`~fairshare.games.KNNGame`, Jia et al. 2019: exact Shapley values, no fits)
    X_train, y_train, X_val, y_val : arrays or pandas objects (the validation set is not used by "data-oob")
    index : "banzhaf" (robust to the noise of refitting), "shapley", "beta-shapley" (Beta(16, 1)), "loo"
        (leave-one-out), any index name of ``fs.estimate``, a :class:`~fairshare.Semivalue`, or "data-oob"
        (:mod:`fairshare.doors.data_oob`: out-of-bag scores of ``budget`` bootstrap fits, 200 by default);
        default: "shapley" for a ``KNeighborsClassifier`` (its closed form, no fits), else "banzhaf"
    method : a registry key or "auto" (Banzhaf: ``kernel-banzhaf``, Shapley: ``tmc``, leave-one-out:
        ``loo``, others: ``semivalue-regression``; exact for a KNN model; see :mod:`fairshare.engine.choice`)
    budget : most model fits (required, except for leave-one-out and the KNN closed form)
    stop, tol : a :mod:`fairshare.stopping` rule, or a relative-error target
    scoring : None (the model's ``score``), a scikit-learn scorer name or ``scorer(model, X, y)``
    groups : lists of training-row indices, each valued as one player
    degenerate : the value of a coalition the model cannot be fitted on (empty, one class, a fit that
        raises): None for the constant predictor's score (default), or a number (pyDVL uses 0)
    client : a ``dask.distributed.Client``, a ``pyspark`` SparkSession or the ``ray`` module after ``ray.init()``:
        tasks of a few fits (same values as a local run with the same seed)
    cache : a folder keeping every finished fit; an interrupted run resumes without refitting
    seed : int or numpy Generator
    progress : True for a bar of fits done and the current error estimate, False, or a callable
        ``progress(fits, cap, relative_error)``
    **options : the method's options (``fairshare methods``)

    Returns
    -------
    DataValues

    Examples
    --------
    >>> import fairshare as fs
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(80, 2)); y = (X[:, 0] > 0).astype(int)
    >>> y[:3] = 1 - y[:3]                                              # three flipped labels
    >>> dv = fs.value_data(LogisticRegression(), X[:40], y[:40], X[40:], y[40:], budget=400, seed=0,
    ...                    progress=False)
    >>> dv.values.shape, dv.stderr.shape, dv.n_fits <= 400
    ((40,), (40,), True)
    """
    from ..games.data import DataGame

    started = time.perf_counter()
    args = VALUE_DATA.check(dict(index=index, method=method, budget=budget, seed=seed, tol=tol, stop=stop,
                                 scoring=scoring, groups=groups, degenerate=degenerate, client=client, cache=cache,
                                 progress=progress))
    if _is_oob(args["index"]):
        return _data_oob(model, X_train, y_train, X_val, y_val, args, options)
    X_train, y_train, X_val, y_val = checked_sets(model, X_train, y_train, X_val, y_val, args["index"])
    knn = _knn_neighbours(model) if scoring is None and groups is None else None
    if args["index"] is None:
        args["index"] = "shapley" if knn is not None else "banzhaf"
    if knn is not None:
        game = _knn_game(model, X_train, y_train, X_val, y_val, knn)
    else:
        game = DataGame(model, X_train, y_train, X_val, y_val, scoring=scoring, groups=groups, degenerate=degenerate,
                        client=client, cache=args["cache"])
    names = _names(X_train, game.n_players) if groups is None else [f"group{i}" for i in range(game.n_players)]
    game.player_names = names
    sv = resolve_index(args["index"], game.n_players)
    rule = as_rule(args["stop"], args["tol"])
    choice = choose(game, sv, args["method"], args["budget"], rule, options)
    with reporting(args["progress"] if choice.method != "exact" else False, "valuing data", "fit") as report:
        phi = run(game, sv, choice, seed, rule, progress=report)
    fits = getattr(game, "n_fits", 0)
    _refuse_failed_fits(model, X_train, y_train, getattr(game, "degenerate", {}).get("fit failed", 0),
                        fits + getattr(game, "reused", 0))         # the values read from a cache count too
    return DataValues.from_attribution(phi, player_names=list(names), n_fits=fits,
                                       reused_fits=getattr(game, "reused", 0),
                                       degenerate=dict(getattr(game, "degenerate", {})),
                                       seconds=time.perf_counter() - started)


def _knn_game(model: Any, X_train: Any, y_train: Any, X_val: Any, y_val: Any, k: int) -> Any:
    """The KNN closed form's game, after the checks the fits' path makes: class labels, rows of numbers."""
    from ..games.data import _class_labels
    from ..games.knn import KNNGame

    _class_labels(y_train, "y_train", model)
    _class_labels(y_val, "y_val", model)
    for X, name in ((X_train, "X_train"), (X_val, "X_val")):
        try:
            np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} holds values that are not numbers; the KNN closed form measures distances "
                             "between rows of numbers") from None
    return KNNGame(X_train, y_train, X_val, y_val, k=k)


def _refuse_failed_fits(model: Any, X_train: Any, y_train: Any, failed: int, fits: int) -> None:
    """Refuse values built mostly from failed fits (a fit that raised, or whose score on the validation data raised
    or was not finite: each scored as a constant predictor's): half or more of them failed; the error of a fit on
    the whole training set (one more fit) says why where it raises too."""
    if fits < 2 or 2 * failed < fits:
        return
    from ..games.data import _clone

    try:
        _clone(model).fit(X_train, y_train)
        why = "the fit on all of X_train works: the subsets' fits raised, or their scores on the validation data " \
              "raised or were not finite (a model whose predictions hold NaN)"
    except Exception as error:                # noqa: BLE001 - the model's own message, shown to the user
        why = f"fitting it on X_train raises {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    raise ValueError(f"model: {failed} of {fits} fits failed, so the values would be the constant predictor's "
                     f"noise; {why}")


def _data_oob(model: Any, X_train: Any, y_train: Any, X_val: Any, y_val: Any, args: dict,
              options: dict) -> DataValues:
    """value_data(index="data-oob"): :func:`fairshare.doors.data_oob.data_oob` with the door's checked arguments and
    training set (:func:`checked_training`); what it does not use (a validation set, a method, its options, a stopping
    rule, ``degenerate``) is refused, naming it, and so are values built mostly from failed fits."""
    unused = [name for name, given in (("X_val", X_val), ("y_val", y_val)) if given is not None]
    unused += sorted(options) + [name for name in ("stop", "tol", "degenerate") if args[name] is not None]
    if args["method"] != "auto":
        unused.insert(0, "method")
    if unused:
        raise TypeError(f"{', '.join(unused)}: not used by index='data-oob' (bootstrap fits, budget = their number; "
                        "each point is scored by the models fitted without it, not on a validation set)")
    if args["groups"] is None and args["scoring"] is None:          # data_oob names these itself
        X_train, y_train = checked_training(model, X_train, y_train)
    with reporting(args["progress"], "valuing data (data-oob)", "fit") as report:
        values = data_oob(model, X_train, y_train, budget=args["budget"], seed=args["seed"], client=args["client"],
                          cache=args["cache"], groups=args["groups"], scoring=args["scoring"], progress=report,
                          names=_names(X_train, _n_rows(X_train)))
    _refuse_failed_fits(model, X_train, y_train, values.degenerate.get("fit failed", 0), values.n_evaluations)
    return values


def _knn_neighbours(model: Any) -> int | None:
    try:
        from sklearn.neighbors import KNeighborsClassifier
    except ImportError:                                  # pragma: no cover
        return None
    if not isinstance(model, KNeighborsClassifier):
        return None
    # the closed form's utility: Euclidean distances, uniform votes (another metric or distance weights: model fits)
    euclidean = model.metric == "euclidean" or (model.metric == "minkowski" and model.p == 2)
    if euclidean and model.weights == "uniform" and not model.metric_params:
        return int(model.n_neighbors)
    return None
