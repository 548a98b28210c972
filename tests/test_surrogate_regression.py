"""The surrogate regression (issue 42): Walsh products and their exact semivalues, the penalized fit with exact
leave-one-out residuals, and the ``surrogate-regression`` method against plain regression and exact values."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.evaluation import BudgetError
from fairshare.engine.ridge_path import RidgePath
from fairshare.engine.walsh import _combinations, semivalue_of_walsh, top_subsets, walsh_products

SEMIVALUES = {"shapley": fs.Semivalue.shapley(), "banzhaf": fs.Semivalue.banzhaf(),
              "beta(4,1)": fs.Semivalue.beta_shapley(4, 1), "beta(16,1)": fs.Semivalue.beta_shapley(16, 1)}


def walsh_game(n: int, seed: int, triples: int = 6, pairs: int = 0, outputs: int = 1) -> fs.games.FunctionGame:
    """An additive game plus Walsh products of three players (and of two)."""
    rng = np.random.default_rng(seed)
    T3 = np.array([rng.choice(n, 3, replace=False) for _ in range(triples)]).reshape(-1, 3)
    T2 = np.array([rng.choice(n, 2, replace=False) for _ in range(pairs)]).reshape(-1, 2)
    a, c3, c2 = rng.normal(size=(n, outputs)), rng.normal(size=(triples, outputs)), rng.normal(size=(pairs, outputs))

    def f(Z):
        s = 2.0 * Z - 1.0
        out = Z @ a + walsh_products(s, T3) @ c3 + walsh_products(s, T2) @ c2
        return out[:, 0] if outputs == 1 else out

    return fs.games.FunctionGame(f, n_players=n)


def rel_error(estimate, truth) -> float:
    return float(np.sum((np.asarray(estimate) - truth) ** 2) / np.sum(truth ** 2))


@pytest.mark.parametrize("name", list(SEMIVALUES))
def test_walsh_product_values_match_enumeration(name):
    sv, n = SEMIVALUES[name], 7
    for k in range(1, 6):
        T = np.array([[1, 3, 4, 5, 6][:k]])
        game = fs.games.FunctionGame(lambda Z: walsh_products(2.0 * Z - 1.0, T).ravel(), n_players=n)
        exact = fs.exact(game, index=sv).values.ravel()
        expected = np.zeros(n)
        expected[T[0]] = semivalue_of_walsh(sv, n, k)
        np.testing.assert_allclose(exact, expected, atol=1e-12)


def test_walsh_products_of_enumerated_coalitions():
    Z = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0]], dtype=bool)
    W = walsh_products(2.0 * Z - 1.0, np.array([[0, 1, 2], [1, 3, 0]]))
    assert W.tolist() == [[-1.0, -1.0], [-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]]
    assert top_subsets(np.array([0.1, 3.0, 2.0, 0.5, 1.0]), 2, 3).tolist() == [[1, 2], [1, 4], [2, 4]]


def test_walsh_products_of_signs_and_of_any_factors_are_the_plain_products():
    """Signs of +-1 are multiplied as bytes; any other factors as floats: both the product of the columns, C-ordered."""
    rng = np.random.default_rng(3)
    T = np.array([[0, 2, 4], [1, 2, 3], [4, 0, 1], [3, 3, 2]])
    for signs in (np.where(rng.random((50, 5)) < 0.5, -1.0, 1.0), rng.normal(size=(50, 5))):
        W = walsh_products(signs, T)
        assert W.dtype == np.float64 and W.flags.c_contiguous and W.shape == (50, 4)
        np.testing.assert_array_equal(W, signs[:, T[:, 0]] * signs[:, T[:, 1]] * signs[:, T[:, 2]])


@pytest.mark.parametrize("p", [0, 1, 2, 5, 9])
def test_every_subset_in_lexicographic_order(p):
    for k in range(1, p + 2):
        expected = np.array(list(itertools.combinations(range(p), k)), dtype=np.int64).reshape(-1, k)
        got = _combinations(p, k)
        assert got.shape == expected.shape and np.array_equal(got, expected) and not got.flags.writeable


def test_ridge_path_leave_one_out_equals_refits():
    rng = np.random.default_rng(0)
    A, F = rng.normal(size=(30, 3)), rng.normal(size=(30, 8))
    Y = A @ rng.normal(size=(3, 2)) + F @ rng.normal(size=(8, 2)) + 0.1 * rng.normal(size=(30, 2))
    path = RidgePath(A, F, Y)
    point = path.fit(1e-2)
    lam = 1e-2 * path.scale
    for j in (0, 7, 29):
        keep = np.arange(30) != j
        M = np.hstack([A[keep], F[keep]])
        penalty = np.diag([0.0] * 3 + [lam] * 8)
        coef = np.linalg.solve(M.T @ M + penalty, M.T @ Y[keep])
        np.testing.assert_allclose(point.loo[j], Y[j] - np.hstack([A[j], F[j]]) @ coef, rtol=1e-8, atol=1e-10)
    X, C = path.maps(1e-2)
    np.testing.assert_allclose(X @ Y, point.x, atol=1e-10)
    np.testing.assert_allclose(C @ Y, point.c, atol=1e-10)


@pytest.mark.parametrize("index, plain", [("shapley", "regression"), ("banzhaf", "kernel-banzhaf")])
def test_no_surrogate_taken_is_the_plain_regression_bit_for_bit(index, plain):
    game = walsh_game(12, seed=1)
    ref = fs.estimate(game, index=index, method=plain, budget=60, seed=0)
    for options in ({}, {"surrogate": "none"}):
        est = fs.estimate(game, index=index, method="surrogate-regression", budget=60, seed=0, **options)
        assert est.info["surrogate"]["kind"] == "none"
        assert np.array_equal(est.values, ref.values) and np.array_equal(est.stderr, ref.stderr)


@pytest.mark.parametrize("index, plain", [("shapley", "regression"), ("banzhaf", "kernel-banzhaf")])
def test_surrogate_is_exact_on_additive_plus_three_player_products(index, plain):
    game = walsh_game(10, seed=1)                  # its 120 products of three players within the fit's feature cap
    truth = fs.exact(game, index=index).values
    est = fs.estimate(game, index=index, method="surrogate-regression", budget=1000, seed=0, even_model="none")
    base = fs.estimate(game, index=index, method=plain, budget=1000, seed=0)
    assert est.info["surrogate"]["kind"].startswith("walsh-3")
    assert rel_error(est.values, truth) < 1e-7 < 1e-4 < rel_error(base.values, truth)
    assert est.info["surrogate"]["estimated_gain"] > 1e3
    assert np.all(est.stderr < 1e-3 * np.abs(truth).max())
    mid = fs.estimate(game, index=index, method="surrogate-regression", budget=300, seed=0)
    assert rel_error(mid.values, truth) < 0.7 * rel_error(fs.estimate(game, index=index, method=plain,
                                                                      budget=300, seed=0).values, truth)


def test_unpaired_design_fits_two_player_products_for_an_asymmetric_semivalue():
    game, sv = walsh_game(10, seed=1, triples=0, pairs=5), SEMIVALUES["beta(4,1)"]
    truth = fs.exact(game, index=sv).values
    est = fs.estimate(game, index=sv, method="surrogate-regression", budget=200, seed=0)
    base = fs.estimate(game, index=sv, method="semivalue-regression", budget=200, seed=0)
    assert est.info["surrogate"]["kind"].startswith("walsh-2")
    assert rel_error(est.values, truth) < 1e-5 < 1e-2 < rel_error(base.values, truth)


def test_two_outputs_and_same_seed_same_bits():
    game = walsh_game(10, seed=2, outputs=2)
    truth = fs.exact(game, index="shapley").values
    runs = [fs.estimate(game, index="shapley", method="surrogate-regression", budget=600, seed=5) for _ in range(2)]
    assert runs[0].values.shape == (10, 2) and rel_error(runs[0].values, truth) < 1e-8
    assert np.array_equal(runs[0].values, runs[1].values) and np.array_equal(runs[0].stderr, runs[1].stderr)
    assert runs[0].info["surrogate"] == runs[1].info["surrogate"]


def test_error_bars_cover_with_the_surrogate():
    rng = np.random.default_rng(3)
    n = 10
    T3, T5 = (np.array([rng.choice(n, k, replace=False) for _ in range(r)]) for k, r in ((3, 6), (5, 4)))
    a, c3, c5 = rng.normal(size=n), rng.normal(size=6), 0.5 * rng.normal(size=4)
    game = fs.games.FunctionGame(lambda Z: Z @ a + walsh_products(2.0 * Z - 1, T3) @ c3
                                 + walsh_products(2.0 * Z - 1, T5) @ c5 + 0.3 * np.sin(3 * Z @ a), n_players=n)
    truth = fs.exact(game, index="shapley").values.ravel()
    z, taken = [], 0
    for seed in range(12):
        est = fs.estimate(game, index="shapley", method="surrogate-regression", budget=300, seed=seed)
        z.append(np.abs(est.values.ravel() - truth) / est.stderr.ravel())
        taken += est.info["surrogate"]["kind"] != "none"
    assert taken >= 3 and np.mean(np.concatenate(z) <= 1.96) >= 0.9


class Refusing(fs.games.FunctionGame):
    """A game that fails the test if it is ever evaluated."""

    def __init__(self, n: int) -> None:
        super().__init__(lambda Z: pytest.fail("the game was evaluated"), n_players=n)


@pytest.mark.parametrize("options, match", [
    ({"surrogate": "polynomial"}, "surrogate"),
    ({"surrogate_order": 4}, "surrogate_order"),
    ({"surrogate_order": 2}, "surrogate_order=2 fits no odd product"),
    ({"surrogate_order": 5, "paired": False}, "surrogate_order=5"),
    ({"surrogate": "trees"}, "replacement"),
    ({"folds": 1}, "folds"),
    ({"lam": "beta"}, "lam"),
])
def test_bad_options_are_refused_before_any_evaluation(options, match):
    with pytest.raises(ValueError, match=match):
        fs.estimate(Refusing(10), index="shapley", method="surrogate-regression", budget=500, seed=0, **options)


@pytest.mark.parametrize("index, options, minimum", [
    ("shapley", {}, 22), ("shapley", {"paired": False}, 57), ("banzhaf", {}, 12),
    (SEMIVALUES["beta(4,1)"], {}, 57), (SEMIVALUES["beta(4,1)"], {"surrogate": "none"}, 12)])
def test_budgets_below_the_design_are_refused_naming_the_minimum(index, options, minimum):
    with pytest.raises(BudgetError, match=str(minimum)):
        fs.estimate(Refusing(10), index=index, method="surrogate-regression", budget=minimum - 1, seed=0, **options)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_games_of_fewer_players_than_the_surrogates_order_are_estimated_at_every_budget(n):
    """A paired design's order 5 on a game of 4 players asked for products of five: every budget from 12 to 15
    stopped on "a Walsh product of 5 players needs 1 <= k <= n = 4" (found by the budget property at 8x its
    examples). Every budget below the enumeration's, Shapley, Banzhaf and beta values: finite values (efficient where
    the index is) and error bars (infinite where a budget is too small to estimate them, with a warning)."""
    rng = np.random.default_rng(n)
    w = rng.normal(size=n)
    game = fs.games.FunctionGame(lambda S: np.tanh(S @ w) + S[:, 0] * S[:, -1], n_players=n)
    total = float(np.tanh(w.sum()) + 1.0)
    for index, budget, seed in itertools.product(SEMIVALUES, range(n + 2, 2 ** n), range(2)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", fs.FairshareWarning)
                got = fs.estimate(game, SEMIVALUES[index], budget=budget, seed=seed)
        except BudgetError:
            continue
        assert np.all(np.isfinite(got.values)) and np.all(got.stderr >= 0), (index, budget, seed)
        if index == "shapley":
            assert got.values.sum() == pytest.approx(total, abs=1e-9), (budget, seed)


def test_trees_surrogate_is_the_cross_fitted_tree_control_variate():
    pytest.importorskip("xgboost")
    game = walsh_game(10, seed=1)
    est = fs.estimate(game, index="shapley", method="surrogate-regression", budget=400, seed=0, surrogate="trees",
                      replacement=True)
    ref = fs.estimate(game, index="shapley", method="regression-cv", budget=400, seed=0, folds=4)
    assert est.info["surrogate"] == {"kind": "trees"} and np.array_equal(est.values, ref.values)
    assert rel_error(est.values, fs.exact(game, index="shapley").values) < 0.02



class FakeBlas:
    """A process-wide BLAS thread count and a threadpoolctl-like controller over it."""

    def __init__(self) -> None:
        self.threads = 2

    def limit(self, limits: int, user_api: str):
        blas, saved = self, self.threads
        self.threads = limits

        class Limiter:
            def restore_original_limits(self) -> None:
                blas.threads = saved

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                self.restore_original_limits()
        return Limiter()


def test_one_thread_holds_one_limit_while_fits_overlap_in_threads(monkeypatch):
    import threading

    from fairshare.engine import ridge_path

    blas = FakeBlas()
    monkeypatch.setattr(ridge_path, "_controller", lambda: blas)
    a_in, b_in, a_left, inside = threading.Event(), threading.Event(), threading.Event(), []

    def first():
        with ridge_path.one_thread():
            a_in.set()
            b_in.wait()
        a_left.set()

    def second():
        a_in.wait()
        with ridge_path.one_thread():
            b_in.set()
            a_left.wait()
            inside.append(blas.threads)             # still fitting after the first fit left: still one thread

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert inside == [1] and blas.threads == 2


def test_a_leave_one_out_gain_within_its_noise_keeps_the_plain_fit():
    """The choice rule: 43% less leave-one-out error passes the relative bar (2 / sqrt(100) = 20%) but, when it comes
    from two rows of a hundred, is within the noise of the comparison; the same gain spread over every row is not."""
    from fairshare.engine.surrogate_errors import significant

    rng = np.random.default_rng(0)
    plain = rng.normal(size=(100, 1))
    plain[:2] = 6.0                                               # two rows hold 44% of the squared residuals
    spiky = plain.copy()
    spiky[:2] = 0.5                                               # a surrogate that fits those two rows alone
    gain = 1 - np.sum(spiky ** 2) / np.sum(plain ** 2)
    assert 0.42 < gain < 0.44 and not significant(plain, spiky, tries=18)
    assert significant(plain, np.sqrt(1 - gain) * plain, tries=18)
    assert not significant(plain, plain, tries=1) and not significant(plain[:2], 0.1 * plain[:2])


def test_auto_keeps_the_surrogate_where_its_fit_is_cheap_beside_the_game_and_gives_way_where_not():
    """``auto``'s surrogate regression gives way to the plain regression where its surrogate's predicted fit is over
    WALSH_ALLOWANCE seconds and over 30% of the game's declared evaluations (a fixed cost model, never a clock)."""
    from fairshare.engine.choice import WALSH_ALLOWANCE, choose
    from fairshare.engine.surrogate import predicted_walsh_seconds

    sv, fn = fs.Semivalue.shapley(), walsh_game(64, seed=0)
    assert predicted_walsh_seconds(8192, 64) <= WALSH_ALLOWANCE < predicted_walsh_seconds(100_000, 64)
    assert choose(fs.games.FunctionGame(fn, n_players=64), sv, budget=8192).method == "surrogate-regression"
    unknown = choose(fs.games.FunctionGame(fn, n_players=64), sv, budget=100_000)     # no declared cost
    assert unknown.method == "regression" and "declares no cost" in unknown.reason
    cheap = choose(fs.games.FunctionGame(fn, n_players=64, cost=5e-6), sv, budget=100_000)   # 0.5 s of evaluations
    assert cheap.method == "regression" and "more than 30%" in cheap.reason
    costly = choose(fs.games.FunctionGame(fn, n_players=64, cost=1e-4), sv, budget=100_000)  # 10 s of evaluations
    assert costly.method in ("surrogate-regression", "regression-cv")
    banzhaf = choose(fs.games.FunctionGame(fn, n_players=64, cost=5e-6), fs.Semivalue.banzhaf(), budget=100_000)
    assert banzhaf.method == "kernel-banzhaf"


