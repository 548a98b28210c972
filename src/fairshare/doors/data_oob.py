"""Data-OOB (Kwon and Zou, 2023): a training point's value is how well the models fitted WITHOUT it predict it.

``B`` bootstrap samples of the training rows (``n`` draws with replacement each) are fitted, one clone of the model
per sample; a point left out of a sample (out of bag, about 37% of the samples) is scored by that sample's model:
``1`` for a correct class and ``0`` otherwise for a classifier, minus the squared error for a regressor. Its value is
the mean of its out-of-bag scores, its standard error the standard error of that mean. A mislabelled point is
predicted "wrongly" by models that never saw it, so it gets a low value; no validation set is needed and each fit
scores many points at once, which makes Data-OOB a cheap and strong baseline for finding label errors.

Same seed, same values: the samples come from ``numpy.random.SeedSequence(seed).spawn``, one child per sample (a
larger budget extends a run, it does not redraw it), and a model with a ``random_state`` parameter left at ``None``
gets one drawn from its sample's stream, so every fit is the same locally, on Dask and after a resume.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from .._core.errors import FairshareWarning
from .._core.seeds import item_seeds
from .._core.tables import check_labels
from ..backends.clients import as_backend
from ..engine.montecarlo import Moments
from ..games.data import _is_classifier, _n_rows, _rows, seeded_clone
from ..results.data_values import DataValues
from ..store.cache import RunCache, estimator_key, fingerprint

__all__ = ["data_oob", "fit_bags", "DEFAULT_BAGS"]

#: bootstrap samples (model fits) when no budget is given
DEFAULT_BAGS = 200
_BAGS_PER_TASK = 8            # samples per Dask task: a few ms of scheduling spread over several fits


def _bag(seed: np.random.SeedSequence, n: int) -> tuple[np.ndarray, int]:
    """A bootstrap sample of ``n`` rows and the random state of its fit, from the sample's own stream."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=n), int(rng.integers(0, 2**31 - 1))


def _constant(y: np.ndarray, classifier: bool) -> Any:
    """The constant predictor's prediction: the most frequent class (the smallest among ties), or the mean."""
    if classifier:
        classes, counts = np.unique(y, return_counts=True)
        return classes[np.argmax(counts)]
    return float(np.mean(y))


def fit_bags(model: Any, X: Any, y: np.ndarray, seeds: list, classifier: bool) -> list[tuple[np.ndarray, str]]:
    """Fit one clone per bootstrap sample of ``seeds`` and score its out-of-bag points: for each sample an array of
    ``n`` scores (NaN where the point was in the bag) and what happened (``ok``, ``one class``, ``fit failed``).
    A top-level function, so that Dask ships it to the workers.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X = np.arange(12.0).reshape(-1, 1); y = (X[:, 0] > 5).astype(int)
    >>> [(s.shape, what) for s, what in fit_bags(DecisionTreeClassifier(), X, y, item_seeds(0, 2), True)]
    [((12,), 'ok'), ((12,), 'ok')]
    """
    n, out = len(y), []
    for seed in seeds:
        rows, state = _bag(seed, n)
        oob = np.ones(n, dtype=bool)
        oob[rows] = False
        scores = np.full(n, np.nan)
        if not oob.any():
            out.append((scores, "ok"))
            continue
        what, predicted = "ok", None
        if classifier and np.unique(y[rows]).size < 2:
            what = "one class"
        else:
            try:
                fitted = seeded_clone(model, state).fit(_rows(X, rows), y[rows])
                predicted = np.asarray(fitted.predict(_rows(X, np.flatnonzero(oob)))).reshape(-1)
            except Exception:                             # noqa: BLE001 - a fit that raises: the constant predictor
                what = "fit failed"
        if predicted is None:
            predicted = np.full(int(oob.sum()), _constant(y[rows], classifier), dtype=object if classifier else float)
        truth = y[oob]
        scores[oob] = (predicted == truth).astype(float) if classifier else -(predicted.astype(float) - truth) ** 2
        out.append((scores, what))
    return out


