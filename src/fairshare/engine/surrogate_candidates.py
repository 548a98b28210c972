"""Which surrogates the regression tries, and how many Walsh products each holds
(:mod:`fairshare.engine.surrogate_fit` fits them).

Three *screened* candidates (products of three players screened by the pairs' even halves, unweighted and weighted by
the players' plain values; with products of five) share :func:`feature_cap`'s number of products. Where more
products of three players than that fit within ``WIDE_SECONDS`` (:func:`complete_cap`, from the fit's measured cost
:func:`fit_seconds`), the *wide* candidates hold them all (or as many as fit) instead, beside one screened candidate
(:func:`wide_candidates`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from .screening import RANK_POOL

__all__ = ["Candidate", "candidates", "wide_candidates", "feature_cap", "complete_cap", "ranks", "fit_seconds",
           "WIDE_SECONDS"]

#: most multiply-adds of all candidates' decompositions together: ~15 ms on one core (14 GFlop/s measured)
_WORK = 2e8
_MAX_FEATURES = 800
_MIN_FEATURES = 40
#: one thread's seconds per multiply-add of a fit's matrix products (``rows x q x r``: Gram, projections, maps) and
#: per ``r^3`` of its eigendecomposition, measured (OpenBLAS, one core: 83 ms at ``r`` = 816, 12 ms at 377)
_PRODUCT_SECONDS = 7.5e-11
_EIGH_SECONDS = 2.3e-10
#: the most seconds each wide candidate's fit may take (:func:`complete_cap`), and its most products
WIDE_SECONDS = 0.02
_MAX_WIDE = 1200
#: the wide candidates' products of three are ranked by a first fit (:func:`ranks`) where there are at least this
#: many rows per product kept (fewer: the choice fits the sample's noise, and the error bars' coverage fell to
#: 0.84-0.89 at 30n on brca and nhanes at 2 rows); one thread's seconds per row and pooled product of that
#: ranking, measured
_RANK_ROWS = 3
_RANK_SECONDS = 1.2e-8
#: the power of the screening score each product of three of the unweighted candidates is weighted by (paired designs)
PAIRS_POWER = 0.5

def feature_cap(rows: int, n_candidates: int = 1) -> int:
    """How many Walsh products each of ``n_candidates`` fits on ``rows`` rows may use: with ``r = min(rows, q)``,
    the smaller Gram matrix and the projected features (``2 rows q r`` multiply-adds) and its eigendecomposition
    (``~22 r^3``, measured) within ``_WORK`` for all candidates together; ``q`` in [40, 800].

    Examples
    --------
    >>> feature_cap(30), feature_cap(150), feature_cap(1000), feature_cap(1000, 3), feature_cap(2500, 3)
    (800, 800, 182, 119, 96)
    """
    per = _WORK / max(n_candidates, 1)
    return _largest(_MAX_FEATURES, lambda q: 2.0 * rows * q * min(rows, q) + 22.0 * min(rows, q) ** 3 <= per,
                    least=_MIN_FEATURES)


def fit_seconds(rows: int, q: int) -> float:
    """One thread's seconds of one candidate's fit with ``q`` features on ``rows`` rows, as measured: its matrix
    products (``rows q r`` multiply-adds) and its eigendecomposition (``r^3``), ``r = min(rows, q)``.

    Examples
    --------
    >>> round(fit_seconds(900, 400), 3), round(fit_seconds(300, 1140), 3)
    (0.026, 0.014)
    """
    r = min(rows, q)
    return _PRODUCT_SECONDS * rows * q * r + _EIGH_SECONDS * r ** 3


def complete_cap(rows: int, n_players: int, screened: int = 0) -> int:
    """How many products of three players the *wide* candidates hold: every ``C(n, 3)`` where they fit within
    ``WIDE_SECONDS`` of :func:`fit_seconds`, else as many as fit (at most 1,200), with the seconds of ranking them
    where :func:`ranks` does and that keeps at least half as many; where that is more than the ``screened``
    candidates' number, else 0 (then only :func:`feature_cap`'s screened candidates).

    A fit holding many more products (the most relevant by the screening) beat the three screened
    candidates holding fewer on every pair of ``bench default`` it was measured on: 1.1-2.2x lower error at 30n and
    1.1-13x at 100n at 12-20 players, where most products fit (all 816 products of 18 players: 10x at 100n, but at
    170 ms a row); at 40-50 players, where ~300 of 10,000-20,000 fit at 100n, 1.3-1.4x at 10n, 1.1-1.3x at 30n and
    1.2-3.4x at 100n (nhanes / xgboost, brca / MLP), and 1.3-1.6x on a CNN's 64 patches. :func:`wide_candidates`
    keeps one screened candidate beside them for games of a few strong products.

    Examples
    --------
    >>> complete_cap(100, 20), complete_cap(900, 18), complete_cap(450, 30), complete_cap(2000, 40, screened=103)
    (1140, 288, 399, 185)
    >>> complete_cap(50_000, 64, screened=80)                     # no more products than the screened ones: none
    0
    >>> complete_cap(10_000, 12, screened=56)                     # ranking would keep 50: 159 unranked instead
    159
    """
    total = math.comb(n_players, 3)
    q = _largest(min(total, _MAX_WIDE), lambda q: fit_seconds(rows, q) <= WIDE_SECONDS)
    if q < total:                                         # ranked by a first fit of more of them: its seconds too
        ranked = _largest(q, lambda q: _ranked_seconds(rows, q, total) <= WIDE_SECONDS)
        q = ranked if ranks(rows, ranked, n_players) and 2 * ranked >= q else q    # not at half the products
    return q if q > max(screened, 0) else 0


def ranks(rows: int, q: int, n_players: int) -> bool:
    """Whether the wide candidates' ``q`` products of three, fewer than all, are the best by a first fit of
    ``RANK_POOL`` times as many (:func:`~fairshare.engine.screening.ridge_ranked`) rather than by their pairs: where
    there are at least ``_RANK_ROWS`` rows per product and the fit and its ranking take at most ``WIDE_SECONDS`` (on
    the benchmark's pairs at 100n, 3.3x lower error on communities / gradient boosting, 1.1-1.9x on german credit,
    nhanes and brca).

    Examples
    --------
    >>> ranks(900, 288, 18), ranks(900, 816, 18), ranks(600, 386, 40), ranks(900, 300, 18)      # the last: too slow
    (True, False, False, False)
    """
    total = math.comb(n_players, 3)
    return 0 < q < total and rows >= _RANK_ROWS * q and _ranked_seconds(rows, q, total) <= WIDE_SECONDS


def _ranked_seconds(rows: int, q: int, total: int) -> float:
    """:func:`fit_seconds` of ``q`` products and the seconds of ranking ``RANK_POOL`` times as many (of ``total``)."""
    return fit_seconds(rows, q) + _RANK_SECONDS * rows * min(RANK_POOL * q, total)


def _largest(most: int, fits: Callable[[int], bool], least: int = 0) -> int:
    """The largest ``q`` in ``[least, most]`` that ``fits`` (``least`` if none does), by bisection: a cost that grows
    with ``q`` fits up to some ``q`` and not beyond."""
    if fits(most):
        return most
    lo, hi = least, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


@dataclass(frozen=True)
class Candidate:
    """A surrogate: Walsh products of these degrees, each product weighted by its players' plain values relative to
    the largest, to the power ``relevance`` (geometric mean over its players; 0: unweighted); with ``size``, the
    symmetric features too (:mod:`fairshare.engine.size_features`); ``cap``: its own number of products of its
    first degree (0: the fit's :func:`feature_cap`; labelled ``wide``, :func:`complete_cap`'s); ``pairs``: each
    product of three weighted by its screening score (:func:`~fairshare.engine.screening.triple_scores`) to this
    power too."""

    degrees: tuple[int, ...]
    relevance: float
    size: bool = False
    cap: int = 0
    pairs: float = 0.0

    @property
    def label(self) -> str:
        walsh = "walsh-" + "+".join(map(str, self.degrees)) + (f"-weighted{self.relevance:g}" if self.relevance else "")
        walsh += (f"-pairs{self.pairs:g}" if self.pairs else "") + ("-wide" if self.cap else "")
        return ("size" + ("+" if self.degrees else "") if self.size else "") + (walsh if self.degrees else "")


def candidates(paired: bool, order: int, even: bool = False, size: bool = False) -> list[Candidate]:
    """The surrogates tried on a design: odd degrees (3, then 5) when pairs cancel the even part, degrees 2 and 3
    otherwise; with ``size``, the symmetric features alone and with each of them. On a paired design the products of
    three not weighted by relevance are weighted by the square root of their pairs' screening score
    (:func:`~fairshare.engine.screening.triple_scores`): against unweighted products, on the benchmark's tables
    (3 rows x 5 seeds, geometric mean error) 1.1-1.5x lower at 30n on adult, bank, communities and german credit,
    1.0-1.25x at 100n (wide candidates), 1.0-1.2x at 10n.

    Examples
    --------
    >>> [c.label for c in candidates(True, 5)]
    ['walsh-3-pairs0.5', 'walsh-3-weighted1', 'walsh-3+5-weighted2']
    >>> [c.label for c in candidates(False, 3, size=True)]
    ['size', 'size+walsh-2', 'size+walsh-2-weighted2', 'size+walsh-2+3-weighted2']
    """
    if order < 2:
        return []
    if paired or even:
        out = [Candidate((3,), 0.0, size, pairs=PAIRS_POWER if paired else 0.0), Candidate((3,), 1.0, size)]
        out += [Candidate((3, 5), 2.0, size)] if order >= 5 else []
    else:
        out = [Candidate((2,), 0.0, size), Candidate((2,), 2.0, size)]
        out += [Candidate((2, 3), 2.0, size)] if order >= 3 else []
    return ([Candidate((), 0.0, True)] if size else []) + out


def wide_candidates(cands: list[Candidate], cap: int, five: bool, ranked: bool = False) -> list[Candidate]:
    """:func:`complete_cap`'s regime: the symmetric features alone, every product of three (weighted by the pairs as
    :func:`candidates` weights them, not by relevance), with those of five weighted by relevance where that fit is as
    cheap, and the screened products of three at :func:`feature_cap`'s number (a game of a few strong products,
    which the many penalized products blur).

    Where the wide products are ``ranked`` (:func:`ranks`) the screened candidate is left out: the first fit that
    ranks them finds a game's few strong products better than their pairs do, and the screened products, not all
    among the ranked ones, cost a fit of their own. On the benchmark's tables (adult 14, bank, communities, german
    credit; 5 semivalues x 5 rows x 5 seeds at 100n) it was never chosen, and leaving it out saved 6-12 ms a row.

    Examples
    --------
    >>> [c.label for c in wide_candidates(candidates(True, 5, size=True), 816, False)]
    ['size', 'size+walsh-3-pairs0.5-wide', 'size+walsh-3-pairs0.5']
    >>> [c.label for c in wide_candidates(candidates(True, 5, size=True), 288, False, ranked=True)]
    ['size', 'size+walsh-3-pairs0.5-wide']
    """
    wide = [dataclasses.replace(c, cap=cap) for c in cands
            if c.degrees == (3,) and not c.relevance or five and len(c.degrees) > 1]
    screened = [] if ranked else [c for c in cands if c.degrees == (3,) and not c.relevance]
    return [c for c in cands if not c.degrees] + wide + screened
