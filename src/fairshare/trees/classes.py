"""Path-dependent values of a tree model whose splits read several features at once, as its library defines them.

Such a split (catboost's CTR of a feature combination) belongs to no single feature, so the model's trees make no
game on single features. Its library's own attribution (catboost's TreeSHAP) gives each *class* of features read
together a value of its own and splits it equally among the class's features. Here the model's reader reads it
with those classes as players (:meth:`~fairshare.trees.readers.base.Reader.read_classes`), the decisions of every
split for the explained rows come from the model itself (:meth:`~fairshare.trees.readers.base.Reader.
split_decisions`), the compiled path-dependent walk gives every player's value, and each class's value is shared
equally among its features. This is the library's attribution, not a semivalue of a game on the original
features; an interventional game (with a background) is explained through the model's predictions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..indices.semivalues import Semivalue, resolve_index
from .inputs import tree_rows
from .kernels import path_dependent_rows
from .prepared import Prepared, remembered
from .readers import reader_for

__all__ = ["class_explanation"]

_WALK_ROWS = 64


def _read_classes(model: Any) -> tuple[Prepared, list[list[int]]]:
    ens, members = reader_for(model).read_classes(model)
    return Prepared(ens), members


def class_explanation(model: Any, X: Any, index: str | Semivalue = "shapley") -> dict:
    """Path-dependent values ``(rows, n_features[, k])`` of a tree model whose splits read classes of features
    (:func:`fairshare.trees.prepared.unreadable` says why), each class's value shared equally among its features,
    with ``empty_value``, ``grand_value`` (the model's raw output) and ``rows`` as
    :func:`fairshare.games.tree_explanation` returns them.

    Examples
    --------
    >>> import numpy as np, pandas as pd, catboost
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"a": rng.choice(list("pqrs"), 300), "b": rng.choice(list("xyzw"), 300), "c": rng.random(300)})
    >>> y = (X.a + X.b).isin(["px", "qy"]) + X.c
    >>> model = catboost.CatBoostRegressor(iterations=20, depth=3, verbose=0, max_ctr_complexity=2,
    ...                                    allow_writing_files=False).fit(X, y, cat_features=["a", "b"])
    >>> e = class_explanation(model, X.iloc[:3])
    >>> bool(np.allclose(e["values"].sum(axis=1) + e["empty_value"], e["grand_value"]))
    True
    """
    reader = reader_for(model)
    prep, members = remembered(model, "classes", _read_classes)
    ens = prep.ensemble
    n, players = ens.n_features, ens.n_features + len(members)
    sv = resolve_index(index, players)
    lay = prep.layout
    quad = sv.quadrature(lay.distinct_depth - 1)
    if quad is None:
        raise ValueError(f"index={sv.name!r} is given by its weights only; the classes of features of this "
                         f"{reader.title} model are explained for semivalues with a measure (shapley, banzhaf, "
                         "beta-shapley, ...)")
    frame = reader.model_rows(model, X)
    rows = tree_rows(frame, ens, "X")
    go_left_t, grand = reader.split_decisions(model, frame, ens)
    out = np.zeros((players, ens.n_outputs, rows.shape[0]))
    path_dependent_rows(ens.left, ens.right, ens.feature, lay.ratio, lay.parent, lay.slot, lay.repeat, ens.value,
                        ens.roots, prep.tree_out, go_left_t, quad[0], quad[1], prep.max_depth, _WALK_ROWS, out)
    values = out.transpose(2, 0, 1)
    folded = values[:, :n].copy()
    for j, features in enumerate(members):        # a class's value, shared equally among its features
        folded[:, features] += values[:, n + j, None] / len(features)
    empty = prep.expected_value
    if ens.n_outputs == 1:
        return {"values": folded[..., 0], "empty_value": float(empty[0]), "grand_value": grand[:, 0], "rows": rows}
    return {"values": folded, "empty_value": empty, "grand_value": grand, "rows": rows}