def _check(model: Any, X: Any, y: Any, groups: Any, scoring: Any, budget: int | None) -> tuple[np.ndarray, int]:
    """The labels as an array and the number of samples; an estimator that cannot be bagged, labels of the wrong
    length, groups or a validation scorer are refused, naming the argument."""
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "predict", None))):
        raise TypeError(f"model: index='data-oob' bags the model (a clone fitted per bootstrap sample), so it needs "
                        f"fit and predict; got a {type(model).__name__}")
    if groups is not None:
        raise ValueError("groups: index='data-oob' values single training points (each is out of bag on its own)")
    if scoring is not None:
        raise ValueError("scoring: index='data-oob' scores each point by the out-of-bag models' predictions of it "
                         "(accuracy for a classifier, minus the squared error otherwise), not on a validation set")
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y_train: index='data-oob' needs one label per training row, got shape {labels.shape}")
    if labels.size != _n_rows(X):
        raise ValueError(f"y_train has {labels.size} labels for {_n_rows(X)} training rows")
    if labels.size < 2:
        raise ValueError(f"X_train: index='data-oob' needs at least 2 training rows, got {labels.size}")
    check_labels(labels, "y_train")
    return labels, DEFAULT_BAGS if budget is None else int(budget)


def _run_bags(model: Any, X: Any, y: np.ndarray, seeds: list, classifier: bool, client: Any, cache: Any,
              report: Any) -> tuple[list[tuple[np.ndarray, str]], int]:
    """Every sample's scores, in the order of ``seeds`` (from the cache, locally or on Dask in tasks of a few), and
    how many came from the cache."""
    results: list = [None] * len(seeds)
    for i in range(len(seeds)):
        kept = None if cache is None else cache.row(i)
        if kept is not None:
            results[i] = (kept["values"], str(kept["info"]["status"]))
    todo = [i for i, r in enumerate(results) if r is None]
    chunks = [todo[k:k + _BAGS_PER_TASK] for k in range(0, len(todo), _BAGS_PER_TASK)]
    report(len(seeds) - len(todo), len(seeds), None)
    if client is not None and chunks:
        backend = as_backend(client)
        held = [backend.put((X, y)), backend.put(model)]         # once each; a model that does not pickle is named
        answers = backend.map(_fit_held, held, [([seeds[i] for i in c], classifier) for c in chunks])
    else:
        answers = None
    for k, chunk in enumerate(chunks):
        done = answers[k] if answers is not None else fit_bags(model, X, y, [seeds[i] for i in chunk], classifier)
        for i, (scores, what) in zip(chunk, done):
            results[i] = (scores, what)
            if cache is not None:
                cache.save_row(i, {"values": scores, "stderr": None, "empty": 0.0, "grand": 0.0, "n_evaluations": 1,
                                   "names": [], "info": {"status": what}})
        report(len(seeds) - len(todo) + sum(len(c) for c in chunks[:k + 1]), len(seeds), None)
    return results, len(seeds) - len(todo)


