"""Reading catboost models into a :class:`TreeEnsemble`.

catboost grows *oblivious* trees: every node of a level splits on the same ``float32(x) >
border``, and a leaf's index has bit ``i`` set when split ``i`` (in the model's order) went
right. Each is unfolded into a complete binary tree whose root splits on the last split, as
catboost's own TreeSHAP does. Missing values
follow the feature's ``nan_value_treatment`` (``AsFalse``: like a value below every border, the
left side; ``AsTrue``: the right side). The output is catboost's ``RawFormulaVal``: ``scale * sum
of leaves + bias``. Splits on categorical features (one-hot or CTR, computed from hashed
categories) and non-symmetric trees are refused with an explanation.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

from .ensemble import TreeEnsemble, assemble

__all__ = ["read_catboost", "catboost_margin"]


def catboost_margin(model: Any, X: np.ndarray) -> np.ndarray:
    """The model's own raw formula value for numeric rows: ``(m, k)``."""
    out = np.asarray(model.predict(np.asarray(X, dtype=float), prediction_type="RawFormulaVal"), dtype=float)
    return out.reshape(X.shape[0], -1)


def read_catboost(model: Any) -> TreeEnsemble:
    """Read a catboost model of oblivious trees on numerical features."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as fh:
            spec = json.load(fh)
    if "oblivious_trees" not in spec:
        raise ValueError("only catboost models of oblivious (symmetric) trees can be read; this one has "
                         "grow_policy other than 'SymmetricTree'")
    info = spec.get("features_info", {})
    floats = info.get("float_features", [])
    flat_index = {int(f["feature_index"]): int(f.get("flat_feature_index", f["feature_index"])) for f in floats}
    nan_right = {int(f["feature_index"]): f.get("nan_value_treatment", "AsFalse") == "AsTrue" for f in floats}
    n_features = len(floats) + len(info.get("categorical_features", []))
    scale, bias = spec.get("scale_and_bias", [1.0, [0.0]])
    bias = np.atleast_1d(np.asarray(bias, dtype=float))
    trees = [_tree(t, flat_index, nan_right, float(scale)) for t in spec["oblivious_trees"]]
    k = trees[0]["value"].shape[1] if trees else bias.size
    k = max(k, bias.size)
    for t in trees:
        if t["value"].shape[1] != k:
            t["value"] = np.broadcast_to(t["value"], (t["value"].shape[0], k)).copy()
    names = list(getattr(model, "feature_names_", None) or []) or None
    if names is not None and all(str(v) == str(i) for i, v in enumerate(names)):
        names = None
    ens = assemble(trees, n_features, k, np.broadcast_to(bias, (k,)).copy(), strict=False, float32=True,
                   output="raw formula value", feature_names=names)
    return ens


def _tree(tree: dict, flat_index: dict, nan_right: dict, scale: float) -> dict:
    splits = tree["splits"]
    for s in splits:
        if s.get("split_type", "FloatFeature") != "FloatFeature":
            raise ValueError(f"this catboost model splits on categorical features ({s.get('split_type')}: one-hot or "
                             "CTR statistics of hashed categories); only splits on numerical features can be read. "
                             "Encode categorical features as numbers, or explain the model with "
                             "fs.explain(model.predict, X, background=...)")
    depth = len(splits)
    leaf_values = np.asarray(tree["leaf_values"], dtype=float)
    n_leaves = 1 << depth
    k = leaf_values.size // n_leaves
    leaf_values = leaf_values.reshape(n_leaves, k) * scale
    weights = np.asarray(tree.get("leaf_weights", np.ones(n_leaves)), dtype=float)
    # complete binary tree in heap order: node i has children 2i + 1 (left), 2i + 2 (right); the root
    # splits on the last split (catboost's own order, which its TreeSHAP and shap's path-dependent values
    # use: path-dependent values depend on the order of an oblivious tree's levels), level l on split
    # depth - 1 - l; the leaf reached has bit i set when split i went right
    internal = n_leaves - 1
    size = internal + n_leaves
    node = np.arange(size)
    level = np.floor(np.log2(node + 1)).astype(np.int64)
    feature = np.full(size, -1, dtype=np.int64)
    threshold = np.zeros(size)
    default_left = np.ones(size, dtype=bool)
    for lev, s in enumerate(splits[::-1]):
        on_level = (level == lev) & (node < internal)
        f = int(s["float_feature_index"])
        feature[on_level] = flat_index.get(f, f)
        threshold[on_level] = float(np.float32(s["border"]))
        default_left[on_level] = not nan_right.get(f, False)
    left = np.where(node < internal, 2 * node + 1, -1)
    right = np.where(node < internal, 2 * node + 2, -1)
    # heap position of a leaf -> catboost leaf index: the path's right turns, level l as bit l
    leaf_pos = np.arange(internal, size) - internal
    catboost_index = np.zeros(n_leaves, dtype=np.int64)
    for lev in range(depth):
        bit = (leaf_pos >> (depth - 1 - lev)) & 1
        catboost_index |= bit << (depth - 1 - lev)
    value = np.zeros((size, k))
    value[internal:] = leaf_values[catboost_index]
    cover = np.zeros(size)
    cover[internal:] = weights[catboost_index]
    for i in range(internal - 1, -1, -1):
        cover[i] = cover[2 * i + 1] + cover[2 * i + 2]
    return dict(feature=feature, threshold=threshold, left=left, right=right, default_left=default_left,
                missing=np.zeros(size), cover=cover, value=value)
