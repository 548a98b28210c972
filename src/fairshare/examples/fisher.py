"""Fisher embeddings: per-example gradients of the log-likelihood at the fitted parameters (closed forms for
scikit-learn's linear models; torch modules in :mod:`fairshare.examples.gradients`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .gradients import torch_embedding
from .linear import linear_embedding, linear_rows, parameters_of
from .projection import PROJECTIONS
from .rows import resolve_seed

__all__ = ["fisher_embedding", "parameters_of"]


def fisher_embedding(model: Any, X: Any, y: Any, *, log_likelihood: Any = None, projection: int | None = None,
                     seed: int | np.random.Generator | None = 0, batch_size: int = 256, projection_kind: str = "gaussian",
                     layers: Any = None) -> np.ndarray:
    """Per-example gradient of ``log p(y_i | x_i, theta)`` at the fitted ``theta``, one row per example.

    Closed forms for scikit-learn ``LogisticRegression`` (binary: ``(y - p) [x, 1]``; multinomial:
    ``(onehot(y) - softmax) outer [x, 1]``) and linear regressors of one output (a unit-variance Gaussian
    likelihood, the squared loss: ``(y - y_hat) [x, 1]``, each row's own whatever rows come with it;
    :mod:`fairshare.examples.linear`); other classifiers are refused; torch modules through ``torch.func``
    (``vmap`` of ``grad``), with ``log_likelihood(output, y)`` (default: log-softmax of the label
    for outputs with several columns, a unit-variance Gaussian otherwise), streamed: a batch of per-example
    gradients at a time (fewer examples per batch for larger networks), projected on the fly, so neither the
    gradient matrix nor the projection matrix is ever held whole.

    Parameters
    ----------
    X : rows (n, d) for scikit-learn models; for torch modules any inputs (n, ...) (images, sequences)
    projection : int, optional
        Project the gradients to this many dimensions (at most the number of parameters); inner products are
        preserved in expectation. Same ``seed``, same projection (a Generator or None: drawn once per call).
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
    seed = resolve_seed(seed)
    module = type(model).__module__
    if module.startswith("torch") or (hasattr(model, "parameters") and hasattr(model, "forward")):
        return torch_embedding(model, X, y, log_likelihood=log_likelihood, projection=projection, seed=seed,
                               batch_size=batch_size, kind=projection_kind, layers=layers)
    if layers is not None:
        raise ValueError("layers is for torch modules (the parameters of a scikit-learn model are all differentiated)")
    X_arr, labels = linear_rows(model, X, y)
    if projection is not None:
        _check_projection(projection, parameters_of(model).size)
    return _project(linear_embedding(model, X_arr, labels), projection, seed, projection_kind)


def _check_projection(projection: Any, n_params: int) -> None:
    if isinstance(projection, bool) or not isinstance(projection, (int, np.integer)):
        raise TypeError(f"projection must be an integer, got {type(projection).__name__}")
    if not 1 <= projection <= n_params:
        raise ValueError(f"projection must be in [1, {n_params}] (the number of parameters), got {projection}")


def _project(G: np.ndarray, projection: int | None, seed: int | None, kind: str = "gaussian") -> np.ndarray:
    if projection is None:
        return G
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