def test_the_pairs_even_halves_find_the_interacting_pairs_and_screen_the_triples():
    """A paired sample's even halves score the interacting pairs first; the products of three players are screened by
    them (a triple of players that matter little on their own is taken where ranking by relevance alone misses it),
    and the default estimate is near exact where plain regression is not."""
    from fairshare.engine.screening import pair_scores, screened_triples

    n = 16
    a = np.r_[np.linspace(3.0, 1.0, 10), np.full(6, 0.2)]
    T3, T2 = np.array([[11, 13, 14], [12, 13, 14]]), np.array([[13, 14], [12, 13], [11, 14]])

    def f(Z):
        s = 2.0 * Z - 1.0
        return Z @ a + walsh_products(s, T3) @ [0.8, -0.6] + walsh_products(s, T2) @ [1.0, 0.7, -0.5]

    game = fs.games.FunctionGame(f, n_players=n)
    truth = fs.exact(game, "shapley").values
    Z = np.random.default_rng(0).random((200, n)) < 0.5
    Z = np.stack([Z, ~Z], axis=1).reshape(-1, n)                       # complementary pairs
    scores = pair_scores(Z, f(Z).astype(float))
    upper = np.triu_indices(n, 1)
    top = np.argsort(-scores[upper])[:3]
    assert sorted([int(upper[0][k]), int(upper[1][k])] for k in top) == sorted(T2.tolist())
    relevance = np.abs(truth) / np.abs(truth).max()
    assert [11, 13, 14] in screened_triples(scores, relevance, 60).tolist()
    assert [11, 13, 14] not in top_subsets(relevance, 3, 60).tolist()
    est = fs.estimate(game, "shapley", budget=480, seed=0)
    plain = fs.estimate(game, "shapley", budget=480, seed=0, method="regression")
    assert rel_error(est.values, truth) < 1e-6 < 1e-3 < rel_error(plain.values, truth)


