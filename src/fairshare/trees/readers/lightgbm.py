"""The lightgbm reader: ``Booster`` or the scikit-learn wrappers read into a :class:`TreeEnsemble`, and their facts.

From the model's text form (which, like ``predict``, uses the best iteration when early stopping
set one): numerical splits with each node's missing-value rule (``NaN``, ``Zero``, ``None``),
categorical splits (the listed categories go left; any other category, a negative one or NaN
goes right), single-leaf trees, random forests (``boosting_type="rf"``: the model's margin is
the *average* of its trees, which is what ``predict`` uses; ``raw_score=True`` returns their
sum), and linear trees (``linear_tree=True``: a leaf outputs ``const + sum_j a_j x_j``, or its
plain value when one of its features is NaN). pandas categoricals are coded with the
categories stored in the model, as lightgbm does.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..ensemble import MISSING_AS_ZERO, MISSING_NAN, MISSING_ZERO, TreeEnsemble, assemble
from .base import Reader, booster_state

__all__ = ["LightGBMReader", "read_lightgbm", "lightgbm_margin"]

_MISSING = {"NaN": MISSING_NAN, "Zero": MISSING_ZERO, "None": MISSING_AS_ZERO}


def _booster(model: Any) -> Any:
    return model.booster_ if hasattr(model, "booster_") else model


def _average_output(booster: Any) -> bool:
    """True for a random forest (``boosting_type="rf"``), whose margin is the mean of its trees."""
    params = getattr(booster, "params", None) or {}
    boosting = params.get("boosting", params.get("boosting_type"))
    if boosting is not None:
        return boosting in ("rf", "random_forest")
    return bool(booster.dump_model(num_iteration=1).get("average_output", False))


def lightgbm_margin(model: Any, X: np.ndarray) -> np.ndarray:
    """The model's own margin for numeric rows (categorical features as codes): ``(m, k)``."""
    booster = _booster(model)
    raw = np.asarray(booster.predict(np.asarray(X, dtype=float), raw_score=True), dtype=float).reshape(X.shape[0], -1)
    if _average_output(booster):                  # raw_score sums a random forest's trees
        used = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
        raw = raw / max(1, used)
    return raw


def _is_categorical(info: str) -> bool:
    """A feature's entry in the model's ``feature_infos``: ``[min:max]`` (numerical), ``none``, or its categories."""
    return not info.startswith("[") and info != "none"


def _sections(text: str) -> tuple[dict, list[dict]]:
    """The model string's header and one ``key -> value`` dict per tree."""
    head, _, rest = text.partition("\nTree=")
    body = rest.split("end of trees")[0] if rest else ""
    header = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    if "average_output" in head.splitlines():
        header["average_output"] = "1"
    trees = []
    for chunk in ("Tree=" + body).split("\nTree=") if body else []:
        trees.append(dict(line.split("=", 1) for line in chunk.splitlines() if "=" in line))
    return header, trees


def _numbers(text: str, dtype: type = float) -> np.ndarray:
    return np.asarray(text.split(), dtype=dtype) if text and text.strip() else np.zeros(0, dtype=dtype)


def read_lightgbm(model: Any) -> TreeEnsemble:
    """Read a lightgbm model; see the module docstring for what is supported.

    The model is read from its text form (``model_to_string``, which like ``predict`` keeps the best
    iteration), parsed a tree at a time with numpy: 15x faster than ``dump_model``'s JSON.
    """
    ens = lightgbm_trees(model)
    settle_lightgbm(model, ens)
    return ens


