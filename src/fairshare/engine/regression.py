"""The linear estimators: one solver over the regression formulations, and their registry entries.

:class:`RegressionSolver` absorbs coalition samples round by round (pooled as a mixture of designs), fits the
formulation (:mod:`~fairshare.engine.formulations`) by weighted least squares (*regression*) or evaluates its unbiased
Horvitz-Thompson sum (*matrix-vector*), and returns values and grouped standard errors
(:mod:`~fairshare.engine.solve`). Control variates are one option, ``control_variate``: ``"trees"`` (cross-fitted
xgboost surrogates, :mod:`~fairshare.engine.surrogate`), ``"auto"`` (the matrix-vector estimator corrected by a
regression fitted on the other half of the units), a game with known values or proxy values.

Honest error bars at small budgets: a design that took some sizes whole and left others unsampled (``complete`` at a
budget that fills only those) is deterministic and its error cannot be estimated from the sample, so its standard
errors are infinite (also with under 2/3 as many units drawn as unknowns beside whole levels: a bias those draws cannot
show); a paired design with fewer pairs than unknowns is drawn unpaired. Product measures:
:meth:`~fairshare.engine.formulations.MeasureRegression.honest_stderr`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._core import arrays
from .exact import check_proxy_game, exact_estimate
from ..games.base import Game
from .samplers.sample import CoalitionSample
from .samplers.sizes import DISTRIBUTIONS, shapley_size_log_mass
from ..indices.semivalues import Semivalue
from .formulations import MeasureRegression, SemivalueDesign, formulation
from .iterative import PackedDesign, solve_regression_iterative, use_iterative
from .node_slopes import fit_residual
from .samplers import CoalitionDesign, NeymanSizes
from .shrink import james_stein
from .solve import Design, group_stderr, indicator_product, merge, solve_matrix_vector, solve_regression, subsample
from .._core.arguments import Option
from .spec import MethodSpec, Setup
from .surrogate import CONTROL_MIN_ROWS_PER_PLAYER, tree_control_variate

__all__ = ["RegressionSolver", "SPECS"]

# ---------------------------------------------------------------------------------------- solver
class RegressionSolver:
    """Regression or matrix-vector estimates of a formulation from pooled coalition samples."""

    def __init__(self, setup: Setup, formulation: Any, kind: str) -> None:
        self.setup = setup
        self.form = formulation
        self.kind = kind
        self.d = setup.n_players
        opts = setup.options
        self.cv = setup.plan["control_variate"]
        self.folds = opts.get("folds", 10)
        self.solve = opts.get("solve", "auto")
        self.rng = setup.solver_rng
        self.samples: list[CoalitionSample] = []
        self.values: list[np.ndarray] = []
        self.betas: list = []
        self.nodes_left_out = 0.0       # quadrature weight no sampled row could fit (the most over outputs, this fit)

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.v0, self.vN = v0, vN
        self.proxy = self._proxy(v0.size)

    def _proxy(self, k: int) -> tuple | None:
        cv, d = self.cv, self.d
        if cv is None or isinstance(cv, str):
            return None
        if isinstance(cv, Game):
            phi = np.asarray(exact_estimate(cv, self.setup.semivalue).values, dtype=float).reshape(d, -1)
            return (lambda S: np.asarray(cv(S), dtype=float).reshape(S.shape[0], -1)), np.broadcast_to(phi, (d, k))
        g = np.asarray(cv, dtype=float).reshape(d, -1)
        if g.shape[1] not in (1, k):
            raise ValueError(f"control_variate must be None, 'auto', 'trees', a Game, or finite proxy values of shape "
                             f"({d},) or ({d}, {k}); got shape {np.shape(cv)}")
        g = np.broadcast_to(g, (d, k)).copy()
        return (lambda S: indicator_product(S, g)), g

    def absorb(self, sample: CoalitionSample, values: np.ndarray) -> None:
        if sample.n_rows:
            self.samples.append(sample)
            self.values.append(values)

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        if not self.samples:
            raise ValueError("no coalitions were sampled: raise the budget")
        sample = merge(self.samples, [s.n_draws for s in self.samples])
        V = arrays.concat(self.values)
        info: dict = {"n_samples": int(sample.n_draws), "n_rounds": len(self.samples)}
        self.nodes_left_out = 0.0                           # of this result's fit, not of an earlier round's
        if isinstance(self.cv, str) and self.cv == "trees" and sample.coverage != "all":   # (all: exact as it is)
            adjustment, beta = tree_control_variate(sample.coalitions, V, self.rng, self.setup.semivalue,
                                                    folds=self.folds)
            V = V - adjustment
            info["control_beta"] = [round(float(b), 4) for b in beta]
        target, total = V - arrays.like(self.v0, V), self.vN - self.v0
        offset = np.zeros((self.d, V.shape[1]))
        if self.proxy is not None:
            proxy_values, proxy_phi = self.proxy
            ends = proxy_values(np.stack([np.zeros(self.d, bool), np.ones(self.d, bool)]))
            target = target - (proxy_values(sample.coalitions) - ends[0])
            total = total - (ends[1] - ends[0])
            offset = proxy_phi
        # an additive proxy needs over d distinct rows a half (below, a minimum-norm guess that adds variance)
        rows_per_half = sample.n_rows / (4.0 if sample.paired else 2.0)
        if isinstance(self.cv, str) and self.cv == "auto" and self.kind == "matrix-vector" and rows_per_half > self.d:
            values, stderr = self._cross_fitted(sample, target, total)
        else:
            values, stderr = self.fit(sample, target, total, self.kind)
        info["solver"] = self.solved_with
        if self.nodes_left_out > 0:
            info["nodes_left_out"] = self.nodes_left_out
        values, stderr = arrays.to_numpy(values), arrays.to_numpy(stderr)       # the results: d x k, to the host
        unknowns, drawn = self.d - 1 if self.form.constrained else self.d + 1, sample.n_units
        note = None
        if sample.coverage == "partial":
            note = ("not estimable: the budget took some coalition sizes whole and left the others unsampled, a "
                    "deterministic design whose error the sample cannot show")
        elif sample.coverage != "all" and drawn < unknowns + 2:     # the fit (nearly) goes through every row
            note = (f"not estimable: {drawn} sampling units for {unknowns} unknowns leave fewer than two residual "
                    "degrees of freedom to show the error")
        elif self.kind == "regression" and sample.coverage == "random" and drawn > (r := sample.n_random_units) \
                and 3 * r < 2 * unknowns:              # (measured: 95% intervals covered 0.3-0.85 there)
            note = (f"not estimable: the budget took {drawn - r} sampling units whole and drew {r} for {unknowns} "
                    "unknowns; the fit's error is then mostly a bias so few draws cannot show")
        elif self.kind == "regression" and sample.coverage == "random" and hasattr(self.form, "honest_stderr"):
            stderr, note = self.form.honest_stderr(sample, stderr, unknowns)       # (product measures)
        if note is not None:
            stderr, info["stderr"] = np.full_like(values, np.inf), note
        if self.setup.options.get("shrink", False) and sample.coverage != "all":
            values, stderr, info["shrinkage"] = james_stein(values + offset, stderr)
            return values, stderr, info
        return values + offset, stderr, info

    def fit(self, sample: CoalitionSample, target: np.ndarray, total: np.ndarray,
            kind: str) -> tuple[np.ndarray, np.ndarray]:
        """Values and standard errors of one pooled sample (targets already corrected)."""
        rows = self.form.rows(sample, target, total)
        top = float(np.max(rows.log_w))
        w = np.exp(rows.log_w - top)
        design = Design.build(sample, rows.s, rows.t, w, rows.y, collapse_pairs=rows.collapse_pairs)
        on_device = arrays.is_tensor(design.Z)             # a GPU runs the dense path fastest (and in place)
        iterative = not on_device and (use_iterative(design.Z.shape[0], self.d, design.y.shape[1])
                                       if self.solve == "auto" else self.solve == "iterative")
        if iterative:
            design = PackedDesign.from_design(design)
        self.solved_with = "iterative" if iterative else ("dense on " + str(design.Z.device) if on_device else "dense")
        if kind == "regression":
            if self.form.center(sample):
                design = design.centered()
            lin = solve_regression_iterative(design, self.form.constrained) if iterative else \
                solve_regression(design, constrained=self.form.constrained)
        else:
            lin = solve_matrix_vector(design, self.form.matrix_vector(top))
        if kind == "regression" and getattr(self.form, "corrects", False):
            # a semivalue of several product measures: each node's slopes of the fit's residual (their error bars
            # are the estimate's: the fit's own values are exact for the fitted function)
            x = np.asarray(arrays.to_numpy(lin.x), dtype=float)
            shift, stderr, left = self.form.correction(sample, fit_residual(sample, w, rows.y, x), self.rng)
            self.nodes_left_out = max(self.nodes_left_out, left)
            return self.form.values(x, total) + shift, stderr                 # on the host, as the nodes' slopes
        stderr = group_stderr(design, lin, self.rng, transform=self.form.transform)
        return self.form.values(lin.x, total), stderr

    def _cross_fitted(self, sample: CoalitionSample, target: np.ndarray,
                      total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Matrix-vector estimate with an additive control variate fitted on the other half of the units.

        Units are split in two halves; a regression fit on one half is the proxy for the matrix-vector
        estimate on the other, and the two estimates are averaged. The proxy never sees the units it
        corrects, so the estimate stays unbiased. Units taken with certainty go into both halves.
        """
        certain = sample.fpc <= 1e-12
        units = self.rng.permutation(np.unique(sample.unit[~certain]))
        half_of_unit = np.zeros(int(sample.unit.max()) + 1, dtype=bool)
        half_of_unit[units[: units.size // 2]] = True
        in_a = half_of_unit[sample.unit] & ~certain
        in_b = ~half_of_unit[sample.unit] & ~certain
        doubled = CoalitionSample(sample.coalitions, sample.log_weight + np.where(certain, 0.0, np.log(2.0)),
                                  sample.unit, sample.stratum, sample.fpc, sample.n_draws, sample.paired,
                                  sample.coverage)
        estimates, variances = [], []
        for fit_rows, use_rows in ((in_a | certain, in_b | certain), (in_b | certain, in_a | certain)):
            g, _ = self.fit(subsample(doubled, fit_rows), arrays.take_rows(target, np.flatnonzero(fit_rows)), total,
                            "regression")
            use = subsample(doubled, use_rows)
            resid = arrays.take_rows(target, np.flatnonzero(use_rows)) - indicator_product(use.coalitions, g)
            g_host = np.asarray(arrays.to_numpy(g), dtype=float)
            phi, se = self.fit(use, resid, total - g_host.sum(axis=0), "matrix-vector")
            estimates.append(phi + g)
            variances.append(se**2)
        return 0.5 * (estimates[0] + estimates[1]), 0.5 * np.sqrt(variances[0] + variances[1])


# ------------------------------------------------------------------------------- option checks
def _check_lam(value: Any) -> Any:
    if isinstance(value, str):
        if value != "alpha":
            raise ValueError(f"lam must be 'alpha' or a number, got {value!r}")
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"lam must be 'alpha' or a number, got {value!r}") from None
    if not np.isfinite(number):
        raise ValueError(f"lam must be 'alpha' or a finite number, got {value!r}")
    return number


def _check_control(value: Any) -> Any:
    if value is None or isinstance(value, Game):
        return value
    if isinstance(value, str):
        if value not in ("auto", "trees"):
            raise ValueError(f"control_variate must be None, 'auto', 'trees', a Game or proxy values, got {value!r}")
        return value
    arr = np.asarray(value, dtype=float)
    if arr.ndim not in (1, 2) or not np.all(np.isfinite(arr)):
        raise ValueError(f"control_variate must be None, 'auto', 'trees', a Game, or finite proxy values of shape "
                         f"(n_players,) or (n_players, k); got shape {arr.shape}")
    return arr


def _check_tau(value: Any) -> Any:
    if value is not None and not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"tau must be given in [0, 1] with distribution='tau', got {value!r}")
    return value


