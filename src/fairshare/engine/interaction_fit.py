"""The cross-fitted polynomial surrogates of the interaction estimator (:mod:`fairshare.engine.interaction_regression`).

A surrogate of order ``l`` is ``g(S) = sum_{|T| <= l} beta_T [T subset of S]``, fitted by weighted least squares
(the regression weight ``mu`` of each coalition) on the sample. It is cross-fitted: the rows drawn at random are
split into folds (groups of sampling units, balanced over the strata), each fold's fit is trained on the other folds
and the rows taken with certainty, and the correction sums the folds' mean fit's residuals over the drawn rows and a
row's residual under the fit that left it out for the coalitions not drawn (:func:`fold_weights`), so it stays
unbiased whatever the fit does.

The normal equations are accumulated once, fold by fold, and each fold's system is the total less its own part:
``A_f = A_certain + c (A_random - A_(f))`` with ``c = folds / (folds - 1)`` (the weight that keeps the training
rows' share of each stratum), so every penalty of every fold costs one factorization and no pass over the rows.
A penalized system (``ridge > 0``, on the coefficients of two or more players) is solved by one Cholesky
factorization (:func:`spd_solve`, scipy's LAPACK), an LU where it is not positive definite; the Shapley family's
constraint (the coefficients add up to ``v(N) - v(empty)``) borders it. An unpenalized system is solved by the
pseudo-inverse (it may be singular).

The rows are read in blocks (:data:`ROW_BLOCK`), so the design matrix is never held whole; the memory is that of
``folds + 3`` normal matrices (each fold's, the certain rows', a fold's system and its Cholesky factor): the pairs
of 100 players (5,051 coefficients, 4 folds) take 1.4 GB (measured: the process's peak 1.78 GB, 1.96 GB with
numpy's factorization, which copies the system once more), whatever the number of coalitions. So each row's features
are built twice, for the normal equations and for its residuals (1.5-2.8 s of 13-15 at 100 players; held as
booleans they would take 100 MB per 20,000 coalitions). Runs on one sample inside :func:`shared_fits` (a row's values
and matrices) fit it once.
"""

from __future__ import annotations

import contextlib
import hashlib
from contextvars import ContextVar
from typing import Any, Iterator

import numpy as np

from ..indices.interactions import InteractionIndex, subsets_up_to
from ..indices.moebius import contains, interactions_from_terms

__all__ = ["FoldSystems", "carriers", "cross_fit", "fold_weights", "spd_solve", "shared_fits", "chosen", "ROW_BLOCK"]

#: rows of the design built at a time
ROW_BLOCK = 1024
#: unknowns from which :func:`spd_solve` factors on the BLAS's threads (below: on one thread)
THREADED_FACTOR = 1500
#: the chosen estimates of the runs inside :func:`shared_fits`, keyed by a digest of every input (None outside)
_SHARED: ContextVar[dict | None] = ContextVar("shared_fits", default=None)


def carriers(feats: np.ndarray, n: int) -> np.ndarray:
    """Boolean ``(p, n)`` rows of the padded subsets ``feats``.

    Examples
    --------
    >>> carriers(np.array([[-1, -1], [0, -1], [0, 2]]), 3).astype(int)
    array([[0, 0, 0],
           [1, 0, 0],
           [1, 0, 1]])
    """
    out = np.zeros((feats.shape[0], n), dtype=bool)
    rows = np.repeat(np.arange(feats.shape[0]), feats.shape[1])
    cols = feats.ravel()
    out[rows[cols >= 0], cols[cols >= 0]] = True
    return out


