"""Drawing coalition samples within a budget, in rounds, for every sampling-based linear estimator."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..evaluation import BudgetedEvaluator, BudgetError
from ..sampling import CoalitionSample, sample_with_replacement, sample_without_replacement
from .linear import merge, solution_norm_ok

_MAX_REPEAT_ROUNDS = 32


def draw(rng: np.random.Generator, d: int, log_q: np.ndarray, rows: int, replacement: bool, paired: bool,
         counts: str, evaluator: BudgetedEvaluator, complete: bool | str = False) -> tuple[list, list, list]:
    """Draw and evaluate samples worth at most ``rows`` new evaluations.

    Without replacement one design is drawn. With replacement, repeated coalitions cost
    nothing, so drawing continues until the allowance is spent (or a round finds nothing new).
    """
    per_unit = 2 if paired else 1
    samples, values, units = [], [], []
    if not replacement:
        n_units = rows // per_unit
        if n_units < 1:
            return samples, values, units
        s = sample_without_replacement(rng, d, log_q, n_units, paired=paired, counts=counts, complete=complete)
        if s.n_rows:
            samples.append(s)
            values.append(evaluator(s.coalitions))
            units.append(s.n_draws)
        return samples, values, units
    limit = evaluator.n_spent + rows
    for _ in range(_MAX_REPEAT_ROUNDS):
        n_units = (limit - evaluator.n_spent) // per_unit
        if n_units < 1:
            break
        spent = evaluator.n_spent
        s = sample_with_replacement(rng, d, log_q, n_units, paired=paired)
        samples.append(s)
        values.append(evaluator(s.coalitions))
        units.append(s.n_draws)
        if evaluator.n_spent == spent:
            break
    return samples, values, units


def schedule(total_rows: int, d: int) -> list[int]:
    """Doubling rounds for ``tol``: the first spends 1/64 of the budget (at least a full design), each
    next round as much as all before it."""
    first = max(min(total_rows, 2 * d + 2), total_rows // 64)
    out, spent = [first], first
    while spent < total_rows:
        step = min(spent, total_rows - spent)
        out.append(step)
        spent += step
    return out


def run_rounds(rng: np.random.Generator, evaluator: BudgetedEvaluator, d: int, log_q: np.ndarray, *,
               replacement: bool, paired: bool, counts: str, complete: bool | str, tol: float | None,
               estimate: Callable[[CoalitionSample, np.ndarray], tuple[np.ndarray, np.ndarray | None]]) -> tuple:
    """Spend the remaining budget (in doubling rounds when ``tol`` is given), re-estimating on the pooled
    sample after each round; returns ``(values, stderr, info)``."""
    samples, values, units = [], [], []
    rows_total = evaluator.remaining
    plan = schedule(rows_total, d) if tol is not None else [rows_total]
    result = None
    for allowance in plan:
        s, v, u = draw(rng, d, log_q, min(allowance, evaluator.remaining), replacement, paired, counts,
                       evaluator, complete)
        samples += s
        values += v
        units += u
        if not samples:
            raise BudgetError(f"the budget leaves no evaluations for sampling coalitions of {d} players")
        result = estimate(merge(samples, units), np.concatenate(values))
        if tol is not None and solution_norm_ok(result[0], result[1], tol):
            break
        if evaluator.remaining < (2 if paired else 1):
            break
    vals, stderr = result
    info = {"n_samples": int(sum(units)), "n_rounds": len(units)}
    if tol is not None:
        norm = float(np.linalg.norm(vals))
        info["estimated_relative_error"] = (float(np.linalg.norm(stderr)) / norm
                                            if norm > 0 and stderr is not None else None)
    return vals, stderr, info
