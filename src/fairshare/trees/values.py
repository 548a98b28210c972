"""Exact semivalues of tree games in polynomial time, for any semivalue.

Each leaf term ``w(S) = prod_{f in F} (A_f if f in S else R_f)`` depends only on the
``|F|`` features of its path. A player ``i`` in ``F`` changes it by
``(A_i - R_i) prod_{f in F \\ i}(...)``, so its semivalue is

    (A_i - R_i) * sum_t e_t * c(|F|, t),   c(F, t) = sum_u C(n - F, u) p_{t + u},

where ``e_t`` is the coefficient of ``z^t`` in ``prod_{f in F \\ i} (R_f + A_f z)`` (the
weight of the coalitions holding ``t`` of the other path features) and ``c`` sums the
semivalue weights over the ``u`` players off the path. The leave-one-out polynomials
come from one product per leaf by synthetic division (stable here since
``0 <= R <= A = 1`` or ``A = 0``). Cost: ``O(leaves * depth^2)``.

When the semivalue has a known measure on the inclusion probability ``u`` (Shapley, Banzhaf,
beta-Shapley, weighted Banzhaf), ``sum_t e_t c(F, t) = int prod_{f != i} ((1 - u) R_f + u A_f)
dmu(u)`` is integrated exactly by a quadrature; :mod:`fairshare.trees.kernels` does that in a
compiled walk over the trees. :func:`leaf_semivalues` serves semivalues given by their weights.
"""

from __future__ import annotations

import numpy as np

from .._core.combinatorics import log_binom, logsumexp
from ..indices.semivalues import Semivalue

__all__ = ["path_weights", "leaf_semivalues", "sign_tables", "factor_polynomial"]


def path_weights(semivalue: Semivalue, n_players: int, depth: int) -> np.ndarray:
    """``c[F, t]`` for ``F = 0..depth`` path features and ``t = 0..depth-1`` of them present besides the player.

    Examples
    --------
    >>> c = path_weights(Semivalue.shapley(), 10, 3)
    >>> np.round(c[3, :3] * 3, 4)    # Shapley: t! (F-1-t)! / F! = 1/3, 1/6, 1/3
    array([1. , 0.5, 1. ])
    """
    n = n_players
    log_p = semivalue.log_weights(n)
    out = np.zeros((depth + 1, max(depth, 1)))
    for F in range(1, depth + 1):
        u = np.arange(n - F + 1)
        t = np.arange(F)
        terms = log_binom(n - F, u)[None, :] + log_p[t[:, None] + u[None, :]]
        out[F, :F] = np.exp(logsumexp(terms, axis=1))
    return out


def factor_polynomial(const: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Coefficients ``(..., D + 1)`` of ``prod_f (const_f + slope_f z)`` over the last axis (``D`` factors): how
    much weight the coalitions holding ``t`` of a path's features carry.

    Examples
    --------
    >>> factor_polynomial(np.array([1.0, 2.0]), np.array([1.0, 1.0]))      # (1 + z)(2 + z)
    array([2., 3., 1.])
    """
    D = const.shape[-1]
    poly = np.zeros(const.shape[:-1] + (D + 1,))
    poly[..., 0] = 1.0
    for f in range(D):
        shifted = np.zeros_like(poly)
        shifted[..., 1:] = poly[..., :-1] * slope[..., f, None]
        poly = poly * const[..., f, None] + shifted
    return poly


def leaf_semivalues(A: np.ndarray, R: np.ndarray, n_factors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-factor value of each leaf term: ``(A_i - R_i) * sum_t e_t c(F, t)``.

    Parameters
    ----------
    A, R : (..., L, D) factors (pads: A = 0, R = 1)
    n_factors : (L,) real factors per leaf
    weights : output of :func:`path_weights` for ``depth >= D``

    Returns
    -------
    (..., L, D) array; multiply by the leaf value and add into the factor's feature.
    """
    A, R = np.broadcast_arrays(np.asarray(A, dtype=float), np.asarray(R, dtype=float))
    D = A.shape[-1]
    poly = factor_polynomial(R, A)                          # coefficients of prod_f (R_f + A_f z), degree <= D
    cw = weights[n_factors]                                  # (L, D): c(F_L, t)
    out = np.zeros(A.shape)
    for s in range(D):
        a, r = A[..., s], R[..., s]
        # divide by (R_s + A_s z): synthetic division when A_s = 1, scaling when A_s = 0
        quotient = np.zeros(A.shape[:-1] + (D,))
        carry = poly[..., D]
        for t in range(D - 1, -1, -1):
            quotient[..., t] = carry
            carry = poly[..., t] - r * carry
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.where((r > 0)[..., None], poly[..., :D] / r[..., None], 0.0)
        loo = np.where((a > 0)[..., None], quotient, scaled)
        out[..., s] = (a - r) * np.sum(loo * cw, axis=-1)
    return out


def sign_tables(semivalue: Semivalue, n_players: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Values of the members of ``u(S) = 1[P subset of S, S disjoint from N]`` with ``|P| = p``, ``|N| = q``.

    An interventional leaf term with one baseline row is such a game: ``P`` holds the path
    features only the explicand follows, ``N`` those only the baseline follows. A member of ``P``
    gets ``sum_l p_l C(n-p-q, l-p+1)``, a member of ``N`` minus ``sum_l p_l C(n-p-q, l-p)``.
    Returns ``(positive[p, q], negative[p, q])`` for ``p + q <= depth``.

    Examples
    --------
    >>> pos, neg = sign_tables(Semivalue.shapley(), 10, 3)
    >>> round(float(pos[1, 1]), 9), round(float(neg[1, 1]), 9)   # Shapley: (p-1)! q! / (p+q)!, -p! (q-1)! / (p+q)!
    (0.5, -0.5)
    """
    n = n_players
    log_p = semivalue.log_weights(n)
    ell = np.arange(n)
    p = np.arange(depth + 1)[:, None]
    q = np.arange(depth + 1)[None, :]
    ok = (p + q >= 1) & (p + q <= min(depth, n))
    rest = np.where(ok, n - p - q, 0)[..., None]                     # (p, q, 1)
    with np.errstate(invalid="ignore"):
        log_pos = logsumexp(log_p + log_binom(rest, ell - p[..., None] + 1), axis=-1)
        log_neg = logsumexp(log_p + log_binom(rest, ell - p[..., None]), axis=-1)
    pos = np.where(ok & (p >= 1), np.exp(log_pos), 0.0)
    neg = np.where(ok & (q >= 1), -np.exp(log_neg), 0.0)
    return pos, neg
