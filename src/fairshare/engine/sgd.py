"""Projected stochastic gradient for Shapley values (Simon and Vincent, "A Projected Stochastic Gradient
Algorithm for Estimating Shapley Value Applied in Attribute Importance", section 4).

Minimize ``F(phi) = sum_S w_S (z_S^T phi - v(S) + v(empty))^2`` over coalitions other than the empty
and full one, with kernel weights ``w_S = (d-1) / (C(d,|S|) |S| (d-|S|))``, on
``K = {sum phi = v(N) - v(empty)} intersected with {||phi|| <= D}``. Coalitions are sampled with
probability proportional to the Lipschitz constant ``L_S = 2 w_S |S|`` of their term (computed per size
in log space, uniform within a size), so every stochastic gradient has the same Lipschitz constant
``L = sum_S L_S``; steps are given in units of ``1 / L`` (a unit step is a Kaczmarz projection onto the
sampled equation), which makes the default schedule scale-free.

Independent chains (4 by default, sharing each step's batch computations) give standard errors from
their spread; the estimate is their mean. A run takes a bounded number of vectorized steps: the
batch grows when the budget would take more than 4000 steps, and no more coalitions are drawn
than four times the budget, however many repeat (repeated coalitions cost no evaluations).

Projection onto ``K``: the closed form (project onto the hyperplane, then radially within it onto the
disc of radius ``sqrt(D^2 - c^2 / d)`` around ``(c / d) 1``, which is exact by Pythagoras) is used;
:func:`dykstra_projection` implements the paper's alternating projections for comparison.
"""

from __future__ import annotations

import numpy as np

from .samplers import LipschitzSizes, StepBatch
from .solve import small_sample_factor
from .._core.arguments import Option
from .spec import MethodSpec, Setup

SCHEDULES = ("constant", "1/t", "1/sqrt(t)")
_MIN_STEPS = 50


def project(phi: np.ndarray, total: np.ndarray, radius: float) -> np.ndarray:
    """Exact projection of ``phi`` (..., d, k) onto ``{sum phi = total} ∩ {||phi|| <= radius}`` (per output).

    Examples
    --------
    >>> p = project(np.array([[3.0], [0.0]]), np.array([1.0]), 10.0)
    >>> p.ravel()
    array([ 2., -1.])
    """
    d = phi.shape[-2]
    on_plane = phi - (phi.sum(axis=-2, keepdims=True) - total) / d
    center = np.broadcast_to(total / d, on_plane.shape)
    inner = radius**2 - (total**2) / d
    if np.any(inner < 0):
        raise ValueError("radius too small: the ball does not meet the efficiency hyperplane")
    r = np.sqrt(inner)
    offset = on_plane - center
    norm = np.linalg.norm(offset, axis=-2, keepdims=True)
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


