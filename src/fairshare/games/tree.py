"""TreeGame: a tree ensemble explained at one row, with exact values in polynomial time."""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from ..game import Game
from ..semivalues import Semivalue, resolve_index
from ..trees.ensemble import TreeEnsemble, read_ensemble
from ..trees.paths import LeafPaths, leaf_paths
from ..trees.values import leaf_semivalues, path_weights, sign_tables

__all__ = ["TreeGame", "tree_values"]

MODES = ("path-dependent", "interventional")
_BLOCK_ELEMENTS = 1 << 22
_WALK_ROWS = 64            # rows sharing one compiled walk over the trees (arithmetic vectorized over them)


def _feature_names(model: Any, n: int) -> list[str] | None:
    for attr in ("feature_names_in_", "feature_names"):
        names = getattr(model, attr, None)
        if names is not None and len(names) == n:
            return [str(v) for v in names]
    booster = getattr(model, "booster_", None) or (model.get_booster() if hasattr(model, "get_booster") else None)
    for source in (booster, model):
        getter = getattr(source, "feature_name", None)
        if callable(getter):
            names = getter()
            if names is not None and len(names) == n and not all(str(v).startswith("Column_") for v in names):
                return [str(v) for v in names]
        names = getattr(source, "feature_names", None) if source is not None else None
        if names is not None and len(names) == n:
            return [str(v) for v in names]
    return None