DISTRIBUTION = Option("distribution", "leverage", "size distribution of the sampled coalitions: kernel weights, "
                      "leverage scores (uniform over sizes), modified l2, or (h (d-h))^-tau",
                      allowed=tuple(sorted(DISTRIBUTIONS)) + ("tau",))
TAU = Option("tau", None, "exponent of distribution='tau', in [0, 1]", kind="float", none_ok=True, check=_check_tau)
REPLACEMENT = Option("replacement", False, "draw coalitions with replacement (i.i.d.) instead of distinct ones",
                     kind="bool")
PAIRED = Option("paired", True, "draw complementary pairs (S, N \\ S)", kind="bool")
LAM = Option("lam", "alpha", "the lambda of the target v(S) - v(empty) - lambda |S|: 'alpha' or a number",
             check=_check_lam)
COUNTS = Option("counts", "systematic", "how many coalitions of each size a design without replacement takes",
                allowed=("systematic", "binomial"))
COMPLETE = Option("complete", "auto", "take whole size levels (1 and n-1 first) with certainty: always, never, or "
                  "'auto' when they fill most of a small budget", allowed=(True, False, "auto"))
CONTROL = Option("control_variate", None, "None, 'trees' (cross-fitted xgboost surrogates), 'auto' (matrix-vector: an "
                 "additive fit on the other half of the units), a Game with known values, or proxy values",
                 check=_check_control)
