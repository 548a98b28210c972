"""One flat array representation for tree ensembles, read from xgboost, lightgbm and scikit-learn.

Every node of every tree is a row of the same arrays (children as global indices).
Each model's own split rule is kept exactly: xgboost goes left when ``float32(x) <
threshold`` (thresholds are float32), lightgbm when ``x <= threshold`` in double,
scikit-learn when ``float32(x) <= threshold``; a missing value follows the node's
default direction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TreeEnsemble", "read_ensemble"]

# how a missing value is recognised at a node
_MISSING_NAN = 0          # NaN goes the default way (xgboost, scikit-learn, lightgbm "NaN")
_MISSING_ZERO = 1         # NaN and 0 go the default way (lightgbm "Zero")
_MISSING_AS_ZERO = 2      # NaN is compared as 0 (lightgbm "None")


@dataclass
class TreeEnsemble:
    """Nodes of all trees in flat arrays; the ensemble's output is ``base + sum of reached leaf values``.

    Attributes
    ----------
    feature : int (N,), -1 at leaves
    threshold : float (N,)
    left, right : int (N,), global child indices, -1 at leaves
    default_left : bool (N,), direction of a missing value
    missing : int8 (N,), how a missing value is recognised
    cover : float (N,), training weight reaching the node (for path-dependent values)
    value : float (N, k), leaf outputs (already scaled: learning rate, forest averaging)
    roots : int (T,), root node of each tree
    base : float (k,), constant added to the sum of leaves
    n_features : int
    strict : bool, True for ``x < threshold`` (xgboost), False for ``x <= threshold``
    float32 : bool, compare ``float32(x)`` (xgboost, scikit-learn)
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    default_left: np.ndarray
    missing: np.ndarray
    cover: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    base: np.ndarray
    n_features: int
    strict: bool
    float32: bool

    @property
    def n_outputs(self) -> int:
        return int(self.value.shape[1])

    def goes_left(self, nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Whether value ``x`` at internal node ``nodes`` goes to the left child (elementwise)."""
        x = np.asarray(x, dtype=float)
        if self.float32:
            x = x.astype(np.float32).astype(float)
        kind = self.missing[nodes]
        nan = np.isnan(x)
        compared = np.where(nan & (kind == _MISSING_AS_ZERO), 0.0, x)
        thr = self.threshold[nodes]
        with np.errstate(invalid="ignore"):
            cmp = compared < thr if self.strict else compared <= thr
        is_missing = (nan & (kind != _MISSING_AS_ZERO)) | ((kind == _MISSING_ZERO) & (compared == 0.0))
        return np.where(is_missing, self.default_left[nodes], cmp)

    def decisions(self, X: np.ndarray) -> np.ndarray:
        """``go_left[r, node]``: row ``X[r]`` goes to the left child at every internal node (False at leaves).

        Examples
        --------
        >>> from sklearn.tree import DecisionTreeRegressor
        >>> X = np.arange(8.0).reshape(-1, 1)
        >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=1).fit(X, X[:, 0] > 3))
        >>> ens.decisions(np.array([[0.0], [7.0]]))[:, ens.roots[0]]
        array([ True, False])
        """
        X = np.atleast_2d(np.asarray(X, dtype=float))
        internal = np.flatnonzero(self.feature >= 0)
        out = np.zeros((X.shape[0], self.feature.size), dtype=bool)
        out[:, internal] = self.goes_left(internal[None, :], X[:, self.feature[internal]])
        return out

    def depth(self) -> int:
        """Largest number of edges on a root-to-leaf path."""
        depth = np.zeros(self.feature.size, dtype=np.int64)
        frontier = self.roots[self.feature[self.roots] >= 0]
        level = 0
        while frontier.size:
            level += 1
            children = np.concatenate([self.left[frontier], self.right[frontier]])
            depth[children] = level
            frontier = children[self.feature[children] >= 0]
        return int(depth.max(initial=0))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw output (margin) for each row of ``X``: ``(m, k)``; vectorized over rows and trees."""
        X = np.asarray(X, dtype=float)
        m = X.shape[0]
        node = np.broadcast_to(self.roots, (m, self.roots.size)).copy()
        rows = np.broadcast_to(np.arange(m)[:, None], node.shape)
        while True:
            internal = self.feature[node] >= 0
            if not internal.any():
                break
            n_i, r_i = node[internal], rows[internal]
            left = self.goes_left(n_i, X[r_i, self.feature[n_i]])
            node[internal] = np.where(left, self.left[n_i], self.right[n_i])
        return self.base[None, :] + self.value[node].sum(axis=1)


