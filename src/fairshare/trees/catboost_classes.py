"""Path-dependent values of catboost models whose CTRs combine features, as catboost's own ShapValues define them.

A split on a CTR of a feature combination reads several features at once, so it belongs to no single feature:
catboost's TreeSHAP gives each *combination class* (the projection's categorical features) a value of its own and
splits it equally among the class's features. Here the model is read with those classes as players
(:func:`~fairshare.trees.read_catboost.read_catboost` with ``classes=True``), the decisions of every split for the
explained rows come from the model itself (``calc_leaf_indexes``: the leaf of every tree, whose bits are the
split decisions of an oblivious tree), the compiled path-dependent walk gives every player's value, and each
class's value is shared equally among its features. This is catboost's attribution, not a semivalue of a game on
the original features; an interventional game (with a background) is explained through the model's predictions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..indices.semivalues import Semivalue, resolve_index
from .inputs import tree_rows
from .kernels import path_dependent_rows
from .prepared import Prepared, remembered
from .read_catboost import read_catboost

__all__ = ["catboost_class_explanation"]

_WALK_ROWS = 64


def _frame_for(model: Any, X: Any) -> Any:
    """``X`` in the model's column order, as catboost takes it (a frame keeps its names; one row becomes two-dimensional)."""
    names = list(getattr(model, "feature_names_", None) or [])
    if hasattr(X, "columns") and names and set(names) <= set(map(str, X.columns)):
        return X[[c for n in names for c in X.columns if str(c) == n]]
    if hasattr(X, "to_frame") and hasattr(X, "index"):
        return X.to_frame().T
    return X if np.ndim(X) == 2 else np.asarray(X, dtype=object)[None, :]


def _read_classes(model: Any) -> tuple[Prepared, list[list[int]]]:
    ens, members = read_catboost(model, classes=True)
    return Prepared(ens), members


def catboost_class_explanation(model: Any, X: Any, index: str | Semivalue = "shapley") -> dict:
    """Path-dependent values ``(rows, n_features[, k])`` of a catboost model whose CTRs combine features, with
    ``empty_value``, ``grand_value`` (the model's raw output) and ``rows`` as :func:`fairshare.games.tree_explanation`
    returns them.

    Examples
    --------
    >>> import numpy as np, pandas as pd, catboost
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"a": rng.choice(list("pqrs"), 300), "b": rng.choice(list("xyzw"), 300), "c": rng.random(300)})
    >>> y = (X.a + X.b).isin(["px", "qy"]) + X.c
    >>> model = catboost.CatBoostRegressor(iterations=20, depth=3, verbose=0, max_ctr_complexity=2,
    ...                                    allow_writing_files=False).fit(X, y, cat_features=["a", "b"])
    >>> e = catboost_class_explanation(model, X.iloc[:3])
    >>> bool(np.allclose(e["values"].sum(axis=1) + e["empty_value"], e["grand_value"]))
    True
    """
    from catboost import Pool

    prep, members = remembered(model, "catboost classes", _read_classes)
    ens = prep.ensemble
    n, players = ens.n_features, ens.n_features + len(members)
    sv = resolve_index(index, players)
    lay = prep.layout
    quad = sv.quadrature(lay.distinct_depth - 1)
    if quad is None:
        raise ValueError(f"index={sv.name!r} is given by its weights only; catboost's combination classes are "
                         "explained for semivalues with a measure (shapley, banzhaf, beta-shapley, ...)")
    frame = _frame_for(model, X)
    rows = tree_rows(frame, ens, "X")
    pool = Pool(frame, cat_features=list(model.get_cat_feature_indices()))
    leaves = np.asarray(model.calc_leaf_indexes(pool), dtype=np.int64)          # (rows, trees)
    go_left_t = np.zeros((ens.feature.size, rows.shape[0]), dtype=np.bool_)
    sizes = np.diff(np.append(ens.roots, ens.feature.size))
    depths = np.log2(sizes + 1).astype(np.int64) - 1
    for depth in np.unique(depths):               # the trees of one depth at once
        trees = np.flatnonzero(depths == depth)
        for lev in range(int(depth)):             # heap level lev splits on split depth - 1 - lev: that leaf bit
            nodes = ens.roots[trees][:, None] + np.arange((1 << lev) - 1, (1 << (lev + 1)) - 1)[None, :]
            bit = (leaves[:, trees] >> (depth - 1 - lev)) & 1 == 0                # (rows, trees)
            go_left_t[nodes] = bit.T[:, None, :]
    out = np.zeros((players, ens.n_outputs, rows.shape[0]))
    path_dependent_rows(ens.left, ens.right, ens.feature, lay.ratio, lay.parent, lay.slot, lay.repeat, ens.value,
                        ens.roots, prep.tree_out, go_left_t, quad[0], quad[1], prep.max_depth, _WALK_ROWS, out)
    values = out.transpose(2, 0, 1)
    folded = values[:, :n].copy()
    for j, features in enumerate(members):        # a class's value, shared equally among its features
        folded[:, features] += values[:, n + j, None] / len(features)
    grand = np.asarray(model.predict(pool, prediction_type="RawFormulaVal"), dtype=float).reshape(rows.shape[0], -1)
    empty = prep.expected_value
    if ens.n_outputs == 1:
        return {"values": folded[..., 0], "empty_value": float(empty[0]), "grand_value": grand[:, 0], "rows": rows}
    return {"values": folded, "empty_value": empty, "grand_value": grand, "rows": rows}
