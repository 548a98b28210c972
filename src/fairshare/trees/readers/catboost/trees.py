"""Reading catboost models' trees (from the model's JSON) into a :class:`TreeEnsemble`.

catboost grows *oblivious* trees: every node of a level splits on the same ``float32(x) >
border``, and a leaf's index has bit ``i`` set when split ``i`` (in the model's order) went
right. Each is unfolded into a complete binary tree whose root splits on the last split, as
catboost's own TreeSHAP does; a tree without splits (catboost writes its ``splits`` as null) is one leaf, a
constant. Missing values
follow the feature's ``nan_value_treatment`` (``AsFalse``: like a value below every border, the
left side; ``AsTrue``: the right side). The output is catboost's ``RawFormulaVal``: ``scale * sum
of leaves + bias``.

*Categorical splits* read a row's category through its hash (catboost's ``CityHash64(str) &
0xffffffff``, :mod:`fairshare.trees.readers.catboost.hashing`). A *one-hot* split goes right when the hash equals
the split's value. A *CTR* split on one feature compares a target statistic of the category,
``((count + prior) / (total + prior denominator) + shift) * scale`` in float32 from the model's own
table (``ctr_data``), with a border; since it is a function of that one feature's category, it is a
categorical split whose right set is every category whose statistic exceeds the border (a category
missing from the table gets the statistic of zero counts). The ensemble codes a category by the
position of its hash among the hashes the model knows (``category_maps``); any other category takes
the split's "other" way. Every categorical feature has a map, an empty one where no split reads it: its
strings are still read (and checked) as catboost reads them, and its values are 0. CTRs of feature
*combinations* (``max_ctr_complexity`` > 1) depend on several features at one split and are refused with an
explanation, as are non-symmetric trees.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import weakref
from typing import Any

import numpy as np

from ...ensemble import TreeEnsemble, UnreadableSplits, assemble

__all__ = ["read_catboost", "catboost_margin", "fitted_names"]

#: a model's feature names, read from its JSON once per fit, by id while the model lives (catboost models cannot
#: be hashed): (weak reference, its fitted state, names or None)
_NAMES: dict[int, tuple] = {}


def catboost_margin(model: Any, X: np.ndarray) -> np.ndarray:
    """The model's own raw formula value for numeric rows: ``(m, k)``."""
    out = np.asarray(model.predict(np.asarray(X, dtype=float), prediction_type="RawFormulaVal"), dtype=float)
    return out.reshape(X.shape[0], -1)


def _model_json(model: Any) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)


def _state(model: Any) -> Any:
    """What changes when the model is fitted again: its serialized bytes (names included; ~2 ms for 1000 trees),
    else its trees' count and leaf values."""
    try:
        return hash(bytes(model._serialize_model()))
    except Exception:                                   # noqa: BLE001 - another catboost: the leaves alone
        return model.tree_count_, hash(np.asarray(model.get_leaf_values()).tobytes())


def _named_features(model: Any, spec: dict) -> list[str] | None:
    """The names the model was fitted with (its features' ids in the JSON, in flat order), or None when it was
    fitted without names (numpy rows: empty ids, which ``feature_names_`` shows as the numbers 0, 1, ...)."""
    info = spec.get("features_info", {})
    features = info.get("float_features", []) + info.get("categorical_features", [])
    flat = sorted((int(f.get("flat_feature_index", f["feature_index"])), str(f.get("feature_id") or ""))
                  for f in features)
    names = [name for _, name in flat]
    named = bool(names) and all(names) and len(names) == len(getattr(model, "feature_names_", None) or names)
    _remember(model, names if named else None)
    return names if named else None


def _remember(model: Any, names: list[str] | None) -> None:
    key = id(model)

    def drop(ref: weakref.ref) -> None:
        if _NAMES.get(key, (None,))[0] is ref:
            _NAMES.pop(key, None)

    try:
        _NAMES[key] = (weakref.ref(model, drop), _state(model), names)
    except TypeError:                                  # an object that holds no weak references: not remembered
        pass


