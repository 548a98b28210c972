"""Shrinkage of estimated Shapley values toward the equal split, by their own standard errors (James-Stein).

Estimates that add up (efficiency) lie in the ``d - 1`` dimensional plane of sum ``v(N) - v(empty)``, whose
point of equal shares is known. The positive-part James-Stein estimator moves every value toward that point by
one factor ``c = max(0, 1 - (d - 3) s^2 / |phi - mean|^2)``, ``s^2`` the mean squared standard error in the
plane: where the errors are as large as the spread of the values (a noisy game at a small budget: an answer's
log-probability under a small language model, read from 64 coalitions), most of the spread is noise and ``c`` is
small; where the spread stands well above the errors, ``c`` is near 1 and the values are as estimated. For
Gaussian errors it has a lower expected squared error than the estimate it shrinks whenever ``d - 1 >= 3``;
it is biased toward equal shares, and the values still add up.
"""

from __future__ import annotations

import numpy as np

__all__ = ["james_stein"]


def james_stein(values: np.ndarray, stderr: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """``values`` and ``stderr`` (``(d, k)``) shrunk toward each output's mean value, and the factor of each output
    (1: unchanged; where ``d < 4`` or a standard error is not finite, nothing is shrunk). The standard errors are
    scaled by the same factor (the factor taken as fixed).

    Examples
    --------
    >>> v, s, c = james_stein(np.array([[3.0], [1.0], [-1.0], [1.0], [1.0]]), np.full((5, 1), 1.0))
    >>> c, v.ravel().round(3).tolist(), float(v.sum())
    ([0.6875], [2.375, 1.0, -0.375, 1.0, 1.0], 5.0)
    """
    values, stderr = np.asarray(values, dtype=float), np.asarray(stderr, dtype=float)
    d = values.shape[0]
    if d < 4 or not np.all(np.isfinite(stderr)):
        return values, stderr, [1.0] * values.shape[1]
    mean = values.mean(axis=0, keepdims=True)
    spread = np.sum((values - mean) ** 2, axis=0)
    noise = np.sum(stderr ** 2, axis=0) * (d - 3) / (d - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(spread > 0, np.clip(1.0 - noise / spread, 0.0, 1.0), 1.0)
    return mean + factor * (values - mean), stderr * factor, [round(float(f), 6) for f in factor]
