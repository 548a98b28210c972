"""Interaction values from a coalition sample: a polynomial surrogate fitted by weighted least squares, and the
unbiased stratified correction of what it misses.

The design is the one of the linear estimators (:class:`~fairshare.engine.samplers.CoalitionDesign`):
sizes from a kernel, levels of sizes taken whole from the outside in while the budget covers them, the rest
distinct coalitions in complementary pairs, each with its Horvitz-Thompson weight ``w_U``.

Every index is ``I(S) = sum_U v(U) g_s(|U|, |U & S|)``
(:meth:`~fairshare.indices.interactions.InteractionIndex.coalition_weights`) and is estimated as

    I(S) = I(g)(S) + sum_U w_U (v(U) - g(U)) g_s(|U|, |U & S|)

where ``g`` is a polynomial of order ``l <= k`` fitted by weighted least squares (Shapley kernel, ``v(empty)`` and
``v(N)`` fitted exactly, for the Shapley family; uniform weights for the Banzhaf family), ``I(g)`` is its index
exactly (from its Moebius terms), and the sum is the Horvitz-Thompson estimate of the index of the residual:
unbiased whatever ``g`` is, and small where ``g`` fits. The surrogates are cross-fitted
(:mod:`fairshare.engine.interaction_fit`): the residuals of the folds' mean fit are summed exactly over the drawn
coalitions, and those of the fit that left a row out stand for the coalitions not drawn (drawn without replacement,
a held-out row is never a training one: its residuals alone would stand for neither); the candidates
(:func:`surrogate_candidates`) are each order whose ``1 + n + ... + C(n, l)`` unknowns the sample determines and
ridge fits of orders ``>= 2`` from half a row per unknown, within a cap on the factorizations' work that admits the
pairs of up to 111 players (of 100 players at 20,000 evaluations: relative squared error 3.11 with the additive
surrogate, 0.088 with the pairwise one; shapiq's KernelSHAPIQ 0.31), and the one whose estimate has the least
estimated variance is taken (``info["surrogate_gain"]``: the estimated variance without a surrogate over the chosen
one's). For the faithful indices (FSII, FBII) the fit of order ``k`` is regression-FSII/FBII's estimate; the
correction removes what a small sample's fit gets wrong (at 900 evaluations of 30 players, relative error 909 -> 1.3
on a sum of unanimity games). With ``surrogate_order=0`` the surrogate is a constant and the estimator is the plain
stratified one (SVARM-IQ's idea: strata by size, every sample updating every subset).

The correction is computed without a loop over subsets (:mod:`fairshare.engine.interaction_sums`).

Standard errors: the correction's variance from random groups of sampling units balanced over the strata
(the units of sizes taken whole contribute none), with the small-sample ``t`` factor. A matrix index
(``sii-matrix``, ``bii-matrix``) is its base index (SII, BII) estimated as above and mapped; its standard errors
are those of the mapped group replicates. A value that is not exact never has an error bar of 0: where fewer than
two drawn sampling units weigh in it (a Moebius coefficient weighs only the coalitions inside its subset) or the
groups show no spread, it is infinite (:meth:`InteractionSolver._unestimable`); a surrogate fitted in-sample (too
few units to cross-fit) with fewer than two residual degrees of freedom is never the one taken.

Budget (:func:`min_budget`): the two ends plus one coalition per value (``C(n, 1) + ... + C(n, order)``, in whole
complementary pairs), at most ``2^n``; a smaller budget is refused before any evaluation.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from .._core import arrays
from .._core.arguments import Option
from ..indices.interactions import InteractionIndex, subsets_up_to
from ..indices.semivalues import Semivalue
from .formulations import SemivalueDesign, log_kernel_weight
from .interaction_fit import FoldSystems, chosen, cross_fit, fold_weights
from .interaction_sums import bearing_units, index_sums
from .samplers import CoalitionDesign
from .samplers.sample import CoalitionSample
from .samplers.sizes import DISTRIBUTIONS, shapley_size_log_mass
from .solve import merge, replicate_stderr, unit_groups
from .spec import MethodSpec, Setup

__all__ = ["InteractionSolver", "SPECS", "surrogate_candidates", "n_unknowns", "min_budget"]

#: random groups of sampling units for the standard errors
_GROUPS = 16
#: folds of the cross-fitted surrogate (groups of sampling units, so folds are balanced over the strata)
_FOLDS = 8
#: a surrogate of order l is fitted when the sample has at least this many rows per unknown
_ROWS_PER_UNKNOWN = 2.0
#: and when its factorizations cost at most this many multiply-adds (unknowns^3 / 3 per fold and penalty, ten for a
#: pseudo-inverse); the normal equations grow with the rows, as the evaluations and the correction do, and are not
#: capped, so a larger budget never loses the surrogate a smaller one had
_MAX_FIT_WORK = 1e12
#: ridge fits of an order >= 2 are tried from this many rows per unknown, with these penalties (times the mean
#: diagonal of the normal equations)
_RIDGE_ROWS_PER_UNKNOWN = 0.5
#: above this many unknowns a fit is wide: its factorizations dominate, so it has three penalties and no
#: unpenalized fit (a pseudo-inverse costs ten factorizations); above the second, four folds
_WIDE = 1000
_WIDE_RIDGES = (1e-4, 1e-3, 1e-2)
_FEWER_FOLDS = 3000
_WIDE_FOLDS = 4
_RIDGES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def n_unknowns(n: int, order: int) -> int:
    """``1 + n + C(n, 2) + ... + C(n, order)``: the coefficients of a polynomial of that order.

    Examples
    --------
    >>> n_unknowns(16, 2)
    137
    """
    return sum(math.comb(n, s) for s in range(order + 1))


def surrogate_candidates(n: int, order: int, rows: int, fixed: int | None = None) -> list[tuple[int, float]]:
    """The surrogates tried, ``(order l, ridge)``: every order whose polynomial ``rows`` coalitions fit with room
    to spare (two rows per unknown), and for orders ``l >= 2`` with at least half a row per unknown, ridge fits over
    a grid of penalties (they shrink the interaction terms towards the additive fit); each order only where its
    factorizations cost at most ``1e12`` multiply-adds (:func:`fit_work`). A wide fit (over 1,000 unknowns: the
    pairs of 45 players or more) has three penalties and no unpenalized fit; over 3,000 (the pairs of 77 or more),
    4 folds. The correction keeps each estimate unbiased; the one with the least estimated variance is taken. An
    order asked for (``fixed``) is fitted whatever it costs.

    Examples
    --------
    >>> surrogate_candidates(30, 2, 900)[:3]          # 466 unknowns at order 2: only ridge fits of order 2
    [(0, 0.0), (1, 0.0), (2, 0.0001)]
    >>> surrogate_candidates(16, 2, 1500, fixed=1)
    [(1, 0.0)]
    >>> surrogate_candidates(100, 2, 20000)            # pairs of 100 players: a wide fit
    [(0, 0.0), (1, 0.0), (2, 0.0001), (2, 0.001), (2, 0.01)]
    >>> surrogate_candidates(1200, 1, 5000)            # order 1 has no penalty: fitted plain, however wide
    [(0, 0.0), (1, 0.0)]
    """
    out = []
    for ell in range(order + 1) if fixed is None else [fixed]:
        p = n_unknowns(n, ell)
        if fixed is not None:                      # asked for: fitted whatever it costs
            out.append((ell, 0.0))
            continue
        wide = p > _WIDE
        ridges = _WIDE_RIDGES if wide else _RIDGES
        plain = ell == 0 or (rows >= _ROWS_PER_UNKNOWN * p and (ell == 1 or not wide))     # order 1: no penalty
        ridged = ell >= 2 and rows >= _RIDGE_ROWS_PER_UNKNOWN * p
        if ell > 0 and fit_work(p, 10 * plain + ridged * len(ridges)) > _MAX_FIT_WORK:
            continue
        out += [(ell, 0.0)] * plain + [(ell, r) for r in ridges if ridged]
    return out


def folds_of(p: int) -> int:
    """Folds of the cross-fit of a surrogate of ``p`` unknowns: 8, or 4 over 3,000 unknowns (the pairs of 77 players
    or more), where the factorizations cost most (at 64 players 8 folds gave 0.24 and 0.33 where 4 gave 0.28 and
    0.37, at twice the time).

    Examples
    --------
    >>> folds_of(2081), folds_of(5051)
    (8, 4)
    """
    return _WIDE_FOLDS if p > _FEWER_FOLDS else _FOLDS


def fit_work(p: int, fits: int) -> float:
    """Multiply-adds of the factorizations of ``fits`` cross-fitted fits of ``p`` unknowns (one per fold and fit).

    Examples
    --------
    >>> f"{fit_work(5051, 3):.2e}"        # the pairs of 100 players, three penalties, 4 folds: fitted
    '5.15e+11'
    >>> f"{fit_work(7261, 3):.2e}"        # of 120 players: not
    '1.53e+12'
    """
    return folds_of(p) * fits * float(p) ** 3 / 3


def _log_size_mass(n: int, index: InteractionIndex, distribution: str) -> np.ndarray:
    """Size distribution of the design (the ends excluded: the driver evaluates them first): the Banzhaf family
    samples coalitions uniformly (Kernel Banzhaf's design), the Shapley family from the kernel ``distribution``."""
    if index.family != "banzhaf":
        return shapley_size_log_mass(n, distribution)
    out = SemivalueDesign(Semivalue.banzhaf(), n).log_q.copy()
    out[0] = out[-1] = -np.inf
    return out


def _kernel(n: int, index: InteractionIndex, sizes: np.ndarray) -> np.ndarray:
    """The regression weight ``mu`` of a coalition by size: the Shapley kernel (the ends, fitted exactly, get 1)
    or uniform (the Banzhaf family)."""
    if index.family == "banzhaf":
        return np.ones(sizes.shape)
    with np.errstate(over="ignore"):
        mu = np.exp(log_kernel_weight(n, np.clip(sizes, 1, n - 1)))
    return np.where((sizes == 0) | (sizes == n), 1.0, mu)


class _Rows:
    """The pooled sample with the ends (known exactly: weight 1, no sampling variance) and what every fit and
    correction reads of it, each computed once: sizes, kernel weights, random groups."""

    def __init__(self, solver: InteractionSolver) -> None:
        sample = merge(solver.samples, [s.n_draws for s in solver.samples])
        n = solver.n
        ends = np.zeros((2, n), dtype=bool)
        ends[1] = True
        self.Z = np.concatenate([ends, np.asarray(arrays.to_numpy(sample.coalitions), dtype=bool)])
        self.V = np.concatenate([solver.v0[None, :], solver.vN[None, :]] + solver.values)
        self.w = np.concatenate([[1.0, 1.0], np.exp(sample.log_weight)])
        self.fpc = np.concatenate([[0.0, 0.0], sample.fpc])
        self.certain = self.fpc <= 1e-12
        self.coverage = sample.coverage
        self.sizes = self.Z.sum(axis=1)
        self.mu = _kernel(n, solver.index, self.sizes) * self.w
        n_random = np.unique(sample.unit[sample.fpc > 1e-12]).size
        self.G = min(_GROUPS, n_random)
        self.unit = np.concatenate([[-2, -1], sample.unit])
        self.group = unit_groups(self.unit, np.concatenate([[-1, -1], sample.stratum]), solver.rng, max(self.G, 1))

    @property
    def n_rows(self) -> int:
        return int(self.Z.shape[0])

    def onehot(self) -> np.ndarray:
        """``(rows, G)`` membership of each random row in its group (rows taken with certainty: none)."""
        out = np.zeros((self.n_rows, max(self.G, 1)))
        rows = np.flatnonzero(~self.certain)
        out[rows, self.group[rows]] = 1.0
        return out


class InteractionSolver:
    """Absorbs coalition samples; gives interaction values ``(p, k)`` of :func:`subsets_up_to` ``(n, order)``
    and their standard errors."""

    def __init__(self, setup: Setup, surrogate: int | None = None) -> None:
        self.setup = setup
        asked: InteractionIndex = setup.semivalue
        self.index = asked.base                    # a matrix index: its base (SII, BII) estimated, then mapped
        self.n = setup.n_players
        self.rng = setup.solver_rng
        self.fixed_surrogate = surrogate
        self.subsets = subsets_up_to(self.n, self.index.order, 1)
        self.transform = asked.base_map(self.subsets) if asked.base is not asked else None
        self.samples: list[CoalitionSample] = []
        self.values: list[np.ndarray] = []

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.v0, self.vN = np.asarray(v0, float), np.asarray(vN, float)

    def absorb(self, sample: CoalitionSample, values: np.ndarray) -> None:
        self.samples.append(sample)
        self.values.append(np.asarray(arrays.to_numpy(values), dtype=float).reshape(sample.n_rows, -1))

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        rows = _Rows(self)
        info: dict = {"n_samples": rows.n_rows - 2}
        candidates = surrogate_candidates(self.n, self.index.order, rows.n_rows, self.fixed_surrogate)
        values, stderr, best, spread, block = chosen(self, rows, candidates)
        if self.transform is not None:             # the map of the base's estimate; errors from its mapped replicates
            values = self.transform @ values
            stderr = _reduce(self.transform @ block, 1, rows.V.shape[1], rows.G)[0][1]
        info["surrogate_order"], info["surrogate_ridge"] = candidates[best]
        # the estimated variance of the plain stratified estimate (a constant surrogate) over the chosen one's
        if candidates[0] == (0, 0.0) and spread[best] > 0 and np.isfinite(spread[0]):
            info["surrogate_gain"] = round(spread[0] / spread[best], 4)
        if rows.coverage == "partial":
            stderr = np.full_like(values, np.inf)
        else:
            self._unestimable(rows, stderr, info)
        return values, stderr, info

    def _unestimable(self, rows: _Rows, stderr: np.ndarray, info: dict) -> None:
        """Infinite error bars, said in ``info["stderr"]``, for the values that are not exact (a size sampled at
        random weighs in them) and either rest on fewer than two drawn sampling units
        (:func:`~fairshare.engine.interaction_sums.bearing_units`: the Moebius transform of ``S`` weighs only the
        coalitions inside ``S``, so its correction may hold one drawn coalition or none), or whose random groups
        show no spread at all (every drawn coalition it weighs has the surrogate's value: a rare large one unseen).
        Either way the sample cannot show the error, as a regression with fewer than two residual degrees of
        freedom cannot; an error bar of 0 would call the value exact."""
        units, exact = bearing_units(rows.Z, rows.certain, rows.unit, self.index.coalition_weights(self.n),
                                     self.subsets)
        thin = (units < 2) & ~exact
        if self.transform is not None:
            thin = (abs(self.transform) @ thin.astype(float)) > 0
            exact = (abs(self.transform) @ (~exact).astype(float)) == 0
        few = (thin[:, None] | (stderr == 0)) & ~exact[:, None]
        if few.any():
            stderr[few] = np.inf
            info["stderr"] = (f"not estimable for {int(few.any(axis=1).sum())} of the {few.shape[0]} values: fewer "
                              "than two drawn sampling units hold a coalition that weighs in them, or those drawn "
                              "show no spread")

    def _estimate(self, rows: _Rows, candidates: list[tuple[int, float]]) -> tuple:
        """``(values, stderr, best, spreads, totals)`` of the surrogate whose corrected estimate has the least
        estimated variance (``spreads``: every candidate's), with the correction's totals of its residuals (what a
        map of the index needs for its error bars)."""
        fits = self._surrogates(rows, candidates)
        total = self._totals(rows, [fit[1:] for fit in fits])
        k = rows.V.shape[1]
        corrections = _reduce(total, len(fits), k, rows.G)
        if rows.G < _FOLDS:
            # fitted in-sample: a fit with fewer than two residual degrees of freedom (nearly) goes through every row,
            # its residuals show nothing (as the linear estimators' regressions), so it cannot be the one taken
            corrections = [(v, np.full_like(se, np.inf)) if ell and rows.n_rows - n_unknowns(self.n, ell) < 2
                           else (v, se) for (v, se), (ell, _) in zip(corrections, candidates)]
        spread = [float(np.sum(se ** 2)) if np.all(np.isfinite(se)) else np.inf for _, se in corrections]
        best = int(np.argmin(spread))
        width = k * (1 + max(rows.G, 1))
        return (fits[best][0] + corrections[best][0], corrections[best][1], best, spread,
                total[:, best * width:(best + 1) * width])

    # ------------------------------------------------------------------------------------------ fit
    def _surrogates(self, rows: _Rows, candidates: list[tuple[int, float]]) -> list[tuple[np.ndarray, ...]]:
        """For each candidate ``(order, ridge)``: the exact index of the surrogate and the weighted residuals the
        correction sums and the held-out residuals, cross-fitted (:mod:`fairshare.engine.interaction_fit`): each
        fold's fit is trained on the other folds (and the rows taken with certainty); the folds' mean fit's residuals
        are summed exactly over the drawn rows and the held-out residuals stand for the coalitions not drawn
        (:func:`~fairshare.engine.interaction_fit.fold_weights`), so the correction stays unbiased and its error bars
        honest whatever the fit does. The normal equations of an order are built once for every fold and penalty."""
        k = rows.V.shape[1]
        out: dict[tuple[int, float], tuple[np.ndarray, ...]] = {}
        for ell in sorted({c[0] for c in candidates}):
            ridges = [c[1] for c in candidates if c[0] == ell]
            if ell == 0:                                      # a constant: its index is 0
                plain = rows.V - self.v0[None, :]
                out[(0, 0.0)] = np.zeros((self.subsets.shape[0], k)), plain * rows.w[:, None], plain
                continue
            folds = folds_of(n_unknowns(self.n, ell)) if rows.G >= _FOLDS else 1
            fold = np.where(rows.certain, -1, rows.group % folds)
            systems = FoldSystems(rows.Z, rows.V, rows.mu, fold, folds, ell, shapley=self.index.family != "banzhaf")
            weights = (fold_weights(rows.w, rows.fpc, rows.certain, folds) if folds > 1
                       else (rows.w * ~rows.certain, rows.w * rows.certain))
            fits = cross_fit(systems, ridges, self.index, self.subsets, rows.certain, weights)
            out.update({(ell, r): fits[r] for r in ridges})
        return [out[c] for c in candidates]

    def _totals(self, rows: _Rows, residuals: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """The totals of the index of each candidate's weighted residuals ``y`` (the correction) and the
        Horvitz-Thompson totals of its held-out residuals by group (their spread: the error bars; a fit's residuals
        at its own training rows would understate it), all in one pass over the sample (``(p, columns)``; columns:
        per candidate, the estimate (k) and each group's share (G k)), which :func:`_reduce` makes estimates and
        standard errors; linear, so a map of the index maps them."""
        n, ix, G = self.n, self.index, rows.G
        k = rows.V.shape[1]
        onehot = rows.onehot()
        blocks = []
        for y, held in residuals:                 # the weighted residuals; the groups' spread: the held-out ones
            yg = held * (rows.w * np.sqrt(rows.fpc))[:, None]
            blocks += [y, (yg[:, None, :] * onehot[:, :, None]).reshape(rows.n_rows, -1)]
        cols = np.concatenate(blocks, axis=1)
        return index_sums(rows.Z, rows.sizes, cols, ix.coalition_weights(n), self.subsets)


def _reduce(total: np.ndarray, count: int, k: int, G: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(estimate, standard error)`` of each of the ``count`` residuals whose totals
    (:meth:`InteractionSolver._totals`) ``total`` holds, from ``G`` random groups; 0 where the groups' replicates
    agree but for rounding (contributions that cancel: no spread, which :meth:`InteractionSolver._unestimable`
    reads)."""
    out, width = [], k * (1 + max(G, 1))
    for i in range(count):
        block = total[:, i * width:(i + 1) * width]
        values = block[:, :k]
        if G < 2:
            out.append((values, np.zeros_like(values) if G == 0 else np.full_like(values, np.inf)))
            continue
        reps = G * block[:, k:].reshape(-1, G, k)
        deviations = reps - reps.mean(axis=1, keepdims=True)
        flat = np.abs(deviations).max(axis=1) <= 1e-9 * np.abs(reps).max(axis=1)
        out.append((values, np.where(flat, 0.0, replicate_stderr(deviations, axis=1))))
    return out


# ------------------------------------------------------------------------------------------ registry
_OPTIONS = (
    Option("distribution", "kernel", "size distribution of the Shapley family's design (the Banzhaf family samples "
           "coalitions uniformly)", allowed=tuple(DISTRIBUTIONS)),
    Option("paired", True, "draw coalitions with their complements", kind="bool"),
)


def _design(setup: Setup) -> CoalitionDesign:
    opts = setup.options
    ix = setup.semivalue
    sizes = _log_size_mass(setup.n_players, ix, opts["distribution"])
    return CoalitionDesign(setup.sampler_rng, setup.n_players, sizes, replacement=False,
                           paired=opts["paired"] and ix.family != "moebius")


def _solver(setup: Setup) -> InteractionSolver:
    return InteractionSolver(setup, surrogate=setup.options.get("surrogate_order"))


def min_budget(n: int, ix: InteractionIndex, opts: dict) -> int:
    """The smallest budget of ``iq-regression`` and ``iq-stratified``: the two ends (``v(empty)`` and ``v(N)``,
    taken whole before any sampling) plus one coalition per value, ``C(n, 1) + ... + C(n, order)``, rounded up to
    whole complementary pairs when the design is paired; never more than the ``2^n`` coalitions. With fewer
    coalitions than values, the values are not determined by what was evaluated.

    Examples
    --------
    >>> from fairshare.indices.interactions import InteractionIndex
    >>> min_budget(12, InteractionIndex("k-sii", 2), {"paired": True})      # 2 + 12 + 66
    80
    >>> min_budget(12, InteractionIndex("k-sii", 12), {"paired": True})     # every coalition
    4096
    """
    values = n_unknowns(n, ix.order) - 1
    unit = 2 if opts.get("paired", True) and ix.family != "moebius" else 1
    return min(2 + unit * -(-values // unit), 1 << n)


def _validate(opts: dict, n: int, ix: Any) -> None:
    ell = opts.get("surrogate_order")
    if ell is not None and ell > ix.order:
        raise ValueError(f"surrogate_order={ell} exceeds the order {ix.order} of the index")


SPECS = [
    MethodSpec(
        name="iq-regression",
        indices=("interactions",),
        description="interaction values of any index: the exact index of a cross-fitted weighted least-squares "
                    "polynomial (plain or ridge, the order and penalty with the least estimated variance) plus the "
                    "unbiased stratified correction of its residual; distinct paired coalitions, sizes taken whole "
                    "where the kernel asks for more than they hold",
        sampler=_design, solver=_solver,
        options=_OPTIONS + (Option("surrogate_order", None, "order of the polynomial surrogate, unpenalized "
                                   "(None: each order and ridge penalty the sample affords, the one with the least "
                                   "estimated variance)", kind="int",
                                   minimum=0, none_ok=True),),
        min_budget=min_budget, default_for={"interactions": 20}, validate=_validate,
    ),
    MethodSpec(
        name="iq-stratified",
        indices=("interactions",),
        description="interaction values of any index by stratified sampling without a surrogate: strata by size, "
                    "every coalition updating every subset (as SVARM-IQ), unbiased",
        sampler=_design, solver=partial(InteractionSolver, surrogate=0),
        options=_OPTIONS, min_budget=min_budget,
    ),
]