def symmetric_game(n: int, seed: int) -> fs.games.FunctionGame:
    """An additive game plus a steep function of the coalition's size (what a blurred baseline does to an image
    model's output as more patches are kept)."""
    a = np.random.default_rng(seed).normal(size=n)
    return fs.games.FunctionGame(lambda Z: Z @ a + 8.0 / (1.0 + np.exp(-12.0 * (Z.mean(axis=1) - 0.6))), n_players=n)


@pytest.mark.parametrize("name", list(SEMIVALUES))
def test_size_feature_values_match_enumeration(name):
    from fairshare.engine.size_features import legendre, size_values

    n, degrees = 9, (2, 3, 5)
    for j, d in enumerate(degrees):
        game = fs.games.FunctionGame(lambda Z, d=d: legendre(2.0 * Z.sum(axis=1) / n - 1.0, (d,))[:, 0], n_players=n)
        exact = fs.exact(game, index=SEMIVALUES[name]).values
        assert np.allclose(exact, size_values(SEMIVALUES[name], n, degrees)[j], atol=1e-12)


@pytest.mark.parametrize("index, plain", [("shapley", "regression"), ("banzhaf", "kernel-banzhaf")])
def test_the_symmetric_features_take_a_games_size_effect_out_of_the_fit(index, plain):
    game = symmetric_game(18, seed=3)
    truth = fs.exact(game, index=index).values
    est = fs.estimate(game, index=index, method="surrogate-regression", budget=360, seed=0)
    base = fs.estimate(game, index=index, method=plain, budget=360, seed=0)
    assert est.info["surrogate"]["kind"].startswith("size")
    assert rel_error(est.values, truth) < 0.02 * rel_error(base.values, truth)
    assert abs(est.values.sum() - truth.sum()) < 1e-8 * abs(truth.sum()) or index != "shapley"


