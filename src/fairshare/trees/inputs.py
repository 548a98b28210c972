"""Rows for a tree ensemble, from whatever a user has: numpy, pandas (categoricals, nullable dtypes,
columns in another order), scipy.sparse, an xgboost ``DMatrix``, a single row.

The result is a float array ``(m, n_features)`` in the model's feature order, categorical
features as the model's category codes and NaN for missing values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.tables import aligned
from .catboost_hash import category_hash
from .ensemble import TreeEnsemble

__all__ = ["tree_rows"]

_DENSE_LIMIT = 1 << 30          # cells: refuse to densify a sparse input larger than 8 GB of float64


def _is_sparse(X: Any) -> bool:
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def _dense_from_sparse(X: Any, absent_missing: bool, name: str) -> np.ndarray:
    m, n = X.shape
    if m * n > _DENSE_LIMIT:
        raise ValueError(f"{name} is a sparse {m} x {n} matrix; explain it in slices of rows (at most "
                         f"{_DENSE_LIMIT // max(n, 1)} rows at a time)")
    csr = X.tocsr()
    out = np.full((m, n), np.nan if absent_missing else 0.0)
    rows = np.repeat(np.arange(m), np.diff(csr.indptr))
    out[rows, csr.indices] = csr.data
    return out


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
    out = np.array([lookup.get(v, np.nan) if not _is_missing(v) else np.nan for v in raw], dtype=float)
    return out


def _hash_codes(values: Any, hashes: np.ndarray, name: str, column: str) -> np.ndarray:
    """catboost category codes of one column: the position of each value's hash among the hashes the model
    splits on, ``len(hashes)`` (in no split's set) for any other value. Each distinct value is hashed once."""
    import pandas as pd

    inverse, distinct = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    if np.any(inverse < 0):
        raise ValueError(f"{name} column {column!r} has a missing value; catboost takes no missing categories "
                         "(it refuses them too): fill them with a string, e.g. 'none'")
    position = {int(h): i for i, h in enumerate(hashes.tolist())}
    try:
        codes = np.array([position.get(category_hash(v), len(hashes)) for v in distinct], dtype=float)
    except ValueError as exc:
        raise ValueError(f"{name} column {column!r}: {exc}") from None
    return codes[inverse] if inverse.size else np.zeros(0)


def _is_missing(v: Any) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _from_frame(frame: Any, ens: TreeEnsemble, name: str) -> np.ndarray:
    import pandas as pd

    names = ens.feature_names
    if names is not None:
        frame = aligned(frame, names, name, "the model's features")             # the model's order
    if frame.shape[1] != ens.n_features:
        raise ValueError(f"{name} must have {ens.n_features} columns (the model's features), got {frame.shape[1]}")
    out = np.empty(frame.shape, dtype=float)
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        label = str(frame.columns[j])
        categorical = isinstance(col.dtype, pd.CategoricalDtype)
        if ens.category_hash and j in ens.category_maps:
            out[:, j] = _hash_codes(col.astype(object), ens.category_maps[j], name, label)
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


def _from_array(arr: np.ndarray, ens: TreeEnsemble, name: str) -> np.ndarray:
    numeric = arr.dtype.kind in "biuf"
    if numeric and not ens.category_hash and not any(c.dtype != object for c in ens.category_maps.values()):
        return arr.astype(float)          # numbers are codes, as the model's own predict reads them
    out = np.empty(arr.shape, dtype=float)
    for j in range(arr.shape[1]):
        cats = ens.category_maps.get(j)
        if cats is not None and ens.category_hash:
            out[:, j] = _hash_codes(arr[:, j], cats, name, str(j))
            continue
        if cats is not None and (not numeric or cats.dtype != object):
            out[:, j] = _code_column(arr[:, j], cats, name, str(j))      # the model's encoder would code them
            continue
        try:
            out[:, j] = arr[:, j].astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} column {j} holds values that are not numbers") from None
    return out


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
    if type(X).__name__ == "DMatrix" and type(X).__module__.startswith("xgboost"):
        arr = _dense_from_sparse(X.get_data(), True, name)             # a DMatrix stores only present values
    elif _is_sparse(X):
        arr = _dense_from_sparse(X, ens.sparse_missing, name)
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
    return arr
