"""The checks every example door runs on its rows, labels and seed before any model call or gradient: each refusal
names the argument (``X_train``, ``y_test``, ``seed``...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import check_rng
from .._core.arrays import to_numpy
from .._core.seeds import integer_seed
from .._core.tables import check_finite, check_labels

__all__ = ["check_rows", "check_embeddings", "host_array", "resolve_seed"]


def host_array(y: Any) -> np.ndarray:
    """``y`` (numpy, pandas, a list, a torch tensor: :func:`~fairshare._core.arrays.to_numpy`) as a numpy array.

    Examples
    --------
    >>> host_array([0, 1]).tolist()
    [0, 1]
    """
    y = to_numpy(y)
    return np.asarray(getattr(y, "values", y))


def check_rows(X: Any, y: Any, x_name: str = "X", y_name: str = "y", *, n_features: int | None = None,
               one_label: bool = True) -> int:
    """The number of rows of ``X``, refused where there are none, where a float input holds NaN or inf, where
    ``n_features`` (the model's width) differs from ``X``'s, or where ``y`` does not hold one finite label per row
    (``one_label``: a 1-D ``y``; otherwise any shape whose first axis is the rows).

    Examples
    --------
    >>> check_rows(np.zeros((3, 2)), [0, 1, 1], "X_test", "y_test")
    3
    >>> check_rows(np.zeros((3, 2)), [0, 1], "X_test", "y_test")
    Traceback (most recent call last):
    ...
    ValueError: y_test must hold one label per row of X_test (3 rows), got shape (2,)
    """
    values = host_array(X)
    if values.ndim == 0 or values.shape[0] == 0:
        raise ValueError(f"{x_name} holds no rows (shape {values.shape}): give at least one example")
    n = int(values.shape[0])
    if n_features is not None and (values.ndim != 2 or values.shape[1] != n_features):
        raise ValueError(f"{x_name} must have shape (n, {n_features}) (the model's {n_features} features), got "
                         f"shape {values.shape}")
    if values.dtype.kind in "fc" or values.dtype == object and values.ndim == 2:
        check_finite(values.reshape(n, -1), x_name, None, allow_nan=False)
    labels = host_array(y)
    if labels.ndim == 0 or labels.shape[0] != n or (one_label and labels.ndim != 1):
        raise ValueError(f"{y_name} must hold one label per row of {x_name} ({n} rows), got shape {labels.shape}")
    check_labels(labels, y_name)
    return n


def resolve_seed(seed: Any) -> int:
    """The projection's seed as one integer: an int as it is, a Generator, SeedSequence or None (fresh) drawn once,
    so every set one call embeds is projected by the same matrix.

    Examples
    --------
    >>> resolve_seed(7), resolve_seed(np.random.default_rng(0)) == resolve_seed(np.random.default_rng(0))
    (7, True)
    """
    rng = check_rng(seed)                                  # refuses a negative int or another type, naming seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return int(seed)
    return integer_seed(rng, 2**63)


def check_embeddings(train: Any, test: Any) -> None:
    """Embeddings refused (naming ``train`` or ``test``) where they hold NaN or inf or their shapes do not match,
    before any kernel is fitted to them.

    Examples
    --------
    >>> check_embeddings(np.zeros((4, 2)), np.zeros((1, 3)))
    Traceback (most recent call last):
    ...
    ValueError: train and test embeddings must be 2-D with the same width, got (4, 2) and (1, 3)
    """
    arrays = {}
    for label, arr in (("train", train), ("test", test)):
        try:
            a = np.asarray(arr, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{label} embeddings must be numbers (an array of rows), got "
                            f"{type(arr).__name__}") from None
        if a.size and not np.all(np.isfinite(a)):
            bad = np.flatnonzero(~np.all(np.isfinite(a.reshape(a.shape[0], -1)), axis=1))
            raise ValueError(f"{label} embeddings hold NaN or inf in {bad.size} row(s) (first: {bad[:5].tolist()}); "
                             "a Fisher embedding is NaN when the model's probabilities are 0 or 1 or its "
                             "inputs are NaN")
        arrays[label] = a
    G, H = arrays["train"], arrays["test"]
    if G.ndim != 2 or H.ndim != 2 or G.shape[1] != H.shape[1]:
        raise ValueError(f"train and test embeddings must be 2-D with the same width, got {G.shape} and {H.shape}")