class FoldSystems:
    """The weighted normal equations of a polynomial surrogate of order ``order``, per fold, from one pass.

    Parameters
    ----------
    Z, V : the coalitions ``(rows, n)`` and their values ``(rows, k)``; rows 0 and 1 are the empty and the grand
        coalition (the Shapley family fits them exactly, outside the least squares).
    mu : the regression weight of each row (non-negative).
    fold : the fold of each row, ``-1`` for the rows taken with certainty (in every fit).
    folds : how many folds (1: one fit on every row, its residuals in-sample).
    order : the surrogate's order; ``shapley``: the Shapley family (``beta_empty = v(empty)``, constrained sum).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = np.vstack([np.zeros(4, bool), np.ones(4, bool), rng.random((40, 4)) < 0.5])
    >>> V = (Z[:, :1] & Z[:, 1:2]).astype(float) + Z[:, 2:3]         # a pair and a main effect: order 2 fits it
    >>> fit = FoldSystems(Z, V, np.ones(42), np.r_[-1, -1, np.arange(40) % 4], 4, 2, shapley=True)
    >>> beta = fit.solve(0, [1e-9])
    >>> float(np.abs(fit.residuals(beta, np.arange(42))).max()) < 1e-6
    True
    """

    def __init__(self, Z: np.ndarray, V: np.ndarray, mu: np.ndarray, fold: np.ndarray, folds: int, order: int,
                 shapley: bool) -> None:
        self.Z, self.V, self.mu, self.fold, self.folds = Z, V, mu, fold, folds
        self.shapley = shapley
        n = Z.shape[1]
        self.feats = subsets_up_to(n, order, 0)                     # the empty set first
        self.carriers = carriers(self.feats, n)
        self.v0, self.vN = V[0], V[1]
        # the Shapley family leaves out the empty set's coefficient (v(empty)) and the two ends (fitted exactly)
        self._cols = self.feats[1:] if shapley else self.feats
        self.shrunk = (self._cols >= 0).sum(axis=1) >= 2
        p, k = self._cols.shape[0], V.shape[1]
        every = np.arange(2 if shapley else 0, Z.shape[0])
        groups = {-1: every} if folds == 1 else {f: every[fold[every] == f] for f in range(-1, folds)}
        self._A = {f: np.zeros((p, p)) for f in groups}
        self._b = {f: np.zeros((p, k)) for f in groups}
        for f, rows in groups.items():
            for X, idx in self._blocks(rows):
                root = np.sqrt(mu[idx])
                X *= root[:, None]                    # X^T X of one array: a symmetric product (half the work)
                self._A[f] += X.T @ X
                self._b[f] += X.T @ (self._target(idx) * root[:, None])

    @property
    def n_features(self) -> int:
        """The coefficients fitted (the empty set's too)."""
        return int(self.feats.shape[0])

    def _target(self, idx: np.ndarray) -> np.ndarray:
        return self.V[idx] - self.v0[None, :] if self.shapley else self.V[idx]

    def _blocks(self, rows: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, rows.size, ROW_BLOCK):
            idx = rows[start:start + ROW_BLOCK]
            yield contains(self.Z[idx], self._cols).astype(float), idx

    def system(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        """``(A, b)`` of the fit that leaves fold ``f`` out (``folds == 1``: of every row)."""
        if self.folds == 1:
            return self._A[-1], self._b[-1]
        c = self.folds / (self.folds - 1.0)
        out = []
        for parts in (self._A, self._b):              # in place: one matrix of memory beyond the stored ones
            total = np.zeros_like(parts[-1])
            for g in range(self.folds):
                if g != f:
                    total += parts[g]
            total *= c
            total += parts[-1]
            out.append(total)
        return out[0], out[1]

    def solve(self, f: int, ridges: list[float]) -> np.ndarray:
        """``beta (p, k, len(ridges))`` (the empty set's first) of the fits leaving fold ``f`` out; a ridge
        penalizes the coefficients of two or more players by ``ridge`` times the mean diagonal of the normal
        equations (0: unpenalized, by the pseudo-inverse)."""
        A, b = self.system(f)
        at = np.flatnonzero(self.shrunk)
        scale = float(np.mean(np.diag(A)))
        p = A.shape[0]
        border = max(float(np.abs(A).max(initial=0.0)), 1e-300)
        rhs = np.concatenate([b, ((self.vN - self.v0) * border)[None, :]]) if self.shapley else b
        diagonal = A[at, at]
        out = []
        for ridge in ridges:
            A[at, at] = diagonal + ridge * scale
            beta = spd_solve(A, rhs, border if self.shapley else None) if ridge else None
            if beta is None:                 # unpenalized, or not positive definite (main effects undetermined)
                K = _bordered(A, border) if self.shapley else A
                try:
                    beta = np.linalg.solve(K, rhs)[:p] if ridge else None
                except np.linalg.LinAlgError:
                    pass
                if beta is None:
                    beta = (np.linalg.pinv(K, hermitian=True) @ rhs)[:p]
                del K
            out.append(np.concatenate([self.v0[None, :], beta]) if self.shapley else beta)
        A[at, at] = diagonal                           # one fold's A is the stored matrix itself
        return np.stack(out, axis=2)

    def residuals(self, beta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``V - g`` ``(rows, k, fits)`` at the rows ``idx`` of the surrogates with coefficients ``beta``
        ``(p, k, fits)``."""
        p, k, fits = beta.shape
        out = np.empty((idx.size, k, fits))
        for start in range(0, idx.size, ROW_BLOCK):
            part = idx[start:start + ROW_BLOCK]
            X = contains(self.Z[part], self.feats).astype(float)
            out[start:start + ROW_BLOCK] = self.V[part][:, :, None] - (X @ beta.reshape(p, -1)).reshape(-1, k, fits)
        return out

    def index_of(self, beta: np.ndarray, index: InteractionIndex, subsets: np.ndarray) -> np.ndarray:
        """The surrogates' index values ``(len(subsets), k, fits)`` at ``subsets``, exactly (from their Moebius
        terms ``beta (p, k, fits)``)."""
        p, k, fits = beta.shape
        return interactions_from_terms(self.carriers, beta.reshape(p, -1), index, subsets).reshape(-1, k, fits)


def _bordered(A: np.ndarray, border: float) -> np.ndarray:
    """``[[A, border 1], [border 1^T, 0]]``: the Shapley family's constraint (the coefficients' sum) bordering ``A``."""
    p = A.shape[0]
    K = np.zeros((p + 1, p + 1))
    K[:p, :p] = A
    K[:p, p] = K[p, :p] = border
    return K


def spd_solve(A: np.ndarray, rhs: np.ndarray, border: float | None = None) -> np.ndarray | None:
    """``A^-1 rhs`` for a positive definite ``A``, from its Cholesky factor (half an LU's work) and two triangular
    solves; with ``border``, the solution of :func:`_bordered`'s system (``rhs``'s last row the constraint's), by the
    Schur complement of its one bordering row. None where ``A`` is not positive definite.

    The factor is scipy's LAPACK's (``dpotrf``), on the BLAS's threads from :data:`THREADED_FACTOR` unknowns and on
    one thread below. At 5,051 unknowns (the pairs of 100 players) on one thread it took 0.93 s where numpy's
    ``cholesky`` took 1.65 s (another OpenBLAS build), on this machine's 2 threads 0.55 s against 1.20 s; below about
    1,500 unknowns the second thread, started beside numpy's own pool, cost more than it saved (the pairs of 50
    players, 24 factorizations: 0.50 s on one thread, 0.62-0.77 s on two, 0.53 s with numpy's). Not
    :func:`~fairshare._core.arrays.factor_solver` (the small systems'): it falls back to a pseudo-inverse (ten
    factorizations) where the bordered system's LU serves.

    Examples
    --------
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> np.round(spd_solve(A, np.array([[1.0], [2.0]])).ravel(), 6).tolist()
    [0.090909, 0.636364]
    >>> rhs = np.array([[1.0], [2.0], [5.0 * 2.0]])                # x_0 + x_1 = 5, the border 2
    >>> x = spd_solve(A, rhs, border=2.0)
    >>> bool(np.allclose(x, np.linalg.solve(_bordered(A, 2.0), rhs)[:2])), round(float(x.sum()), 6)
    (True, 5.0)
    >>> spd_solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((2, 1))) is None
    True
    """
    from scipy.linalg import solve_triangular
    from scipy.linalg.lapack import dpotrf

    from .ridge_path import one_thread

    p = A.shape[0]
    threads = contextlib.nullcontext() if p >= THREADED_FACTOR else one_thread()
    with threads:                                  # A is symmetric: its transpose is the Fortran-ordered A
        L, info = dpotrf(np.asarray(A, dtype=float).T, lower=1, clean=0)
    if info != 0:
        return None
    B = rhs[:p] if border is None else np.concatenate([rhs[:p], np.full((p, 1), border)], axis=1)
    with one_thread():
        Y = solve_triangular(L, solve_triangular(L, B, lower=True, check_finite=False), lower=True, trans="T",
                             check_finite=False)
    del L
    if border is not None:                         # x = y_b - y_u lam with border 1^T x = the constraint's value
        Y = Y[:, :-1] - Y[:, -1:] * ((border * Y[:, :-1].sum(axis=0) - rhs[p]) / (border * Y[:, -1].sum()))[None, :]
    return Y if np.all(np.isfinite(Y)) else None


def fold_weights(w: np.ndarray, fpc: np.ndarray, certain: np.ndarray, folds: int) -> tuple[np.ndarray, np.ndarray]:
    """``(held, inside)``: the weights of a row's residual under its own fold's fit and of the sum of its residuals
    under the other folds' fits over ``folds`` (:func:`cross_fit`), so that the correction is the sum of the mean
    fit's residuals over the drawn coalitions, exactly, plus the Horvitz-Thompson estimate of their sum over the
    coalitions not drawn, from the held-out residuals.

    Coalitions are drawn without replacement, so a held-out unit is never one its fold's fit was trained on: the
    held-out units of a stratum are a sample of the stratum less the training units, not of the whole stratum, and
    ``sum w (v - g_f)`` over them is biased (a fit is closer to the coalitions it was trained on than to the rest:
    mean |t| of the bias 2.3, max 7.0, over 300 seeds of 8 players at 120 evaluations). Here, in a stratum of ``N``
    units of which ``n`` drawn (``n = N (1 - fpc)`` in expectation; ``w (1 - fpc)``: the round's share of a
    mixture, 1 for one round), ``sum_drawn (v - g) + (N - n) / n sum_drawn (v - g_own)``, ``g`` the folds' mean fit
    and ``g_own`` the fit that left the row out: a row weighs ``w (1 - fpc) / folds + w fpc`` under its own fold's
    fit and ``w (1 - fpc)`` under the others' mean (what a constant residual makes ``w``, as before); the rows taken
    with certainty ``w`` under every fit. The held-out residuals of a fold stand for the undrawn units of the fits
    that left them out; pooled over the folds (not each fold's by its own share, which weighs a fold of one drawn
    unit as one of three), off only by the folds' unequal shares of a stratum times their fits' differences there
    (none detectable: mean |t| 0.76 there, 0.83 at 6 players and 50 evaluations).

    Examples
    --------
    >>> held, inside = fold_weights(np.full(3, 4.0), np.array([0.75, 0.75, 0.0]), np.array([False, False, True]), 2)
    >>> held.tolist(), inside.tolist()       # drawn one in 4: 1/2 + 3 under its own fit, 1 under the other one
    ([3.5, 3.5, 0.0], [1.0, 1.0, 4.0])
    """
    kept = np.where(certain, 0.0, w * (1.0 - fpc))
    return np.where(certain, 0.0, kept / folds + w * fpc), np.where(certain, w, kept)


def cross_fit(systems: FoldSystems, ridges: list[float], index: InteractionIndex, subsets: np.ndarray,
              certain: np.ndarray, weights: tuple[np.ndarray, np.ndarray] | None = None
              ) -> dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each penalty: the surrogate's index (the mean over the folds' fits), the weighted residuals the
    correction sums, ``held r_own + inside (sum_{f != own} r_f) / folds``, where ``r_own`` is a row's residual under
    its own fold's fit (``weights = (held, inside)``, :func:`fold_weights`; by default 1 and 0 for the rows drawn at
    random, 0 and 1 for the rows taken with certainty: the held-out residual, and the mean over the fits), and
    ``r_own`` itself (the spread of the held-out residuals is what the error bars read: a fit's residuals at the
    rows it was trained on understate the variance of the rest).

    Examples
    --------
    >>> from fairshare.indices.interactions import InteractionIndex
    >>> rng = np.random.default_rng(1)
    >>> Z = np.vstack([np.zeros(3, bool), np.ones(3, bool), rng.random((30, 3)) < 0.5])
    >>> V = Z[:, :1].astype(float) * 2.0
    >>> fold = np.r_[-1, -1, np.arange(30) % 2]
    >>> fit = FoldSystems(Z, V, np.ones(32), fold, 2, 1, shapley=True)
    >>> ix, resid, _ = cross_fit(fit, [0.0], InteractionIndex("k-sii", 1), subsets_up_to(3, 1, 1), fold < 0)[0.0]
    >>> np.round(ix[:, 0], 6).tolist(), float(np.abs(resid).max()) < 1e-9
    ([2.0, 0.0, 0.0], True)
    """
    k, rows, fits, F = systems.V.shape[1], systems.Z.shape[0], len(ridges), systems.folds
    held_w, inside_w = weights if weights is not None else ((~certain).astype(float), certain.astype(float))
    betas = [systems.solve(f, ridges) for f in range(F)]
    stacked = np.concatenate(betas, axis=2)                 # (p, k, F fits): every row under every fold's fit
    own = np.where(certain, -1, systems.fold)
    resid, plain = np.zeros((rows, k, fits)), np.zeros((rows, k, fits))
    for start in range(0, rows, ROW_BLOCK):
        part = np.arange(start, min(start + ROW_BLOCK, rows))
        each = systems.residuals(stacked, part).reshape(part.size, k, F, fits)
        if F == 1:                                 # one fit on every row: its residuals, in-sample
            plain[part] = each[:, :, 0]
            resid[part] = (held_w + inside_w)[part, None, None] * plain[part]
            continue
        mine = np.where((own[part] >= 0)[:, None, None], each[np.arange(part.size), :, np.maximum(own[part], 0)], 0.0)
        plain[part] = mine
        resid[part] = held_w[part, None, None] * mine + inside_w[part, None, None] * (each.sum(axis=2) - mine) / F
    # the index is linear in the coefficients: the folds' mean index is the mean fit's
    base = systems.index_of(sum(betas) / F, index, subsets)
    return {r: (base[:, :, i], resid[:, :, i], plain[:, :, i]) for i, r in enumerate(ridges)}


