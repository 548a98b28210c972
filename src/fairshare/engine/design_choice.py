"""Paired or unpaired with an even model: the choice of ``even_model="pilot"``, made from a pilot of the paired design's
own pairs (:class:`~fairshare.engine.samplers.pilot.PilotDesign`), no evaluation spent on it.

A sampled coalition's row errs in a paired fit by the odd residual ``r_o(S)`` of the game (what the additive model
and the odd surrogate leave, ``(v(S) - v(N \\ S)) / 2``-wise), in an unpaired fit with the even model of products of
two players by ``r_o(S) + r_e(S)``, ``r_e`` what that even model leaves of the even part. A pair shows both: its
difference is an odd observation, its sum an even one. So from the pilot's pairs:

- ``sigma_o``: the weighted noise variance of the paired fit, with the odd surrogate that fit takes
  (:func:`~fairshare.engine.surrogate_fit.fit_surrogate`): its residuals' weighted sum of squares over the pairs less
  its degrees of freedom (not the leave-one-out error: that is the pilot's prediction error, inflated where the fit
  has many unknowns for its rows, as the even model has);
- ``sigma_e``: the same of the even model fitted to the pairs' sums.

With rows weighted alike (the pooled mixture does), the values' variance of the paired design of ``U`` pairs is
``sigma_o / U`` and that of the mixture of the pilot's ``P`` pairs and ``M`` unpaired rows is
``(4 P sigma_o + M (sigma_o + sigma_e)) / (2 P + M)^2`` (times the rows over the rows left after the even model's
``C(n, 2)`` unknowns). The design switches to unpaired draws only where that ratio is at most ``SWITCH`` for every
output: a switch that would not pay by a margin costs nothing, the paired design goes on bit for bit.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..indices.semivalues import Semivalue
from .formulations import ShapleyKernel
from .ridge_path import RidgePath, one_thread
from .samplers.sample import CoalitionSample
from .surrogate_fit import _Problem, fit_surrogate
from .walsh import walsh_products

__all__ = ["pilot_report", "SWITCH", "PILOT_SHARE", "pilot_pairs_needed"]

#: the predicted variance ratio (unpaired mixture over paired) at or below which the design switches
SWITCH = 0.8
#: the share of the paired design's pairs evaluated first
PILOT_SHARE = 1 / 3
#: pilot pairs per unknown of the even model (its products of two players and the additive part)
_PAIRS_PER_UNKNOWN = 1.5


def pilot_pairs_needed(n: int) -> int:
    """Pairs the pilot needs to estimate the even model's residual (``1.5 (n + C(n, 2))``).

    Examples
    --------
    >>> pilot_pairs_needed(10), pilot_pairs_needed(20)
    (83, 315)
    """
    return int(math.ceil(_PAIRS_PER_UNKNOWN * (n + math.comb(n, 2))))


def _even_fit(problem: _Problem, sample: CoalitionSample, form: Any, target: np.ndarray, total: np.ndarray) -> Any:
    """The even model (products of two players) fitted to the pairs' sums, rows whitened per coalition
    (``sqrt(w) r_e``): its :class:`~fairshare.engine.ridge_path.PathPoint`."""
    rows = form.rows(sample, target, total)
    y = np.asarray(rows.y, dtype=float)
    e = 0.5 * (y[0::2] + y[1::2])
    w = np.exp(rows.log_w - float(np.max(rows.log_w)))[0::2]
    pairs = np.array(list(itertools.combinations(range(problem.n), 2)), dtype=np.int64).reshape(-1, 2)
    W = walsh_products(problem.signs_full[0::2], pairs)
    E = W - 1.0 if isinstance(form, ShapleyKernel) else np.hstack([np.ones((W.shape[0], 1)), W])
    root = np.sqrt(w)
    return RidgePath(E * root[:, None], np.zeros((E.shape[0], 0)), e * root[:, None]).fit(np.inf)


def _noise(loo: np.ndarray, leverage: np.ndarray, scale: np.ndarray) -> float:
    """The weighted noise variance ``E[w^2 r^2]`` of a fit: its residuals (from the leave-one-out ones and the
    leverages) squared times ``scale`` (the rows' ``w`` over their whitening), over the rows less its degrees of
    freedom; inf where it has none left."""
    if not np.all(np.isfinite(loo)):
        return np.inf
    residual = loo[:, 0] * (1.0 - leverage)
    left = residual.size - float(leverage.sum())
    return float(np.sum(residual ** 2 * scale) / left) if left > 0.5 else np.inf


def _variance_ratio(sigma_o: float, sigma_e: float, pairs: int, pilot: int, rest: int, unknowns: int) -> float:
    """Predicted variance of the pooled pilot and unpaired rows over the paired design's (module docstring)."""
    rows = 2 * pilot + rest
    if sigma_o <= 0 or rows <= unknowns:
        return np.inf
    mixed = (4.0 * pilot * sigma_o + rest * (sigma_o + sigma_e)) / rows ** 2 * rows / (rows - unknowns)
    return float(mixed / (sigma_o / pairs))


def pilot_report(form: Any, sv: Semivalue, order: int, pilot: CoalitionSample, values: np.ndarray, v0: np.ndarray,
                 vN: np.ndarray, rest: int) -> dict:
    """Whether to switch (``report["switch"]``) and why, from the pilot's pairs and their values ``(m, k)``; ``rest``:
    the evaluations left after the pilot.

    Examples
    --------
    >>> import fairshare as fs
    >>> from fairshare.engine.samplers.sizes import shapley_size_log_mass
    >>> from fairshare.engine.samplers.without_replacement import sample_without_replacement

    A game with an even part of pairs alone and an odd part the surrogate cannot fit (seven players), its pilot of 60
    pairs: with 120 evaluations left the pilot's pairs weigh too much in the unpaired mixture, with 400 it pays.

    >>> S = sample_without_replacement(np.random.default_rng(0), 8, shapley_size_log_mass(8, "leverage"), 60)
    >>> s = 2.0 * S.coalitions - 1
    >>> v = (S.coalitions @ np.arange(8.0) + s[:, 0] * s[:, 1] + 0.1 * s[:, :7].prod(axis=1))[:, None]
    >>> form, sv, ends = ShapleyKernel(8, "alpha"), fs.Semivalue.shapley(), (np.array([0.9]), np.array([29.1]))
    >>> [(r["switch"], r["predicted_variance_ratio"]) for r in (pilot_report(form, sv, 5, S, v, *ends, rest)
    ...                                                          for rest in (120, 400))]
    [(False, 0.8824), (True, 0.6612)]
    """
    target, total = values - v0[None, :], vN - v0
    n, pairs_pilot = pilot.coalitions.shape[1], pilot.n_rows // 2
    unknowns = n + math.comb(n, 2)
    ratios, odd, even = [], [], []
    with one_thread():
        for j in range(values.shape[1]):
            problem = _Problem(form, pilot, target[:, j:j + 1], total[j:j + 1])
            fit = fit_surrogate(problem, sv, order)
            if fit is None:
                fit = RidgePath(problem.A, np.zeros((problem.A.shape[0], 0)), problem.Y).fit(np.inf)
            w = problem.w / 2.0                                             # one coalition's weight of a pair's
            sigma_o = _noise(fit.loo, fit.leverage, w / 2.0)                # rows whitened by sqrt(2 w)
            even_fit = _even_fit(problem, pilot, form, target[:, j:j + 1], total[j:j + 1])
            sigma_e = _noise(even_fit.loo, even_fit.leverage, w)
            odd.append(sigma_o)
            even.append(sigma_e)
            ratios.append(_variance_ratio(sigma_o, sigma_e, pairs_pilot + rest // 2, pairs_pilot, rest, unknowns))
    worst = max(ratios)
    return {"switch": bool(np.isfinite(worst) and worst <= SWITCH), "predicted_variance_ratio": round(worst, 4),
            "odd_residual": [float(f"{s:.4g}") for s in odd], "even_residual": [float(f"{s:.4g}") for s in even],
            "pilot_pairs": int(pairs_pilot)}
