"""Regression with a penalized interaction surrogate: what paired regression cannot see, fitted and given its exact
values.

Paired regression errs only through the *odd* (``v(S) - v(N \\ S)``), non-additive part of a game: complementary
pairs cancel every even part and the additive part is fitted exactly. That odd part is, to first order, a sum of
Walsh products of three players (then five, ...) (:mod:`fairshare.engine.walsh`), whose values every semivalue
gives in closed form. So the regression's design is extended by Walsh-product features ``F`` and solved as one
penalized least-squares problem (:mod:`fairshare.engine.ridge_path`)::

    min_{x, c}  sum_S w_S (y_S - a_S^T x - F_S c)^2 + lam ||c||^2,        values = values(x) + semivalue(F c)

with the estimator's own rows ``a_S``, weights and constraint unchanged and unpenalized. Because the additive rows
stay unpenalized, the fit's residual is orthogonal to them and has zero value for every penalty (a semivalue of a
game orthogonal to the additive games in the regression's weights is zero, Lemma 3.4 / Theorem 2.1): the surrogate
moves no value at the population level, it only takes noise out of the sampled fit. Its products are those of three
players (and of five, scaled, with players weighted by their plain values) among the players that matter most, as
many as keep every candidate's fit within a budget (:mod:`fairshare.engine.surrogate_candidates`): tens of
milliseconds per row. The candidates share one decomposition of the design and their feature blocks
(:class:`_Blocks`); each costs one eigendecomposition. Where the rows' coalitions have enough distinct sizes, the
*symmetric features* (functions of the coalition's size alone, :mod:`fairshare.engine.size_features`) are a
candidate on their own and join every other: the part of a game that moves with how many players are in, not which
(an image model's output as more patches are kept; 2.8x lower error on a random ResNet-50 of 196 patches).
Where more products of three players than the screened candidates hold fit within ~20 ms (``complete_cap``: all of
them up to ~20 players at 30n, ~160-370 at 100n), the *wide* candidates hold them all (or as many as fit), weighted
by their pairs' screening score, beside one screened candidate: on the pairs of ``bench default`` 1.1-2.2x lower
error at 30n and 1.1-13x at 100n than the three screened ones at 12-20 players, 1.2-3.4x at 40-50 players. Where
they hold fewer than all, with at least 3 rows per product, they are the best of three times as many by a first fit
(:func:`~fairshare.engine.screening.ridge_ranked`), and no screened candidate: 3.3x lower error again on communities
at 100n, 1.1-1.9x on german credit, nhanes and brca.

Which surrogate and penalty: the one with the least *leave-one-out* error of the fit (exact, from the leverages),
the plain regression (no surrogate) among the candidates; it is taken only when it beats the plain fit by more than
``2 / sqrt(rows)`` and significantly (:func:`significant`: a ``t`` test of the log error ratio, Bonferroni over the
candidates and penalties), so a useless surrogate costs nothing: then the plain regression's own values and error
bars are returned bit for bit. No evaluation is spent on the choice. Fitting the surrogate on other folds
(cross-fitting) lost 1.5-10x of its gain on the tuning games, so every row enters the fit and the choice is
cross-validated instead. Errors and times: ``benchmarks/results/default``.

Designs: paired for symmetric semivalues (odd products); unpaired (an asymmetric semivalue, or ``paired=False``:
kADDSHAP's design) fits the even products of two players too, from ``2 + n + C(n, 2)`` evaluations on. With the even
model (:meth:`_Problem.add_even`, ``even_model`` of the method) every product of two players joins the unpenalized
design, the odd products of three (and five) players are the candidates, and where none is taken the fit is that of
the additive and pairwise model (kADDSHAP's estimator on our design); its many columns are decomposed through their
Gram matrix (:func:`~fairshare.engine.ridge_path.gram_basis`) and the maps to the values formed through the values'
rows. Standard errors: random groups of sampling units over the solution's linear map applied to the leave-one-out
residuals (:func:`surrogate_stderr`), so the error bars carry the surrogate's fit; where its products were ranked by
a first fit, at least those of a fit whose products were not (:func:`_check`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import arrays
from ..indices.semivalues import Semivalue
from .formulations import ShapleyKernel
from .ridge_path import RidgePath, gram_basis, one_thread, subtract_product
from .samplers.sample import CoalitionSample
from .screening import RANK_POOL, pair_scores, ridge_ranked, screened_triples, triple_scores
from .size_features import MIN_SIZES, legendre, size_degrees, size_values
from .surrogate_candidates import (WIDE_SECONDS, Candidate, candidates, complete_cap, feature_cap, fit_seconds,
                                   ranks, wide_candidates)
from .surrogate_errors import significant
from .walsh import semivalue_of_walsh, top_subsets, walsh_products

__all__ = ["SurrogateFit", "fit_surrogate", "PENALTIES", "MAX_PLAYERS"]

#: penalties tried, relative to the largest eigenvalue of the features' Gram matrix
PENALTIES = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: the surrogate is fitted for games of at most this many players (the plain regression beyond)
MAX_PLAYERS = 256
#: the scale of the products of five players against those of three
_FIVE_SCALE = 0.3
CHECK_SHARE = 4                  # ranked products' error bars: at least a fit's with 1/4 as many (:func:`_check`)
#: added to a product's screening score (relative to the largest) before the power of a ``pairs`` candidate: a product
#: of three whose pairs show nothing keeps a third of the weight (tables: within 10% of no floor; planted products
#: that do not follow their pairs: 1.6x lower error)
_PAIRS_FLOOR = 0.1


@dataclass
class SurrogateFit:
    """The chosen fit: values ``(d, k)``, the linear map ``L (d, m)`` of the whitened targets to the values, the
    leave-one-out residuals ``(m, k)`` and leverages ``(m,)``, and what was chosen."""

    values: np.ndarray
    L: np.ndarray
    loo: np.ndarray
    label: str
    penalty: float
    n_features: int
    loo_gain: float
    plain_L: np.ndarray
    plain_loo: np.ndarray
    leverage: np.ndarray | None = None
    residual: np.ndarray | None = None          # (m, k): the fit's residuals (whitened rows)
    check: tuple | None = None                  # (L, loo) of the unranked fit whose bars floor these (:func:`_check`)


class _Problem:
    """The whitened rows of one pooled sample in the form the surrogate's fit needs (pairs collapsed, the intercept
    of an unpaired semivalue design removed, Shapley's sum constraint eliminated)."""

    def __init__(self, form: Any, sample: CoalitionSample, target: np.ndarray, total: np.ndarray) -> None:
        rows = form.rows(sample, target, total)
        self.form, self.total = form, total
        self.shapley = isinstance(form, ShapleyKernel)
        # where the rows do not span the additive games (Lemma 3.4's for most semivalues) the surrogate carries the
        # players' own Walsh products too
        self.linear = not form.spans_additive
        Z = np.asarray(arrays.to_numpy(sample.coalitions), dtype=bool)
        y = np.asarray(arrays.to_numpy(rows.y), dtype=float)
        w = np.exp(rows.log_w - float(np.max(rows.log_w)))
        self.scale = 1.0 if self.shapley else float(np.exp(-form._shift))      # targets' scale (Lemma 3.4 rows)
        self.signs_full = 2.0 * Z - 1.0
        self.sizes_full = Z.sum(axis=1)
        A = Z * np.asarray(rows.s, dtype=float)[:, None] - np.asarray(rows.t, dtype=float)[:, None]
        self.paired = bool(sample.paired and rows.collapse_pairs)
        self._pair_source = (Z, np.asarray(arrays.to_numpy(target), dtype=float)) if self.paired else None
        keep = slice(0, None, 2) if self.paired else slice(None)
        if self.paired:
            A, y, w = A[0::2], 0.5 * (y[0::2] - y[1::2]), 2.0 * w[0::2]
        self.unit, self.stratum, self.fpc = sample.unit[keep], sample.stratum[keep], sample.fpc[keep]
        self.centered = form.center(sample)
        if self.centered:
            A = A - (w @ A) / w.sum()
            y = y - (w @ y) / w.sum()
        if self.shapley:                                  # x ⊥ 1: x_0 = -sum of the others
            A = A[:, 1:] - A[:, :1]
        self.root = np.sqrt(w)
        self.A, self.Y, self.w = A * self.root[:, None], y * self.root[:, None], w
        self.n = Z.shape[1]
        self.p_add, self.even_map = self.A.shape[1], None

    @functools.cached_property
    def pairs(self) -> np.ndarray | None:
        """The pairs' interaction scores from their even halves (the products of three are screened and weighted by
        them; paired designs only), computed where a fit first asks for them; with several outputs, the largest of
        each output's scores relative to its largest."""
        if self._pair_source is None:
            return None
        Z, target = self._pair_source
        scores = [pair_scores(Z, target[:, j]) for j in range(target.shape[1])]
        if len(scores) == 1:
            return scores[0]
        return np.max([c / c.max() if c.max() > 0 else c for c in scores], axis=0)

    def add_even(self, sv: Semivalue) -> None:
        """Fit the products of every two players with the additive design, unpenalized (an unpaired design's even
        model, kADDSHAP's): their columns join ``A`` and their values (zero for Shapley and Banzhaf values) join
        :meth:`values`."""
        subsets = np.array(list(itertools.combinations(range(self.n), 2)), dtype=np.int64).reshape(-1, 2)
        ones = np.ones(subsets.shape[0])
        self.A = np.hstack([self.A, self.features(subsets, ones)])
        self.even_map = self.value_map(sv, subsets, ones)

    def features(self, subsets: np.ndarray, weights: np.ndarray, dtype: type = float) -> np.ndarray:
        """The whitened feature columns of the products ``subsets`` (scaled by ``weights``), in the rows' form: the
        Shapley rows' ``F(S) - F(empty) - |S| / n (F(N) - F(empty))``, the others' ``F`` at the targets' scale; a
        pair's row ``(F(S) - F(N \\ S)) / 2``, from its first coalition (``w_T(N \\ S) = (-1)^k w_T(S)``); as
        ``dtype`` (float32 for a ranking's pool)."""
        k, n = subsets.shape[1], self.n
        parity, ends = (-1.0) ** k, 1.0 - (-1.0) ** k
        signs, sizes = (self.signs_full[0::2], self.sizes_full[0::2]) if self.paired else \
            (self.signs_full, self.sizes_full)
        F = walsh_products(signs, subsets, dtype)         # a new array: every step below works in place
        if self.paired:
            F *= 0.5 * ends
            if self.shapley and ends:
                F -= np.outer(0.5 * ends * (2.0 * sizes - n) / n, np.ones(subsets.shape[0]))
        elif self.shapley:
            F -= parity
            if ends:
                F -= np.outer(sizes / n, np.full(subsets.shape[0], ends))
        return self._finish(F, weights)

    def _finish(self, F: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Feature rows ``F`` (in place) scaled by ``weights`` (and the targets' scale), centred, whitened."""
        scale = weights if self.shapley else weights * self.scale
        if not np.all(scale == 1.0):
            F *= scale
        if self.centered:
            F -= (self.w.astype(F.dtype) @ F) / F.dtype.type(self.w.sum())
        F *= self.root.astype(F.dtype)[:, None]
        return F

    @functools.cached_property
    def sized(self) -> bool:
        """Whether the symmetric features join the candidates: the rows' coalitions have enough distinct sizes."""
        sizes = self.sizes_full[0::2] if self.paired else self.sizes_full
        distinct = np.unique(np.minimum(sizes, self.n - sizes) if self.paired else sizes).size
        return distinct >= MIN_SIZES * len(size_degrees(self.paired))

    def size_block(self, sv: Semivalue) -> tuple[np.ndarray, np.ndarray]:
        """The symmetric features' whitened rows ``(m, D)`` and value map ``(d, D)``: a pair's row ``P_d(t)`` (odd
        ``d``), an unpaired row ``P_d(t)``, Shapley's less the end value's share as :meth:`features` takes it."""
        degrees = size_degrees(self.paired)
        t = 2.0 * (self.sizes_full[0::2] if self.paired else self.sizes_full) / self.n - 1.0
        F = legendre(t, degrees)
        if self.shapley:                                  # P_d(1) = 1, P_d(-1) = (-1)^d
            ends = 1.0 - (-1.0) ** np.array(degrees)
            F -= np.outer(t, np.ones(len(degrees))) if self.paired else \
                (-1.0) ** np.array(degrees) + np.outer((t + 1.0) / 2.0, ends)
            vmap = np.zeros((self.n, len(degrees)))      # (h(n) - h(0)) / n each, less the same share
        else:
            vmap = np.broadcast_to(size_values(sv, self.n, degrees), (self.n, len(degrees))).copy()
        return self._finish(F, np.ones(len(degrees))), vmap

    def value_map(self, sv: Semivalue, subsets: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``(d, q)``: the values each feature's coefficient gives (its products' semivalues, in the row form)."""
        k = subsets.shape[1]
        out = np.zeros((self.n, subsets.shape[0]))
        out[subsets, np.arange(subsets.shape[0])[:, None]] = semivalue_of_walsh(sv, self.n, k)
        if self.shapley:                                  # minus the share of the end value the row form took out
            out -= (1.0 - (-1.0) ** k) / self.n
        return out * weights

    def x_map(self, X: np.ndarray) -> np.ndarray:
        """The estimator's values of solution rows ``X`` ((p, ...) -> (d, ...)), without the constant offset."""
        X, extra = self._split(X)
        if self.shapley:
            X = np.concatenate([-X.sum(axis=0, keepdims=True), X])
        return self.form.transform(X) + extra

    def values(self, x: np.ndarray) -> np.ndarray:
        """The estimator's values of a solution ``x`` of the eliminated problem."""
        x, extra = self._split(x)
        full = np.concatenate([-x.sum(axis=0, keepdims=True), x]) if self.shapley else x
        return self.form.values(full, self.total) + extra

    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | float]:
        """The additive rows of a solution and the values of its even model's coefficients (0 without one)."""
        if self.even_map is None:
            return x, 0.0
        return x[:self.p_add], self.even_map @ x[self.p_add:]


def _relevance(plain: np.ndarray) -> np.ndarray:
    """Each player's weight in the weighted products: its plain value relative to the largest (max over outputs),
    floored at 1e-3."""
    mags = np.abs(plain)
    rel = (mags / np.maximum(mags.max(axis=0, keepdims=True), 1e-300)).max(axis=1)
    return np.maximum(rel, 1e-3)


class _Blocks:
    """The candidates' feature blocks, built once per sample: the unweighted whitened features of every product set,
    as a fit needs them (their components along the design ``Ua^T F`` and their rows projected off it; the rows
    themselves are not kept), their value maps and Gram matrices; a candidate's weights scale them (every step from
    products to projected rows is linear in a column's weight), so the candidates that share products share this
    work and differ only in their eigendecompositions."""

    def __init__(self, problem: _Problem, sv: Semivalue, score: np.ndarray, Ua: np.ndarray, ranked: int = 0,
                 residual: np.ndarray | None = None) -> None:
        self.problem, self.sv, self.score, self.Ua, self.ranked = problem, sv, score, Ua, ranked
        self.residual = residual                          # the plain fit's, which ranks the ``ranked`` products
        self.blocks: dict = {}
        self.grams: dict = {}

    def block(self, k: int, cap: int) -> tuple:
        """``(subsets, Ua^T F, projected F, value map)`` of the products of ``k`` players (``k = 1``: every player);
        the ``ranked`` number of products of three: the best of ``RANK_POOL`` times as many by a first fit (any
        other number: chosen by their pairs)."""
        key = (k, cap)
        if key not in self.blocks:
            p = self.problem
            if k == 0:                                    # the symmetric features
                F, vmap = p.size_block(self.sv)
                self.blocks[key] = (np.zeros((F.shape[1], 0), dtype=np.int64), *self._project(F), vmap)
                return self.blocks[key]
            ranked = k == 3 and cap == self.ranked
            subsets = self._subsets(k, min(RANK_POOL * cap, math.comb(p.n, 3)) if ranked else cap)
            within = None if ranked else self._within(k, subsets)
            if within is not None:                        # the screened products: columns of the wide block's
                block, cols = within
                self.blocks[key] = (subsets, block[1][:, cols], block[2][:, cols], block[3][:, cols])
                return self.blocks[key]
            if ranked:                                    # ranked in float32 (half the memory traffic); only the
                pool = p.features(subsets, np.ones(subsets.shape[0]), np.float32)  # products kept are built in full
                subsets = subsets[ridge_ranked(pool, self.residual, cap, basis=self.Ua)]      # and projected
            F = p.features(subsets, np.ones(subsets.shape[0]))
            self.blocks[key] = (subsets, *self._project(F), p.value_map(self.sv, subsets, np.ones(subsets.shape[0])))
        return self.blocks[key]

    def _subsets(self, k: int, cap: int) -> np.ndarray:
        """``(q, k)``: the ``cap`` products of ``k`` players chosen by their pairs (every player for ``k = 1``)."""
        if k == 1:
            return np.arange(self.problem.n)[:, None]
        if k == 3 and self.problem.pairs is not None:
            return screened_triples(self.problem.pairs, self.score, cap)
        return top_subsets(self.score, k, cap)

    def _project(self, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(Ua^T F, F projected off the design)``: all a fit needs of the features ``F`` (their rows are not kept)."""
        along = self.Ua.T @ F
        return along, subtract_product(F, self.Ua, along)

    def _within(self, k: int, subsets: np.ndarray) -> tuple[tuple, np.ndarray] | None:
        """A block already built of products of ``k`` players that holds every one of ``subsets``, and their
        columns in it (or None)."""
        weights = self.problem.n ** np.arange(k, dtype=np.int64)[::-1]
        codes = subsets @ weights
        for (kk, _), block in self.blocks.items():
            if kk != k or block[0].shape[0] < subsets.shape[0]:
                continue
            have = block[0] @ weights
            order = np.argsort(have, kind="stable")
            at = np.minimum(np.searchsorted(have[order], codes), have.size - 1)
            if np.array_equal(have[order][at], codes):
                return block, order[at]
        return None

    def gram(self, a: tuple, b: tuple) -> np.ndarray:
        if (a, b) not in self.grams:
            self.grams[(a, b)] = self.block(*a)[2].T @ self.block(*b)[2]
        return self.grams[(a, b)]

    def _weighted(self, parts: list, i: int) -> np.ndarray:
        """Part ``i`` of the blocks ``parts``, each column scaled by its weight, side by side (written in place)."""
        blocks = [self.block(*key)[i] for key, _ in parts]
        out = np.empty((blocks[0].shape[0], sum(b.shape[1] for b in blocks)))
        start = 0
        for block, (_, w) in zip(blocks, parts):
            np.multiply(block, w, out=out[:, start:start + block.shape[1]])
            start += block.shape[1]
        return out

    def design(self, cand: Candidate, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """``(Ua^T F, projected F, value map, Gram of the projected F or None)`` of one candidate's features ``F`` (the
        Gram where the features are no more than the rows)."""
        parts = [((1, 0), np.ones(self.problem.n))] if self.problem.linear else []
        if cand.size:
            parts.append(((0, 0), np.ones(len(size_degrees(self.problem.paired)))))
        cap = cand.cap or cap
        for k in cand.degrees:
            key = (k, cap if k == cand.degrees[0] else cap // 2)
            subsets = self.block(*key)[0]
            if subsets.shape[0] == 0:
                continue
            weights = np.ones(subsets.shape[0])
            if cand.relevance:
                weights = np.prod(self.score[subsets], axis=1) ** (cand.relevance / k)
            if cand.pairs and k == 3:
                scores = triple_scores(self.problem.pairs, self.score, subsets)
                weights = weights * (scores + _PAIRS_FLOOR) ** cand.pairs
            if cand.relevance or cand.pairs:
                weights = weights / np.sqrt(np.mean(weights ** 2))
            if k > cand.degrees[0]:
                weights = weights * _FIVE_SCALE
            parts.append((key, weights))
        m, d = self.problem.A.shape[0], self.problem.n
        if not parts:
            return np.zeros((self.Ua.shape[1], 0)), np.zeros((m, 0)), np.zeros((d, 0)), None
        along, Fh, vmap = (self._weighted(parts, i) for i in (1, 2, 3))
        gram = None
        if Fh.shape[1] <= m:
            gram = np.block([[wa[:, None] * self.gram(a, b) * wb[None, :] for b, wb in parts] for a, wa in parts])
        return along, Fh, vmap, gram


def fit_surrogate(problem: _Problem, sv: Semivalue, order: int) -> SurrogateFit | None:
    """The candidate surrogate and penalty with the least leave-one-out error, or None when it does not beat the plain
    regression's beyond noise (or the sample is too small for any surrogate); on one BLAS thread."""
    with one_thread():
        return _fit(problem, sv, order)


def _fit(problem: _Problem, sv: Semivalue, order: int) -> SurrogateFit | None:
    m, p = problem.A.shape
    if m <= p + 2 or problem.n > MAX_PLAYERS:
        return None
    # one decomposition of the design for every candidate, from its Gram matrix (the SVD where it is near singular):
    # 0.24 -> 0.035 s at 8,000 pairs x 195 players on one thread
    base = gram_basis(problem.A)
    plain_path = RidgePath(problem.A, np.zeros((m, 0)), problem.Y, base=base)
    plain = plain_path.fit(np.inf)
    best_error, best = plain.loo_error, None
    if not np.isfinite(best_error):
        return None
    score = _relevance(problem.values(plain.x) - problem.values(np.zeros_like(plain.x)))
    cands = candidates(problem.paired, min(order, problem.n), problem.even_map is not None, problem.sized)  # k <= n
    cap = feature_cap(m, sum(1 for c in cands if c.degrees))
    complete = complete_cap(m, problem.n, cap) if problem.paired or problem.even_map is not None else 0
    ranked = complete if ranks(m, complete, problem.n) else 0
    if complete:                                          # with products of five where that fit is as cheap (and
        five = not ranked and fit_seconds(m, complete + complete // 2) <= WIDE_SECONDS      # no ranking paid for)
        cands = wide_candidates(cands, complete, five, ranked=bool(ranked))
    blocks = _Blocks(problem, sv, score, base[0], ranked, plain_path.Yh)
    for cand in cands:
        along, Fh, value_map, gram = blocks.design(cand, cap)
        if Fh.shape[1] == 0:
            continue
        path = RidgePath(problem.A, None, problem.Y, base=base, projected=(Fh, gram, along), plain=plain_path)
        for lam in PENALTIES:
            error = path.loo_error(lam)
            if error < best_error:
                best_error, best = error, (cand, lam, path, value_map)
    # the least of many candidates' leave-one-out errors is optimistic: a surrogate must beat the plain fit by more
    # than the noise of that comparison, relative (2 / sqrt(rows): 29% at 49 pairs, 5% at 1500) and in standard errors
    if best is None or best_error > plain.loo_error * (1.0 - 2.0 / math.sqrt(m)):
        return _even_only(problem, plain_path, plain)
    cand, lam, path, value_map = best
    point = path.fit(lam)
    if not significant(plain.loo, point.loo, len(cands) * len(PENALTIES)):
        return _even_only(problem, plain_path, plain)
    # the maps (d, m) of the whitened targets to the values, the plain fit's part shared by every path: with the even
    # model's many columns, through the value map's rows (d) instead of the solution's (p), and without forming the
    # features' coefficient map (q x m: q r m multiply-adds, 3 ms of a 100n fit of 18 players)
    shared = plain_path.plain_map(problem.x_map(np.eye(problem.A.shape[1])))
    L, plain_L = path.value_map(lam, None, value_map, shared), shared[1]
    values = problem.values(point.x) + value_map @ point.c
    gain = plain.loo_error / point.loo_error if point.loo_error > 0 else np.inf
    floor = ranked >= CHECK_SHARE and cand.cap == ranked          # its quarter: never the ranked number, by pairs
    check = _check(problem, blocks, base, plain_path, cand, cap, lam, shared) if floor else None
    label = cand.label if problem.even_map is None else "order-2+" + cand.label
    return SurrogateFit(values, L, point.loo, label, lam, int(value_map.shape[1]), gain,
                        plain_L, plain.loo, point.leverage, point.residual, check)


def _check(problem: _Problem, blocks: _Blocks, base: tuple, plain_path: RidgePath, cand: Candidate, cap: int,
           lam: float, shared: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(L, loo)`` of the candidate with ``1 / CHECK_SHARE`` of its products of three, chosen by their pairs, at the
    chosen penalty: the error bars are at least this fit's, whose products are fixed before its residuals (german
    credit / MLP at 100n, 3 rows x 5 seeds: coverage 0.913 / 0.887 for Shapley / Banzhaf values, with it 0.990 / 0.970;
    with half the products 0.987 / 0.973, 4-5 ms a row, twice the cost)."""
    fewer = dataclasses.replace(cand, cap=cand.cap // CHECK_SHARE)
    along, Fh, value_map, gram = blocks.design(fewer, cap)
    path = RidgePath(problem.A, None, problem.Y, base=base, projected=(Fh, gram, along), plain=plain_path)
    return path.value_map(lam, None, value_map, shared), path.fit(lam).loo


def _even_only(problem: _Problem, path: RidgePath, plain: Any) -> SurrogateFit | None:
    """Where no odd surrogate is taken: None (the plain regression runs), or on a design with the even model its fit
    (the additive and pairwise model, unpenalized)."""
    if problem.even_map is None:
        return None
    L = path.plain_map(problem.x_map(np.eye(problem.A.shape[1])))[1]
    return SurrogateFit(problem.values(plain.x), L, plain.loo, "order-2", np.inf, 0, 1.0, L, plain.loo, plain.leverage,
                        plain.residual)
