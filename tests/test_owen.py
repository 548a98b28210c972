"""Owen values: exact values against brute force from the definition (every order that keeps the blocks
together), the estimator's error bars, and bad partitions refused before any evaluation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fairshare as fs
from fairshare.indices.hierarchy import Hierarchy
from fairshare.indices.owen_coalitions import owen_coalitions


def consistent_orders(h: Hierarchy, node: int = 0) -> list[list[int]]:
    """Every order of the players under ``node`` that keeps each block together (brute force)."""
    if h.player_of[node] >= 0:
        return [[int(h.player_of[node])]]
    kids = [consistent_orders(h, c) for c in h.children[node]]
    out = []
    for arrangement in itertools.permutations(range(len(kids))):
        for parts in itertools.product(*[kids[a] for a in arrangement]):
            out.append([p for part in parts for p in part])
    return out


def brute_owen(game: fs.Game, partition, n: int) -> np.ndarray:
    h = Hierarchy(partition, n)
    orders = np.array(consistent_orders(h))
    phi = np.zeros(n)
    for order in orders:
        S = np.zeros((n + 1, n), dtype=bool)
        for j, p in enumerate(order):
            S[j + 1:, p] = True
        v = np.asarray(game(S), dtype=float)
        phi[order] += np.diff(v)
    return phi / len(orders)


def random_hierarchy(n: int, rng: np.random.Generator, depth: int):
    """A random nested partition of range(n) with at most ``depth`` levels."""
    players = rng.permutation(n).tolist()

    def split(items, d):
        if d == 1 or len(items) == 1:
            return items if d == 1 else items
        cuts = sorted(rng.choice(np.arange(1, len(items)), size=rng.integers(1, len(items)), replace=False).tolist())
        blocks = [items[a:b] for a, b in zip([0] + cuts, cuts + [len(items)])]
        return [split(b, d - 1) if len(b) > 1 else (b if rng.random() < 0.5 else b[0]) for b in blocks]

    return split(players, depth)


def soum(n: int, seed: int) -> fs.Game:
    return fs.games.SOUMGame.random(n, n_terms=3 * n, max_size=min(4, n), seed=seed)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 7), depth=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_exact_owen_equals_brute_force_over_consistent_orders(n, depth, seed):
    rng = np.random.default_rng(seed)
    partition = random_hierarchy(n, rng, depth)
    g = soum(n, seed)
    exact = fs.exact(g, "owen", partition=partition)
    np.testing.assert_allclose(exact.values, brute_owen(g, partition, n), atol=1e-12)
    assert exact.values.sum() == pytest.approx(exact.grand_value - exact.empty_value, abs=1e-12)


def test_three_level_hierarchy_on_12_players_is_exact():
    partition = [[[0, 1], [2, 3]], [[4, 5], [6, 7, 8]], [[9], [10, 11]]]
    g = soum(12, 3)
    exact = fs.exact(g, "owen", partition=partition)
    np.testing.assert_allclose(exact.values, brute_owen(g, partition, 12), atol=1e-12)
    assert exact.n_evaluations < 2 ** 12 / 4             # whole blocks only


def test_two_level_formula_of_the_definition():
    """phi_i = sum_R sum_T r!(m-r-1)!/m! t!(u-t-1)!/u! [v(Q_R + T + i) - v(Q_R + T)]."""
    unions = [[0, 3], [1, 4, 5], [2]]
    n = 6
    g = soum(n, 7)
    m = len(unions)
    phi = np.zeros(n)
    for k, U in enumerate(unions):
        others = [j for j in range(m) if j != k]
        for i in U:
            rest = [p for p in U if p != i]
            for r in range(m):
                for R in itertools.combinations(others, r):
                    for t in range(len(rest) + 1):
                        for T in itertools.combinations(rest, t):
                            w = (math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m)
                                 * math.factorial(t) * math.factorial(len(U) - t - 1) / math.factorial(len(U)))
                            S = np.zeros((2, n), dtype=bool)
                            for j in R:
                                S[:, unions[j]] = True
                            S[:, list(T)] = True
                            S[1, i] = True
                            v = g(S)
                            phi[i] += w * (v[1] - v[0])
    np.testing.assert_allclose(fs.exact(g, "owen", partition=unions).values, phi, atol=1e-12)


def test_singletons_and_one_union_give_shapley_and_unions_get_the_quotient_shapley():
    n = 6
    g = soum(n, 11)
    shapley = fs.exact(g, "shapley").values
    np.testing.assert_allclose(fs.exact(g, "owen", partition=[[i] for i in range(n)]).values, shapley, atol=1e-12)
    np.testing.assert_allclose(fs.exact(g, "owen", partition=[list(range(n))]).values, shapley, atol=1e-12)
    unions = [[0, 1, 2], [3], [4, 5]]
    owen = fs.exact(g, "owen", partition=unions).values
    quotient = fs.games.FunctionGame(
        lambda Q: g(np.stack([Q[:, [0, 0, 0, 1, 2, 2]][r] for r in range(Q.shape[0])])), n_players=3)
    np.testing.assert_allclose([owen[u].sum() for u in unions], fs.exact(quotient, "shapley").values, atol=1e-12)


def test_owen_coalition_weights_sum_to_one_and_cost_counts_whole_blocks():
    h = Hierarchy([[0, 1], [2, [3, 4]]], 5)
    for p in range(5):
        S, w = owen_coalitions(h, p)
        assert w.sum() == pytest.approx(1.0)
        assert not S[:, p].any()
    g = soum(5, 0)
    e = fs.exact(g, "owen", partition=h)
    assert e.n_evaluations == fs.engine.exact.owen_exact_cost(h) < 32


def test_permutations_keep_blocks_together_and_are_uniform():
    h = Hierarchy([[0, 1], [2, [3, 4]]], 5)
    orders = {tuple(o) for o in consistent_orders(h)}
    P = h.permutations(np.random.default_rng(0), 24_000)
    seen, counts = np.unique(P, axis=0, return_counts=True)
    assert {tuple(o) for o in seen} == orders                # every consistent order, nothing else
    expected = P.shape[0] / len(orders)
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))
    anti = h.permutations(np.random.default_rng(0), 10, antithetic=True)
    np.testing.assert_array_equal(anti[1::2], anti[0::2, ::-1])


def test_estimate_converges_with_covering_error_bars_and_same_seed_same_values():
    n = 18
    g = fs.games.FunctionGame(soum(n, 5), n_players=n)          # a black box: no closed form, no null players
    partition = [[0, 1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12, 13], [14, 15, 16, 17]]
    exact = fs.exact(g, "owen", partition=partition)
    assert exact.n_evaluations == 720                     # of 2^18 = 262,144
    exact = exact.values
    for method in ("auto", "owen-permutation"):
        inside = []
        for seed in range(20):
            est = fs.estimate(g, "owen", partition=partition, budget=300, seed=seed, method=method)
            assert est.method == ("owen-adaptive" if method == "auto" else method) and est.n_evaluations <= 300
            inside.append(np.abs(est.values - exact) <= 2 * est.stderr)
        assert np.mean(inside) >= 0.85
    a = fs.estimate(g, "owen", partition=partition, budget=400, seed=3, antithetic=True)
    b = fs.estimate(g, "owen", partition=partition, budget=400, seed=3, antithetic=True)
    np.testing.assert_array_equal(a.values, b.values)
    big = fs.estimate(g, "owen", partition=partition, method="owen-permutation", budget=20_000, seed=0)
    assert np.abs(big.values - exact).max() < 0.05 * np.abs(exact).max()
    assert np.abs(big.values - exact).max() <= 4 * big.stderr.max()


def test_auto_takes_exact_when_the_budget_covers_the_block_coalitions():
    g = fs.games.FunctionGame(soum(10, 1), n_players=10)
    partition = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    cost = fs.engine.exact.owen_exact_cost(Hierarchy(partition, 10))
    assert cost < 2 ** 10
    est = fs.estimate(g, "owen", partition=partition, budget=cost, seed=0)
    assert est.method == "exact" and np.all(est.stderr == 0)
    np.testing.assert_allclose(est.values, brute_owen(g, partition, 10), atol=1e-12)
    assert fs.estimate(g, "owen", partition=partition, budget=cost - 1, seed=0).method == "owen-adaptive"


def test_null_players_are_set_aside_without_changing_the_others():
    g = fs.games.SOUMGame(np.array([[1, 1, 0, 0, 0, 1], [0, 1, 1, 0, 0, 0]], dtype=bool), np.array([1.0, 2.0]))
    partition = [[0, 3], [1, 2, 4], [5]]                 # 3 and 4 are null
    exact = fs.exact(g, "owen", partition=partition).values
    np.testing.assert_allclose(exact, brute_owen(g, partition, 6), atol=1e-12)
    est = fs.estimate(g, "owen", partition=partition, method="owen-permutation", budget=300, seed=0)
    assert est.values[3] == est.values[4] == 0.0
    assert np.all(np.abs(est.values - exact) <= 4 * est.stderr + 1e-12)


class Counting(fs.Game):
    def __init__(self, n):
        super().__init__(n)
        self.calls = 0

    def _value(self, S):
        self.calls += 1
        return S.sum(axis=1).astype(float)


@pytest.mark.parametrize("partition, match", [
    ([[0, 1], [1, 2, 3]], "appears twice"),
    ([[0, 1], [2]], "in no block"),
    ([[0, 1, 2], [3, 4]], "not one of the game's 4 players"),
    ([[0, 1], [], [2, 3]], "empty"),
    ([[0, 1], ["a", 2, 3]], "neither a player index nor a block"),
    ([[0.5, 1], [2, 3]], "neither a player index nor a block"),
    ("0,1|2,3", "list of blocks"),
    (None, "needs partition"),
])
@pytest.mark.parametrize("door", ["exact", "estimate"])
def test_bad_partitions_refused_before_any_evaluation(partition, match, door):
    g = Counting(4)
    with pytest.raises(ValueError, match=match):
        if door == "exact":
            fs.exact(g, "owen", partition=partition)
        else:
            fs.estimate(g, "owen", partition=partition, budget=100, seed=0)
    assert g.calls == 0


def test_exact_owen_too_deep_is_refused_before_any_evaluation():
    # hunt: the "2^25 coalitions; at most 20" refusal came after v(empty) and v(N) were evaluated
    g = Counting(26)
    with pytest.raises(ValueError, match=r"player 0 has 25 sibling blocks along its path \(2\^25 coalitions\); "
                                         r"at most 20"):
        fs.exact(g, "owen", partition=[[i] for i in range(26)])
    assert g.calls == 0


def test_partition_without_owen_is_refused():
    g = Counting(4)
    with pytest.raises(ValueError, match="partition is given but index is 'shapley'"):
        fs.estimate(g, "shapley", partition=[[0, 1], [2, 3]], budget=100)
    assert g.calls == 0


# ----------------------------------------------------------------------------------------------- explain
def _correlated_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, 300))
    X = np.column_stack([a, b, a + 0.1 * rng.normal(size=300), b + 0.2 * rng.normal(size=300),
                         rng.normal(size=300)])
    return X, X[:, 0] + X[:, 2] * X[:, 1] + X[:, 4]


def test_explain_owen_by_names_positions_and_correlation_clusters():
    pd = pytest.importorskip("pandas")
    from sklearn.ensemble import GradientBoostingRegressor
    X, y = _correlated_data()
    frame = pd.DataFrame(X, columns=["a", "b", "a2", "b2", "c"])
    model = GradientBoostingRegressor(n_estimators=30, random_state=0).fit(frame, y)
    by_name = fs.explain(model.predict, frame.iloc[:4], background=frame.iloc[:50], index="owen",
                         partition=[["a", "a2"], ["b", "b2"], ["c"]], progress=False, seed=0)
    by_pos = fs.explain(model.predict, frame.iloc[:4], background=frame.iloc[:50], index="owen",
                        partition=[[0, 2], [1, 3], [4]], progress=False, seed=0)
    np.testing.assert_array_equal(by_name.values, by_pos.values)
    assert by_name.method == "exact" and by_name.index == "owen"
    np.testing.assert_allclose(by_name.values.sum(axis=1), by_name.grand_value - by_name.empty_value, atol=1e-9)
    for r in range(4):                                   # the row's game, brute force over the orders
        game = fs.games.ModelGame(model.predict, frame.iloc[[r]], frame.iloc[:50])
        np.testing.assert_allclose(by_pos.values[r], brute_owen(game, [[0, 2], [1, 3], [4]], 5), atol=1e-9)
    clustered = fs.explain(model, frame.iloc[:4], background=frame.iloc[:50], index="owen", partition="correlation",
                           progress=False, seed=0)
    h = Hierarchy.from_correlation(X[:50])
    blocks = [b for level in range(1, h.depth + 1) for b in h.blocks(level)]
    assert [0, 2] in blocks and [1, 3] in blocks                  # the correlated pairs are blocks
    game = fs.games.TreeGame(model, frame.iloc[[1]], mode="interventional", background=frame.iloc[:50])
    np.testing.assert_allclose(clustered.values[1], brute_owen(game, h.nested(), 5), atol=1e-9)


def test_explain_owen_refuses_bad_partitions_before_any_model_call():
    X, y = _correlated_data()
    calls = []

    def f(rows):
        calls.append(len(rows))
        return rows.sum(axis=1)

    for partition, match in [([[0, 2], [1, 3]], "in no block"), ([["a", 1], [2, 3, 4]], "not a feature name"),
                             ("clusters", "list of blocks")]:
        with pytest.raises(ValueError, match=match):
            fs.explain(f, X[:2], background=X[:20], index="owen", partition=partition, progress=False)
    with pytest.raises(ValueError, match="not Owen values"):
        fs.explain(f, X[:2], background=X[:20], index="owen", partition=[[0, 2], [1, 3], [4]], interactions=2,
                   progress=False)
    with pytest.raises(ValueError, match="needs a background of at least 2 rows"):
        fs.explain(f, X[:2], background=X[:1], index="owen", partition="correlation", progress=False)
    assert calls == []


@pytest.mark.parametrize("index, method, options", [
    ("owen", "owen-permutation", {"partition": [[0, 1, 2], [3, 4], [5]]}),
    ("owen", "owen-adaptive", {"partition": [[0, 1, 2], [3, 4], [5]]}),
    ("shapley", "permutation", {}),
])
def test_a_budget_above_every_coalition_the_method_draws_gives_the_exact_values(index, method, options):
    # hunt: the run evaluated every coalition once, said "budget spent (40 of 5000 evaluations)" and returned Monte
    # Carlo values (error 0.044, stderr 0.022) that the evaluations in hand determine exactly
    n = 6
    table = np.random.default_rng(11).normal(size=2 ** n)
    g = fs.games.FunctionGame(lambda S: table[S.astype(np.int64) @ (1 << np.arange(n))], n_players=n)
    exact = fs.exact(g, index, **options)
    e = fs.estimate(g, index, method=method, budget=5000, seed=0, **options)
    np.testing.assert_allclose(e.values, exact.values, rtol=0, atol=1e-12)
    assert np.all(e.stderr == 0) and e.n_evaluations == exact.n_evaluations
    assert e.info["stopped"]["reason"] == (f"every coalition the method draws was evaluated ({exact.n_evaluations} "
                                           f"of 5000 evaluations): exact values from them")
    small = fs.estimate(g, index, method=method, budget=30, seed=0, **options)       # below them: estimated
    assert small.info["stopped"]["reason"].endswith("of 30 evaluations)") and np.any(small.stderr > 0)
    assert "via" not in small.info or small.info["via"] != "enumeration"


@pytest.mark.parametrize("index, method, seed, options", [
    ("owen", "owen-permutation", 4, {"partition": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]}),
    ("owen", "owen-adaptive", 5, {"partition": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]}),
    ("shapley", "permutation", 2, {}),
    ("shapley", "tmc", 2, {}),
])
def test_walks_that_happen_to_agree_are_not_taken_for_exact_values(index, method, seed, options):
    # hunt: a unanimity game of players 0-2 of 10 at 20 evaluations (two walks): where both walks put the same one of
    # them last, every marginal agreed with itself, the values (1, 0, 0 for 1/3 each) added up as a walk's always do
    # and every error bar was 0 (owen-permutation: 20 of 60 seeds, owen-adaptive 20 of 60 at 14-20 evaluations,
    # permutation 23 of 60). Agreement from fewer than AGREEING_DRAWS (6) draws is now not yet seen: infinite
    g = fs.games.FunctionGame(lambda S: 1.0 * S[:, :3].all(axis=1), n_players=10)
    exact = fs.exact(g, index, **options).values
    with pytest.warns(fs.FairshareWarning, match="too few to tell an additive game"):
        e = fs.estimate(g, index, method=method, budget=22 if method == "tmc" else 20, seed=seed, **options)
    wrong = np.abs(e.values - exact) > 1e-9
    assert wrong.any() and np.all(np.isinf(e.stderr[wrong]))
    additive = fs.games.AdditiveGame(np.arange(1.0, 11.0))          # six agreeing walks: exact, with error bars of 0
    a = fs.estimate(additive, index, method=method, budget=2 + 9 * 6, seed=seed, **options)
    np.testing.assert_allclose(a.values, np.arange(1.0, 11.0), atol=1e-12)
    assert np.all(a.stderr == 0) and "stderr" not in a.info


def test_a_missing_value_in_the_background_leaves_the_correlation_partition_as_it_was():
    # hunt15: one NaN among 200 background rows made its column 'uncorrelated with every other' (correlation 0.99
    # with its twin read as 0): partition='correlation' gave [0, [2, [1, 3]]] instead of [[1, 3], [0, 2]]
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 200))
    X = np.column_stack([a, b, a + 0.1 * rng.normal(size=200), b + 0.1 * rng.normal(size=200)])
    whole = Hierarchy.from_correlation(X)
    X[7, 0] = np.nan
    X[9, 3] = np.nan
    assert Hierarchy.from_correlation(X) == whole and whole.blocks(1) == [[0, 2], [1, 3]]
    # the pairs' correlations over the rows both hold (pandas' DataFrame.corr)
    pd = pytest.importorskip("pandas")
    from fairshare.indices.hierarchy import _correlation
    np.testing.assert_allclose(_correlation(X), pd.DataFrame(X).corr().to_numpy(), atol=1e-12)
