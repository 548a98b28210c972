"""Which raw column each transformed column of a fitted scikit-learn pipeline comes from, declared and checked.

A pipeline's steps before its final model turn the user's raw columns into the columns the model splits on. Each
step is read twice:

- by what it *declares*: a ColumnTransformer's column lists and output slices (its remainder, dropped columns and
  nested pipelines), the categories of a OneHotEncoder (one column per kept category), the kept columns and missing
  indicators of a SimpleImputer, one column per input for scalers, OrdinalEncoder and column-wise transformers
  (FunctionTransformer when it keeps the width), the blocks of KBinsDiscretizer and SplineTransformer, the kept
  columns of feature selectors, the powers of PolynomialFeatures;
- and *numerically*: each raw column of a few rows is moved (each row takes the next row's value) and the rows are
  run through the steps in turn; every transformed column that moves must be declared as coming from that raw
  column alone, so a FunctionTransformer that mixes columns is caught.

A step whose outputs come from several raw columns (PCA, polynomial terms, a mixing function) or that declares no
mapping is reported by :class:`Untraced`, whose message names the step: the pipeline is then explained as a black
box on its raw columns (``fairshare.inputs.pipeline``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["Untraced", "is_pipeline", "check_fitted", "trace_columns", "transform_rows", "check_rows"]

_SAMPLE_ROWS = 16
#: scikit-learn transformers whose outputs are combinations of all their inputs
_MIXERS = ("PCA", "KernelPCA", "IncrementalPCA", "TruncatedSVD", "SparsePCA", "MiniBatchSparsePCA", "FactorAnalysis",
           "FastICA", "NMF", "MiniBatchNMF", "LatentDirichletAllocation", "DictionaryLearning", "Normalizer",
           "Nystroem", "RBFSampler", "AdditiveChi2Sampler", "SkewedChi2Sampler", "PolynomialCountSketch",
           "GaussianRandomProjection", "SparseRandomProjection", "FeatureAgglomeration",
           "LinearDiscriminantAnalysis", "NeighborhoodComponentsAnalysis", "Isomap", "LocallyLinearEmbedding")
#: scikit-learn transformers that give one output per input, from that input alone
_ONE_TO_ONE = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "QuantileTransformer",
               "PowerTransformer", "OrdinalEncoder", "Binarizer", "FunctionTransformer")


class Untraced(ValueError):
    """A pipeline step whose transformed columns are not each traced to one raw column (the message names it)."""


def is_pipeline(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn Pipeline (scikit-learn is not imported to tell).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> is_pipeline(make_pipeline(StandardScaler())), is_pipeline(len)
    (True, False)
    """
    module = sys.modules.get("sklearn.pipeline")
    return module is not None and isinstance(model, module.Pipeline)


def _title(name: str, step: Any) -> str:
    return f"{name} ({type(step).__name__})"


def _active(step: Any) -> bool:
    return step is not None and not (isinstance(step, str) and step in ("passthrough", "drop"))


