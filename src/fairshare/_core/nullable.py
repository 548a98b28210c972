"""pandas' nullable numeric columns (``Int64``, ``Float64``, ``boolean``, ``int64[pyarrow]``) read as numbers: ``<NA>``
as NaN, so that the checks of :mod:`fairshare._core.tables` and the model's rows see numbers, not ``pd.NA`` objects."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["numeric_extension", "frame_values", "numeric_dtype", "nullable_dtype"]


def numeric_extension(dtype: Any) -> np.dtype | None:
    """The numpy dtype of a pandas nullable numeric dtype, else None (numpy's own dtypes included).

    Examples
    --------
    >>> import pandas as pd
    >>> numeric_extension(pd.Int64Dtype()), numeric_extension(np.dtype(float)), numeric_extension(pd.StringDtype())
    (dtype('int64'), None, None)
    """
    inner = getattr(dtype, "numpy_dtype", None)
    if isinstance(dtype, np.dtype) or not isinstance(inner, np.dtype) or inner.kind not in "biuf":
        return None
    return inner


def frame_values(frame: Any) -> np.ndarray:
    """A DataFrame's values, its nullable numeric columns as numbers: ``<NA>`` read as NaN (the values of such a
    column without one keep their numpy dtype); every other column as pandas gives it.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"i": pd.array([1, None], dtype="Int64"), "f": [0.5, 1.5]})
    >>> frame_values(frame)
    array([[1. , 0.5],
           [nan, 1.5]])
    """
    inner = [numeric_extension(t) for t in frame.dtypes]
    if all(t is None for t in inner):
        return frame.to_numpy()
    columns = []
    for j, t in enumerate(inner):                       # one array operation a column
        column = frame.iloc[:, j]
        if t is None:
            columns.append(column.to_numpy())
        else:
            exact = t if not column.isna().any() else np.result_type(t, np.float64)
            columns.append(column.to_numpy(dtype=exact, na_value=np.nan))
    if frame.shape[0] == 0:
        return np.empty((0, frame.shape[1]), dtype=np.result_type(*columns))
    return np.column_stack(columns)


def numeric_dtype(dtype: Any) -> np.dtype | None:
    """The numpy dtype of a numeric column's dtype (numpy's own or pandas' nullable one), else None.

    Examples
    --------
    >>> import pandas as pd
    >>> numeric_dtype(pd.Float64Dtype()), numeric_dtype(np.dtype("int8")), numeric_dtype(np.dtype(object))
    (dtype('float64'), dtype('int8'), None)
    """
    if isinstance(dtype, np.dtype):
        return dtype if dtype.kind in "biuf" else None
    return numeric_extension(dtype)


def nullable_dtype(dtype: np.dtype) -> Any:
    """pandas' nullable dtype for the numbers of ``dtype`` (``Int64``, ``UInt8``, ``Float64``, ``boolean``).

    Examples
    --------
    >>> [str(nullable_dtype(np.dtype(t))) for t in ("int64", "uint8", "float64", "bool")]
    ['Int64', 'UInt8', 'Float64', 'boolean']
    """
    import pandas as pd

    if dtype.kind == "b":
        return pd.BooleanDtype()
    if dtype.kind == "f":
        return pd.Float32Dtype() if dtype.itemsize <= 4 else pd.Float64Dtype()
    return pd.api.types.pandas_dtype(f"{'U' if dtype.kind == 'u' else ''}Int{8 * dtype.itemsize}")
