"""Rows as a model reads them: a table's columns matched by name to the model's features, numpy rows for a model
fitted on a DataFrame given its names by position (every door that calls a model on rows of a table)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .tables import aligned, model_columns, shared_dtypes, target_of

__all__ = ["aligned_rows", "number_columns"]


def aligned_rows(model: Any, X: Any, background: Any) -> tuple[Any, Any]:
    """``X`` and ``background`` with their columns matched by name to the model's features (numpy rows for a model
    fitted on a DataFrame take its names by position, as a frame; rows of another width than the model's refused
    naming ``X``).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LinearRegression
    >>> model = LinearRegression().fit(pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 1.0]}), [0.0, 1.0, 2.0])
    >>> X, bg = aligned_rows(model, np.array([[1.0, 2.0]]), None)
    >>> list(X.columns), bg
    (['a', 'b'], None)
    """
    reference, source = model_columns(model)
    width = len(reference) if reference is not None else getattr(target_of(model), "n_features_in_", None)
    width = width or None                             # a catboost model read back from a file says 0: not known
    if not hasattr(X, "columns") and isinstance(width, (int, np.integer)) and np.ndim(X) in (1, 2) and \
            np.shape(X)[-1] != width:                       # refused here, not by the model at its first call
        raise ValueError(f"X must have {width} columns (the model's features"
                         f"{': ' + str(reference[:20]) if reference is not None else ''}), got shape {np.shape(X)}")
    if reference is None and hasattr(X, "columns"):
        reference, source = [str(c) for c in X.columns], "the columns of X"
    if hasattr(X, "columns"):
        X = aligned(X, reference, "X", source)
    elif reference is not None and np.ndim(X) == 2 and np.shape(X)[1] == len(reference) and \
            source.startswith("the model"):
        import pandas as pd

        X = pd.DataFrame(np.asarray(X), columns=reference)
    if background is not None:
        if hasattr(background, "columns"):
            background = aligned(background, reference if reference is not None else
                                 [str(c) for c in background.columns], "background", source or "X")
        elif hasattr(X, "columns") and np.ndim(background) == 2 and np.shape(background)[1] == X.shape[1]:
            import pandas as pd

            frame = pd.DataFrame(np.asarray(background), columns=list(X.columns))
            background = frame.astype(dict(zip(X.columns, shared_dtypes(X, np.asarray(background)))))
    return X, background


def number_columns(rows: np.ndarray) -> np.ndarray:
    """Which columns of rows ``rows`` hold numbers ``(d,)`` (all of them unless the rows are objects: a pipeline's
    columns of words are not).

    Examples
    --------
    >>> number_columns(np.array([[1.0, "a"], [2, "b"]], dtype=object)).tolist()
    [True, False]
    """
    if rows.dtype != object:
        return np.ones(rows.shape[1], dtype=bool)
    out = np.ones(rows.shape[1], dtype=bool)
    for j in range(rows.shape[1]):
        try:
            rows[:, j].astype(float)
        except (TypeError, ValueError):
            out[j] = False
    return out
