"""A CSV's columns of words against the scikit-learn model that is to take them.

A CSV column of words reaches the model as strings. A scikit-learn estimator that takes numbers only (its tags
say neither ``string`` nor ``categorical``; the first step of a pipeline; the transformer a ``ColumnTransformer``
gives the column to) fails on them at its first call, after the run has begun, as "could not convert string to
float" with no column named. The command line refuses them before: naming the flag, the file, the columns and
what to do. A model scikit-learn does not describe (a function, another library, a passthrough column) is left to
its first call; its failure on one of the words is still named by column (:func:`words_refused`).
"""

from __future__ import annotations

from typing import Any

from .._core.tables import first_step

__all__ = ["word_columns", "needs_numbers", "refuse_words", "words_refused"]

_WHAT_TO_DO = ("write {it} in the CSV as numbers, or give --model a scikit-learn Pipeline (saved as .skops) whose "
               "ColumnTransformer encodes {it} (OneHotEncoder, OrdinalEncoder)")


def word_columns(frame: Any) -> dict[str, list]:
    """The columns of ``frame`` that hold words (after :func:`~fairshare.cli.files.read_csv`, every column that is
    not numbers), each with its distinct words.

    Examples
    --------
    >>> import pandas as pd
    >>> word_columns(pd.DataFrame({"a": [1.0, 2.0], "b": ["lo", "hi"]}))
    {'b': ['lo', 'hi']}
    """
    out = {}
    for column in frame.columns:
        values = frame[column]
        if values.dtype == object or str(values.dtype) in ("string", "str"):
            out[str(column)] = [v for v in dict.fromkeys(values.dropna()) if isinstance(v, str)]
    return {c: words for c, words in out.items() if words}


def _selected(spec: Any, columns: list[str]) -> list[str] | None:
    """The columns a ``ColumnTransformer`` entry selects (names or positions), or None where it selects otherwise."""
    import numpy as np

    items = [spec] if isinstance(spec, (str, int)) else list(spec) if isinstance(spec, (list, tuple, np.ndarray)) \
        else None
    if items is None:
        return None
    if all(isinstance(c, str) for c in items):
        return [c for c in items if c in columns]
    if all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and 0 <= c < len(columns) for c in items):
        return [columns[int(c)] for c in items]
    return None


def needs_numbers(model: Any, columns: list[str]) -> list[str]:
    """The columns (of ``columns``, the model's features in order) that ``model`` takes as numbers only, as far as
    scikit-learn describes it; none for a model it does not describe.

    Examples
    --------
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> needs_numbers(LinearRegression(), ["a", "b"])
    ['a', 'b']
    >>> encoded = make_column_transformer((OneHotEncoder(), ["b"]), (StandardScaler(), ["a"]))
    >>> needs_numbers(make_pipeline(encoded, LinearRegression()), ["a", "b"])
    ['a']
    >>> needs_numbers(lambda X: X, ["a"])
    []
    """
    estimator = getattr(model, "__self__", model)                  # a bound predict: its estimator
    if not type(estimator).__module__.startswith("sklearn.") or not hasattr(estimator, "get_params"):
        return []
    kind = type(estimator).__name__
    if kind == "Pipeline":
        step = first_step(estimator)
        return needs_numbers(step, columns) if step is not None else []
    if kind == "ColumnTransformer":
        out: list[str] = []
        for _, transformer, spec in getattr(estimator, "transformers_", None) or estimator.transformers:
            picked = _selected(spec, columns)
            if picked and not isinstance(transformer, str):       # "drop", "passthrough": not its to say
                out += [c for c in needs_numbers(transformer, picked) if c not in out]
        return out
    inner = any(hasattr(v, "get_params") or callable(v) for v in estimator.get_params(deep=False).values())
    if inner or kind == "FunctionTransformer":                  # a function, estimators of its own, or what comes
        return []                                               # after a passthrough decide
    from sklearn.utils import get_tags

    try:
        tags = get_tags(estimator).input_tags
    except Exception:                                           # noqa: BLE001 - an estimator sklearn cannot tag
        return []
    return [] if tags.string or tags.categorical else list(columns)


def refuse_words(frame: Any, model: Any, where: str) -> None:
    """Refuse, before any model call, the columns of words in ``frame`` (named ``where``: flag and path) that
    ``model`` takes as numbers only (:func:`needs_numbers`).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LinearRegression
    >>> refuse_words(pd.DataFrame({"a": [1.0], "b": ["lo"]}), LinearRegression(), "--data x.csv")
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: --data x.csv column 'b' holds words ('lo'), but the model (LinearRegression) takes it as numbers only:
    write it in the CSV as numbers, or give --model a scikit-learn Pipeline (saved as .skops) whose ColumnTransformer
    encodes it (OneHotEncoder, OrdinalEncoder)
    """
    words = word_columns(frame)
    if not words:
        return
    refused = [c for c in needs_numbers(model, [str(c) for c in frame.columns]) if c in words]
    if refused:
        name = type(getattr(model, "__self__", model)).__name__
        it = "them" if len(refused) > 1 else "it"
        raise ValueError(f"{where} {_named(refused, words)}, but the model ({name}) takes {it} as numbers only: "
                         + _WHAT_TO_DO.format(it=it))


def words_refused(exc: BaseException, frames: dict[str, Any]) -> ValueError | None:
    """The model's failure ``exc`` on one of the words of ``frames`` (``{where: frame}``) as an error naming the
    columns and what to do; None when its message (nor that of an error that led to it) quotes none of them.

    Examples
    --------
    >>> import pandas as pd
    >>> error = ValueError("could not convert string to float: 'hi'")
    >>> print(words_refused(error, {"--data x.csv": pd.DataFrame({"b": ["lo", "hi"]})}))  # doctest: +ELLIPSIS
    --data x.csv column 'b' holds words ('lo', 'hi'), which the model did not take (could not convert ...): ...
    """
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain and len(chain) < 8:   # the model's own error may lie deeper
        chain.append(link)
        link = link.__cause__ or link.__context__
    said = " ".join(str(e) for e in chain)
    for where, frame in frames.items():
        words = word_columns(frame) if frame is not None else {}
        quoted = [c for c, values in words.items() if any(repr(v) in said for v in values)]
        if quoted:
            cause = next(e for e in reversed(chain) if any(repr(v) in str(e) for c in quoted for v in words[c]))
            first = next((line.strip() for line in str(cause).splitlines() if line.strip()), "")
            return ValueError(f"{where} {_named(quoted, words)}, which the model did not take ({first[:200]}): "
                              + _WHAT_TO_DO.format(it="them" if len(quoted) > 1 else "it"))
    return None


def _named(columns: list[str], words: dict[str, list]) -> str:
    """``column 'b' holds words ('lo', 'hi')``, or ``columns 'b', 'c' hold words ('lo', 'hi', ...)``."""
    shown = [w for c in columns for w in words[c]]
    listed = ", ".join(repr(w) for w in shown[:3]) + (", ..." if len(shown) > 3 else "")
    names = ", ".join(repr(c) for c in columns[:10]) + (", ..." if len(columns) > 10 else "")
    return f"column{'s' if len(columns) > 1 else ''} {names} hold{'' if len(columns) > 1 else 's'} words ({listed})"
