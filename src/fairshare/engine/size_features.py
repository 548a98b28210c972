"""Symmetric features: functions of a coalition's size alone, which every player shares equally under any semivalue.

A game's *symmetric* part ``h(|S|)`` (the output rising as more of the input is kept, whatever is kept) is no value's
business: under every semivalue each player gets the same ``sum_l P(l) (h(l + 1) - h(l))``, and under Shapley values,
with the sum fixed by efficiency, it moves nothing. But paired regression fits it with the additive model (the
linear part of ``h`` only): what is left of ``h`` is noise in every sampled fit, as large as ``h`` is curved. On image
games with a blurred baseline it is the largest part of the error: on a random ResNet-50 (width 8, 112 x 112, 196
patches), four odd Legendre polynomials of the size in the paired fit cut the error 2.5-2.7x at 1,000 and 4,000
evaluations; on the benchmark's tables (8-20 features) 1.1-1.7x at 30n and 100n, 0.87-1.24x at 10n unpenalized.

The features are Legendre polynomials ``P_d(t)`` of ``t = 2 |S| / n - 1``: odd degrees on a paired design (pairs
cancel the even ones), every degree from 2 on an unpaired one; degree 1 is the additive model's own.
"""

from __future__ import annotations

import numpy as np

from ..indices.semivalues import Semivalue

__all__ = ["size_degrees", "legendre", "size_values", "MIN_SIZES"]

#: the symmetric features join a fit where its rows have at least this many distinct sizes per feature (a pair: the
#: smaller of its two sizes)
MIN_SIZES = 2


def size_degrees(paired: bool) -> tuple[int, ...]:
    """The Legendre degrees of the symmetric features: odd ones (3 to 9) on a paired design, 2 to 7 otherwise.

    Examples
    --------
    >>> size_degrees(True), size_degrees(False)
    ((3, 5, 7, 9), (2, 3, 4, 5, 6, 7))
    """
    return (3, 5, 7, 9) if paired else (2, 3, 4, 5, 6, 7)


def legendre(t: np.ndarray, degrees: tuple[int, ...]) -> np.ndarray:
    """``(len(t), len(degrees))``: the Legendre polynomials of these degrees at ``t`` in [-1, 1].

    Examples
    --------
    >>> (legendre(np.array([-1.0, 0.0, 1.0]), (2, 3)).round(3) + 0.0).tolist()
    [[1.0, -1.0], [-0.5, 0.0], [1.0, 1.0]]
    """
    return np.polynomial.legendre.legvander(np.asarray(t, dtype=float), max(degrees))[:, list(degrees)]


def size_values(sv: Semivalue, n: int, degrees: tuple[int, ...]) -> np.ndarray:
    """``(len(degrees),)``: each player's semivalue of ``P_d(2 |S| / n - 1)``, the same for every player:
    ``sum_l P(l) (h(l + 1) - h(l))`` with ``P(l)`` the probability that the semivalue's coalition has ``l`` players.

    Examples
    --------
    >>> (size_values(Semivalue.shapley(), 10, (2, 3)).round(6) + 0.0).tolist()   # (h(n) - h(0)) / n
    [0.0, 0.2]
    >>> (size_values(Semivalue.banzhaf(), 10, (2, 3)).round(6) + 0.0).tolist()
    [0.0, -0.16]
    """
    P = np.exp(sv.log_size_probabilities(n))
    h = legendre(2.0 * np.arange(n + 1) / n - 1.0, degrees)
    return P @ np.diff(h, axis=0)