def check_fitted(pipeline: Any) -> None:
    """Refuse a pipeline with a step that is not fitted, naming the step (before anything is called).

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> check_fitted(Pipeline([("scale", StandardScaler())]))
    Traceback (most recent call last):
    ...
    ValueError: model: the pipeline's step 'scale' (StandardScaler) is not fitted; fit the pipeline before explaining it
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    for name, step in pipeline.steps:
        if not _active(step):
            continue
        try:
            check_is_fitted(step)
        except NotFittedError:
            raise ValueError(f"model: the pipeline's step {_title(repr(name), step)} is not fitted; fit the "
                             "pipeline before explaining it") from None


def transform_rows(pipeline: Any, rows: Any, name: str) -> Any:
    """``rows`` through every step of ``pipeline`` but the last, as its final step receives them; a step that cannot
    take them is named with the argument.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> pipe = make_pipeline(StandardScaler(), DecisionTreeRegressor()).fit([[0.0], [2.0]], [0.0, 1.0])
    >>> transform_rows(pipe, np.array([[1.0]]), "X").tolist()
    [[0.0]]
    """
    for step_name, step in pipeline.steps[:-1]:
        if not _active(step):
            continue
        try:
            rows = step.transform(rows)
        except Exception as exc:  # noqa: BLE001 - reported with the step and the argument
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise ValueError(f"{name}: the pipeline's step {_title(repr(step_name), step)} cannot transform these "
                             f"rows ({type(exc).__name__}: {first})") from exc
    return rows


def check_rows(pipeline: Any, parts: dict[str, Any]) -> None:
    """Every part's rows (``{"X": X, "background": background}``, a None part skipped) through the steps before the
    final one, before any model call; rows a step cannot take are refused naming the argument, the first such row
    and, where one raw value alone is the cause (a category a OneHotEncoder did not see in fitting), its column and
    value.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> pipe = make_pipeline(OneHotEncoder(), DecisionTreeRegressor()).fit(pd.DataFrame({"c": ["a", "b"]}), [0, 1])
    >>> check_rows(pipe, {"X": pd.DataFrame({"c": ["a", "z"]}), "background": None})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X: row 1, column 'c' holds 'z', which the pipeline's step 'onehotencoder' (OneHotEncoder) cannot ...
    """
    errors = {name: _step_error(pipeline, rows) for name, rows in parts.items() if rows is not None}
    for name, error in errors.items():
        if error is not None:
            others = [parts[o] for o, e in errors.items() if e is None]
            raise ValueError(f"{name}: {_located(pipeline, parts[name], others) or error}")


def _step_error(pipeline: Any, rows: Any) -> str | None:
    """Why the steps before the final one cannot take ``rows`` (naming the step), or None."""
    try:
        transform_rows(pipeline, rows, "rows")
    except ValueError as exc:
        return str(exc).split(": ", 1)[1]
    return None


def _take(rows: Any, at: Any) -> Any:
    return rows.iloc[at] if hasattr(rows, "iloc") else np.asarray(rows)[at]


def _located(pipeline: Any, rows: Any, others: list) -> str | None:
    """The first row of ``rows`` the steps refuse alone (found by halving: a few transforms), and the raw column
    whose value, put in a row they take, is refused too; None where no single row is refused alone."""
    lo, hi, good = 0, len(rows), None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _step_error(pipeline, _take(rows, slice(lo, mid))) is not None:
            hi = mid
        else:
            lo, good = mid, lo
    error = _step_error(pipeline, _take(rows, slice(lo, lo + 1)))
    if error is None:
        return None
    index = getattr(rows, "index", None)
    at = getattr(index[lo], "item", lambda: index[lo])() if index is not None else lo
    label = f"row {lo}" + (f" (index {at!r})" if at != lo else "")
    bases = ([_take(rows, slice(good, good + 1))] if good is not None else []) + [_take(o, slice(0, 1)) for o in others]
    base = next((b for b in bases if len(b) and _step_error(pipeline, b) is None), None)
    bad = _take(rows, slice(lo, lo + 1))
    for c in range(0 if base is None else np.shape(base)[1]):
        probe = base.copy()
        if hasattr(probe, "iloc"):
            probe[probe.columns[c]] = bad.iloc[:, c].to_numpy()
            column, value = probe.columns[c], bad.iloc[0, c]
        else:
            probe = probe.astype(object)
            probe[0, c], column, value = bad[0, c], c, bad[0, c]
        cause = _step_error(pipeline, probe)
        if cause is not None:
            value = value.item() if hasattr(value, "item") else value
            return f"{label}, column {column!r} holds {value!r}, which " + \
                cause.replace(" cannot transform these rows", " cannot transform")
    return f"{label}: {error}"


# ------------------------------------------------------------------------------------------------- declared
def _blocks(counts: Any) -> list[tuple[int, ...]]:
    """Outputs in blocks: ``counts[i]`` outputs from input ``i``, in order."""
    return [(i,) for i, c in enumerate(counts) for _ in range(int(c))]


def _isinstance(step: Any, module: str, names: tuple[str, ...]) -> bool:
    loaded = sys.modules.get(module)
    return loaded is not None and any(isinstance(step, getattr(loaded, n)) for n in names if hasattr(loaded, n))


def _imputed(step: Any, n_in: int) -> list[tuple[int, ...]]:
    """A SimpleImputer's outputs: the inputs it keeps (it drops those whose statistic is NaN, a column with no value
    at fit, whatever the strategy, unless ``keep_empty_features``: a statistic ``None`` is kept, as it does), then
    its missing indicators."""
    kept = np.arange(n_in)
    if not getattr(step, "keep_empty_features", False):
        stats = np.asarray(step.statistics_)
        kept = np.flatnonzero(~np.asarray(stats != stats, dtype=bool))           # NaN alone differs from itself
    out = [(int(i),) for i in kept]
    indicator = getattr(step, "indicator_", None)
    if getattr(step, "add_indicator", False) and indicator is not None:
        out += [(int(i),) for i in indicator.features_]
    return out


def _leaf(step: Any, n_in: int, n_out: int | None, title: str) -> list[tuple[int, ...]]:
    """The inputs each output of a transformer comes from, by what it declares."""
    kind = type(step).__name__
    if _isinstance(step, "sklearn.preprocessing", ("OneHotEncoder",)):
        counts = getattr(step, "_n_features_outs", None)
        if counts is None:
            drop = getattr(step, "drop_idx_", None)
            counts = [len(c) - int(drop is not None and drop[i] is not None) for i, c in enumerate(step.categories_)]
        return _blocks(counts)
    if _isinstance(step, "sklearn.preprocessing", ("KBinsDiscretizer",)):
        return [(i,) for i in range(n_in)] if step.encode == "ordinal" else _blocks(step.n_bins_)
    if _isinstance(step, "sklearn.preprocessing", ("SplineTransformer",)):
        return _blocks([step.n_features_out_ // max(n_in, 1)] * n_in)
    if _isinstance(step, "sklearn.preprocessing", ("PolynomialFeatures",)):
        return [tuple(int(i) for i in np.flatnonzero(p)) for p in np.asarray(step.powers_)]
    if _isinstance(step, "sklearn.impute", ("SimpleImputer",)):
        return _imputed(step, n_in)
    if _isinstance(step, "sklearn.impute", ("MissingIndicator",)):
        return [(int(i),) for i in step.features_]
    if _isinstance(step, "sklearn.preprocessing", _ONE_TO_ONE):
        if n_out is not None and n_out != n_in:
            raise Untraced(f"step {title} gives {n_out} columns from {n_in}: which column each comes from is not "
                           "declared")
        return [(i,) for i in range(n_in)]
    if callable(getattr(step, "get_support", None)):                   # a feature selector: its kept columns
        return [(int(i),) for i in step.get_support(indices=True)]
    if kind in _MIXERS:
        return [tuple(range(n_in))] * (n_out if n_out is not None else n_in)
    raise Untraced(f"step {title} declares no column mapping (a transformer fairshare does not trace)")


def _declared(step: Any, raw: list[frozenset], n_out: int | None, title: str, names: list[str]) -> list[frozenset]:
    """The raw columns each output of ``step`` comes from (``raw``: those of each of its inputs)."""
    if not _active(step):
        return [] if isinstance(step, str) and step == "drop" else list(raw)
    if is_pipeline(step):
        inner = [(n, s) for n, s in step.steps if _active(s)]
        for i, (name, sub) in enumerate(inner):
            width = n_out if i == len(inner) - 1 else getattr(inner[i + 1][1], "n_features_in_", None)
            raw = _declared(sub, raw, width, f"{title} → {_title(repr(name), sub)}", names)
        return raw
    if hasattr(step, "transformers_") and hasattr(step, "output_indices_"):        # a ColumnTransformer
        slices = step.output_indices_
        out: list = [frozenset()] * max((s.stop for s in slices.values()), default=0)
        inputs = getattr(step, "_transformer_to_input_indices", {})
        for name, sub, _ in step.transformers_:
            part = slices[name]
            if part.stop > part.start:
                sub_title = f"{title} → {_title(repr(name), sub)}"
                got = _declared(sub, [raw[i] for i in inputs[name]], part.stop - part.start, sub_title, names)
                if len(got) != part.stop - part.start:
                    raise Untraced(f"step {sub_title} declares {len(got)} columns but gives {part.stop - part.start}")
                out[part] = got
        return out
    outputs = [frozenset().union(*(raw[i] for i in d)) for d in _leaf(step, len(raw), n_out, title)]
    mixed = [k for k, sources in enumerate(outputs) if len(sources) > 1]
    if mixed:
        named = " and ".join(repr(names[r]) for r in sorted(outputs[mixed[0]])[:3])
        raise Untraced(f"step {title} mixes columns: its output {mixed[0]} comes from the raw columns {named}")
    empty = [k for k, sources in enumerate(outputs) if not sources]
    if empty:
        raise Untraced(f"step {title} has an output ({empty[0]}) that comes from no raw column")
    return outputs


# ----------------------------------------------------------------------------------------------- numerically
def _dense(rows: Any) -> np.ndarray:
    if hasattr(rows, "toarray"):
        return rows.toarray()
    return rows.to_numpy() if hasattr(rows, "to_numpy") else np.asarray(rows)


def _moved_copies(sample: Any) -> Any:
    """``sample`` (R rows) followed by one copy per column in which that column alone takes the next row's value."""
    R = sample.shape[0]
    shift = np.roll(np.arange(R), -1)
    if hasattr(sample, "iloc"):
        import pandas as pd

        base = sample.reset_index(drop=True)
        copies = [base]
        for j in range(base.shape[1]):
            moved = base.copy()
            moved.isetitem(j, base.iloc[shift, j].reset_index(drop=True))
            copies.append(moved)
        return pd.concat(copies, ignore_index=True)
    base = np.asarray(sample)
    d = base.shape[1]
    moved = np.repeat(base[None], d, axis=0)                      # (d, R, d): copy j has column j moved
    moved[np.arange(d), :, np.arange(d)] = base[shift].T
    return np.concatenate([base, moved.reshape(d * R, d)], axis=0)


