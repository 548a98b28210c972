"""Rows of a pandas DataFrame (or one Series): columns matched to the model's features by name, so a frame whose
columns come in another order gets the same value per feature; rows named by the frame's index; strings and
categories passed to the model as they are."""

from __future__ import annotations

from typing import Any

from .table import TableInput

__all__ = ["FrameInput"]


class FrameInput(TableInput):
    """A DataFrame's rows (a Series is one row), explained as :class:`~.table.TableInput` explains rows, with the
    frame's column names as the players and its index as the rows' names.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}, index=["x", "y"])
    >>> FrameInput.accepts(None, X, None), FrameInput.accepts(None, X.to_numpy(), None)
    (True, False)
    """

    kind = "frame"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        series = hasattr(X, "to_frame") and hasattr(X, "index") and not hasattr(X, "columns")
        return hasattr(X, "columns") or series
