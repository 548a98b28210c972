"""The Reader: what one tree library's models tell fairshare, behind one interface.

A reader turns a model of its library into the one internal tree table (:class:`~fairshare.trees.ensemble.
TreeEnsemble`: splits, categorical decisions, output scale, base score, class layout) and answers every other
question the rest of fairshare asks about such a model: is it a tree model, its raw output on rows, its feature
names, whether it takes NaN, what a row costs it, what changes when it is refitted, how rows in the library's own
containers are read, how its categories are coded, and how it is loaded from its own file format. Every method
but :meth:`Reader.read` and :meth:`Reader.margin` has a default that suits a library that says nothing special.

A new tree library is a subclass in ``trees/readers/<library>.py`` and its line in ``trees/readers/__init__.py``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ensemble import TreeEnsemble, UnreadableSplits

__all__ = ["Reader", "attribute_tree_levels", "attribute_state", "booster_state", "named_rows"]


class Reader:
    """One tree library's models: reading, raw output and the library's facts.

    Attributes
    ----------
    name : the library's import name; a class defined in its modules is its model (see :meth:`claims`)
    title : how messages name the library (e.g. ``"scikit-learn"``)
    suffixes : suffixes of the files of its own format that the command line reads with :meth:`load`
    check_missing : whether the rows that check a reading (:func:`~fairshare.trees.readers.reading.probe_rows`)
        hold missing values (the library's own predict takes NaN and follows each split's default way)

    Examples
    --------
    >>> class Constant:                                  # a "library" of one-leaf models
    ...     value = 2.0
    >>> class ConstantReader(Reader):
    ...     name = title = "constant"
    ...     def claims(self, cls): return cls is Constant
    ...     def is_tree_model(self, model): return True
    ...     def read(self, model):
    ...         from fairshare.trees.ensemble import assemble
    ...         leaf = dict(feature=[-1], threshold=[0.0], left=[-1], right=[-1], default_left=[True],
    ...                     missing=[0], cover=[1.0], value=np.full((1, 1), model.value))
    ...         return assemble([leaf], 1, 1, np.zeros(1), strict=False, float32=False)
    ...     def margin(self, model, X): return np.full((len(X), 1), model.value)
    >>> reader = ConstantReader()
    >>> reader.owns(Constant()), reader.read(Constant()).predict(np.zeros((2, 1))).ravel().tolist()
    (True, [2.0, 2.0])
    """

    name: str = ""
    title: str = ""
    suffixes: tuple[str, ...] = ()
    check_missing: bool = False

    # ------------------------------------------------------------------------------ which models
    def claims(self, cls: type) -> bool:
        """Whether the class ``cls`` (one class of a model's MRO) is the library's: defined in its modules."""
        module = getattr(cls, "__module__", "") or ""
        return module == self.name or module.startswith(self.name + ".")

    def owns(self, model: Any) -> bool:
        """Whether ``model``'s class or a class it derives from is the library's."""
        return any(self.claims(cls) for cls in type(model).__mro__)

    def is_tree_model(self, model: Any) -> bool:
        """Whether ``model`` (one of the library's objects) is a tree model (it may still be refused when read)."""
        raise NotImplementedError

    def readable(self, model: Any) -> bool:
        """Whether :meth:`read` is tried on ``model``; False refuses it as no tree model of any library. A reader
        whose :meth:`read` says itself why a model of its library holds no trees returns True."""
        return self.is_tree_model(model)

    # ------------------------------------------------------------------------------ the tree table
    def read(self, model: Any) -> TreeEnsemble:
        """The model as one tree table, reproducing :meth:`margin`."""
        raise NotImplementedError

    def read_trees(self, model: Any) -> TreeEnsemble:
        """The model's trees read without a model call, for planning: what only a prediction tells (a base margin)
        left NaN for :meth:`settle`. Default: :meth:`read` (a library whose files hold everything)."""
        return self.read(model)

    def settle(self, model: Any, ensemble: TreeEnsemble) -> None:
        """Complete, in place, a reading of :meth:`read_trees` whose base is NaN (default: nothing is owed)."""

    def margin(self, model: Any, X: np.ndarray) -> np.ndarray:
        """The model's own raw output (what :meth:`read` reproduces) for numeric rows: ``(m, k)``."""
        raise NotImplementedError

    def raw_output(self, model: Any) -> Callable[[Any], np.ndarray]:
        """The model's own raw output as a function of rows as the model takes them (frames with categories too)."""
        return lambda rows: self.margin(model, rows)

    # ------------------------------------------------------------------------------ facts
    def feature_names(self, model: Any) -> tuple[list[str], str] | None:
        """The names the model was fitted with and where they come from, when the library stores them."""
        return None

    def accepts_missing(self, model: Any) -> bool | None:
        """Whether the model takes NaN as a missing value (None: the library does not say)."""
        return None

    def stored_name(self, name: str) -> str | None:
        """How the library rewrites a feature name when it stores it (None: it keeps names as they are)."""
        return None

    def tree_levels(self, model: Any) -> float | None:
        """Tree levels one row walks in the model (trees x depth), for the cost of a row; None when unknown."""
        return attribute_tree_levels(model)

    def fit_state(self, model: Any) -> tuple:
        """What changes when the model is refitted (compared by identity and value; see ``trees.prepared``)."""
        return attribute_state(model)

    # ------------------------------------------------------------------------------ rows
    def rows(self, X: Any, name: str) -> Any:
        """``X`` as dense float rows when it is one of the library's own data containers (a DataFrame of them when
        the container names its columns: matched to the model's features by name), else None; a container whose
        rows cannot be read back is refused here, naming what to pass instead."""
        return None

    def category_codes(self, values: Any, categories: np.ndarray, name: str, column: str) -> np.ndarray:
        """Codes of a column's categories for an ensemble whose ``category_hash`` names this reader."""
        raise NotImplementedError(f"the {self.title} reader codes no categories by hash")

    # ------------------------------------------------------------------------------ classes of features
    def read_classes(self, model: Any) -> tuple[TreeEnsemble, list[list[int]]]:
        """The model read with *classes* of features as players, for a model whose splits read several features
        at once: the ensemble (a class of several features is player ``n_features + j``) and each class's members."""
        raise UnreadableSplits(f"the {self.title} reader reads no classes of features")

    def model_rows(self, model: Any, X: Any) -> Any:
        """``X`` arranged as the model's own predict takes it (its column order; one row made two-dimensional)."""
        return X

    def split_decisions(self, model: Any, X: Any, ensemble: TreeEnsemble) -> tuple[np.ndarray, np.ndarray]:
        """For a reading by :meth:`read_classes`: ``go_left[node, row]`` decided by the model itself for the rows
        ``X`` (as :meth:`model_rows` gives them), and the model's raw output on them ``(rows, k)``."""
        raise NotImplementedError(f"the {self.title} reader decides no splits through the model")

    # ------------------------------------------------------------------------------ files
    def load(self, path: str) -> Any:
        """The model saved at ``path`` in the library's own format (one of :attr:`suffixes`)."""
        raise NotImplementedError(f"the {self.title} reader loads no files")


def named_rows(rows: np.ndarray, names: Any) -> Any:
    """Float rows of a library's container as :meth:`Reader.rows` gives them: a DataFrame named by the container's
    feature names where it names every column once (its columns are then matched to the model's by name, as the
    library does), else the array (its columns taken by position).

    Examples
    --------
    >>> named_rows(np.zeros((1, 2)), ["a", "b"]).columns.tolist(), type(named_rows(np.zeros((1, 2)), None)).__name__
    (['a', 'b'], 'ndarray')
    """
    names = [str(n) for n in names] if names is not None else []
    if len(names) != rows.shape[1] or not all(names) or len(set(names)) != len(names):
        return rows
    import pandas as pd

    return pd.DataFrame(rows, columns=names)


def attribute_tree_levels(model: Any) -> float | None:
    """Tree levels one row walks (trees x depth) from the attributes a model holds (fitted trees, or the settings
    of an unfitted forest or boosting model), or None when it holds none.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> attribute_tree_levels(DecisionTreeRegressor(max_depth=3).fit(np.eye(8), np.arange(8.0)))
    3.0
    """
    estimators = getattr(model, "estimators_", None)
    if estimators is not None:
        flat = np.ravel(np.asarray(estimators, dtype=object))
        depths = [getattr(getattr(e, "tree_", None), "max_depth", None) for e in flat]
        if depths and all(d is not None for d in depths):
            return float(sum(depths))
    if hasattr(model, "tree_"):
        return float(model.tree_.max_depth)
    if hasattr(model, "_predictors"):                          # HistGradientBoosting
        return float(sum(len(p) for p in model._predictors) * (getattr(model, "max_depth", None) or 8))
    trees = getattr(model, "n_estimators", None) or getattr(model, "max_iter", None)
    if isinstance(trees, (int, np.integer)) and ("Forest" in type(model).__name__ or "Boost" in type(model).__name__
                                                 or "Trees" in type(model).__name__):
        return float(trees * (getattr(model, "max_depth", None) or 10))       # not fitted yet: its settings
    return None


def attribute_state(model: Any) -> tuple:
    """A model's fitted state from the containers of its trees (compared by identity) and its number of features.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor().fit(np.eye(2), [0.0, 1.0])
    >>> attribute_state(model)[1] is model.tree_
    True
    """
    state: list[Any] = [type(model)]
    for attr in ("tree_", "estimators_", "_predictors", "init_", "estimators_features_"):
        state.append(getattr(model, attr, None))
    state.append(getattr(model, "n_features_in_", None))
    return tuple(state)


def booster_state(model: Any, booster: Any, settings: tuple = ()) -> tuple:
    """The fitted state of a model held in a booster object: the booster (by identity, unless it is the model
    itself), its rounds and best iteration; ``settings`` are the wrapper's own values that change predictions.

    Examples
    --------
    >>> class Booster:
    ...     best_iteration = None
    ...     def num_boosted_rounds(self): return 3
    >>> b = Booster(); booster_state(b, b)[1:]
    (3, None)
    """
    state: list[Any] = [type(model), *settings]
    if booster is not model:                     # (the key itself must not be held by its own entry)
        state.append(booster)
    for counter in ("num_boosted_rounds", "current_iteration"):
        if hasattr(booster, counter):
            state.append(getattr(booster, counter)())
    state.append(getattr(booster, "best_iteration", None))
    return tuple(state)