SHRINK = Option("shrink", False, "move the values toward equal shares by their own standard errors (James-Stein: "
                "lower squared error where the errors are as large as the values' spread; biased; still adding up)",
                kind="bool")
FOLDS = Option("folds", 10, "cross-fitting folds of control_variate='trees'", kind="int", minimum=2)
SOLVE = Option("solve", "auto", "linear algebra: 'dense' (Gram matrix, O(m n^2)), 'iterative' (conjugate gradients on the "
               "packed coalitions, O(m n) a pass; its finite error bars held 0.91-0.95 from 1.7 rows a player, a pair "
               "one row; auto takes it from 2.8) or 'auto' (the cheaper)",
               allowed=("auto", "dense", "iterative"))


def _validate(opts: dict, n: int, sv: Semivalue) -> None:
    dist, tau = opts.get("distribution"), opts.get("tau")
    if dist == "tau" and tau is None:
        raise ValueError("tau must be given in [0, 1] with distribution='tau'")
    if dist not in (None, "tau") and tau is not None:
        raise ValueError(f"tau is only used with distribution='tau', not {dist!r}")
    cv = opts.get("control_variate")
    if isinstance(cv, str) and cv == "trees":
        if not (opts.get("paired") in (True, "auto") and opts.get("replacement")):
            raise ValueError("control_variate='trees' needs paired draws with replacement (paired=True, "
                             "replacement=True): cross-fitting needs folds drawn independently")
        if not (sv.is_shapley or sv.is_banzhaf):
            raise ValueError("control_variate='trees' estimates Shapley or Banzhaf values")
    if isinstance(cv, Game):
        check_proxy_game(cv, n, sv)
    if isinstance(cv, np.ndarray) and cv.shape[0] != n:
        raise ValueError(f"control_variate must be None, 'auto', 'trees', a Game, or finite proxy values of shape "
                         f"({n},) or ({n}, k); got shape {cv.shape}")
    if opts.get("paired") is True and not sv.is_shapley and not SemivalueDesign(sv, n).symmetric:
        raise ValueError(f"paired sampling needs a symmetric semivalue (p_l = p_(n-1-l)); {sv.name} is not")


