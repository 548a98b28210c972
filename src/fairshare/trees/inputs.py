"""Rows for a tree ensemble, from whatever a user has: numpy, pandas (categoricals, nullable dtypes,
columns in another order), scipy.sparse, a tree library's own container (an xgboost ``DMatrix``), a single row.

The result is a float array ``(m, n_features)`` in the model's feature order, categorical
features as the model's category codes and NaN for missing values.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core.errors import FairshareWarning
from .._core.tables import aligned, is_missing
from .dense import dense_from_sparse
from .ensemble import TreeEnsemble
from .readers import category_coder, library_rows

__all__ = ["tree_rows"]


def _is_sparse(X: Any) -> bool:
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def _code_column(values: Any, categories: np.ndarray | None, name: str, column: str) -> np.ndarray:
    """Category codes of one column (NaN for missing or unknown categories)."""
    import pandas as pd

    series = pd.Series(values)
    if categories is None:
        if isinstance(series.dtype, pd.CategoricalDtype):
            codes = series.cat.codes.to_numpy().astype(float)
            return np.where(codes < 0, np.nan, codes)
        raise ValueError(f"{name} column {column!r} holds {series.dtype} values, but the model takes numbers there")
    lookup = {v: i for i, v in enumerate(categories.tolist())}
    raw = series.astype(object).tolist()
    out = np.array([lookup.get(v, np.nan) if not is_missing(v) else np.nan for v in raw], dtype=float)
    unseen = sorted({str(v) for v, code in zip(raw, out) if code != code and not is_missing(v)})
    if unseen:
        warnings.warn(f"{name} column {column!r} holds {', '.join(map(repr, unseen[:5]))}"
                      f"{' and more' if len(unseen) > 5 else ''}, {'a category' if len(unseen) == 1 else 'categories'}"
                      " the model never saw in training: read as missing (each split's way for a missing value)",
                      FairshareWarning, stacklevel=4)
    return out


def _from_frame(frame: Any, ens: TreeEnsemble, name: str) -> np.ndarray:
    import pandas as pd

    names = ens.feature_names
    if names is not None:
        frame = aligned(frame, names, name, "the model's features")             # the model's order
    if frame.shape[1] != ens.n_features:
        raise ValueError(f"{name} must have {ens.n_features} columns (the model's features), got {frame.shape[1]}")
    out = np.empty(frame.shape, dtype=float)
    by_hash = category_coder(ens.category_hash) if ens.category_hash else None
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        label = str(frame.columns[j])
        categorical = isinstance(col.dtype, pd.CategoricalDtype)
        if by_hash is not None and j in ens.category_maps:
            out[:, j] = by_hash(col.astype(object), ens.category_maps[j], name, label)
        elif j in ens.category_maps and (categorical or col.dtype == object or pd.api.types.is_string_dtype(col.dtype)
                                       or ens.category_maps[j].dtype == object):
            out[:, j] = _code_column(col, ens.category_maps[j], name, label)
        elif categorical:
            if ens.category_note is not None:
                raise ValueError(f"{name} column {label!r} is categorical: {ens.category_note}")
            out[:, j] = _code_column(col, None, name, label)
        else:
            try:
                out[:, j] = col.to_numpy(dtype=float, na_value=np.nan)
            except (TypeError, ValueError):
                raise ValueError(f"{name} column {label!r} holds {col.dtype} values that are not numbers") from None
    return out


def _by_name(own: Any, ens: TreeEnsemble, name: str) -> np.ndarray:
    """A library container's rows (already the model's numbers and category codes) named by its feature names:
    their columns in the model's order, matched by name as the library matches them."""
    if ens.feature_names is not None and own.shape[1] == ens.n_features:
        own = aligned(own, ens.feature_names, name, "the model's features")
    return own.to_numpy(dtype=float)


