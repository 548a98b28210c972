"""The xgboost reader: ``Booster`` or the scikit-learn wrappers read into a :class:`TreeEnsemble`, and their facts.

From the model's JSON: gbtree and dart boosters (dart trees scaled by their drop weights), one
tree per class or vector-leaf trees (``multi_strategy="multi_output_tree"``), numerical and
categorical splits (the categories listed at a node go right; any other category, an invalid
one included, goes left; NaN follows the default direction). The trees read are those the
model predicts with: a scikit-learn wrapper fitted with early stopping predicts with its
best iteration, a ``Booster`` with every tree. The base margin comes from the model itself
(one prediction of a row of missing values), so every objective's ``base_score`` transform is
the model's own.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..dense import dense_from_sparse
from ..ensemble import TreeEnsemble, assemble
from .base import Reader, booster_state, named_rows

__all__ = ["XGBoostReader", "read_xgboost", "xgboost_margin"]

#: objectives whose predict_proba is no probability of the trees' margin (found from the model, before any call)
_NO_PROBABILITY = {"binary:logitraw": "the raw margin m as [1 - m, m]", "binary:hinge": "0/1 labels"}


def _booster(model: Any) -> Any:
    return model.get_booster() if hasattr(model, "get_booster") else model


def _iterations(model: Any, booster: Any) -> int | None:
    """Boosting rounds the model predicts with (None: all of them)."""
    if hasattr(model, "get_booster"):                    # scikit-learn wrapper: predict() uses best_iteration
        best = getattr(model, "best_iteration", None)
        if best is not None:
            return int(best) + 1
    return None


def xgboost_margin(model: Any, X: np.ndarray) -> np.ndarray:
    """The model's own raw margin for numeric rows (categorical features given as codes): ``(m, k)``."""
    import xgboost as xgb

    booster = _booster(model)
    rounds = _iterations(model, booster)
    types = booster.feature_types
    dm = xgb.DMatrix(np.asarray(X, dtype=float), feature_names=booster.feature_names, feature_types=types,
                     enable_categorical=bool(types and "c" in types), missing=np.nan)
    kwargs = {"iteration_range": (0, rounds)} if rounds is not None else {}
    out = np.asarray(booster.predict(dm, output_margin=True, **kwargs), dtype=float)
    return out.reshape(X.shape[0], -1)


def _category_maps(booster: Any, n_features: int) -> tuple[dict[int, np.ndarray], str | None]:
    """Training categories of features that were pandas categoricals (needs pyarrow to read them)."""
    types = booster.feature_types or []
    if "c" not in types:
        return {}, None
    try:
        cats = booster.get_categories()
        if cats.empty():
            return {}, None
    except (AttributeError, TypeError):                  # xgboost < 3.1 stores none
        return {}, None
    try:
        arrays = booster.get_categories(export_to_arrow=True).to_arrow()
    except ImportError:
        return {}, ("the xgboost model stores the categories of its pandas categorical features; reading them "
                    "needs pyarrow (pip install pyarrow), or pass the features as category codes")
    maps = {}
    for j, (_, values) in enumerate(arrays):
        if values is not None and j < n_features:
            maps[j] = np.asarray(values.to_pylist(), dtype=object)
    return maps, None


def read_xgboost(model: Any) -> TreeEnsemble:
    """Read an xgboost model; see the module docstring for what is supported."""
    ens = xgboost_trees(model)
    settle_xgboost(model, ens)
    return ens


def settle_xgboost(model: Any, ens: TreeEnsemble) -> None:
    """The base margin of :func:`xgboost_trees`' reading, in place: the model's margin of a row of NaN less the
    trees' (one row predicted; the base score's float32 rounding included)."""
    probe = np.full((1, ens.n_features), np.nan)
    ens.base[:] = 0.0
    ens.base[:] = (xgboost_margin(model, probe) - ens.predict(probe))[0]


