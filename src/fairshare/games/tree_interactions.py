"""Exact interaction values of a tree model for many rows at once (any reader's trees, any index and order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option
from ..indices.interactions import InteractionIndex, resolve_interaction_index, subsets_up_to
from ..indices.semivalues import Semivalue
from ..results.interaction_rows import InteractionRows
from ..trees.interactions import leaf_interactions
from ..trees.prepared import verified
from .tree import MODES, _exact_rows, _tree_inputs, empty_value
from .tree_outputs import feature_labels, row_names

__all__ = ["tree_interactions", "TREE_INTERACTIONS"]

#: tree_interactions' arguments (besides the model and the rows), checked before the model is read
TREE_INTERACTIONS = Arguments("tree_interactions", (
    Option("index", "shap", "shap (shap's shap_interaction_values: pairs, rows summing to the Shapley values) or an "
           "interaction index (k-sii, sii, stii, fsii, fbii, bii, moebius)",
           check=lambda v: v if v == "shap" else resolve_interaction_index(v) and v),
    Option("order", None, "the largest subset size (2 for index='shap'; default 2)", kind="int", minimum=1,
           none_ok=True),
    Option("mode", "path-dependent", "path-dependent (the trees' cover) or interventional (a background)",
           allowed=MODES),
))


def tree_interactions(model: Any, X: Any, order: int | None = None, index: str = "shap",
                      mode: str = "path-dependent", background: Any = None) -> InteractionRows:
    """Exact interaction values of a tree model (any reader's) for the rows ``X``, any index and order, in polynomial
    time: :class:`~fairshare.results.interaction_rows.InteractionRows` (``rows[r]``: row ``r``'s Interactions).

    Parameters
    ----------
    order : the largest subset size (default 2; ``index="shap"`` is pairwise only)
    index : ``"shap"`` (default): shap's ``shap_interaction_values`` convention (index ``"sii-matrix"``), ``values``
        ``(rows, n, n[, k])`` whose off-diagonal entries are half the Shapley interaction index of the pair and whose
        diagonal holds the rest of each feature's Shapley value (each row sums to the Shapley values). Any other
        index (``"k-sii"``, ``"sii"``, ``"stii"``, ``"fsii"``, ``"fbii"``, ``"bii"``, ``"moebius"``): ``values``
        ``(rows, p[, k])``, one per row and subset of ``subsets``.
    mode : ``"path-dependent"`` (the trees' cover, as shap's TreeExplainer) or ``"interventional"`` (over the
        ``background`` rows; pairs interact where shap returns zeros)

    Every argument is checked on the trees as read, before the model is called (the reading checked against its
    predictions once, before the first value).

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> X = np.random.default_rng(0).random((200, 4))
    >>> model = GradientBoostingRegressor(n_estimators=20, max_depth=3).fit(X, X[:, 0] * X[:, 1] + X[:, 2])
    >>> phi = fs.games.tree_interactions(model, X[:3])
    >>> phi.values.shape, bool(np.allclose(phi.values.sum(axis=2), fs.games.tree_values(model, X[:3]).values))
    ((3, 4, 4), True)
    """
    args = TREE_INTERACTIONS.check({"index": index, "order": order, "mode": mode})
    prep, rows, bg = _tree_inputs(model, X, mode, background)
    ens, n, squeeze = prep.ensemble, prep.ensemble.n_features, prep.ensemble.n_outputs == 1
    if index == "shap" and args["order"] not in (None, 2):
        raise ValueError(f"index='shap' gives pairwise values: order must be 2, got {args['order']}")
    ix = None if index == "shap" else resolve_interaction_index(args["index"], args["order"])
    if ix is not None and ix.order > n:
        raise ValueError(f"order must be at most the number of features ({n}), got {ix.order}")
    verified(model, prep)                            # every argument checked: the reading checked, once per model
    facts = dict(method="exact", info={"via": "tree", "mode": mode}, empty_value=empty_value(prep, mode, bg),
                 grand_value=ens.predict(rows)[:, 0] if squeeze else ens.predict(rows), data=rows, player_names=list(
                     feature_labels(model, X) or ens.feature_names or [f"x{i}" for i in range(n)]), row_names=row_names(X))
    if ix is None:
        pairs = leaf_interactions(prep, rows, InteractionIndex("sii", 2), mode, bg, min_size=2)   # (rows, p, k)
        subsets, diag, out = subsets_up_to(n, 2, 1), np.arange(n), np.zeros((rows.shape[0], n, n, ens.n_outputs))
        two = subsets[:, 1] >= 0
        out[:, subsets[two, 0], subsets[two, 1]] = out[:, subsets[two, 1], subsets[two, 0]] = pairs[:, two] / 2.0
        out[:, diag, diag] = _exact_rows(prep, rows, Semivalue.shapley(), mode, bg) - out.sum(axis=2)   # Shapley rest
        out = out[..., 0] if squeeze else out
        return InteractionRows(values=out, stderr=np.zeros_like(out), index="sii-matrix", order=2, **facts)
    values = leaf_interactions(prep, rows, ix, mode, bg)
    values = values[..., 0] if squeeze else values
    return InteractionRows(values=values, stderr=np.zeros_like(values), subsets=subsets_up_to(n, ix.order, 1),
                           index=ix.kind, order=ix.order, **facts)