def _moves(out: Any, R: int, n_raw: int) -> np.ndarray:
    """``moved[c, k]``: output column ``k`` differs from the unmoved rows when raw column ``c`` moves."""
    A = _dense(out)
    base, copies = A[:R], A[R:].reshape(n_raw, R, A.shape[1])
    if A.dtype.kind in "biuf":
        same = (copies == base[None]) | (np.isnan(copies) & np.isnan(base)[None]) if A.dtype.kind == "f" else \
            copies == base[None]
    else:                                                    # objects (strings, categories, pandas' NA)
        same = _same_objects(copies, np.broadcast_to(base[None], copies.shape)).astype(bool)
    return ~same.all(axis=1)


def _same_object(u: Any, v: Any) -> bool:
    import pandas as pd

    missing_u, missing_v = bool(pd.isna(u)), bool(pd.isna(v))
    return missing_u and missing_v if missing_u or missing_v else bool(u == v)


_same_objects = np.frompyfunc(_same_object, 2, 1)


def _owner(step: Any, k: int) -> str:
    """The part of a ColumnTransformer that gives its output ``k``."""
    for name, sub, _ in getattr(step, "transformers_", []):
        part = step.output_indices_[name]
        if part.start <= k < part.stop:
            return f" → {_title(repr(name), sub)}"
    return ""