def _rows(X: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(getattr(X, "values", X), dtype=float)
    arr = np.atleast_2d(arr)
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(f"{name} must have {n} columns (the model's features), got shape {np.shape(X)}")
    return arr


class _Layout(NamedTuple):
    """Per node: cover ratio to its parent, parent, factor slot of the parent's feature on the path,
    whether that feature repeats on the path; and the most distinct features on one path."""

    ratio: np.ndarray
    parent: np.ndarray
    slot: np.ndarray
    repeat: np.ndarray
    distinct_depth: int


class _Prepared:
    """An ensemble with its paths, shared by every row explained."""

    def __init__(self, model: Any) -> None:
        self.ensemble: TreeEnsemble = read_ensemble(model)
        self.max_depth = self.ensemble.depth()

    @cached_property
    def paths(self) -> LeafPaths:
        """Root-to-leaf paths (the game's coalition values; semivalues given by weights only)."""
        return leaf_paths(self.ensemble)

    @cached_property
    def ratios(self) -> np.ndarray:
        return self.paths.cover_ratios()

    @cached_property
    def layout(self) -> _Layout:
        """What the compiled walks need besides the ensemble's arrays."""
        from ..trees.kernels import path_layout

        ens = self.ensemble
        slot, repeat, n_slots, parent = path_layout(ens.left, ens.right, ens.feature, ens.roots, self.max_depth)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(parent >= 0, ens.cover / ens.cover[np.maximum(parent, 0)], 1.0)
        ratio = np.where(np.isfinite(ratio), ratio, 0.0)
        return _Layout(ratio, parent, slot, repeat, max(1, int(n_slots.max(initial=0))))


class TreeGame(Game):
    """The game of a tree ensemble at one row ``x``; players are the model's features.

    Parameters
    ----------
    model : xgboost, lightgbm or scikit-learn tree model (DecisionTree, RandomForest,
        ExtraTrees, GradientBoosting; regressors and classifiers)
    x : row to explain (1-D array, pandas Series or one-row DataFrame)
    mode : {"path-dependent", "interventional"}
        ``"path-dependent"``: a feature outside ``S`` sends the path both ways,
        weighted by the training cover (TreeSHAP's ``tree_path_dependent``; Karczmarz et
        al. 2022). ``"interventional"``: features outside ``S`` take the values of a
        baseline row, and the value is averaged over the rows of ``background``.
    background : row or rows, required for ``"interventional"``

    The value is the model's raw output: margin for xgboost, lightgbm and gradient
    boosting, prediction for regressors, class probabilities for scikit-learn tree and
    forest classifiers; one output per class where there are several.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X = np.random.default_rng(0).random((200, 5)); y = X[:, 0] * X[:, 1] + X[:, 2]
    >>> model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    >>> g = fs.games.TreeGame(model, X[0], mode="interventional", background=X[1])
    >>> phi = fs.exact(g, "shapley")
    >>> bool(np.isclose(phi.values.sum(), model.predict(X[:1])[0] - model.predict(X[1:2])[0]))
    True
    """

    def __init__(self, model: Any, x: Any, mode: str = "path-dependent", background: Any = None,
                 player_names: Any = None, batch_size: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        prepared = model if isinstance(model, _Prepared) else _Prepared(model)
        ens = prepared.ensemble
        n = ens.n_features
        names = player_names if player_names is not None else (
            _feature_names(model, n) if not isinstance(model, _Prepared) else None)
        super().__init__(n, player_names=names, batch_size=batch_size)
        self.prepared = prepared
        self.mode = mode
        self.x = _rows(x, n, "x")
        if self.x.shape[0] != 1:
            raise ValueError(f"x must be one row, got {self.x.shape[0]} rows (use fairshare.games.tree_values for many)")
        self.x = self.x[0]
        if mode == "interventional":
            if background is None:
                raise ValueError("background (a baseline row or rows) is required for mode='interventional'")
            self.background = _rows(background, n, "background")
        else:
            if background is not None:
                raise ValueError("background is only used with mode='interventional'")
            self.background = None
        self.n_outputs = ens.n_outputs if ens.n_outputs > 1 else 0

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        ens = self.prepared.ensemble
        if self.mode == "interventional":
            B = self.background.shape[0]
            m = coalitions.shape[0]
            block = max(1, _BLOCK_ELEMENTS // max(B * self.n_players, 1))
            out = np.empty((m, ens.n_outputs))
            for start in range(0, m, block):
                S = coalitions[start:start + block]
                rows = np.where(S[:, None, :], self.x[None, None, :], self.background[None, :, :])
                pred = ens.predict(rows.reshape(-1, self.n_players)).reshape(S.shape[0], B, -1)
                out[start:start + block] = pred.mean(axis=1)
        else:
            out = _path_dependent_values(self.prepared, self._follows, coalitions)
        return out if ens.n_outputs > 1 else out[:, 0]

    @cached_property
    def _follows(self) -> np.ndarray:
        """``A[L, d]`` of the explicand (path-dependent game values; not needed for exact values)."""
        return self.prepared.paths.follows(self.prepared.ensemble, self.x[None, :])[0]

    def null_players(self) -> np.ndarray:
        """Features no tree splits on, and (interventional) features equal to every background row."""
        ens = self.prepared.ensemble
        used = np.zeros(self.n_players, dtype=bool)
        used[ens.feature[ens.feature >= 0]] = True
        null = ~used
        if self.mode == "interventional":
            same = (self.background == self.x[None, :]) | (np.isnan(self.background) & np.isnan(self.x)[None, :])
            null |= same.all(axis=0)
        return null

    def knows_exact_values(self, index: Semivalue) -> bool:
        return True

    def exact_values(self, index: Semivalue) -> np.ndarray:
        values = _exact_rows(self.prepared, self.x[None, :], index, self.mode, self.background)[0]
        return values if self.prepared.ensemble.n_outputs > 1 else values[:, 0]


def _path_dependent_values(prep: _Prepared, A: np.ndarray, coalitions: np.ndarray) -> np.ndarray:
    paths, ens = prep.paths, prep.ensemble
    L, D = paths.feature.shape
    padded = np.concatenate([coalitions, np.zeros((coalitions.shape[0], 1), bool)], axis=1)
    block = max(1, _BLOCK_ELEMENTS // max(L * D, 1))
    out = np.empty((coalitions.shape[0], ens.n_outputs))
    for start in range(0, coalitions.shape[0], block):
        S = padded[start:start + block][:, paths.feature]                  # (b, L, D)
        weight = np.where(S, A[None, :, :], prep.ratios[None, :, :]).prod(axis=2)
        out[start:start + block] = ens.base[None, :] + weight @ paths.value
    return out


def _scatter(out: np.ndarray, contrib: np.ndarray, paths: LeafPaths, n: int) -> None:
    """Add per-factor contributions ``(b, L, D)`` times leaf values into ``out`` ``(b, n + 1, k)``."""
    b = contrib.shape[0]
    index = (paths.feature[None, :, :] + (n + 1) * np.arange(b)[:, None, None]).reshape(-1)
    for j in range(out.shape[2]):
        weighted = (contrib * paths.value[None, :, j, None]).reshape(-1)
        out[:, :, j] += np.bincount(index, weights=weighted, minlength=b * (n + 1)).reshape(b, n + 1)


def _exact_rows(prep: _Prepared, X: np.ndarray, index: Semivalue, mode: str,
                background: np.ndarray | None) -> np.ndarray:
    """Exact values ``(rows, n, k)`` for every row of ``X`` (compiled walks over the trees)."""
    from ..trees.kernels import interventional_walk, path_dependent_walk     # numba: imported when first needed

    ens = prep.ensemble
    n, k = ens.n_features, ens.n_outputs
    lay = prep.layout
    D = lay.distinct_depth
    out = np.zeros((X.shape[0], n, k))
    per = max(1, _BLOCK_ELEMENTS // max(ens.feature.size, 1))          # rows whose decisions are held at once
    if mode == "interventional":
        pos, neg = sign_tables(index, n, D)
        go_z = ens.decisions(background)
        for start in range(0, X.shape[0], per):
            go_x = ens.decisions(X[start:start + per])
            interventional_walk(ens.left, ens.right, ens.feature, ens.value, ens.roots, go_x, go_z, pos, neg,
                                prep.max_depth, out[start:start + per])
        return out
    quad = index.quadrature(D - 1)                 # leaving one factor out: degree <= D - 1 in u
    if quad is not None:
        for start in range(0, X.shape[0], _WALK_ROWS):
            go_left_t = np.ascontiguousarray(ens.decisions(X[start:start + _WALK_ROWS]).T)
            block = np.zeros((n, k, go_left_t.shape[1]))
            path_dependent_walk(ens.left, ens.right, ens.feature, lay.ratio, lay.parent, lay.slot, lay.repeat,
                                ens.value, ens.roots, go_left_t, quad[0], quad[1], prep.max_depth, block)
            out[start:start + _WALK_ROWS] = block.transpose(2, 0, 1)
        return out
    # a semivalue given by its weights only (no measure): per-leaf polynomials in numpy
    paths = prep.paths
    real = np.arange(D)[None, :] < paths.n_factors[:, None]
    R = np.where(real, prep.ratios, 1.0)
    cw = path_weights(index, n, D)
    wide = np.zeros((X.shape[0], n + 1, k))
    per = max(1, _BLOCK_ELEMENTS // max(paths.feature.size, 1))
    for start in range(0, X.shape[0], per):
        A = paths.follows(ens, X[start:start + per]).astype(float)
        _scatter(wide[start:start + per], leaf_semivalues(A, R[None], paths.n_factors, cw), paths, n)
    return wide[:, :n, :]


def tree_values(model: Any, X: Any, index: str | Semivalue = "shapley", mode: str = "path-dependent",
                background: Any = None) -> np.ndarray:
    """Exact values of a tree model for many rows at once: ``(rows, n_features)`` or ``(rows, n_features, k)``.

    Shares the model's paths across rows, so ground truth for a benchmark of 100 rows is
    one call.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((100, 4)); y = X[:, 0] - X[:, 3]
    >>> model = DecisionTreeRegressor(max_depth=3).fit(X, y)
    >>> fs.games.tree_values(model, X[:5], "banzhaf").shape
    (5, 4)
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    prep = _Prepared(model)
    n = prep.ensemble.n_features
    rows = _rows(X, n, "X")
    bg = None
    if mode == "interventional":
        if background is None:
            raise ValueError("background (a baseline row or rows) is required for mode='interventional'")
        bg = _rows(background, n, "background")
    sv = resolve_index(index, n)
    values = _exact_rows(prep, rows, sv, mode, bg)
    return values if prep.ensemble.n_outputs > 1 else values[..., 0]
