"""The surrogate regression's tests and error bars: whether a surrogate's leave-one-out gain is beyond chance
(:func:`significant`) and the standard errors of its fit by random groups of sampling units (:func:`surrogate_stderr`,
:func:`groups`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .solve import MAX_GROUPS, replicate_stderr, unit_groups

__all__ = ["significant", "surrogate_stderr", "groups", "LEVEL"]

#: one-sided level at which a surrogate's leave-one-out gain must be significant (:func:`significant`)
LEVEL = 0.05


def significant(plain_loo: np.ndarray, loo: np.ndarray, tries: int = 1, level: float = LEVEL) -> bool:
    """Whether the best of ``tries`` surrogates' leave-one-out error is lower than the plain fit's beyond chance: a
    one-sided ``t`` test of the log of their ratio (its standard error by the delta method over the rows, which are
    the sampling units and so nearly independent) at ``level / tries`` (Bonferroni: the least of many errors is
    optimistic). On the log scale a few rows with large residuals weigh what they weigh in the ratio, not more.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> plain = rng.normal(size=(400, 1))
    >>> significant(plain, 0.5 * plain, 18), significant(plain, plain + 0.05 * rng.normal(size=(400, 1)), 18)
    (True, False)
    """
    from scipy.stats import t

    a, b = np.sum(loo ** 2, axis=1), np.sum(plain_loo ** 2, axis=1)
    m = a.size
    if m < 3 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))) or b.sum() <= 0:
        return False
    if a.sum() <= 0:
        return True
    u = a / a.mean() - b / b.mean()                        # the log ratio's gradient, row by row
    spread = float(np.std(u, ddof=1)) / math.sqrt(m)
    return bool(math.log(a.sum() / b.sum()) < -float(t.ppf(1.0 - level / max(tries, 1), m - 1)) * spread)


def surrogate_stderr(problem: Any, L: np.ndarray, loo: np.ndarray, group: np.ndarray | None) -> np.ndarray:
    """Per-player standard errors ``(d, k)``: random groups of sampling units (balanced over strata, as the plain
    regression's: ``group`` from :func:`groups`), each group's share ``sum_j sqrt(fpc_j) L_j loo_j`` as a replicate,
    with the small-sample ``t`` factor; infinite where a row is fitted exactly, zero where every unit was taken with
    certainty."""
    d, k = L.shape[0], loo.shape[1]
    if group is None:                                       # fewer than two random units
        random = bool(np.any(problem.fpc > 1e-12))
        return np.full((d, k), np.inf) if random else np.zeros((d, k))
    if not np.all(np.isfinite(loo)):
        return np.full((d, k), np.inf)
    G = int(group.max()) + 1
    shares = loo * np.sqrt(problem.fpc)[:, None]                              # (m, k)
    spread = np.zeros((loo.shape[0], G * k))
    spread[np.arange(loo.shape[0])[:, None], group[:, None] * k + np.arange(k)[None, :]] = shares
    totals = (L @ spread).reshape(d, G, k)
    replicates = G * totals
    return replicate_stderr(replicates - replicates.mean(axis=1, keepdims=True), axis=1)


def groups(problem: Any, rng: np.random.Generator) -> np.ndarray | None:
    """A random group per row for :func:`surrogate_stderr` (None with fewer than two random sampling units).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> rows = SimpleNamespace(unit=np.arange(6), stratum=np.zeros(6, int), fpc=np.ones(6))
    >>> sorted(set(groups(rows, np.random.default_rng(0)).tolist()))
    [0, 1, 2, 3, 4, 5]
    """
    units, first = np.unique(problem.unit, return_index=True)
    n_random = int((problem.fpc[first] > 1e-12).sum())
    if n_random < 2:
        return None
    return unit_groups(problem.unit, problem.stratum, rng, min(MAX_GROUPS, n_random))
