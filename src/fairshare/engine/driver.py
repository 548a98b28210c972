"""The one loop that runs every estimator.

It owns what methods share: ``v(empty)`` and ``v(N)``, the budget, the rounds, progress and the
stopping rule. Each round the sampler proposes a batch for the round's allowance of evaluations,
the game evaluates it (each distinct coalition once), and the solver absorbs the values. When
repeated draws leave the allowance unspent (sampling with replacement: a repeat costs nothing),
the round is topped up, but no method draws more than ``DRAW_FACTOR`` times the budget in
sampling units, however many repeats it meets. After a round, the stopping rule (if it looks
between rounds) sees the values and standard errors. A ``progress(evaluations, cap, relative_error)`` callback hears
of every batch; with one, the budget is spent in rounds so the error is known as the run goes (except
for designs that say ``rounds_for_progress = False``: their error comes at the end).
"""

from __future__ import annotations

import time
import warnings
from itertools import accumulate
from typing import Any

import numpy as np

from .._core.arrays import to_numpy
from .._core.errors import FairshareWarning
from ..indices.hierarchy import OwenIndex
from ..indices.interactions import InteractionIndex
from ..indices.semivalues import Semivalue
from .evaluation import BudgetedEvaluator, BudgetError
from .exact import budget_covers, covers_all, exact_from_evaluator
from .samplers.subsets import to_device
from .stopping import RunState, StoppingRule
from .protocols import History, Sampler, Solver
from .spec import Estimate, MethodSpec, Setup

__all__ = ["run", "DRAW_FACTOR"]

#: most sampling units drawn per unit of budget
DRAW_FACTOR = 4


def _relative_error(values: Any, stderr: Any) -> float | None:
    """``||stderr|| / ||values||`` (None without standard errors or with zero values)."""
    if stderr is None:
        return None
    norm = float(np.linalg.norm(to_numpy(values)))
    return float(np.linalg.norm(to_numpy(stderr))) / norm if norm > 0 else None