def fitted_names(model: Any) -> list[str] | None:
    """The feature names a catboost model was fitted with (a frame's columns, or a Pool's names), None when it was
    fitted on unnamed columns. Names catboost would not make up are read from ``feature_names_``; numbers
    ("0", "1", ...) are its names for unnamed columns *and* a frame's integer column names, which the model's JSON
    tells apart (read once per fitted model): catboost matches a named model's columns by name.

    Examples
    --------
    >>> import pandas as pd
    >>> from catboost import CatBoostRegressor
    >>> X = np.arange(40.0).reshape(20, 2); kw = dict(iterations=2, verbose=0, allow_writing_files=False)
    >>> fitted_names(CatBoostRegressor(**kw).fit(X, X[:, 0])) is None
    True
    >>> fitted_names(CatBoostRegressor(**kw).fit(pd.DataFrame(X, columns=[0, 1]), X[:, 0]))
    ['0', '1']
    """
    names = [str(c) for c in (getattr(model, "feature_names_", None) or [])]
    if not names or not all(re.fullmatch(r"\d+", c) for c in names):
        return names or None
    known = _NAMES.get(id(model))
    if known is not None and known[0]() is model and known[1] == _state(model):
        return known[2]
    return _named_features(model, _model_json(model))


def read_catboost(model: Any, classes: bool = False) -> Any:
    """Read a catboost model of oblivious trees into a :class:`TreeEnsemble`.

    ``classes=True`` reads it as catboost's own attribution does, for models whose CTRs combine features: a split
    on a CTR belongs to the *combination class* of its projection's categorical features; a class of one feature
    is that feature, a class of several is a player of its own, numbered from ``n_features`` on. Returns
    ``(ensemble, members of each such class)``; the ensemble's combination splits carry no rule (their decisions
    come from the model itself: ``CatBoostReader.split_decisions``).
    """
    spec = _model_json(model)
    if "oblivious_trees" not in spec:
        raise ValueError("only catboost models of oblivious (symmetric) trees can be read; this one has "
                         "grow_policy other than 'SymmetricTree'")
    info = spec.get("features_info", {})
    floats = info.get("float_features", [])
    flat_index = {int(f["feature_index"]): int(f.get("flat_feature_index", f["feature_index"])) for f in floats}
    nan_right = {int(f["feature_index"]): f.get("nan_value_treatment", "AsFalse") == "AsTrue" for f in floats}
    cats = info.get("categorical_features", [])
    cat_flat = {int(c["feature_index"]): int(c.get("flat_feature_index", c["feature_index"])) for c in cats}
    n_features = len(floats) + len(cats)
    splits = _categorical_splits(spec, classes)
    # every categorical feature is read by its hashes, those the model never splits on too (no hash: every
    # category is "other" there, and a row's strings are still checked and coded)
    hashes: dict[int, set[int]] = {f: set() for f in cat_flat}
    members: dict[tuple, int] = {}
    for f, right, _ in splits.values():
        if isinstance(f, tuple):                     # a combination class: its own player when it has several
            key = tuple(sorted(cat_flat.get(c, c) for c in f))
            if len(key) > 1 and key not in members:
                members[key] = n_features + len(members)
            continue
        hashes.setdefault(f, set()).update(right)
    hashes = {f: sorted(hs) for f, hs in hashes.items()}
    codes = {f: {h: i for i, h in enumerate(hs)} for f, hs in hashes.items()}
    flat = dict(float=flat_index, cat=cat_flat, classes=members)
    scale, bias = spec.get("scale_and_bias", [1.0, [0.0]])
    bias = np.atleast_1d(np.asarray(bias, dtype=float))
    trees = [_tree(t, flat, nan_right, splits, codes, float(scale)) for t in spec["oblivious_trees"]]
    k = trees[0]["value"].shape[1] if trees else bias.size
    k = max(k, bias.size)
    for t in trees:
        if t["value"].shape[1] != k:
            t["value"] = np.broadcast_to(t["value"], (t["value"].shape[0], k)).copy()
    names = _named_features(model, spec)
    maps = {cat_flat[f]: np.asarray(hs, dtype=np.int64) for f, hs in hashes.items()}
    ens = assemble(trees, n_features, k, np.broadcast_to(bias, (k,)).copy(), strict=False, float32=True,
                   output="raw formula value", feature_names=names, category_maps=maps,
                   category_hash="catboost" if maps else None)
    return (ens, [list(m) for m in members]) if classes else ens


