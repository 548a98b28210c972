"""Products of three players screened by their pairs: the even half of a paired sample, which the paired regression
discards, shows which pairs of players interact, and a game's order-3 interactions live mostly where its pairs do.

A complementary pair ``(S, N \\ S)`` gives the odd part of the game, ``(v(S) - v(N \\ S)) / 2``, which the regression
fits, and its even part ``(v(S) + v(N \\ S)) / 2``. Centred within each size stratum (``min(|S|, n - |S|)``: what
depends on the size alone is symmetric and cancels), the even part's covariance with the products of two players'
signs scores each pair ``|c_ij|``. A product of three players ``T = {a, b, d}`` scores
``|c_ab| r_d + |c_ad| r_b + |c_bd| r_a`` (``r``: the players' relevance from the plain fit): a pair that interacts
with a player that matters. On the exact Walsh spectra of the benchmark's tree and MLP games (14-20 players) the 120
products of three players ranked so carried 37-93% of the order-3 energy, those ranked by the product of the players'
relevance 24-90%; on estimates from the samples, 1.1-2.2x lower mean error at 30n and 100n evaluations.

Where many products are kept but fewer than all (:func:`ridge_ranked`), a first ridge fit of three times as many
(the best screened so) ranks them better than their pairs: on communities / gradient boosting at 100n, 3.3x lower
error than the same number screened by their pairs. Only with at least 3 rows per product kept: with fewer, the
choice fits the sample's noise (its leave-one-out errors are optimistic, and the error bars' coverage fell to
0.84-0.89).
"""

from __future__ import annotations

import numpy as np

from .walsh import best_rows, pool_subsets, top_subsets

__all__ = ["pair_scores", "screened_triples", "triple_scores", "ridge_ranked", "SCREEN_POOL", "RANK_POOL"]

#: the triples are ranked among the players with the highest relevance that keep at most this many of them
SCREEN_POOL = 20_000
#: :func:`ridge_ranked` chooses among this many times the products it keeps (the best screened by the pairs), with
#: ``_RANK_STEPS`` conjugate-gradient steps at a penalty of ``_RANK_PENALTY`` times the columns' mean squared norm
RANK_POOL = 3
_RANK_STEPS = 10
_RANK_PENALTY = 1e-2