# ------------------------------------------------------------------------- plan and sampler factories
def _size_mass(setup: Setup) -> tuple[np.ndarray, bool]:
    """The design's size distribution ``log q`` and whether it is symmetric (pairs possible)."""
    o, d, sv = setup.options, setup.n_players, setup.semivalue
    if sv.is_shapley:
        return shapley_size_log_mass(d, o.get("distribution", "leverage"), o.get("tau")), True
    form = formulation(sv, d)
    return (form.log_q, False) if isinstance(form, MeasureRegression) else (form.design.log_q, form.design.symmetric)


def _plan(setup: Setup, kind: str) -> dict:
    """Pairing, replacement, complete levels and the control variate of a linear method at this budget, with the
    fallbacks that keep small budgets honest (each noted for the result's ``info``)."""
    o, d, sv = setup.options, setup.n_players, setup.semivalue
    _, symmetric = _size_mass(setup)
    paired = o.get("paired", True)
    paired = symmetric if paired == "auto" else bool(paired)
    replacement, complete = bool(o.get("replacement", False)), o.get("complete", False)
    cv = o.get("control_variate")
    if isinstance(cv, str) and cv == "trees" and setup.budget - 2 < CONTROL_MIN_ROWS_PER_PLAYER * d:
        # too few pairs for surrogates: the plain default design
        cv, replacement, complete = None, False, ("auto" if sv.is_shapley else False)
        setup.notes["control"] = f"off: budget below {CONTROL_MIN_ROWS_PER_PLAYER}n, plain regression"
    unknowns = d if sv.is_shapley else d + 1
    if kind == "regression" and paired and (setup.budget - 2) // 2 < unknowns:
        paired = False                       # too few pairs to determine the fit: unpaired draws do
        setup.notes["paired"] = f"off: {(setup.budget - 2) // 2} pairs cannot determine {unknowns - 1} unknowns"
    return {"paired": paired, "replacement": replacement, "complete": complete, "control_variate": cv}