class SGDSolver:
    """Projected SGD steps on every chain at once (see the module docstring).

    Options: ``schedule`` "constant" (last iterate), "1/t" (``gamma_t = 2 / (mu (t + 2))``, the optimal rate for
    this strongly convex problem, with the (t+1)-weighted average of the iterates) or "1/sqrt(t)" (with the
    running average); ``step`` multiplies the schedule, in units of 1/L (1 is a Kaczmarz step for "constant");
    ``cap`` is the largest step in units of 1/L; ``radius`` is D (default 10 times the larger of
    ``|v(N) - v(empty)|`` and the largest ``|v(S) - v(empty)|`` of the first step).
    """

    def __init__(self, setup: Setup) -> None:
        o = setup.options
        self.d = setup.n_players
        self.schedule, self.step, self.cap, self.radius = o["schedule"], o["step"], o["cap"], o["radius"]
        self.chains = o["chains"]
        self.ratio = curvature_ratio(self.d)
        self.t = 0

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.v0, self.total = v0, vN - v0
        k = v0.size
        self.phi = np.broadcast_to(self.total / self.d, (self.chains, self.d, k)).copy()      # Proj_K1(0)
        self.avg = self.phi.copy()
        self.weight_sum = 1.0

    def absorb(self, batch: StepBatch, values: np.ndarray) -> None:
        C, B, d = batch.chains, batch.batch, self.d
        S_all = batch.coalitions.reshape(batch.steps, C, B, d)
        V_all = (values - self.v0).reshape(batch.steps, C, B, -1)
        if self.radius is None:
            scale = max(float(np.abs(self.total).max()), float(np.abs(V_all[0]).max()), 1e-12)
            self.radius = 10.0 * max(scale, float(np.linalg.norm(self.phi, axis=1).max()))
        for s in range(batch.steps):
            S = S_all[s].astype(float)                                          # (C, B, d)
            h = S.sum(axis=2)
            residual = np.einsum("cbd,cdk->cbk", S, self.phi) - V_all[s]
            # gradient estimate in units of L: average of 2 w_S r_S z_S / (p_S L) = r_S z_S / |S|
            grad = np.einsum("cbd,cbk->cdk", S, residual / h[..., None]) / B
            t = self.t
            if self.schedule == "constant":
                gamma = self.step
            elif self.schedule == "1/t":
                gamma = min(self.cap, self.step * 2.0 * self.ratio / (t + 2.0))
            else:
                gamma = min(self.cap, self.step / np.sqrt(t + 1.0))
            self.phi = project(self.phi - gamma * grad, self.total, self.radius)
            if self.schedule == "1/t":
                w = t + 2.0                                                     # (t+1)-weighted average
                self.avg = self.avg + (self.phi - self.avg) * (w / (self.weight_sum + w))
                self.weight_sum += w
            else:
                self.avg = self.avg + (self.phi - self.avg) / (t + 2.0)
            self.t += 1

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        per_chain = self.phi if self.schedule == "constant" else self.avg
        values = per_chain.mean(axis=0)
        C = per_chain.shape[0]
        if C >= 2:
            stderr = per_chain.std(axis=0, ddof=1) / np.sqrt(C) * small_sample_factor(C - 1)
        else:
            stderr = np.full_like(values, np.inf)
        return values, stderr, {"iterations": int(self.t), "chains": C, "radius": float(self.radius or 0.0)}


def _sampler(setup: Setup) -> LipschitzSizes:
    o, d = setup.options, setup.n_players
    # default: the paper's batch of max(8, n // 4) coalitions per step, shared out among the chains
    batch = o["batch_size"] if o["batch_size"] is not None else max(2, -(-max(8, d // 4) // o["chains"]))
    return LipschitzSizes(setup.sampler_rng, d, batch, o["chains"], budget=setup.budget)


def _positive(name: str):
    def check(value: float) -> float:
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value}")
        return value
    return check


def _min_budget(n: int, sv, opts: dict) -> int:
    if n == 1:
        return 2
    chains = opts.get("chains", 4)
    batch = opts.get("batch_size") or max(2, -(-max(8, n // 4) // chains))
    # fewer steps leave the iterates biased towards their start, which the chains' spread does not show:
    # measured, two standard errors covered 63% of the exact values after 11 steps, 91% after 50
    return 2 + _MIN_STEPS * batch * chains


SPECS = [MethodSpec(
    name="sgd", indices=("shapley",),
    description="projected stochastic gradient on the weighted least-squares form, importance sampling, exact "
                "projection on the efficiency hyperplane and a ball; independent chains give the error bars",
    sampler=_sampler, solver=SGDSolver,
    options=(Option("schedule", "1/t", "step sizes: 'constant' (last iterate), '1/t' (weighted average) or "
                    "'1/sqrt(t)' (running average)", allowed=SCHEDULES),
             Option("step", 1.0, "multiplier of the schedule, in units of 1/L", kind="float", check=_positive("step")),
             Option("batch_size", None, "coalitions per step and chain (default: max(8, n // 4) per step shared out "
                    "among the chains; larger when the budget would take over 4000 steps)", kind="int", minimum=1, none_ok=True),
             Option("radius", None, "radius D of the ball (default from the first step)", kind="float",
                    none_ok=True, check=_positive("radius")),
             Option("cap", 4.0, "largest step, in units of 1/L", kind="float", check=_positive("cap")),
             Option("chains", 4, "independent chains (their spread gives the standard errors)", kind="int",
                    minimum=1)),
    min_budget=_min_budget)]
