"""Closed forms for scikit-learn's linear models: per-example log-likelihood gradients and the Hessian of the mean
training objective, with the L2 part of the model's own penalty (an L1 part has no curvature).

A regressor's likelihood is a unit-variance Gaussian, ``log p(y | x) = -(y - y_hat)^2 / 2`` (the squared loss, as
for a torch module with one output): a row's gradient ``(y - y_hat) [x, 1]`` is its own, whichever rows are
embedded with it. A Gaussian of variance ``s^2`` scales every embedding by ``1 / s^2``, the Hessian by ``1 / s^2``
and influence by ``1 / s^2`` alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.tables import aligned, model_columns
from .rows import check_rows, host_array

__all__ = ["linear_embedding", "linear_hessian", "parameters_of", "linear_rows"]


def _augment(X: np.ndarray, intercept: bool) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))]) if intercept else X


def parameters_of(model: Any) -> np.ndarray:
    """The flattened parameters in the order of :func:`fisher_embedding`'s columns (linear models).

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> parameters_of(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])).round(6).tolist()
    [2.0, 1.0]
    """
    coef = np.atleast_2d(np.asarray(model.coef_, dtype=float))
    icpt = np.atleast_1d(np.asarray(getattr(model, "intercept_", 0.0), dtype=float))
    if getattr(model, "fit_intercept", True):
        return np.hstack([coef, icpt.reshape(-1, 1)]).ravel()
    return coef.ravel()


def _kind(model: Any) -> str:
    """``"logistic"`` or ``"regressor"``; other models (classifiers other than LogisticRegression, whose loss is
    not a log-likelihood of their classes, and regressors of several outputs) are refused."""
    from sklearn.base import is_classifier
    from sklearn.linear_model import LogisticRegression

    if isinstance(model, LogisticRegression):
        return "logistic"
    if is_classifier(model) or not (hasattr(model, "coef_") and hasattr(model, "predict")):
        raise TypeError(f"fisher_embedding supports scikit-learn LogisticRegression, linear regressors and torch "
                        f"modules, got {type(model).__name__} (a classifier's embedding is the gradient of the log "
                        "of its class probabilities, which only LogisticRegression gives)")
    if np.ndim(model.coef_) > 1 and np.shape(model.coef_)[0] > 1:
        raise ValueError(f"model: {type(model).__name__} predicts {np.shape(model.coef_)[0]} outputs; "
                         "fisher_embedding takes regressors of one output")
    return "regressor"


def linear_rows(model: Any, X: Any, y: Any, x_name: str = "X", y_name: str = "y") -> tuple[Any, np.ndarray]:
    """``X`` (a float array, or a DataFrame with its columns in the order of the model's features, matched by name)
    and ``y`` as labels, refused (naming them) before any model call: no rows, NaN or inf, the wrong width or
    columns, labels missing, not one per row, or none of a classifier's classes."""
    kind = _kind(model)
    check_rows(X, y, x_name, y_name, n_features=getattr(model, "n_features_in_", None))
    names, source = model_columns(model)
    if names is not None and hasattr(X, "columns"):
        X_arr = aligned(X, names, x_name, source).astype(float)
    else:
        X_arr = np.asarray(getattr(X, "values", X), dtype=float)
    labels = host_array(y)
    if kind == "logistic":
        classes = list(model.classes_)
        unknown = [v for v in labels if v not in classes]
        if unknown:
            raise ValueError(f"{y_name} holds the label {unknown[0]}, which is none of the model's classes "
                             f"{[c.item() if hasattr(c, 'item') else c for c in classes]}")
    elif labels.dtype.kind not in "biuf":
        raise TypeError(f"{y_name} must hold numbers (a regressor's targets), got dtype {labels.dtype}")
    return X_arr, labels


def linear_embedding(model: Any, X: Any, y: np.ndarray) -> np.ndarray:
    """Per-example gradients of ``log p(y_i | x_i)`` of rows already checked by :func:`linear_rows`."""
    Xa = _augment(np.asarray(X, dtype=float), bool(getattr(model, "fit_intercept", True)))
    if _kind(model) == "regressor":
        residual = y.astype(float) - np.ravel(model.predict(X))
        return residual[:, None] * Xa
    classes = list(model.classes_)
    index = np.array([classes.index(v) for v in y])
    proba = model.predict_proba(X)
    if len(classes) == 2:
        return (index - proba[:, 1])[:, None] * Xa
    residual = np.eye(len(classes))[index] - proba                       # (n, K)
    return (residual[:, :, None] * Xa[:, None, :]).reshape(X.shape[0], -1)


def _l2_strength(model: Any, N: int) -> float:
    """The coefficient ``c`` of ``c / 2 ||w||^2`` in the model's training objective divided by its number of rows
    (the mean loss plus the penalty); the intercept is never penalized."""
    from sklearn.linear_model import (ElasticNet, ElasticNetCV, LassoCV, LinearRegression, LogisticRegression,
                                      Ridge, RidgeCV, SGDRegressor)

    if isinstance(model, LogisticRegression):                 # C * sum(loss) + (1 - l1_ratio) / 2 ||w||^2 + ...
        penalty = getattr(model, "penalty", "deprecated")
        ratio = {"l2": 0.0, "l1": 1.0, None: 1.0, "none": 1.0}.get(penalty, getattr(model, "l1_ratio", 0.0) or 0.0)
        return 0.0 if penalty in (None, "none") else (1.0 - float(ratio)) / (float(model.C) * N)
    if isinstance(model, (Ridge, RidgeCV)):                     # ||y - Xw||^2 + alpha ||w||^2
        return float(np.mean(getattr(model, "alpha_", model.alpha))) / N
    if isinstance(model, (ElasticNet, ElasticNetCV, LassoCV)):  # mean / 2 + alpha (1 - l1_ratio) / 2 ||w||^2
        ratio = getattr(model, "l1_ratio_", getattr(model, "l1_ratio", 1.0))
        return float(getattr(model, "alpha_", getattr(model, "alpha", 0.0))) * (1.0 - float(ratio))
    if isinstance(model, SGDRegressor) and model.loss == "squared_error":
        ratio = {"l2": 0.0, "elasticnet": model.l1_ratio}.get(model.penalty, 1.0)
        return float(model.alpha) * (1.0 - float(ratio))
    if isinstance(model, LinearRegression) or not hasattr(model, "alpha"):
        return 0.0
    raise TypeError(f"no Hessian for {type(model).__name__}: its loss or penalty is not the squared loss with a "
                    "known L2 part; use hessian='fisher' or 'identity'")


def linear_hessian(model: Any, X: Any) -> np.ndarray:
    """Hessian of the mean training objective at the fitted parameters, in :func:`linear_embedding`'s order, of
    rows already checked by :func:`linear_rows`."""
    N, d = X.shape
    intercept = bool(getattr(model, "fit_intercept", True))
    Xa = _augment(np.asarray(X, dtype=float), intercept)
    p = Xa.shape[1]
    penalized = np.r_[np.ones(d), np.zeros(1)] if intercept else np.ones(d)
    if _kind(model) == "regressor":
        return Xa.T @ Xa / N + np.diag(penalized) * _l2_strength(model, N)
    P = model.predict_proba(X)
    if P.shape[1] == 2:
        H = (Xa * (P[:, 1] * P[:, 0])[:, None]).T @ Xa / N
    else:
        K = P.shape[1]
        H = np.zeros((K * p, K * p))
        for a in range(K):
            for b in range(K):
                w = P[:, a] * ((a == b) - P[:, b])
                H[a * p:(a + 1) * p, b * p:(b + 1) * p] = (Xa * w[:, None]).T @ Xa / N
    blocks = 1 if P.shape[1] == 2 else P.shape[1]
    return H + np.diag(np.tile(penalized, blocks)) * _l2_strength(model, N)


def softmax_gauge(model: Any, n_params: int) -> np.ndarray | None:
    """Orthonormal directions along which a multinomial LogisticRegression's objective is flat (adding one number
    to a column of every class's parameters leaves the probabilities as they are; the intercepts' column always,
    every column without an L2 penalty), as columns ``(n_params, m)``; None for other models. Every embedding is
    orthogonal to them, so the Hessian plus any multiple of ``U U^T`` weighs them as its pseudo-inverse does.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.default_rng(0).normal(size=(30, 2)); y = np.arange(30) % 3
    >>> softmax_gauge(LogisticRegression().fit(X, y), 9).shape
    (9, 1)
    """
    from sklearn.linear_model import LogisticRegression

    if not isinstance(model, LogisticRegression) or len(model.classes_) < 3:
        return None
    K = len(model.classes_)
    p = n_params // K
    intercept = bool(getattr(model, "fit_intercept", True))
    flat = [p - 1] if intercept else []
    if _l2_strength(model, 1) == 0.0:
        flat = list(range(p))
    U = np.zeros((n_params, len(flat)))
    for col, j in enumerate(flat):
        U[j::p, col] = 1.0 / np.sqrt(K)
    return U if flat else None