# --------------------------------------------------------------------------------------- readers
def _assemble(trees: list[dict], n_features: int, k: int, base: np.ndarray, strict: bool, float32: bool) -> TreeEnsemble:
    """Concatenate per-tree arrays (local child indices) into one TreeEnsemble."""
    offset, roots, parts = 0, [], {key: [] for key in ("feature", "threshold", "left", "right", "default_left",
                                                       "missing", "cover", "value")}
    for t in trees:
        size = len(t["feature"])
        roots.append(offset)
        for key in parts:
            arr = np.asarray(t[key])
            if key in ("left", "right"):
                arr = np.where(arr >= 0, arr + offset, -1)
            parts[key].append(arr)
        offset += size
    value = np.concatenate(parts["value"]).reshape(offset, k)
    return TreeEnsemble(
        feature=np.concatenate(parts["feature"]).astype(np.int64),
        threshold=np.concatenate(parts["threshold"]).astype(float),
        left=np.concatenate(parts["left"]).astype(np.int64),
        right=np.concatenate(parts["right"]).astype(np.int64),
        default_left=np.concatenate(parts["default_left"]).astype(bool),
        missing=np.concatenate(parts["missing"]).astype(np.int8),
        cover=np.concatenate(parts["cover"]).astype(float),
        value=value.astype(float),
        roots=np.asarray(roots, dtype=np.int64),
        base=np.asarray(base, dtype=float).reshape(k),
        n_features=int(n_features), strict=strict, float32=float32,
    )


def _read_xgboost(booster: Any) -> TreeEnsemble:
    model = json.loads(booster.save_raw(raw_format="json"))
    learner = model["learner"]
    gbm = learner["gradient_booster"]
    if gbm.get("name", "gbtree") not in ("gbtree", "dart"):
        raise ValueError(f"only tree boosters can be read, got booster {gbm.get('name')!r}")
    inner = gbm["model"] if "model" in gbm else gbm["gbtree"]["model"]
    params = learner["learner_model_param"]
    n_features = int(params["num_feature"])
    k = max(int(params.get("num_class", "0")), int(params.get("num_target", "1")), 1)
    tree_info = inner.get("tree_info", [0] * len(inner["trees"]))
    weights = gbm.get("weight_drop", [1.0] * len(inner["trees"]))
    trees = []
    for t, out, scale in zip(inner["trees"], tree_info, weights):
        if any(int(s) != 0 for s in t.get("split_type", [])):
            raise ValueError("categorical splits are not supported; one-hot encode categorical features instead")
        left = np.asarray(t["left_children"])
        leaf = left < 0
        cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(float)
        value = np.zeros((left.size, k))
        value[leaf, int(out)] = cond[leaf] * float(scale)
        trees.append(dict(feature=np.where(leaf, -1, np.asarray(t["split_indices"])), threshold=np.where(leaf, 0.0, cond),
                          left=left, right=np.asarray(t["right_children"]),
                          default_left=np.asarray(t["default_left"], dtype=bool), missing=np.zeros(left.size),
                          cover=np.asarray(t["sum_hessian"], dtype=float), value=value))
    return _assemble(trees, n_features, k, np.zeros(k), strict=True, float32=True)


