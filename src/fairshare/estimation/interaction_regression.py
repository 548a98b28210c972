"""Interaction values from a coalition sample: a polynomial surrogate fitted by weighted least squares, and the
unbiased stratified correction of what it misses.

The design is the one of the linear estimators (:class:`~fairshare.estimation.samplers.CoalitionDesign`):
sizes from a kernel, levels of sizes taken whole from the outside in while the budget covers them, the rest
distinct coalitions in complementary pairs, each with its Horvitz-Thompson weight ``w_U``.

*Faithful indices* (FSII, FBII) **are** the least-squares fit of order ``k``: the estimate is the weighted fit
``beta = argmin sum_U w_U mu(U) (v(U) - sum_{T <= U, |T| <= k} beta_T)^2`` on the sample (Shapley kernel ``mu``
with ``v(empty)`` and ``v(N)`` fitted exactly for FSII, uniform for FBII), as regression-FSII/FBII.

*Cardinal indices* (k-SII, SII, STII, BII, Moebius; ``I(S) = sum_U v(U) g_s(|U|, |U & S|)``) are estimated as

    I(S) = I_hat(g)(S) + sum_U w_U (v(U) - g(U)) g_s(|U|, |U & S|)

where ``g`` is the fitted polynomial of order ``l <= k`` (the largest whose ``1 + n + ... + C(n, l)`` unknowns
the sample determines with room to spare), ``I(g)`` is its index exactly (from its Moebius terms), and the sum
is the Horvitz-Thompson estimate of the index of the residual: unbiased whatever ``g`` is, and small where
``g`` fits. With ``surrogate_order=0`` the surrogate is a constant and the estimator is the plain stratified
one (SVARM-IQ's idea: strata by size, every sample updating every subset).

The correction is computed without a loop over subsets: ``g_s(u, j)`` is expanded in the binomial basis
``C(j, l)`` (forward differences in ``j``), and ``sum_U y_U C(|U & S|, l)`` is the sum over the ``l``-subsets
``L`` of ``S`` of the moments ``sum_U y_U prod_{i in L} U_i``: one matrix product per ``l``.

Standard errors: the correction's variance from random groups of sampling units balanced over the strata
(the units of sizes taken whole contribute none), with the small-sample ``t`` factor; for the faithful
indices the fit's sandwich ``A^-1 (sum over groups) A^-1`` the same way.
"""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import Any

import numpy as np

from .. import arrays
from ..arguments import Option
from ..combinatorics import log_binom
from ..interaction_indices import InteractionIndex, subsets_up_to
from ..moebius import contains, interactions_from_terms, subset_codes
from .samplers import CoalitionDesign
from .sampling import CoalitionSample, DISTRIBUTIONS, shapley_size_log_mass
from .solve import merge, small_sample_factor
from .spec import MethodSpec, Setup

__all__ = ["InteractionSolver", "SPECS", "surrogate_order", "n_unknowns"]

#: random groups of sampling units for the standard errors
_GROUPS = 16
#: folds of the cross-fitted surrogate (groups of sampling units, so folds are balanced over the strata)
_FOLDS = 4
#: a surrogate of order l is fitted when the sample has at least this many rows per unknown
_ROWS_PER_UNKNOWN = 2.0
#: and when its normal equations cost at most this many multiply-adds (rows x unknowns^2)
_MAX_FIT_WORK = 2e10


def n_unknowns(n: int, order: int) -> int:
    """``1 + n + C(n, 2) + ... + C(n, order)``: the coefficients of a polynomial of that order.

    Examples
    --------
    >>> n_unknowns(16, 2)
    137
    """
    return sum(math.comb(n, s) for s in range(order + 1))


def surrogate_order(n: int, order: int, rows: int) -> int:
    """The largest order ``l <= order`` whose polynomial ``rows`` coalitions fit with room to spare (0: a constant).

    Examples
    --------
    >>> surrogate_order(16, 2, 1500), surrogate_order(30, 2, 300), surrogate_order(100, 2, 20000)
    (2, 1, 1)
    """
    for ell in range(order, 0, -1):
        p = n_unknowns(n, ell)
        if rows >= _ROWS_PER_UNKNOWN * p and rows * float(p) ** 2 <= _MAX_FIT_WORK:
            return ell
    return 0


