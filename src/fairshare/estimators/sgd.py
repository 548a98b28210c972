"""Projected stochastic gradient for Shapley values (Simon and Vincent, "A Projected Stochastic Gradient
Algorithm for Estimating Shapley Value Applied in Attribute Importance", section 4).

Minimize ``F(phi) = sum_S w_S (z_S^T phi - v(S) + v(empty))^2`` over coalitions other than the empty
and full one, with kernel weights ``w_S = (d-1) / (C(d,|S|) |S| (d-|S|))``, on
``K = {sum phi = v(N) - v(empty)} intersected with {||phi|| <= D}``. Coalitions are sampled with
probability proportional to the Lipschitz constant ``L_S = 2 w_S |S|`` of their term (computed per size
in log space, uniform within a size), so every stochastic gradient has the same Lipschitz constant
``L = sum_S L_S``; steps are given in units of ``1 / L`` (a unit step is a Kaczmarz projection onto the
sampled equation), which makes the default schedule scale-free.

Projection onto ``K``: the closed form (project onto the hyperplane, then radially within it onto the
disc of radius ``sqrt(D^2 - c^2 / d)`` around ``(c / d) 1``, which is exact by Pythagoras) is used;
:func:`dykstra_projection` implements the paper's alternating projections for comparison.
"""

from __future__ import annotations

import numpy as np

from ..combinatorics import log_binom, logsumexp
from ..evaluation import BudgetedEvaluator, BudgetError
from ..game import Game
from ..registry import Estimate, MethodSpec, register
from ..sampling import random_subsets
from ..semivalues import Semivalue

SCHEDULES = ("constant", "1/t", "1/sqrt(t)")


def project(phi: np.ndarray, total: np.ndarray, radius: float) -> np.ndarray:
    """Exact projection of ``phi`` (d, k) onto ``{sum phi = total} ∩ {||phi|| <= radius}`` (per output).

    Examples
    --------
    >>> p = project(np.array([[3.0], [0.0]]), np.array([1.0]), 10.0)
    >>> p.ravel()
    array([ 2., -1.])
    """
    d = phi.shape[0]
    on_plane = phi - (phi.sum(axis=0, keepdims=True) - total) / d
    center = np.broadcast_to(total / d, on_plane.shape)
    inner = radius**2 - (total**2) / d
    if np.any(inner < 0):
        raise ValueError("radius too small: the ball does not meet the efficiency hyperplane")
    r = np.sqrt(inner)
    offset = on_plane - center
    norm = np.linalg.norm(offset, axis=0, keepdims=True)
    scale = np.where(norm > r, r / np.maximum(norm, 1e-300), 1.0)
    return center + offset * scale


def dykstra_projection(phi: np.ndarray, total: np.ndarray, radius: float, iterations: int = 500) -> np.ndarray:
    """Dykstra's alternating projections onto the hyperplane and the ball (the paper's method).

    Examples
    --------
    >>> x = np.array([[3.0], [0.0], [4.0]])
    >>> bool(np.allclose(dykstra_projection(x, np.array([2.0]), 2.0), project(x, np.array([2.0]), 2.0)))
    True
    """
    x = phi.astype(float).copy()
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    d = x.shape[0]
    for _ in range(iterations):
        y = x + p
        y_proj = y - (y.sum(axis=0, keepdims=True) - total) / d       # onto the hyperplane
        p = y - y_proj
        z = y_proj + q
        norm = np.linalg.norm(z, axis=0, keepdims=True)
        z_proj = z * np.where(norm > radius, radius / np.maximum(norm, 1e-300), 1.0)   # onto the ball
        q = z - z_proj
        x = z_proj
    return x


