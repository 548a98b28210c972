"""ModelGame: any prediction function explained at one row by interventional imputation."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit, prange

from .._core.arguments import check_int, format_coalition
from .base import Game, check_output_axes
from .._core.tables import as_rows, column_labels, frame_info, is_sparse, same_value, shared_dtypes
from .cost import CALL_SECONDS, row_seconds
from .sparse_rows import sparse_columns_equal, sparse_hybrid_rows
from .imputers import CONDITIONAL, Imputer, make_imputer
from .torch_game import module_input, takes_ids
from .torch_modes import eval_modes
from .._core.compiled import CACHE, threads_for

__all__ = ["ModelGame", "ModelError", "as_predict", "feature_groups", "player_of", "IMPUTATIONS", "LINKS",
           "sparse_hybrid_rows", "sparse_columns_equal"]


class ModelError(RuntimeError):
    """The model raised on the rows fairshare built for a coalition (the model's exception is the cause)."""

IMPUTATIONS = ("baseline", "marginal", "conditional") + tuple(CONDITIONAL)


def _logit(p: np.ndarray) -> np.ndarray:
    """``log(p / (1 - p))``, probabilities clipped to [1e-15, 1 - 1e-15]; an output outside [0, 1] is no probability
    and is refused (clipped, -5 read as 1e-15: values of -69 for every row)."""
    outside = (p < -1e-9) | (p > 1 + 1e-9)
    if np.any(outside):
        raise ValueError(f"link='logit' explains probabilities, but the model returned {p[outside].flat[0]:g}; use "
                         "link='identity' for a model whose output is not a probability")
    q = np.clip(p, 1e-15, 1 - 1e-15)
    return np.log(q) - np.log1p(-q)


def _is_regressor(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn regressor (or a bound method of one)."""
    owner = getattr(model, "__self__", model)
    try:
        from sklearn.base import is_regressor
    except ImportError:                                   # pragma: no cover
        return False
    try:
        return bool(is_regressor(owner))
    except Exception:                                     # noqa: BLE001 - objects sklearn cannot inspect
        return False


#: what the averaged prediction is explained on: itself, or its log-odds (shap's KernelExplainer link="logit")
LINKS = {"identity": lambda v: v, "logit": _logit}


def as_predict(model: Any) -> Callable[[Any], np.ndarray]:
    """A prediction function for ``model``: class probabilities for classifiers (all classes), predictions
    for regressors, a torch module's output (no gradients, in eval mode: no dropout, BatchNorm's running statistics;
    its layers' modes restored after each call), or ``model`` itself when it is a function.

    Examples
    --------
    >>> f = as_predict(lambda X: X.sum(axis=1))
    >>> f(np.ones((2, 3)))
    array([3., 3.])
    """
    module = type(model).__module__
    if module.startswith("torch") or hasattr(model, "forward") and hasattr(model, "parameters"):
        import torch

        dtype, device = module_input(model)
        ids = takes_ids(model)

        def torch_predict(X: Any) -> np.ndarray:
            rows = np.ascontiguousarray(X)     # C order: a DataFrame's column-major values take another kernel
            with torch.no_grad(), eval_modes(model):    # token ids (integers, for an embedding) stay ids
                out = model(torch.as_tensor(rows, dtype=torch.int64 if ids and rows.dtype.kind in "iu" else dtype,
                                            device=device))
            return out.detach().double().cpu().numpy()          # bfloat16 has no numpy type

        return torch_predict
    if hasattr(model, "predict_proba") and callable(model.predict_proba):
        return model.predict_proba
    if hasattr(model, "predict") and callable(model.predict):
        return model.predict
    if callable(model):
        return model
    raise TypeError(f"model must be a fitted model with predict / predict_proba, a torch module or a function, "
                    f"got {type(model).__name__}")


def feature_groups(groups: Any, names: list[str]) -> tuple[list[list[int]], list[str]]:
    """The players of rows of features ``names``: ``groups`` (None: one per feature; lists of positions or names; a
    dict of name -> features) as lists of feature positions, checked to cover every feature once, and their names.

    Examples
    --------
    >>> feature_groups([[0, "b"], [2]], ["a", "b", "c"])
    ([[0, 1], [2]], ['a + b', 'c'])
    >>> feature_groups({"first": [0], "rest": [1, 2]}, ["a", "b", "c"])[1]
    ['first', 'rest']
    """
    named = isinstance(groups, dict)
    lists = ModelGame._groups(list(groups.values()) if named else groups, names)
    player_names = [str(k) for k in groups] if named else (
        [" + ".join(names[i] for i in g) if len(g) > 1 else names[g[0]] for g in lists]
        if groups is not None else names)
    return lists, player_names


def player_of(groups: list[list[int]], n_features: int) -> np.ndarray:
    """Each feature's player ``(n_features,)`` from the players' lists of features (:func:`feature_groups`' first
    answer: every feature in exactly one).

    Examples
    --------
    >>> player_of([[0, 2], [1]], 3).tolist()
    [0, 1, 0]
    """
    out = np.empty(n_features, dtype=np.int64)
    for player, features in enumerate(groups):
        out[features] = player
    return out


class ModelGame(Game):
    """A model's prediction at ``x`` when only the features in ``S`` are known.

    Features outside ``S`` are imputed from ``background``: with ``imputation="baseline"`` they take
    the values of one baseline row (the papers' single-reference games); with ``"marginal"`` the
    prediction is averaged over the rows of ``background`` (interventional / marginal SHAP; the
    Kernel Banzhaf paper averages 50 rows); with a conditional imputation (``"conditional"`` =
    ``"gaussian"``, ``"copula"``, ``"empirical"``, or an :class:`~fairshare.games.imputers.Imputer`) they are
    drawn given the features in ``S`` from a model of the background (:mod:`fairshare.games.imputers`).

    Parameters
    ----------
    predict : callable or fitted model
        ``predict(X) -> (m,)`` or ``(m, k)``; a scikit-learn / xgboost / lightgbm model (class
        probabilities for classifiers), a torch module, or any function. Receives a pandas DataFrame
        with the original columns when ``x`` is pandas.
    x : the row to explain (numpy row, pandas Series or one-row DataFrame)
    background : a baseline row or rows (same columns)
    imputation : {"baseline", "marginal", "conditional", "gaussian", "copula", "empirical"} or an Imputer;
        default "baseline" for one background row, else "marginal". An Imputer already fitted is used as it is.
    groups : list of lists of feature indices or names (or a dict: group name -> its features), optional
        Each group is one player (one-hot blocks, image patches); every feature must be in one group.
    batch_size : int, optional
        Most rows passed to ``predict`` in one call (default: 65,536 rows or about 16 million cells,
        whichever is fewer, so wide inputs stay within ~128 MB per call).
    feature_names : names of the features (default: the DataFrame's columns, else ``x0, x1, ...``)
    link : ``"identity"`` (default) or ``"logit"``: the value is the log-odds of the averaged prediction
        (probabilities; as shap's KernelExplainer ``link="logit"``), so values add up on the log-odds scale

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> g = fs.games.ModelGame(lambda X: X @ np.array([1.0, 2.0, 3.0]), x=[1.0, 1.0, 1.0], background=[0.0, 0.0, 0.0])
    >>> fs.exact(g, "shapley").values
    array([1., 2., 3.])
    """

    kind = "model"

    #: called as ``on_batch(coalitions, values)`` after every model call with that call's coalitions and their
    #: values (as :meth:`__call__` returns them), before the next call: a cache keeps each batch as it comes
    on_batch: Callable[[np.ndarray, np.ndarray], None] | None = None

    def __init__(self, predict: Any, x: Any, background: Any, imputation: str | None = None, groups: Any = None,
                 batch_size: int | None = None, feature_names: Any = None, link: str = "identity") -> None:
        if link not in LINKS:
            raise ValueError(f"link must be one of {list(LINKS)}, got {link!r}")
        if link == "logit" and _is_regressor(predict):
            owner = type(getattr(predict, "__self__", predict)).__name__
            raise ValueError(f"link='logit' explains probabilities, and {owner} is a regressor; use link='identity'")
        self.link = link
        self.model = predict
        self.predict = as_predict(predict)
        columns, dtypes = frame_info(x)
        if columns is None:
            columns, dtypes = frame_info(background)
        # the model's frames hold x's and the background's values: labels as given, dtypes that hold both
        labels = column_labels(x)
        self._columns = labels if labels is not None else column_labels(background)
        self._dtypes = shared_dtypes(x, background) if dtypes is not None and hasattr(x, "columns") else dtypes
        self._frame = columns is not None and (hasattr(x, "columns") or hasattr(x, "index"))
        xr = as_rows(x, "x")
        if xr.shape[0] != 1:
            raise ValueError(f"x must be one row, got {xr.shape[0]} rows")
        bg = as_rows(background, "background")
        if bg.shape[1] != xr.shape[1]:
            raise ValueError(f"background has {bg.shape[1]} columns but x has {xr.shape[1]}")
        if bg.shape[0] == 0:
            raise ValueError("background must hold at least one row")
        if imputation is None:
            imputation = "baseline" if bg.shape[0] == 1 else "marginal"
        if not isinstance(imputation, Imputer) and imputation not in IMPUTATIONS:
            raise ValueError(f"imputation must be one of {IMPUTATIONS} or an Imputer, got {imputation!r}")
        self.sparse = is_sparse(xr) or is_sparse(bg)
        if self.sparse and imputation not in ("baseline", "marginal"):
            raise ValueError(f"imputation={imputation!r} models dense numeric features; sparse rows are imputed "
                             "from the background rows (imputation='marginal' or 'baseline')")
        self.imputer = imputation if isinstance(imputation, Imputer) and imputation.fitted else \
            make_imputer(imputation, bg)
        if self.imputer is not None:
            imputation = self.imputer.describe()
        if imputation == "baseline" and bg.shape[0] != 1:
            raise ValueError(f"imputation='baseline' takes one background row, got {bg.shape[0]}; "
                             "use imputation='marginal' to average over rows")
        if self.sparse:                                  # one representation for both (the model gets CSR rows)
            import scipy.sparse as sp

            xr, bg = sp.csr_matrix(xr, dtype=float), sp.csr_matrix(bg, dtype=float)
        n_features = xr.shape[1]
        names = [str(f) for f in feature_names] if feature_names is not None else (
            columns if columns is not None else [f"x{i}" for i in range(n_features)])
        if len(names) != n_features:
            raise ValueError(f"feature_names must have {n_features} names, got {len(names)}")
        self.feature_names = names
        self.x, self.background, self.imputation = (xr if self.sparse else xr[0]), bg, imputation
        self.groups, player_names = feature_groups(groups, names)
        super().__init__(len(self.groups), player_names=player_names, batch_size=None)
        self.row_batch = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.n_features = n_features
        self._feature_player = player_of(self.groups, n_features)

    @staticmethod
    def _groups(groups: Any, names: list[str]) -> list[list[int]]:
        n = len(names)
        if groups is None:
            return [[i] for i in range(n)]
        if isinstance(groups, str):                    # its letters would be read as feature names
            raise TypeError(f"groups must be lists of features (positions or names) or a dict of name -> features, "
                            f"got the string {groups!r}")
        index = {name: i for i, name in enumerate(names)}
        out, seen = [], np.zeros(n, dtype=int)
        for g in groups:
            members = []
            for m in (g if isinstance(g, (list, tuple, np.ndarray)) else [g]):
                if isinstance(m, str):
                    if m not in index:
                        raise ValueError(f"groups name the feature {m!r}, which is not one of the features "
                                         f"{names[:20]}" + (" ..." if n > 20 else ""))
                    members.append(index[m])
                elif isinstance(m, (int, np.integer)) and not isinstance(m, bool):
                    members.append(int(m))
                else:
                    raise TypeError(f"groups must hold feature positions or names, got {m!r}")
            for m in members:
                if not 0 <= m < n:
                    raise ValueError(f"groups refer to feature {m}, but there are {n} features")
            if not members:
                raise ValueError("groups must not be empty")
            np.add.at(seen, members, 1)                # a feature repeated inside one group counts twice
            out.append(members)
        if np.any(seen != 1):
            missing = [names[i] for i in np.flatnonzero(seen == 0)]
            twice = [names[i] for i in np.flatnonzero(seen > 1)]
            raise ValueError(f"groups: every feature must be in exactly one group; missing: {missing}, repeated: "
                             f"{twice}")
        return out

    @property
    def rows_per_coalition(self) -> int:
        """Model rows per evaluation: the background's rows, or the conditional imputer's draws."""
        return self.background.shape[0] if self.imputer is None else self.imputer.samples

    def cost(self) -> float:
        """Predicted seconds per evaluation: one model row per imputed row (:mod:`fairshare.games.cost`)."""
        strings = 0 if self.sparse or self.x.dtype != object else \
            sum(not isinstance(v, (int, float, np.number)) for v in self.x)
        return self.rows_per_coalition * row_seconds(self.model, self.n_features, strings)

    def call_seconds(self) -> float:
        """Predicted seconds of one model call whatever its rows: :data:`~fairshare.games.cost.CALL_SECONDS` for
        a model object or its bound method, 0 for a plain function (a lambda around a model hides its calls'
        cost: the prediction is a floor)."""
        return 0.0 if inspect.isfunction(self.model) else CALL_SECONDS

    def null_players(self) -> np.ndarray:
        """Players whose features equal the explicand's in every background row (imputing changes nothing); none
        under a conditional imputation (knowing a feature can change how the others are drawn)."""
        if self.imputer is not None:
            return np.zeros(self.n_players, dtype=bool)
        if self.sparse:
            same = sparse_columns_equal(self.background, self.x)
        else:
            same = np.all(_equal_or_both_nan(self.background, self.x[None, :]), axis=0) \
                if self.background.dtype != object else \
                np.array([all(same_value(b, xv) for b in self.background[:, j]) for j, xv in enumerate(self.x)])
        per_player = np.ones(self.n_players, dtype=bool)
        np.logical_and.at(per_player, self._feature_player, same)
        return per_player

    def parts(self) -> list[Game] | None:
        """Under marginal imputation over ``B >= 2`` background rows (identity link), the ``B`` games of one
        background row each (their mean is this game; each one's null players are the features where ``x`` equals
        its row); else None. The parts share the model and the rows (no copy).

        Examples
        --------
        >>> g = ModelGame(lambda X: X.sum(axis=1), x=[1.0, 2.0], background=[[1.0, 0.0], [0.0, 0.0]])
        >>> [p.null_players().tolist() for p in g.parts()]
        [[True, False], [False, False]]
        """
        B = self.background.shape[0]
        if self.imputer is not None or self.link != "identity" or B < 2:
            return None
        out = []
        for b in range(B):
            part = copy.copy(self)
            for scratch in ("_buffer", "on_batch"):       # the game's scratch space and its cache's hook
                part.__dict__.pop(scratch, None)
            part.n_evaluations = 0
            part.background, part.imputation = self.background[b:b + 1], "baseline"
            out.append(part)
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_buffer", None)                 # scratch space, not state (a game sent to a worker)
        state.pop("on_batch", None)                # a hook of the caller's process
        return state

    def _rows_for(self, coalitions: np.ndarray) -> tuple[Any, np.ndarray | None]:
        """The model's input rows for a batch of coalitions and their weights (None: equal), the marginal rows
        written into one buffer reused from batch to batch (fresh memory for every batch costs more than filling
        it, and the model does not keep its input)."""
        nf = self.n_features
        if self.sparse:                              # no (m, features) mask: the players of the stored entries
            return sparse_hybrid_rows(coalitions, self.x, self.background, self._feature_player), None
        identity = len(self.groups) == nf and bool(np.all(self._feature_player == np.arange(nf)))
        known = coalitions if identity else coalitions[:, self._feature_player]         # (m, n_features)
        if self.imputer is not None:
            rows, weights = self.imputer.rows(known, self.x.astype(float))
            return rows.reshape(-1, self.x.size), weights
        B = self.background.shape[0]
        shape = (known.shape[0], B, self.x.size)
        dtype = np.result_type(self.x.dtype, self.background.dtype)
        buffer = getattr(self, "_buffer", None)
        if buffer is None or buffer.size < np.prod(shape) or buffer.dtype != dtype:
            buffer = self._buffer = np.empty(int(np.prod(shape)), dtype=dtype)
        rows = buffer[: int(np.prod(shape))].reshape(shape)
        if dtype == np.float64:
            with threads_for(rows.size):
                _fill_rows(np.ascontiguousarray(known), self.x, self.background, rows)
        else:
            np.copyto(rows, self.background[None, :, :])
            np.copyto(rows, self.x[None, None, :], where=known[:, None, :])
        return rows.reshape(-1, self.x.size), None

    def _call(self, rows: Any) -> np.ndarray:
        if self._frame and not self.sparse:
            import pandas as pd

            frame = pd.DataFrame(rows, columns=self._columns)
            if self._dtypes is not None and self.imputer is None:   # drawn values stay as drawn (not truncated)
                frame = frame.astype(dict(zip(self._columns, self._dtypes)))
            out = self.predict(frame)
        else:
            out = self.predict(rows)
        return np.asarray(out, dtype=float)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        B = self.rows_per_coalition
        # default: at most 2^16 rows and about 2^24 cells (128 MB of float64) per model call (sparse rows: stored
        # entries)
        width = self.n_features if not self.sparse else max(1, self.x.nnz + self.background.nnz // max(B, 1))
        default = max(1, min(1 << 16, (1 << 24) // width))
        per_call = max(1, (self.row_batch or default) // B)
        parts = []
        for start in range(0, coalitions.shape[0], per_call):
            S = coalitions[start:start + per_call]
            try:
                rows, weights = self._rows_for(S)
                out = self._call(rows)
            except ModelError:
                raise
            except Exception as exc:          # noqa: BLE001 - chained, with the coalition that was asked for
                raise ModelError(f"the model raised {type(exc).__name__} ({str(exc).splitlines()[0][:200] if str(exc) else ''}) "
                                 f"on the rows of {S.shape[0]} coalition(s), the first "
                                 f"{format_coalition(S[0], self.player_names)}") from exc
            if out.ndim == 0 or out.shape[0] != S.shape[0] * B:
                got = 1 if out.ndim == 0 else out.shape[0]
                raise ValueError(f"predict returned {got} values for {S.shape[0] * B} rows (it must return one "
                                 "prediction, or one row of outputs, per input row)")
            check_output_axes(out.shape)
            out = out.reshape(S.shape[0], B, -1)
            out = out.mean(axis=1) if weights is None else (weights[:, :, None] * out).sum(axis=1)
            parts.append(LINKS[self.link](out))
            if self.on_batch is not None:
                self.on_batch(S, parts[-1][:, 0] if parts[-1].shape[1] == 1 else parts[-1])
        values = np.concatenate(parts, axis=0)
        return values[:, 0] if values.shape[1] == 1 else values


@njit(cache=CACHE, nogil=True, parallel=True)
def _fill_rows(known: np.ndarray, x: np.ndarray, background: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """``out[r, b, j] = x[j]`` where ``known[r, j]``, else ``background[b, j]`` (one pass, rows in parallel)."""
    for r in prange(known.shape[0]):
        for b in range(background.shape[0]):
            for j in range(x.shape[0]):
                out[r, b, j] = x[j] if known[r, j] else background[b, j]


def _equal_or_both_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise ``a == b``, two NaN counting as equal (as :func:`~fairshare._core.tables.same_value` counts them
    in columns of objects, so that a column's dtype does not change which players are null)."""
    same = a == b
    if np.issubdtype(a.dtype, np.inexact) and np.issubdtype(np.asarray(b).dtype, np.inexact):
        same |= np.isnan(a) & np.isnan(b)
    return same
