"""A pipeline's missing values, raw column by raw column: whether its steps fill the NaN of the rows (its imputers)
or leave them for a final step that takes none, found by passing the rows through the steps (no model call)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.missing import accepts_missing
from .pipeline_columns import transform_rows

__all__ = ["has_nan", "fills_missing", "refuse_unfilled"]


def has_nan(rows: Any) -> bool:
    """Whether transformed rows hold NaN (rows that are not all numbers: the final step decides, so True).

    Examples
    --------
    >>> has_nan(np.array([[1.0, np.nan]])), has_nan(np.array([[1.0, 2.0]]))
    (True, False)
    """
    dense = rows.toarray() if hasattr(rows, "toarray") else rows.to_numpy() if hasattr(rows, "to_numpy") else rows
    try:
        return bool(np.isnan(np.asarray(dense, dtype=float)).any())
    except (TypeError, ValueError):
        return True


def fills_missing(pipeline: Any, parts: list) -> bool:
    """Whether the pipeline takes rows ``parts`` (raw rows with NaN): its steps before the last leave no NaN in
    them (its imputers fill them, column by column), or its final step takes NaN; False where a step refuses them.

    Examples
    --------
    >>> from sklearn import compose, impute, linear_model, pipeline, preprocessing
    >>> prep = compose.make_column_transformer((impute.SimpleImputer(), [0]),
    ...                                        (preprocessing.FunctionTransformer(np.log1p), [1]))
    >>> pipe = pipeline.make_pipeline(prep, linear_model.LinearRegression()).fit(np.array([[0.0, 1.0], [2.0, 3.0]]),
    ...                                                                         [0.0, 1.0])
    >>> fills_missing(pipe, [np.array([[np.nan, 1.0]])]), fills_missing(pipe, [np.array([[1.0, np.nan]])])
    (True, False)
    """
    try:
        rows = [transform_rows(pipeline, r, "X") for r in parts if r is not None]
    except ValueError:
        return False
    return not any(has_nan(r) for r in rows) or accepts_missing(pipeline.steps[-1][1]) is not False


def refuse_unfilled(pipeline: Any, parts: dict[str, Any]) -> None:
    """Refuse the first NaN of a raw column whose NaN the pipeline's steps leave for a final step that takes none,
    naming the argument, the row and the column (each column with NaN is tried alone, the others' NaN filled with
    a value they hold); nothing is raised where rows are not a frame or no single column is to blame.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn import compose, impute, linear_model, pipeline
    >>> X = pd.DataFrame({"a": [0.0, 2.0], "b": [1.0, 3.0]})
    >>> prep = compose.make_column_transformer((impute.SimpleImputer(), ["a"]), remainder="passthrough")
    >>> pipe = pipeline.make_pipeline(prep, linear_model.LinearRegression()).fit(X, [0.0, 1.0])
    >>> refuse_unfilled(pipe, {"X": pd.DataFrame({"a": [np.nan, 1.0], "b": [np.nan, 2.0]})})
    Traceback (most recent call last):
    ...
    ValueError: X holds NaN at row 0, column 'b', which the pipeline's steps leave for its final step, and it takes no missing values (impute them first, or use a model that handles them)
    """
    import pandas as pd

    frames = {k: v for k, v in parts.items() if hasattr(v, "columns") and hasattr(v, "iloc")}
    if len(frames) != len([v for v in parts.values() if v is not None]):
        return
    both = pd.concat(list(frames.values()), ignore_index=True)
    present = {c: both[c].dropna().iloc[0] for c in both.columns if both[c].notna().any()}
    for name, frame in frames.items():
        for j, column in enumerate(frame.columns):
            missing = np.flatnonzero(frame[column].isna().to_numpy())
            if missing.size == 0:
                continue
            probe = frame.iloc[missing[:1]].copy()
            others = [c for c in frame.columns if c != column and c in present]
            probe[others] = probe[others].fillna({c: present[c] for c in others})
            if not fills_missing(pipeline, [probe]):
                raise ValueError(f"{name} holds NaN at row {int(missing[0])}, column {str(column)!r}, which the "
                                 "pipeline's steps leave for its final step, and it takes no missing values (impute "
                                 "them first, or use a model that handles them)")
