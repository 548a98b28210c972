"""TreeGame: a tree ensemble explained at one row, with exact values in polynomial time."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..game import Game
from ..semivalues import Semivalue, resolve_index
from ..trees.ensemble import TreeEnsemble, read_ensemble
from ..trees.paths import LeafPaths, leaf_paths
from ..trees.values import leaf_semivalues, leaf_semivalues_quadrature, path_weights, sign_tables

__all__ = ["TreeGame", "tree_values"]

MODES = ("path-dependent", "interventional")
_BLOCK_ELEMENTS = 1 << 22


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


class _Prepared:
    """An ensemble with its paths, shared by every row explained."""

    def __init__(self, model: Any) -> None:
        self.ensemble: TreeEnsemble = read_ensemble(model)
        self.paths: LeafPaths = leaf_paths(self.ensemble)
        self.ratios = self.paths.cover_ratios()


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
        self._A = prepared.paths.follows(ens, self.x[None, :])[0]

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
            out = _path_dependent_values(self.prepared, self._A, coalitions)
        return out if ens.n_outputs > 1 else out[:, 0]

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


def _scatter_patterns(contrib_u: np.ndarray, leaf_u: np.ndarray, inverse: np.ndarray, paths: LeafPaths,
                      n: int, k: int) -> np.ndarray:
    """``out[r] = sum over leaves L of contrib(pattern of (r, L)) * value_L``, into features.

    Contributions are gathered for a block of rows and sent to features through one sparse
    (leaf factor -> feature) map shared by all rows and outputs.
    """
    import scipy.sparse as sp

    rows, L = inverse.shape
    D = contrib_u.shape[1]
    feature_map = sp.csr_matrix((np.ones(L * D), (paths.feature.reshape(-1), np.arange(L * D))), shape=(n + 1, L * D))
    out = np.zeros((rows, n + 1, k))
    per = max(1, _BLOCK_ELEMENTS // max(L * D * k, 1))
    for start in range(0, rows, per):
        block = contrib_u[inverse[start:start + per]]                                  # (b, L, D)
        weighted = block[..., None] * paths.value[None, :, None, :]                   # (b, L, D, k)
        b = block.shape[0]
        dense = weighted.reshape(b, L * D, k).transpose(1, 0, 2).reshape(L * D, b * k)
        out[start:start + per] = (feature_map @ dense).reshape(n + 1, b, k).transpose(1, 0, 2)
    return out


def _exact_rows(prep: _Prepared, X: np.ndarray, index: Semivalue, mode: str, background: np.ndarray | None) -> np.ndarray:
    """Exact values ``(rows, n, k)`` for every row of ``X``."""
    paths, ens = prep.paths, prep.ensemble
    n, k = ens.n_features, ens.n_outputs
    L, D = paths.feature.shape
    real = np.arange(D)[None, :] < paths.n_factors[:, None]                     # (L, D)
    A_all = paths.follows(ens, X)                                                # (rows, L, D)
    out = np.zeros((X.shape[0], n + 1, k))
    if mode == "interventional":
        R_all = paths.follows(ens, background)                                   # (B, L, D)
        if D < 40:
            per_a, a_leaf, a_inverse = _interventional_by_pattern(A_all, R_all, real, index, n)
            out = _scatter_patterns(per_a, a_leaf, a_inverse.reshape(A_all.shape[:2]), paths, n, k)
            return out[:, :n, :]
        pos, neg = sign_tables(index, n, D)
        B = R_all.shape[0]
        per = max(1, _BLOCK_ELEMENTS // max(L * D * B, 1))
        for start in range(0, X.shape[0], per):
            A = A_all[start:start + per][:, None]                                # (b, 1, L, D)
            _scatter(out[start:start + per], _sign_contrib(A, R_all[None], real, pos, neg).mean(axis=1), paths, n)
        return out[:, :n, :]
    # path-dependent: a leaf's contribution depends only on which of its factors the row follows,
    # so each distinct (leaf, pattern) pair is computed once for all rows
    cw = path_weights(index, n, D)
    R = np.where(real, prep.ratios, 1.0)
    bits = (A_all.astype(np.int64) << np.arange(D, dtype=np.int64)[None, None, :]).sum(axis=-1)   # (rows, L)
    keys = bits + (np.arange(L, dtype=np.int64) << D)[None, :] if D < 40 else None
    if keys is not None:
        uniq, inverse = np.unique(keys.reshape(-1), return_inverse=True)
        leaf_u = uniq >> D
        A_u = ((uniq[:, None] >> np.arange(D)[None, :]) & 1).astype(float)
        quad = index.quadrature(D)
        if quad is not None:
            contrib_u = leaf_semivalues_quadrature(A_u, R[leaf_u], real[leaf_u], *quad)
        else:
            contrib_u = leaf_semivalues(A_u, R[leaf_u], paths.n_factors[leaf_u], cw)        # (U, D)
        out = _scatter_patterns(contrib_u, leaf_u, inverse.reshape(bits.shape), paths, n, k)
    else:
        per = max(1, _BLOCK_ELEMENTS // max(L * D, 1))
        for start in range(0, X.shape[0], per):
            contrib = leaf_semivalues(A_all[start:start + per].astype(float), R[None], paths.n_factors, cw)
            _scatter(out[start:start + per], contrib, paths, n)
    return out[:, :n, :]


def _sign_contrib(A: np.ndarray, R: np.ndarray, real: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Per-factor values of leaf terms ``1[P in S, N out of S]`` (interventional, one baseline row)."""
    P = A & ~R & real
    N = ~A & R & real
    alive = ~np.any(~A & ~R & real, axis=-1, keepdims=True)
    p = P.sum(axis=-1, keepdims=True)
    q = N.sum(axis=-1, keepdims=True)
    return (np.where(P, pos[p, q], 0.0) + np.where(N, neg[p, q], 0.0)) * alive