def _from_array(arr: np.ndarray, ens: TreeEnsemble, name: str) -> np.ndarray:
    numeric = arr.dtype.kind in "biuf"
    if numeric and not ens.category_hash and not any(c.dtype != object for c in ens.category_maps.values()):
        return arr.astype(float)          # numbers are codes, as the model's own predict reads them
    out = np.empty(arr.shape, dtype=float)
    by_hash = category_coder(ens.category_hash) if ens.category_hash else None
    for j in range(arr.shape[1]):
        cats = ens.category_maps.get(j)
        if cats is not None and by_hash is not None:
            out[:, j] = by_hash(arr[:, j], cats, name, str(j))
            continue
        if cats is not None and (not numeric or cats.dtype != object):
            out[:, j] = _code_column(arr[:, j], cats, name, str(j))      # the model's encoder would code them
            continue
        try:
            out[:, j] = arr[:, j].astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} column {j} holds values that are not numbers") from None
    return out


def _refuse_float32_overflow(arr: np.ndarray, ens: TreeEnsemble, name: str) -> None:
    """Refuse a finite value that float32 cannot hold (rounded to an infinity), as the model's own predict does."""
    with np.errstate(over="ignore"):
        beyond = np.isfinite(arr) & np.isinf(arr.astype(np.float32))
    if beyond.any():
        row, col = np.argwhere(beyond)[0]
        label = repr(ens.feature_names[col]) if ens.feature_names else str(col)
        raise ValueError(f"{name} holds {arr[row, col]:g} at row {row}, column {label}, beyond float32's range "
                         f"(+-{float(np.finfo(np.float32).max):.4g}), which the {ens.refuses_float32_overflow} "
                         "refuses (it reads rows as float32): scale or clip the value")


def tree_rows(X: Any, ens: TreeEnsemble, name: str = "X") -> np.ndarray:
    """Rows of ``X`` as floats in the model's feature order: ``(m, n_features)``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> frame = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 1.0]})
    >>> ens = read_ensemble(DecisionTreeRegressor().fit(frame, [0.0, 1.0, 2.0]))
    >>> tree_rows(frame[["b", "a"]], ens)          # columns aligned by name
    array([[0., 1.],
           [1., 0.],
           [2., 1.]])
    """
    own = library_rows(X, name)                  # a tree library's own container (a DMatrix: present values only)
    if own is not None:
        if ens.category_hash and ens.category_maps:          # catboost refuses numbers where it takes categories
            cats = [ens.feature_names[j] if ens.feature_names else j for j in sorted(ens.category_maps)]
            raise ValueError(f"{name} is a {type(X).__name__} of numbers, but the model reads {cats[:10]} as "
                             f"categories; pass the rows it was made from (a DataFrame or an array) instead")
        arr = _by_name(own, ens, name) if hasattr(own, "columns") else own
    elif _is_sparse(X):
        arr = dense_from_sparse(X, ens.sparse_missing, name)
    elif hasattr(X, "columns") and hasattr(X, "iloc"):
        arr = _from_frame(X, ens, name)
    elif hasattr(X, "index") and hasattr(X, "to_frame") and hasattr(X, "dtype"):      # a Series: one row
        arr = _from_frame(X.to_frame().T, ens, name)
    else:
        raw = np.asarray(X)
        if raw.ndim == 1:
            raw = raw[None, :]
        if raw.ndim != 2:
            raise ValueError(f"{name} must be a row or a 2-D array of rows, got shape {raw.shape}")
        if raw.shape[1] != ens.n_features:
            raise ValueError(f"{name} must have {ens.n_features} columns (the model's features), got shape "
                             f"{np.shape(X)}")
        arr = _from_array(raw, ens, name)
    if arr.ndim != 2 or arr.shape[1] != ens.n_features:
        raise ValueError(f"{name} must have {ens.n_features} columns (the model's features), got shape {arr.shape}")
    if ens.missing_value is not None:
        arr = np.where(arr == ens.missing_value, np.nan, arr)
    if np.isinf(arr).any():
        bad = np.argwhere(np.isinf(arr))[0]
        raise ValueError(f"{name} holds an infinite value (row {bad[0]}, column {bad[1]})")
    if ens.refuses_float32_overflow:
        _refuse_float32_overflow(arr, ens, name)
    if ens.refuses_missing and np.isnan(arr).any():
        row, col = np.argwhere(np.isnan(arr))[0]
        label = repr(ens.feature_names[col]) if ens.feature_names else str(col)
        raise ValueError(f"{name} holds a missing value (NaN) at row {row}, column {label}, and the "
                         f"{ens.refuses_missing} takes none: impute it or drop the row")
    return arr
