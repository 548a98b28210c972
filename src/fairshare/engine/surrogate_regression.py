"""The surrogate regression as a method: the linear estimators' design and solver, with the penalized interaction
surrogate of :mod:`fairshare.engine.surrogate_fit` (or the cross-fitted tree control variate) in the solve.

``surrogate-regression`` estimates Shapley values, Banzhaf values and every semivalue; ``auto`` does not pick it
(:mod:`fairshare.engine.choice`; ``benchmarks/default.py`` measures it against plain regression). Its design is the
plain regression's (leverage-score sizes, distinct coalitions, complementary pairs where the semivalue is symmetric,
whole size levels at small budgets), so where the surrogate does not pay the result is the plain regression's, bit
for bit; ``e.info["surrogate"]`` says which surrogate was taken, its penalty and the estimated gain (the plain fit's
leave-one-out error and estimated variance over the chosen one's; one report per output where there are several).

Options: ``surrogate`` (``"walsh"``: the penalized Walsh products; ``"trees"``: the cross-fitted xgboost control
variate, which needs paired draws with replacement; ``"none"``: the plain regression), ``surrogate_order`` (the most
players in one Walsh product: 3 or 5 on paired designs, 2 or 3 on unpaired ones; ``"auto"``: 5 and 3) and
``folds`` (the trees' cross-fitting folds). An unpaired design (``paired=False``, or a semivalue that is not symmetric) fits the products
of two players as well and needs ``2 + n + C(n, 2)`` evaluations; a smaller budget is refused, naming that minimum.

``even_model`` (issue 42, items 2 and 3): paired rows see only the odd part of the game; ``"pairs"`` draws unpaired
coalitions and fits the products of every two players unpenalized with the additive design (kADDSHAP's even model:
the even part fitted instead of cancelled, so every evaluation informs the odd part), the odd Walsh surrogate on top
where it pays; from ``n + C(n, 2) + 6`` evaluations (refused below, naming that minimum). ``"auto"``: on a paired
design whose budget lets a third of its pairs fit that even model, those pairs are evaluated first
(:class:`~fairshare.engine.samplers.pilot.PilotDesign`) and :mod:`fairshare.engine.design_choice` predicts both
designs' variance from them; the rest of the budget goes to unpaired draws only where the prediction is at most
0.8 of the paired design's, and otherwise the sample is the paired design's, bit for bit. ``e.info["design"]`` says
what was chosen and the predicted variance ratio. On an unpaired design ``"auto"`` fits the even model from
``EVEN_RATIO`` times its unknowns on. ``"none"`` (the default): the designs above.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._core import arrays
from .._core.arguments import Option
from ..indices.semivalues import Semivalue
from .formulations import SemivalueDesign, SemivalueRegression, ShapleyKernel
from .design_choice import PILOT_SHARE, pilot_pairs_needed, pilot_report
from .regression import (COMPLETE, COUNTS, DISTRIBUTION, LAM, REPLACEMENT, TAU, RegressionSolver, _design, _plan,
                         _size_mass, _validate)
from .ridge_path import one_thread
from .samplers.pilot import PilotDesign
from .samplers.sample import CoalitionSample
from .spec import MethodSpec, Setup
from .surrogate_fit import _Problem, fit_surrogate, groups, surrogate_stderr

__all__ = ["SurrogateRegressionSolver", "SPECS", "min_budget", "EVEN_RATIO"]

#: ``even_model="auto"`` fits the products of two players on an unpaired design from this many times their unknowns
#: (``n + C(n, 2)``) evaluations on
EVEN_RATIO = 3.0


class SurrogateRegressionSolver(RegressionSolver):
    """:class:`~fairshare.engine.regression.RegressionSolver` whose fit takes the interaction surrogate where its
    leave-one-out error is lower than the plain fit's (see the module docstring)."""

    def __init__(self, setup: Setup, formulation: Any) -> None:
        super().__init__(setup, formulation, "regression")
        self.surrogate = setup.plan.get("surrogate", "walsh")
        self.order = _order(setup.options, setup.n_players, setup.semivalue)
        self.report: dict = {}

    def fit(self, sample: CoalitionSample, target: np.ndarray, total: np.ndarray,
            kind: str) -> tuple[np.ndarray, np.ndarray]:
        """Each output's surrogate chosen on that output alone (its values are those of a run on it alone); the
        plain regression's own result, bit for bit, where no output takes one."""
        even = bool(self.setup.plan.get("even")) or (bool(self.setup.plan.get("pilot")) and not sample.paired)
        if (self.surrogate != "walsh" and not even) or kind != "regression" or sample.coverage == "all":
            self.report = {"kind": self.surrogate if self.surrogate != "walsh" else "none"}
            return super().fit(sample, target, total, kind)
        k = int(target.shape[1])
        problems = [_Problem(self.form, sample, target[:, j:j + 1], total[j:j + 1]) for j in range(k)]
        if even:
            for problem in problems:
                problem.add_even(self.setup.semivalue)
        order = self.order if self.surrogate == "walsh" else 0              # 0: the even model alone
        fits = [fit_surrogate(p, self.setup.semivalue, order) for p in problems]
        if all(f is None for f in fits):   # the plain regression's leave-one-out error is the least: its own result
            self.report = {"kind": "none", "why": "no surrogate lowered the leave-one-out error of the plain fit"}
            return super().fit(sample, target, total, kind)
        state, values, stderr, reports = self.rng.bit_generator.state, [], [], []
        for j, (problem, fit) in enumerate(zip(problems, fits)):
            self.rng.bit_generator.state = state            # every output's error bars as in a run on it alone
            if fit is None:
                v, se = super().fit(sample, target[:, j:j + 1], total[j:j + 1], kind)
                reports.append({"kind": "none", "why": "no surrogate lowered the leave-one-out error of the plain fit"})
            else:
                with one_thread():                      # the error bars' products on one BLAS thread, as the fit's
                    v, se, report = self._with_surrogate(problem, fit)
                reports.append(report)
            values.append(np.asarray(arrays.to_numpy(v), dtype=float))
            stderr.append(np.asarray(arrays.to_numpy(se), dtype=float))
        self.report = reports[0] if k == 1 else {"kind": "per output", "outputs": reports}
        self.solved_with = "dense, with the surrogate"
        return np.hstack(values), np.hstack(stderr)

    def _with_surrogate(self, problem: _Problem, fit: Any) -> tuple[np.ndarray, np.ndarray, dict]:
        """Values, error bars and the report of one output's surrogate fit."""
        group = groups(problem, self.rng)
        stderr = surrogate_stderr(problem, fit.L, fit.loo, group)
        plain = surrogate_stderr(problem, fit.plain_L, fit.plain_loo, group)
        chosen_var, plain_var = float(np.sum(stderr ** 2)), float(np.sum(plain ** 2))
        report = {"kind": fit.label, "penalty": fit.penalty, "features": fit.n_features,
                  "loo_gain": round(float(fit.loo_gain), 4),
                  "estimated_gain": round(plain_var / chosen_var, 4) if chosen_var > 0 else None}
        return fit.values, stderr, report

    def absorb(self, sample: CoalitionSample, values: np.ndarray) -> None:
        if not sample.pilot:                                # a pilot's rows come again in a later batch
            super().absorb(sample, values)

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        values, stderr, info = super().result()
        info["surrogate"] = dict(self.report)
        return values, stderr, info


