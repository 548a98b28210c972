"""Permutation sampling of interaction values: SII and k-SII from windows of consecutive players, STII from the
players before each subset (the samplers in :mod:`~fairshare.engine.samplers.interaction_permutations`).

- **SII**: a subset's estimate is the mean of the discrete derivatives of the windows it fell in (each an
  independent draw of SII's distribution), its standard error their spread over the square root of their count,
  the spread moderated by the one pooled over the subsets of its size (:func:`~fairshare.engine.solve.moderated_variance`, as Monte Carlo's
  :class:`~fairshare.engine.montecarlo.Moments`: a subset whose few draws agree is not given an error of 0); a
  subset in fewer than two windows has an infinite one (in none: the estimate 0).
- **k-SII** is the linear map ``k-SII(S) = sum_{T >= S, |T| <= k} B_{|T| - |S|} SII(T)`` (Bernoulli numbers) of the
  SII estimates of every order up to ``k``; its standard error linearizes each SII mean in its windows and adds
  them up per permutation (windows of one permutation are not independent).
- **STII**: the top order is the mean over permutations of ``Delta_S`` at the players before ``S``'s first (one
  unbiased draw per permutation for every ``k``-subset; their spread moderated as SII's); the lower orders are
  Moebius coefficients, exact.

The estimator is the baseline shapiq's ``PermutationSamplingSII`` / ``PermutationSamplingSTII`` implement; the
regression and stratified methods are more accurate per evaluation on every game measured
(``fairshare bench interactions``), so ``auto`` never picks it. The matrix index ``sii-matrix`` is the map of the
SII estimates, like k-SII. Budget: one whole permutation (:func:`_min_budget`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp

from .._core import arrays
from ..indices.interactions import InteractionIndex, bernoulli_numbers, subsets_up_to
from ..indices.moebius import SubsetIndex
from .samplers.interaction_permutations import (MAX_TEMPLATE_TERMS, InteractionPermutationBatch,
                                                InteractionPermutations, lower_coalitions, permutation_template,
                                                template_terms)
from .solve import moderated_variance, small_sample_factor, without_rounding
from .spec import MethodSpec, Setup

__all__ = ["PermutationInteractionSolver", "sii_to_ksii", "SPECS"]


def sii_to_ksii(subsets: np.ndarray) -> sp.csr_matrix:
    """The ``(p, p)`` map from SII values of ``subsets`` (every subset of sizes ``1..k``, as
    :func:`subsets_up_to`) to k-SII values: row ``S`` holds ``B_{|T| - |S|}`` at each superset ``T``.

    Examples
    --------
    >>> M = sii_to_ksii(subsets_up_to(3, 2))
    >>> M.toarray()[0].tolist()                    # k-SII(0) = SII(0) - (SII(01) + SII(02)) / 2
    [1.0, 0.0, 0.0, -0.5, -0.5, 0.0]
    """
    where = SubsetIndex(subsets)
    own = (subsets >= 0).sum(axis=1)
    B = bernoulli_numbers(int(own.max(initial=1)) + 1)
    r, c, v = [np.arange(subsets.shape[0])], [np.arange(subsets.shape[0])], [np.ones(subsets.shape[0])]
    for t in np.unique(own):
        big = np.flatnonzero(own == t)
        for s in range(1, int(t)):
            picks = np.array(list(itertools.combinations(range(int(t)), s)), dtype=np.int64)
            parts = subsets[big][:, picks].reshape(-1, s)                          # (|big| C(t, s), s)
            r.append(where(parts))
            c.append(np.repeat(big, picks.shape[0]))
            v.append(np.full(parts.shape[0], B[int(t) - s]))
    p = subsets.shape[0]
    return sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(p, p))


class PermutationInteractionSolver:
    """Absorbs permutations' coalition values; gives SII, k-SII or STII values of :func:`subsets_up_to`
    ``(n, order)`` and their standard errors."""

    def __init__(self, setup: Setup) -> None:
        self.index: InteractionIndex = setup.semivalue
        self.n = setup.n_players
        self.kind = "stii" if self.index.kind == "stii" else "sii"
        self.template = permutation_template(self.kind, self.n, self.index.order)
        self.subsets = subsets_up_to(self.n, self.index.order, 1)
        self.where = SubsetIndex(self.subsets)
        self.ids: list[np.ndarray] = []          # per batch: (t, J) subset of each sampled position set
        self.deltas: list[np.ndarray] = []       # per batch: (t, J, k) its discrete derivative
        self.lower_values: np.ndarray | None = None
        self.n_perm = 0

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.v0 = np.asarray(v0, float)

    def absorb(self, batch: InteractionPermutationBatch, values: np.ndarray) -> None:
        V = np.asarray(arrays.to_numpy(values), dtype=float).reshape(batch.coalitions.shape[0], -1)
        k = V.shape[1]
        if batch.extra:
            self.lower_values = self._moebius_of_lower(batch.coalitions[:batch.extra], V[:batch.extra])
        t = batch.perms.shape[0]
        R = self.template.rows.shape[0]
        J = self.template.positions.shape[0]
        Vp = V[batch.extra:].reshape(t, R, k).transpose(1, 0, 2).reshape(R, t * k)
        delta = np.asarray(self.template.signs @ Vp).reshape(J, t, k).transpose(1, 0, 2)
        P = self.template.positions
        players = np.where(P[None] >= 0, batch.perms[:, np.maximum(P, 0)], -1)             # (t, J, order)
        self.ids.append(self.where(players.reshape(t * J, -1)).reshape(t, J))
        self.deltas.append(delta)
        self.n_perm += t

    def _moebius_of_lower(self, coalitions: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``m(S)`` for every subset of ``1..order-1`` players from the values of all of them (and ``v(empty)``)."""
        low = subsets_up_to(self.n, self.index.order - 1, 1)
        at = SubsetIndex(low)
        rows = np.where(coalitions, np.arange(self.n)[None, :], -1)
        rows = -np.sort(-rows, axis=1)[:, :self.index.order - 1]                   # members first, then -1
        value = np.zeros((low.shape[0], values.shape[1]))
        value[at(rows)] = values
        out = np.zeros_like(value)
        own = (low >= 0).sum(axis=1)
        for s in range(1, self.index.order):
            big = np.flatnonzero(own == s)
            out[big] += value[big]
            for l in range(0, s):
                sign = (-1.0) ** (s - l)
                if l == 0:
                    out[big] += sign * self.v0[None, :]
                    continue
                picks = np.array(list(itertools.combinations(range(s), l)), dtype=np.int64)
                parts = at(low[big][:, picks].reshape(-1, l))
                out[big] += sign * value[parts].reshape(big.size, picks.shape[0], -1).sum(axis=1)
        return out

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        ids = np.concatenate(self.ids)                   # (M, J)
        delta = np.concatenate(self.deltas)              # (M, J, k)
        M, J, k = delta.shape
        p = self.subsets.shape[0]
        info = {"n_permutations": int(M), "n_samples": int(M * J)}
        values, stderr = self._stii(ids, delta) if self.kind == "stii" else self._sii(ids, delta)
        if not np.all(np.isfinite(stderr)):
            info["stderr"] = (f"not estimable for {int((~np.isfinite(stderr)).any(axis=1).sum())} of the {p} values: "
                              "fewer than two draws, or every draw of every subset agreeing with its mean")
        return values, stderr, info

    def _sii(self, ids: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """SII, k-SII or the matrix index: the means of the windows' derivatives, mapped; errors per permutation."""
        M, J, k = delta.shape
        p = self.subsets.shape[0]
        flat, d = ids.ravel(), delta.reshape(M * J, k)
        count = np.bincount(flat, minlength=p).astype(float)
        total = np.stack([np.bincount(flat, weights=d[:, c], minlength=p) for c in range(k)], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(count[:, None] > 0, total / count[:, None], 0.0)
        m2 = without_rounding(np.stack([np.bincount(flat, weights=(d[:, c] - mean[flat, c]) ** 2, minlength=p)
                                 for c in range(k)], axis=1), mean, count)
        var = moderated_variance(count, m2, (self.subsets >= 0).sum(axis=1))
        few = ~np.isfinite(var)                           # (p, k): fewer than two draws, or no spread anywhere
        var[few] = 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            # each window's share of its subset's error: (Delta - mean), scaled so that the shares' squares add up to
            # the moderated variance of the mean; a subset whose draws all agree has none: ``unseen`` holds it
            z = (d - mean[flat]) * np.sqrt(var / m2)[flat]
        z = np.where(np.isfinite(z), z, 0.0)
        unseen = np.where(m2 > 0, 0.0, var)
        # k-SII and the matrix index are linear maps of the SII means (identity for SII)
        B = sii_to_ksii(self.subsets) if self.index.kind == "k-sii" else self.index.base_map(self.subsets)
        values = B @ mean
        few = (abs(B) @ few.astype(float)) > 0
        perm = np.repeat(np.arange(M), J)
        stderr = np.empty((p, k))
        for c in range(k):
            E = sp.csr_matrix((z[:, c], (perm, flat)), shape=(M, p))             # one entry per window
            Z = (E @ B.T).toarray() if M else np.zeros((0, p))                    # (M, p): each permutation's share
            stderr[:, c] = np.sqrt((Z ** 2).sum(axis=0) + B.multiply(B) @ unseen[:, c])
        with np.errstate(invalid="ignore"):
            stderr = stderr * small_sample_factor(np.maximum(count - 1, 0))[:, None]
        stderr[few] = np.inf
        return values, stderr

    def _stii(self, ids: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Top order: the mean over permutations (each gives every ``k``-subset one draw); lower: Moebius."""
        M, J, k = delta.shape
        p = self.subsets.shape[0]
        values, stderr = np.zeros((p, k)), np.zeros((p, k))
        top = np.empty((M, J, k))
        top[np.arange(M)[:, None], ids - (p - J)] = delta           # the top subsets come last, in order
        values[p - J:] = top.mean(axis=0)
        count = np.full(J, float(M))
        m2 = without_rounding(((top - values[None, p - J:]) ** 2).sum(axis=0), values[p - J:], count)
        stderr[p - J:] = np.sqrt(moderated_variance(count, m2, np.zeros(J))) * small_sample_factor(count - 1)[:, None]
        if self.lower_values is not None:
            values[:p - J] = self.lower_values
        return values, stderr


# ------------------------------------------------------------------------------------------ registry
def _sampler(setup: Setup) -> InteractionPermutations:
    ix = setup.semivalue
    kind = "stii" if ix.kind == "stii" else "sii"
    n = setup.n_players
    lower = lower_coalitions(n, ix.order) if kind == "stii" else None
    return InteractionPermutations(setup.sampler_rng, n, permutation_template(kind, n, ix.order), lower)


def _min_budget(n: int, ix: InteractionIndex, opts: dict) -> int:
    """One whole permutation: the two ends, STII's coalitions of fewer than ``order`` players (taken once), and
    the new coalitions one permutation's template asks for (SII, k-SII and the matrix index: every window of
    ``1..order`` consecutive positions; STII: every ``order``-subset of positions); its values are means over
    permutations, so fewer evaluations give no value at all.

    Examples
    --------
    >>> from fairshare.indices.interactions import InteractionIndex
    >>> _min_budget(12, InteractionIndex("k-sii", 2), {}), _min_budget(12, InteractionIndex("stii", 2), {})
    (24, 91)
    """
    kind = "stii" if ix.kind == "stii" else "sii"
    lower = sum(math.comb(n, s) for s in range(1, ix.order)) if kind == "stii" else 0
    return 2 + lower + permutation_template(kind, n, ix.order).cost


def _validate(opts: dict, n: int, ix: InteractionIndex) -> None:
    kind = "stii" if ix.kind == "stii" else "sii"
    terms = template_terms(kind, n, ix.order)
    if terms > MAX_TEMPLATE_TERMS:
        raise ValueError(f"method 'iq-permutation' for {ix.name} of {n} players asks each permutation for {terms} "
                         f"evaluation terms (more than {MAX_TEMPLATE_TERMS}); use 'iq-regression'")


SPECS = [
    MethodSpec(
        name="iq-permutation",
        indices=("permutation interactions",),
        description="SII and k-SII from windows of consecutive players in random permutations, STII from the "
                    "players before each subset (permutation sampling, as shapiq's PermutationSamplingSII/STII); "
                    "a baseline: iq-regression is more accurate per evaluation",
        sampler=_sampler, solver=PermutationInteractionSolver,
        min_budget=_min_budget, validate=_validate,
    ),
]
