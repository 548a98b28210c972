"""Groups of a tree model's features as the players (``fs.explain(tree_model, X, groups=...)``): the tree model's
columns relabelled by their groups (:mod:`fairshare.trees.grouped`), so that one tree walk gives the exact values of
the groups' game, interventional (with a background) or path-dependent (without), on the tree door's output (the
trees' margin unless ``model_output`` asks for probabilities or the log loss) as without groups."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..games.model import feature_groups, player_of
from ..trees.grouped import grouped, unchecked
from ..trees.prepared import Prepared

__all__ = ["tree_groups"]


def tree_groups(model: Any, groups: Any, names: list[str]) -> tuple[Prepared | None, list[str], str | None]:
    """The tree model read with its features grouped (no model call), the groups' names, and why not (None, names,
    the reason) where its trees have no grouped walk (linear leaves).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((50, 3)); model = DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0])
    >>> prep, names, why = tree_groups(model, {"ab": [0, 1], "c": [2]}, ["a", "b", "c"])
    >>> prep.ensemble.n_features, names, why
    (2, ['ab', 'c'], None)
    """
    lists, player_names = feature_groups(groups, names)
    if unchecked(model).linear is not None:
        return None, player_names, "its trees have linear leaves (lightgbm linear trees), which read every feature"
    return grouped(model, player_of(lists, len(names)), len(lists), player_names), player_names, None
