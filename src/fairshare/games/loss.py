"""LossGame: how much a model's loss falls when it knows the features of a coalition (SAGE; Covert, Lundberg and
Lee 2020, "Understanding global feature contributions with additive importance measures").

``v(S) = mean_i loss(f_empty, y_i) - mean_i loss(f_S(x_i), y_i)`` over the rows ``(x_i, y_i)`` used, where
``f_S(x) = E[f(x_S, X_{-S})]`` averages the model over the features outside ``S`` imputed from a background:
marginally (the background's rows) or conditionally (a fitted Gaussian or Gaussian-copula imputer's draws given
``x_S``). ``v(empty) = 0`` and ``v(all) = loss of the mean prediction - loss of the model``; the Shapley values of
``v`` are the SAGE values. Every batch of coalitions becomes one array of model rows (coalition x row x imputed
row), sent to the model in calls of at most ``row_batch`` rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arguments import check_int
from .base import Game, check_output_axes
from .imputers import GaussianImputer, known_solve
from .model import player_of

__all__ = ["LossGame", "LOSSES", "row_losses"]

#: the losses known by name
LOSSES = ("mse", "log_loss", "zero_one")


def row_losses(loss: str | Callable, pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """One loss per row of predictions ``pred`` ``(P, k)`` against targets ``y`` ``(P,)`` (class positions for the
    classification losses; ``k = 1``: the probability of class 1).

    Examples
    --------
    >>> row_losses("mse", np.array([[1.0], [3.0]]), np.array([0.0, 1.0]))
    array([1., 4.])
    >>> row_losses("zero_one", np.array([[0.2, 0.8], [0.6, 0.4]]), np.array([1, 1]))
    array([0., 1.])
    """
    if callable(loss):
        out = np.asarray(loss(pred[:, 0] if pred.shape[1] == 1 else pred, y), dtype=float)
        if out.shape != (pred.shape[0],):
            raise ValueError(f"loss must return one loss per row ({pred.shape[0]},), got shape {out.shape}")
        return out
    if loss == "mse":
        target = y.reshape(pred.shape[0], -1)
        return ((pred - target) ** 2).sum(axis=1)
    rows = np.arange(pred.shape[0])
    if pred.shape[1] == 1:
        p1 = pred[:, 0]
        if loss == "zero_one":
            return ((p1 > 0.5).astype(int) != y).astype(float)
        p = np.clip(np.where(y == 1, p1, 1.0 - p1), 1e-12, 1.0)
        return -np.log(p)
    if loss == "zero_one":
        return (np.argmax(pred, axis=1) != y).astype(float)
    return -np.log(np.clip(pred[rows, y.astype(int)], 1e-12, 1.0))


class LossGame(Game):
    """SAGE's game: the fall in the model's mean loss on rows ``X, y`` when it knows the features of a coalition.

    Parameters
    ----------
    predict : callable
        Rows ``(r, d)`` to predictions ``(r,)`` or ``(r, k)`` (class probabilities for the classification losses).
    X : ndarray (N, d)
        The rows whose loss is measured (finite numbers; objects where columns hold words a pipeline encodes, imputed
        marginally as they are).
    y : ndarray (N,)
        Their targets: numbers for ``"mse"``, class positions ``0 .. k-1`` (or 0/1 with one output) otherwise.
    background : ndarray (B, d)
        The rows the unknown features are imputed from (``imputer=None``), or that ``imputer`` was fitted on.
    loss : "mse", "log_loss", "zero_one" or callable ``loss(predictions, y) -> (P,)``
    imputer : a fitted :class:`~fairshare.games.GaussianImputer` (or its copula subclass), or None (marginal)
    folds : ndarray (N,) of ints in ``0 .. K-1``, optional
        With folds the game has ``1 + K`` outputs: the loss reduction on all rows, then on each fold's rows (what
        the data-sampling error is estimated from, at no extra model call).
    row_batch : int
        Most model rows per model call.
    feature_names : list of str, optional
    frame_columns : list of str, optional
        When given, the model receives pandas DataFrames with these columns.
    dtypes : list, optional
        The frames' column dtypes (rows of objects: words, categories as the model was fitted on them).
    groups : list of lists of feature positions, optional
        Players that are groups of features (every feature in exactly one): a coalition knows every feature of its
        groups; ``feature_names`` then names the groups.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]]); y = 2 * X[:, 0]
    >>> g = LossGame(lambda R: 2 * R[:, 0], X, y, background=X)
    >>> g(np.array([[False, False], [True, False], [False, True]]))   # Var(2 x0) = 5 is all explained by x0
    array([0., 5., 0.])
    """

    kind = "model"

    def __init__(self, predict: Callable, X: np.ndarray, y: np.ndarray, background: np.ndarray,
                 loss: str | Callable = "mse", imputer: GaussianImputer | None = None, folds: np.ndarray | None = None,
                 row_batch: int = 1 << 16, feature_names: Any = None, frame_columns: Any = None,
                 dtypes: Any = None, groups: list[list[int]] | None = None) -> None:
        self.X, self.background = _values(X), _values(background)
        self.y = np.asarray(y)
        self.dtypes = None if dtypes is None else list(dtypes)
        N, d = self.X.shape
        self.predict, self.loss, self.imputer = predict, loss, imputer
        self.row_batch = check_int(row_batch, "row_batch", minimum=1)
        self.frame_columns = None if frame_columns is None else list(frame_columns)
        self.folds = None if folds is None else np.asarray(folds, dtype=np.int64)
        if self.folds is not None:
            K = int(self.folds.max()) + 1
            self._fold_weights = np.zeros((N, K))
            self._fold_weights[np.arange(N), self.folds] = 1.0
            self._fold_weights /= self._fold_weights.sum(axis=0, keepdims=True)
        # at most about 2^22 (coalition, row) losses or conditional means held at once
        self.group_of = None if groups is None else player_of(groups, d)          # each feature's player
        players = d if groups is None else len(groups)
        super().__init__(players, player_names=feature_names, batch_size=max(1, (1 << 22) // (N * max(d, 1))))
        self.model_rows = 0
        self._empty_loss: np.ndarray | None = None

    @property
    def rows_per_pair(self) -> int:
        """Model rows per (coalition, row): the background's rows or the imputer's draws."""
        return self.background.shape[0] if self.imputer is None else self.imputer.samples

    @property
    def n_rows(self) -> int:
        """The rows whose loss is measured."""
        return int(self.X.shape[0])

    @property
    def row_weights(self) -> np.ndarray:
        """``(N, k)``: how each output averages the rows' losses (all rows equally; then each fold's rows)."""
        N = self.n_rows
        total = np.full((N, 1), 1.0 / N)
        return total if self.folds is None else np.column_stack([total, self._fold_weights])

    def model_input(self, rows: np.ndarray) -> Any:
        """Rows ``(r, d)`` as the model takes them: a DataFrame of ``frame_columns`` (with ``dtypes``) or the array.

        Examples
        --------
        >>> X = np.array([[0.0, 1.0]]); LossGame(lambda R: R[:, 0], X, X[:, 0], X).model_input(X).shape
        (1, 2)
        """
        if self.frame_columns is None:
            return rows
        import pandas as pd

        frame = pd.DataFrame(rows, columns=self.frame_columns)
        if self.dtypes is not None:                        # words and categories as the model was given them
            frame = frame.astype(dict(zip(self.frame_columns, self.dtypes)))
        return frame

    def _predict(self, rows: np.ndarray) -> np.ndarray:
        self.model_rows += rows.shape[0]
        out = np.asarray(self.predict(self.model_input(rows)), dtype=float)
        if out.ndim == 0 or out.shape[0] != rows.shape[0]:
            raise ValueError(f"the model returned {1 if out.ndim == 0 else out.shape[0]} predictions for "
                             f"{rows.shape[0]} rows (it must return one prediction, or one row, per input row)")
        check_output_axes(out.shape)
        return out.reshape(out.shape[0], -1)

    def _conditional(self, known: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The imputer's conditional means ``(m, N, d)`` (in its scores) of every row (or ``(m, 1, d)``: of row
        ``rows[c]`` for coalition ``c``) and the noise ``(m, K, d)`` added to them, for each coalition: the
        Gaussian conditional of all rows in one batched solve."""
        imp = self.imputer
        m, d = known.shape
        if rows is None:
            scores = imp._scores(self.X)                                                         # (N, d)
            rhs = np.broadcast_to((scores - imp.mean).T[None], (m, d, scores.shape[0]))
        else:
            rhs = (imp._scores(self.X[rows]) - imp.mean)[:, :, None]                             # (m, d, 1)
        cond_mean = imp.mean[None, None, :] + (imp.cov @ known_solve(imp.cov, known, rhs)).transpose(0, 2, 1)
        cond_cov = imp.cov[None] - imp.cov @ known_solve(imp.cov, known, np.broadcast_to(imp.cov, (m, d, d)))
        unknown = ~known
        cond_cov = cond_cov * (unknown[:, :, None] & unknown[:, None, :])
        lam, vec = np.linalg.eigh(0.5 * (cond_cov + cond_cov.transpose(0, 2, 1)))
        root = (vec * np.sqrt(np.clip(lam, 0.0, None))[:, None, :]) @ vec.transpose(0, 2, 1)
        return cond_mean, imp.z[None] @ root.transpose(0, 2, 1)

    def _pair_rows(self, known: np.ndarray, c: np.ndarray, i: np.ndarray, cond: Any) -> np.ndarray:
        """Model rows ``(P, R, d)`` of the (coalition ``c``, row ``i``) pairs: ``x_i`` on the known features, the
        imputed values elsewhere (``cond``: each pair's conditional mean ``(P, d)`` and noise ``(P, R, d)``)."""
        x = self.X[i][:, None, :]
        keep = known[c][:, None, :]
        if cond is None:
            return np.where(keep, x, self.background[None, :, :])
        mean, noise = cond
        draws = mean[:, None, :] + noise
        constant = self.imputer.fitted_cov.constant
        if constant.any():
            draws[..., constant] = self.imputer.mean[constant]
        return np.where(keep, x, self.imputer._values(draws))

    def _pair_losses(self, known: np.ndarray, c: np.ndarray, i: np.ndarray, cond: Any) -> np.ndarray:
        """The loss ``(P,)`` of row ``i[p]`` when the model knows coalition ``known[c[p]]``: one model call."""
        R = self.rows_per_pair
        rows = self._pair_rows(known, c, i, cond)
        pred = self._predict(rows.reshape(-1, rows.shape[-1])).reshape(c.size, R, -1).mean(axis=1)
        return row_losses(self.loss, pred, self.y[i])

    def pair_falls(self, known: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The fall in loss ``(P,)`` of row ``rows[p]`` alone when the model knows coalition ``known[p]`` (one
        pair's model rows each): what an estimator that gives each row its own coalitions evaluates.

        Examples
        --------
        >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]]); y = 2 * X[:, 0]
        >>> g = LossGame(lambda R: 2 * R[:, 0], X, y, background=X)
        >>> g.pair_falls(np.array([[True, False], [False, True]]), np.array([0, 0]))   # (9 - 0), (9 - 9)
        array([9., 0.])
        """
        return self._falls(self._features(known), rows)

    def _falls(self, known: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """:meth:`pair_falls` of coalitions of features."""
        P = known.shape[0]
        some = known.any(axis=1)
        if not some.all():                    # the empty coalition's loss is the empty loss: it falls by 0, no call
            out = np.zeros(P)
            if some.any():
                out[some] = self._falls(known[some], rows[some])
            return out
        out = np.empty(P)
        step = max(1, self.row_batch // self.rows_per_pair)
        empty = self.empty_losses()
        for start in range(0, P, step):
            p = np.arange(start, min(start + step, P))
            cond = None
            if self.imputer is not None:
                mean, noise = self._conditional(known[p], rows[p])
                cond = (mean[:, 0], noise)
            out[p] = empty[rows[p]] - self._pair_losses(known[p], p - start, rows[p], cond)
        return out

    def losses(self, known: np.ndarray) -> np.ndarray:
        """The loss ``(m, N)`` of every row when the model knows the features of each coalition of ``known``."""
        known = self._features(known)
        m, N = known.shape[0], self.X.shape[0]
        R = self.rows_per_pair
        cond = self._conditional(known) if self.imputer is not None else None
        out = np.empty(m * N)
        step = max(1, self.row_batch // R)
        for start in range(0, m * N, step):
            p = np.arange(start, min(start + step, m * N))
            c, i = p // N, p % N
            out[p] = self._pair_losses(known, c, i, None if cond is None else (cond[0][c, i], cond[1][c]))
        return out.reshape(m, N)

    def empty_losses(self) -> np.ndarray:
        """Every row's loss under the mean prediction (the model knowing no feature): one pair's model rows, the
        same for every row."""
        if self._empty_loss is None:
            none = np.zeros((1, self.X.shape[1]), dtype=bool)
            cond = self._conditional(none) if self.imputer is not None else None
            zero = np.zeros(1, dtype=np.int64)
            rows = self._pair_rows(none, zero, zero, None if cond is None else (cond[0][zero, zero], cond[1][zero]))
            pred = self._predict(rows[0]).mean(axis=0, keepdims=True)
            N = self.X.shape[0]
            self._empty_loss = row_losses(self.loss, np.repeat(pred, N, axis=0), self.y)
        return self._empty_loss

    def _features(self, known: np.ndarray) -> np.ndarray:
        """Coalitions of players as coalitions of features: every feature of a group known with its group."""
        return known if self.group_of is None else np.asarray(known, dtype=bool)[:, self.group_of]

    def row_game(self, i: int) -> RowLossGame:
        """Row ``i``'s game alone: the fall in its loss when the model knows a coalition (``pair_falls``).

        Examples
        --------
        >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]]); y = 2 * X[:, 0]
        >>> LossGame(lambda R: 2 * R[:, 0], X, y, background=X).row_game(0)(np.array([[True, False], [False, True]]))
        array([9., 0.])
        """
        return RowLossGame(self, int(i))

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        some = coalitions.any(axis=1)
        if not some.all():                    # the empty coalition falls by 0 (its loss is the empty loss): no call
            m = coalitions.shape[0]
            out = np.zeros(m if self.folds is None else (m, 1 + self._fold_weights.shape[1]))
            if some.any():
                out[some] = self._evaluate(coalitions[some])
            return out
        fall = self.empty_losses()[None, :] - self.losses(coalitions)                          # (m, N)
        total = fall.mean(axis=1)
        if self.folds is None:
            return total
        return np.column_stack([total, fall @ self._fold_weights])


def _values(rows: Any) -> np.ndarray:
    """Rows as contiguous floats, or as objects where they hold words (imputed as they are)."""
    rows = np.asarray(rows)
    return np.ascontiguousarray(rows, dtype=object if rows.dtype == object else float)


class RowLossGame(Game):
    """One row's game of a :class:`LossGame`: ``v_i(S)``, the fall in row ``i``'s loss when the model knows ``S``
    (one pair's model rows per coalition); the loss game is the mean of its rows' games."""

    kind = "model"

    def __init__(self, game: LossGame, i: int) -> None:
        super().__init__(game.n_players, player_names=game.player_names,
                         batch_size=max(1, game.row_batch // game.rows_per_pair))
        self.game, self.i = game, i

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        return self.game.pair_falls(coalitions, np.full(coalitions.shape[0], self.i))
