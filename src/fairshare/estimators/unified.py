"""The unified Shapley estimators (Chen et al., "A Unified Framework for Provably Efficient
Algorithms to Estimate Shapley Values", v1 and v2).

With ``P = I - 11^T/d``, kernel weights ``k(S) = (d-1) / (C(d,|S|) |S| (d-|S|))``,
``alpha = (v(N) - v(empty)) / d`` and targets ``y_S = v(S) - v(empty) - lambda |S|``, the
Shapley values are ``phi = x + alpha 1`` where ``x`` (orthogonal to 1) solves

    minimize   sum_S k(S) (z_S^T x - y_S)^2          (Theorem 2.1, regression form)
or equals      d/(d-1) P sum_S k(S) z_S y_S          (matrix-vector form).

An estimator replaces the sums over all coalitions by Horvitz-Thompson weighted sums
over sampled coalitions (a sketch ``S`` with ``E[S^T S] = I``): the *regression*
estimator ``phi^R_lambda`` solves the weighted least squares problem on the sample, the
*matrix-vector* estimator ``phi^M_lambda`` evaluates the sum. Neither forms ``Q``: the
regression is solved as ``(P A P + 11^T/d) x = P c`` with the ``d x d`` Gram matrix
``A = sum_j a_j k_j z_j z_j^T``.

Standard errors come from the same evaluations: the estimate is linearized around
the solution (a sandwich estimate) and the variance of the sampled sum is estimated
from random groups of sampling units, balanced across coalition sizes and scaled by
the finite-population factor, so units taken with certainty contribute no error.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._validation import check_int
from ..evaluation import BudgetedEvaluator
from ..exact import exact
from ..game import Game
from ..registry import Estimate, MethodSpec, register
from ..sampling import CoalitionSample, shapley_size_log_mass
from ..semivalues import Semivalue
from .linear import (Design, group_stderr, indicator_product, projected, solve_matrix_vector, solve_regression,
                     subsample)
from .rounds import run_rounds
from .surrogate import CONTROL_MIN_ROWS_PER_PLAYER, tree_control_variate

_SOLVERS = ("regression", "matrix-vector")


def log_kernel_weight(d: int, sizes: np.ndarray) -> np.ndarray:
    """``log k(S)`` for coalitions of the given sizes (``-inf`` for the empty and full coalitions).

    Examples
    --------
    >>> round(float(np.exp(log_kernel_weight(4, np.array([1]))[0])), 12)   # 3 / (4 * 1 * 3)
    0.25
    """
    from ..combinatorics import log_binom

    h = np.asarray(sizes, dtype=float)
    with np.errstate(divide="ignore"):
        return np.log(d - 1.0) - log_binom(d, h) - np.log(h) - np.log(d - h)


# ----------------------------------------------------------------------------- control variates
def _proxy(control_variate: Any, game: Game, sv: Semivalue, d: int, k: int) -> tuple[Any, np.ndarray] | None:
    """Turn a user control variate into (function of coalitions -> proxy values (m, k), exact proxy values (d, k))."""
    if control_variate is None:
        return None
    if isinstance(control_variate, Game):
        if control_variate.n_players != d:
            raise ValueError(f"control_variate game has {control_variate.n_players} players, the game has {d}")
        phi = np.asarray(exact(control_variate, sv).values, dtype=float)
        phi = phi[:, None] if phi.ndim == 1 else phi

        def values(S: np.ndarray) -> np.ndarray:
            out = np.asarray(control_variate(S), dtype=float)
            return out[:, None] if out.ndim == 1 else out

        return values, phi
    g = np.asarray(control_variate, dtype=float)
    if g.ndim == 1:
        g = g[:, None]
    if g.shape[0] != d or g.shape[1] not in (1, k) or not np.all(np.isfinite(g)):
        raise ValueError(
            f"control_variate must be None, 'auto', a Game, or finite proxy values of shape ({d},) or ({d}, {k}); "
            f"got shape {np.shape(control_variate)}"
        )
    g = np.broadcast_to(g, (d, k)).copy()
    return (lambda S: indicator_product(S, g)), g


def _lambda(lam: Any, alpha: np.ndarray) -> np.ndarray:
    if isinstance(lam, str):
        if lam != "alpha":
            raise ValueError(f"lam must be 'alpha' or a number, got {lam!r}")
        return alpha
    value = np.asarray(lam, dtype=float)
    if not np.all(np.isfinite(value)):
        raise ValueError(f"lam must be 'alpha' or a finite number, got {lam!r}")
    return np.broadcast_to(value, alpha.shape)


# --------------------------------------------------------------------------------------- driver
def run_unified(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, rng: np.random.Generator, *,
                solver: str, distribution: str, tau: float | None = None, replacement: bool, paired: bool,
                lam: Any = "alpha", control_variate: Any = None, counts: str = "systematic",
                complete: bool | str = False, tol: float | None = None, folds: int = 10) -> Estimate:
    """Shared driver of every estimator of the unified framework (see module docstring);
    ``folds``: cross-fitting folds of ``control_variate="trees"``."""
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {list(_SOLVERS)}, got {solver!r}")
    d = game.n_players
    ends = evaluator(game.empty_and_full())
    v0, vN = ends[0], ends[1]
    k = ends.shape[1]
    if d == 1:
        diff = (vN - v0)[None, :]
        return Estimate(values=diff, stderr=np.zeros_like(diff), empty_value=v0, grand_value=vN,
                        info={"n_samples": 0})
    log_q = shapley_size_log_mass(d, distribution, tau)
    named_cv = isinstance(control_variate, str)
    if named_cv and control_variate not in ("auto", "trees"):
        raise ValueError(f"control_variate must be None, 'auto', 'trees', a Game or an array, got {control_variate!r}")
    trees_cv = named_cv and control_variate == "trees"
    folds = check_int(folds, "folds", minimum=2)
    if trees_cv and not (paired and replacement):
        raise ValueError("control_variate='trees' needs paired draws with replacement (paired=True, replacement=True): "
                         "cross-fitting needs folds drawn independently")
    proxy = None if named_cv else _proxy(control_variate, game, sv, d, k)
    auto_cv = named_cv and control_variate == "auto" and solver == "matrix-vector"   # absorbed by regression otherwise
    betas: list[np.ndarray] = []
    cv_note = {}
    if trees_cv and evaluator.remaining + 2 < CONTROL_MIN_ROWS_PER_PLAYER * d:       # 2: v(empty), v(N)
        # too few pairs to fit surrogates: the plain default design (without replacement, small sizes complete)
        trees_cv, replacement, complete = False, False, "auto"
        cv_note = {"control": f"off: budget below {CONTROL_MIN_ROWS_PER_PLAYER}n, plain regression"}

    def estimate(sample: CoalitionSample, V: np.ndarray):
        if trees_cv:
            adjustment, beta = tree_control_variate(sample.coalitions, V, rng, sv, folds=folds)
            betas.append(beta)
            V = V - adjustment
        return _estimate(sample, V, v0, vN, d, solver, lam, proxy, auto_cv, rng)

    values, stderr, info = run_rounds(rng, evaluator, d, log_q, replacement=replacement, paired=paired,
                                      counts=counts, complete=complete, tol=tol, estimate=estimate)
    if betas:
        info["control_beta"] = [round(float(b), 4) for b in betas[-1]]
    info.update(cv_note)
    return Estimate(values=values, stderr=stderr, empty_value=v0, grand_value=vN, info=info)


def _estimate(sample: CoalitionSample, V: np.ndarray, v0: np.ndarray, vN: np.ndarray, d: int, solver: str,
              lam: Any, proxy: Any, auto_cv: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    sizes = sample.coalitions.sum(axis=1)
    log_ak = sample.log_weight + log_kernel_weight(d, sizes)
    ak = np.exp(log_ak - log_ak.max())                     # the common scale cancels in the regression
    scale = np.exp(log_ak.max())
    offset = np.zeros((d, V.shape[1]))
    target = V - v0
    total = vN - v0
    if proxy is not None:
        proxy_values, proxy_phi = proxy
        empty_full = np.zeros((2, d), dtype=bool)
        empty_full[1] = True
        pe = proxy_values(empty_full)
        target = target - (proxy_values(sample.coalitions) - pe[0])
        total = total - (pe[1] - pe[0])
        offset = proxy_phi
    # an additive proxy needs more than d distinct rows in each half; below that it would be a
    # minimum-norm guess that costs a dense pseudo-inverse and adds variance instead of removing it
    rows_per_half = sample.n_rows / (4.0 if sample.paired else 2.0)
    if auto_cv and rows_per_half > d:
        return _cross_fitted(sample, target, total, d, lam, ak, scale, rng, offset)
    return _solve_once(sample, target, total, d, solver, lam, ak, scale, rng, offset)


def _solve_once(sample: CoalitionSample, target: np.ndarray, total: np.ndarray, d: int, solver: str, lam: Any,
                ak: np.ndarray, scale: float, rng: np.random.Generator,
                offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    alpha = total / d
    r = sample.n_rows
    y = target - np.outer(sample.coalitions.sum(axis=1), _lambda(lam, alpha))
    weights = ak * (scale if solver == "matrix-vector" else 1.0)
    design = Design.build(sample, np.ones(r), np.zeros(r), weights, y)
    if solver == "regression":
        lin = solve_regression(design, constrained=True)
    else:
        lin = solve_matrix_vector(design, lambda c: d / (d - 1.0) * projected(c))
    stderr = group_stderr(design, lin, rng)
    return lin.x + alpha[None, :] + offset, stderr


def _cross_fitted(sample: CoalitionSample, target: np.ndarray, total: np.ndarray, d: int, lam: Any,
                  ak: np.ndarray, scale: float, rng: np.random.Generator,
                  offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Matrix-vector estimate with an additive control variate fitted on the other half of the units.

    Units are split in two halves; a regression fit on one half is the proxy for the
    matrix-vector estimate on the other, and the two estimates are averaged. The proxy
    never sees the units it corrects, so the estimate stays unbiased.
    """
    # units taken with certainty are known exactly: they go into both halves with their own weight
    certain = sample.fpc <= 1e-12
    units = rng.permutation(np.unique(sample.unit[~certain]))
    half_of_unit = np.zeros(int(sample.unit.max()) + 1, dtype=bool)
    half_of_unit[units[: units.size // 2]] = True
    in_a = half_of_unit[sample.unit] & ~certain
    in_b = ~half_of_unit[sample.unit] & ~certain
    factor = np.where(certain, 1.0, 2.0)
    estimates, variances = [], []
    for fit_rows, use_rows in ((in_a | certain, in_b | certain), (in_b | certain, in_a | certain)):
        fit = subsample(sample, fit_rows)
        use = subsample(sample, use_rows)
        g, _ = _solve_once(fit, target[fit_rows], total, d, "regression", lam, (ak * factor)[fit_rows], 1.0, rng,
                           np.zeros((d, target.shape[1])))
        resid = target[use_rows] - indicator_product(use.coalitions, g)
        phi, se = _solve_once(use, resid, total - g.sum(axis=0), d, "matrix-vector", lam,
                              (ak * factor)[use_rows], scale, rng, g)
        estimates.append(phi)
        variances.append(se**2)
    return 0.5 * (estimates[0] + estimates[1]) + offset, 0.5 * np.sqrt(variances[0] + variances[1])


# ----------------------------------------------------------------------------------- registry
def _min_budget_regression(game: Game, sv: Semivalue) -> int:
    return 2 if game.n_players == 1 else game.n_players + 1


def _min_budget_mv(game: Game, sv: Semivalue) -> int:
    return 2 if game.n_players == 1 else 4


# Defaults chosen by measurement (benchmarks/shapley.py, benchmarks/highdim.py): without replacement and
# paired; leverage-score sizes beat kernel-weight sizes in 19 of 24 (game, budget) pairs from 2n + 2 to
# 30n on eight XGBoost games (up to 1.8x lower median error at 4n on communities, 1.6x on digits) and
# 2.7x at n = 3072, m = 10000; kernel weights won at the smallest budgets on digits and adult. Taking all coalitions
# of size 1 and n-1 when they fill most of a small budget cut the error 13-40x at budget 2n + 2 on xgboost
# games; the cross-fitted additive control variate cut the matrix-vector estimator's error 3-100x (an
# additive proxy cannot change the regression estimate).
_REGRESSION_OPTIONS = {"distribution": "leverage", "tau": None, "replacement": False, "paired": True,
                       "lam": "alpha", "control_variate": None, "counts": "systematic", "complete": "auto"}
_MV_OPTIONS = {**_REGRESSION_OPTIONS, "control_variate": "auto"}

register(MethodSpec(
    name="kernelshap",
    run=partial(run_unified, solver="regression",
                distribution="kernel", replacement=True, paired=True, lam="alpha"),
    indices=("shapley",),
    description="KernelSHAP (Lundberg and Lee 2017): regression, kernel-weight sampling with replacement, paired",
    min_budget=_min_budget_regression,
    supports_tol=True,
))
register(MethodSpec(
    name="unbiased-kernelshap",
    run=partial(run_unified, solver="matrix-vector",
                distribution="kernel", replacement=True, paired=True, lam=0.0),
    indices=("shapley",),
    description="unbiased KernelSHAP (Covert and Lee 2021): matrix-vector, kernel weights, lambda = 0, paired",
    min_budget=_min_budget_mv,
    supports_tol=True,
))
register(MethodSpec(
    name="leverageshap",
    run=partial(run_unified, solver="regression",
                distribution="leverage", replacement=False, paired=True, lam="alpha"),
    indices=("shapley",),
    description="LeverageSHAP (Musco and Witter 2025): regression, leverage scores, without replacement, paired",
    min_budget=_min_budget_regression,
    supports_tol=True,
))
register(MethodSpec(
    name="regression",
    run=partial(run_unified, solver="regression"),
    indices=("shapley",),
    description="regression estimator phi^R_lambda with a choice of sampling distribution, replacement, pairing",
    options=dict(_REGRESSION_OPTIONS),
    min_budget=_min_budget_regression,
    supports_tol=True,
    default_for={"shapley": 20},
))
register(MethodSpec(
    name="regression-cv",
    run=partial(run_unified, solver="regression"),
    indices=("shapley",),
    description="regression on v - beta g, g the Shapley-zero part of cross-fitted xgboost surrogates (paired draws "
                "with replacement; plain regression below 4n evaluations); for games with strong interactions",
    # measured (benchmarks/shapley.py): 5x / 8x lower error than the default at 4n / 10n on breast cancer, 2.6-9x
    # at the 50000-evaluation Table 2 budgets; not the default: it needs xgboost and costs ten tree fits
    options={**_REGRESSION_OPTIONS, "replacement": True, "complete": False, "control_variate": "trees", "folds": 10},
    min_budget=_min_budget_regression,
    supports_tol=True,
))
register(MethodSpec(
    name="matrix-vector",
    run=partial(run_unified, solver="matrix-vector"),
    indices=("shapley",),
    description="matrix-vector estimator phi^M_lambda (unbiased) with a choice of sampling, replacement, pairing",
    options=dict(_MV_OPTIONS),
    min_budget=_min_budget_mv,
    supports_tol=True,
))