# ------------------------------------------------------------------------------------------------- registry
def _unpaired(n: int, sv: Semivalue, opts: dict) -> bool:
    paired = opts.get("paired", "auto")
    return paired is False or (paired == "auto" and not (sv.is_shapley or SemivalueDesign(sv, n).symmetric))


def min_budget(n: int, sv: Semivalue, opts: dict) -> int:
    """The regression's minimum (``2n + 2`` for Shapley values, ``n + 2`` otherwise); an unpaired design with the
    surrogate fits the products of two players as well: ``2 + n + C(n, 2)`` (at most ``2^n``).

    Examples
    --------
    >>> sv = Semivalue.shapley()
    >>> min_budget(10, sv, {"paired": "auto", "surrogate": "walsh"}), min_budget(10, sv, {"paired": False})
    (22, 57)
    """
    if n == 1:
        return 2
    if opts.get("even_model", "none") == "pairs":
        return min(n + math.comb(n, 2) + 6, 1 << min(n, 62))
    if opts.get("surrogate", "walsh") == "walsh" and _unpaired(n, sv, opts):
        return min(2 + n + math.comb(n, 2), 1 << min(n, 62))
    return 2 * n + 2 if sv.is_shapley else n + 2


def _order(opts: dict, n: int, sv: Semivalue) -> int:
    """``surrogate_order`` as it runs: ``"auto"`` is 5 on a paired design and 3 on an unpaired one."""
    order = opts.get("surrogate_order", "auto")
    if order == "auto":
        return 3 if _unpaired(n, sv, opts) else 5
    return int(order)


