"""The regression formulations the linear estimators solve: which rows, weights and targets a sampled
coalition gives, and how a solution becomes values.

*Shapley kernel* (unified framework, Theorem 2.1): rows ``z_S``, kernel weights
``k(S) = (d - 1) / (C(d, |S|) |S| (d - |S|))``, targets ``v(S) - v(empty) - lambda |S|``; the solution
``x`` is constrained to ``x ⊥ 1`` and the values are ``x + alpha`` with ``alpha = (v(N) - v(empty)) / d``.
The matrix-vector form is ``d / (d - 1) P sum_S k(S) z_S y_S``.

*Semivalue* (Kernel Banzhaf paper, Lemma 3.4): see :class:`SemivalueDesign`; Banzhaf values are the case
``s = 1, t = 1/2``.

*Product measures* (weighted Banzhaf and beta values, :class:`MeasureRegression`): where each player joins
independently with probability ``u``, the weighted Banzhaf value is the slope of the least-squares fit of ``v`` on
``z_S`` with a free intercept, every coalition weighted by ``mu_u(S) = u^|S| (1 - u)^(d - |S|)`` (Banzhaf values'
regression, ``u = 1/2``, at any ``u``); a beta value is a quadrature of them over ``u``.

Both give design rows ``a_S = s_{|S|} z_S - t_{|S|} 1`` that :mod:`fairshare.engine.solve` handles
alike; :class:`~fairshare.engine.regression.RegressionSolver` is the one solver over them.
"""

from __future__ import annotations

import functools

from typing import Any

import numpy as np

from .._core import arrays
from .._core.combinatorics import log_binom, logsumexp
from .samplers.sample import CoalitionSample
from ..indices.semivalues import Semivalue
from .node_slopes import node_slopes
from .solve import projected

__all__ = ["log_kernel_weight", "SemivalueDesign", "ShapleyKernel", "SemivalueRegression", "MeasureRegression",
           "Rows", "formulation", "measure_nodes", "fits_measures", "pairs_possible",
           "MEASURE_DEGREE"]

#: the highest degree in ``u`` a beta value's quadrature integrates exactly (16 nodes): every game whose Moebius terms
#: hold at most 32 players (its weighted Banzhaf values are polynomials of degree 31 in ``u``), all games of <= 32
MEASURE_DEGREE = 31
#: units of the pooled variance a player's own is moderated with (:meth:`MeasureRegression.honest_stderr`; one
#: measured 0.85-0.89 where two gave 0.91-0.94, at 20 evaluations of 10 players)
_PRIOR_UNITS = 2.0
#: drawn units holding a player from which its own variance stands unmoderated (they show its error: 0.94-0.97 at
#: 40 evaluations of 10 players either way; the error bars of larger samples are as they were)
_OWN_UNITS = 12


def log_kernel_weight(d: int, sizes: np.ndarray) -> np.ndarray:
    """``log k(S)`` for coalitions of the given sizes (``-inf`` for the empty and full coalitions).

    Examples
    --------
    >>> round(float(np.exp(log_kernel_weight(4, np.array([1]))[0])), 12)   # 3 / (4 * 1 * 3)
    0.25
    """
    from .._core.combinatorics import log_binom

    h = np.asarray(sizes, dtype=float)
    with np.errstate(divide="ignore"):
        return np.log(d - 1.0) - log_binom(d, h) - np.log(h) - np.log(d - h)



def _log_abs_diff(log_a: np.ndarray, log_b: np.ndarray) -> np.ndarray:
    """``log |exp(a) - exp(b)|`` elementwise (``-inf`` where equal)."""
    hi, lo = np.maximum(log_a, log_b), np.minimum(log_a, log_b)
    with np.errstate(invalid="ignore"):                           # both zero: their difference is zero too
        gap = np.where(np.isneginf(hi), -np.inf, lo - hi)
    with np.errstate(divide="ignore"):
        return np.where(np.isneginf(hi), -np.inf, hi + np.log(-np.expm1(gap)))


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
        alive = np.isfinite(scale)                       # sizes no coalition of the semivalue weighs: left out
        u = np.where(alive, np.exp(log_prev - np.where(alive, scale, 0.0)), 0.0)
        v = np.where(alive, np.exp(log_here - np.where(alive, scale, 0.0)), 0.0)
        c = self.b_n / (1.0 + n * self.b_n)
        bracket = h * u**2 + (n - h) * v**2 - c * (h * u - (n - h) * v) ** 2
        with np.errstate(divide="ignore"):
            log_lev = self.log_a_n + 2 * (scale - self.log_a_n) + np.log(np.maximum(bracket, 0.0))
        log_q = log_binom(n, h) + log_lev
        self.log_q = log_q - logsumexp(log_q[np.isfinite(log_q)])

    def transform(self, x: np.ndarray) -> np.ndarray:
        """``(I + b_n 11^T) x``."""
        return x + self.b_n * x.sum(axis=0, keepdims=True)