def _design(setup: Setup, kind: str, adaptive: bool = False) -> CoalitionDesign:
    """The coalition design of a linear method, as planned."""
    o, d, sv, plan = setup.options, setup.n_players, setup.semivalue, setup.plan
    log_q, _ = _size_mass(setup)
    if adaptive:
        return NeymanSizes(setup.sampler_rng, d, log_q, counts=o.get("counts", "systematic"), device=setup.device)
    design = CoalitionDesign(setup.sampler_rng, d, log_q, replacement=plan["replacement"], paired=plan["paired"],
                             counts=o.get("counts", "systematic"), complete=plan["complete"], device=setup.device)
    # a semivalue that weighs small coalitions heavily (beta-Shapley) redraws them every round: one round,
    # unless a stopping rule asks for rounds
    design.rounds_for_progress = bool(sv.is_shapley or sv.is_banzhaf)
    return design


def _solver(setup: Setup, kind: str) -> RegressionSolver:
    sv, d = setup.semivalue, setup.n_players
    return RegressionSolver(setup, formulation(sv, d, setup.options.get("lam", "alpha")), kind)


def _min_regression(n: int, sv: Semivalue, opts: dict) -> int:
    """Shapley regression needs ``n`` complementary pairs besides the ends: with fewer, unpaired rows determine the
    fit exactly or not at all, and its values were measured 3-50x worse than one permutation's (relative squared
    error above 1 on 30-player games at n + 1 to 2n + 1 evaluations); other semivalues fit ``n + 1`` unknowns."""
    if n == 1:
        return 2
    return 2 * n + 2 if sv.is_shapley else n + 2


def _min_mv(n: int, sv: Semivalue, opts: dict) -> int:
    return 2 if n == 1 else 4


