"""Accuracy metrics comparing estimated attributions with exact ones."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["relative_squared_error"]


def _as_values(x: Any) -> np.ndarray:
    return np.asarray(getattr(x, "values", x), dtype=float)


def relative_squared_error(estimate: Any, truth: Any) -> float:
    """``||estimate - truth||^2 / ||truth||^2`` (the papers' relative squared l2 error).

    Accepts arrays or :class:`~fairshare.Attribution` objects; multi-output values
    are compared over all entries.

    Examples
    --------
    >>> relative_squared_error([1.0, 2.0], [1.0, 1.0])
    0.5
    """
    est, tru = _as_values(estimate), _as_values(truth)
    if est.shape != tru.shape:
        raise ValueError(f"estimate has shape {est.shape} but truth has shape {tru.shape}")
    denom = float(np.sum(tru**2))
    if denom == 0.0:
        raise ValueError("truth is all zeros; the relative error is undefined")
    return float(np.sum((est - tru) ** 2) / denom)
