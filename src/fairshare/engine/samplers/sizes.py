"""Coalition sizes: the size distributions of the unified Shapley framework and how many coalitions of each size
a design takes.

Every distribution the estimators use is *size-symmetric*: it puts a mass ``q_h`` on coalition size ``h`` and
spreads it uniformly over the ``C(d, h)`` coalitions of that size, so a design first decides how many coalitions
of each size to take, then draws that many uniform subsets of each size (:mod:`.subsets`). Sizes and
probabilities live in log space, so ``d = 3072`` works.
"""

from __future__ import annotations

import numpy as np

from ..._core.combinatorics import log_binom, logsumexp

__all__ = ["DISTRIBUTIONS", "shapley_size_log_mass", "size_log_counts", "check_symmetric", "scale_for",
           "systematic_round", "binomial_counts"]

#: Sampling distributions of the unified Shapley framework and their tau (Eq. 2.1): q_h ~ (h (d-h))^-tau.
DISTRIBUTIONS = {"kernel": 1.0, "modified": 0.5, "leverage": 0.0}


def shapley_size_log_mass(d: int, distribution: str = "kernel", tau: float | None = None) -> np.ndarray:
    """``log q_h`` for ``h = 0..d``: the probability that a sampled coalition has size ``h``.

    Kernel weights (tau = 1), leverage scores (tau = 0), modified l2 (tau = 1/2) or
    any ``tau`` in [0, 1] (unified framework v1, Eq. 2.1 and A.66): coalitions of size
    ``h`` get total mass proportional to ``(h (d - h))^-tau``; the empty and full
    coalitions get none.

    Examples
    --------
    >>> q = np.exp(shapley_size_log_mass(4, "leverage"))
    >>> np.round(q, 3)
    array([0.   , 0.333, 0.333, 0.333, 0.   ])
    """
    if distribution == "tau":
        if tau is None or not 0.0 <= float(tau) <= 1.0:
            raise ValueError(f"tau must be given in [0, 1] with distribution='tau', got {tau!r}")
        t = float(tau)
    elif distribution in DISTRIBUTIONS:
        if tau is not None:
            raise ValueError(f"tau is only used with distribution='tau', not {distribution!r}")
        t = DISTRIBUTIONS[distribution]
    else:
        raise ValueError(f"distribution must be one of {sorted(DISTRIBUTIONS) + ['tau']}, got {distribution!r}")
    if d < 2:
        raise ValueError("sampling coalitions of sizes 1..d-1 needs at least 2 players")
    h = np.arange(d + 1, dtype=float)
    out = np.full(d + 1, -np.inf)
    inner = h[1:-1]
    out[1:-1] = -t * (np.log(inner) + np.log(d - inner))
    return out - logsumexp(out)


def size_log_counts(d: int, log_q: np.ndarray) -> np.ndarray:
    """``log C(d, h)`` for ``h = 0..d`` (the coalitions of each size), once ``log_q`` is checked to hold one entry
    per size.

    Examples
    --------
    >>> np.exp(size_log_counts(3, np.zeros(4))).round().tolist()
    [1.0, 3.0, 3.0, 1.0]
    """
    if log_q.shape != (d + 1,):
        raise ValueError(f"log_q must have one entry per size 0..{d}, got shape {log_q.shape}")
    return log_binom(d, np.arange(d + 1))


def check_symmetric(log_q: np.ndarray) -> None:
    """Refuse a size distribution that paired sampling cannot use (not symmetric under ``h -> d - h``).

    Examples
    --------
    >>> check_symmetric(np.log([0.1, 0.2, 0.7]))
    Traceback (most recent call last):
    ValueError: paired sampling needs a size distribution symmetric under h -> d - h
    """
    finite = np.isfinite(log_q)
    if not np.array_equal(finite, finite[::-1]) or not np.allclose(log_q[finite], log_q[::-1][finite]):
        raise ValueError("paired sampling needs a size distribution symmetric under h -> d - h")


def _logsumexp(terms: np.ndarray) -> float:
    """scipy's ``logsumexp`` of a finite 1-d array, its arithmetic step by step (the largest terms set apart, then
    ``log1p``), so the same bits, without its ~0.1 ms of array-API overhead per call (:func:`scale_for` makes 64)."""
    top = terms.max()
    is_top = terms == top
    count = float(is_top.sum())
    rest = np.exp(np.where(is_top, -np.inf, terms) - top).sum()
    rest = rest if rest == 0 else rest / count
    return float(np.log1p(rest) + np.log(count) + top)


def scale_for(log_units: np.ndarray, log_mass: np.ndarray, target: float) -> float:
    """``log c`` such that ``sum_h min(N_h, c * mass_h) = target`` (bisection in log space; ``N_h = exp(log_units)``).

    Examples
    --------
    >>> c = scale_for(np.log([4.0, 4.0]), np.log([1.0, 3.0]), 4.0)
    >>> round(float(np.exp(c)), 6)
    1.0
    """
    lo, hi = -800.0, 800.0
    for _ in range(64):                     # 1600 / 2^64: far below float resolution
        mid = 0.5 * (lo + hi)
        total = np.exp(_logsumexp(np.minimum(log_units, mid + log_mass)))
        if total < target:
            lo = mid
        else:
            hi = mid
    return hi


def systematic_round(expected: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Integer counts with the given means and a fixed total (systematic rounding: one uniform draw).

    Examples
    --------
    >>> systematic_round(np.array([0.5, 1.5, 2.0]), np.random.default_rng(0)).sum()
    np.int64(4)
    """
    cum = np.concatenate([[0.0], np.cumsum(expected)])
    u = rng.random()
    return np.diff(np.floor(cum + u)).astype(np.int64)


def binomial_counts(rng: np.random.Generator, units: np.ndarray, pi: np.ndarray, limit: int) -> np.ndarray:
    """Counts per size ``Binomial(N_h, pi_h)`` (``Poisson(N_h pi_h)`` above 1e10 units), drawn again until their
    total is at most ``limit``, and at least 1 where ``limit`` and the probabilities allow one: a design of no
    coalition gives no values (at a small budget the expected total is about 1, so a third of the draws were empty,
    and the run stopped after its ends on 'no coalitions were sampled'). A first draw that fits is kept as it is.

    Examples
    --------
    >>> n = binomial_counts(np.random.default_rng(0), np.array([10.0, 10.0]), np.array([0.5, 0.5]), 20)
    >>> bool(n.sum() <= 20)
    True
    >>> all(binomial_counts(np.random.default_rng(s), np.array([5.0]), np.array([0.2]), 5).sum() >= 1
    ...     for s in range(50))
    True
    """
    big = units >= 1e10
    lowest = 1 if limit >= 1 and bool(np.any((units >= 1) & (pi > 0))) else 0
    for _ in range(1000):
        n = np.where(big, rng.poisson(np.where(big, units * pi, 0.0)),
                     rng.binomial(np.round(np.where(big, 0, units)).astype(np.int64), np.where(big, 0.0, pi)))
        if lowest <= n.sum() <= limit:
            return n.astype(np.int64)
    raise RuntimeError("could not draw binomial counts within the budget; use counts='systematic'")