def run(spec: MethodSpec, setup: Setup, evaluator: BudgetedEvaluator, stop: StoppingRule | None = None,
        progress: Any = None) -> Estimate:
    """Run ``spec`` on the game of ``evaluator`` (setup from :func:`fairshare.doors.estimate`)."""
    game, d, started = evaluator.game, setup.n_players, time.perf_counter()
    if d == 1:                                     # one player: v(N) - v(empty), exactly
        ends = evaluator(game.empty_and_full())
        diff = (ends[1] - ends[0])[None, :]
        return Estimate(values=diff, stderr=np.zeros_like(diff), empty_value=ends[0], grand_value=ends[1],
                        info={"n_samples": 0})
    if spec.plan is not None:
        setup.plan = spec.plan(setup)
    sampler: Sampler = spec.sampler(setup)         # factories check their configuration before any evaluation
    solver: Solver = spec.solver(setup)
    ends_rows = game.empty_and_full()
    if sampler.device is not None:                 # the sampler draws on a device: the ends go there too
        ends_rows = to_device(ends_rows, sampler.device)
    ends = np.asarray(to_numpy(evaluator(ends_rows)), dtype=float)
    v0, vN = ends[0], ends[1]
    solver.start(v0, vN)
    history = History(empty_value=v0, grand_value=vN)
    cap = setup.budget if stop is None or stop.evaluation_cap() is None else min(setup.budget, stop.evaluation_cap())
    available = cap - evaluator.n_spent
    plan = sampler.schedule(available, bool(stop is not None and stop.needs_rounds or progress is not None and
                                            sampler.rounds_for_progress))
    error, sampled = None, spec.needs_budget and type(setup.semivalue) is Semivalue   # (not leave-one-out's values)
    state = RunState(None, None, evaluator.n_spent, setup.budget, 0, started=started)
    draw_limit = DRAW_FACTOR * max(setup.budget, 1)
    drawn, reason, rounds, result, exhausted = 0, None, 0, None, False
    for allowance, planned in zip(plan, accumulate(plan)):   # what a round leaves unspent goes to the next
        target = cap - max(available - planned, 0)
        history.last_round = planned >= available
        stale = 0
        proposed = False
        while evaluator.n_spent + sampler.unit_cost <= target and drawn < draw_limit:
            batch = sampler.propose(target - evaluator.n_spent, history)
            if batch is None:
                break
            proposed = True
            spent = evaluator.n_spent
            values = evaluator.fresh(batch.coalitions) if batch.fresh else evaluator(batch.coalitions)
            solver.absorb(batch, values)
            history.batches.append(batch)
            history.values.append(values)
            drawn += int(batch.n_draws)
            if progress is not None:
                progress(evaluator.n_spent, cap, error)
            if sampler.one_draw_per_round and target - evaluator.n_spent < max(sampler.unit_cost, allowance // 20):
                break                  # a design without replacement is drawn once per round (again only for
                                       # what coalitions already evaluated in earlier rounds left unspent)
            stale = stale + 1 if evaluator.n_spent == spent else 0
            if stale >= sampler.max_stale:
                break
        exhausted = stale >= sampler.max_stale or drawn >= draw_limit
        if not proposed:
            break
        rounds += 1
        result = solver.result()
        history.estimate = (result[0], result[1])
        shown = _unseen_variation(*result[:2], (v0, vN), evaluator.n_spent, d, warn=False) if sampled else result[1]
        state.values, state.stderr, state.n_evaluations, state.round = result[0], shown, evaluator.n_spent, rounds
        if progress is not None:
            error = _relative_error(result[0], shown)
            progress(evaluator.n_spent, cap, error)
        if stop is not None:
            reason = stop(state)
            if reason:
                break
        if drawn >= draw_limit:
            reason = f"drew {DRAW_FACTOR}x the budget in samples (repeats cost nothing, so they were not evaluated)"
            break
    if result is None:
        raise BudgetError(f"the budget of {setup.budget} leaves no evaluations for sampling coalitions of {d} players")
    exact = _exact_instead(setup, evaluator, result[2], not exhausted) if (reason is None or drawn >= draw_limit) \
        and (exhausted or _covered(spec, setup, result[1])) else None
    if exact is not None:
        return exact
    checked = _unseen_variation(*result[:2], (v0, vN), evaluator.n_spent, d) if sampled else result[1]
    return _estimate(spec, setup, evaluator, stop, (result[0], checked, result[2]), (v0, vN), rounds, reason,
                     sampler.unit_cost)


def _estimate(spec: MethodSpec, setup: Setup, evaluator: BudgetedEvaluator, stop: StoppingRule | None,
              result: tuple, ends: tuple[np.ndarray, np.ndarray], rounds: int, reason: str | None,
              unit: int = 1) -> Estimate:
    """The run's estimate from the solver's last ``result``, with why it stopped."""
    values, stderr, info = result
    if reason is None:
        reason = _why_stopped(evaluator.n_spent, setup.budget, setup.n_players, unit)
    info = {**info, **setup.notes, "stopped": {"round": rounds, "reason": reason}}
    if stop is not None and stop.needs_stderr and stderr is not None:
        info["estimated_relative_error"] = _relative_error(values, stderr)
    return Estimate(values=values, stderr=stderr if spec.has_stderr else None, empty_value=ends[0],
                    grand_value=ends[1], info=info)


def _covered(spec: MethodSpec, setup: Setup, stderr: Any) -> bool:
    """Whether a sampled method ran on a budget that covers every coalition its exact values read: those are then
    taken instead (interaction values always; others where the method's own are estimates, an error bar not 0 or
    none: semivalues a regression or Banzhaf's means fitted on every coalition with their own weights are exact
    already, and stay as the method computed them)."""
    estimated = isinstance(setup.semivalue, InteractionIndex) or stderr is None or bool(np.any(to_numpy(stderr) != 0))
    return spec.needs_budget and estimated and budget_covers(setup.semivalue, setup.n_players, setup.budget)


def _exact_instead(setup: Setup, evaluator: BudgetedEvaluator, info: dict, by_budget: bool = False) -> Estimate | None:
    """Where the sampler found no new coalition with budget left (it has drawn, or nearly, every coalition it can
    draw): the exact values from the evaluations in hand (:func:`~fairshare.engine.exact.exact_from_evaluator`), or
    None where they need more than the budget; the run's own ``info`` (its draws, walks, ...) kept. ``by_budget``:
    values whose sampler could draw more, on a budget that covers every coalition the exact values read (a
    permutation's evaluations that do not fit what is left of it leave the rest unspent: iq-permutation's k-SII of 5
    players at a budget of 32 was off by 0.53 with infinite error bars, permutation's Shapley values of 3 players at a
    budget of 9 by 0.73 with all 8 coalitions evaluated, owen-permutation's at 21 of 20 coalitions by 0.37)."""
    spent = evaluator.n_spent
    exact = exact_from_evaluator(setup.semivalue, evaluator)
    if exact is None:
        return None
    read = "the coalitions of whole blocks" if isinstance(setup.semivalue, OwenIndex) else \
        f"all 2^{setup.n_players} coalitions"
    why = f"the budget covers {read}" if by_budget else "every coalition the method draws was evaluated"
    reason = (f"{why} ({spent} of {setup.budget} evaluations): exact values from them"
              + (f" and {evaluator.n_spent - spent} more" if evaluator.n_spent > spent else ""))
    return Estimate(values=exact.values, stderr=exact.stderr, empty_value=exact.empty_value,
                    grand_value=exact.grand_value,
                    info={**info, **exact.info, **setup.notes, "stopped": {"round": None, "reason": reason}})


def _why_stopped(spent: int, budget: int, n: int, unit: int = 1) -> str:
    """Why a run stopped where no stopping rule said: its budget spent (less than the sampler's ``unit`` of
    evaluations left), every coalition of the game evaluated, or a sampler that drew no more below the budget.

    Examples
    --------
    >>> _why_stopped(100, 100, 20), _why_stopped(26, 30, 6, unit=6), _why_stopped(256, 2000, 8)
    ('budget spent (100 of 100 evaluations)', 'budget spent (26 of 30 evaluations)', \
'every coalition evaluated (256 of 2000 evaluations)')
    >>> _why_stopped(422, 450, 9, unit=2)
    'the method drew no more coalitions (422 of 450 evaluations)'
    """
    counts = f"({spent} of {budget} evaluations)"
    if budget - spent < max(unit, 1):
        return f"budget spent {counts}"
    return f"every coalition evaluated {counts}" if covers_all(n, spent) else \
        f"the method drew no more coalitions {counts}"


def _unseen_variation(values: np.ndarray, stderr: np.ndarray | None, ends: tuple[np.ndarray, np.ndarray],
                      spent: int, n: int, warn: bool = True) -> np.ndarray | None:
    """``stderr`` with its zeros infinite (and a warning, if ``warn``) for each output whose values do not add up to
    ``v(N) - v(empty)``: an error bar of 0 says the sample saw no variation, as for an additive game, whose values
    add up; where they do not, the variation was only unseen (a unanimity game of 6 of 10 players at 60 evaluations:
    every sampled coalition 0, Banzhaf values 0 with error bars of 0, the exact ones 1/32). Not where every coalition
    was evaluated. A stopping rule sees each round's error bars so (without the warning): mc-banzhaf with tol=0.1
    stopped after 49 of 3,000 evaluations on such zeros ('estimated relative error 0'), 0.31 off, its error bars then
    infinite."""
    if stderr is None or covers_all(n, spent):
        return stderr
    phi, se = np.asarray(values, dtype=float), np.asarray(stderr, dtype=float)
    phi2, se2 = phi.reshape(phi.shape[0], -1), se.reshape(se.shape[0], -1)
    gap = np.abs(phi2.sum(axis=0) - np.ravel(ends[1] - ends[0]))
    unseen = (gap > 1e-9 * (np.abs(np.ravel(ends[1] - ends[0])) + np.abs(phi2).sum(axis=0) + 1e-300)) & \
        np.any(se2 == 0, axis=0)
    if not unseen.any():
        return stderr
    if warn:
        warnings.warn("some error bars were 0 where the values do not add up to v(N) - v(empty): the sample showed "
                      "no variation for those players, which the game has; they are infinite (a larger budget samples "
                      "more of the game)", FairshareWarning, stacklevel=5)
    out = se2.copy()
    out[:, unseen] = np.where(se2[:, unseen] == 0, np.inf, se2[:, unseen])
    return out.reshape(se.shape)