_EMPTY_SLOT = (1 << 64) - 1                    # a hash table's unused bucket
_MAGIC = 0x4906BA494954CB65                    # catboost's CalcHash(a, b) = MAGIC * (a + MAGIC * b)
_UNMIX = pow(_MAGIC * _MAGIC, -1, 1 << 64)     # a one-feature projection's key back to the category hash
_CTR_TYPES = ("Borders", "Buckets", "Counter", "FeatureFreq", "BinarizedTargetMeanValue", "FloatTargetMeanValue")


def _categorical_splits(spec: dict, classes: bool = False) -> dict[int, tuple[Any, dict[int, bool], bool]]:
    """Every categorical split the trees use, by its ``split_index``: ``(categorical feature, {hash: goes right},
    whether any other category goes right)``; with ``classes``, a CTR of a combination as ``(its projection's
    categorical features (a tuple), {}, False)``.

    Split indices number the model's binary features: float borders, then one-hot values, then CTR borders
    in the order of ``features_info.ctrs``.
    """
    info = spec.get("features_info", {})
    used: dict[int, dict] = {}
    for t in spec["oblivious_trees"]:
        for s in t.get("splits") or ():
            if s.get("split_type", "FloatFeature") != "FloatFeature":
                used[int(s["split_index"])] = s
    out: dict[int, tuple[int, dict[int, bool], bool]] = {}
    for index, s in used.items():
        if s["split_type"] == "OneHotFeature":
            out[index] = (int(s["cat_feature_index"]), {int(s["value"]) & 0xFFFFFFFF: True}, False)
        elif s["split_type"] != "OnlineCtr":
            raise ValueError(f"this catboost model splits on {s['split_type']} features, which fairshare cannot read; "
                             "explain it as a black box with fs.explain(model.predict, X, background=...)")
    position = sum(len(f.get("borders", [])) for f in info.get("float_features", []))
    position += sum(len(c.get("values", [])) for c in info.get("categorical_features", []))
    for ctr in info.get("ctrs", []):
        for border in ctr.get("borders", []):
            if position in used:
                out[position] = _ctr_split(ctr, spec.get("ctr_data", {}), float(border), used[position], classes)
            position += 1
    missing = [i for i in used if i not in out]
    if missing:
        raise ValueError(f"fairshare could not match the catboost model's categorical splits {missing[:5]} to its "
                         "features; explain it as a black box with fs.explain(model.predict, X, background=...)")
    return out