class Rows:
    """Design rows of a sample: ``a_j = s_j z_j - t_j 1`` with log weights and targets, and how to read the solution."""

    def __init__(self, s: np.ndarray, t: np.ndarray, log_w: np.ndarray, y: np.ndarray, collapse_pairs: bool) -> None:
        self.s, self.t, self.log_w, self.y, self.collapse_pairs = s, t, log_w, y, collapse_pairs


class ShapleyKernel:
    """The Shapley regression of Theorem 2.1 (see the module docstring)."""

    constrained = True
    symmetric = True
    #: its rows span the additive games (a surrogate needs no product of one player)
    spans_additive = True

    def __init__(self, d: int, lam: Any) -> None:
        self.d = d
        self.lam = lam

    def _lam(self, alpha: np.ndarray) -> np.ndarray:
        return alpha if isinstance(self.lam, str) else np.broadcast_to(np.asarray(self.lam, dtype=float), alpha.shape)

    def rows(self, sample: CoalitionSample, target: np.ndarray, total: np.ndarray) -> Rows:
        """``target``: ``v(S) - v(empty)`` (minus a control variate), ``total``: ``v(N) - v(empty)`` (the same)."""
        sizes = np.asarray(arrays.to_numpy(sample.sizes), dtype=float)
        alpha = np.asarray(arrays.to_numpy(total), dtype=float) / self.d
        y = target - arrays.like(np.outer(sizes, self._lam(alpha)), target)
        r = sample.n_rows
        return Rows(np.ones(r), np.zeros(r), sample.log_weight + log_kernel_weight(self.d, sizes), y, True)

    def center(self, sample: CoalitionSample) -> bool:
        return False

    def values(self, x: np.ndarray, total: np.ndarray) -> np.ndarray:
        return x + arrays.like((np.asarray(arrays.to_numpy(total), dtype=float) / self.d)[None, :], x)

    def transform(self, x: np.ndarray) -> np.ndarray:
        return x

    def matrix_vector(self, log_scale: float) -> Any:
        d = self.d
        scale = np.exp(log_scale)
        return lambda c: d / (d - 1.0) * projected(c * scale)


class SemivalueRegression:
    """The regression of Lemma 3.4 for any semivalue (Banzhaf values: ``s = 1``, ``t = 1/2``)."""

    constrained = False

    def __init__(self, sv: Semivalue, d: int) -> None:
        self.design = SemivalueDesign(sv, d)
        self.symmetric = self.design.symmetric
        self.d = d
        # rows s_h z - t_h 1 span the additive games only where s and t do not depend on the size (Banzhaf values)
        inner_s, inner_t = self.design.log_s[1:-1], self.design.log_t[:-1]          # (empty for one player)
        self.spans_additive = bool((inner_s.size == 0 or np.ptp(inner_s) < 1e-12)
                                   and (inner_t.size == 0 or np.ptp(inner_t) < 1e-12))

    def rows(self, sample: CoalitionSample, target: np.ndarray, total: np.ndarray) -> Rows:
        sizes = np.asarray(arrays.to_numpy(sample.sizes), dtype=np.int64)
        log_s, log_t = self.design.log_s[sizes], self.design.log_t[sizes]
        shift = float(np.max(log_s[np.isfinite(log_s)]))
        self._shift = shift
        # rows and targets scaled alike by exp(-shift): the least-squares solution is unchanged
        return Rows(np.exp(log_s - shift), np.exp(log_t - shift), sample.log_weight, target * np.exp(-shift),
                    self.symmetric)

    def center(self, sample: CoalitionSample) -> bool:
        """Pairs cancel the mean of v; otherwise a free intercept does."""
        return not (sample.paired and self.symmetric)

    def values(self, x: np.ndarray, total: np.ndarray) -> np.ndarray:
        return self.design.transform(x)

    def transform(self, x: np.ndarray) -> np.ndarray:
        return self.design.transform(x)

    def matrix_vector(self, log_scale: float) -> Any:
        factor = np.exp(log_scale + 2.0 * self._shift + self.design.log_a_n)     # phi = a_n sum_S a_S v(S)
        return lambda c: factor * c


