"""Walsh products: the interaction features of the surrogate regression, and their exact semivalues.

A Walsh product of the players ``T`` is the game ``w_T(S) = prod_{i in T} (2 [i in S] - 1)``: +1 or -1 by the
parity of the members of ``T`` outside ``S``. Products of an odd number of players are *odd* games
(``w_T(N \\ S) = -w_T(S)``), the part of a game that paired regression sees and cannot fit with an additive model;
products of an even number are even games, which complementary pairs cancel. Every semivalue gives the members of
``T`` one and the same value (``semivalue_of_walsh``) and the other players none, so a surrogate built from Walsh
products has exact values at the cost of one number per degree:

    phi_i(w_T) = sum_{a=1}^{k} C(k-1, a-1) 2^a (-1)^(k-a) U_a,      U_a = sum_l C(n-a, l-a+1) p_l,

``U_a`` being the value a member gets from the unanimity game of ``a`` players. Shapley values give ``2 / k`` for
odd ``k`` and 0 for even ``k``; Banzhaf values give 0 for every ``k >= 2``.

Which products (:func:`top_subsets`): the ``k``-subsets with the largest product of their players' scores (the
absolute values of a plain fit), as many as a cap allows, drawn from the players ranked first (as many as keep
``POOL`` times the cap): a game's interactions live mostly among the players that matter, but not only among the very
first. On the exact Walsh spectra of the benchmark's tree and MLP games (14-20 players), the 120 products of three
players by this rule carried 24-90% of the order-3 energy where every product of the first 10 players carried
21-84%; on their estimates, 1.0-1.7x lower mean error at 30n and 100n evaluations.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._core.combinatorics import log_binom, logsumexp
from ..indices.semivalues import Semivalue

__all__ = ["walsh_products", "semivalue_of_walsh", "top_subsets", "pool_subsets", "best_rows", "players_for", "POOL"]

#: :func:`top_subsets` ranks the subsets of as many first players as keep this many times the cap of them
POOL = 8


def walsh_products(signs: np.ndarray, subsets: np.ndarray, dtype: type = float) -> np.ndarray:
    """``(m, q)`` products ``prod_{i in T} signs[:, i]`` for each row of ``subsets`` (``(q, k)`` player indices), as
    ``dtype``.

    Examples
    --------
    >>> s = np.array([[1.0, -1.0, -1.0], [1.0, 1.0, -1.0]])
    >>> walsh_products(s, np.array([[0, 1, 2]])).ravel().tolist()
    [1.0, -1.0]
    """
    subsets = np.asarray(subsets, dtype=np.int64)
    if subsets.shape[1] == 0:
        return np.ones((signs.shape[0], subsets.shape[0]), dtype=dtype)
    signs = np.asarray(signs, dtype=float)
    # (n, m): each factor a whole row, gathered fast; signs of +-1 as bytes (an eighth of the memory traffic; their
    # products are exact, so the floats are the same bits)
    rows = np.ascontiguousarray(signs.T.astype(np.int8) if np.all(np.abs(signs) == 1.0) else signs.T)
    out = rows[subsets[:, 0]]                             # products of signs: exact in any order
    for j in range(1, subsets.shape[1]):
        out *= rows[subsets[:, j]]
    return out.T.astype(dtype, order="C")


@functools.lru_cache(maxsize=256)
def semivalue_of_walsh(sv: Semivalue, n: int, k: int) -> float:
    """The value every member of ``T`` (``|T| = k``) gets from the Walsh product ``w_T`` under ``sv`` with ``n``
    players (the module docstring's formula; non-members get 0).

    Examples
    --------
    >>> sh, bz = Semivalue.shapley(), Semivalue.banzhaf()
    >>> [round(semivalue_of_walsh(sh, 10, k), 6) for k in (1, 2, 3, 5)]
    [2.0, 0.0, 0.666667, 0.4]
    >>> [round(semivalue_of_walsh(bz, 10, k), 6) for k in (1, 3)]
    [2.0, 0.0]
    """
    if not 1 <= k <= n:
        raise ValueError(f"a Walsh product of {k} players needs 1 <= k <= n = {n}")
    log_p = sv.log_weights(n)                                     # p_l for l = 0..n-1
    total, size = 0.0, 0.0
    for a in range(1, k + 1):
        ell = np.arange(a - 1, n)
        with np.errstate(invalid="ignore"):
            terms = log_binom(n - a, ell - a + 1) + log_p[ell]
        finite = terms[np.isfinite(terms)]
        u_a = float(np.exp(logsumexp(finite))) if finite.size else 0.0
        term = math.comb(k - 1, a - 1) * 2.0 ** a * (-1.0) ** (k - a) * u_a
        total, size = total + term, size + abs(term)
    return 0.0 if abs(total) <= 1e-12 * size else total          # exact zeros (even Shapley, Banzhaf) stay zero


def players_for(n: int, k: int, cap: int) -> int:
    """The most players whose ``k``-subsets number at most ``cap`` (at least ``k``, at most ``n``).

    Examples
    --------
    >>> players_for(30, 3, 300), players_for(10, 3, 300)
    (13, 10)
    """
    top = k
    while top < n and math.comb(top + 1, k) <= cap:
        top += 1
    return top


def top_subsets(score: np.ndarray, k: int, cap: int) -> np.ndarray:
    """The ``cap`` ``k``-subsets with the largest product of their players' ``score`` (ties by index), among the
    players with the highest scores that keep at most ``POOL x cap`` subsets: ``(q, k)`` sorted player indices in
    lexicographic order, or ``(0, k)`` when fewer than ``k`` players exist.

    Examples
    --------
    >>> top_subsets(np.array([0.1, 3.0, 2.0, 0.5]), 3, 1).tolist()
    [[1, 2, 3]]
    >>> top_subsets(np.array([4.0, 3.0, 2.0, 1.0, 0.1]), 2, 4).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2]]
    """
    if int(score.size) < k or cap < 1:
        return np.zeros((0, k), dtype=np.int64)
    score = np.asarray(score, dtype=float)
    subsets = pool_subsets(score, k, POOL * cap)
    if subsets.shape[0] <= cap:
        return subsets
    return best_rows(subsets, np.log(np.maximum(score, 1e-300))[subsets].sum(axis=1), cap)


def pool_subsets(score: np.ndarray, k: int, most: int) -> np.ndarray:
    """Every ``k``-subset of the players with the highest ``score`` (ties by index), as many players as keep at most
    ``most`` of them (at least ``k``): ``(q, k)`` sorted player indices in lexicographic order.

    Examples
    --------
    >>> pool_subsets(np.array([0.1, 3.0, 2.0, 0.5]), 2, 3).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    pool = np.sort(np.argsort(-np.asarray(score, dtype=float), kind="stable")[:players_for(int(score.size), k, most)])
    return pool[_combinations(int(pool.size), k)]


def best_rows(subsets: np.ndarray, score: np.ndarray, cap: int) -> np.ndarray:
    """The ``cap`` rows of ``subsets`` with the highest ``score`` (ties: the earlier row), in their order.

    Examples
    --------
    >>> best_rows(np.array([[0, 1], [0, 2], [1, 2]]), np.array([0.5, 2.0, 0.5]), 2).tolist()
    [[0, 1], [0, 2]]
    """
    return subsets[np.sort(np.argsort(-np.asarray(score), kind="stable")[:cap])]


@functools.lru_cache(maxsize=64)
def _combinations(p: int, k: int) -> np.ndarray:
    """Every ``k``-subset of ``range(p)`` in lexicographic order, ``(C(p, k), k)`` (cached, read-only)."""
    out = np.arange(p, dtype=np.int64)[:, None] if k else np.zeros((1, 0), dtype=np.int64)
    for _ in range(1, k):              # each subset, extended by every player above its last (the order is kept)
        last = out[:, -1]
        count = p - 1 - last
        row = np.repeat(np.arange(out.shape[0]), count)
        new = last[row] + 1 + np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)
        out = np.column_stack([out[row], new])
    out.flags.writeable = False
    return out
