"""The scikit-learn reader: its tree models read into a :class:`TreeEnsemble`.

Decision trees and extra trees, random forests and extra-trees ensembles (class probabilities
for classifiers, averaged), bagging ensembles of trees (each tree on its own feature subset),
gradient boosting with a constant initial estimate (margins), HistGradientBoosting regressors
and classifiers (margins; numerical and categorical splits, unknown categories following the
missing-value direction as scikit-learn does, categories coded by the model's own encoder) and
IsolationForest (its average path length, the quantity ``score_samples`` transforms:
``score_samples = -2 ** (-path_length / c(max_samples))``; what shap.TreeExplainer explains).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._core.tables import is_missing
from ..ensemble import TreeEnsemble, assemble
from .base import Reader

__all__ = ["SklearnReader", "read_sklearn", "sklearn_raw_output", "is_sklearn_tree_model"]

_TREE_CLASSES = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier", "ExtraTreeRegressor",
                 "RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor",
                 "GradientBoostingClassifier", "GradientBoostingRegressor", "HistGradientBoostingClassifier",
                 "HistGradientBoostingRegressor", "IsolationForest", "BaggingClassifier", "BaggingRegressor")


def is_sklearn_tree_model(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn estimator of a tree family (fitted or not)."""
    if not any(type(model).__name__ == c or any(b.__name__ == c for b in type(model).__mro__) for c in _TREE_CLASSES):
        return False
    if type(model).__name__.startswith("Bagging") or any(b.__name__.startswith("Bagging") for b in type(model).__mro__):
        base = getattr(model, "estimator", None)
        return base is None or _is_single_tree(base)
    return True


def _is_single_tree(est: Any) -> bool:
    from sklearn.tree import BaseDecisionTree

    return isinstance(est, BaseDecisionTree)


def _tree_arrays(tree: Any, scale: float, probability: bool, k: int, column: int | None = None,
                 features: np.ndarray | None = None) -> dict:
    t = tree.tree_
    value = t.value[:, :, 0] if t.value.shape[2] == 1 else t.value[:, 0, :]
    if t.value.shape[2] > 1 and probability:
        value = value / np.maximum(value.sum(axis=1, keepdims=True), 1e-300)
    value = np.asarray(value, dtype=float) * scale
    if column is not None:
        full = np.zeros((value.shape[0], k))
        full[:, column] = value[:, 0]
        value = full
    leaf = t.children_left < 0
    feature = t.feature if features is None else np.where(leaf, -1, np.asarray(features)[np.maximum(t.feature, 0)])
    missing_left = getattr(t, "missing_go_to_left", None)
    default_left = np.asarray(missing_left, dtype=bool) if missing_left is not None else np.ones(leaf.size, bool)
    return dict(feature=np.where(leaf, -1, feature), threshold=np.where(leaf, 0.0, t.threshold),
                left=t.children_left, right=t.children_right, default_left=default_left,
                missing=np.zeros(leaf.size), cover=t.weighted_n_node_samples.astype(float), value=value)


def _forest(model: Any, classifier: bool) -> TreeEnsemble:
    scale = 1.0 / len(model.estimators_)
    feature_sets = getattr(model, "estimators_features_", None)
    trees = [_tree_arrays(est, scale, classifier, 0,
                          features=None if feature_sets is None else feature_sets[i])
             for i, est in enumerate(model.estimators_)]
    k = max(t["value"].shape[1] for t in trees)
    if classifier:
        k = len(model.classes_)
        for tree, est in zip(trees, model.estimators_):
            if tree["value"].shape[1] != k:           # a bagged tree that saw only some classes
                full = np.zeros((tree["value"].shape[0], k))
                full[:, np.asarray(est.classes_, dtype=np.int64)] = tree["value"]
                tree["value"] = full
    return assemble(trees, model.n_features_in_, k, np.zeros(k), strict=False, float32=True,
                    output="probability" if classifier else "prediction")


def _check_init(model: Any) -> None:
    """Refuse a gradient boosting model whose init estimator is no constant (its margin is then no sum of trees
    plus a base) or draws its predictions at random (``DummyClassifier(strategy="stratified")``: a new one-hot
    draw per row and call, so the model's own predictions are random and no explanation holds for them)."""
    init = model.init_
    kind = type(init).__name__
    if not (isinstance(init, str) and init == "zero") and kind not in ("DummyRegressor", "DummyClassifier"):
        raise ValueError(f"{type(model).__name__} with a non-constant init estimator ({kind}) is "
                         "not a sum of trees and cannot be explained exactly; explain it with "
                         "fs.explain(model.predict, X, background=...)")
    if kind == "DummyClassifier" and getattr(init, "strategy", None) == "stratified":
        raise ValueError(f"the {type(model).__name__}'s init estimator is DummyClassifier(strategy='stratified'), "
                         "which draws its probabilities at random on every call: the model's own predictions are "
                         "random, so no explanation of them holds; refit it with a deterministic init (the default "
                         "init=None, or DummyClassifier(strategy='prior'))")


