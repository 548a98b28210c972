"""Tree libraries, one :class:`~fairshare.trees.readers.base.Reader` each, and the questions asked of their models.

Every library-specific answer fairshare needs lives in a reader: the model as one tree table, its raw output, its
feature names, whether it takes NaN, the cost of a row, its fitted state, its own data containers and category
codes, its classes of features, and its own file format. Everything else asks the functions here, which ask the
reader of the model's library (the first in :data:`READERS` that claims a class of the model's MRO). A new tree
library is its module (a ``Reader``), its line in :data:`READERS` and its test.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..._core.tables import register_library_hooks
from ..ensemble import TreeEnsemble
from .base import Reader, attribute_state, attribute_tree_levels
from .catboost import CatBoostReader
from .lightgbm import LightGBMReader
from .reading import check_reading, probe_rows, read_with, settle_reading
from .sklearn import SklearnReader
from .xgboost import XGBoostReader

__all__ = ["READERS", "Reader", "reader_for", "reader_named", "register", "is_tree_model", "read_ensemble",
           "model_margin", "raw_output", "tree_levels", "fit_state", "library_rows", "category_coder", "file_readers",
           "probe_rows", "check_ensemble", "settle_ensemble"]

#: the tree libraries fairshare reads, one line each
READERS: list[Reader] = [
    XGBoostReader(),
    LightGBMReader(),
    CatBoostReader(),
    SklearnReader(),
]


def register(reader: Reader) -> Reader:
    """Add a library's reader (after those known, so it never takes their models) and return it.

    Examples
    --------
    >>> class Toy(Reader):
    ...     name = title = "toy"
    >>> toy = register(Toy()); reader_named("toy") is toy
    True
    >>> READERS.remove(toy)
    """
    if any(r.name == reader.name for r in READERS):
        raise ValueError(f"reader: a reader named {reader.name!r} is registered already")
    READERS.append(reader)
    return reader


def reader_for(model: Any) -> Reader | None:
    """The reader of ``model``'s library: the first that claims a class of its MRO (its own class first), or None.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> reader_for(DecisionTreeRegressor()).title, reader_for(len)
    ('scikit-learn', None)
    """
    for cls in type(model).__mro__:
        for reader in READERS:
            if reader.claims(cls):
                return reader
    return None


def reader_named(name: str) -> Reader:
    """The reader whose :attr:`~Reader.name` is ``name``.

    Examples
    --------
    >>> reader_named("lightgbm").suffixes
    ('.txt',)
    """
    for reader in READERS:
        if reader.name == name:
            return reader
    raise KeyError(f"no tree reader named {name!r} (known: {[r.name for r in READERS]})")


def _not_a_tree_model(model: Any) -> TypeError:
    titles = [r.title for r in READERS]
    libraries = f"{', '.join(titles[:-1])} or {titles[-1]}" if len(titles) > 1 else titles[0]
    return TypeError(f"model must be an {libraries} tree model, got {type(model).__name__}")


def is_tree_model(model: Any) -> bool:
    """Whether ``model`` is of a tree family fairshare reads (it may still be refused when read, with the reason).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from sklearn.linear_model import LinearRegression
    >>> is_tree_model(DecisionTreeRegressor()), is_tree_model(LinearRegression()), is_tree_model(len)
    (True, False, False)
    """
    if isinstance(model, TreeEnsemble):
        return True
    reader = reader_for(model)
    return reader is not None and bool(reader.is_tree_model(model))


def read_ensemble(model: Any, check: bool = True, settle: bool = True) -> TreeEnsemble:
    """Read a tree model of any registered library into one flat representation.

    The ensemble reproduces the model's raw output: the margin for xgboost, lightgbm, catboost
    and gradient boosting, the prediction for regressors, class probabilities for scikit-learn
    tree, forest and bagging classifiers, the average path length for IsolationForest.
    ``check`` compares it with the model's own prediction on rows that exercise every split; ``settle=False``
    (with ``check=False``) reads without any model call, the base left NaN (:func:`settle_ensemble` finds it).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.arange(20.0).reshape(10, 2); y = X[:, 0] ** 2
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=2).fit(X, y))
    >>> np.allclose(ens.predict(X)[:, 0], DecisionTreeRegressor(max_depth=2).fit(X, y).predict(X))
    True
    """
    if isinstance(model, TreeEnsemble):
        return model
    reader = reader_for(model)
    if reader is None or not reader.readable(model):
        raise _not_a_tree_model(model)
    return read_with(reader, model, check, settle)


def check_ensemble(model: Any, ens: TreeEnsemble) -> TreeEnsemble:
    """``ens`` (``model``'s trees read with ``check=False``) checked against the model's own predictions, without
    reading the trees again.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor(max_depth=2).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> ens = read_ensemble(model, check=False)
    >>> check_ensemble(model, ens) is ens
    True
    """
    if isinstance(model, TreeEnsemble):
        return ens
    return check_reading(reader_for(model), model, ens)


def settle_ensemble(model: Any, ens: TreeEnsemble) -> TreeEnsemble:
    """``ens`` (``model``'s trees read with ``settle=False``) completed in place: the base its library tells only by
    a prediction (xgboost, lightgbm: one row), found once.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor(max_depth=2).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> settle_ensemble(model, read_ensemble(model, check=False, settle=False)).settled
    True
    """
    if isinstance(model, TreeEnsemble):
        return ens
    return settle_reading(reader_for(model), model, ens)


def model_margin(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The model's own raw output (what its ensemble reproduces) as a function of numeric rows.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor().fit([[0.0], [1.0]], [3.0, 5.0])
    >>> model_margin(model)(np.array([[1.0]])).tolist()
    [[5.0]]
    """
    reader = reader_for(model)
    if reader is None:
        raise _not_a_tree_model(model)
    return lambda X: reader.margin(model, X)


def raw_output(model: Any) -> Callable[[Any], np.ndarray]:
    """The tree model's own raw output (what its trees sum to: catboost's ``RawFormulaVal``, xgboost's and
    lightgbm's margin) as a function of rows as the model takes them; for models whose trees cannot be read
    (:func:`fairshare.trees.prepared.unreadable`) and are explained through their predictions.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> X = np.arange(8.0)[:, None]; model = GradientBoostingClassifier(n_estimators=3).fit(X, X[:, 0] > 3)
    >>> bool(np.allclose(raw_output(model)(X[:2]).ravel(), model.decision_function(X[:2])))
    True
    """
    reader = reader_for(model)
    if reader is None:
        raise _not_a_tree_model(model)
    return reader.raw_output(model)


def tree_levels(model: Any) -> float | None:
    """Tree levels one row walks in ``model`` (trees x depth), from its library's reader or, for a model of no
    known library, from the attributes it holds; None when ``model`` is no tree model.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> tree_levels(LinearRegression()) is None
    True
    """
    reader = reader_for(model)
    return reader.tree_levels(model) if reader is not None else attribute_tree_levels(model)


def fit_state(model: Any) -> tuple:
    """What changes when ``model`` is refitted (its library's reader says), for caches keyed by the model.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor().fit([[0.0], [1.0]], [0.0, 1.0])
    >>> before = fit_state(model); _ = model.fit([[0.0], [1.0]], [1.0, 0.0])
    >>> before[1] is fit_state(model)[1]
    False
    """
    reader = reader_for(model)
    return reader.fit_state(model) if reader is not None else attribute_state(model)


def library_rows(X: Any, name: str) -> Any:
    """``X`` as dense float rows when it is a tree library's own data container (an xgboost ``DMatrix``, a catboost
    ``Pool``; a DataFrame where the container names its columns), else None.

    Examples
    --------
    >>> library_rows(np.zeros((1, 2)), "X") is None
    True
    """
    for reader in READERS:
        rows = reader.rows(X, name)
        if rows is not None:
            return rows
    return None


def category_coder(name: str) -> Callable[[Any, np.ndarray, str, str], np.ndarray]:
    """How the reader ``name`` codes a column's categories by hash (an ensemble's ``category_hash``):
    ``coder(values, categories, argument name, column) -> codes``.

    Examples
    --------
    >>> coder = category_coder("catboost")
    >>> coder(["a", "b"], np.zeros(0, dtype=np.int64), "X", "c").tolist()     # no hash known: every value "other"
    [0.0, 0.0]
    """
    return reader_named(name).category_codes


def file_readers() -> dict[str, Reader]:
    """Suffix -> the reader that loads files of that suffix (its library's own format).

    Examples
    --------
    >>> sorted(file_readers())
    ['.cbm', '.json', '.txt', '.ubj']
    """
    return {suffix: reader for reader in READERS for suffix in reader.suffixes}


# _core sits below the trees: its tables ask the readers through these, registered when the readers are imported
def _feature_names(model: Any) -> tuple[list[str], str] | None:
    reader = reader_for(model)
    return reader.feature_names(model) if reader is not None else None


def _accepts_missing(model: Any) -> bool | None:
    reader = reader_for(model)
    return reader.accepts_missing(model) if reader is not None else None


def _stored_names(name: str) -> list[str]:
    spelled = (reader.stored_name(name) for reader in READERS)
    return [s for s in spelled if s is not None]


register_library_hooks(_feature_names, _accepts_missing, _stored_names)