def _log_size_mass(n: int, index: InteractionIndex, distribution: str) -> np.ndarray:
    """Size distribution of the design: the Banzhaf family samples coalitions uniformly, the Shapley family
    from the kernel (``distribution``)."""
    if index.family == "banzhaf":
        out = log_binom(n, np.arange(n + 1)) - n * np.log(2.0)
        out[0] = out[-1] = -np.inf
        return out
    return shapley_size_log_mass(n, distribution)


def _kernel(n: int, index: InteractionIndex, sizes: np.ndarray) -> np.ndarray:
    """The regression weight ``mu`` of a coalition by size (ends: 1; the Shapley family fits them exactly)."""
    if index.family == "banzhaf":
        return np.ones(sizes.shape)
    s = np.clip(sizes, 1, n - 1)
    mu = np.exp(np.log(n - 1.0) - log_binom(n, s) - np.log(s * (n - s.astype(float))))
    return np.where((sizes == 0) | (sizes == n), 1.0, mu)


class _Lookup:
    """Positions of padded subsets in a list of them (by their coalition numbers)."""

    def __init__(self, subsets: np.ndarray) -> None:
        codes = subset_codes(subsets)
        self.order = np.argsort(codes, kind="stable")
        self.sorted = codes[self.order]

    def __call__(self, subsets: np.ndarray) -> np.ndarray:
        return self.order[np.searchsorted(self.sorted, subset_codes(subsets))]


def _sub_subsets(subsets: np.ndarray, size: int) -> np.ndarray:
    """``(p, C(s, size), size)``: for each padded subset of ``s`` members, its sub-subsets of ``size`` members."""
    s = int((subsets[0] >= 0).sum()) if subsets.shape[0] else 0
    picks = np.array(list(itertools.combinations(range(s), size)), dtype=np.int64).reshape(-1, size)
    return subsets[:, picks] if size else np.zeros((subsets.shape[0], 1, 0), np.int64)