def test_auto_gives_a_torch_modules_game_the_surrogate_regression_not_the_tree_control_variate():
    """A costly game takes the tree control variate where the budget pays for it; a torch module's game (images,
    sequences) keeps the surrogate regression, whose symmetric features beat the trees there."""
    torch = pytest.importorskip("torch")
    from fairshare.engine.choice import choose

    pytest.importorskip("xgboost")
    sv, fn = fs.Semivalue.shapley(), walsh_game(64, seed=0)
    assert choose(fs.games.FunctionGame(fn, n_players=64, cost=1.0), sv, budget=4000).method == "regression-cv"
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    game = fs.games.TorchGame(net, torch.rand(3, 32, 32), outputs=0,
                              groups=np.broadcast_to((np.arange(32)[:, None] // 4) * 8 + np.arange(32) // 4,
                                                     (3, 32, 32)))
    choice = choose(game, sv, budget=4000)
    assert game.n_players == 64 and game.cost() * 4000 > 5.0       # a cost the tree control variate's fits pay
    assert choice.method == "surrogate-regression" and "torch module" in choice.reason


def test_the_wide_candidates_fit_every_product_of_three_where_the_three_screened_ones_cannot(monkeypatch):
    """A game of 14 players whose odd part is spread over all 364 products of three (plus an even size effect): at
    100n the wide candidate holds every product and the estimate is near exact; the three screened candidates (the
    regime where no more products fit than they hold) hold ~180 of them and stay at the plain regression's error."""
    import itertools

    from fairshare.engine import surrogate_fit

    n = 14
    rng = np.random.default_rng(3)
    T3 = np.array(list(itertools.combinations(range(n), 3)))
    c3, a = rng.normal(size=len(T3)) * 0.05, rng.normal(size=n)

    def f(Z):
        return Z @ a + walsh_products(2.0 * Z - 1.0, T3) @ c3 + 0.3 * Z.sum(axis=1) ** 2 / n

    game = fs.games.FunctionGame(f, n_players=n)
    truth = fs.exact(game, "shapley").values
    wide = fs.estimate(game, "shapley", budget=100 * n, seed=0)
    assert wide.info["surrogate"]["kind"] == "walsh-3-pairs0.5-wide"
    monkeypatch.setattr(surrogate_fit, "complete_cap", lambda rows, n_players, screened=0: 0)
    screened = fs.estimate(game, "shapley", budget=100 * n, seed=0)
    assert not screened.info["surrogate"]["kind"].endswith("wide")
    plain = fs.estimate(game, "shapley", budget=100 * n, seed=0, method="regression")
    assert rel_error(wide.values, truth) < 1e-6 < 1e-4 < rel_error(screened.values, truth)
    assert rel_error(screened.values, truth) > 0.5 * rel_error(plain.values, truth)


def test_the_screened_products_are_taken_from_the_wide_block_with_the_same_values(monkeypatch):
    """In the wide regime the screened candidate's products are columns of the wide block (not built again): the
    estimate (whichever candidate the leave-one-out error takes) equals, to rounding, the one that builds them anew."""
    from fairshare.engine import surrogate_fit

    taken = []
    within = surrogate_fit._Blocks._within
    monkeypatch.setattr(surrogate_fit._Blocks, "_within",
                        lambda self, k, s: taken.append(within(self, k, s)) or taken[-1])
    n = 16
    a = np.r_[np.linspace(3.0, 1.0, 10), np.full(6, 0.2)]
    T3 = np.array([[11, 13, 14], [12, 13, 14]])

    def f(Z):
        return Z @ a + walsh_products(2.0 * Z - 1.0, T3) @ [0.8, -0.6]

    game = fs.games.FunctionGame(f, n_players=n)
    reused = fs.estimate(game, "shapley", budget=480, seed=0)
    assert [t is not None for t in taken] == [False, False, True]      # built: wide 3, wide 5; taken: screened
    monkeypatch.setattr(surrogate_fit._Blocks, "_within", lambda self, k, s: None)
    built = fs.estimate(game, "shapley", budget=480, seed=0)
    np.testing.assert_allclose(reused.values, built.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(reused.stderr, built.stderr, rtol=0, atol=1e-12)


def test_the_wide_products_are_ranked_by_a_first_fit_where_the_pairs_show_nothing(monkeypatch):
    """150 products of three players planted at random among the 816 of 18 players, no even part (the pairs' scores
    are zero): at 100n the wide candidate keeps 288 of them, the best by a first fit of all, and its error is ~20x
    below the same number chosen by the players' relevance alone, and ~30x below the plain regression's."""
    import itertools

    from fairshare.engine import surrogate_fit
    from fairshare.engine.surrogate_candidates import complete_cap, feature_cap, ranks

    n = 18
    rng = np.random.default_rng(5)
    T3 = np.array(list(itertools.combinations(range(n), 3)))
    planted = T3[np.sort(rng.choice(len(T3), 150, replace=False))]
    c3, a = rng.normal(size=len(planted)) * 0.1, rng.normal(size=n)
    game = fs.games.FunctionGame(lambda Z: Z @ a + walsh_products(2.0 * Z - 1.0, planted) @ c3, n_players=n)
    truth = fs.exact(game, "shapley").values
    rows = 100 * n // 2
    assert complete_cap(rows, n, feature_cap(rows, 3)) == 288 and ranks(rows, 288, n)
    ranked = fs.estimate(game, "shapley", budget=100 * n, seed=0)
    monkeypatch.setattr(surrogate_fit, "ranks", lambda *args: False)
    unranked = fs.estimate(game, "shapley", budget=100 * n, seed=0)
    plain = fs.estimate(game, "shapley", budget=100 * n, seed=0, method="regression")
    assert ranked.info["surrogate"]["kind"] == unranked.info["surrogate"]["kind"] == "size+walsh-3-pairs0.5-wide"
    assert rel_error(ranked.values, truth) < 3e-4 < 1e-3 < rel_error(unranked.values, truth)
    assert rel_error(unranked.values, truth) < rel_error(plain.values, truth)


def test_the_ranking_in_float32_keeps_the_products_float64_keeps():
    """The ranking's pool is ranked in float32: planted columns among 400 of +-1 signs, off a basis, are found as in
    float64."""
    from fairshare.engine.screening import ridge_ranked

    rng = np.random.default_rng(11)
    F = rng.choice([-1.0, 1.0], size=(1200, 400)) * rng.uniform(0.5, 1.5, size=(1200, 1))
    Q = np.linalg.qr(rng.normal(size=(1200, 30)))[0]
    planted = np.sort(rng.choice(400, 25, replace=False))
    r = F[:, planted] @ rng.normal(size=(25, 2)) + 0.5 * rng.normal(size=(1200, 2))
    r -= Q @ (Q.T @ r)
    kept64 = ridge_ranked(F, r, 25, basis=Q)
    kept32 = ridge_ranked(F.astype(np.float32), r, 25, basis=Q)
    assert kept64.tolist() == kept32.tolist() == planted.tolist()


@pytest.mark.parametrize("index", ["shapley", "banzhaf"])
def test_error_bars_of_ranked_products_cover_where_the_ranking_fits_noise(monkeypatch, index):
    """A random ReLU network of 18 players with a sigmoid output (odd structure spread over many products, as german
    credit's MLP): at 100n the wide candidate's products are ranked by a first fit of the same residuals its error
    bars read, and its own bars covered 0.88 of the true values (8 seeds); at least the bars of a fit with a quarter as
    many products chosen by their pairs: 0.97-0.99, values unchanged."""
    from fairshare.engine import surrogate_fit

    n, rng = 18, np.random.default_rng(0)
    W1, b1, W2 = rng.normal(size=(n, 32)) * 0.6, rng.normal(size=32) * 0.5, rng.normal(size=32) / np.sqrt(32) * 2
    game = fs.games.FunctionGame(lambda Z: 1 / (1 + np.exp(-(np.maximum(Z @ W1 + b1, 0) @ W2))), n_players=n)
    sv = SEMIVALUES[index]
    truth = fs.exact(game, sv).values
    runs = [fs.estimate(game, sv, budget=100 * n, seed=seed) for seed in range(8)]
    assert all("chosen by their pairs" in e.info["surrogate"]["error_bars"] for e in runs)
    assert np.mean([np.abs(e.values - truth) <= 1.96 * e.stderr for e in runs]) >= 0.93       # 0.979-0.986 measured
    monkeypatch.setattr(surrogate_fit, "_check", lambda *args: None)
    own = [fs.estimate(game, sv, budget=100 * n, seed=seed) for seed in range(8)]
    assert all(np.array_equal(a.values, b.values) for a, b in zip(runs, own))
    assert np.mean([np.abs(e.values - truth) <= 1.96 * e.stderr for e in own]) < 0.9          # 0.882 measured


def test_products_of_three_are_weighted_by_their_pairs(monkeypatch):
    """A game whose 32 products of three each extend one of 4 interacting pairs (560 products in all): at 30n the
    candidates weighted by the pairs' scores (the even halves') give 1.7x lower error (geometric mean over 4 seeds)
    than the same candidates unweighted."""
    from fairshare.engine import surrogate_candidates

    n = 16
    rng = np.random.default_rng(7)
    P = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    T = np.array([sorted((a, b, x)) for a, b in P for x in range(8, 16)])
    c3, a = rng.normal(size=len(T)) * 0.2, rng.normal(size=n)
    game = fs.games.FunctionGame(lambda Z: Z @ a + walsh_products(2.0 * Z - 1.0, P).sum(axis=1)
                                 + walsh_products(2.0 * Z - 1.0, T) @ c3, n_players=n)
    truth = fs.exact(game, "shapley").values

    def errors():
        runs = [fs.estimate(game, "shapley", budget=30 * n, seed=seed) for seed in range(4)]
        return np.array([rel_error(r.values, truth) for r in runs]), {r.info["surrogate"]["kind"] for r in runs}

    weighted, kinds = errors()
    monkeypatch.setattr(surrogate_candidates, "PAIRS_POWER", 0.0)
    unweighted, plain_kinds = errors()
    assert kinds == {"size+walsh-3-pairs0.5-wide"} and plain_kinds == {"size+walsh-3"}
    assert np.exp(np.mean(np.log(weighted))) < 0.75 * np.exp(np.mean(np.log(unweighted)))