def _gradient_boosting(model: Any) -> TreeEnsemble:
    _check_init(model)
    stages = model.estimators_                       # (n_stages, k)
    k = stages.shape[1]
    trees = [_tree_arrays(stages[i, j], model.learning_rate, False, k, column=j)
             for i in range(stages.shape[0]) for j in range(k)]
    probe = np.zeros((1, model.n_features_in_))
    base = np.asarray(model._raw_predict_init(probe), dtype=float).reshape(k)
    return assemble(trees, model.n_features_in_, k, base, strict=False, float32=True, output="margin")


def _isolation_forest(model: Any) -> TreeEnsemble:
    n_trees = len(model.estimators_)
    trees = []
    for est, feats, depth, avg in zip(model.estimators_, model.estimators_features_, model._decision_path_lengths,
                                      model._average_path_length_per_tree):
        arrays = _tree_arrays(est, 1.0, False, 1, features=feats)
        leaf = est.tree_.children_left < 0
        # the quantity score_samples sums: nodes on the path + c(samples in the leaf) - 1
        arrays["value"] = np.where(leaf, np.asarray(depth) + np.asarray(avg) - 1.0, 0.0)[:, None] / n_trees
        trees.append(arrays)
    return assemble(trees, model.n_features_in_, 1, np.zeros(1), strict=False, float32=True,
                    output="average path length")


def _hist_gradient_boosting(model: Any) -> TreeEnsemble:
    n = model.n_features_in_
    perm = np.arange(n)                              # model column -> original feature
    maps: dict[int, np.ndarray] = {}
    pre = getattr(model, "_preprocessor", None)
    if pre is not None:
        order, encoder_cols = [], None
        for name, transformer, columns in pre.transformers_:
            cols = np.flatnonzero(columns) if np.asarray(columns).dtype == bool else np.asarray(columns, dtype=int)
            if name == "encoder":
                encoder_cols = cols
                for j, cats in zip(cols, transformer.categories_):
                    cats = np.asarray(cats, dtype=object)
                    known = [c for c in cats.tolist() if not is_missing(c)]      # NaN is encoded as missing
                    numeric = all(isinstance(c, (int, float, np.integer, np.floating)) for c in known)
                    maps[int(j)] = np.asarray(known, dtype=float if numeric else object)
            order.extend(int(c) for c in cols)
        perm = np.asarray(order, dtype=np.int64)
        del encoder_cols
    known, f_idx_map = (None, None)
    if model.is_categorical_ is not None and np.any(model.is_categorical_):
        known, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
    k = len(model._predictors[0])
    trees = []
    for iteration in model._predictors:
        for j, predictor in enumerate(iteration):
            trees.append(_hgb_tree(predictor, j, k, perm, known, f_idx_map))
    base = np.asarray(model._baseline_prediction, dtype=float).reshape(-1)
    return assemble(trees, n, k, np.broadcast_to(base, (k,)).copy(), strict=False, float32=False, output="margin",
                    category_maps=maps)


