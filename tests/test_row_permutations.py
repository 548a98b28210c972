"""Row-stratified antithetic permutations (SAGE at the smallest budgets): the extra permutations follow each row's
spread, rows whose games are alike get reversed orderings, and the estimate stays unbiased and efficient."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fairshare.engine.row_permutations import _counts, _orders, alike_pairs, row_estimates, row_permutations


class TableGame:
    """A mean of row games given as a table ``T[row, coalition as bits]``: what ``row_permutations`` reads."""

    def __init__(self, T: np.ndarray, n: int, X: np.ndarray | None = None) -> None:
        self.T, self.n_players, self.n_rows, self.X = T, n, T.shape[0], X
        self.row_weights = np.full((self.n_rows, 1), 1.0 / self.n_rows)
        self.calls = 0

    def pair_falls(self, known: np.ndarray, rows: np.ndarray) -> np.ndarray:
        self.calls += rows.size
        return self.T[rows, (known * (1 << np.arange(self.n_players))).sum(axis=1)]


def _exact(T: np.ndarray, n: int) -> np.ndarray:
    """Shapley values of the mean game, by the formula."""
    v = T.mean(axis=0)
    phi = np.zeros(n)
    for j in range(n):
        for mask in range(1 << n):
            if not mask >> j & 1:
                size = bin(mask).count("1")
                phi[j] += math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n) * (
                    v[mask | 1 << j] - v[mask])
    return phi


def _row_games(rng: np.random.Generator, N: int, n: int, twins: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row games with pairwise and triple interactions; with ``twins`` the rows come in near-equal pairs (and so do
    their feature rows)."""
    masks = ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1).astype(float)
    X = rng.normal(size=(N // 2 if twins else N, 3))
    if twins:
        X = np.repeat(X, 2, axis=0) + 0.01 * rng.normal(size=(N, 3))
    a = X[:, :1] * np.linspace(1, 2, n)[None]
    b = X[:, 1:2] * 0.8
    pairs = sum(masks[:, j] * masks[:, k] for j, k in itertools.combinations(range(n), 2))
    triple = masks[:, 0] * masks[:, 1] * masks[:, 2]
    T = a @ masks.T + b * pairs[None] + X[:, 2:3] * triple[None]
    return T - T[:, :1], X


def test_alike_pairs_find_planted_twins_and_stay_disjoint():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(20, 4)) * 10
    points = np.repeat(centres, 2, axis=0) + 0.01 * rng.normal(size=(40, 4))
    shuffle = rng.permutation(40)
    pairs = alike_pairs(points[shuffle])
    found = {tuple(sorted(shuffle[p] // 2)) for p in pairs}
    assert len(pairs) == 20 and found == {(c, c) for c in range(20)}
    odd = alike_pairs(points[:39])
    assert odd.shape == (19, 2) and len(set(odd.ravel())) == 38
    ties = alike_pairs(np.zeros((7, 2)))                          # all rows equal: still disjoint pairs
    assert ties.shape == (3, 2) and len(set(ties.ravel())) == 6


def test_counts_follow_the_spread_and_add_up_to_the_budget():
    spread = np.array([0.0, 1.0, 1.0, 6.0, 0.0, 2.0])
    for seed in range(20):
        counts = _counts(np.random.default_rng(seed), spread, 26)
        share = spread / spread.sum() * 20
        assert counts.sum() == 26 and counts.min() >= 1 and np.all(np.abs(counts - 1 - share) < 1)
    assert _counts(np.random.default_rng(0), np.zeros(4), 8).tolist() == [2, 2, 2, 2]      # no spread: uniform


def test_orders_reverse_a_partners_first_and_a_rows_own_first():
    counts = np.array([1, 3, 2, 1, 1])
    rows, orders = _orders(np.random.default_rng(1), counts, 6, np.array([[0, 1], [3, 2]]))
    assert rows.tolist() == [0, 1, 1, 1, 2, 2, 3, 4]
    assert np.all(np.sort(orders, axis=1) == np.arange(6))
    first = np.cumsum(counts) - counts
    assert np.array_equal(orders[first[1]], orders[first[0], ::-1])            # paired rows: reversed
    assert np.array_equal(orders[first[2]], orders[first[3], ::-1])
    assert np.array_equal(orders[first[1] + 1], orders[first[1], ::-1])        # a row's second: its first reversed
    assert not np.array_equal(orders[first[1] + 2], orders[first[1]][::-1])    # its third: fresh


def test_unbiased_efficient_and_more_accurate_than_independent_orderings():
    rng = np.random.default_rng(5)
    n, N = 5, 16
    T, X = _row_games(rng, N, n, twins=True)
    exact = _exact(T, n)
    game = TableGame(T, n, X)
    draws = np.array([row_permutations(game, 6, np.random.default_rng(s))[0][:, 0] for s in range(3000)])
    assert np.allclose(draws.sum(axis=1), T[:, -1].mean(), atol=1e-12)           # every draw adds up
    sem = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - exact) < 5 * sem + 1e-12)
    # the same budget as independent orderings (uniform counts, no pairs): a lower error
    P = (6 - 1) * N // (n - 1)
    plain = []
    for s in range(3000):
        r = np.random.default_rng(s)
        rows, orders = _orders(r, _counts(r, np.zeros(N), P), n, np.empty((0, 2), dtype=np.int64))
        plain.append(row_estimates(game, rows, orders, T[:, -1]).mean(axis=0))
    ours = np.sqrt(((draws - exact) ** 2).sum(axis=1).mean())
    theirs = np.sqrt(((np.array(plain) - exact) ** 2).sum(axis=1).mean())
    assert ours < 0.75 * theirs, (ours, theirs)         # measured: 0.32 against 0.51


def test_a_budget_below_one_permutation_per_row_is_refused():
    T, X = _row_games(np.random.default_rng(0), 8, 4, twins=False)
    with pytest.raises(ValueError, match="budget=3"):
        row_permutations(TableGame(T, 4, X), 3, np.random.default_rng(0))