def _moments(Z: np.ndarray, H: np.ndarray, subsets: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """``M[L, c] = sum_U H[U, c] prod_{i in L} Z[U, i]`` for each padded subset ``L`` (rows of ``subsets``)."""
    size = int((subsets[0] >= 0).sum()) if subsets.shape[0] else 0
    if size == 0:
        return H.sum(axis=0, keepdims=True).repeat(subsets.shape[0], axis=0)
    Zf = Z.astype(float)
    if size == 1:
        return (Zf.T @ H)[subsets[:, 0]]
    if size == 2:
        out = np.empty((subsets.shape[0], H.shape[1]))
        for c in range(H.shape[1]):                     # Z' diag(h) Z for each column: n x n, read at the pairs
            P = Zf.T @ (Zf * H[:, c:c + 1])
            out[:, c] = P[subsets[:, 0], subsets[:, 1]]
        return out
    out = np.empty((subsets.shape[0], H.shape[1]))
    for start in range(0, subsets.shape[0], chunk):
        held = contains(Z, subsets[start:start + chunk]).astype(float)     # (m, b)
        out[start:start + chunk] = held.T @ H
    return out


class InteractionSolver:
    """Absorbs coalition samples; gives interaction values ``(p, k)`` of :func:`subsets_up_to` ``(n, order)``
    and their standard errors."""

    def __init__(self, setup: Setup, surrogate: int | None = None) -> None:
        self.setup = setup
        self.index: InteractionIndex = setup.semivalue
        self.n = setup.n_players
        self.rng = setup.solver_rng
        self.faithful = not self.index.cardinal
        self.fixed_surrogate = surrogate
        self.subsets = subsets_up_to(self.n, self.index.order, 1)
        self.samples: list[CoalitionSample] = []
        self.values: list[np.ndarray] = []

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.v0, self.vN = np.asarray(v0, float), np.asarray(vN, float)

    def absorb(self, sample: CoalitionSample, values: np.ndarray) -> None:
        self.samples.append(sample)
        self.values.append(np.asarray(arrays.to_numpy(values), dtype=float).reshape(sample.n_rows, -1))

    # ------------------------------------------------------------------------------------------ fit
    def _rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        sample = merge(self.samples, [s.n_draws for s in self.samples])
        Z = np.asarray(arrays.to_numpy(sample.coalitions), dtype=bool)
        V = np.concatenate(self.values)
        w = np.exp(sample.log_weight)
        # the ends, known exactly: weight 1, no sampling variance
        ends = np.zeros((2, self.n), dtype=bool)
        ends[1] = True
        Z = np.concatenate([ends, Z])
        V = np.concatenate([self.v0[None, :], self.vN[None, :], V])
        w = np.concatenate([[1.0, 1.0], w])
        fpc = np.concatenate([[0.0, 0.0], sample.fpc])
        unit = np.concatenate([[-2, -1], sample.unit])
        stratum = np.concatenate([[-1, -1], sample.stratum])
        self._coverage = sample.coverage
        return Z, V, w, fpc, unit, stratum

    def _fit(self, Z: np.ndarray, V: np.ndarray, w: np.ndarray, order: int, train: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
        """Weighted least squares of order ``order`` on the rows ``train`` (all by default; rows 0 and 1 are the
        ends): ``(features (p, order), beta (p, k), weighted design X mu, solve)``."""
        n = self.n
        feats = subsets_up_to(n, order, 0)
        X = contains(Z, feats).astype(float)
        mu = _kernel(n, self.index, Z.sum(axis=1)) * w
        if train is not None:
            mu = np.where(train, mu, 0.0)
        constrained = self.index.family != "banzhaf"
        if constrained:
            # beta_empty = v(empty); the other coefficients add up to v(N) - v(empty); fit the rows in between
            inner = np.arange(Z.shape[0]) >= 2
            Xi, yi, mi = X[inner, 1:], V[inner] - self.v0[None, :], mu[inner]
            A = Xi.T @ (Xi * mi[:, None])
            p = A.shape[0]
            K = np.zeros((p + 1, p + 1))
            K[:p, :p] = A
            K[:p, p] = K[p, :p] = 1.0
            scale = max(float(np.abs(A).max(initial=0.0)), 1e-300)
            K[:p, p] *= scale
            K[p, :p] *= scale
            rhs = np.zeros((p + 1, V.shape[1]))
            rhs[:p] = Xi.T @ (yi * mi[:, None])
            rhs[p] = (self.vN - self.v0) * scale
            Kinv = np.linalg.pinv(K, hermitian=True)
            sol = Kinv @ rhs
            beta = np.concatenate([self.v0[None, :], sol[:p]])

            def solve(G: np.ndarray) -> np.ndarray:       # a perturbation of the right-hand side (p, c)
                padded = np.zeros((p + 1, G.shape[1]))
                padded[:p] = G[1:]
                return np.concatenate([np.zeros((1, G.shape[1])), (Kinv @ padded)[:p]])
        else:
            A = X.T @ (X * mu[:, None])
            Ainv = np.linalg.pinv(A, hermitian=True)
            beta = Ainv @ (X.T @ (V * mu[:, None]))

            def solve(G: np.ndarray) -> np.ndarray:
                return Ainv @ G
        return feats, beta, X * mu[:, None], solve

    # ------------------------------------------------------------------------------------- estimate
    def _groups(self, unit: np.ndarray, stratum: np.ndarray, fpc: np.ndarray) -> tuple[np.ndarray, int]:
        """A random group (0..G-1) per row, balanced over strata; rows taken with certainty get -1."""
        units, first, inverse = np.unique(unit, return_index=True, return_inverse=True)
        random_units = fpc[first] > 1e-12
        n_random = int(random_units.sum())
        G = min(_GROUPS, n_random)
        group = np.full(units.size, -1, dtype=np.int64)
        if G >= 2:
            idx = np.flatnonzero(random_units)
            order = idx[np.lexsort((self.rng.random(idx.size), stratum[first][idx]))]
            group[order] = (np.arange(order.size) + self.rng.integers(G)) % G
        return group[inverse.ravel()], G

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        Z, V, w, fpc, unit, stratum = self._rows()
        n, k = self.n, V.shape[1]
        rows = Z.shape[0]
        group, G = self._groups(unit, stratum, fpc)
        info: dict = {"n_samples": rows - 2}
        if self.faithful:
            values, stderr = self._faithful(Z, V, w, fpc, group, G)
            info["surrogate_order"] = self.index.order
        else:
            if self.fixed_surrogate is not None:
                candidates = [self.fixed_surrogate]
            else:
                candidates = list(range(surrogate_order(n, self.index.order, rows) + 1))
            best = None
            for ell in candidates:                 # the surrogate whose corrected estimate has the least variance
                values, stderr = self._cardinal(Z, V, w, fpc, group, G, ell)
                spread = float(np.sum(stderr ** 2)) if np.all(np.isfinite(stderr)) else np.inf
                if best is None or spread < best[0]:
                    best = (spread, ell, values, stderr)
            _, ell, values, stderr = best
            info["surrogate_order"] = ell
        if self._coverage == "partial":
            stderr = np.full_like(values, np.inf)
        return values, stderr, info

    def _faithful(self, Z, V, w, fpc, group, G) -> tuple[np.ndarray, np.ndarray]:
        feats, beta, Xmu, solve = self._fit(Z, V, w, self.index.order)
        keep = (feats >= 0).sum(axis=1) >= 1                  # drop the empty set (the baseline)
        values = beta[keep]
        if G < 2:
            return values, np.zeros_like(values) if G == 0 else np.full_like(values, np.inf)
        fitted = (contains(Z, feats).astype(float)) @ beta
        resid = V - fitted
        k = V.shape[1]
        reps = np.zeros((G, beta.shape[0], k))
        scaled = resid * np.sqrt(fpc)[:, None]
        for g in range(G):
            rows = group == g
            reps[g] = G * (Xmu[rows].T @ scaled[rows])
        dev = reps - reps.mean(axis=0, keepdims=True)
        dx = solve(dev.transpose(1, 0, 2).reshape(beta.shape[0], G * k)).reshape(beta.shape[0], G, k)
        se = np.sqrt((dx ** 2).sum(axis=1) / (G * (G - 1))) * float(small_sample_factor(G - 1))
        return values, se[keep]

    def _surrogate(self, Z: np.ndarray, V: np.ndarray, w: np.ndarray, ell: int, train: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The index of the order-``ell`` fit on ``train`` (exactly, from its Moebius terms) and its values on
        every row."""
        feats, beta, _, _ = self._fit(Z, V, w, ell, train)
        carriers = np.zeros((feats.shape[0], self.n), dtype=bool)
        rows_f = np.repeat(np.arange(feats.shape[0]), feats.shape[1])
        cols = feats.ravel()
        carriers[rows_f[cols >= 0], cols[cols >= 0]] = True
        return interactions_from_terms(carriers, beta, self.index, self.subsets), contains(Z, feats).astype(float) @ beta

    def _cardinal(self, Z, V, w, fpc, group, G, ell) -> tuple[np.ndarray, np.ndarray]:
        n, ix, k = self.n, self.index, V.shape[1]
        if ell == 0:
            base = np.zeros((self.subsets.shape[0], k))
            resid = V - self.v0[None, :]                    # a constant surrogate: the index of a constant is 0
        elif G < _FOLDS:
            base, fitted = self._surrogate(Z, V, w, ell, None)
            resid = V - fitted
        else:
            # cross-fitted: each fold's residuals come from a fit on the other folds (and the rows taken with
            # certainty), so the correction stays unbiased and its error bars honest whatever the fit does
            fold = np.where(group >= 0, group % _FOLDS, -1)
            certain = fold < 0
            w_train = np.where(certain, w, w * _FOLDS / (_FOLDS - 1.0))
            base = np.zeros((self.subsets.shape[0], k))
            resid = np.zeros_like(V)
            for f in range(_FOLDS):
                b, fitted = self._surrogate(Z, V, w_train, ell, fold != f)
                base += b / _FOLDS
                held = fold == f
                resid[held] = V[held] - fitted[held]
                resid[certain] += (V[certain] - fitted[certain]) / _FOLDS
        sizes = Z.sum(axis=1)
        gw = ix.coalition_weights(n)                          # (order+1, n+1, order+1)
        y = resid * w[:, None]
        yg = resid * (w * np.sqrt(fpc))[:, None]
        # columns: the estimate (k), then each group's share (G k)
        onehot = np.zeros((Z.shape[0], max(G, 1)))
        if G >= 2:
            sel = group >= 0
            onehot[np.flatnonzero(sel), group[sel]] = 1.0
        cols = np.concatenate([y, (yg[:, None, :] * onehot[:, :, None]).reshape(Z.shape[0], -1)], axis=1)
        own = (self.subsets >= 0).sum(axis=1)
        total = np.zeros((self.subsets.shape[0], cols.shape[1]))
        lookups: dict[int, tuple[np.ndarray, _Lookup]] = {}
        for s in np.unique(own):
            rows_s = np.flatnonzero(own == s)
            targets = self.subsets[rows_s][:, :s]
            for ell_ in range(0, s + 1):
                # forward difference of g_s(u, .) of order ell_ at j = 0
                delta = sum((-1.0) ** (ell_ - i) * math.comb(ell_, i) * gw[s, :, i] for i in range(ell_ + 1))
                h = cols * delta[sizes][:, None]
                if not np.any(h):
                    continue
                if ell_ not in lookups:
                    subs_l = subsets_up_to(n, max(ell_, 1), ell_)[:, :ell_] if ell_ else np.zeros((1, 0), np.int64)
                    lookups[ell_] = (subs_l, _Lookup(subs_l) if ell_ else None)
                subs_l, look = lookups[ell_]
                M = _moments(Z, h, subs_l if ell_ else np.zeros((1, 0), np.int64))
                if ell_ == 0:
                    total[rows_s] += M[0][None, :]
                else:
                    parts = _sub_subsets(targets, ell_)                     # (p_s, C(s, l), l)
                    pos = look(parts.reshape(-1, ell_)).reshape(parts.shape[0], parts.shape[1])
                    total[rows_s] += M[pos].sum(axis=1)
        values = base + total[:, :k]
        if G < 2:
            return values, np.zeros_like(values) if G == 0 else np.full_like(values, np.inf)
        reps = G * total[:, k:].reshape(-1, G, k)
        dev = reps - reps.mean(axis=1, keepdims=True)
        se = np.sqrt((dev ** 2).sum(axis=1) / (G * (G - 1))) * float(small_sample_factor(G - 1))
        return values, se


# ------------------------------------------------------------------------------------------ registry
def _check_surrogate(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0):
        raise ValueError(f"surrogate_order must be None or an integer >= 0, got {value!r}")
    return value


_OPTIONS = (
    Option("distribution", "kernel", "size distribution of the Shapley family's design (the Banzhaf family samples "
           "coalitions uniformly)", allowed=tuple(DISTRIBUTIONS)),
    Option("paired", True, "draw coalitions with their complements", kind="bool"),
)


def _design(setup: Setup) -> CoalitionDesign:
    opts = setup.options
    ix = setup.semivalue
    return CoalitionDesign(setup.sampler_rng, setup.n_players, _log_size_mass(setup.n_players, ix, opts["distribution"]),
                           replacement=False, paired=opts["paired"] and ix.family != "moebius")


def _solver(setup: Setup) -> InteractionSolver:
    return InteractionSolver(setup, surrogate=setup.options.get("surrogate_order"))


def _min_regression(n: int, ix: Any, opts: dict) -> int:
    if not getattr(ix, "cardinal", True):
        return n_unknowns(n, ix.order) + 1               # the faithful fit needs as many rows as unknowns
    return 4


def _validate(opts: dict, n: int, ix: Any) -> None:
    ell = opts.get("surrogate_order")
    if ell is not None and ell > ix.order:
        raise ValueError(f"surrogate_order={ell} exceeds the order {ix.order} of the index")
    if ell is not None and not ix.cardinal:
        raise ValueError(f"surrogate_order applies to cardinal indices, not {ix.kind} (its fit is the estimate)")


SPECS = [
    MethodSpec(
        name="iq-regression",
        indices=("interactions",),
        description="interaction values of any index: the weighted least-squares polynomial fit of order k "
                    "(FSII, FBII: the estimate itself), plus the unbiased stratified correction of its residual "
                    "(k-SII, SII, STII, BII, Moebius); distinct paired coalitions, sizes taken whole from the "
                    "outside in",
        sampler=_design, solver=_solver,
        options=_OPTIONS + (Option("surrogate_order", None, "order of the polynomial surrogate of a cardinal index "
                                   "(None: the largest the sample determines)", check=_check_surrogate),),
        min_budget=_min_regression, default_for={"interactions": 20}, validate=_validate,
    ),
    MethodSpec(
        name="iq-stratified",
        indices=("cardinal interactions",),
        description="interaction values of a cardinal index (k-SII, SII, STII, BII, Moebius) by stratified "
                    "sampling without a surrogate: strata by size, every coalition updating every subset (as "
                    "SVARM-IQ), unbiased",
        sampler=_design, solver=partial(InteractionSolver, surrogate=0),
        options=_OPTIONS, min_budget=lambda n, ix, opts: 4,
    ),
]