def trace_columns(pipeline: Any, sample: Any, names: list[str], carry: tuple = ()) -> tuple[np.ndarray, list]:
    """The raw column (position in ``names``) of every column the pipeline's final step receives, declared by each
    step and checked on ``sample`` (a few raw rows the pipeline takes), and the rows of each of ``carry`` as the final
    step receives them (transformed in the same pass); :class:`Untraced` names the first step whose columns cannot
    be traced.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = pd.DataFrame({"city": ["a", "b", "c", "a"], "size": [1.0, 2.0, 3.0, 4.0]})
    >>> pipe = make_pipeline(ColumnTransformer([("oh", OneHotEncoder(), ["city"])], remainder="passthrough"),
    ...                      DecisionTreeRegressor()).fit(X, [0.0, 1.0, 2.0, 3.0])
    >>> group_of, (rows,) = trace_columns(pipe, X, ["city", "size"], carry=(X.iloc[:1],))
    >>> group_of.tolist(), rows.tolist()
    ([0, 0, 0, 1], [[1.0, 0.0, 0.0, 1.0]])
    """
    n_raw = len(names)
    sample = sample.iloc[:_SAMPLE_ROWS] if hasattr(sample, "iloc") else np.asarray(sample)[:_SAMPLE_ROWS]
    R = sample.shape[0]
    rows, raw = _stacked([_moved_copies(sample), *carry]), [frozenset([c]) for c in range(n_raw)]
    for name, step in pipeline.steps[:-1]:
        if not _active(step):
            continue
        title = _title(repr(name), step)
        rows = _step_transform(step, rows, title)
        width = int(rows.shape[1])
        raw = _declared(step, raw, width, title, names)
        if len(raw) != width:
            raise Untraced(f"step {title} declares {len(raw)} columns but gives {width}")
        moved = _moves(rows[: R * (n_raw + 1)] if not hasattr(rows, "iloc") else rows.iloc[: R * (n_raw + 1)], R,
                       n_raw)
        for c, k in zip(*np.nonzero(moved)):
            if raw[k] != frozenset([c]):
                source = repr(names[next(iter(raw[k]))]) if raw[k] else "no raw column"
                raise Untraced(f"step {title}{_owner(step, int(k))} mixes columns: its output {k}, declared from "
                               f"{source}, moves with the raw column {names[c]!r}")
    starts = np.cumsum([R * (n_raw + 1)] + [len(c) for c in carry])
    carried = [rows.iloc[a:b] if hasattr(rows, "iloc") else rows[a:b] for a, b in zip(starts[:-1], starts[1:])]
    return np.array([next(iter(r)) for r in raw], dtype=np.int64), carried


def _stacked(parts: list) -> Any:
    """Rows of every part, in order, in one table (frames or arrays)."""
    if all(hasattr(p, "iloc") for p in parts):
        import pandas as pd

        return pd.concat([p.reset_index(drop=True) for p in parts], ignore_index=True)
    return np.concatenate([p.to_numpy() if hasattr(p, "to_numpy") else np.asarray(p) for p in parts], axis=0)


def _step_transform(step: Any, rows: Any, title: str) -> Any:
    """One step's transform of the tracing rows (a step that cannot take them is named)."""
    try:
        return step.transform(rows)
    except Exception as exc:  # noqa: BLE001 - reported with the step
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise ValueError(f"model: the pipeline's step {title} cannot transform rows of X and the background "
                         f"({type(exc).__name__}: {first})") from exc
