"""Rows given as tables: their values and column names, their alignment to a model's features, their finiteness.

Every door that takes rows (``fs.explain`` for any model and for tree models, ``TreeGame``, ``tree_values``,
the CLI) aligns them here, by name, to the features the model was fitted with. The model's names come
from the model or the estimator behind a bound method (``model.predict_proba.__self__``): scikit-learn's
``feature_names_in_`` (pipelines too), else what the model's own library stores (lightgbm's ``feature_name_``,
which replaces whitespace in names with ``_``: a frame with the original names still matches; xgboost's booster
feature names; catboost's ``feature_names_``). Columns in another order are reordered; missing or unexpected
columns are refused with both lists. Infinite values are refused before any model call, naming the argument, row
and column; NaN is refused too unless the model is known to take missing values (tree libraries, scikit-learn
estimators whose tags say so, pipelines whose steps fill it: :mod:`.missing`); a plain function is given what it was
given.

What a library says of its models is asked of its tree reader (:mod:`fairshare.trees.readers`), which sits above
``_core`` and so registers itself here when imported (:func:`register_library_hooks`): importing ``fairshare``
imports it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from .nullable import frame_values, nullable_dtype, numeric_dtype

__all__ = ["as_rows", "is_sparse", "frame_info", "column_labels", "shared_dtypes", "model_columns", "match_columns",
           "aligned", "check_finite", "stored_names", "target_of", "register_library_hooks",
           "is_missing", "same_value", "check_labels", "first_step", "check_kinds"]

# what the libraries of models say of them (their feature names, whether they take NaN, how they store a name)
_HOOKS: dict[str, Callable[..., Any]] = {"feature_names": lambda model: None, "accepts_missing": lambda model: None,
                                         "stored_names": lambda name: []}


def register_library_hooks(feature_names: Callable[[Any], tuple[list[str], str] | None],
                           accepts_missing: Callable[[Any], bool | None],
                           stored_names: Callable[[str], list[str]]) -> None:
    """Let the model libraries' readers answer: ``feature_names(model)`` (the names the model's library stores and
    where they come from, or None), ``accepts_missing(model)`` (True / False, or None when the library does not
    say) and ``stored_names(name)`` (the names libraries store for a feature name, e.g. whitespace replaced).
    :mod:`fairshare.trees.readers` registers its readers here when it is imported.

    Examples
    --------
    >>> saved = dict(_HOOKS)
    >>> register_library_hooks(lambda m: None, lambda m: None, lambda name: [name.upper()])
    >>> stored_names("a")
    ['A']
    >>> _HOOKS.update(saved)
    """
    _HOOKS.update(feature_names=feature_names, accepts_missing=accepts_missing, stored_names=stored_names)


def target_of(model: Any) -> Any:
    """The object behind a bound method (``model.predict_proba`` -> ``model``), else ``model`` itself.

    Examples
    --------
    >>> class M:
    ...     def predict(self, X): return X
    >>> m = M(); target_of(m.predict) is m
    True
    """
    return getattr(model, "__self__", model) if inspect.ismethod(model) else model


def is_sparse(obj: Any) -> bool:
    """Whether ``obj`` is a scipy.sparse matrix or array."""
    return type(obj).__module__.startswith("scipy.sparse")


def as_rows(obj: Any, name: str) -> Any:
    """The values of a row or rows (numpy, pandas, lists) as a 2-D array, a 1-D input as one row (a DataFrame's
    nullable numeric columns as numbers, ``<NA>`` as NaN); scipy.sparse rows stay sparse (CSR, float).

    Examples
    --------
    >>> as_rows([1.0, 2.0], "x").shape
    (1, 2)
    >>> import scipy.sparse as sp
    >>> as_rows(sp.eye(3, format="coo"), "X").format
    'csr'
    """
    if is_sparse(obj):
        import scipy.sparse as sp

        rows = sp.csr_matrix(obj, dtype=float)
        rows.sum_duplicates()
        return rows
    values = frame_values(obj) if hasattr(obj, "columns") and hasattr(obj, "dtypes") else \
        obj.to_numpy() if hasattr(obj, "to_numpy") else np.asarray(obj)
    values = np.asarray(values)
    if values.dtype.names is not None:                  # records, whose fields would be read as one column each
        raise ValueError(f"{name} is a numpy structured array (fields {list(values.dtype.names)[:10]}): give its "
                         f"fields as columns, a DataFrame (pandas.DataFrame({name})) or a 2-D array")
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2:
        raise ValueError(f"{name} must be a row or a 2-D array of rows, got shape {values.shape}")
    return values


def frame_info(obj: Any) -> tuple[list[str] | None, Any]:
    """Column names and dtypes when ``obj`` is a pandas DataFrame (a Series: its index as names, no dtypes).

    Examples
    --------
    >>> frame_info(np.zeros((2, 2)))
    (None, None)
    """
    if hasattr(obj, "columns") and hasattr(obj, "dtypes"):
        return [str(c) for c in obj.columns], obj.dtypes
    if hasattr(obj, "index") and hasattr(obj, "dtype") and hasattr(obj, "to_numpy"):      # a Series (one row)
        return [str(c) for c in obj.index], None
    return None, None


def column_labels(obj: Any) -> list | None:
    """A DataFrame's column labels as they are (integers stay integers: a model that reads ``frame[0]`` gets its
    column), a Series' index labels, else None.

    Examples
    --------
    >>> import pandas as pd
    >>> column_labels(pd.DataFrame([[1.0, 2.0]])), column_labels(np.zeros(2))
    ([0, 1], None)
    """
    if hasattr(obj, "columns") and hasattr(obj, "dtypes"):
        return list(obj.columns)
    if hasattr(obj, "index") and hasattr(obj, "dtype") and hasattr(obj, "to_numpy"):
        return list(obj.index)
    return None


def shared_dtypes(x: Any, background: Any) -> list | None:
    """One dtype per column that holds both ``x``'s values and the background's (the model's frames mix them): the
    frames' own dtype where they agree; a categorical dtype with every category of both (the background's first);
    numpy's promotion of numeric dtypes (an integer column with a float background is float, not truncated; pandas'
    nullable dtype of it where either is nullable: ``Int64`` with ``float64`` is ``Float64``); the
    background's values as they are (object) for any other mix. None where ``x`` is not a DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> x = pd.DataFrame({"n": [1], "c": pd.Categorical(["a"])})
    >>> bg = pd.DataFrame({"n": [0.5], "c": pd.Categorical(["b", "a"])[:1]})
    >>> [str(t) for t in shared_dtypes(x, bg)], list(shared_dtypes(x, bg)[1].categories)
    (['float64', 'category'], ['a', 'b'])
    """
    import pandas as pd

    if not (hasattr(x, "columns") and hasattr(x, "dtypes")):
        return None
    own = list(x.dtypes)
    if background is None:
        return own
    if not (hasattr(background, "dtypes") and hasattr(background, "columns")):
        rows = np.asarray(background)
        background = pd.DataFrame(rows.reshape(-1, len(own)) if rows.size else np.zeros((0, len(own)))).infer_objects()
    if len(background.columns) != len(own):
        return own
    out = []
    for mine, (_, column) in zip(own, background.items()):
        other = column.dtype
        if mine == other:
            out.append(mine)
        elif isinstance(mine, pd.CategoricalDtype):       # every category of both: none of the background's lost
            theirs = list(other.categories) if isinstance(other, pd.CategoricalDtype) else \
                list(pd.unique(column.dropna()))
            categories = theirs + [c for c in mine.categories if c not in set(theirs)]
            ordered = bool(mine.ordered and (other.ordered if isinstance(other, pd.CategoricalDtype) else False))
            out.append(pd.CategoricalDtype(categories, ordered=ordered))
        elif numeric_dtype(mine) is not None and numeric_dtype(other) is not None:
            common = np.result_type(numeric_dtype(mine), numeric_dtype(other))
            plain = isinstance(mine, np.dtype) and isinstance(other, np.dtype)
            out.append(common if plain else nullable_dtype(common))    # pandas' nullable one if either is
        else:
            out.append(np.dtype(object) if isinstance(mine, np.dtype) and mine.kind in "biuf" else mine)
    return out


def stored_names(name: str) -> list[str]:
    """The names under which model libraries store the feature name ``name`` (those that rewrite it).

    Examples
    --------
    >>> stored_names("mean radius")                     # lightgbm replaces whitespace
    ['mean_radius']
    """
    return list(_HOOKS["stored_names"](str(name)))


def model_columns(model: Any) -> tuple[list[str] | None, str]:
    """The feature names ``model`` was fitted with and where they come from, or ``(None, "")``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LinearRegression
    >>> lr = LinearRegression().fit(pd.DataFrame({"a": [0.0, 1.0], "b": [1.0, 0.0]}), [0.0, 1.0])
    >>> model_columns(lr.predict)
    (['a', 'b'], "the model's features (feature_names_in_)")
    """
    target = target_of(model)
    names = getattr(target, "feature_names_in_", None)
    if names is not None:
        return [str(c) for c in names], "the model's features (feature_names_in_)"
    stored = _HOOKS["feature_names"](target)                 # what the model's own library stores
    return stored if stored is not None else (None, "")


def match_columns(columns: list[str], reference: list[str], name: str, source: str) -> list[int]:
    """For each name of ``reference``, the position of the column of ``columns`` that holds it (by name; a
    column also matches a name a library stores for it, :func:`stored_names`); a clear error with both lists
    otherwise.

    Examples
    --------
    >>> match_columns(["b", "a"], ["a", "b"], "X", "the model's features")
    [1, 0]
    >>> match_columns(["mean radius"], ["mean_radius"], "X", "the model's features")
    [0]
    """
    if len(set(columns)) != len(columns):
        dups = sorted({c for c in columns if columns.count(c) > 1})
        raise ValueError(f"{name} has duplicate column names {dups}")
    if columns == reference:
        return list(range(len(columns)))
    where = {c: i for i, c in enumerate(columns)}
    sanitized: dict[str, int] = {}
    for i, c in enumerate(columns):
        for stored in stored_names(c):
            sanitized.setdefault(stored, i)
    order, missing = [], []
    for r in reference:
        i = where.get(r, sanitized.get(r) if r in stored_names(r) else None)
        if i is None:
            missing.append(r)
        order.append(i)
    extra = sorted(set(range(len(columns))) - {i for i in order if i is not None})
    if missing or extra:
        raise ValueError(f"{name} columns do not match {source}: missing {missing[:10]}, unexpected "
                         f"{[columns[i] for i in extra][:10]} ({name} has {columns[:12]}"
                         f"{' ...' if len(columns) > 12 else ''}; {source.split(' (')[0]} are {reference[:12]}"
                         f"{' ...' if len(reference) > 12 else ''})")
    return order


def aligned(frame: Any, reference: list[str], name: str, source: str) -> Any:
    """``frame`` (a DataFrame) with its columns in the order of ``reference``, matched by :func:`match_columns`.

    Examples
    --------
    >>> import pandas as pd
    >>> aligned(pd.DataFrame({"b": [1], "a": [2]}), ["a", "b"], "X", "x").columns.tolist()
    ['a', 'b']
    """
    order = match_columns([str(c) for c in frame.columns], reference, name, source)
    if order == list(range(frame.shape[1])):
        return frame
    return frame.iloc[:, order]


def first_step(model: Any) -> Any:
    """The first step of a scikit-learn ``Pipeline`` that is not ``None`` or ``"passthrough"`` (what reads the rows),
    or None for any other model.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> type(first_step(make_pipeline("passthrough", StandardScaler()))).__name__, first_step(StandardScaler())
    ('StandardScaler', None)
    """
    if not type(model).__module__.startswith("sklearn.pipeline"):
        return None
    return next((step for _, step, *_ in getattr(model, "steps", []) if step is not None and
                 not (isinstance(step, str) and step == "passthrough")), None)


_NUMBERS = ("floating", "integer", "mixed-integer-float", "decimal", "integer-na")


def check_kinds(x: Any, background: Any) -> None:
    """Refuse a column of numbers in ``x`` whose background holds words, naming the background's first such row and
    the column: the model reads one kind per column and would meet the mix at its first call (words in ``x`` over a
    background of numbers are left to the model, whose refusal the doors name with the way to encode them).

    Examples
    --------
    >>> import pandas as pd
    >>> check_kinds(pd.DataFrame({"a": [1.0]}), pd.DataFrame({"a": ["w"]}))
    Traceback (most recent call last):
    ...
    ValueError: background holds 'w' at row 0, column 'a', where X holds numbers: give both the same kind of values
    """
    import pandas as pd

    if background is None or is_sparse(x) or is_sparse(background) or np.ndim(x) != 2 or np.ndim(background) != 2:
        return
    frames = [v if hasattr(v, "iloc") else pd.DataFrame(np.asarray(v, dtype=object)) for v in (x, background)]
    if frames[0].shape[1] != frames[1].shape[1]:
        return
    for j in range(frames[0].shape[1]):
        if pd.api.types.infer_dtype(frames[1].iloc[:, j], skipna=True) == "string" and \
                pd.api.types.infer_dtype(frames[0].iloc[:, j], skipna=True) in _NUMBERS:
            column = frames[1].iloc[:, j]
            row = int(np.flatnonzero(column.map(lambda v: isinstance(v, str)).to_numpy())[0])
            label = repr(str(x.columns[j])) if hasattr(x, "columns") else str(j)
            raise ValueError(f"background holds {column.iloc[row]!r} at row {row}, column {label}, where X holds "
                             "numbers: give both the same kind of values")


def _check_mixed(rows: np.ndarray, name: str, columns: list[str] | None) -> None:
    """Refuse a column that holds numbers in some rows and words in others (a typo the model would only meet at
    its first call); a column of words (categories, with NaN for missing ones) is left to the model.

    Examples
    --------
    >>> _check_mixed(np.array([[1.0, "a"], ["oops", "b"]], dtype=object), "X", ["x", "y"])
    Traceback (most recent call last):
    ...
    ValueError: X holds 'oops' at row 1, column 'x', a column of numbers: replace it or drop the row
    """
    for j in range(rows.shape[1]):
        column = rows[:, j]
        is_word = np.fromiter((isinstance(v, (str, bytes)) for v in column), dtype=bool, count=column.size)
        if not is_word.any() or is_word.all():
            continue
        is_number = np.fromiter((isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and v == v
                                 for v in column), dtype=bool, count=column.size)
        if is_number.any():
            r = int(np.flatnonzero(is_word)[0])
            label = repr(columns[j]) if columns is not None else str(j)
            raise ValueError(f"{name} holds {column[r]!r} at row {r}, column {label}, a column of numbers: replace it "
                             "or drop the row")


def is_missing(value: Any) -> bool:
    """Whether one cell is missing as pandas reads it (None, NaN, ``pd.NA``, ``NaT``); never raises.

    Examples
    --------
    >>> import pandas as pd
    >>> is_missing(None), is_missing(float("nan")), is_missing(pd.NA), is_missing("a"), is_missing(0)
    (True, True, True, False, False)
    """
    try:
        import pandas as pd

        return bool(pd.isna(value))
    except (TypeError, ValueError):                          # an array-like cell: not one missing value
        return False


def same_value(a: Any, b: Any) -> bool:
    """Whether two cells hold the same value, two missing ones (None, NaN, ``pd.NA``) counting as the same; never
    raises (``pd.NA == 1`` is ``NA``, whose truth pandas refuses).

    Examples
    --------
    >>> import pandas as pd
    >>> same_value(pd.NA, None), same_value(pd.NA, 1), same_value("a", "a"), same_value(1, 1.0)
    (True, False, True, True)
    """
    a_missing, b_missing = is_missing(a), is_missing(b)
    if a_missing or b_missing:
        return a_missing and b_missing
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def check_labels(y: Any, name: str) -> None:
    """Refuse a missing (None, NaN, ``pd.NA``) or infinite label, naming the argument and its row.

    Examples
    --------
    >>> check_labels([0.5, float("nan")], "y_train")
    Traceback (most recent call last):
    ...
    ValueError: y_train holds nan at row 1: every fit needs a finite label for each row; drop the row or give it one
    """
    labels = np.asarray(y)
    if labels.dtype.kind in "fc":
        bad = ~np.isfinite(labels)
    elif labels.dtype == object:
        bad = np.fromiter((is_missing(v) or isinstance(v, float) and not np.isfinite(v) for v in labels.ravel()),
                          dtype=bool, count=labels.size)
    else:
        return
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = labels.ravel()[row]
        shown = repr(value) if isinstance(value, str) else str(value)
        raise ValueError(f"{name} holds {shown} at row {row}: every fit needs a finite label for each row; drop the "
                         "row or give it one")


def check_finite(rows: np.ndarray, name: str, columns: list[str] | None, allow_nan: bool) -> None:
    """Refuse infinite values (and NaN unless ``allow_nan``) in the numeric columns of ``rows``, naming the argument,
    the row and the column.

    Examples
    --------
    >>> check_finite(np.array([[1.0, np.inf]]), "background", ["a", "b"], allow_nan=True)
    Traceback (most recent call last):
    ...
    ValueError: background holds inf at row 0, column 'b': replace it or drop the row (models cannot take infinite values)
    """
    if is_sparse(rows):                                   # the stored entries (the others are 0)
        coo = rows.tocoo()
        bad = ~np.isfinite(coo.data) if not allow_nan else np.isinf(coo.data)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            what = "inf" if np.isinf(coo.data[k]) else "NaN"
            raise ValueError(f"{name} holds {what} at row {coo.row[k]}, column {coo.col[k]}: replace it or drop the row")
        return
    if rows.dtype == object:
        _check_mixed(rows, name, columns)
        numeric = np.array([all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                                for v in rows[:, j]) for j in range(rows.shape[1])], dtype=bool)
        if not numeric.any():
            return
        values = rows[:, numeric].astype(float)
        cols = np.flatnonzero(numeric)
    elif rows.dtype.kind in "fc":
        values, cols = rows, np.arange(rows.shape[1])
    else:
        return
    label = (lambda j: repr(columns[j])) if columns is not None else (lambda j: str(j))
    inf = np.isinf(values)
    if inf.any():
        r, c = np.argwhere(inf)[0]
        raise ValueError(f"{name} holds {values[r, c]:g} at row {r}, column {label(cols[c])}: replace it or drop the "
                         "row (models cannot take infinite values)")
    if not allow_nan:
        nan = np.isnan(values)
        if nan.any():
            r, c = np.argwhere(nan)[0]
            raise ValueError(f"{name} holds NaN at row {r}, column {label(cols[c])}, and the model does not take "
                             "missing values (impute them first, or use a model that handles them)")
