"""Fisher embeddings: per-example gradients of the log-likelihood at the fitted parameters."""

from __future__ import annotations

from typing import Any

import numpy as np

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
                     seed: int | None = 0, batch_size: int = 256) -> np.ndarray:
    """Per-example gradient of ``log p(y_i | x_i, theta)`` at the fitted ``theta``, one row per example.

    Closed forms for scikit-learn ``LogisticRegression`` (binary: ``(y - p) [x, 1]``; multinomial:
    ``(onehot(y) - softmax) outer [x, 1]``) and linear regressors (Gaussian likelihood with the
    residual variance: ``(y - y_hat) / sigma^2 [x, 1]``); torch modules through ``torch.func``
    (``vmap`` of ``grad``), with ``log_likelihood(output, y)`` (default: log-softmax of the label
    for outputs with several columns, a unit-variance Gaussian otherwise).

    Parameters
    ----------
    projection : int, optional
        Project the gradients onto this many random Gaussian directions (scaled by
        ``1/sqrt(projection)``; inner products are preserved in expectation), for models with many
        parameters. Same ``seed``, same projection.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.default_rng(0).normal(size=(50, 3)); y = (X[:, 0] > 0).astype(int)
    >>> fisher_embedding(LogisticRegression().fit(X, y), X, y).shape
    (50, 4)
    """
    X_arr = np.asarray(getattr(X, "values", X), dtype=float)
    y_arr = np.asarray(getattr(y, "values", y))
    if X_arr.ndim != 2 or y_arr.shape[0] != X_arr.shape[0]:
        raise ValueError(f"X must be 2-D with one label per row; got X {X_arr.shape} and y {y_arr.shape}")
    module = type(model).__module__
    if module.startswith("torch") or (hasattr(model, "parameters") and hasattr(model, "forward")):
        return _torch_embedding(model, X_arr, y_arr, log_likelihood, projection, seed, batch_size)
    from sklearn.linear_model import LogisticRegression

    intercept = bool(getattr(model, "fit_intercept", True))
    Xa = _augment(X_arr, intercept)
    if isinstance(model, LogisticRegression):
        classes = list(model.classes_)
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
    return _project(G, projection, seed)


def _project(G: np.ndarray, projection: int | None, seed: int | None) -> np.ndarray:
    if projection is None:
        return G
    if projection < 1:
        raise ValueError(f"projection must be >= 1, got {projection}")
    R = np.random.default_rng(seed).standard_normal((G.shape[1], projection)) / np.sqrt(projection)
    return G @ R


def _torch_embedding(model: Any, X: np.ndarray, y: np.ndarray, log_likelihood: Any, projection: int | None,
                     seed: int | None, batch_size: int) -> np.ndarray:
    import torch
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}
    names = list(params)
    sizes = [params[k].numel() for k in names]
    P = int(sum(sizes))
    R = None
    if projection is not None:
        if projection < 1:
            raise ValueError(f"projection must be >= 1, got {projection}")
        gen = torch.Generator().manual_seed(int(seed or 0))
        R = torch.randn(P, projection, generator=gen, dtype=torch.float64) / np.sqrt(projection)

    def loglik(p: dict, x: Any, target: Any) -> Any:
        out = functional_call(model, p, (x.unsqueeze(0),)).squeeze(0)
        if log_likelihood is not None:
            return log_likelihood(out, target)
        if out.ndim >= 1 and out.shape[-1] > 1:
            onehot = (torch.arange(out.shape[-1]) == target.long()).to(out.dtype)     # vmap-safe one-hot
            return (torch.log_softmax(out, dim=-1) * onehot).sum()
        return -0.5 * (out.reshape(()) - target.to(out.dtype)) ** 2

    per_example = vmap(grad(loglik), in_dims=(None, 0, 0))
    was_training = model.training
    model.eval()
    blocks = []
    try:
        for start in range(0, X.shape[0], batch_size):
            xb = torch.as_tensor(X[start:start + batch_size], dtype=next(iter(params.values())).dtype)
            yb = torch.as_tensor(y[start:start + batch_size])
            g = per_example(params, xb, yb)
            flat = torch.cat([g[k].reshape(g[k].shape[0], -1) for k in names], dim=1).to(torch.float64)
            blocks.append((flat @ R if R is not None else flat).numpy())
    finally:
        model.train(was_training)
    return np.concatenate(blocks)
