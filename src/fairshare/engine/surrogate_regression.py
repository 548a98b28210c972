"""The surrogate regression as a method: the linear estimators' design and solver, with the penalized interaction
surrogate of :mod:`fairshare.engine.surrogate_fit` (or the cross-fitted tree control variate) in the solve.

``surrogate-regression`` estimates Shapley values, Banzhaf values and every semivalue; it is ``auto``'s method for
Shapley and Banzhaf values and, from the unpaired design's ``2 + n + C(n, 2)`` evaluations, for the other semivalues
(weighted Banzhaf and beta values on the product measures' regression,
:class:`~fairshare.engine.formulations.MeasureRegression`) of every game but data valuation's; its products of
three players are screened by the pairs' even halves (:mod:`fairshare.engine.screening`)
(:mod:`fairshare.engine.choice`; ``benchmarks/default.py`` measures it against plain regression and the peers).
Its paired design is the plain regression's (leverage-score sizes, distinct coalitions, complementary pairs where the
semivalue is symmetric, whole size levels at small budgets),
so where the surrogate does not pay and the even model is not taken the result is the plain regression's, bit for bit;
``e.info["surrogate"]`` says which surrogate was taken, its penalty and the estimated gain (the plain fit's
leave-one-out error and estimated variance over the chosen one's; one report per output where there are several),
``e.info["design"]`` which design ran.

Options: ``surrogate`` (``"walsh"``: the penalized Walsh products; ``"trees"``: the cross-fitted xgboost control
variate, which needs paired draws with replacement; ``"none"``: the plain regression), ``surrogate_order`` (the most
players in one Walsh product: 3 or 5 on paired designs, 2 or 3 on unpaired ones; ``"auto"``: 5 and 3) and
``folds`` (the trees' cross-fitting folds). An unpaired design (``paired=False``, or a semivalue that is not symmetric) fits the products
of two players as well and needs ``2 + n + C(n, 2)`` evaluations; a smaller budget is refused, naming that minimum.

``even_model`` (issue 42, items 2 and 3): paired rows see only the odd part of the game; ``"pairs"`` draws unpaired
coalitions and fits the products of every two players unpenalized with the additive design (kADDSHAP's even model: the
even part fitted instead of cancelled, so every evaluation informs the odd part), the odd Walsh surrogate on top where
it pays; from ``n + C(n, 2) + 6`` evaluations (refused below, naming that minimum). ``"auto"`` (the default): on an
unpaired product-measure design (weighted Banzhaf and beta values), that fit where the budget gives ``EVEN_ROWS`` rows
per unknown of the order-2 model and it costs at most ``MEASURE_EVEN_WORK`` multiply-adds (:func:`even_on_measures`;
measured 1.2-10x lower error at 100n than the penalized products of two players, 1-4x higher at 30n, below the rule);
on a paired design, the paired design. ``"budget"``: on a paired Shapley design, the even design where the budget
gives ``EVEN_ROWS`` rows per unknown, its fit costs at most ``EVEN_WORK`` multiply-adds and the budget covers at most
half of all coalitions (:func:`even_by_budget`; fixed on the suite's synthetic games before the benchmark); since the
products of three players are screened by the pairs' even halves (:mod:`fairshare.engine.screening`), the paired
design beat it 2.7-8x at 100n on the benchmark's 12- and 14-player tables. Both rules keep the design as it is under
a stopping rule that may end the run early. ``"pilot"``: on a paired design whose budget lets a third of its pairs
fit the even model, those pairs are evaluated first (:class:`~fairshare.engine.samplers.pilot.PilotDesign`) and
:mod:`fairshare.engine.design_choice` predicts both designs' variance from them; the rest of the budget goes to
unpaired draws only where the prediction is at most 0.8 of the paired design's (measured: the prediction is
unreliable). ``"none"``: the paired (or unpaired) design without the even model.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._core import arrays
from .._core.arguments import Option
from ..indices.semivalues import Semivalue
from .formulations import fits_measures, formulation, pairs_possible
from .design_choice import PILOT_SHARE, pilot_pairs_needed, pilot_report
from .regression import (COMPLETE, COUNTS, DISTRIBUTION, LAM, REPLACEMENT, SHRINK, TAU, RegressionSolver, _design,
                         _plan, _size_mass, _validate)
from .ridge_path import one_thread
from .samplers.pilot import PilotDesign
from .samplers.sample import CoalitionSample
from .spec import MethodSpec, Setup
from .surrogate_errors import groups, surrogate_stderr
from .surrogate_fit import _Problem, fit_surrogate

__all__ = ["SurrogateRegressionSolver", "SPECS", "min_budget", "near_minimum", "even_by_budget", "even_on_measures",
           "EVEN_ROWS", "EVEN_WORK", "EVEN_COVERAGE", "MEASURE_EVEN_WORK", "EDGE_ROWS"]

#: ``even_model="auto"`` on a paired Shapley design: the even model's unpaired draws from this many rows per unknown of
#: the order-2 model on (fixed on the suite's synthetic games before the benchmark: median gain 1.5x at 6 rows per
#: unknown, 0.3-0.7x below 4; benchmarks/results/default/even_budget_rule.md)
EVEN_ROWS = 6.0
#: ... and while its fit costs at most this many multiply-adds (``budget (n + C(n, 2))^2``; n <= 14 at 100n): its fit
#: cost 1.5-2x the paired surrogate's CPU (50-76 ms a row at n = 14-20 against 29-38 ms)
EVEN_WORK = 1.6e7
#: ... and while it covers at most 1 / EVEN_COVERAGE of all coalitions (measured on the benchmark's SVM of 8 features at
#: 240 of 256: the paired design 121x more accurate; at 1,200 of 4,096 on its 12 features the even design 1.08x)
EVEN_COVERAGE = 2
#: ``even_model="auto"`` on an unpaired product-measure design: the even model while its fit costs at most this many
#: multiply-adds (20 players at 100n: 8.8e7, 35-40 ms of CPU more than the penalized pairs' fit)
MEASURE_EVEN_WORK = 1e8
#: on an unpaired design with fewer rows than this many per unknown of the order-2 model (``1 + n + C(n, 2)``), the
#: error bars are the larger of the surrogate's and the plain fit's: just above the surrogate's minimum its penalty and
#: products are chosen on nearly as many rows as it has unknowns, and its own bars were too narrow (12 players, 100
#: evaluations, a sum of unanimity games of up to 5 players: coverage 0.60-0.68 for beta(4, 1) and beta(2, 7), the
#: estimated error 0.2x the true one; from 2 rows per unknown on 0.96-0.99)
EDGE_ROWS = 2.0


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
        need = min_budget(self.d, self.setup.semivalue, {**self.setup.options, "paired": sample.paired})
        if sample.n_rows + 2 < need:
            # a stopping rule's first rounds: below the design's minimum the surrogate's products of two players are
            # not determined and its leave-one-out errors are optimistic (measured: beta(4, 1) on 12 players stopped
            # at 63 evaluations with an estimated relative error of 0.05-0.09 against 0.38-0.46 true); the plain fit
            self.report = {"kind": "none", "why": f"{sample.n_rows} rows: below the surrogate's {need - 2}"}
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
                    v, se, report = self._with_surrogate(problem, fit, sample)
                reports.append(report)
            values.append(np.asarray(arrays.to_numpy(v), dtype=float))
            stderr.append(np.asarray(arrays.to_numpy(se), dtype=float))
        self.report = reports[0] if k == 1 else {"kind": "per output", "outputs": reports}
        self.solved_with = "dense, with the surrogate"
        return np.hstack(values), np.hstack(stderr)

    def _with_surrogate(self, problem: _Problem, fit: Any,
                        sample: CoalitionSample) -> tuple[np.ndarray, np.ndarray, dict]:
        """Values, error bars and the report of one output's surrogate fit (with product measures, the nodes' slopes
        of its residual added where there are several:
        :meth:`~fairshare.engine.formulations.MeasureRegression.correction`)."""
        group = groups(problem, self.rng)
        stderr = surrogate_stderr(problem, fit.L, fit.loo, group)
        plain = surrogate_stderr(problem, fit.plain_L, fit.plain_loo, group)
        report = {"kind": fit.label, "penalty": fit.penalty, "features": fit.n_features,
                  "loo_gain": round(float(fit.loo_gain), 4)}
        if near_minimum(problem.A.shape[0], self.d, sample.paired):
            stderr = np.maximum(stderr, plain)
            report["error_bars"] = f"the plain fit's where wider (under {EDGE_ROWS:g} rows per unknown of order 2)"
        if fit.check is not None:       # products ranked by a first fit of the residuals the bars read: a floor
            stderr = np.maximum(stderr, surrogate_stderr(problem, *fit.check, group))
            report["error_bars"] = "at least a fit's with a quarter of its products of three, chosen by their pairs"
        chosen_var, plain_var = float(np.sum(stderr ** 2)), float(np.sum(plain ** 2))     # of the bars returned
        report["estimated_gain"] = round(plain_var / chosen_var, 4) if chosen_var > 0 else None
        if not hasattr(self.form, "correction"):
            return fit.values, stderr, report
        # the residuals in the targets' units (rows of no weight, fitted by nothing, count none); the error bars the
        # larger of the fit's and the nodes' slopes' of its leave-one-out residuals (measured on bench default's
        # tables, beta(4, 1) and beta(16, 1), 10n-100n: coverage 0.90-0.99; the nodes' alone 0.77-0.97)
        root = problem.root[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            residual = np.where(root > 0, fit.residual / root, 0.0)
            loo = np.where(root > 0, fit.loo / root, 0.0)
        shift, nodes, left = self.form.correction(sample, residual, self.rng, errors=loo)
        self.nodes_left_out = max(self.nodes_left_out, left)                             # the most over the outputs
        # one node: the fit's residual has no slopes under its measure (the shift is rounding), the error bars count
        return (fit.values + shift if self.form.corrects else fit.values), np.maximum(stderr, nodes), report

    def absorb(self, sample: CoalitionSample, values: np.ndarray) -> None:
        if not sample.pilot:                                # a pilot's rows come again in a later batch
            super().absorb(sample, values)

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        values, stderr, info = super().result()
        info["surrogate"] = dict(self.report)
        return values, stderr, info


# ------------------------------------------------------------------------------------------------- registry
def near_minimum(rows: int, n: int, paired: bool) -> bool:
    """Whether an unpaired design's ``rows`` are under ``EDGE_ROWS`` per unknown of the order-2 model: there the
    surrogate's error bars are the larger of its own and the plain fit's.

    Examples
    --------
    >>> near_minimum(100, 12, False), near_minimum(160, 12, False), near_minimum(100, 12, True)
    (True, False, False)
    """
    return not paired and rows < EDGE_ROWS * (1 + n + math.comb(n, 2))


def _unpaired(n: int, sv: Semivalue, opts: dict) -> bool:
    paired = opts.get("paired", "auto")
    return paired is False or (paired == "auto" and not pairs_possible(sv, n))


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
    if opts.get("even_model", "auto") == "pairs":
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
    if opts.get("even_model", "auto") in ("pairs", "pilot") and opts.get("surrogate") == "trees":
        raise ValueError("even_model='pairs' or 'pilot' needs surrogate='walsh' or 'none' (the trees' cross-fitting "
                         "needs paired draws)")
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
    even = _even(setup.n_players, setup.semivalue, opts, setup.budget, setup.early_stop)
    if even == "pairs":
        as_regression = dataclasses.replace(as_regression, options={**as_regression.options, "paired": False})
    plan = _plan(as_regression, "regression")
    if surrogate == "trees" and plan["control_variate"] is None:
        surrogate = "none"                                   # too few pairs for the trees: noted by the plan
    pilot = even == "pilot" and plan["paired"] and not plan["replacement"] and setup.device is None
    if not pilot:
        setup.notes["design"] = _design_note(setup.n_players, setup.semivalue, opts, setup.budget, even, plan)
        if setup.early_stop and opts.get("even_model", "auto") in ("auto", "budget"):
            setup.notes["design"]["why"] = ("a stopping rule may end the run before the budget: no even model by "
                                            "the budget's rule")
    return {**plan, "surrogate": surrogate, "even": even == "pairs", "pilot": pilot}


def _design_note(n: int, sv: Semivalue, opts: dict, budget: int, even: str | None, plan: dict) -> dict:
    """``e.info["design"]``: the design that runs and, for ``even_model="budget"`` or the even model, the budget rule's
    figures."""
    chosen = "unpaired, even model" if even == "pairs" else ("paired" if plan["paired"] else "unpaired")
    note = {"chosen": chosen, "even_model": opts.get("even_model", "auto")}
    if (note["even_model"] == "budget" and sv.is_shapley and plan["paired"]) or even == "pairs":
        unknowns = n + math.comb(n, 2)
        note.update(rows_per_unknown=round(budget / unknowns, 3), needed=EVEN_ROWS,
                    work=float(budget * unknowns ** 2), most_work=EVEN_WORK,
                    coverage=round(budget / 2.0 ** n, 6), most_coverage=1.0 / EVEN_COVERAGE)
    return note


def _even(n: int, sv: Semivalue, opts: dict, budget: int, early_stop: bool = False) -> str | None:
    """The even model's design: ``"pairs"`` (unpaired draws, the even model fitted: ``even_model="pairs"``;
    ``"auto"`` by :func:`even_on_measures` on an unpaired product-measure design; ``"budget"`` by
    :func:`even_by_budget` on a paired Shapley design), ``"pilot"`` (``even_model="pilot"`` on a paired design whose
    pilot can fit the even model: :mod:`fairshare.engine.design_choice` decides) or None. The budget rules keep the
    design as it is under a stopping rule that may end the run early (``early_stop``): the budget is then no measure
    of the evaluations spent."""
    even = opts.get("even_model", "auto")
    if even == "pairs":
        return "pairs"
    if even == "none" or n < 3 or opts.get("surrogate") == "trees":
        return None
    if early_stop and even in ("auto", "budget"):   # the rules read the budget: a stopping rule may spend far less
        return None
    if _unpaired(n, sv, opts):
        return "pairs" if even == "auto" and even_on_measures(n, sv, budget) else None
    if even == "pilot":
        return "pilot" if PILOT_SHARE * (budget - 2) // 2 >= pilot_pairs_needed(n) else None
    return "pairs" if even == "budget" and even_by_budget(n, sv, opts, budget) else None


def even_on_measures(n: int, sv: Semivalue, budget: int) -> bool:
    """``even_model="auto"``'s rule on an unpaired product-measure design (weighted Banzhaf and beta values): the
    products of every two players fitted unpenalized where the budget gives ``EVEN_ROWS`` rows per unknown of the
    order-2 model, its fit costs at most ``MEASURE_EVEN_WORK`` multiply-adds (``budget (n + C(n, 2))^2``) and the
    budget covers at most ``1 / EVEN_COVERAGE`` of all coalitions. Measured on ``bench default``'s tables at 100n
    (12-20 players): 1.2-10x lower error than the penalized pairs (at 30n, below the rule, 1-4x higher).

    Examples
    --------
    >>> wb = Semivalue.weighted_banzhaf(0.3)
    >>> [even_on_measures(n, wb, 100 * n) for n in (8, 12, 20, 21)], even_on_measures(18, wb, 30 * 18)
    ([False, True, True, False], False)
    >>> even_on_measures(12, Semivalue.shapley(), 1200)
    False
    """
    if not fits_measures(sv, n):
        return False
    unknowns = n + math.comb(n, 2)
    covered = n <= 62 and budget * EVEN_COVERAGE > (1 << n)
    return bool(budget >= EVEN_ROWS * unknowns and budget * unknowns ** 2 <= MEASURE_EVEN_WORK and not covered)


def even_by_budget(n: int, sv: Semivalue, opts: dict, budget: int) -> bool:
    """``even_model="budget"``'s rule on a paired Shapley design: unpaired draws with the even model where the budget
    gives ``EVEN_ROWS`` rows per unknown of the order-2 model, its fit costs at most ``EVEN_WORK`` multiply-adds
    (``budget (n + C(n, 2))^2``: the design's Gram matrix and basis) and the budget covers at most
    ``1 / EVEN_COVERAGE`` of all ``2^n`` coalitions (above, the paired design drawn without replacement is nearly
    exact); the paired design otherwise.

    Examples
    --------
    >>> sv = Semivalue.shapley()
    >>> [even_by_budget(n, sv, {}, 100 * n) for n in (8, 10, 12, 14, 15, 30)]
    [False, False, True, True, False, False]
    >>> even_by_budget(10, sv, {}, 500)
    True
    >>> even_by_budget(12, sv, {}, 30 * 12), even_by_budget(12, sv, {"paired": True}, 1200)
    (False, False)
    """
    unknowns = n + math.comb(n, 2)
    covered = n <= 62 and budget * EVEN_COVERAGE > (1 << n)
    return bool(sv.is_shapley and opts.get("paired", "auto") is not True and budget >= EVEN_ROWS * unknowns
                and budget * unknowns ** 2 <= EVEN_WORK and not covered)


def _sampler(setup: Setup) -> Any:
    """The linear design, or where ``even_model="pilot"`` can switch, the paired design with its pilot."""
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
    return formulation(setup.semivalue, setup.n_players, setup.options.get("lam", "alpha"))


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
EVEN = Option("even_model", "auto", "'pairs': unpaired draws with the products of two players fitted unpenalized "
              "(kADDSHAP's design); 'auto': on an unpaired product-measure design (weighted Banzhaf and beta values) "
              "the pairs fitted so where the budget gives EVEN_ROWS rows per unknown of the order-2 model and the "
              "fit costs at most MEASURE_EVEN_WORK, none on a paired design; 'budget': a paired Shapley design "
              "switched to the even design where the budget gives EVEN_ROWS rows per unknown and the fit costs at "
              "most EVEN_WORK; 'pilot': a pilot of the paired design's pairs decides; 'none'",
              allowed=("auto", "budget", "none", "pairs", "pilot"))
PAIRED = Option("paired", "auto", "draw complementary pairs (S, N \\ S); 'auto': when the semivalue is symmetric",
                allowed=("auto", True, False))

# measured (benchmarks/results/default, 8 black-box pairs not tuned on and one tuned, 5 seeds x 5 rows): with the
# screened and wide products of three players 2.1x / 3.5x / 8.6x lower median error than plain regression at 10n /
# 30n / 100n (at least 1.0x per cell), 1-42 ms of CPU per row at 100n and n <= 30; Banzhaf values 2.0x below Kernel
# Banzhaf (median over 18 cells); on the product measures' fits: beta(4, 1) / beta(16, 1) 5.4x / 8.2x below their
# plain fit (medians over 18 cells) and 24x / 16x below the last stop's default, the surrogate on Lemma 3.4's rows
# (over the 17 cells not exact), weighted Banzhaf values (w = 0.3) 92x below MSR (2.4-14,000x). Data games (model
# fits) keep the plain fits
SPECS = [
    MethodSpec(
        name="surrogate-regression", indices=("any semivalue",),
        description="regression with a penalized interaction surrogate: Walsh products of 3 and 5 players (and 2 "
                    "unpaired) and functions of the coalition's size fitted with the additive design, given their "
                    "exact values; surrogate and penalty by leave-one-out error, the plain regression where none "
                    "helps; even_model: unpaired draws with the products of two players fitted (kADDSHAP's design) "
                    "where the budget affords them; auto's method for Shapley, Banzhaf, beta and weighted Banzhaf "
                    "values",
        plan=_plan_surrogate, sampler=_sampler, solver=_solver,
        options=(DISTRIBUTION, TAU, REPLACEMENT, PAIRED, LAM, COUNTS, COMPLETE, SURROGATE, ORDER, FOLDS, EVEN, SHRINK),
        min_budget=min_budget, validate=_check, default_for={"shapley": 25, "banzhaf": 25, "weighted-banzhaf": 20,
                                                               "any semivalue": 16}),
]
