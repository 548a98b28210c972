"""Reading a tree model with its library's reader, checked against the model's own prediction.

Every ensemble read is checked against the model's own prediction on rows that exercise its
splits (each threshold from both sides, categories, missing values): a configuration a reader
gets wrong raises a clear error instead of returning values that do not add up.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np

from ..._core.missing import accepts_missing
from ..ensemble import TreeEnsemble
from .base import Reader

__all__ = ["read_with", "check_reading", "settle_reading", "probe_rows"]

_CHECK_ROWS = 48
_SETTLING = threading.Lock()


def _not_fitted(model: Any, exc: Exception) -> bool:
    """Whether reading ``model`` failed with ``exc`` because it was never fitted: the model says so (scikit-learn's
    ``__sklearn_is_fitted__``, which lightgbm's wrappers keep; catboost's ``is_fitted``), or its library's error."""
    for says in ("__sklearn_is_fitted__", "is_fitted"):
        fitted = getattr(model, says, None)
        if callable(fitted):
            try:
                if not fitted():
                    return True
            except Exception:                        # noqa: BLE001 - no answer: the error's text decides
                pass
    text = f"{type(exc).__name__} {exc}".lower()
    return "not fitted" in text or "notfitted" in text or "need to call fit" in text or "no booster" in text or \
        "no trained model" in text


def read_with(reader: Reader, model: Any, check: bool = True, settle: bool = True) -> TreeEnsemble:
    """``reader.read_trees(model)``, its library's errors said with the model's name (and "not fitted" as such),
    completed (``settle``: a base margin only a prediction tells, one row) and (``check``) compared with the model's
    own raw output on rows that exercise every split. ``settle=False, check=False``: no model call (planning).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees.readers.sklearn import SklearnReader
    >>> read_with(SklearnReader(), DecisionTreeRegressor())
    Traceback (most recent call last):
    ...
    ValueError: the DecisionTreeRegressor is not fitted; fit it before explaining it
    """
    try:
        ens = reader.read_trees(model)
    except Exception as exc:                 # library errors: say which model and why, keep the cause
        if _not_fitted(model, exc):
            raise ValueError(f"the {type(model).__name__} is not fitted; fit it before explaining it") from exc
        if isinstance(exc, (ValueError, TypeError)):
            raise
        raise ValueError(f"could not read the {type(model).__name__} as a tree ensemble: "
                         f"{type(exc).__name__}: {exc}") from exc
    if accepts_missing(model) is False:             # its own predict refuses NaN: so do the rows explained
        ens.refuses_missing = type(model).__name__
    if check:
        return check_reading(reader, model, ens)
    return settle_reading(reader, model, ens) if settle else ens


def settle_reading(reader: Reader, model: Any, ens: TreeEnsemble) -> TreeEnsemble:
    """``ens`` (a reading of ``model``) complete: its base, where the reading left it for a model call (NaN), found
    by ``reader.settle``, once, in place (the ensembles made from it share its base).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees.readers.sklearn import SklearnReader
    >>> model = DecisionTreeRegressor(max_depth=1).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> settle_reading(SklearnReader(), model, read_with(SklearnReader(), model, check=False, settle=False)).settled
    True
    """
    if not ens.settled:
        with _SETTLING:
            if not ens.settled:
                reader.settle(model, ens)
    return ens


def check_reading(reader: Reader, model: Any, ens: TreeEnsemble) -> TreeEnsemble:
    """``ens``, once compared with the model's own raw output on rows that exercise every split (a reading with
    category maps is checked by its reader instead); a reading made with ``check=False`` is checked here later
    without reading the trees again.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees.readers.sklearn import SklearnReader
    >>> model = DecisionTreeRegressor(max_depth=2).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> ens = read_with(SklearnReader(), model, check=False)
    >>> check_reading(SklearnReader(), model, ens) is ens
    True
    """
    settle_reading(reader, model, ens)
    if not ens.category_maps:
        _check(reader, model, ens)
    return ens


def probe_rows(ens: TreeEnsemble, rng: np.random.Generator, rows: int = _CHECK_ROWS,
               missing: bool = True) -> np.ndarray:
    """Rows that exercise the ensemble's splits: every feature at a random split threshold of its own
    (just below or above it), a listed category, or (``missing``) NaN."""
    X = np.zeros((rows, ens.n_features))
    internal = np.flatnonzero(ens.feature >= 0)
    if internal.size == 0:
        return X
    pick = rng.integers(internal.size, size=(rows, ens.n_features))
    chosen = internal[pick]
    same = ens.feature[chosen] == np.arange(ens.n_features)[None, :]
    finite = np.isfinite(ens.threshold) & (np.abs(ens.threshold) < 1e30)   # (sentinel borders at +-inf or 3e38)
    thr = np.where(finite, ens.threshold, 0.0)[chosen]            # (scikit-learn puts some splits at inf)
    step = np.where(rng.random(chosen.shape) < 0.5, -1.0, 1.0) * np.maximum(np.abs(thr) * 1e-3, 1e-3)
    by_feature = np.zeros(ens.n_features)
    np.maximum.at(by_feature, ens.feature[internal], np.abs(np.where(finite, ens.threshold, 0.0)[internal]))
    X = np.where(same, thr + step, rng.standard_normal(chosen.shape) * (1.0 + by_feature))
    if ens.categorical is not None and ens.categorical.any():
        keys = np.concatenate([ens.cat_left, ens.cat_right])
        cat_feature = ens.feature[(keys >> 32).astype(np.int64)] if keys.size else np.zeros(0, np.int64)
        for f in np.unique(ens.feature[ens.categorical]):
            listed = (keys[cat_feature == f] & 0xFFFFFFFF).astype(float)
            options = np.append(np.unique(listed), [float(listed.max(initial=0) + 1)])
            X[:, f] = rng.choice(options, size=rows)
    if missing:
        X[rng.random(X.shape) < 0.1] = np.nan
    return X


def _check(reader: Reader, model: Any, ens: TreeEnsemble) -> None:
    rng = np.random.default_rng(0)
    X = probe_rows(ens, rng, missing=reader.check_missing)
    try:
        with warnings.catch_warnings():      # probe rows are numeric arrays: the model's feature-name warning
            warnings.simplefilter("ignore")  # is about our check, not about the user's data
            expected = reader.margin(model, X)
    except Exception:                        # noqa: BLE001 - the model refuses these rows (e.g. NaN): no check
        return
    got = ens.predict(X)
    if expected.shape != got.shape:
        raise ValueError(f"fairshare read {got.shape[1]} outputs from the {type(model).__name__}, but it predicts "
                         f"{expected.shape[1]}; this configuration is not supported")
    gap = np.abs(got - expected)
    tol = 1e-3 * (1.0 + np.abs(expected))
    if np.any(gap > tol):
        raise ValueError(f"fairshare's reading of this {type(model).__name__} does not reproduce its predictions "
                         f"(off by up to {float(gap.max()):.3g} on rows that exercise its splits); this "
                         "configuration is not supported, please report it. Explain the model with "
                         "fs.explain(model.predict, X, background=...) meanwhile")