def pair_scores(coalitions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``(n, n)`` interaction scores of the pairs of players from a paired sample: rows ``2i`` and ``2i + 1`` are
    complementary coalitions (``coalitions`` boolean ``(2p, n)``, ``values`` ``(2p,)``). One pass over the pairs
    sorted by stratum (their means by ``reduceat``) and one ``(n, p) x (p, n)`` product.

    Examples
    --------
    >>> import itertools
    >>> Z = np.array(list(itertools.product([False, True], repeat=4)))
    >>> Z = np.stack([Z, ~Z], axis=1).reshape(-1, 4)                      # each coalition and its complement
    >>> s = 2.0 * Z - 1.0
    >>> C = pair_scores(Z, s[:, 0] * s[:, 2] + 0.1 * s[:, 1])           # players 0 and 2 interact
    >>> [int(i) for i in np.unravel_index(np.argmax(C), C.shape)]
    [0, 2]
    """
    Z = np.asarray(coalitions, dtype=bool)[0::2]
    values = np.asarray(values, dtype=float)
    sizes = Z.sum(axis=1)
    order = np.argsort(np.minimum(sizes, Z.shape[1] - sizes), kind="stable")      # by stratum
    stratum = np.minimum(sizes, Z.shape[1] - sizes)[order]
    starts = np.flatnonzero(np.r_[True, stratum[1:] != stratum[:-1]])
    counts = np.diff(np.r_[starts, stratum.size])
    signs = 2.0 * Z[order] - 1.0
    signs -= np.repeat(np.add.reduceat(signs, starts, axis=0) / counts[:, None], counts, axis=0)
    even = 0.5 * (values[0::2] + values[1::2])[order]
    even -= np.repeat(np.add.reduceat(even, starts) / counts, counts)
    scores = np.abs((signs * even[:, None]).T @ signs)
    np.fill_diagonal(scores, 0.0)
    return scores


def screened_triples(pairs: np.ndarray, relevance: np.ndarray, cap: int) -> np.ndarray:
    """The ``cap`` products of three players with the highest screening score (module docstring), among the most
    relevant players that keep ``SCREEN_POOL`` of them, sorted; ties by the product of the players' relevance, then
    by index. :func:`~fairshare.engine.walsh.top_subsets` where the pairs show nothing (all scores zero).

    Examples
    --------
    >>> pairs = np.zeros((5, 5)); pairs[3, 4] = pairs[4, 3] = 1.0
    >>> screened_triples(pairs, np.array([1.0, 0.9, 0.8, 0.1, 0.1]), 2).tolist()
    [[0, 3, 4], [1, 3, 4]]
    """
    top = pairs.max() if pairs.size else 0.0
    if relevance.size < 3 or cap < 1 or not np.isfinite(top) or top <= 0:
        return top_subsets(relevance, 3, cap)
    triples = pool_subsets(relevance, 3, SCREEN_POOL)
    return best_rows(triples, triple_scores(pairs, relevance, triples), cap)


def triple_scores(pairs: np.ndarray | None, relevance: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """The screening score of each product of three players ``subsets`` ``(q, 3)`` (module docstring), relative to
    the largest pair score; the cube root of its players' relevance product where the pairs show nothing (no pair
    scores, or all zero).

    Examples
    --------
    >>> pairs = np.zeros((4, 4)); pairs[2, 3] = pairs[3, 2] = 1.0
    >>> triple_scores(pairs, np.array([1.0, 0.5, 0.2, 0.2]), np.array([[0, 2, 3], [0, 1, 2]])).round(3).tolist()
    [1.0, 0.0]
    """
    r = relevance
    a, b, d = np.asarray(subsets, dtype=np.int64).T
    product = np.cbrt(r[a] * r[b] * r[d])
    top = pairs.max() if pairs is not None and pairs.size else 0.0
    if not np.isfinite(top) or top <= 0:
        return product
    return (pairs[a, b] * r[d] + pairs[a, d] * r[b] + pairs[b, d] * r[a]) / top + 1e-3 * product


def ridge_ranked(F: np.ndarray, r: np.ndarray, keep: int, basis: np.ndarray | None = None) -> np.ndarray:
    """The ``keep`` columns of ``F`` ``(m, q)`` with the largest coefficients in a ridge fit of the residuals ``r``
    ``(m, k)`` (relative to each output's largest), sorted: a first fit of all the products screens them better than
    their pairs do. ``_RANK_STEPS`` conjugate-gradient steps from zero (``4 m q`` multiply-adds each), not a
    decomposition: the ranking needs the large coefficients, not the fit. With ``basis`` (``(m, p)``, orthonormal
    columns, and ``r`` orthogonal to them) it ranks ``F``'s columns projected off the basis without forming them
    (``2 m p`` more a step, in place of the ``2 m p q`` of the projection): an unpaired design with its even model
    has ``p = 1 + n + C(n, 2)``, and only the products kept need projecting. The penalty is relative to ``F``'s
    columns as given.

    On communities / gradient boosting (18 players, 100n, 3 rows x 5 seeds against enumeration), the 363 products of
    three kept so gave 3.5x lower error than the 363 screened by their pairs (10x with the best 363 of the game's
    exact Walsh spectrum); 10 steps 3.5x, 5 steps 2.8x, 40 steps 5.5x.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> F = rng.normal(size=(60, 8))
    >>> ridge_ranked(F, F[:, [2, 5]] @ np.array([[1.0], [-2.0]]) + 0.01 * rng.normal(size=(60, 1)), 2).tolist()
    [2, 5]
    >>> Q = np.linalg.qr(F[:, :3])[0]                                     # the same, off the first three columns
    >>> r = F[:, [5]] - Q @ (Q.T @ F[:, [5]])
    >>> ridge_ranked(F, r, 1, basis=Q).tolist()
    [5]
    """
    dtype = F.dtype if F.dtype in (np.float32, np.float64) else np.dtype(float)   # the arithmetic's: F's (float32:
    F = np.asarray(F, dtype=dtype)                                               # half the memory traffic)
    r = np.asarray(r, dtype=dtype).reshape(F.shape[0], -1)
    basis = None if basis is None else np.asarray(basis, dtype=dtype)
    energy = np.einsum("ij,ij->", F, F) if dtype == np.float64 else np.einsum("ij,ij->", F, F, dtype=float)
    lam = dtype.type(_RANK_PENALTY * float(energy) / max(F.shape[1], 1))
    tiny = dtype.type(1e-300 if dtype == np.float64 else np.finfo(dtype).tiny)

    def gram_times(d: np.ndarray) -> np.ndarray:
        Fd = F @ d
        if basis is not None:
            Fd -= basis @ (basis.T @ Fd)
        return F.T @ Fd

    b = F.T @ r                                           # r is off the basis: F's projection changes nothing here
    c, res = np.zeros_like(b), b.copy()
    d, rr = res.copy(), np.einsum("ij,ij->j", res, res)
    for _ in range(_RANK_STEPS):                          # conjugate gradients on (F^T F + lam I) c = F^T r
        Ad = gram_times(d) + lam * d
        step = rr / np.maximum(np.einsum("ij,ij->j", d, Ad), tiny)
        c += step * d
        res -= step * Ad
        new = np.einsum("ij,ij->j", res, res)
        d = res + (new / np.maximum(rr, tiny)) * d
        rr = new
    score = (np.abs(c) / np.maximum(np.abs(c).max(axis=0), 1e-300)).max(axis=1)
    return best_rows(np.arange(F.shape[1]), score, keep)
