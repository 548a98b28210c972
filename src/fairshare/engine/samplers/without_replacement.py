"""Distinct coalitions drawn without replacement (unified framework App. F, Algorithm 2): each sampling unit (a
coalition, or a complementary pair) is taken with probability ``min(1, c p_S)``, whole size levels optionally
with certainty, the counts per size rounded systematically (or drawn binomially), then that many distinct
uniform subsets of each size."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._core.combinatorics import logsumexp
from .sample import CoalitionSample
from .sizes import (binomial_counts, check_symmetric, scale_for, shapley_size_log_mass, size_log_counts,
                    systematic_round)
from .subsets import distinct_by_size, distinct_subsets, to_device, torch_subsets, with_complements

__all__ = ["sample_without_replacement"]

_RANDOM_DRAW_POPULATION = 1 << 40      # sizes with more coalitions are drawn at random (repeats ~ count^2 / 2^41)
_AUTO_COMPLETE_SHARE = 0.6


def sample_without_replacement(rng: np.random.Generator, d: int, log_q: np.ndarray, n_units: int,
                               paired: bool = True, counts: str = "systematic",
                               complete: bool | str = False, device: Any = None) -> CoalitionSample:
    """Draw distinct coalitions (App. F, Algorithm 2), each with inclusion probability
    ``min(1, c * p_S)``, the scale ``c`` found by binary search so that about ``n_units``
    units are drawn.

    The number of units of each size is drawn by ``counts``:

    - ``"binomial"``: Binomial(N_h, pi_h) as in the paper, Poisson(N_h pi_h) for sizes with
      more than 1e10 coalitions; the total is random, so draws are repeated until it fits
      ``n_units``.
    - ``"systematic"`` (default): systematic rounding of the expected counts, which keeps
      every inclusion probability exact and the total equal to ``n_units``.

    With ``complete``, whole size levels (sizes ``h`` and ``d - h``) are taken with certainty
    from the outside in while the budget covers them (``True``), or only while a level fills
    at least 60% of what is left (``"auto"``: at small budgets the coalitions of one player
    and of all but one player, which alone make the estimate exact for games with pairwise
    interactions, are worth more than a spread-out sample; measured in benchmarks/shapley.py).
    The rest of the budget is sampled as above.

    Then that many distinct uniform subsets of each size are drawn. With ``paired``, a
    unit is a pair ``{S, complement of S}`` and both rows are returned. Once ``n_units``
    covers every unit, every coalition is taken with weight 1 (the estimate is exact).

    Examples
    --------
    >>> q = shapley_size_log_mass(5, "leverage")
    >>> s = sample_without_replacement(np.random.default_rng(0), 5, q, 15)   # all 15 pairs
    >>> s.n_rows, bool(np.all(s.weight == 1.0))
    (30, True)
    """
    if counts not in ("systematic", "binomial"):
        raise ValueError(f"counts must be 'systematic' or 'binomial', got {counts!r}")
    if complete not in (True, False, "auto"):
        raise ValueError(f"complete must be True, False or 'auto', got {complete!r}")
    log_c = size_log_counts(d, log_q)
    if paired:
        check_symmetric(log_q)
    h, log_units, log_unit_mass = _units(d, log_q, log_c, paired)
    forced = _whole_levels(d, h, log_units, float(n_units), complete)
    target = float(n_units)
    if counts == "binomial":
        # keep the random total within the budget: aim 3 standard deviations below it
        target = max(1.0, target - 3.0 * np.sqrt(target))
    log_pi = _inclusion_log_probabilities(log_units, log_unit_mass, forced, target)
    n_h, log_pi_h = _counts_per_size(rng, log_pi, log_units, n_units, counts)
    if np.all(log_pi_h == 0.0):
        coverage = "all"
    elif np.any(np.isneginf(log_pi_h)):
        coverage = "partial"
    else:
        coverage = "random"
    return _draw(rng, d, h, log_c, n_h, log_pi_h, paired, coverage, device)


def _units(d: int, log_q: np.ndarray, log_c: np.ndarray, paired: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sizes ``h`` the distribution covers (one of each complementary pair when ``paired``), the log number of
    sampling units of each and the log probability mass of one unit."""
    sizes_all = np.arange(d + 1)
    if paired:
        h = sizes_all[(sizes_all <= d / 2) & np.isfinite(log_q)]
        log_units = log_c[h] - np.where(2 * h == d, np.log(2.0), 0.0)
        # mass of one pair unit: p_S + p_complement = 2 q_h / C(d, h)
        log_unit_mass = np.log(2.0) + log_q[h] - log_c[h]
    else:
        h = sizes_all[np.isfinite(log_q)]
        log_units = log_c[h]
        log_unit_mass = log_q[h] - log_c[h]
    return h, log_units, log_unit_mass


def _whole_levels(d: int, h: np.ndarray, log_units: np.ndarray, target: float, complete: bool | str) -> np.ndarray:
    """Which sizes are taken whole: levels (sizes ``h`` and ``d - h``) from the outside in (sizes 1 and d-1 first)
    while the budget covers them (with ``complete="auto"`` only while a level fills most of what is left)."""
    forced = np.zeros(h.size, dtype=bool)
    if not complete:
        return forced
    level = np.minimum(h, d - h)
    left = target
    for lev in np.unique(level):
        members = level == lev
        need = float(np.exp(logsumexp(log_units[members])))
        if need > left + 1e-9 or (complete == "auto" and need < _AUTO_COMPLETE_SHARE * left):
            break
        forced |= members
        left -= need
    return forced