def _read_lightgbm(booster: Any) -> TreeEnsemble:
    dump = booster.dump_model()
    k = int(dump.get("num_tree_per_iteration", 1))
    n_features = int(dump["max_feature_idx"]) + 1
    average = bool(dump.get("average_output", False))
    infos = dump["tree_info"]
    n_iter = max(1, len(infos) // k)
    trees = []
    for t_index, info in enumerate(infos):
        nodes: list[dict] = []

        def walk(node: dict) -> int:
            idx = len(nodes)
            nodes.append({})
            if "leaf_value" in node or "split_feature" not in node:
                nodes[idx] = dict(feature=-1, threshold=0.0, left=-1, right=-1, default_left=True, missing=0,
                                  cover=float(node.get("leaf_count", node.get("leaf_weight", 0.0))),
                                  value=float(node.get("leaf_value", 0.0)))
                return idx
            if node.get("decision_type", "<=") != "<=":
                raise ValueError("categorical splits are not supported; one-hot encode categorical features instead")
            kind = {"NaN": _MISSING_NAN, "Zero": _MISSING_ZERO, "None": _MISSING_AS_ZERO}[node.get("missing_type", "None")]
            rec = dict(feature=int(node["split_feature"]), threshold=float(node["threshold"]),
                       default_left=bool(node.get("default_left", True)), missing=kind,
                       cover=float(node.get("internal_count", node.get("internal_weight", 0.0))), value=0.0)
            rec["left"] = walk(node["left_child"])
            rec["right"] = walk(node["right_child"])
            nodes[idx] = rec
            return idx

        walk(info["tree_structure"])
        value = np.zeros((len(nodes), k))
        scale = 1.0 / n_iter if average else 1.0
        value[:, t_index % k] = [n["value"] * scale for n in nodes]
        trees.append({key: [n[key] for n in nodes] for key in ("feature", "threshold", "left", "right",
                                                              "default_left", "missing", "cover")} | {"value": value})
    return _assemble(trees, n_features, k, np.zeros(k), strict=False, float32=False)


def _sklearn_tree(tree: Any, scale: float, probability: bool, k: int, column: int | None = None) -> dict:
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
    missing_left = getattr(t, "missing_go_to_left", None)
    default_left = np.asarray(missing_left, dtype=bool) if missing_left is not None else np.ones(leaf.size, bool)
    return dict(feature=np.where(leaf, -1, t.feature), threshold=np.where(leaf, 0.0, t.threshold),
                left=t.children_left, right=t.children_right, default_left=default_left,
                missing=np.zeros(leaf.size), cover=t.weighted_n_node_samples.astype(float), value=value)


def _read_sklearn(model: Any) -> TreeEnsemble:
    from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                                  GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    n_features = int(model.n_features_in_)
    if isinstance(model, (DecisionTreeClassifier, DecisionTreeRegressor)):
        classifier = isinstance(model, DecisionTreeClassifier)
        tree = _sklearn_tree(model, 1.0, classifier, 0)
        k = tree["value"].shape[1]
        return _assemble([tree], n_features, k, np.zeros(k), strict=False, float32=True)
    if isinstance(model, (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)):
        classifier = isinstance(model, (RandomForestClassifier, ExtraTreesClassifier))
        scale = 1.0 / len(model.estimators_)
        trees = [_sklearn_tree(est, scale, classifier, 0) for est in model.estimators_]
        k = trees[0]["value"].shape[1]
        return _assemble(trees, n_features, k, np.zeros(k), strict=False, float32=True)
    if isinstance(model, (GradientBoostingClassifier, GradientBoostingRegressor)):
        stages = model.estimators_                       # (n_stages, k)
        k = stages.shape[1]
        trees = [_sklearn_tree(stages[i, j], model.learning_rate, False, k, column=j)
                 for i in range(stages.shape[0]) for j in range(k)]
        probe = np.zeros((1, n_features))
        base = np.asarray(model._raw_predict_init(probe), dtype=float).reshape(k)
        return _assemble(trees, n_features, k, base, strict=False, float32=True)
    raise TypeError(f"unsupported scikit-learn model {type(model).__name__}")


def read_ensemble(model: Any) -> TreeEnsemble:
    """Read an xgboost (Booster or sklearn wrapper), lightgbm (Booster or wrapper) or scikit-learn tree model.

    The returned ensemble reproduces the model's raw output: the margin for xgboost and
    lightgbm and for scikit-learn gradient boosting, the predicted value for regressors,
    and class probabilities for scikit-learn tree and forest classifiers.

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
    module = type(model).__module__
    if module.startswith("xgboost"):
        booster = model.get_booster() if hasattr(model, "get_booster") else model
        ens = _read_xgboost(booster)
        return _with_xgboost_base(ens, booster)
    if module.startswith("lightgbm"):
        booster = model.booster_ if hasattr(model, "booster_") else model
        ens = _read_lightgbm(booster)
        return _with_lightgbm_base(ens, booster)
    if module.startswith("sklearn"):
        return _read_sklearn(model)
    raise TypeError(
        f"model must be an xgboost, lightgbm or scikit-learn tree model, got {type(model).__name__}"
    )


def _probe_rows(n_features: int) -> np.ndarray:
    return np.zeros((1, n_features))


def _with_xgboost_base(ens: TreeEnsemble, booster: Any) -> TreeEnsemble:
    """The base margin (base_score in margin space, for any objective) from the booster itself."""
    import xgboost as xgb

    probe = _probe_rows(ens.n_features)
    margin = np.asarray(booster.predict(xgb.DMatrix(probe), output_margin=True), dtype=float).reshape(1, -1)
    ens.base = (margin - ens.predict(probe))[0]
    return ens


def _with_lightgbm_base(ens: TreeEnsemble, booster: Any) -> TreeEnsemble:
    probe = _probe_rows(ens.n_features)
    raw = np.asarray(booster.predict(probe, raw_score=True), dtype=float).reshape(1, -1)
    ens.base = (raw - ens.predict(probe))[0]
    return ens
