"""Log-space combinatorics: binomials and sums that stay finite for thousands of players."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = ["log_binom", "logsumexp", "size_log_counts"]


def log_binom(n: np.ndarray | int, k: np.ndarray | int) -> np.ndarray:
    """Natural log of the binomial coefficient C(n, k), elementwise; ``-inf`` outside 0 <= k <= n.

    Examples
    --------
    >>> round(float(np.exp(log_binom(5, 2))), 9)
    10.0
    >>> bool(np.isfinite(log_binom(3072, 1536)))
    True
    """
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    valid = (k >= 0) & (k <= n)
    with np.errstate(invalid="ignore"):
        out = gammaln(n + 1) - gammaln(np.where(valid, k, 0) + 1) - gammaln(np.where(valid, n - k, 0) + 1)
    return np.where(valid, out, -np.inf)


def size_log_counts(n: int) -> np.ndarray:
    """``log C(n, s)`` for every coalition size ``s = 0..n``.

    Examples
    --------
    >>> np.round(np.exp(size_log_counts(3)))
    array([1., 3., 3., 1.])
    """
    return log_binom(n, np.arange(n + 1))