def _size_probabilities(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Sampling probability of each size (proportional to C(d,h) L_h) and log of w_h / p_S per size."""
    h = np.arange(1, d, dtype=float)
    log_w = np.log(d - 1.0) - log_binom(d, h) - np.log(h) - np.log(d - h)
    log_lip = np.log(2.0) + log_w + np.log(h)                           # L_S = 2 w_S |S|
    log_mass = log_binom(d, h) + log_lip
    log_total = logsumexp(log_mass)
    probs = np.exp(log_mass - log_total)
    # per coalition: p_S = L_S / L, so 2 w_S / (p_S L) = 1 / |S|
    return probs / probs.sum(), log_total


def curvature_ratio(d: int) -> float:
    """``L / mu`` of the kernel-weighted objective: on the efficiency hyperplane its Hessian is
    ``mu I`` with ``mu = 2 (d-1) / d`` (the kernel Gram ``sum_S k(S) z z^T`` has ``(d-1)/d`` off the 1
    direction), and ``L = sum_S 2 w_S |S| = 2 (d-1) H_(d-1)``; so ``L / mu = d H_(d-1)``.

    Examples
    --------
    >>> round(curvature_ratio(4), 6)          # 4 * (1 + 1/2 + 1/3)
    7.333333
    """
    return float(d * np.sum(1.0 / np.arange(1, d)))


def run_sgd(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, rng: np.random.Generator,
            schedule: str = "1/t", step: float = 1.0, batch_size: int | None = None,
            radius: float | None = None, cap: float = 4.0) -> Estimate:
    """Projected SGD with importance sampling (see module docstring).

    Parameters
    ----------
    schedule : "constant" (last iterate), "1/t" (the default: ``gamma_t = 2 / (mu (t + 2))``, the optimal
        rate for this strongly convex problem, with the (t+1)-weighted average of the iterates) or
        "1/sqrt(t)" (with the running average)
    step : multiplier of the schedule, in units of 1/L (1 is a Kaczmarz step for "constant")
    cap : largest step, in units of 1/L (keeps the first steps of "1/t" stable)
    batch_size : coalitions per iteration, evaluated in one game call (default ``max(8, d // 4)``)
    radius : D; default 10 times the larger of ``|v(N) - v(empty)|`` and the largest ``|v(S) - v(empty)|``
        among the first batch
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if not np.isfinite(step) or step <= 0:
        raise ValueError(f"step must be > 0, got {step}")
    d = game.n_players
    ends = evaluator(game.empty_and_full())
    v0, vN = ends[0], ends[1]
    total = vN - v0
    k = ends.shape[1]
    if d == 1:
        return Estimate(values=total[None, :], stderr=np.zeros((1, k)), empty_value=v0, grand_value=vN,
                        info={"iterations": 0})
    B = int(batch_size) if batch_size is not None else max(8, d // 4)
    if B < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if evaluator.remaining < B:
        raise BudgetError(f"the budget leaves no room for one batch of {B} coalitions")
    # repeated coalitions are free, so iterate while a fresh batch could still be paid for
    max_iterations = 64 * (evaluator.remaining // B)
    probs, _ = _size_probabilities(d)
    ratio = curvature_ratio(d)
    phi = np.broadcast_to(total / d, (d, k)).copy()                      # Proj_K1(0)
    avg = phi.copy()
    weight_sum = 1.0
    D = radius
    t = 0
    while evaluator.remaining >= B and t < max_iterations:
        S = random_subsets(rng, d, rng.choice(np.arange(1, d), size=B, p=probs))
        V = evaluator(S) - v0                                            # (B, k)
        if D is None:
            scale = max(float(np.abs(total).max()), float(np.abs(V).max()), 1e-12)
            D = 10.0 * max(scale, float(np.linalg.norm(phi, axis=0).max()))
        h = S.sum(axis=1).astype(float)
        residual = S.astype(float) @ phi - V                             # (B, k)
        # gradient estimate in units of L: average of 2 w_S r_S z_S / (p_S L) = r_S z_S / |S|
        grad = S.T.astype(float) @ (residual / h[:, None]) / B
        if schedule == "constant":
            gamma = step
        elif schedule == "1/t":
            gamma = min(cap, step * 2.0 * ratio / (t + 2.0))
        else:
            gamma = min(cap, step / np.sqrt(t + 1.0))
        phi = project(phi - gamma * grad, total, D)
        if schedule == "1/t":
            w = t + 2.0                                                  # (t+1)-weighted average
            avg = avg + (phi - avg) * (w / (weight_sum + w))
            weight_sum += w
        else:
            avg = avg + (phi - avg) / (t + 2.0)
        t += 1
    values = phi if schedule == "constant" else avg
    return Estimate(values=values, stderr=None, empty_value=v0, grand_value=vN,
                    info={"iterations": int(t), "batch_size": B, "radius": float(D)})


register(MethodSpec(
    name="sgd",
    run=run_sgd,
    indices=("shapley",),
    description="projected stochastic gradient on the weighted least-squares form, importance sampling, "
                "exact projection on the efficiency hyperplane and a ball",
    options={"schedule": "1/t", "step": 1.0, "batch_size": None, "radius": None, "cap": 4.0},
    min_budget=lambda game, sv: 2 if game.n_players == 1 else 2 + max(8, game.n_players // 4),
    has_stderr=False,
))