def settle_lightgbm(model: Any, ens: TreeEnsemble) -> None:
    """The base of :func:`lightgbm_trees`' reading, in place: the model's raw score of a row of zeros (a random
    forest's: their mean) less the trees' (one row predicted)."""
    booster = _booster(model)
    probe = np.zeros((1, ens.n_features))
    raw = np.asarray(booster.predict(probe, raw_score=True), dtype=float).reshape(1, -1)
    header, _ = _sections(booster.model_to_string().partition("\nTree=")[0])      # the header alone
    if header.get("average_output") == "1":     # raw_score sums a random forest's trees; its margin is their mean
        raw = raw / max(1, ens.n_trees // ens.n_outputs)           # (the iterations read: trees per iteration)
    ens.base[:] = 0.0
    ens.base[:] = (raw - ens.predict(probe))[0]


def lightgbm_trees(model: Any) -> TreeEnsemble:
    """The trees of a lightgbm model, without a model call (the base NaN: :func:`settle_lightgbm` finds it)."""
    booster = _booster(model)
    header, trees_text = _sections(booster.model_to_string())
    k = int(header.get("num_tree_per_iteration", 1))
    n_features = int(header["max_feature_idx"]) + 1
    average = header.get("average_output") == "1"
    n_iter = max(1, len(trees_text) // k)
    scale = 1.0 / n_iter if average else 1.0
    trees = [_tree(t, i % k, k, scale) for i, t in enumerate(trees_text)]
    names = header.get("feature_names", "").split()
    infos = header.get("feature_infos", "").split()
    maps = {}
    categorical = [j for j, info in enumerate(infos) if _is_categorical(info)]
    for j, cats in zip(categorical, getattr(booster, "pandas_categorical", None) or []):
        maps[j] = np.asarray(cats, dtype=object)
    if not names or all(v == f"Column_{i}" for i, v in enumerate(names)):
        names = None
    if not trees:
        trees = [dict(feature=[-1], threshold=[0.0], left=[-1], right=[-1], default_left=[True], missing=[0],
                      cover=[1.0], value=np.zeros((1, k)))]
    ens = assemble(trees, n_features, k, np.full(k, np.nan), strict=False, float32=False, output="margin",
                   feature_names=names, category_maps=maps)
    if ens.linear is not None:
        ens.output = "margin (linear leaves)"
    return ens


def _tree(t: dict, out: int, k: int, scale: float) -> dict:
    """One tree's node arrays: internal nodes first (lightgbm's numbering), then the leaves."""
    n_leaves = int(t["num_leaves"])
    n_int = n_leaves - 1
    size = n_int + n_leaves
    leaf_value = _numbers(t.get("leaf_value", "0"))
    leaf_count = _numbers(t.get("leaf_count", "")) if t.get("leaf_count", "").strip() else \
        _numbers(t.get("leaf_weight", ""))
    feature = np.full(size, -1, dtype=np.int64)
    threshold = np.zeros(size)
    left = np.full(size, -1, dtype=np.int64)
    right = np.full(size, -1, dtype=np.int64)
    default_left = np.ones(size, dtype=bool)
    missing = np.zeros(size, dtype=np.int64)
    cover = np.zeros(size)
    value = np.zeros((size, k))
    value[n_int:, out] = leaf_value * scale
    cover[n_int:] = leaf_count if leaf_count.size == n_leaves else 1.0
    tree: dict = {}
    if n_int > 0:
        child = lambda c: np.where(c >= 0, c, n_int + (~c))             # noqa: E731 - leaves are ~index
        feature[:n_int] = _numbers(t["split_feature"], np.int64)
        decision = _numbers(t["decision_type"], np.int64)
        thr = _numbers(t["threshold"])
        left[:n_int] = child(_numbers(t["left_child"], np.int64))
        right[:n_int] = child(_numbers(t["right_child"], np.int64))
        default_left[:n_int] = (decision & 2) != 0
        kind = (decision >> 2) & 3                                      # 0: None, 1: Zero, 2: NaN
        missing[:n_int] = np.select([kind == 2, kind == 1], [MISSING_NAN, MISSING_ZERO], MISSING_AS_ZERO)
        count = _numbers(t.get("internal_count", "")) if t.get("internal_count", "").strip() else \
            _numbers(t.get("internal_weight", ""))
        cover[:n_int] = count if count.size == n_int else 1.0
        is_cat = (decision & 1) != 0
        threshold[:n_int] = np.where(is_cat, 0.0, thr)
        if is_cat.any():
            # listed categories go left; anything else, NaN included, goes right
            bounds = _numbers(t["cat_boundaries"], np.int64)
            words = _numbers(t["cat_threshold"], np.int64).astype(np.uint32)
            listed = {}
            for node in np.flatnonzero(is_cat):
                i = int(thr[node])
                chunk = words[bounds[i]:bounds[i + 1]]
                bits = (chunk[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & 1
                listed[int(node)] = np.flatnonzero(bits.reshape(-1))
            flags = np.zeros(size, dtype=bool)
            flags[:n_int] = is_cat
            default_left[:n_int] = np.where(is_cat, False, default_left[:n_int])
            missing[:n_int] = np.where(is_cat, MISSING_NAN, missing[:n_int])
            tree.update(categorical=flags, cat_left=listed, cat_other_left=np.zeros(size, bool))
    tree.update(feature=feature, threshold=threshold, left=left, right=right, default_left=default_left,
                missing=missing, cover=cover, value=value)
    if t.get("is_linear", "0").strip() == "1":
        const = _numbers(t["leaf_const"])
        per_leaf = _numbers(t["num_features"], np.int64)
        feats = _numbers(t.get("leaf_features", ""), np.int64)
        coeffs = _numbers(t.get("leaf_coeff", ""))
        ends = np.cumsum(per_leaf)
        starts = ends - per_leaf
        linear = {n_int + i: (feats[a:b], coeffs[a:b] * scale) for i, (a, b) in enumerate(zip(starts, ends)) if b > a}
        fallback = value.copy()
        value[n_int:, out] = const * scale
        tree.update(value=value, linear=linear, fallback=fallback)
    return tree


class LightGBMReader(Reader):
    """lightgbm's models: a ``Booster`` or a scikit-learn wrapper (``LGBMRegressor``, ``LGBMClassifier``, ...);
    files ``.txt`` (``save_model``), loaded as a ``Booster``. lightgbm stores a feature name with each whitespace
    replaced by ``_``, so a column keeps matching under either name."""

    name = title = "lightgbm"
    suffixes = (".txt",)
    check_missing = True

    def is_tree_model(self, model: Any) -> bool:
        return hasattr(model, "booster_") or type(model).__name__ == "Booster" or hasattr(model, "fit")

    def read(self, model: Any) -> TreeEnsemble:
        return read_lightgbm(model)

    def read_trees(self, model: Any) -> TreeEnsemble:
        return lightgbm_trees(model)

    def settle(self, model: Any, ensemble: TreeEnsemble) -> None:
        settle_lightgbm(model, ensemble)

    def margin(self, model: Any, X: np.ndarray) -> np.ndarray:
        return lightgbm_margin(model, X)

    def feature_names(self, model: Any) -> tuple[list[str], str] | None:
        """The names the model was fitted with (a wrapper's ``feature_name_``, a ``Booster``'s ``feature_name()``),
        None for lightgbm's names of unnamed columns (``Column_0``, ...), as the reading takes them."""
        names = getattr(model, "feature_name_", None)
        if names is None and callable(getattr(model, "feature_name", None)):
            names = model.feature_name()
        if names is None:
            return None
        names = [str(c) for c in names]
        if all(v == f"Column_{i}" for i, v in enumerate(names)):
            return None
        return names, "the model's features (lightgbm's feature names)"

    def accepts_missing(self, model: Any) -> bool | None:
        return True

    def rows(self, X: Any, name: str) -> np.ndarray | None:
        """A lightgbm ``Dataset`` is refused (lightgbm's own predict refuses it too: it holds bins of the training
        data, its raw rows only until it is constructed), naming what to pass."""
        if type(X).__name__ == "Dataset" and self.owns(X):
            raise ValueError(f"{name} is a lightgbm Dataset, a training container whose rows lightgbm itself does "
                             "not predict (its raw data is freed once it is constructed); pass the rows it was made "
                             "from (an array, a DataFrame or a scipy.sparse matrix) instead")
        return None

    def stored_name(self, name: str) -> str | None:
        """A feature name as lightgbm stores it (whitespace replaced by ``_``).

        Examples
        --------
        >>> LightGBMReader().stored_name("mean radius")
        'mean_radius'
        """
        return re.sub(r"\s", "_", str(name))

    def tree_levels(self, model: Any) -> float | None:
        classes = max(1, int(getattr(model, "n_classes_", 1) or 1))
        per_class = classes if classes > 2 else 1
        trees = getattr(model, "n_estimators_", None) or getattr(model, "n_estimators", 100)
        leaves = getattr(model, "num_leaves", 31) or 31
        return float(trees * per_class * max(1.0, np.log2(leaves)))

    def fit_state(self, model: Any) -> tuple:
        if hasattr(model, "booster_"):
            try:
                booster = model.booster_
            except Exception:                        # noqa: BLE001 - not fitted: nothing to cache
                return (object(),)
            return booster_state(model, booster)
        if type(model).__name__ == "Booster":
            return booster_state(model, model)
        return super().fit_state(model)

    def load(self, path: str) -> Any:
        import lightgbm as lgb

        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(64)
        if not head.startswith("tree"):
            raise ValueError(f"not a lightgbm model file (it starts with {head[:20]!r}, not 'tree')")
        return lgb.Booster(model_file=path)