def _codes(bits: np.ndarray) -> np.ndarray:
    D = bits.shape[-1]
    return (bits.astype(np.int64) << np.arange(D, dtype=np.int64)).sum(axis=-1)


def _interventional_by_pattern(A_all: np.ndarray, R_all: np.ndarray, real: np.ndarray, index: Semivalue,
                               n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Factor values averaged over the background for each distinct (leaf, explicand pattern), computed
    once per (leaf, explicand pattern, background pattern) and weighted by how many background rows share
    it. Returns ``(values (U, D), leaf of each pattern (U,), pattern of each (row, leaf))``."""
    L, D = real.shape
    pos, neg = sign_tables(index, n, D)
    leaf_ids = np.arange(L, dtype=np.int64) << D
    a_keys, a_inverse = np.unique((_codes(A_all) + leaf_ids).reshape(-1), return_inverse=True)
    r_keys, r_count = np.unique((_codes(R_all) + leaf_ids).reshape(-1), return_counts=True)
    a_leaf, r_leaf = a_keys >> D, r_keys >> D
    r_per_leaf = np.bincount(r_leaf, minlength=L)
    r_start = np.concatenate([[0], np.cumsum(r_per_leaf)[:-1]])
    reps = r_per_leaf[a_leaf]                                                    # combos per explicand pattern
    a_of_combo = np.repeat(np.arange(a_keys.size), reps)
    offset = np.arange(a_of_combo.size) - np.repeat(np.cumsum(reps) - reps, reps)
    r_of_combo = r_start[a_leaf[a_of_combo]] + offset
    mask = (1 << np.arange(D, dtype=np.int64))
    A = (a_keys[a_of_combo, None] & mask) > 0
    R = (r_keys[r_of_combo, None] & mask) > 0
    weight = r_count[r_of_combo] / R_all.shape[0]
    contrib = _sign_contrib(A, R, real[a_leaf[a_of_combo]], pos, neg) * weight[:, None]
    per_a = np.zeros((a_keys.size, D))
    np.add.at(per_a, a_of_combo, contrib)
    return per_a, a_leaf, a_inverse


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
