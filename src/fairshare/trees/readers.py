"""Which models are tree models, and reading them (each library's reader in ``read_*.py``).

Every ensemble read is checked against the model's own prediction on rows that exercise its
splits (each threshold from both sides, categories, missing values): a configuration a reader
gets wrong raises a clear error instead of returning values that do not add up.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .ensemble import TreeEnsemble

__all__ = ["read_ensemble", "is_tree_model", "model_margin"]

_LIBRARIES = ("xgboost", "lightgbm", "sklearn", "catboost")
_CHECK_ROWS = 48


def _library(model: Any) -> str | None:
    """The library a model (or the class it derives from) comes from."""
    for cls in type(model).__mro__:
        module = cls.__module__
        for lib in _LIBRARIES:
            if module == lib or module.startswith(lib + "."):
                return lib
    return None


def is_tree_model(model: Any) -> bool:
    """Whether ``model`` is of a tree family fairshare reads (it may still be refused when read, with the reason).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from sklearn.linear_model import LinearRegression
    >>> is_tree_model(DecisionTreeRegressor()), is_tree_model(LinearRegression()), is_tree_model(len)
    (True, False, False)
    """
    if isinstance(model, TreeEnsemble):
        return True
    lib = _library(model)
    if lib == "sklearn":
        from .read_sklearn import is_sklearn_tree_model

        return is_sklearn_tree_model(model)
    if lib == "xgboost":
        params = getattr(model, "get_params", lambda: {})() if hasattr(model, "get_booster") else {}
        return params.get("booster") != "gblinear" and (hasattr(model, "get_booster") or
                                                         type(model).__name__ == "Booster")
    if lib == "lightgbm":
        return hasattr(model, "booster_") or type(model).__name__ == "Booster" or hasattr(model, "fit")
    if lib == "catboost":
        return hasattr(model, "save_model")
    return False


def model_margin(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The model's own raw output (what its ensemble reproduces) as a function of numeric rows."""
    lib = _library(model)
    if lib == "xgboost":
        from .read_xgboost import xgboost_margin

        return lambda X: xgboost_margin(model, X)
    if lib == "lightgbm":
        from .read_lightgbm import lightgbm_margin

        return lambda X: lightgbm_margin(model, X)
    if lib == "catboost":
        from .read_catboost import catboost_margin

        return lambda X: catboost_margin(model, X)
    from .read_sklearn import sklearn_raw_output

    return lambda X: sklearn_raw_output(model, X)


def _read(model: Any) -> TreeEnsemble:
    lib = _library(model)
    if lib == "xgboost":
        from .read_xgboost import read_xgboost

        return read_xgboost(model)
    if lib == "lightgbm":
        from .read_lightgbm import read_lightgbm

        return read_lightgbm(model)
    if lib == "sklearn":
        from .read_sklearn import read_sklearn

        return read_sklearn(model)
    if lib == "catboost":
        from .read_catboost import read_catboost

        return read_catboost(model)
    raise TypeError(f"model must be an xgboost, lightgbm, catboost or scikit-learn tree model, got "
                    f"{type(model).__name__}")


def _not_fitted(model: Any, exc: Exception) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return "not fitted" in text or "notfitted" in text or "need to call fit" in text or "no booster" in text


def read_ensemble(model: Any, check: bool = True) -> TreeEnsemble:
    """Read an xgboost, lightgbm, catboost or scikit-learn tree model into one flat representation.

    The ensemble reproduces the model's raw output: the margin for xgboost, lightgbm, catboost
    and gradient boosting, the prediction for regressors, class probabilities for scikit-learn
    tree, forest and bagging classifiers, the average path length for IsolationForest.
    ``check`` compares it with the model's own prediction on rows that exercise every split.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.arange(20.0).reshape(10, 2); y = X[:, 0] ** 2
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=2).fit(X, y))
    >>> np.allclose(ens.predict(X)[:, 0], DecisionTreeRegressor(max_depth=2).fit(X, y).predict(X))
    True
    """
    if isinstance(model, TreeEnsemble):
        return model
    if _library(model) is None or (_library(model) == "sklearn" and not is_tree_model(model)):
        raise TypeError(f"model must be an xgboost, lightgbm, catboost or scikit-learn tree model, got "
                        f"{type(model).__name__}")
    try:
        ens = _read(model)
    except Exception as exc:                 # library errors: say which model and why, keep the cause
        if _not_fitted(model, exc):
            raise ValueError(f"the {type(model).__name__} is not fitted; fit it before explaining it") from exc
        if isinstance(exc, (ValueError, TypeError)):
            raise
        raise ValueError(f"could not read the {type(model).__name__} as a tree ensemble: "
                         f"{type(exc).__name__}: {exc}") from exc
    if check and not ens.category_maps:
        _check(model, ens)
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


def _check(model: Any, ens: TreeEnsemble) -> None:
    lib = _library(model)
    rng = np.random.default_rng(0)
    X = probe_rows(ens, rng, missing=lib in ("xgboost", "lightgbm"))
    try:
        with warnings.catch_warnings():      # probe rows are numeric arrays: the model's feature-name warning
            warnings.simplefilter("ignore")  # is about our check, not about the user's data
            expected = model_margin(model)(X)
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