def _entropy(seed: Any) -> int:
    """The run's root entropy: the int given, one draw of a Generator, a SeedSequence's own, or fresh for None."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.entropy)
    return int(np.random.SeedSequence().entropy) if seed is None else int(seed)


def _fit_held(data: tuple, model: Any, seeds: list, classifier: bool) -> list[tuple[np.ndarray, str]]:
    return fit_bags(model, data[0], data[1], seeds, classifier)


def data_oob(model: Any, X: Any, y: Any, *, budget: int | None, seed: Any, client: Any = None, cache: Any = None,
             progress: Any = None, groups: Any = None, scoring: Any = None, names: list[str]) -> DataValues:
    """Data-OOB values of the training points ``X, y`` from ``budget`` bootstrap fits of ``model`` (default
    :data:`DEFAULT_BAGS`); ``fs.value_data(..., index="data-oob")`` calls it.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(60, 2)); y = (X[:, 0] > 0).astype(int)
    >>> y[:3] = 1 - y[:3]                                              # three flipped labels
    >>> dv = data_oob(DecisionTreeClassifier(max_depth=2), X, y, budget=100, seed=0, names=list(map(str, range(60))))
    >>> sorted(dv.lowest(3).tolist()), dv.n_fits
    ([0, 1, 2], 100)
    """
    started = time.perf_counter()
    labels, bags = _check(model, X, y, groups, scoring, budget)
    classifier = _is_classifier(model)
    entropy = _entropy(seed)
    seeds = item_seeds(entropy, bags)
    store = None if cache is None else RunCache(cache, fingerprint(        # seed None: any bags resume (as rows do)
        X, labels, model=estimator_key(model), index="data-oob", classifier=classifier,
        seed="None" if seed is None else str(entropy)))
    report = progress if callable(progress) else (lambda *a: None)
    results, reused = _run_bags(model, X, labels, seeds, classifier, client, store, report)
    scores = np.stack([s for s, _ in results])                           # (bags, n), NaN where in the bag
    counts = np.sum(~np.isnan(scores), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.nanmean(np.where(counts > 0, scores, 0.0), axis=0)
        values[counts == 0] = np.nan
    stderr = _stderr(scores, classifier)
    if np.any(counts == 0):
        warnings.warn(f"{int(np.sum(counts == 0))} training points were in every one of the {bags} bootstrap samples "
                      "and have no out-of-bag score (value NaN): a larger budget gives them one", FairshareWarning,
                      stacklevel=3)
    degenerate = {what: sum(1 for _, w in results if w == what) for what in ("one class", "fit failed")}
    return DataValues(values=values, stderr=stderr, index="data-oob", method="bagging", options={"bags": bags},
                      n_evaluations=bags, empty_value=None, grand_value=None, player_names=list(names),
                      info={"out_of_bag": {"mean": float(counts.mean()), "min": int(counts.min())},
                            "score": "accuracy" if classifier else "negative squared error",
                            "validation": "not used: each point is scored by the models fitted without it",
                            "seed": entropy if seed is not None or not reused else None},   # (bags of other runs)
                      n_fits=bags - reused, reused_fits=reused, degenerate={k: v for k, v in degenerate.items() if v},
                      seconds=time.perf_counter() - started)


def _stderr(scores: np.ndarray, classifier: bool) -> np.ndarray:
    """Standard errors of the points' out-of-bag means (``scores`` ``(bags, n)``, NaN where a point was in the bag);
    never zero for a mean of two or more scores, infinite below two.

    - A classifier's scores are 0 or 1 (right or wrong): the binomial standard error of the share right, that share
      taken as ``(right + 1) / (scores + 2)`` (Laplace's rule), so that a point every model got right (or wrong)
      gets the spread its number of scores allows, not zero.
    - A regressor's: each point's variance moderated by the variance pooled over the points (as the Monte Carlo
      semivalues' :meth:`~fairshare.engine.montecarlo.Moments.stderr`).

    Examples
    --------
    >>> s = np.array([[1.0, 1.0, np.nan], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    >>> np.round(_stderr(s, True), 3).tolist()
    [0.231, 0.283, 0.354]
    >>> bool(_stderr(s, False)[0] > 0), bool(np.isinf(_stderr(s[:1], False)).all())
    (True, True)
    """
    counts = np.sum(~np.isnan(scores), axis=0).astype(float)
    if classifier:
        share = (np.nansum(scores, axis=0) + 1.0) / (counts + 2.0)
        with np.errstate(divide="ignore"):
            se = np.sqrt(share * (1.0 - share) / counts)
        return np.where(counts >= 2, se, np.inf)
    bag, point = np.nonzero(~np.isnan(scores))
    moments = Moments((scores.shape[1], 1))
    moments.add_grouped(point, scores[bag, point][:, None])
    return moments.stderr()[:, 0]