class MeasureRegression:
    """Semivalues of a known measure on the inclusion probability ``u`` (weighted Banzhaf values: one point; beta
    values: a quadrature of it), fitted under the product measures.

    Under ``mu_u`` (each player in with probability ``u``, independently) the players' indicators are independent,
    so the slope of ``v`` on ``z_i`` in the least-squares fit with a free intercept is ``Cov(v, z_i) / (u (1 - u)) =
    E[v | i in S] - E[v | i not in S]``, the weighted Banzhaf value ``phi_u``. A semivalue of measure ``m`` is
    ``int phi_u dm(u)``: with nodes ``u_k`` and weights ``c_k`` integrating polynomials of degree ``d - 1`` exactly
    (``phi_u`` is one; at most ``MEASURE_DEGREE``), ``sum_k c_k phi_{u_k}``.

    The rows are those of the mixture ``nu = sum_k c_k mu_{u_k}``: ``z_S`` with a free intercept, weighted by
    ``nu(S)`` times the sample's Horvitz-Thompson weight, sizes from the mixture of each node's leverage scores,
    ``C(d, h) mu_u(h) (1 + (h (1 - u)^2 + (d - h) u^2) / (u (1 - u)))`` (uniform coalitions at ``u = 1/2``, Kernel
    Banzhaf's design). A fitted function ``g`` (the additive fit, or with a surrogate) has its values exactly (its
    slopes, and the surrogate's values); with several nodes, :meth:`correction` adds ``sum_k c_k`` times each node's
    slopes of the residual ``v - g``, fitted under ``mu_{u_k}`` (with one node, the fit's residual has none).
    Measured on the tables of ``bench default`` (8-20 players, 5 rows x 5 seeds, ``auto`` before and after, with the
    surrogate and at 100n the unpenalized pairs of ``even_model="auto"``): weighted Banzhaf values (``u = 0.3``)
    median 92x below MSR (2.4-14,000x); beta(4, 1) / beta(16, 1) median 24x / 16x below Lemma 3.4's rows (the
    surrogate regression on both; 17 cells each), below 1 on 2 cells where both errors are under 1.1e-6 (pima at 30n,
    240 of its 256 coalitions). A regression only (no matrix-vector form).

    Examples
    --------
    >>> form = MeasureRegression(np.array([0.3]), np.array([1.0]), 4)
    >>> round(float(np.exp(form.log_q).sum()), 12), bool(np.isfinite(form.log_q).all()), form.corrects
    (1.0, True, False)
    """

    constrained = False
    symmetric = False
    spans_additive = True
    _shift = 0.0                   # the targets keep their scale (the semivalue rows' shift is zero here)

    def __init__(self, nodes: np.ndarray, weights: np.ndarray, d: int) -> None:
        self.nodes, self.weights, self.d = np.asarray(nodes, dtype=float), np.asarray(weights, dtype=float), d
        h = np.arange(d + 1, dtype=float)
        u = self.nodes[:, None]
        self.log_mu = h * np.log(u) + (d - h) * np.log1p(-u)             # (K, d + 1): one coalition of size h
        with np.errstate(divide="ignore"):
            log_c = np.log(self.weights)[:, None]
        self.log_nu = logsumexp(log_c + self.log_mu, axis=0)
        lift = (h * (1.0 - u) ** 2 + (d - h) * u ** 2) / (u * (1.0 - u))
        log_q = logsumexp(log_c + log_binom(d, h) + self.log_mu + np.log1p(lift), axis=0)
        self.log_q = log_q - logsumexp(log_q)
        self.center_value = float(self.weights @ self.nodes)

    @property
    def corrects(self) -> bool:
        """Whether the residual of a fit needs :meth:`correction` (more than one node)."""
        return self.nodes.size > 1

    def rows(self, sample: CoalitionSample, target: np.ndarray, total: np.ndarray) -> Rows:
        sizes = np.asarray(arrays.to_numpy(sample.sizes), dtype=np.int64)
        r = sample.n_rows
        return Rows(np.ones(r), np.full(r, self.center_value), sample.log_weight + self.log_nu[sizes], target, False)

    def center(self, sample: CoalitionSample) -> bool:
        """A free intercept: the fit is on ``z`` with the mean of ``v`` taken out."""
        return True

    def values(self, x: np.ndarray, total: np.ndarray) -> np.ndarray:
        return x

    def transform(self, x: np.ndarray) -> np.ndarray:
        return x

    def correction(self, sample: CoalitionSample, residual: np.ndarray, rng: np.random.Generator,
                   errors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """``sum_k c_k`` times the slopes of ``residual`` (``(m, k)``, a fit's on the sample's rows) under each node's
        measure (:func:`~fairshare.engine.node_slopes.node_slopes`), their standard errors from ``errors`` in place
        of the residual where given (a fit's leave-one-out residuals: its own residuals are too small where it has
        nearly as many unknowns as rows), and the weight of the nodes the sample cannot determine (left out)."""
        return node_slopes(sample.coalitions, sample.log_weight, self.log_mu, self.weights, residual,
                           residual if errors is None else errors, sample.unit, sample.stratum, sample.fpc, rng)

    def honest_stderr(self, sample: CoalitionSample, stderr: np.ndarray,
                      unknowns: int) -> tuple[np.ndarray, str | None]:
        """The standard errors of a fit of a random sample made honest where few sampling units carry a player.

        Under a measure far from ``u = 1/2`` each player's value rests on the few coalitions that hold it in its rare
        state (in, for ``u < 1/2``): a level of small coalitions is drawn nearly whole (inclusion probabilities near
        1, finite-population factors near 0, so the units drawn show almost no error) and a player whose coalition
        of it was missed, or whose one or two coalitions of the next level happened to agree, got error bars near 0.
        Measured (10 players, 40 seeds, two games): 2 error bars covered 0.60-0.84 of beta(16, 1) and weighted
        Banzhaf (``w = 0.05``) values at 17-30 evaluations, with errors of 5-50 error bars.

        Two corrections. With fewer than ``2 unknowns / 3`` units drawn with probability at most 1/2 and the draws'
        finite-population factors adding up to fewer than the unknowns (the sample is mostly what the design took
        whole or nearly), infinite error bars and a note, as for a design that took sizes whole. Otherwise the
        variance of a player held in its rare state by fewer than ``_OWN_UNITS`` drawn units is moderated by two
        units of the variance pooled over the players (empirical Bayes, as
        :func:`~fairshare.engine.solve.moderated_variance`), scaled by the inverse of the player's information in the
        sample (``sum_j w_j (z_ij - zbar_i)^2`` in the fit's weights: a player whose coalitions were missed has less).
        After: 0.91-0.98 at 17-40 evaluations (17: finite in 15-18 of 40 runs; 14: none), beta(4, 1) and ``w = 0.3``
        as good (0.90-0.99); an additive game's zero error bars stay zero.

        Parameters
        ----------
        sample : CoalitionSample
            The pooled sample the fit used (coverage random).
        stderr : (d, k) ndarray
            The fit's standard errors.
        unknowns : int
            The fit's unknowns (``d + 1``).

        Returns
        -------
        stderr : (d, k) ndarray
        note : str or None
            Why the error bars are infinite, where they are.
        """
        fpc = np.asarray(sample.fpc, dtype=float)
        unit = np.asarray(arrays.to_numpy(sample.unit))
        _, first, inverse = np.unique(unit, return_index=True, return_inverse=True)
        open_units = int((fpc[first] >= 0.5).sum())
        if 3 * open_units < 2 * unknowns and float(fpc[first].sum()) < unknowns:
            return np.full_like(stderr, np.inf), (
                f"not estimable: {open_units} sampling units drawn with probability at most 1/2 for {unknowns} "
                "unknowns; the sizes this measure weighs were taken (nearly) whole, and a coalition of them missed "
                "is an error the draws cannot show")
        if not np.all(np.isfinite(stderr)):
            return stderr, None
        Z = np.asarray(arrays.to_numpy(sample.coalitions), dtype=bool)
        rare = Z if self.center_value <= 0.5 else ~Z
        held = np.zeros((first.size, Z.shape[1]))
        np.add.at(held, inverse.ravel()[fpc > 1e-12], rare[fpc > 1e-12])
        count = (held > 0).sum(axis=0).astype(float)[:, None]                  # drawn units holding each player
        log_w = sample.log_weight + self.log_nu[Z.sum(axis=1)]
        w = np.exp(log_w - log_w.max())
        information = w @ (Z - (w @ Z) / w.sum()) ** 2
        var = stderr ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            prior = (var * information[:, None]).mean(axis=0, keepdims=True) / information[:, None]
            prior = np.where(information[:, None] > 0, prior, np.inf)
        moderated = np.sqrt((count * var + _PRIOR_UNITS * prior) / (count + _PRIOR_UNITS))
        return np.where(count < _OWN_UNITS, moderated, stderr), None


def fits_measures(sv: Semivalue, d: int) -> bool:
    """Whether :func:`formulation` fits ``sv`` on ``d`` players under product measures (:func:`measure_nodes` is not
    None), without building the nodes.

    Examples
    --------
    >>> fits_measures(Semivalue.beta_shapley(4, 1), 10), fits_measures(Semivalue.banzhaf(), 10)
    (True, False)
    """
    measure = getattr(sv, "measure", None)
    if sv.is_shapley or sv.is_banzhaf or measure is None or d < 2:
        return False
    return measure[0] != "point" or 0.0 < float(measure[1]) < 1.0


def pairs_possible(sv: Semivalue, d: int) -> bool:
    """Whether the regression :func:`formulation` gives ``sv`` can take complementary pairs (symmetric rows): the
    Shapley kernel and Lemma 3.4's rows of a symmetric semivalue; never the product measures' rows.

    Examples
    --------
    >>> pairs_possible(Semivalue.shapley(), 6), pairs_possible(Semivalue.beta_shapley(2, 2), 6)
    (True, False)
    """
    return bool(sv.is_shapley or (not fits_measures(sv, d) and SemivalueDesign(sv, d).symmetric))


def measure_nodes(sv: Semivalue, d: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The nodes and weights :class:`MeasureRegression` fits ``sv`` on ``d`` players with: a weighted Banzhaf value's
    point (``0 < w < 1``), a beta value's quadrature exact to degree ``min(d - 1, MEASURE_DEGREE)``; None for Shapley
    and Banzhaf values (their own regressions), user weights and leave-one-out.

    Examples
    --------
    >>> measure_nodes(Semivalue.weighted_banzhaf(0.3), 10)
    (array([0.3]), array([1.]))
    >>> u, c = measure_nodes(Semivalue.beta_shapley(4, 1), 10)
    >>> u.size, round(float(c.sum()), 12), measure_nodes(Semivalue.banzhaf(), 10)
    (5, 1.0, None)
    """
    if not fits_measures(sv, d):
        return None
    if sv.measure[0] == "point":
        return np.array([float(sv.measure[1])]), np.array([1.0])
    return sv.quadrature(min(d - 1, MEASURE_DEGREE))


def formulation(sv: Semivalue, d: int, lam: Any = "alpha") -> Any:
    """The regression a linear estimator solves for ``sv`` on ``d`` players: the Shapley kernel (``lam``: its
    lambda), the product measures' for weighted Banzhaf and beta values (:func:`measure_nodes`), Lemma 3.4's for
    every other semivalue.

    Examples
    --------
    >>> type(formulation(Semivalue.beta_shapley(4, 1), 5)).__name__, type(formulation(Semivalue.banzhaf(), 5)).__name__
    ('MeasureRegression', 'SemivalueRegression')
    """
    if sv.is_shapley:
        return ShapleyKernel(d, lam)
    measure = _measure_regression(sv, d)
    return SemivalueRegression(sv, d) if measure is None else measure


@functools.lru_cache(maxsize=64)
def _measure_regression(sv: Semivalue, d: int) -> MeasureRegression | None:
    """The product measures' regression of ``sv`` on ``d`` players, or None: built once (its quadrature and weights
    are read, never written; three estimator steps ask for it)."""
    measure = measure_nodes(sv, d)
    return None if measure is None else MeasureRegression(*measure, d)