@contextlib.contextmanager
def shared_fits() -> Iterator[None]:
    """Inside, the interaction runs on one sample share their fit: a run whose sample, weights, groups, base index and
    candidates are an earlier run's (in this context, this thread) takes that run's chosen estimate and totals
    instead of fitting again. ``explain(..., interactions=2)`` runs each row's sample twice, for the values and then
    for the matrices of the same base index (43 -> 23 s a row at 100 features, a black box's pairs at its default
    budget). Every round of a stopping rule is kept (a few MB each) until the context ends; outside it nothing is.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: S[:, 0] * S[:, 1] + S.sum(axis=1), n_players=6)
    >>> with shared_fits():
    ...     a = fs.interactions(g, "k-sii", order=2, budget=40, seed=0, method="iq-regression")
    ...     b = fs.interactions(g, "k-sii", order=2, budget=40, seed=0, method="iq-regression")
    ...     fitted = len(_SHARED.get())
    >>> fitted, bool((a.values == b.values).all()), _SHARED.get() is None     # two runs, one fit; none kept after
    (1, True, True)
    """
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def chosen(solver: Any, rows: Any, candidates: list) -> tuple:
    """The interaction solver's ``_estimate(rows, candidates)``
    (:class:`~fairshare.engine.interaction_regression.InteractionSolver`), or inside :func:`shared_fits` a copy of an
    earlier run's on the same inputs: it reads nothing but the sample, the weights, the groups, the base index and the
    candidates."""
    memo = _SHARED.get()
    if memo is None:
        return solver._estimate(rows, candidates)
    digest = hashlib.blake2b(repr((solver.n, solver.index, candidates, rows.G)).encode())
    for a in (rows.Z, rows.V, rows.mu, rows.w, rows.fpc, rows.group):
        digest.update(np.ascontiguousarray(a).tobytes())
    key = digest.digest()
    if key not in memo:
        memo[key] = solver._estimate(rows, candidates)
    values, stderr, best, spread, block = memo[key]
    return values.copy(), stderr.copy(), best, list(spread), block
