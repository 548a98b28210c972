"""DataGame: training points as players; the value of a coalition is the validation score of a model fitted on it.

Every evaluation is a fresh clone of the model fitted on the coalition's rows and scored on the
validation set, locally or, with a client (Dask, a SparkSession, the ray module; :mod:`fairshare.backends`), in
tasks of a few fits (the training and validation data go to the cluster once, on Dask in the task graph; a
coalition travels as an index array, a few coalitions per task so that scheduling does not cost more than cheap
fits). With a
``cache`` folder every finished fit is appended to a checksummed record log the moment it completes,
so a run that is interrupted, killed or fails resumes without fitting again.

Degenerate coalitions get a defined value and are counted in :attr:`DataGame.degenerate`, never a
crash or a NaN: the empty coalition, a coalition whose labels are all one class (for a
classifier), and a fit or score that raises all get the score of the constant predictor (the
majority class, or the mean target, of the coalition's rows; of the whole training set for the
empty coalition), or the number given as ``degenerate``.

A model whose ``random_state`` is left at None (a forest, a tree breaking ties at random) is fitted with one drawn
from the coalition's rows (:func:`coalition_state`), so ``v`` is a function: the same seed gives the same values.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import numpy as np

from ..store.cache import RecordLog, content_key, estimator_key, fingerprint, open_cache_folder
from ..store.coalitions import CoalitionStore, coalition_keys
from .base import Game
from .cost import fit_seconds
from ..backends.clients import as_backend
from ..backends.dask import wait_seconds

__all__ = ["DataGame", "fit_and_score", "fit_and_score_many", "seeded_clone", "coalition_state"]

_IN_FLIGHT_PER_WORKER = 4     # tasks queued on the cluster per worker thread (memory stays bounded)
_MOST_FITS_PER_TASK = 16      # fits per Dask task: a few ms of scheduling spread over several fits
_STATUS = ("ok", "empty", "one class", "fit failed")


def _n_rows(a: Any) -> int:
    shape = getattr(a, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(a)


def _rows(X: Any, idx: np.ndarray) -> Any:
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


def _clone(model: Any) -> Any:
    try:
        from sklearn.base import clone

        return clone(model)
    except Exception:                         # noqa: BLE001 - any fit/predict object: a deep copy
        return copy.deepcopy(model)


def seeded_clone(model: Any, state: int) -> Any:
    """A fresh clone of ``model``; a ``random_state`` parameter left at None (its own or a pipeline step's) is set to
    ``state``, so that the same fit gives the same model every time (a forest or a tree with ties would otherwise be
    drawn afresh per fit).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> seeded_clone(DecisionTreeClassifier(), 7).random_state, seeded_clone(DecisionTreeClassifier(random_state=1), 7)
    (7, DecisionTreeClassifier(random_state=1))
    """
    clone = _clone(model)
    params = clone.get_params(deep=True) if hasattr(clone, "get_params") else {}
    unset = {k: state for k, v in params.items() if (k == "random_state" or k.endswith("__random_state")) and v is None}
    if unset:                                   # a pipeline's steps too (``randomforestclassifier__random_state``)
        clone.set_params(**unset)
    return clone


def coalition_state(idx: np.ndarray) -> int:
    """The ``random_state`` of a coalition's fit, from its rows alone (not their order, nor the run's seed): the game
    is one function of the coalition, the same locally, on a cluster, from a cache and for every seed.

    Examples
    --------
    >>> coalition_state(np.array([3, 1])) == coalition_state(np.array([1, 3])) != coalition_state(np.array([1]))
    True
    """
    rows = np.sort(np.asarray(idx, dtype="<i8"))
    return int.from_bytes(hashlib.blake2b(rows.tobytes(), digest_size=4, person=b"fs-fit").digest(), "little") >> 1


def _is_classifier(model: Any) -> bool:
    """scikit-learn's answer for its estimators; for any other fit/predict object, whether it has predict_proba."""
    try:
        from sklearn.base import BaseEstimator, is_classifier
    except ImportError:                       # pragma: no cover
        return hasattr(model, "predict_proba")
    if isinstance(model, BaseEstimator):
        return bool(is_classifier(model))
    return hasattr(model, "predict_proba")


