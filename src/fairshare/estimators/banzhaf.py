"""Banzhaf values and general semivalues (Liu, Witter et al., "Kernel Banzhaf", section 3).

Lemma 3.4: with ``a_n = 2 sum_l C(n-1,l) p_l^2 - sum_{l>=1} C(n-2,l-1) (p_l - p_{l-1})^2`` and
``b_n = sum_{l>=1} C(n-2,l-1) (p_l - p_{l-1})^2 / a_n``, the rows
``a_S[i] = p_{|S|-1} / a_n`` (``i`` in ``S``) or ``-p_{|S|} / a_n`` (otherwise), i.e.
``a_S = s_h z_S - t_h 1`` with ``s_h = (p_{h-1} + p_h) / a_n`` and ``t_h = p_h / a_n``, give
``phi = (I + b_n 11^T) argmin_x ||A x - v||``. Banzhaf values are the case ``p_l = 2^-(n-1)``:
``s = 1``, ``t = 1/2``, ``b_n = 0`` (Theorem 3.1, Algorithm 1).

The Gram matrix is ``A^T A = (I + b_n 11^T) / a_n``, so the row leverage scores depend only on
``|S|``; sampling coalitions by leverage score (Theorem 3.5) is a size distribution, uniform
within a size (for Banzhaf: uniform subsets). The unbiased (matrix-vector) counterpart is
``phi = a_n sum_S a_S v(S)``, estimated by a Horvitz-Thompson sum.

MSR (maximum sample reuse, section 4.1) is the difference of the mean value of sampled
coalitions with and without each player.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._validation import check_int
from ..combinatorics import log_binom, logsumexp
from ..evaluation import BudgetedEvaluator, BudgetError
from ..game import Game
from ..registry import Estimate, MethodSpec, register
from ..sampling import CoalitionSample, random_subsets
from ..semivalues import Semivalue
from .linear import Design, group_stderr, indicator_product, solve_matrix_vector, solve_regression
from .rounds import run_rounds
from .surrogate import CONTROL_MIN_ROWS_PER_PLAYER, tree_control_variate


def _log_abs_diff(log_a: np.ndarray, log_b: np.ndarray) -> np.ndarray:
    """``log |exp(a) - exp(b)|`` elementwise (``-inf`` where equal)."""
    hi, lo = np.maximum(log_a, log_b), np.minimum(log_a, log_b)
    with np.errstate(divide="ignore"):
        return hi + np.log(-np.expm1(lo - hi))


class SemivalueDesign:
    """The regression of Lemma 3.4 for one semivalue and number of players, in log space.

    Attributes
    ----------
    log_s, log_t : (n + 1,) ``log s_h`` and ``log t_h`` by coalition size ``h`` (``-inf`` where zero)
    b_n : float
    log_q : (n + 1,) leverage-score size distribution (Theorem 3.5)
    symmetric : whether ``p_l = p_{n-1-l}`` (then complementary rows are negatives and pairs collapse)

    Examples
    --------
    >>> d = SemivalueDesign(Semivalue.banzhaf(), 6)
    >>> np.allclose(np.exp(d.log_s[1:-1]), 1.0), np.allclose(np.exp(d.log_t[:-1]), 0.5), d.b_n
    (True, True, 0.0)
    """

    def __init__(self, sv: Semivalue, n: int) -> None:
        self.n = n
        log_p = sv.log_weights(n)
        # a_n and b_n (sums of positive terms in log space)
        pos = np.log(2.0) + logsumexp(log_binom(n - 1, np.arange(n)) + 2 * log_p)
        if n >= 2:
            log_diff = 2 * _log_abs_diff(log_p[1:], log_p[:-1])
            neg = logsumexp(log_binom(n - 2, np.arange(n - 1)) + log_diff) if np.any(np.isfinite(log_diff)) else -np.inf
        else:
            neg = -np.inf
        self.log_a_n = float(pos + np.log1p(-np.exp(neg - pos))) if np.isfinite(neg) else float(pos)
        self.b_n = float(np.exp(neg - self.log_a_n)) if np.isfinite(neg) else 0.0
        # per size h = 0..n: p_{h-1} (zero at h = 0) and p_h (zero at h = n)
        log_prev = np.concatenate([[-np.inf], log_p])
        log_here = np.concatenate([log_p, [-np.inf]])
        self.log_prev = log_prev - self.log_a_n
        self.log_t = log_here - self.log_a_n
        self.log_s = np.logaddexp(log_prev, log_here) - self.log_a_n
        self.symmetric = bool(np.allclose(log_p, log_p[::-1], rtol=1e-9, atol=1e-12)) or n == 1
        # leverage scores: l_h = a_n (||a||^2 - c (1^T a)^2), c = b_n / (1 + n b_n), scaled per size
        h = np.arange(n + 1, dtype=float)
        scale = np.maximum(log_prev, log_here)
        u = np.exp(log_prev - scale)
        v = np.exp(log_here - scale)
        c = self.b_n / (1.0 + n * self.b_n)
        bracket = h * u**2 + (n - h) * v**2 - c * (h * u - (n - h) * v) ** 2
        with np.errstate(divide="ignore"):
            log_lev = self.log_a_n + 2 * (scale - self.log_a_n) + np.log(np.maximum(bracket, 0.0))
        log_q = log_binom(n, h) + log_lev
        self.log_q = log_q - logsumexp(log_q[np.isfinite(log_q)])

    def transform(self, x: np.ndarray) -> np.ndarray:
        """``(I + b_n 11^T) x``."""
        return x + self.b_n * x.sum(axis=0, keepdims=True)


def run_semivalue_linear(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, rng: np.random.Generator, *,
                         solver: str, replacement: bool, paired: Any, counts: str = "systematic",
                         tol: float | None = None, control: bool = False, folds: int = 10) -> Estimate:
    """Kernel Banzhaf and its generalization to any semivalue (Lemma 3.4), regression or matrix-vector.

    ``control=True`` (Banzhaf values, paired): regression on ``v - beta g`` with the cross-fitted tree
    surrogate of :mod:`fairshare.estimators.surrogate` (``folds`` folds).
    """
    n = game.n_players
    design = SemivalueDesign(sv, n)
    if paired == "auto":
        paired = design.symmetric
    if paired and not design.symmetric:
        raise ValueError(f"paired sampling needs a symmetric semivalue (p_l = p_(n-1-l)); {sv.name} is not")
    if control and not (sv.is_banzhaf and paired):
        raise ValueError("the tree control variate needs Banzhaf values and paired sampling (paired=True)")
    if control and not replacement:
        # cross-fitting needs each fold's coalitions drawn independently of the others; without replacement
        # they are excluded from the surrogates' training coalitions, which biases the estimate
        raise ValueError("the tree control variate samples with replacement (replacement=True)")
    cv_note = {}
    if control and evaluator.remaining < CONTROL_MIN_ROWS_PER_PLAYER * n:
        control, replacement = False, False          # too few pairs for surrogates: plain Kernel Banzhaf
        cv_note = {"control": f"off: budget below {CONTROL_MIN_ROWS_PER_PLAYER}n, plain Kernel Banzhaf"}
    folds = check_int(folds, "folds", minimum=2)
    betas: list[np.ndarray] = []

    def estimate(sample: CoalitionSample, V: np.ndarray):
        if control:
            adjustment, beta = tree_control_variate(sample.coalitions, V, rng, "banzhaf", folds=folds)
            V = V - adjustment
            betas.append(beta)
        sizes = sample.coalitions.sum(axis=1)
        log_s, log_t = design.log_s[sizes], design.log_t[sizes]
        shift = float(np.max(log_s[np.isfinite(log_s)]))
        s, t = np.exp(log_s - shift), np.exp(log_t - shift)
        log_w = sample.log_weight
        w = np.exp(log_w - log_w.max())
        if solver == "regression":
            # scaling every row and target by exp(-shift) leaves the least-squares solution unchanged
            lin_design = Design.build(sample, s, t, w, V * np.exp(-shift), collapse_pairs=design.symmetric)
            if not (sample.paired and design.symmetric):
                lin_design = lin_design.centered()      # pairs cancel the mean of v; otherwise an intercept does
            lin = solve_regression(lin_design, constrained=False)
        else:
            factor = np.exp(log_w.max() + shift + design.log_a_n)          # phi = a_n sum_S a_S v(S)
            lin_design = Design.build(sample, s, t, w, V, collapse_pairs=design.symmetric)
            lin = solve_matrix_vector(lin_design, lambda c: factor * c)
            return lin.x, group_stderr(lin_design, lin, rng)
        return design.transform(lin.x), group_stderr(lin_design, lin, rng, transform=design.transform)

    values, stderr, info = run_rounds(rng, evaluator, n, design.log_q, replacement=replacement, paired=bool(paired),
                                      counts=counts, complete=False, tol=tol, estimate=estimate)
    if betas:
        info["control_beta"] = [round(float(b), 4) for b in betas[-1]]
    info.update(cv_note)
    return Estimate(values=values, stderr=stderr, info=info)


# ---------------------------------------------------------------------------------------- MSR
def run_msr(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, rng: np.random.Generator,
            tol: float | None = None) -> Estimate:
    """Maximum sample reuse: every sampled coalition informs every player.

    ``phi_i = mean(v(S) : i in S) - mean(v(S) : i not in S)`` with ``S`` holding each player
    independently with probability ``w`` (1/2 for Banzhaf); the standard error is that of a
    difference of two independent means.
    """
    n = game.n_players
    w = float(sv.params.get("w", 0.5))
    sums_in = sums_out = sq_in = sq_out = None
    cnt_in = np.zeros(n)
    cnt_out = np.zeros(n)
    drawn = 0
    for _ in range(64):
        m = evaluator.remaining if tol is None else min(evaluator.remaining, max(4 * n, drawn))
        if m < 1:
            break
        drawn += m
        spent = evaluator.n_spent
        sizes = rng.binomial(n, w, size=m)
        S = random_subsets(rng, n, sizes)
        V = evaluator(S)
        if sums_in is None:
            k = V.shape[1]
            sums_in, sums_out, sq_in, sq_out = (np.zeros((n, k)) for _ in range(4))
        s_in, q_in = np.split(indicator_product(S, np.hstack([V, V**2]), transpose=True), 2, axis=1)
        sums_in += s_in
        sq_in += q_in
        total, total_sq = V.sum(axis=0), (V**2).sum(axis=0)
        sums_out += total - s_in
        sq_out += total_sq - q_in
        in_count = S.sum(axis=0)
        cnt_in += in_count
        cnt_out += m - in_count
        if tol is not None and np.all(cnt_in >= 2) and np.all(cnt_out >= 2):
            values, stderr = _msr_result(sums_in, sums_out, sq_in, sq_out, cnt_in, cnt_out)
            norm = np.linalg.norm(values)
            if norm > 0 and np.linalg.norm(stderr) / norm <= tol:
                break
        if evaluator.n_spent == spent and tol is None:
            break
    if np.any(cnt_in < 2) or np.any(cnt_out < 2):
        raise BudgetError("msr needs every player both in and out of at least two sampled coalitions; "
                          "raise the budget")
    values, stderr = _msr_result(sums_in, sums_out, sq_in, sq_out, cnt_in, cnt_out)
    info = {"n_samples": int(cnt_in[0] + cnt_out[0])}
    if tol is not None:
        norm = float(np.linalg.norm(values))
        info["estimated_relative_error"] = float(np.linalg.norm(stderr)) / norm if norm > 0 else None
    return Estimate(values=values, stderr=stderr, info=info)


def _msr_result(sums_in, sums_out, sq_in, sq_out, cnt_in, cnt_out):
    """Difference of means and its standard error (two independent means)."""
    mean_in, mean_out = sums_in / cnt_in[:, None], sums_out / cnt_out[:, None]
    var_in = np.maximum(sq_in / cnt_in[:, None] - mean_in**2, 0.0) * cnt_in[:, None] / (cnt_in[:, None] - 1)
    var_out = np.maximum(sq_out / cnt_out[:, None] - mean_out**2, 0.0) * cnt_out[:, None] / (cnt_out[:, None] - 1)
    return mean_in - mean_out, np.sqrt(var_in / cnt_in[:, None] + var_out / cnt_out[:, None])


# ----------------------------------------------------------------------------------- registry
def _min_regression(game: Game, sv: Semivalue) -> int:
    return game.n_players + 2


register(MethodSpec(
    name="kernel-banzhaf",
    run=partial(run_semivalue_linear, solver="regression"),
    indices=("banzhaf",),
    description="Kernel Banzhaf (Algorithm 1): least squares on paired uniform coalitions, design entries +-1/2 "
                "(without replacement by default; replacement=True is the paper's algorithm)",
    # measured (benchmarks/banzhaf.py, m = 20n): without replacement was as good or better on 3 of 4 small datasets
    options={"paired": True, "replacement": False, "counts": "systematic"},
    min_budget=_min_regression,
    supports_tol=True,
    default_for={"banzhaf": 20},
))
register(MethodSpec(
    name="kernel-banzhaf-cv",
    run=partial(run_semivalue_linear, solver="regression", control=True),
    indices=("banzhaf",),
    description="Kernel Banzhaf on v - beta g, g the non-additive part of cross-fitted xgboost surrogates "
                "(exact Banzhaf values 0; paired draws with replacement); for games with strong interactions "
                "(needs xgboost)",
    # measured (benchmarks/banzhaf.py): 2.7x lower error than Kernel Banzhaf and shapiq on the breast-cancer
    # single-baseline game at m = 600; 1.1-3x on five Table 1 games, a tie on the other three
    options={"paired": True, "replacement": True, "counts": "systematic", "folds": 10},
    min_budget=_min_regression,
    supports_tol=True,
))
register(MethodSpec(
    name="unbiased-kernel-banzhaf",
    run=partial(run_semivalue_linear, solver="matrix-vector"),
    indices=("banzhaf",),
    description="matrix-vector counterpart of Kernel Banzhaf: unbiased Horvitz-Thompson sum of (z - 1/2) v(S)",
    options={"paired": True, "replacement": True, "counts": "systematic"},
    min_budget=lambda game, sv: 4,
    supports_tol=True,
))
register(MethodSpec(
    name="semivalue-regression",
    run=partial(run_semivalue_linear, solver="regression"),
    indices=("any semivalue",),
    description="regression for any semivalue (Lemma 3.4) with leverage-score sampling (Theorem 3.5)",
    options={"paired": "auto", "replacement": False, "counts": "systematic"},
    min_budget=_min_regression,
    supports_tol=True,
    default_for={"any semivalue": 15},
))
register(MethodSpec(
    name="msr",
    run=run_msr,
    indices=("weighted-banzhaf",),
    description="maximum sample reuse: mean value of coalitions with minus without each player",
    min_budget=lambda game, sv: 2 * game.n_players + 4,
    # measured: for weighted Banzhaf values MSR beat semivalue-regression and per-player Monte Carlo
    default_for={"weighted-banzhaf": 18},
    supports_tol=True,
))