def xgboost_trees(model: Any) -> TreeEnsemble:
    """The trees of an xgboost model, without a model call (the base NaN: :func:`settle_xgboost` finds it)."""
    booster = _booster(model)
    raw = json.loads(booster.save_raw(raw_format="json"))
    learner = raw["learner"]
    gbm = learner["gradient_booster"]
    name = gbm.get("name", "gbtree")
    if name not in ("gbtree", "dart"):
        raise ValueError(f"only tree boosters can be read; this xgboost model uses booster={name!r} "
                         "(explain it with fs.explain(model.predict, X, background=...))")
    inner = gbm["model"] if "model" in gbm else gbm["gbtree"]["model"]
    params = learner["learner_model_param"]
    n_features = int(params["num_feature"])
    k = max(int(params.get("num_class", "0")), int(params.get("num_target", "1")), 1)
    all_trees = inner["trees"]
    tree_info = inner.get("tree_info", [0] * len(all_trees))
    weights = gbm.get("weight_drop", [1.0] * len(all_trees))
    rounds = _iterations(model, booster)
    indptr = inner.get("iteration_indptr")
    if rounds is not None and indptr is not None:
        used = int(indptr[min(rounds, len(indptr) - 1)])
    elif rounds is not None:
        used = min(len(all_trees), rounds * max(1, len(all_trees) // max(1, booster.num_boosted_rounds())))
    else:
        used = len(all_trees)
    trees = [_tree(t, int(out), float(scale), k) for t, out, scale in
             zip(all_trees[:used], tree_info[:used], weights[:used])]
    missing = getattr(model, "missing", None) if hasattr(model, "get_booster") else None
    missing = None if missing is None or (isinstance(missing, float) and np.isnan(missing)) else float(missing)
    maps, note = _category_maps(booster, n_features)
    names = list(booster.feature_names) if booster.feature_names else None
    if not trees:
        trees = [_constant_tree(k)]
    ens = assemble(trees, n_features, k, np.zeros(k), strict=True, float32=True, output="margin",
                   feature_names=names, category_maps=maps, missing_value=missing, sparse_missing=True)
    ens.category_note = note
    objective = str(learner.get("objective", {}).get("name", ""))
    ens.labels = k > 1 and objective.startswith("binary:")
    if objective in _NO_PROBABILITY:
        ens.no_probability = f"objective {objective!r} makes its predict_proba {_NO_PROBABILITY[objective]}"
    ens.base = np.full(k, np.nan)
    return ens


def _constant_tree(k: int) -> dict:
    return dict(feature=[-1], threshold=[0.0], left=[-1], right=[-1], default_left=[True], missing=[0],
                cover=[1.0], value=np.zeros((1, k)))


def _tree(t: dict, out: int, scale: float, k: int) -> dict:
    left = np.asarray(t["left_children"], dtype=np.int64)
    right = np.asarray(t["right_children"], dtype=np.int64)
    leaf = left < 0
    size = left.size
    cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(float)
    vector = int(t.get("tree_param", {}).get("size_leaf_vector", "1") or 1)
    value = np.zeros((size, k))
    if vector > 1:
        # vector leaves: a leaf's right child holds its row in leaf_weights
        leaf_weights = np.asarray(t["leaf_weights"], dtype=np.float32).astype(float).reshape(-1, vector)
        value[leaf, :vector] = leaf_weights[right[leaf]] * scale
        cond = np.where(leaf, 0.0, cond)
    else:
        value[leaf, out] = cond[leaf] * scale
    split_type = np.asarray(t.get("split_type", np.zeros(size)), dtype=np.int64)
    tree = dict(feature=np.where(leaf, -1, np.asarray(t["split_indices"])), threshold=np.where(leaf, 0.0, cond),
                left=left, right=np.where(leaf, -1, right), default_left=np.asarray(t["default_left"], dtype=bool),
                missing=np.zeros(size), cover=np.asarray(t["sum_hessian"], dtype=float), value=value)
    if np.any(split_type != 0):
        # listed categories go right; anything else (another category, an invalid one) goes left
        cats = np.asarray(t["categories"], dtype=np.int64)
        listed = {}
        for node, start, count in zip(t["categories_nodes"], t["categories_segments"], t["categories_sizes"]):
            listed[int(node)] = cats[int(start):int(start) + int(count)]
        tree.update(categorical=(split_type != 0) & ~leaf, cat_right=listed, cat_other_left=np.ones(size, bool))
    return tree


class XGBoostReader(Reader):
    """xgboost's models: a ``Booster`` or a scikit-learn wrapper (``XGBRegressor``, ``XGBClassifier``, ...) of
    tree boosters; files ``.json`` / ``.ubj`` (``save_model``), loaded as the wrapper its objective calls for."""

    name = title = "xgboost"
    suffixes = (".json", ".ubj")
    check_missing = True

    def is_tree_model(self, model: Any) -> bool:
        params = getattr(model, "get_params", lambda: {})() if hasattr(model, "get_booster") else {}
        return params.get("booster") != "gblinear" and (hasattr(model, "get_booster") or
                                                         type(model).__name__ == "Booster")

    def readable(self, model: Any) -> bool:
        return True                                      # read() says why a linear booster holds no trees

    def read(self, model: Any) -> TreeEnsemble:
        return read_xgboost(model)

    def read_trees(self, model: Any) -> TreeEnsemble:
        return xgboost_trees(model)

    def settle(self, model: Any, ensemble: TreeEnsemble) -> None:
        settle_xgboost(model, ensemble)

    def margin(self, model: Any, X: np.ndarray) -> np.ndarray:
        return xgboost_margin(model, X)

    def feature_names(self, model: Any) -> tuple[list[str], str] | None:
        booster = model if type(model).__name__ == "Booster" else getattr(model, "_Booster", None)
        if booster is not None and booster.feature_names:
            return [str(c) for c in booster.feature_names], "the model's features (the xgboost booster's names)"
        return None

    def accepts_missing(self, model: Any) -> bool | None:
        return True

    def tree_levels(self, model: Any) -> float | None:
        classes = max(1, int(getattr(model, "n_classes_", 1) or 1))
        per_class = classes if classes > 2 else 1
        try:
            rounds = model.get_booster().num_boosted_rounds()
        except Exception:                                     # noqa: BLE001 - an unfitted or odd model: unknown
            return None
        return float(rounds * per_class * (getattr(model, "max_depth", None) or 6))

    def fit_state(self, model: Any) -> tuple:
        if hasattr(model, "get_booster"):
            try:
                booster = model.get_booster()
            except Exception:                        # noqa: BLE001 - not fitted: nothing to cache
                return (object(),)
            return booster_state(model, booster, (getattr(model, "best_iteration", None),
                                                  getattr(model, "missing", None)))
        if type(model).__name__ == "Booster":
            return booster_state(model, model)
        return super().fit_state(model)

    def rows(self, X: Any, name: str) -> np.ndarray | None:
        if type(X).__name__ == "DMatrix" and self.owns(X):
            if np.asarray(X.get_base_margin()).size:
                raise ValueError(f"{name} is a DMatrix with a base_margin: xgboost adds that offset per row to the "
                                 "trees instead of the model's base score, and no feature carries it, so values of "
                                 f"the trees would not add up to the model's predictions on {name}; pass the rows "
                                 "without a base_margin (and add the offset to the grand and empty values yourself)")
            rows = dense_from_sparse(X.get_data(), True, name)          # a DMatrix stores only present values
            return named_rows(rows, X.feature_names)
        return None

    def load(self, path: str) -> Any:
        import xgboost as xgb

        booster = xgb.Booster()
        booster.load_model(path)
        objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
        model = xgb.XGBClassifier() if objective.startswith(("binary:", "multi:")) else xgb.XGBRegressor()
        model.load_model(path)
        return model
