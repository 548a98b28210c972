"""Whether a model takes NaN in the rows it is given, asked before any model call: NaN in the rows is refused, naming
the argument, row and column, only where the model would refuse it.

The model's own library says first (the tree readers, registered in :mod:`.tables`); torch modules take none. A
scikit-learn ``Pipeline`` is followed step by step: NaN is taken where a step fills it (an imputer, a one-hot
encoder), and where a step passes it on (a scaler, ``"passthrough"``) the steps after it decide; the transformers of
a ``ColumnTransformer`` are followed each on its own columns. Other scikit-learn estimators say it in their tags,
and where their tags say no but they only hand the rows on, the estimators they hand them to decide: the estimator
of a ``TransformedTargetRegressor``, ``CalibratedClassifierCV``, bagging or one-vs-rest, the estimators of a voting
or stacking ensemble.
"""

from __future__ import annotations

from typing import Any, Iterable

from .tables import _HOOKS, first_step, target_of

__all__ = ["accepts_missing"]

#: where a scikit-learn meta-estimator keeps the estimator it hands its rows to (fitted first)
_WRAPPED = ("regressor_", "regressor", "estimator")


def accepts_missing(model: Any) -> bool | None:
    """Whether ``model`` takes NaN as a missing value: True for tree libraries and scikit-learn estimators whose
    tags allow NaN (or that hand the rows to estimators that all do), False for other scikit-learn estimators and
    torch modules, None for a plain function or where it is not known.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.ensemble import HistGradientBoostingClassifier
    >>> accepts_missing(LogisticRegression()), accepts_missing(HistGradientBoostingClassifier().predict)
    (False, True)
    >>> from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
    >>> from sklearn.impute import SimpleImputer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> prep = ColumnTransformer([("num", SimpleImputer(), [0]), ("cat", OneHotEncoder(), [1])])
    >>> accepts_missing(make_pipeline(prep, LogisticRegression()).predict_proba)
    True
    >>> accepts_missing(TransformedTargetRegressor(make_pipeline(SimpleImputer(), LogisticRegression())))
    True
    """
    target = target_of(model)
    module = type(target).__module__
    said = _HOOKS["accepts_missing"](target)                 # the model's own library, when it says
    if said is not None:
        return said
    if module.startswith("torch") or hasattr(target, "forward") and hasattr(target, "parameters"):
        return False
    if first_step(target) is not None:                       # a pipeline: followed step by step
        return _through([s for _, s, *_ in target.steps if s is not None and not _named(s, "passthrough")])
    if not (hasattr(target, "fit") and hasattr(target, "get_params")):
        return None
    try:
        from sklearn.utils import get_tags

        tagged = bool(get_tags(target).input_tags.allow_nan)
    except Exception:                                       # noqa: BLE001 - not an estimator sklearn can tag
        return None
    parts = None if tagged else _handed_to(target)
    return tagged if parts is None else _every(accepts_missing(p) for p in parts)


def _through(steps: list) -> bool | None:
    """Whether NaN in the rows of pipeline ``steps`` is taken: filled by the first step, or passed on (column by
    column through a ColumnTransformer) to steps that take it."""
    first, rest = steps[0], steps[1:]
    if not rest:
        return accepts_missing(first)
    if _fills(first):
        return True
    answers = []
    for part in _columns_of(first) or [first]:
        own = accepts_missing(part)
        answers.append(True if _fills(part) else False if own is False else _through(rest))
    return _every(answers)


def _fills(step: Any) -> bool:
    """Whether a transformer leaves no NaN in its output: an imputer or missing indicator, a one-hot encoder, a
    pipeline with one of them, a ColumnTransformer whose every part is one."""
    if first_step(step) is not None:
        return any(_fills(s) for _, s, *_ in step.steps if s is not None and not isinstance(s, str))
    parts = _columns_of(step)
    if parts is not None:
        return all(_fills(p) for p in parts)
    name = type(step).__name__
    return type(step).__module__.startswith("sklearn.impute") or name == "OneHotEncoder"


def _named(step: Any, word: str) -> bool:
    return isinstance(step, str) and step == word


def _every(answers: Iterable[bool | None]) -> bool | None:
    """False if any part refuses NaN, True if every part takes it, else None (not known)."""
    answers = list(answers)
    return False if False in answers else True if all(a is True for a in answers) else None


def _columns_of(target: Any) -> list | None:
    """The transformers of a scikit-learn ColumnTransformer that receive columns (None: no ColumnTransformer)."""
    if not type(target).__module__.startswith("sklearn.") or not hasattr(target, "remainder"):
        return None
    columns = getattr(target, "transformers_", None)
    fitted = columns is not None
    columns = columns if fitted else [*target.transformers, ("remainder", target.remainder, None)]
    return [part for _, part, cols in columns if not _named(part, "drop") and not (fitted and _empty(cols))]


def _handed_to(target: Any) -> list | None:
    """The estimators a scikit-learn ColumnTransformer or meta-estimator hands its rows to (None: neither)."""
    if not type(target).__module__.startswith("sklearn."):
        return None
    columns = _columns_of(target)
    if columns is not None:
        return columns
    members = getattr(target, "estimators", None)                        # voting and stacking ensembles
    if isinstance(members, list) and all(isinstance(m, tuple) for m in members):
        parts = [m[1] for m in members if not _named(m[1], "drop")]
        if getattr(target, "passthrough", False) is True:              # stacking: its final step reads the rows
            parts.append(getattr(target, "final_estimator_", None) or target.final_estimator)
        return [p for p in parts if p is not None] or None
    wrapped = next((getattr(target, a) for a in _WRAPPED if getattr(target, a, None) is not None), None)
    return None if wrapped is None else [wrapped]


def _empty(columns: Any) -> bool:
    """Whether a ColumnTransformer's column selection (as fitted) selects no column."""
    return hasattr(columns, "__len__") and not isinstance(columns, str) and len(columns) == 0