def _bits(words: np.ndarray) -> np.ndarray:
    """Categories set in a scikit-learn bitset (uint32 words)."""
    words = np.asarray(words, dtype=np.uint32)
    bits = (words[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & 1
    return np.flatnonzero(bits.reshape(-1))


def _hgb_tree(predictor: Any, out: int, k: int, perm: np.ndarray, known: Any, f_idx_map: Any) -> dict:
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    size = leaf.size
    value = np.zeros((size, k))
    value[leaf, out] = nodes["value"][leaf]
    feature = np.where(leaf, -1, perm[nodes["feature_idx"]])
    tree = dict(feature=feature, threshold=np.where(leaf, 0.0, nodes["num_threshold"]),
                left=np.where(leaf, -1, nodes["left"]).astype(np.int64),
                right=np.where(leaf, -1, nodes["right"]).astype(np.int64),
                default_left=nodes["missing_go_to_left"].astype(bool), missing=np.zeros(size),
                cover=nodes["count"].astype(float), value=value)
    is_cat = nodes["is_categorical"].astype(bool) & ~leaf
    if is_cat.any():
        left_sets, right_sets = {}, {}
        for node in np.flatnonzero(is_cat):
            goes_left = _bits(predictor.raw_left_cat_bitsets[nodes["bitset_idx"][node]])
            known_cats = _bits(known[f_idx_map[nodes["feature_idx"][node]]])
            left_sets[int(node)] = goes_left
            right_sets[int(node)] = np.setdiff1d(known_cats, goes_left)
        # an unknown category follows the missing-value direction (scikit-learn's rule)
        tree.update(categorical=is_cat, cat_left=left_sets, cat_right=right_sets,
                    cat_other_left=nodes["missing_go_to_left"].astype(bool))
    return tree


def _refuse_several_targets(model: Any) -> None:
    """A classifier fitted on several targets (``y`` of shape ``(m, t)``, ``t > 1``) predicts one probability array
    per target, each of its own classes; its trees hold ``(t, classes)`` per node, which one output per class would
    silently cut to the first target: refused, with the way out."""
    targets = int(getattr(model, "n_outputs_", 1) or 1)
    if targets > 1 and hasattr(model, "classes_") and isinstance(model.classes_, list):
        raise ValueError(f"the {type(model).__name__} was fitted on {targets} targets (a multi-output classifier): its "
                         "trees cannot be explained exactly as one output per class; fit one classifier per target, "
                         "or explain fs.explain(lambda X: model.predict_proba(X)[t], X, background=...) for target t")


def read_sklearn(model: Any) -> TreeEnsemble:
    """Read a scikit-learn tree model; see the module docstring for the families."""
    from sklearn.ensemble import (BaggingClassifier, BaggingRegressor, ExtraTreesClassifier, ExtraTreesRegressor,
                                  GradientBoostingClassifier, GradientBoostingRegressor,
                                  HistGradientBoostingClassifier, HistGradientBoostingRegressor, IsolationForest,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import BaseDecisionTree, DecisionTreeClassifier

    if not hasattr(model, "n_features_in_"):
        raise ValueError(f"the {type(model).__name__} is not fitted; fit it before explaining it")
    names = [str(c) for c in model.feature_names_in_] if hasattr(model, "feature_names_in_") else None
    _refuse_several_targets(model)
    if isinstance(model, BaseDecisionTree):
        classifier = isinstance(model, DecisionTreeClassifier)
        tree = _tree_arrays(model, 1.0, classifier, 0)
        k = tree["value"].shape[1]
        ens = assemble([tree], model.n_features_in_, k, np.zeros(k), strict=False, float32=True,
                       output="probability" if classifier else "prediction")
    elif isinstance(model, (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)):
        ens = _forest(model, isinstance(model, (RandomForestClassifier, ExtraTreesClassifier)))
    elif isinstance(model, (BaggingClassifier, BaggingRegressor)):
        if not all(isinstance(e, BaseDecisionTree) for e in model.estimators_):
            raise ValueError(f"{type(model).__name__} holds {type(model.estimators_[0]).__name__} estimators; only "
                             "bagged decision trees are tree ensembles")
        classifier = isinstance(model, BaggingClassifier)
        if classifier and not hasattr(model.estimators_[0], "predict_proba"):
            raise ValueError("a BaggingClassifier explained exactly needs estimators with predict_proba")
        ens = _forest(model, classifier)
    elif isinstance(model, (GradientBoostingClassifier, GradientBoostingRegressor)):
        ens = _gradient_boosting(model)
    elif isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)):
        ens = _hist_gradient_boosting(model)
    elif isinstance(model, IsolationForest):
        ens = _isolation_forest(model)
    else:
        raise TypeError(f"unsupported scikit-learn model {type(model).__name__}")
    ens.feature_names = names
    if not isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor, IsolationForest)):
        ens.refuses_float32_overflow = type(model).__name__      # its predict casts rows to float32 and checks them
    return ens


def average_path_length(n_samples: float) -> float:
    """The average path length of an unsuccessful search in a binary search tree of ``n_samples`` points (Liu et
    al.'s ``c(n)``, IsolationForest's normalizer): 0 below two points, 1 at two, else
    ``2 (ln(n - 1) + Euler's gamma) - 2 (n - 1) / n``.

    Examples
    --------
    >>> average_path_length(2), round(average_path_length(256), 6)
    (1.0, 10.244771)
    """
    n = float(n_samples)
    if n <= 1:
        return 0.0
    if n <= 2:
        return 1.0
    return float(2.0 * (np.log(n - 1.0) + np.euler_gamma) - 2.0 * (n - 1.0) / n)


def sklearn_raw_output(model: Any, X: np.ndarray) -> np.ndarray:
    """The model's own raw output for numeric rows (what :func:`read_sklearn` reproduces): ``(m, k)``."""
    from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                                  HistGradientBoostingRegressor, IsolationForest)
    if isinstance(model, IsolationForest):
        scores = -np.asarray(model.score_samples(X), dtype=float)
        out = -np.log2(scores) * average_path_length(model._max_samples)
    elif isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)):
        out = model._raw_predict(X)
        out = np.asarray(out, dtype=float).T if out.shape[0] != X.shape[0] else out
    elif isinstance(model, GradientBoostingClassifier):
        out = model.decision_function(X)
    elif hasattr(model, "predict_proba"):
        out = model.predict_proba(X)
    else:
        out = model.predict(X)
    return np.asarray(out, dtype=float).reshape(X.shape[0], -1)


class SklearnReader(Reader):
    """scikit-learn's tree models (the families of the module docstring); its other estimators are no tree models.
    Their other facts (feature names, NaN, cost, fitted state) come from scikit-learn's own conventions, which the
    defaults of :class:`~fairshare.trees.readers.base.Reader` and :mod:`fairshare._core.tables` read."""

    name = "sklearn"
    title = "scikit-learn"

    def is_tree_model(self, model: Any) -> bool:
        return is_sklearn_tree_model(model)

    def read(self, model: Any) -> TreeEnsemble:
        return read_sklearn(model)

    def margin(self, model: Any, X: np.ndarray) -> np.ndarray:
        return sklearn_raw_output(model, X)