def _inclusion_log_probabilities(log_units: np.ndarray, log_unit_mass: np.ndarray, forced: np.ndarray,
                                 target: float) -> np.ndarray:
    """``log pi_h``, the inclusion probability of a unit of each size: 1 for the sizes taken whole, ``min(1, c
    mass)`` for the others with ``c`` such that ``target`` units are expected in all."""
    if np.log(target + 0.5) >= float(logsumexp(log_units)):
        return np.zeros(log_units.size)
    if forced.any():
        log_pi = np.zeros(log_units.size)
        rest = ~forced
        remaining = target - float(np.exp(logsumexp(log_units[forced])))
        if rest.any() and remaining > 1e-9:           # not the rounding of exp(log 5) = 4.999999999999999
            log_scale = scale_for(log_units[rest], log_unit_mass[rest] + log_units[rest], remaining)
            log_pi[rest] = np.minimum(0.0, log_scale + log_unit_mass[rest])
        elif rest.any():
            log_pi[rest] = -np.inf
        return log_pi
    log_scale = scale_for(log_units, log_unit_mass + log_units, target)
    return np.minimum(0.0, log_scale + log_unit_mass)


def _counts_per_size(rng: np.random.Generator, log_pi: np.ndarray, log_units: np.ndarray, n_units: int,
                     counts: str) -> tuple[np.ndarray, np.ndarray]:
    """The units of each size to draw and their exact inclusion probabilities (log), by ``counts``."""
    expected = np.exp(log_pi + log_units)
    with np.errstate(over="ignore"):
        units_h = np.exp(log_units)                # may be inf for huge sizes; only compared, never divided
    if counts == "systematic" or np.all(log_pi == 0.0):
        expected = np.minimum(expected, np.floor(units_h + 0.5))
        if expected.sum() > n_units:               # guard against rounding in the bisection
            expected *= n_units / expected.sum()
        n_h = systematic_round(expected, rng)
        with np.errstate(divide="ignore"):
            log_pi_h = np.minimum(0.0, np.log(expected) - log_units)
        log_pi_h[expected >= units_h - 1e-9] = 0.0         # sizes taken whole
        return n_h, log_pi_h
    return binomial_counts(rng, units_h, np.exp(log_pi), n_units), log_pi


def _draw(rng: np.random.Generator, d: int, h: np.ndarray, log_c: np.ndarray, n_h: np.ndarray,
          log_pi_h: np.ndarray, paired: bool, coverage: str, device: Any) -> CoalitionSample:
    """``n_h`` distinct coalitions of each size ``h`` (and their complements when ``paired``) with their weights."""
    n_draw = int(n_h.sum())
    if n_draw == 0:
        empty = np.zeros(0)
        return CoalitionSample(np.zeros((0, d), bool), empty, empty.astype(int), empty.astype(int), empty, 0, paired,
                               coverage)
    big = log_c[h] > np.log(_RANDOM_DRAW_POPULATION)
    order = np.concatenate([np.flatnonzero(~big), np.flatnonzero(big)])      # exact sizes first, then the rest
    size = np.repeat(h[order], n_h[order])
    log_upi = np.repeat(log_pi_h[order], n_h[order])
    S = _rows(rng, d, h, n_h, big, size, paired, device)
    unit = np.arange(n_draw)
    if paired:
        unit = np.repeat(unit, 2)
        log_upi = np.repeat(log_upi, 2)
        size = np.repeat(size, 2)
    return CoalitionSample(S, -log_upi, unit, size, -np.expm1(log_upi), int(n_h.sum()), paired, coverage)


def _rows(rng: np.random.Generator, d: int, h: np.ndarray, n_h: np.ndarray, big: np.ndarray, size: np.ndarray,
          paired: bool, device: Any) -> Any:
    """The coalition rows: sizes with few coalitions drawn exactly without replacement (by rank); the others all
    at once by Floyd's algorithm, distinct within a size (repeats, vanishingly rare, drawn again). On the CPU
    every row is written straight into the returned array (drawn rows, then their complements in place)."""
    n_draw = size.size
    S = None if device is not None else np.zeros((n_draw * (2 if paired else 1), d), dtype=bool)
    drawn = None if S is None else (S[0::2] if paired else S)
    blocks, row = [], 0
    for size_h, count in zip(h[~big], n_h[~big]):
        if count == 0:
            continue
        block = distinct_subsets(rng, d, int(size_h), int(count), containing=0 if paired and 2 * size_h == d else None)
        if drawn is None:
            blocks.append(to_device(block, device))
        else:
            drawn[row:row + count] = block
        row += int(count)
    if row < n_draw:
        rows = size[row:]
        holds = paired & (2 * rows == d)
        if drawn is None:
            blocks.append(torch_subsets(rng, d, rows, device, containing=holds))
        else:
            distinct_by_size(rng, d, rows, holds, out=drawn[row:])
    if S is None:
        import torch

        S = torch.cat(blocks)
    if paired:
        if drawn is None:
            S = with_complements(S)
        else:
            np.logical_not(drawn, out=S[1::2])
    return S