# ------------------------------------------------------------------------------------ registry
def _linear(kind: str, adaptive: bool = False) -> dict:
    """The plan, sampler and solver of a linear method (``kind``: "regression" or "matrix-vector")."""
    return dict(plan=partial(_plan, kind=kind), sampler=partial(_design, kind=kind, adaptive=adaptive),
                solver=partial(_solver, kind=kind))


_SHAPLEY_OPTIONS = (DISTRIBUTION, TAU, REPLACEMENT, PAIRED, LAM, CONTROL, COUNTS, COMPLETE, SOLVE)

# Defaults chosen by measurement (benchmarks/shapley.py, benchmarks/highdim.py): without replacement and
# paired; leverage-score sizes beat kernel-weight sizes in 19 of 24 (game, budget) pairs from 2n + 2 to
# 30n on eight XGBoost games and 2.7x at n = 3072, m = 10000; kernel weights won at the smallest budgets on
# digits and adult. Taking all coalitions of size 1 and n-1 when they fill most of a small budget cut the
# error 13-40x at budget 2n + 2 on xgboost games (their error bars are then infinite: nothing else is
# sampled); the cross-fitted additive control variate cut the matrix-vector estimator's error 3-100x.
SPECS = [
    MethodSpec(
        name="kernelshap", indices=("shapley",),
        description="KernelSHAP (Lundberg and Lee 2017): regression, kernel-weight sampling with replacement, paired",
        **_linear("regression"),
        fixed=dict(distribution="kernel", tau=None, replacement=True, paired=True, lam="alpha", control_variate=None,
                   counts="systematic", complete=False),
        options=(SOLVE,), min_budget=_min_regression),
    MethodSpec(
        name="unbiased-kernelshap", indices=("shapley",),
        description="unbiased KernelSHAP (Covert and Lee 2021): matrix-vector, kernel weights, lambda = 0, paired",
        **_linear("matrix-vector"),
        fixed=dict(distribution="kernel", tau=None, replacement=True, paired=True, lam=0.0, control_variate=None,
                   counts="systematic", complete=False),
        options=(SOLVE,), min_budget=_min_mv),
    MethodSpec(
        name="leverageshap", indices=("shapley",),
        description="LeverageSHAP (Musco and Witter 2025): regression, leverage scores, without replacement, paired",
        **_linear("regression"),
        fixed=dict(distribution="leverage", tau=None, replacement=False, paired=True, lam="alpha",
                   control_variate=None, counts="systematic", complete=False),
        options=(SOLVE,), min_budget=_min_regression),
    MethodSpec(
        name="regression", indices=("shapley",),
        description="regression estimator phi^R_lambda with a choice of sampling distribution, replacement, pairing",
        **_linear("regression"),
        options=_SHAPLEY_OPTIONS + (SHRINK,), min_budget=_min_regression, default_for={"shapley": 20},
        validate=_validate),
    MethodSpec(
        name="regression-cv", indices=("shapley",),
        description="regression on v - beta g, g the Shapley-zero part of cross-fitted xgboost surrogates (paired draws "
                    "with replacement; plain regression below 4n evaluations); for games with strong interactions",
        # measured (benchmarks/shapley.py): 5x / 8x lower error than the default at 4n / 10n on breast cancer, 2.6-9x
        # at the 50000-evaluation Table 2 budgets
        **_linear("regression"),
        options=(DISTRIBUTION, TAU, Option("replacement", True, REPLACEMENT.doc, kind="bool"), PAIRED, LAM,
                 Option("control_variate", "trees", CONTROL.doc, check=_check_control), COUNTS,
                 Option("complete", False, COMPLETE.doc, allowed=(True, False, "auto")), FOLDS, SOLVE),
        min_budget=_min_regression, validate=_validate, upgrades=("surrogate-regression", "regression")),
    MethodSpec(
        name="regression-adaptive", indices=("shapley",),
        description="regression with variance-adaptive sizes: after a first round of leverage-score pairs, later rounds "
                    "allocate coalition sizes by Neyman allocation from the residuals seen",
        **_linear("regression", adaptive=True),
        options=(LAM, COUNTS, SOLVE),
        fixed=dict(distribution="leverage", tau=None, replacement=False, paired=True, control_variate=None,
                   complete=False),
        min_budget=_min_regression),
    MethodSpec(
        name="matrix-vector", indices=("shapley",),
        description="matrix-vector estimator phi^M_lambda (unbiased) with a choice of sampling, replacement, pairing",
        **_linear("matrix-vector"),
        options=tuple(Option("control_variate", "auto", CONTROL.doc, check=_check_control) if o is CONTROL else o
                      for o in _SHAPLEY_OPTIONS),
        min_budget=_min_mv, validate=_validate),
    MethodSpec(
        name="kernel-banzhaf", indices=("banzhaf",),
        description="Kernel Banzhaf (Algorithm 1): least squares on paired uniform coalitions, design entries +-1/2 "
                    "(without replacement by default; replacement=True is the paper's algorithm)",
        # measured (benchmarks/banzhaf.py, m = 20n): without replacement as good or better on 3 of 4 small datasets
        **_linear("regression"),
        options=(PAIRED, REPLACEMENT, COUNTS, SOLVE), fixed=dict(control_variate=None),
        # data games keep it (their evaluations are model fits, noisy; the surrogate was measured on feature games)
        min_budget=_min_regression, default_for={"banzhaf": 20, "banzhaf@data": 26}, validate=_validate),
    MethodSpec(
        name="kernel-banzhaf-cv", indices=("banzhaf",),
        description="Kernel Banzhaf on v - beta g, g the non-additive part of cross-fitted xgboost surrogates "
                    "(exact Banzhaf values 0; paired draws with replacement); for games with strong interactions "
                    "(needs xgboost)",
        # measured (benchmarks/banzhaf.py): 2.7x lower error than Kernel Banzhaf and shapiq on the breast-cancer
        # single-baseline game at m = 600; 1.1-3x on five Table 1 games, a tie on the other three
        **_linear("regression"),
        options=(PAIRED, Option("replacement", True, REPLACEMENT.doc, kind="bool"), COUNTS, FOLDS, SOLVE),
        fixed=dict(control_variate="trees"), min_budget=_min_regression, validate=_validate,
        upgrades=("surrogate-regression", "kernel-banzhaf")),
    MethodSpec(
        name="unbiased-kernel-banzhaf", indices=("banzhaf",),
        description="matrix-vector counterpart of Kernel Banzhaf: unbiased Horvitz-Thompson sum of (z - 1/2) v(S)",
        **_linear("matrix-vector"),
        options=(PAIRED, Option("replacement", True, REPLACEMENT.doc, kind="bool"), COUNTS, SOLVE),
        fixed=dict(control_variate=None), min_budget=lambda n, sv, o: 4, validate=_validate),
    MethodSpec(
        name="semivalue-regression", indices=("any semivalue",),
        description="regression for any semivalue (Lemma 3.4) with leverage-score sampling (Theorem 3.5); weighted "
                    "Banzhaf and beta values: least squares under their product measures (a quadrature over the "
                    "inclusion probability)",
        **_linear("regression"),
        options=(Option("paired", "auto", "draw complementary pairs (S, N \\ S); 'auto': when the semivalue is "
                        "symmetric", allowed=("auto", True, False)), REPLACEMENT, COUNTS, SOLVE),
        fixed=dict(control_variate=None), min_budget=_min_regression,
        # data games: the plain fit (the surrogate measured up to 4x worse than it at 10n on data games' step-like
        # utilities, w = 0.3 and 0.7)
        default_for={"any semivalue": 15, "any semivalue@data": 17, "weighted-banzhaf": 19,
                     "weighted-banzhaf@data": 22},
        validate=_validate),
]