def _check(opts: dict, n: int, sv: Semivalue) -> None:
    """Constraints between the options (before any evaluation)."""
    if opts.get("even_model", "none") != "none" and opts.get("surrogate") == "trees":
        raise ValueError("even_model needs surrogate='walsh' or 'none' (the trees' cross-fitting needs paired draws)")
    if opts.get("even_model") == "pairs" and opts.get("paired") is True:
        raise ValueError("even_model='pairs' fits the even part on unpaired draws: not with paired=True")
    _validate({**opts, "control_variate": "trees" if opts.get("surrogate") == "trees" else None}, n, sv)
    order = _order(opts, n, sv)
    if opts.get("surrogate") == "walsh" and order < 3 and not _unpaired(n, sv, opts):
        raise ValueError(f"surrogate_order={order} fits no odd product on a paired design (pairs cancel the even "
                         "ones): use 3 or 5, or paired=False")
    if opts.get("surrogate") == "walsh" and order > 3 and _unpaired(n, sv, opts):
        raise ValueError(f"surrogate_order={order}: an unpaired design fits products of at most 3 players")


def _plan_surrogate(setup: Setup) -> dict:
    """The linear plan (pairing, replacement, levels taken whole) with the tree control variate where asked."""
    surrogate, opts = setup.options.get("surrogate", "walsh"), setup.options
    complete = opts.get("complete", "auto")
    if complete == "auto" and not setup.semivalue.is_shapley:
        complete = False                      # whole levels at small budgets: a Shapley rule (Kernel Banzhaf's design)
    as_regression = dataclasses.replace(setup, options={**opts, "complete": complete,
                                                        "control_variate": "trees" if surrogate == "trees" else None})
    even = _even(setup.n_players, setup.semivalue, opts, setup.budget)
    if even == "pairs":
        as_regression = dataclasses.replace(as_regression, options={**as_regression.options, "paired": False})
    plan = _plan(as_regression, "regression")
    if surrogate == "trees" and plan["control_variate"] is None:
        surrogate = "none"                                   # too few pairs for the trees: noted by the plan
    pilot = even == "pilot" and plan["paired"] and not plan["replacement"] and setup.device is None
    return {**plan, "surrogate": surrogate, "even": even == "pairs", "pilot": pilot}


def _even(n: int, sv: Semivalue, opts: dict, budget: int) -> str | None:
    """The even model's design: ``"pairs"`` (unpaired draws, the even model fitted: ``even_model="pairs"``, or
    ``"auto"`` on an unpaired design from ``EVEN_RATIO`` times its unknowns on), ``"pilot"`` (``"auto"`` on a paired
    design whose pilot can fit the even model: :mod:`fairshare.engine.design_choice` decides) or None."""
    even = opts.get("even_model", "none")
    if even == "pairs":
        return "pairs"
    if even != "auto" or n < 3 or opts.get("surrogate") == "trees":
        return None
    if _unpaired(n, sv, opts):
        return "pairs" if budget >= EVEN_RATIO * (n + math.comb(n, 2)) else None
    return "pilot" if PILOT_SHARE * (budget - 2) // 2 >= pilot_pairs_needed(n) else None