def _ctr_split(ctr: dict, tables: dict, border: float, split: dict,
               classes: bool = False) -> tuple[Any, dict[int, bool], bool]:
    """A CTR split on one categorical feature as ``(feature, {hash: goes right}, unknown goes right)``."""
    elements = ctr.get("elements", [])
    combined = len(elements) != 1 or elements[0].get("combination_element") != "cat_feature_value"
    if combined and classes:
        return tuple(int(e["cat_feature_index"]) for e in elements
                     if e.get("combination_element") == "cat_feature_value"), {}, False
    if combined:
        raise UnreadableSplits("this catboost model splits on CTR statistics of feature combinations (a split that "
                               f"depends on {len(elements)} features at once: "
                               f"{[e.get('combination_element') for e in elements]}), so its trees make no game on "
                               "single features: fs.explain without a background (or fs.games.tree_values) gives "
                               "catboost's own path-dependent values, and fs.explain with a background explains it "
                               "through its own predictions (the interventional game); or train with "
                               "max_ctr_complexity=1 (statistics of one feature each)")
    kind = ctr.get("ctr_type")
    if kind not in _CTR_TYPES or ctr["identifier"] not in tables:
        raise ValueError(f"this catboost model uses a {kind} CTR whose table fairshare cannot read; explain it as a "
                         "black box with fs.explain(model.predict, X, background=...)")
    if not np.isclose(np.float32(border), np.float32(split["border"])):
        raise ValueError("fairshare could not match a CTR split of this catboost model to its statistic; explain it "
                         "as a black box with fs.explain(model.predict, X, background=...)")
    table = tables[ctr["identifier"]]
    stride = int(table["hash_stride"])
    flat = table["hash_map"]
    denominator = np.float32(table.get("counter_denominator", 0))
    f32 = np.float32
    prior = f32(ctr.get("prior_numerator", 0.0)), f32(ctr.get("prior_denomerator", ctr.get("prior_denominator", 1.0)))
    shift, scale, target = f32(ctr.get("shift", 0.0)), f32(ctr.get("scale", 1.0)), int(ctr.get("target_border_idx", 0))

    def calc(good: Any, total: Any) -> np.float32:
        return f32((f32(f32(good) + prior[0]) / f32(f32(total) + prior[1]) + shift) * scale)

    cut = f32(border)
    right: dict[int, bool] = {}
    for start in range(0, len(flat), stride):
        key = int(flat[start])
        if key == _EMPTY_SLOT:
            continue
        signed = (key * _UNMIX) & _EMPTY_SLOT
        if signed >> 31 not in (0, (1 << 33) - 1):
            raise ValueError("a CTR table of this catboost model is not keyed by one feature's categories; explain it "
                             "as a black box with fs.explain(model.predict, X, background=...)")
        c = [float(v) for v in flat[start + 1:start + stride]]
        if kind == "Borders":
            good, total = (c[1], c[0] + c[1]) if len(c) <= 2 else (sum(c[target + 1:]), sum(c))
        elif kind == "Buckets":
            good, total = c[target], sum(c)
        elif kind in ("Counter", "FeatureFreq"):
            good, total = c[0], denominator
        else:                                               # mean of the target: a sum and a count
            good, total = c[0], c[1]
        right[signed & 0xFFFFFFFF] = bool(calc(good, total) > cut)
    empty = calc(0.0, denominator if kind in ("Counter", "FeatureFreq") else 0.0)
    return int(elements[0]["cat_feature_index"]), right, bool(empty > cut)


def _tree(tree: dict, flat: dict, nan_right: dict, cat_splits: dict, codes: dict, scale: float) -> dict:
    splits = tree.get("splits") or []
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
    categorical = np.zeros(size, dtype=bool)
    other_left = np.ones(size, dtype=bool)
    cat_left: dict[int, list[int]] = {}
    cat_right: dict[int, list[int]] = {}
    for lev, s in enumerate(splits[::-1]):
        on_level = (level == lev) & (node < internal)
        if s.get("split_type", "FloatFeature") != "FloatFeature":     # one-hot or CTR: a set of categories
            f, right, other_right = cat_splits[int(s["split_index"])]
            if isinstance(f, tuple):                                  # a combination class (decided by the model)
                key = tuple(sorted(flat["cat"].get(c, c) for c in f))
                feature[on_level] = key[0] if len(key) == 1 else flat["classes"][key]
                continue
            feature[on_level] = flat["cat"].get(f, f)
            categorical[on_level] = True
            other_left[on_level] = not other_right
            going = [sorted(codes[f][h] for h, goes in right.items() if goes == way) for way in (False, True)]
            cat_left.update({int(i): going[0] for i in np.flatnonzero(on_level)})
            cat_right.update({int(i): going[1] for i in np.flatnonzero(on_level)})
            continue
        f = int(s["float_feature_index"])
        feature[on_level] = flat["float"].get(f, f)
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
    out = dict(feature=feature, threshold=threshold, left=left, right=right, default_left=default_left,
               missing=np.zeros(size), cover=cover, value=value)
    if categorical.any():
        out.update(categorical=categorical, cat_left=cat_left, cat_right=cat_right, cat_other_left=other_left)
    return out