def _class_labels(y: Any, name: str, model: Any) -> None:
    """Refuse labels a classifier cannot take (continuous numbers), naming the argument, before any fit.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> _class_labels(np.array([0, 1, 1]), "y_train", LogisticRegression())
    >>> _class_labels(np.array([0.5, 1.2]), "y_val", LogisticRegression())
    Traceback (most recent call last):
    ...
    ValueError: y_val holds continuous values (e.g. 0.5), but LogisticRegression is a classifier: it needs class labels
    """
    from sklearn.utils.multiclass import type_of_target

    try:
        kind = type_of_target(y)
    except ValueError:                                    # not labels at all: the fit names what it cannot read
        return
    if kind.startswith("continuous"):
        first = np.asarray(y).ravel()[np.flatnonzero(np.asarray(y).ravel() % 1 != 0)[:1]]
        example = f" (e.g. {first[0]:g})" if first.size else ""
        raise ValueError(f"{name} holds continuous values{example}, but {type(model).__name__} is a classifier: it "
                         "needs class labels")


def _score(model: Any, scorer: Any, X_val: Any, y_val: Any) -> float:
    if scorer is None:
        return float(model.score(X_val, y_val))
    return float(scorer(model, X_val, y_val))


def fit_and_score(model: Any, scorer: Any, X: Any, y: Any, X_val: Any, y_val: Any, idx: np.ndarray,
                  classifier: bool, fixed_degenerate: float | None) -> tuple[float, str]:
    """The value of one coalition (its training rows ``idx``) and what happened: ``ok``, ``empty``,
    ``one class`` or ``fit failed``. A top-level function, so that Dask ships it to the workers."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    def constant(rows: np.ndarray) -> float:
        if fixed_degenerate is not None:
            return float(fixed_degenerate)
        dummy = DummyClassifier(strategy="most_frequent") if classifier else DummyRegressor()
        dummy.fit(_rows(X, rows), _rows(y, rows))
        try:
            return _score(dummy, scorer, X_val, y_val)
        except Exception as error:            # noqa: BLE001 - named: the user's scoring or labels do not fit
            func = getattr(scorer, "_score_func", scorer)
            what = "the model's score" if scorer is None else getattr(func, "__name__", type(func).__name__)
            raise ValueError(f"scoring: {what} could not score the constant predictor ({type(dummy).__name__}, the "
                             f"value of degenerate coalitions) on X_val, y_val: {type(error).__name__}: "
                             f"{str(error).splitlines()[0] if str(error) else ''} (does the scoring fit the model, "
                             "y_val the labels of y_train? degenerate=<a number> values those coalitions without it)"
                             ) from error

    everyone = np.arange(_n_rows(y))
    if idx.size == 0:
        return constant(everyone), "empty"
    labels = np.asarray(_rows(y, idx))
    if classifier and np.unique(labels).size < 2:
        return constant(idx), "one class"
    try:
        fitted = seeded_clone(model, coalition_state(idx)).fit(_rows(X, idx), _rows(y, idx))
        value = _score(fitted, scorer, X_val, y_val)
        if not np.isfinite(value):
            raise ValueError(f"the score is {value}")
        return value, "ok"
    except Exception:                         # noqa: BLE001 - a fit that raises is a degenerate coalition
        return constant(idx), "fit failed"


def fit_and_score_many(model: Any, scorer: Any, X: Any, y: Any, X_val: Any, y_val: Any, rows: list,
                       classifier: bool, fixed_degenerate: float | None) -> list[tuple[float, str]]:
    """:func:`fit_and_score` for several coalitions (one Dask task)."""
    return [fit_and_score(model, scorer, X, y, X_val, y_val, idx, classifier, fixed_degenerate) for idx in rows]


class DataGame(Game):
    """Training points (or groups of them) as players; ``v(S)`` is the validation score of the model fitted on ``S``.

    Parameters
    ----------
    model : a scikit-learn estimator or any object with ``fit`` / ``predict`` (cloned for every fit)
    X_train, y_train, X_val, y_val : arrays or pandas objects
    scoring : None (the model's ``score``: accuracy, R^2), a scikit-learn scorer name or ``scorer(model, X, y)``
    groups : list of lists of training-row indices: each group is one player (every row in exactly one)
    degenerate : None (the constant predictor's score, see the module docstring) or a number
    client : a ``dask.distributed.Client``, a ``SparkSession`` or the ``ray`` module: tasks of a few fits
    timeout : with a client, the longest wait in seconds for the next task (None: the Dask setting
        ``fairshare.timeout``, else 1800); see :mod:`fairshare.backends.dask`
    cache : a folder keeping every finished fit (resume without refitting)
    progress : a callable ``progress(n)`` told of every ``n`` finished fits (``value_data``'s bar)

    Examples
    --------
    >>> import fairshare as fs
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
    >>> g = fs.games.DataGame(LogisticRegression(), X[:40], y[:40], X[40:], y[40:])
    >>> v = g(np.array([[True] * 40, [False] * 40]))
    >>> bool(v[0] > 0.8), g.degenerate["empty"]
    (True, 1)
    """

    kind = "data"

    def __init__(self, model: Any, X_train: Any, y_train: Any, X_val: Any, y_val: Any, scoring: Any = None,
                 groups: Any = None, degenerate: float | None = None, client: Any = None, cache: Any = None,
                 progress: Any = None, timeout: float | None = None) -> None:
        if not (hasattr(model, "fit") and (hasattr(model, "predict") or hasattr(model, "score"))):
            raise TypeError(f"model must have fit and predict (or score) methods, got {type(model).__name__}")
        n_train = _n_rows(y_train)
        if _n_rows(X_train) != n_train:
            raise ValueError(f"X_train has {_n_rows(X_train)} rows but y_train has {n_train} labels")
        if _n_rows(X_val) != _n_rows(y_val) or _n_rows(y_val) == 0:
            raise ValueError(f"X_val and y_val must hold the same (positive) number of rows, got {_n_rows(X_val)} "
                             f"and {_n_rows(y_val)}")
        if n_train == 0:
            raise ValueError("X_train holds no rows")
        self.model, self.X, self.y, self.X_val, self.y_val = model, X_train, y_train, X_val, y_val
        self.scorer = self._scorer(scoring)
        self.scoring = scoring if isinstance(scoring, str) or scoring is None else getattr(scoring, "__name__", "custom")
        self._scorer_given = callable(scoring)            # a scorer of the user's (a name is scikit-learn's)
        if degenerate is not None and not np.isfinite(float(degenerate)):
            raise ValueError(f"degenerate must be None or a finite number, got {degenerate!r}")
        self.fixed_degenerate = None if degenerate is None else float(degenerate)
        self.classifier = _is_classifier(model)
        if self.classifier:                               # its fit needs class labels; its own score too
            _class_labels(y_train, "y_train", model)
            if scoring is None:
                _class_labels(y_val, "y_val", model)
        self.members = self._groups(groups, n_train)
        super().__init__(len(self.members))
        self.client = client
        self.timeout = None if timeout is None else wait_seconds(timeout)
        self.progress = progress
        self.degenerate: dict[str, int] = {"empty": 0, "one class": 0, "fit failed": 0}
        self.n_fits = 0
        self.reused = 0
        self.cache = None if cache is None else _FitCache(cache, self._fingerprint(), self.n_players)
        self._remote = None

    # ------------------------------------------------------------------------------------ setup
    @staticmethod
    def _scorer(scoring: Any) -> Any:
        if scoring is None or callable(scoring):
            return scoring
        if isinstance(scoring, str):
            from sklearn.metrics import get_scorer

            try:
                return get_scorer(scoring)
            except ValueError:
                raise ValueError(f"scoring {scoring!r} is not a scikit-learn scorer name (see "
                                 "sklearn.metrics.get_scorer_names()) or a callable scorer(model, X, y)") from None
        raise TypeError(f"scoring must be None, a scorer name or a callable, got {type(scoring).__name__}")

    @staticmethod
    def _groups(groups: Any, n: int) -> list[np.ndarray]:
        if groups is None:
            return [np.array([i]) for i in range(n)]
        if isinstance(groups, str):
            raise TypeError(f"groups must be lists of training-row indices, got the string {groups!r}")
        out, seen = [], np.zeros(n, dtype=int)
        for g in groups:
            listed = list(g) if not np.isscalar(g) else [g]
            bad = [m for m in listed if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer))]
            if bad:                                   # 2.5 was read as row 2, "a" stopped on int("a")
                raise TypeError(f"groups must hold training-row indices (integers), got {bad[0]!r}")
            members = np.asarray(listed, dtype=np.int64)
            if members.size == 0 or members.min() < 0 or members.max() >= n:
                raise ValueError(f"groups must hold training-row indices in [0, {n}), got {members.tolist()}")
            seen[members] += 1
            out.append(members)
        if np.any(seen != 1):
            raise ValueError(f"groups must hold every training row exactly once; rows in none: "
                             f"{np.flatnonzero(seen == 0)[:10].tolist()}, in several: {np.flatnonzero(seen > 1)[:10].tolist()}")
        return out

    def _fingerprint(self) -> str:
        """The data, the model (its unfitted settings and its class, by content), the scorer (a name, or a
        callable by content: code, constants, closures, the data it reads) and the settings of the game."""
        scorer = content_key(self.scorer) if self._scorer_given else self.scoring
        return fingerprint(self.X, self.y, self.X_val, self.y_val, np.concatenate(self.members),
                           np.cumsum([len(m) for m in self.members]), model=estimator_key(self.model),
                           scoring=scorer, degenerate=self.fixed_degenerate)

    def cost(self) -> float:
        """Predicted seconds per evaluation: one fit on half the training rows and its score
        (:func:`fairshare.games.cost.fit_seconds`)."""
        shape = getattr(self.X, "shape", None)
        n_features = int(shape[1]) if shape is not None and len(shape) > 1 else 1
        return fit_seconds(self.model, max(1, _n_rows(self.y) // 2), n_features, _n_rows(self.y_val))

    def rows_of(self, coalition: np.ndarray) -> np.ndarray:
        """The training rows of a coalition (its players' members)."""
        chosen = np.flatnonzero(coalition)
        return np.concatenate([self.members[p] for p in chosen]) if chosen.size else np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------------------- evaluation
    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        out = np.empty(coalitions.shape[0])
        todo = np.arange(coalitions.shape[0])
        if self.cache is not None:
            found, values, status = self.cache.lookup(coalitions)
            out[found] = values[found]
            todo = np.flatnonzero(~found)
            self.reused += int(found.sum())
            counts = np.bincount(status[found], minlength=len(_STATUS))   # what happened to them counts too
            for code, what in enumerate(_STATUS[1:], start=1):
                self.degenerate[what] += int(counts[code])
            if self.progress is not None and found.any():
                self.progress(int(found.sum()))
        if todo.size == 0:
            return out
        if self.client is not None:
            self._on_cluster(coalitions, todo, out)
        else:
            for i in todo:
                self._finish(coalitions[i], i, *self._fit(coalitions[i]), out)
        return out

    def _fit(self, coalition: np.ndarray) -> tuple[float, str]:
        return fit_and_score(self.model, self.scorer, self.X, self.y, self.X_val, self.y_val, self.rows_of(coalition),
                             self.classifier, self.fixed_degenerate)

    def _finish(self, coalition: np.ndarray, i: int, value: float, what: str, out: np.ndarray) -> None:
        out[i] = value
        self.n_fits += 1
        if what != "ok":
            self.degenerate[what] += 1
        if self.cache is not None:
            self.cache.add(coalition, value, what)
        if self.progress is not None:
            self.progress(1)

    def _on_cluster(self, coalitions: np.ndarray, todo: np.ndarray, out: np.ndarray) -> None:
        """A window of tasks of a few fits each (:mod:`fairshare.backends`): on Dask the data live in the task graph
        and every wait is bounded, a worker that dies loses nothing, its fits run again elsewhere."""
        backend = as_backend(self.client)
        if self._remote is None:          # the data and the model go to the cluster once
            self._remote = [backend.put(v) for v in (self.model, self.scorer, self.X, self.y, self.X_val, self.y_val)]
        window = _IN_FLIGHT_PER_WORKER * backend.slots()
        per_task = int(np.clip(todo.size // (2 * window), 1, _MOST_FITS_PER_TASK))
        chunks = [todo[i:i + per_task] for i in range(0, todo.size, per_task)]
        tasks = (([self.rows_of(coalitions[i]) for i in chunk], self.classifier, self.fixed_degenerate)
                 for chunk in chunks)
        for k, results in backend.run(fit_and_score_many, self._remote, tasks, window, self.timeout):
            for i, (value, what) in zip(chunks[k], results):
                self._finish(coalitions[i], i, value, what, out)

    def __repr__(self) -> str:
        return f"DataGame(model={type(self.model).__name__}, n_players={self.n_players}, fits={self.n_fits})"


class _FitCache:
    """Finished fits in a cache folder: the game's fingerprint in ``manifest.json`` and one record per fit
    (packed coalition; value and what happened) in ``fits.log``, appended and flushed as each fit ends."""

    def __init__(self, folder: Any, key: str, n_players: int) -> None:
        self.path = open_cache_folder(folder, key)
        self.log = RecordLog(self.path / "fits.log", f"fits of {key}", key_width=(n_players + 7) // 8)
        self.store = CoalitionStore()                     # the value and status of each logged fit, by coalition
        if self.log.keys.shape[0]:
            self.store.add(self.log.keys.copy().view(f"S{self.log.key_width}").ravel(), self.log.values[:, :2])

    def lookup(self, coalitions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which coalitions were fitted before, their values and what happened (the index of ``_STATUS``; 0 where
        not fitted before)."""
        pos = self.store.find(coalition_keys(coalitions))
        found = pos >= 0
        values, status = np.zeros(coalitions.shape[0]), np.zeros(coalitions.shape[0], dtype=np.int64)
        if found.any():
            values[found] = self.store.values[pos[found], 0]
            status[found] = self.store.values[pos[found], 1]
        return found, values, status

    def add(self, coalition: np.ndarray, value: float, what: str) -> None:
        key = coalition_keys(coalition[None, :])
        self.store.add(key, np.array([[value, _STATUS.index(what)]]))
        self.log.append(np.frombuffer(key.tobytes(), dtype=np.uint8)[None, :], np.array([[value, _STATUS.index(what)]]))
