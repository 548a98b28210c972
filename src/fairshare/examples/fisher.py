"""Fisher embeddings: per-example gradients of the log-likelihood at the fitted parameters (closed forms for
scikit-learn's linear models; torch modules in :mod:`fairshare.examples.gradients`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .gradients import torch_embedding
from .projection import PROJECTIONS

__all__ = ["fisher_embedding", "parameters_of"]


def _augment(X: np.ndarray, intercept: bool) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))]) if intercept else X


def parameters_of(model: Any) -> np.ndarray:
    """The flattened parameters in the order of :func:`fisher_embedding`'s columns (linear models)."""
    coef = np.atleast_2d(np.asarray(model.coef_, dtype=float))
    icpt = np.atleast_1d(np.asarray(getattr(model, "intercept_", 0.0), dtype=float))
    if getattr(model, "fit_intercept", True):
        return np.hstack([coef, icpt.reshape(-1, 1)]).ravel()
    return coef.ravel()


def fisher_embedding(model: Any, X: Any, y: Any, *, log_likelihood: Any = None, projection: int | None = None,
                     seed: int | None = 0, batch_size: int = 256, projection_kind: str = "gaussian",
                     layers: Any = None) -> np.ndarray:
    """Per-example gradient of ``log p(y_i | x_i, theta)`` at the fitted ``theta``, one row per example.

    Closed forms for scikit-learn ``LogisticRegression`` (binary: ``(y - p) [x, 1]``; multinomial:
    ``(onehot(y) - softmax) outer [x, 1]``) and linear regressors (Gaussian likelihood with the
    residual variance: ``(y - y_hat) / sigma^2 [x, 1]``); torch modules through ``torch.func``
    (``vmap`` of ``grad``), with ``log_likelihood(output, y)`` (default: log-softmax of the label
    for outputs with several columns, a unit-variance Gaussian otherwise), streamed: a batch of per-example
    gradients at a time (fewer examples per batch for larger networks), projected on the fly, so neither the
    gradient matrix nor the projection matrix is ever held whole.

    Parameters
    ----------
    X : rows (n, d) for scikit-learn models; for torch modules any inputs (n, ...) (images, sequences)
    projection : int, optional
        Project the gradients to this many dimensions (at most the number of parameters); inner products are
        preserved in expectation. Same ``seed``, same projection.
    projection_kind : "gaussian" (default), "rademacher" or "countsketch" (:mod:`fairshare.examples.projection`)
    layers : torch modules: None (every parameter that requires a gradient) or names of submodules or parameters
        (``model.named_modules()`` / ``named_parameters()``) whose parameters alone are differentiated
    batch_size : most examples per batch of gradients

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.default_rng(0).normal(size=(50, 3)); y = (X[:, 0] > 0).astype(int)
    >>> fisher_embedding(LogisticRegression().fit(X, y), X, y).shape
    (50, 4)
    """
    if projection_kind not in PROJECTIONS:
        raise ValueError(f"projection_kind must be one of {', '.join(PROJECTIONS)}, got {projection_kind!r}")
    module = type(model).__module__
    if module.startswith("torch") or (hasattr(model, "parameters") and hasattr(model, "forward")):
        return torch_embedding(model, X, y, log_likelihood=log_likelihood, projection=projection, seed=seed,
                               batch_size=batch_size, kind=projection_kind, layers=layers)
    if layers is not None:
        raise ValueError("layers is for torch modules (the parameters of a scikit-learn model are all differentiated)")
    X_arr = np.asarray(getattr(X, "values", X), dtype=float)
    y_arr = np.asarray(getattr(y, "values", y))
    if X_arr.ndim != 2 or y_arr.shape[0] != X_arr.shape[0]:
        raise ValueError(f"X must be 2-D with one label per row; got X {X_arr.shape} and y {y_arr.shape}")
    from sklearn.linear_model import LogisticRegression

    intercept = bool(getattr(model, "fit_intercept", True))
    Xa = _augment(X_arr, intercept)
    if isinstance(model, LogisticRegression):
        classes = list(model.classes_)
        unknown = [v for v in y_arr if v not in classes]
        if unknown:
            raise ValueError(f"y holds the label {unknown[0]}, which is none of the model's classes "
                             f"{[c.item() if hasattr(c, 'item') else c for c in classes]}")
        index = np.array([classes.index(v) for v in y_arr])
        proba = model.predict_proba(X_arr)
        if len(classes) == 2:
            G = (index - proba[:, 1])[:, None] * Xa
        else:
            residual = np.eye(len(classes))[index] - proba                       # (n, K)
            G = (residual[:, :, None] * Xa[:, None, :]).reshape(X_arr.shape[0], -1)
    elif hasattr(model, "coef_") and hasattr(model, "predict"):
        residual = y_arr.astype(float) - model.predict(X_arr)
        sigma2 = max(float(np.mean(residual**2)), 1e-12)
        G = (residual / sigma2)[:, None] * Xa
    else:
        raise TypeError(f"fisher_embedding supports scikit-learn LogisticRegression, linear regressors and torch "
                        f"modules, got {type(model).__name__}")
    return _project(G, projection, seed, projection_kind)


def _project(G: np.ndarray, projection: int | None, seed: int | None, kind: str = "gaussian") -> np.ndarray:
    if projection is None:
        return G
    if isinstance(projection, bool) or not isinstance(projection, (int, np.integer)):
        raise TypeError(f"projection must be an integer, got {type(projection).__name__}")
    if not 1 <= projection <= G.shape[1]:
        raise ValueError(f"projection must be in [1, {G.shape[1]}] (the number of parameters), got {projection}")
    rng = np.random.default_rng(seed)
    if kind == "countsketch":
        bucket, sign = rng.integers(0, projection, G.shape[1]), rng.integers(0, 2, G.shape[1]) * 2.0 - 1.0
        out = np.zeros((G.shape[0], projection))
        np.add.at(out.T, bucket, (G * sign).T)
        return out
    if kind == "rademacher":
        return G @ ((rng.integers(0, 2, (G.shape[1], projection)) * 2.0 - 1.0) / np.sqrt(projection))
    R = rng.standard_normal((G.shape[1], projection)) / np.sqrt(projection)
    return G @ R
