"""The regression formulations the linear estimators solve: which rows, weights and targets a sampled
coalition gives, and how a solution becomes values.

*Shapley kernel* (unified framework, Theorem 2.1): rows ``z_S``, kernel weights
``k(S) = (d - 1) / (C(d, |S|) |S| (d - |S|))``, targets ``v(S) - v(empty) - lambda |S|``; the solution
``x`` is constrained to ``x ⊥ 1`` and the values are ``x + alpha`` with ``alpha = (v(N) - v(empty)) / d``.
The matrix-vector form is ``d / (d - 1) P sum_S k(S) z_S y_S``.

*Semivalue* (Kernel Banzhaf paper, Lemma 3.4): see :class:`SemivalueDesign`; Banzhaf values are the case
``s = 1, t = 1/2``.

Both give design rows ``a_S = s_{|S|} z_S - t_{|S|} 1`` that :mod:`fairshare.engine.solve` handles
alike; :class:`~fairshare.engine.regression.RegressionSolver` is the one solver over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core import arrays
from .._core.combinatorics import log_binom, logsumexp
from .samplers.sample import CoalitionSample
from ..indices.semivalues import Semivalue
from .solve import projected

__all__ = ["log_kernel_weight", "SemivalueDesign", "ShapleyKernel", "SemivalueRegression", "Rows"]


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
