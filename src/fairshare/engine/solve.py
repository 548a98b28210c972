"""Sampled least-squares and matrix-vector solvers shared by the Shapley, Banzhaf and semivalue estimators.

Every regression formulation in the papers has design rows ``a_S = s_{|S|} z_S - t_{|S|} 1``
(``z_S`` the indicator of ``S``): Shapley in the projected space (``s = 1, t = 0``, solution
constrained to sum to zero), Banzhaf (``s = 1, t = 1/2``) and the probabilistic values of the
Kernel Banzhaf paper, Lemma 3.4 (``s = (p_{h-1} + p_h) / a_n``, ``t = p_h / a_n``). A sampled
problem is a set of such rows with Horvitz-Thompson weights and targets; the solvers never
build more than one block of dense rows at a time.

A complementary pair ``(S, N \\ S)`` has ``a_complement = -a_S`` for every symmetric formulation
(after projection for Shapley), so it is solved as one row with twice the weight and target
``(y_S - y_complement) / 2``.

Error bars: the estimate is linearized around the solution (sandwich form) and the variance of
the weighted sum is estimated from random groups of sampling units, balanced across coalition
sizes and scaled by each unit's finite-population factor (units taken with certainty add none).
Two small-sample corrections keep them honest where few samples are left for the error: each
fitted row's residual is divided by ``1 - h_j`` (``h_j`` its leverage in the weighted fit: a row
the fit passes through exactly says nothing about the error, and an exactly determined system gets
infinite error bars), and with ``G`` groups the error is scaled by Student's ``t_{G-1}`` quantile
over the normal one, so that two standard errors are a 95% interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import arrays
from .samplers.sample import CoalitionSample

__all__ = ["Design", "Linearized", "gram", "indicator_product", "solve_regression", "solve_matrix_vector",
           "group_stderr", "projected", "merge", "subsample", "small_sample_factor", "unit_groups", "replicate_stderr",
           "moderated_variance", "without_rounding", "coalition_leverage", "MAX_GROUPS", "AGREEING_DRAWS"]

_BLOCK_ROWS = 4096
#: the fewest draws whose agreement (no draw of any player differs from its mean) is taken for an additive game's
#: exact values where nothing else can tell (a permutation walk's values add up whatever it saw): a pair of players
#: whose marginals depend on which of them comes first (a fair coin) agrees in all of t draws with probability
#: 2^(1 - t), under 5% from 6 draws (a unanimity game of 3 players of 10 at 2 permutations: 1 in 3)
AGREEING_DRAWS = 6
_EXACT_LEVERAGE_WORK = 2e9        # m d^2 up to which every row's leverage is solved exactly
#: the most random groups of sampling units an error bar is estimated from
MAX_GROUPS = 32


def projected(c: np.ndarray) -> np.ndarray:
    """``P c`` with ``P = I - 11^T / d`` (rows are players)."""
    return c - c.mean(axis=0, keepdims=True)


@dataclass
class Design:
    """Weighted sampled rows ``w_j``, ``a_j = s_j z_j - t_j 1`` and targets ``y_j`` (one column per output)."""

    Z: np.ndarray          # (r, d) bool
    s: np.ndarray          # (r,)
    t: np.ndarray          # (r,)
    w: np.ndarray          # (r,)
    y: np.ndarray          # (r, k)
    fpc: np.ndarray        # (r,)
    unit: np.ndarray       # (r,)
    stratum: np.ndarray    # (r,)
    center: np.ndarray | None = None   # (d,) subtracted from every row: a free intercept (see ``centered``)
    paired: bool = False               # complementary pairs collapsed into one row each (S's and N \\ S's alike)

    @classmethod
    def build(cls, sample: CoalitionSample, s: np.ndarray, t: np.ndarray, w: np.ndarray, y: np.ndarray,
              collapse_pairs: bool = True) -> Design:
        """Rows of ``sample`` (pairs collapsed when the sample is paired and ``collapse_pairs``); on the sample's
        device when its coalitions are a torch tensor."""
        Z = sample.coalitions
        if arrays.is_tensor(Z):
            s, t, w = (arrays.like(np.asarray(v, dtype=float), Z) for v in (s, t, w))
            y = arrays.like(y, Z)
        if sample.paired and collapse_pairs:
            return cls(Z[0::2], s[0::2], t[0::2], 2.0 * w[0::2], 0.5 * (y[0::2] - y[1::2]), sample.fpc[0::2],
                       sample.unit[0::2], sample.stratum[0::2], paired=True)
        return cls(Z, s, t, w, y, sample.fpc, sample.unit, sample.stratum)

    @property
    def n_players(self) -> int:
        return int(self.Z.shape[1])

    def blocks(self):
        """Dense design rows ``a_j``, a block at a time."""
        for start in range(0, self.Z.shape[0], _BLOCK_ROWS):
            rows = slice(start, start + _BLOCK_ROWS)
            block = self.Z[rows] * self.s[rows, None] - self.t[rows, None]
            yield rows, block if self.center is None else block - self.center

    def centered(self) -> Design:
        """The same rows with a free intercept: rows and targets minus their weighted means.

        For formulations whose full design has ``A^T 1 = 0`` (Banzhaf and every semivalue of
        Lemma 3.4) the intercept of the full problem is the mean of ``v`` and leaves ``x`` unchanged;
        in a sample without pairs it keeps the mean of ``v`` from leaking into ``x``.
        """
        total = self.w.sum()
        mean_row = self.weighted_sum(self.w[:, None]).ravel() / total
        y = self.y - (self.w[:, None] * self.y).sum(axis=0) / total
        return Design(self.Z, self.s, self.t, self.w, y, self.fpc, self.unit, self.stratum, mean_row, self.paired)

    def group_sums(self, U: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
        """``sum_{j in g} U_j a_j`` for every group: ``(G, d, k)``."""
        k = U.shape[1]
        spread = arrays.zeros((U.shape[0], n_groups * k), U)
        rows = arrays.like(np.arange(U.shape[0])[:, None], U)
        spread[rows, arrays.like(group[:, None] * k + np.arange(k)[None, :], U)] = U
        return self.weighted_sum(spread).reshape(self.n_players, n_groups, k).permute(1, 0, 2) \
            if arrays.is_tensor(U) else self.weighted_sum(spread).reshape(self.n_players, n_groups, k).transpose(1, 0, 2)

    def weighted_sum(self, scalars: np.ndarray) -> np.ndarray:
        """``sum_j scalars_j a_j`` as a (d, k) array."""
        out = arrays.zeros((self.n_players, scalars.shape[1]), scalars)
        for rows, Ab in self.blocks():
            out += Ab.T @ scalars[rows]
        return out


@dataclass
class Linearized:
    """A solved sample: the estimate and what the error bars need."""

    x: np.ndarray                          # (d, k)
    contrib: np.ndarray                    # (r, k): the sampled sum is sum_j contrib_j a_j
    solve: Callable[[np.ndarray], np.ndarray]   # perturbation of the sum -> perturbation of x
    leverage: np.ndarray | None = None     # (r,) h_j of each fitted row (regression only)
    unidentified: np.ndarray | None = None  # (d,) players the sample cannot tell apart (a singular fit): inf error


def indicator_product(Z: np.ndarray, B: np.ndarray, transpose: bool = False) -> np.ndarray:
    """``Z @ B`` (or ``Z^T @ B``) for a boolean coalition matrix, a block of rows at a time, so that
    no dense float copy of ``Z`` larger than one block is made.

    Examples
    --------
    >>> Z = np.array([[True, False], [True, True]])
    >>> indicator_product(Z, np.array([[1.0], [2.0]])).ravel().tolist()
    [1.0, 3.0]
    >>> indicator_product(Z, np.array([[1.0], [2.0]]), transpose=True).ravel().tolist()
    [3.0, 2.0]
    """
    if arrays.is_tensor(Z):
        B = arrays.like(B, Z)
        return (Z.T.to(B.dtype) @ B) if transpose else (Z.to(B.dtype) @ B)
    B = np.asarray(B, dtype=float)
    if transpose:
        out = np.zeros((Z.shape[1],) + B.shape[1:])
        for start in range(0, Z.shape[0], _BLOCK_ROWS):
            out += Z[start:start + _BLOCK_ROWS].T.astype(float) @ B[start:start + _BLOCK_ROWS]
        return out
    out = np.empty((Z.shape[0],) + B.shape[1:])
    for start in range(0, Z.shape[0], _BLOCK_ROWS):
        out[start:start + _BLOCK_ROWS] = Z[start:start + _BLOCK_ROWS].astype(float) @ B
    return out


def gram(design: Design) -> np.ndarray:
    """``sum_j w_j a_j a_j^T`` accumulated a block at a time with symmetric rank-k updates (half the
    flops of a general product; weights are non-negative)."""
    from scipy.linalg.blas import dsyrk

    d = design.n_players
    if arrays.is_tensor(design.Z) or np.any(design.w < 0):
        A = arrays.zeros((d, d), design.Z)
        for rows, Ab in design.blocks():
            A += Ab.T @ (Ab * design.w[rows, None])
        return A
    A = np.zeros((d, d), order="F")
    for rows, Ab in design.blocks():
        scaled = Ab * np.sqrt(design.w[rows])[:, None]                  # C order: its transpose is Fortran
        A = dsyrk(1.0, scaled.T, beta=1.0, c=A, trans=0, lower=0, overwrite_c=1)
    upper = np.triu(A)
    return upper + np.triu(A, 1).T


def solve_regression(design: Design, constrained: bool) -> Linearized:
    """Weighted least squares ``min_x sum_j w_j (a_j^T x - y_j)^2``; with ``constrained``, over ``x``
    orthogonal to 1, solved as ``(P A P + 11^T / d) x = P c``."""
    d = design.n_players
    A = gram(design)
    if constrained:
        M = A - A.mean(axis=0, keepdims=True)
        M = M - M.mean(axis=1, keepdims=True) + 1.0 / d
        rhs_map: Callable[[np.ndarray], np.ndarray] = projected
    else:
        M = A
        rhs_map = lambda rhs: rhs                                   # noqa: E731
    c = design.weighted_sum(design.w[:, None] * design.y)
    solve_plain = arrays.factor_solver(M)
    x = solve_plain(rhs_map(c))
    solve = lambda rhs: solve_plain(rhs_map(rhs))                   # noqa: E731
    if constrained:
        x = projected(x)
    residual = arrays.zeros(tuple(design.y.shape), design.y)
    leverage = arrays.zeros((design.y.shape[0],), design.y)
    einsum = __import__("torch").einsum if arrays.is_tensor(design.y) else np.einsum
    # exact leverages cost a solve per row (m d^2): beyond small problems, the diagonal of M stands in for M, unless
    # that reaches 1/2 on some row (a fit near saturation, where it is furthest off: capped at 1/2, 3n rows of 1,500
    # players gave error bars 370x too small, coverage 0.01); then they are exact after all
    exact_leverage = design.y.shape[0] * d * d <= _EXACT_LEVERAGE_WORK
    mean_diag = float(arrays.to_numpy(M.diagonal().mean() if arrays.is_tensor(M) else np.diag(M).mean()))
    for rows, Ab in design.blocks():
        residual[rows] = design.y[rows] - Ab @ x
        B = projected(Ab.T).T if constrained else Ab                        # rows in the solved subspace
        leverage[rows] = design.w[rows] * (einsum("ij,ji->i", B, solve_plain(B.T)) if exact_leverage else
                                           (B * B).sum(axis=1) / mean_diag)
    if not exact_leverage and float(arrays.to_numpy(leverage.max())) >= 0.5:
        exact_leverage = True
        for rows, Ab in design.blocks():
            B = projected(Ab.T).T if constrained else Ab
            leverage[rows] = design.w[rows] * einsum("ij,ji->i", B, solve_plain(B.T))
    unidentified = None
    if exact_leverage and not arrays.is_tensor(leverage):       # (d^3 <= m d^2: as much as the leverages)
        leverage = coalition_leverage(design.Z, leverage, design.paired)
        unidentified = np.abs(1.0 - np.diag(M @ solve_plain(np.eye(d)))) > 1e-6    # a pseudo-inverse's null space
    return Linearized(x=x, contrib=design.w[:, None] * residual, solve=solve, leverage=leverage,
                      unidentified=unidentified)


def coalition_leverage(Z: np.ndarray, leverage: np.ndarray, paired: bool = False) -> np.ndarray:
    """Each row's ``leverage`` summed over the rows of the same coalition (with ``paired``, of the same pair, either
    way round): copies of a coalition drawn with replacement are fitted as one, so two copies that alone decide a
    direction have leverages of 1/2 each and residuals of 0, and only their sum, 1, shows that the fit passes
    through them.

    Examples
    --------
    >>> Z = np.array([[1, 0, 0], [0, 1, 1], [0, 1, 0]], dtype=bool)
    >>> coalition_leverage(Z, np.array([0.5, 0.5, 0.3]), paired=True).tolist()      # rows 0 and 1: one pair
    [1.0, 1.0, 0.3]
    >>> coalition_leverage(Z, np.array([0.5, 0.5, 0.3])).tolist()
    [0.5, 0.5, 0.3]
    """
    Z = np.asarray(arrays.to_numpy(Z), dtype=bool)
    keys = np.where(Z[:, :1], ~Z, Z) if paired else Z
    _, inverse = np.unique(np.packbits(keys, axis=1), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    return np.bincount(inverse, weights=leverage)[inverse]


def solve_matrix_vector(design: Design, inverse_gram: Callable[[np.ndarray], np.ndarray]) -> Linearized:
    """``x = G^-1 sum_j w_j a_j y_j`` with the exact full-population Gram inverse ``G^-1`` (unbiased)."""
    contrib = design.w[:, None] * design.y
    return Linearized(x=inverse_gram(design.weighted_sum(contrib)), contrib=contrib, solve=inverse_gram)


def small_sample_factor(dof: np.ndarray | float) -> np.ndarray:
    """Student's ``t_{dof}`` 97.5% quantile over the normal one (infinite for no degrees of freedom), so that
    two standard errors are a 95% interval with few samples.

    Examples
    --------
    >>> np.round(small_sample_factor(np.array([1, 10, 1000])), 3)
    array([6.483, 1.137, 1.001])
    """
    from scipy.special import ndtri, stdtrit          # scipy.stats' t.ppf and norm.ppf without their 0.1 ms a call

    dof = np.asarray(dof, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dof >= 1, stdtrit(np.maximum(dof, 1.0), 0.975) / ndtri(0.975), np.inf)


def group_stderr(design: Design, lin: Linearized, rng: np.random.Generator,
                 transform: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Per-player standard error of ``transform(x)`` from random groups of sampling units (with the
    small-sample corrections of the module docstring)."""
    d = design.n_players
    k = lin.contrib.shape[1]
    units, first, inverse = np.unique(design.unit, return_index=True, return_inverse=True)
    n_random = int((design.fpc[first] > 1e-12).sum())
    if n_random < 2:
        return np.zeros((d, k)) if n_random == 0 else np.full((d, k), np.inf)
    contrib = lin.contrib
    if lin.leverage is not None:
        random_rows = design.fpc > 1e-12
        leverage = np.asarray(arrays.to_numpy(lin.leverage), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(random_rows, 1.0 / (1.0 - np.minimum(leverage, 1.0)), 1.0)
        if not np.all(np.isfinite(scale)) or np.any(leverage[random_rows] > 1.0 - 1e-9):
            return np.full((d, k), np.inf)                 # the fit passes exactly through a sampled row
        contrib = contrib * arrays.like(scale[:, None], contrib)
    G = min(MAX_GROUPS, n_random)
    row_group = unit_groups(design.unit, design.stratum, rng, G)
    scaled = contrib * arrays.like(np.sqrt(design.fpc)[:, None], contrib)
    totals = design.group_sums(scaled, row_group, G)                                # (G, d, k)
    replicates = G * totals
    deviation = replicates - replicates.mean(axis=0, keepdims=True)
    transform = transform or (lambda v: v)
    # every group's perturbation through one solve with G k right-hand sides (the maps are linear per column)
    stacked = deviation.permute(1, 0, 2) if arrays.is_tensor(deviation) else deviation.transpose(1, 0, 2)
    dx = transform(lin.solve(stacked.reshape(d, G * k))).reshape(d, G, k)
    stderr = replicate_stderr(dx, axis=1)
    if lin.unidentified is not None and lin.unidentified.any():     # values split by the minimum norm, not sampled
        stderr[arrays.like(lin.unidentified, stderr)] = np.inf
    return stderr


def unit_groups(unit: np.ndarray, stratum: np.ndarray, rng: np.random.Generator, n_groups: int) -> np.ndarray:
    """A random group ``0..n_groups-1`` per row for the random-groups variance estimate: sampling units (a pair's
    rows together) shuffled within their strata and dealt round-robin from a random start, so every group holds
    a balanced share of every stratum.

    Examples
    --------
    >>> unit_groups(np.array([0, 0, 1, 1, 2, 3]), np.zeros(6, int), np.random.default_rng(0), 2).tolist()
    [1, 1, 0, 0, 1, 0]
    """
    units, first, inverse = np.unique(unit, return_index=True, return_inverse=True)
    order = np.lexsort((rng.random(units.size), stratum[first]))
    group_of_unit = np.empty(units.size, dtype=np.int64)
    group_of_unit[order] = (np.arange(units.size) + rng.integers(n_groups)) % n_groups
    return group_of_unit[inverse.ravel()]


def replicate_stderr(deviations: Any, axis: int = 0) -> Any:
    """Standard error from ``G`` random-group replicates' deviations from their mean (along ``axis``), with the
    small-sample ``t`` factor.

    Examples
    --------
    >>> round(float(replicate_stderr(np.array([-1.0, 1.0]))), 3)        # sqrt(2 / 2) * t_1 / z
    6.483
    """
    G = deviations.shape[axis]
    return arrays.sqrt((deviations ** 2).sum(axis=axis) / (G * (G - 1))) * float(small_sample_factor(G - 1))


def subsample(sample: CoalitionSample, rows: np.ndarray) -> CoalitionSample:
    """The rows ``rows`` of a sample (keeps weights and pairing)."""
    return CoalitionSample(arrays.take_rows(sample.coalitions, rows), sample.log_weight[rows], sample.unit[rows],
                           sample.stratum[rows], sample.fpc[rows], sample.n_draws, sample.paired, sample.coverage)


def merge(samples: list[CoalitionSample], units: list[int]) -> CoalitionSample:
    """Pool samples drawn in rounds as a mixture: each round's weights scaled by its share of the units."""
    total = float(sum(units))
    if len(samples) == 1:                             # one round: nothing to pool (and no copies)
        return samples[0]
    parts, offset = [], 0
    for s, n in zip(samples, units):
        parts.append(CoalitionSample(s.coalitions, s.log_weight + np.log(n / total), s.unit + offset,
                                     s.stratum, s.fpc, s.n_draws, s.paired))
        offset += int(s.unit.max()) + 1 if s.unit.size else 0
    return CoalitionSample(
        arrays.concat([p.coalitions for p in parts]), np.concatenate([p.log_weight for p in parts]),
        np.concatenate([p.unit for p in parts]), np.concatenate([p.stratum for p in parts]),
        np.concatenate([p.fpc for p in parts]), int(total), samples[0].paired,
        _pooled_coverage([s.coverage for s in samples]))


def _pooled_coverage(coverages: list[str]) -> str:
    """Coverage of a mixture of designs: biased if one round left sizes unsampled, exact if every round took
    everything, otherwise random (unbiased, with an estimable error)."""
    if "partial" in coverages:
        return "partial"
    return "all" if all(c == "all" for c in coverages) else "random"


def without_rounding(m2: np.ndarray, mean: np.ndarray, count: np.ndarray, scale: Any = 0.0) -> np.ndarray:
    """``m2`` (squared deviations from the mean, ``(p, k)``) set to 0 where the draws agree but for rounding: within
    ``1e-9`` of ``|mean| + scale`` (``scale``, ``(k,)``: the magnitude of the largest means, so that draws of a mean
    near 0 that differ by the rounding of larger game values agree too). Equal draws' mean is often a unit in the last
    place off, and ``v(S + i) - v(S)`` of a game whose value is a sum differs in its last places from one ``S`` to
    another where the exact differences agree.

    Examples
    --------
    >>> x = np.full(3, 0.1); mean = np.array([[x.sum() / 3]])
    >>> without_rounding(np.array([[((x - mean[0, 0]) ** 2).sum()]]), mean, np.array([3.0])).tolist()
    [[0.0]]
    >>> without_rounding(np.array([[2e-32]]), np.zeros((1, 1)), np.array([2.0]), scale=np.array([3.0])).tolist()
    [[0.0]]
    """
    return np.where(m2 <= count[:, None] * (1e-9 * (np.abs(mean) + scale)) ** 2, 0.0, m2)


def moderated_variance(count: np.ndarray, m2: np.ndarray, groups: np.ndarray | None = None,
                       no_spread: float = np.inf, agreeing: int = 2) -> np.ndarray:
    """The variance of each mean of ``count`` draws whose squared deviations from it add up to ``m2`` ``(p, k)``,
    moderated by one degree of freedom of the variance pooled over the means (empirical Bayes, as limma's moderated
    variances; with ``groups``, over the means of the same group, or over all where a group's draws all agree): a mean
    whose few draws happen to agree (a rare large contribution unseen) gets the pooled spread, not zero. Infinite
    below two draws; ``no_spread`` where no draw anywhere differs from its mean (Monte Carlo's players: 0, an additive
    game's values are exact; interaction subsets: infinite), but only for means of at least ``agreeing`` draws (fewer
    agreeing draws are infinite: their agreement may be luck, see :data:`AGREEING_DRAWS`).

    Examples
    --------
    >>> v = moderated_variance(np.array([3.0, 3.0, 1.0]), np.array([[2.0], [0.0], [0.0]]), np.array([1, 1, 1]))
    >>> v.ravel().tolist()                  # pooled 2 / 4; the second mean's three draws agree
    [0.2777777777777778, 0.05555555555555555, inf]
    >>> moderated_variance(np.array([3.0, 3.0]), np.zeros((2, 1)), no_spread=0.0).ravel().tolist()
    [0.0, 0.0]
    >>> moderated_variance(np.array([6.0, 3.0]), np.zeros((2, 1)), no_spread=0.0, agreeing=6).ravel().tolist()
    [0.0, inf]
    """
    spare = np.maximum(count - 1.0, 0.0)[:, None]
    everywhere = m2.sum(axis=0, keepdims=True) / max(float(spare.sum()), 1.0)
    pooled = everywhere
    if groups is not None:
        pooled = np.zeros_like(m2)
        for g in np.unique(groups):
            at = groups == g
            own = m2[at].sum(axis=0, keepdims=True) / max(float(spare[at].sum()), 1.0)
            pooled[at] = np.where(own > 0, own, everywhere)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (m2 + pooled) / (spare + 1.0) / count[:, None]
    nothing = np.where(count >= max(agreeing, 2), no_spread, np.inf)[:, None]
    return np.where((count >= 2)[:, None], np.where(var > 0, var, nothing), np.inf)
