"""owen-adaptive: Owen values top down. Unbiased with covering error bars against exact values, every budget's
values add up, blocks never opened are said and get infinite standard errors, the orders it samples keep the
blocks together uniformly, and the model calls it needs to find the players that matter grow with the depth of
the hierarchy (log n), not with n."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fairshare as fs
from fairshare import FairshareWarning
from fairshare.engine.owen_adaptive import BlockTree, OwenWalks
from fairshare.engine.protocols import History
from fairshare.indices.hierarchy import Hierarchy, balanced

from test_owen import brute_owen, random_hierarchy, soum

THREE_LEVELS = [[[0, 1], [2, 3, 4]], [[5, 6], [7]], [[8, 9, 10, 11]]]


def needles(n: int, where: tuple[int, ...], q: tuple[float, ...] = (0.6, 0.5, 0.4)) -> fs.Game:
    """A keyword detector: 1 - prod (1 - q_j) over the needles present (noisy OR); every other player is null."""
    idx, q = np.array(where), np.array(q)

    def value(S: np.ndarray) -> np.ndarray:
        return 1.0 - np.prod(np.where(S[:, idx], 1.0 - q[None, :], 1.0), axis=1)

    return fs.games.FunctionGame(value, n_players=n)


def test_block_tree_merges_one_child_blocks_and_orders_keep_blocks_together_uniformly():
    h = Hierarchy([[0, 1], [[2]], [[3, 4], 5]], 6)
    t = BlockTree(h)
    assert t.n_children[0] == 3 and t.size.tolist()[:4] == [6, 2, 1, 3]
    assert sorted(t.members(3).tolist()) == [3, 4, 5] and sorted(t.dfs.tolist()) == list(range(6))
    starts = t.starts(np.random.default_rng(0), 30_000)
    ranks = starts[:, t.leaf_of]
    assert np.all(np.sort(ranks, axis=1) == np.arange(6))                          # an order of the players
    for block in ([0, 1], [3, 4], [3, 4, 5]):
        r = ranks[:, block]
        assert np.all(r.max(axis=1) - r.min(axis=1) == len(block) - 1)             # blocks stay together
    orders = np.argsort(ranks, axis=1)
    _, counts = np.unique(orders, axis=0, return_counts=True)
    assert counts.size == 48 and np.all(np.abs(counts - 625) < 5 * np.sqrt(625))    # 3! x 2! x 2! x 2!, uniform


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 9), depth=st.integers(1, 3), seed=st.integers(0, 10_000), budget=st.integers(3, 400))
def test_values_add_up_and_same_seed_same_values_at_every_budget(n, depth, seed, budget):
    partition = random_hierarchy(n, np.random.default_rng(seed), depth)
    g = fs.games.FunctionGame(soum(n, seed), n_players=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairshareWarning)
        try:
            a = fs.estimate(g, "owen", partition=partition, budget=budget, seed=seed, method="owen-adaptive")
        except fs.BudgetError:
            assert budget < 2 + BlockTree(Hierarchy(partition, n)).n_children[0] - 1
            return
        b = fs.estimate(g, "owen", partition=partition, budget=budget, seed=seed, method="owen-adaptive")
    np.testing.assert_array_equal(a.values, b.values)
    assert a.n_evaluations <= budget
    assert a.values.sum() == pytest.approx(a.grand_value - a.empty_value, abs=1e-9)
    unresolved = sorted(p for block in a.info.get("unresolved_blocks", []) for p in block)
    assert np.all(np.isinf(a.stderr[unresolved]))


def test_unbiased_with_covering_error_bars_on_a_three_level_hierarchy():
    n = 12
    g = fs.games.FunctionGame(soum(n, 3), n_players=n)
    exact = brute_owen(g, THREE_LEVELS, n)
    est = np.array([fs.estimate(g, "owen", partition=THREE_LEVELS, budget=150, seed=s, method="owen-adaptive").values
                    for s in range(200)])
    errors = est - exact
    z = errors.mean(axis=0) / (errors.std(axis=0) / np.sqrt(len(est)))
    assert np.abs(z).max() < 4.0                                        # no bias beyond the sampling noise
    inside = []
    for seed in range(30):
        e = fs.estimate(g, "owen", partition=THREE_LEVELS, budget=150, seed=seed, method="owen-adaptive")
        inside.append(np.abs(e.values - exact) <= 2 * e.stderr)
    assert np.mean(inside) >= 0.85
    big = fs.estimate(g, "owen", partition=THREE_LEVELS, budget=20_000, seed=0, method="owen-adaptive")
    assert np.abs(big.values - exact).max() < 0.05 * np.abs(exact).max()


def test_it_spends_the_budget_where_whole_orders_leave_some_unspent():
    n = 48
    part = balanced(list(range(n)), 4)
    g = fs.games.FunctionGame(soum(n, 3), n_players=n)
    for budget in (100, 400):
        spent = [fs.estimate(g, "owen", partition=part, budget=budget, seed=s, method="owen-adaptive").n_evaluations
                 for s in range(5)]
        assert min(spent) >= budget - 5                               # owen-permutation: 86-96% at 100


def test_an_additive_game_is_exact_with_zero_error_once_every_block_is_open():
    w = np.linspace(-1.0, 2.0, 12)
    g = fs.games.FunctionGame(lambda S: S @ w, n_players=12)
    e = fs.estimate(g, "owen", partition=THREE_LEVELS, budget=60, seed=0, method="owen-adaptive")
    np.testing.assert_allclose(e.values, w, atol=1e-12)
    np.testing.assert_allclose(e.stderr, 0.0, atol=1e-12)


def test_blocks_the_budget_cannot_open_get_equal_shares_and_infinite_errors():
    n = 64
    part = balanced(list(range(n)), 4)
    g = needles(n, (5, 7), (0.5, 0.3))              # two needles, so that the walks vary (one would be additive)
    with pytest.warns(FairshareWarning, match="blocks the budget did not open"):
        e = fs.estimate(g, "owen", partition=part, budget=40, seed=0, method="owen-adaptive", walks=2)
    blocks = e.info["unresolved_blocks"]
    assert blocks and e.info["resolved_players"] < n
    flat = sorted(p for b in blocks for p in b)
    assert 5 not in flat and 7 not in flat                                       # the path to the needles is open
    np.testing.assert_allclose(e.values[[5, 7]], [0.425, 0.225], atol=1e-9)
    for b in blocks:
        np.testing.assert_allclose(e.values[b], e.values[b][0])                  # equal shares
        assert np.all(np.isinf(e.stderr[b]))
    assert np.all(np.isfinite(e.stderr[[5, 7]]))


def _budget_to_find(n: int, seeds: range) -> int:
    """The smallest budget (doubling from 25) at which the three needles rank first in every seed."""
    part = balanced(list(range(n)), 8)
    for budget in (25 * 2 ** k for k in range(12)):
        ok = True
        for seed in seeds:
            where = tuple(np.random.default_rng(seed).choice(n, 3, replace=False).tolist())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FairshareWarning)
                e = fs.estimate(needles(n, where), "owen", partition=part, budget=budget, seed=seed)
            ok &= set(np.argsort(-e.values)[:3].tolist()) == set(where)
        if ok:
            return budget
    raise AssertionError(f"never found the needles among {n} players")


def test_players_that_matter_are_found_in_log_n_model_calls():
    small, large = _budget_to_find(64, range(4)), _budget_to_find(4096, range(4))
    assert large <= 2 * small                    # 64x the players: at most twice the budget (one more level)
    assert large < 4095 / 4                      # a quarter of what one order of the 4096 players costs


def test_auto_picks_it_and_walks_and_bad_options_are_refused_before_any_evaluation():
    g = fs.games.FunctionGame(soum(12, 0), n_players=12)
    assert fs.estimate(g, "owen", partition=THREE_LEVELS, budget=100, seed=0).method == "owen-adaptive"
    with pytest.raises(ValueError, match="walks"):
        fs.estimate(g, "owen", partition=THREE_LEVELS, budget=100, method="owen-adaptive", walks=1)
    with pytest.raises(fs.BudgetError):
        fs.estimate(g, "owen", partition=THREE_LEVELS, budget=3, method="owen-adaptive")


def test_sampler_opens_the_root_then_the_block_with_the_largest_value():
    h = Hierarchy([[0, 1], [2, 3, 4]], 5)
    s = OwenWalks(np.random.default_rng(0), h, budget=9, walks=2)       # less than two whole orders
    history = History(empty_value=np.zeros(1), grand_value=np.ones(1))
    first = s.propose(7, history)
    assert first.child.tolist() == [1, 2, 1, 2]                       # the root's two blocks, twice
    history.batches.append(first)
    values = np.where(first.coalitions[:, 2:].any(axis=1), 1.0, 0.0)[:, None]   # only the block [2, 3, 4] matters
    history.values.append(values)
    second = s.propose(7, history)
    assert set(second.child.tolist()) == {5, 6, 7}                    # the children of [2, 3, 4] first