def _sampler(setup: Setup) -> Any:
    """The linear design, or where ``even_model="auto"`` can switch, the paired design with its pilot."""
    if not setup.plan.get("pilot"):
        return _design(setup, "regression")
    sv, d = setup.semivalue, setup.n_players
    form = _form(setup)
    order = _order(setup.options, d, sv)

    def decide(pilot: CoalitionSample, values: np.ndarray, history: Any, rest: int) -> bool:
        report = pilot_report(form, sv, order, pilot, values, np.asarray(history.empty_value, dtype=float),
                              np.asarray(history.grand_value, dtype=float), rest)
        setup.notes["design"] = {"chosen": "unpaired, even model" if report["switch"] else "paired", **report}
        return report["switch"]

    log_q, _ = _size_mass(setup)
    design = PilotDesign(setup.sampler_rng, d, log_q, decide=decide, pilot_share=PILOT_SHARE,
                         counts=setup.options.get("counts", "systematic"), complete=setup.plan["complete"])
    design.rounds_for_progress = bool(sv.is_shapley or sv.is_banzhaf)
    return design


def _form(setup: Setup) -> Any:
    sv, d = setup.semivalue, setup.n_players
    return ShapleyKernel(d, setup.options.get("lam", "alpha")) if sv.is_shapley else SemivalueRegression(sv, d)


def _solver(setup: Setup) -> SurrogateRegressionSolver:
    return SurrogateRegressionSolver(setup, _form(setup))


def _check_order(value: Any) -> int | str:
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) not in (2, 3, 5):
        raise ValueError(f"surrogate_order must be 'auto', 2, 3 or 5 (the most players in one Walsh product), "
                         f"got {value!r}")
    return int(value)


SURROGATE = Option("surrogate", "walsh", "the interaction surrogate: 'walsh' (penalized Walsh products of 3 and 5 "
                   "players, chosen by leave-one-out error), 'trees' (cross-fitted xgboost control variate; paired "
                   "draws with replacement) or 'none'", allowed=("walsh", "trees", "none"))
ORDER = Option("surrogate_order", "auto", "the most players in one Walsh product (3 or 5 paired; 2 or 3 unpaired; "
               "'auto': 5 paired, 3 unpaired)", check=_check_order)
FOLDS = Option("folds", 4, "cross-fitting folds of surrogate='trees'", kind="int", minimum=2)
EVEN = Option("even_model", "none", "'pairs': unpaired draws with the products of two players fitted unpenalized "
              "(kADDSHAP's design); 'auto': on a paired design, a pilot of its pairs decides whether the rest of the "
              "budget goes to unpaired draws with that even model (unpaired designs: from EVEN_RATIO x its unknowns "
              "evaluations on); 'none'", allowed=("none", "pairs", "auto"))
PAIRED = Option("paired", "auto", "draw complementary pairs (S, N \\ S); 'auto': when the semivalue is symmetric",
                allowed=("auto", True, False))

# measured (benchmarks/results/default, 8 black-box pairs not tuned on and one tuned, 3 seeds x 3 rows, a busy machine):
# the paired surrogate: median 1.7x / 1.65x / 1.55x lower error than plain regression at 10n / 30n / 100n (0.81x-1390x
# per cell); even_model="pairs" at 100n 1.08-1.75x over the paired surrogate on 6 of 9 pairs, 0.70-0.77x on two;
# even_model="auto" switched in one cell (communities 100n, 1.22x) at ~15-20 ms more CPU per row: not auto's choice
# a budget rule fixed on the suite's synthetic games (the even design from 6 rows per unknown of the order-2 model,
# else paired): plain / rule >= 0.97 on every pair, median 1.55-1.71x, but the even fit (after its speed-up) costs
# 1.6-2.3x plain regression's CPU at n = 20-25, 100n: not auto's choice (results/default/even_budget_rule.md)
SPECS = [
    MethodSpec(
        name="surrogate-regression", indices=("any semivalue",),
        description="regression with a penalized interaction surrogate: Walsh products of 3 and 5 players (and 2 "
                    "unpaired) fitted with the additive design, given their exact values; surrogate and penalty by "
                    "leave-one-out error, the plain regression where none helps; even_model: unpaired draws with the "
                    "products of two players fitted (kADDSHAP's design), or chosen from a pilot of the pairs",
        plan=_plan_surrogate, sampler=_sampler, solver=_solver,
        options=(DISTRIBUTION, TAU, REPLACEMENT, PAIRED, LAM, COUNTS, COMPLETE, SURROGATE, ORDER, FOLDS, EVEN),
        min_budget=min_budget, validate=_check),
]
