"""The catboost reader: oblivious trees (:mod:`.trees`), categories read through catboost's hash (:mod:`.hashing`),
and the combination classes of catboost's own path-dependent attribution.

A split on a CTR of a feature *combination* reads several features at once, so it belongs to no single feature:
catboost's TreeSHAP gives each *combination class* (the projection's categorical features) a value of its own and
splits it equally among the class's features. The reader reads such a model with those classes as players
(:meth:`CatBoostReader.read_classes`) and lets the model decide every split for the explained rows
(:meth:`CatBoostReader.split_decisions`: ``calc_leaf_indexes`` gives the leaf of every tree, whose bits are the
split decisions of an oblivious tree); :func:`fairshare.trees.classes.class_explanation` walks and shares the values.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ensemble import TreeEnsemble
from ..base import Reader, named_rows
from .hashing import hash_codes
from .trees import catboost_margin, fitted_names, read_catboost

__all__ = ["CatBoostReader", "read_catboost", "catboost_margin"]

_CLASSIFYING_LOSSES = ("Logloss", "CrossEntropy", "MultiClass", "MultiClassOneVsAll", "MultiLogloss",
                       "MultiCrossEntropy")
_LABEL_LOSSES = ("MultiLogloss", "MultiCrossEntropy")          # one logistic per label of a 0/1 label matrix


def _loss(model: Any) -> str:
    """The name of the model's loss (``"MultiLogloss"``, ...; empty when it names none)."""
    try:
        return str(model.get_all_params().get("loss_function", "")).split(":")[0]
    except Exception:                                   # noqa: BLE001 - a model that lists no parameters
        return ""


class CatBoostReader(Reader):
    """catboost's models of oblivious trees, numerical and categorical features; files ``.cbm`` (``save_model``),
    loaded as ``CatBoostClassifier`` or ``CatBoostRegressor`` by their loss."""

    name = title = "catboost"
    suffixes = (".cbm",)

    def is_tree_model(self, model: Any) -> bool:
        return hasattr(model, "save_model")

    def read(self, model: Any) -> TreeEnsemble:
        ens = read_catboost(model)
        ens.labels = ens.n_outputs > 1 and _loss(model) in _LABEL_LOSSES
        return ens

    def margin(self, model: Any, X: np.ndarray) -> np.ndarray:
        return catboost_margin(model, X)

    def raw_output(self, model: Any) -> Callable[[Any], np.ndarray]:
        def raw_formula_value(rows: Any) -> np.ndarray:       # catboost's margin, what its trees would give
            return np.asarray(model.predict(rows, prediction_type="RawFormulaVal"), dtype=float)

        return raw_formula_value

    def feature_names(self, model: Any) -> tuple[list[str], str] | None:
        names = fitted_names(model)               # None for unnamed features (catboost numbers them)
        return (names, "the model's features (catboost's feature_names_)") if names else None

    def accepts_missing(self, model: Any) -> bool | None:
        return True

    def tree_levels(self, model: Any) -> float | None:
        return float(model.tree_count_ * (model.get_param("depth") or 6)) if hasattr(model, "tree_count_") else None

    def fit_state(self, model: Any) -> tuple:
        leaves = np.asarray(model.get_leaf_values()) if getattr(model, "is_fitted", lambda: False)() else None
        return (type(model), getattr(model, "tree_count_", None),
                None if leaves is None else hash(leaves.tobytes()))

    def rows(self, X: Any, name: str) -> Any:
        """A catboost ``Pool`` of numbers: its features (float32, as the trees compare them), a frame named by the
        Pool's feature names where it has them (catboost matches a Pool's columns to the model by name); a Pool
        with a baseline, or categorical, text or embedding features (kept only as hashes), or quantized, is
        refused naming what to pass."""
        if type(X).__name__ != "Pool" or not self.owns(X):
            return None
        if np.asarray(X.get_baseline()).size:
            raise ValueError(f"{name} is a catboost Pool with a baseline: catboost adds that offset per row to the "
                             "trees, and no feature carries it, so values of the trees would not add up to the "
                             f"model's predictions on {name}; pass the rows without a baseline (and add the offset "
                             "to the grand and empty values yourself)")
        kinds = [kind for kind, idx in (("categorical", X.get_cat_feature_indices()),
                                        ("text", X.get_text_feature_indices()),
                                        ("embedding", X.get_embedding_feature_indices())) if len(idx)]
        if kinds or X.is_quantized():
            why = f"{kinds[0]} features (a Pool keeps them only as hashes)" if kinds else "quantized features (bins)"
            raise ValueError(f"{name} is a catboost Pool with {why}, from which its rows cannot be read back; pass "
                             "the rows the Pool was made from (a DataFrame or an array) instead")
        return named_rows(np.asarray(X.get_features(), dtype=float), X.get_feature_names())

    def category_codes(self, values: Any, categories: np.ndarray, name: str, column: str) -> np.ndarray:
        return hash_codes(values, categories, name, column)

    def read_classes(self, model: Any) -> tuple[TreeEnsemble, list[list[int]]]:
        return read_catboost(model, classes=True)

    def model_rows(self, model: Any, X: Any) -> Any:
        """``X`` in the model's column order, as catboost takes it (a frame keeps its names; one row becomes
        two-dimensional)."""
        names = list(getattr(model, "feature_names_", None) or [])
        if hasattr(X, "columns") and names and set(names) <= set(map(str, X.columns)):
            return X[[c for n in names for c in X.columns if str(c) == n]]
        if hasattr(X, "to_frame") and hasattr(X, "index"):
            return X.to_frame().T
        return X if np.ndim(X) == 2 else np.asarray(X, dtype=object)[None, :]

    def split_decisions(self, model: Any, X: Any, ensemble: TreeEnsemble) -> tuple[np.ndarray, np.ndarray]:
        from catboost import Pool

        ens = ensemble
        pool = Pool(X, cat_features=list(model.get_cat_feature_indices()))
        leaves = np.asarray(model.calc_leaf_indexes(pool), dtype=np.int64)          # (rows, trees)
        go_left_t = np.zeros((ens.feature.size, leaves.shape[0]), dtype=np.bool_)
        sizes = np.diff(np.append(ens.roots, ens.feature.size))
        depths = np.log2(sizes + 1).astype(np.int64) - 1
        for depth in np.unique(depths):               # the trees of one depth at once
            trees = np.flatnonzero(depths == depth)
            for lev in range(int(depth)):             # heap level lev splits on split depth - 1 - lev: that leaf bit
                nodes = ens.roots[trees][:, None] + np.arange((1 << lev) - 1, (1 << (lev + 1)) - 1)[None, :]
                bit = (leaves[:, trees] >> (depth - 1 - lev)) & 1 == 0                # (rows, trees)
                go_left_t[nodes] = bit.T[:, None, :]
        grand = np.asarray(model.predict(pool, prediction_type="RawFormulaVal"), dtype=float)
        return go_left_t, grand.reshape(leaves.shape[0], -1)

    def load(self, path: str) -> Any:
        import catboost

        model = catboost.CatBoost()
        model.load_model(path)
        typed = catboost.CatBoostClassifier() if _loss(model) in _CLASSIFYING_LOSSES else \
            catboost.CatBoostRegressor()
        typed.load_model(path)
        return typed
