"""The unified Shapley estimators against exact values."""

import numpy as np
import pytest

import fairshare as fs
from conftest import interacting_game, median_error, near_additive_game, stderr_coverage

UNIFIED = ["kernelshap", "unbiased-kernelshap", "leverageshap", "regression", "matrix-vector"]
# every (solver, distribution, replacement) combination of the framework
GRID = [(solver, dist, repl) for solver in ("regression", "matrix-vector")
        for dist in ("kernel", "modified", "leverage") for repl in (True, False)]


_TREES = {}


def tree_game(n, seed=0):
    """A game from a real scikit-learn tree ensemble (absent features take a baseline row) on a target
    with chained pairwise interactions, so that every feature matters and features interact."""
    from sklearn.ensemble import GradientBoostingRegressor

    if (n, seed) not in _TREES:
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((600, n))
        y = np.sin(X).sum(axis=1) + (X[:, :-1] * X[:, 1:]).sum(axis=1) + 0.1 * rng.standard_normal(600)
        model = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=seed).fit(X, y)
        _TREES[(n, seed)] = (model, X[0], X[1])
    model, x, base = _TREES[(n, seed)]
    return fs.games.FunctionGame(lambda S: model.predict(np.where(S, x, base)), n_players=n)


def soum(n, seed=0):
    return fs.games.SOUMGame.random(n, n_terms=3 * n, max_size=min(n, 6), seed=seed)


@pytest.mark.parametrize("n", [8, 12, 16])
@pytest.mark.parametrize("make", [soum, tree_game], ids=["soum", "tree"])
@pytest.mark.parametrize("method", UNIFIED)
def test_error_falls_with_budget(method, make, n):
    g = make(n)
    truth = fs.exact(g, "shapley").values
    low, high = (3 * n, 12 * n) if n > 8 else (18, 72)
    e_low = median_error(g, "shapley", low, truth=truth, method=method)
    e_high = median_error(g, "shapley", high, truth=truth, method=method)
    assert e_high < e_low / 2.0, (e_low, e_high)       # 4x the budget: roughly 4x less error


@pytest.mark.parametrize("solver, dist, repl", GRID)
def test_every_configuration_converges(solver, dist, repl):
    g = soum(12, seed=1)
    truth = fs.exact(g, "shapley").values
    kw = dict(method=solver, distribution=dist, replacement=repl)
    e_low, e_high = (median_error(g, "shapley", b, truth=truth, **kw) for b in (48, 192))
    assert e_high < e_low / 2.0, (e_low, e_high)


@pytest.mark.parametrize("n", [8, 12])
@pytest.mark.parametrize("solver, dist", [(s, d) for s in ("regression", "matrix-vector")
                                           for d in ("kernel", "modified", "leverage")])
def test_without_replacement_is_exact_once_the_budget_covers_everything(solver, dist, n):
    g = tree_game(n, seed=2)
    truth = fs.exact(g, "shapley")
    phi = fs.estimate(g, "shapley", method=solver, distribution=dist, replacement=False, budget=2**n, seed=0)
    np.testing.assert_allclose(phi.values, truth.values, atol=1e-8)
    np.testing.assert_allclose(phi.stderr, 0.0, atol=1e-12)
    assert phi.n_evaluations == 2**n


@pytest.mark.parametrize("method", ["kernelshap", "leverageshap", "regression"])
def test_regression_estimators_are_efficient(method):
    g = tree_game(12, seed=3)
    phi = fs.estimate(g, "shapley", method=method, budget=100, seed=0)
    assert phi.values.sum() == pytest.approx(phi.grand_value - phi.empty_value, abs=1e-10)


def test_adversarial_game_favours_kernel_and_modified_over_leverage():
    """Proposition E.1 / Corollary E.2: on the App. E model, kernel weights beat leverage scores by
    Theta(d / log d) and modified l2 beats them by Theta(sqrt d), for both estimators."""
    d = 64
    g = fs.games.AdversarialGame(d, width=2, xi=1.0, chi=1.0)
    truth = fs.exact(g, "shapley").values
    np.testing.assert_allclose(truth, 1.0)
    for solver in ("regression", "matrix-vector"):
        mse = {}
        for dist in ("kernel", "modified", "leverage"):
            mse[dist] = np.mean([np.sum((fs.estimate(g, "shapley", method=solver, budget=20 * d, seed=s,
                                                     distribution=dist, replacement=True,
                                                     control_variate=None).values - truth) ** 2)
                                 for s in range(30)])
        assert mse["kernel"] < mse["modified"] < mse["leverage"], mse
        assert mse["leverage"] > 2.5 * mse["kernel"], mse


@pytest.mark.parametrize("method", ["leverageshap", "kernelshap", "regression", "matrix-vector"])
def test_image_scale_additive_game(method):
    w = np.random.default_rng(0).standard_normal(3072)
    phi = fs.estimate(fs.games.AdditiveGame(w), "shapley", method=method, budget=20_000, seed=0)
    assert np.all(np.isfinite(phi.values)) and np.all(np.isfinite(phi.stderr))
    assert fs.metrics.relative_squared_error(phi, w) < 1e-8
    assert phi.n_evaluations <= 20_000


def test_unbiased_kernelshap_is_unbiased():
    g = soum(8, seed=4)
    truth = fs.exact(g, "shapley").values
    runs = np.array([fs.estimate(g, "shapley", method="unbiased-kernelshap", budget=24, seed=s).values
                     for s in range(1500)])
    mean, sem = runs.mean(axis=0), runs.std(axis=0, ddof=1) / np.sqrt(runs.shape[0])
    z = (mean - truth) / sem
    assert np.all(np.abs(z) < 4.0), z
    # while a single run is far off: the agreement comes from averaging, not from luck
    assert np.median(np.abs(runs[:20] - truth)) > 5 * np.max(np.abs(mean - truth))


@pytest.mark.parametrize("method", UNIFIED)
def test_stderr_is_calibrated(method):
    coverage = stderr_coverage(tree_game(12, seed=5), "shapley", method, budget=240)
    assert 0.85 <= coverage <= 0.99, coverage


def test_user_control_variates():
    # a mostly additive game with a few interactions, like most model explanations
    n = 12
    g, rng = near_additive_game(n, 8, 3.0, 0.3, seed=6, max_size=6)
    carriers, coefs = g.carriers, g.coefficients
    truth = fs.exact(g, "shapley").values
    plain = median_error(g, "shapley", 100, truth=truth, method="matrix-vector", control_variate=None)
    close = truth + 0.01 * rng.standard_normal(n)                 # e.g. an earlier explanation
    proxied = median_error(g, "shapley", 100, truth=truth, method="matrix-vector", control_variate=close)
    assert proxied < plain / 20
    # a cheap surrogate game with known values: here the additive part of the game
    surrogate = fs.games.SOUMGame(carriers[:n], coefs[:n])
    with_game = median_error(g, "shapley", 100, truth=truth, method="matrix-vector", control_variate=surrogate)
    assert with_game < plain / 20
    with pytest.raises(ValueError, match="control_variate must be"):
        fs.estimate(g, "shapley", method="matrix-vector", budget=100, control_variate=np.ones(3))
    with pytest.raises(ValueError, match="control_variate must be"):
        fs.estimate(g, "shapley", method="matrix-vector", budget=100, control_variate="magic")


def test_auto_control_variate_helps_the_matrix_vector_estimator():
    g = tree_game(10, seed=7)
    truth = fs.exact(g, "shapley").values
    plain = median_error(g, "shapley", 100, truth=truth, method="matrix-vector", control_variate=None)
    auto = median_error(g, "shapley", 100, truth=truth, method="matrix-vector", control_variate="auto")
    assert auto < plain / 2


def test_tol_stops_early_with_an_honest_error_estimate():
    g = soum(16, seed=8)
    truth = fs.exact(g, "shapley").values
    phi = fs.estimate(g, "shapley", method="regression", budget=20_000, seed=0, tol=0.1)
    assert phi.n_evaluations < 5_000
    estimated = phi.info["estimated_relative_error"]
    assert estimated <= 0.1
    true = np.sqrt(fs.metrics.relative_squared_error(phi, truth))
    assert true < 0.2 and 0.33 < estimated / true < 3.0
    full = fs.estimate(g, "shapley", method="regression", budget=3_000, seed=0, tol=1e-9)
    assert full.n_evaluations <= 3_000 and full.info["n_rounds"] > 1


def test_tol_arguments():
    g = soum(8)
    with pytest.raises(ValueError, match="takes no stopping rule"):
        fs.estimate(g, "shapley", method="exact", budget=256, tol=0.1)
    with pytest.raises(ValueError, match="tol must be finite and > 0"):
        fs.estimate(g, "shapley", method="regression", budget=100, tol=0.0)


@pytest.mark.parametrize("method", UNIFIED)
def test_multi_output(method):
    base = soum(10, seed=9)
    coefs = np.stack([base.coefficients, np.cos(base.coefficients)], axis=1)
    multi = fs.games.SOUMGame(base.carriers, coefs)
    phi = fs.estimate(multi, "shapley", method=method, budget=200, seed=3)
    assert phi.values.shape == (10, 2) and phi.stderr.shape == (10, 2)
    single = fs.estimate(fs.games.SOUMGame(base.carriers, coefs[:, 1]), "shapley", method=method, budget=200, seed=3)
    np.testing.assert_allclose(phi.values[:, 1], single.values, atol=1e-10)


@pytest.mark.parametrize("options, match", [
    (dict(distribution="uniform"), "distribution must be one of"),
    (dict(distribution="tau", tau=2.0), "tau must be given in"),
    (dict(counts="poisson"), "counts must be"),
    (dict(lam="beta"), "lam must be 'alpha' or a number"),
    (dict(lam=np.nan), "lam must be 'alpha' or a finite number"),
])
def test_bad_options(options, match):
    with pytest.raises(ValueError, match=match):
        fs.estimate(soum(8), "shapley", method="regression", budget=100, seed=0, **options)


def test_presets_have_fixed_semantics():
    with pytest.raises(ValueError, match="unknown option"):
        fs.estimate(soum(8), "shapley", method="kernelshap", budget=100, distribution="leverage")


def test_lambda_choices_agree_at_full_budget():
    g = soum(8, seed=10)
    truth = fs.exact(g, "shapley").values
    for lam in ("alpha", 0.0, 3.5):
        phi = fs.estimate(g, "shapley", method="matrix-vector", budget=256, seed=0, lam=lam, control_variate=None)
        np.testing.assert_allclose(phi.values, truth, atol=1e-10)


def test_auto_picks_the_regression_estimator():
    g = tree_game(12)
    assert fs.estimate(g, "shapley", budget=20, seed=0).method == "permutation"            # below 2n + 2
    assert fs.estimate(g, "shapley", budget=40, seed=0).method == "surrogate-regression"   # below 4n + 2
    assert fs.estimate(g, "shapley", budget=200, seed=0).method == "surrogate-regression"  # no declared cost
    costly = fs.games.FunctionGame(g.fn, n_players=12, cost=0.02)                          # 20 ms an evaluation
    assert fs.estimate(costly, "shapley", budget=200, seed=0).method == "regression-cv"


def test_paired_regression_is_exact_for_pairwise_games():
    """For a game with only pairwise interactions, v(S) - v(N \\ S) is linear in S, so every paired
    regression design with n - 1 independent pairs recovers the Shapley values exactly."""
    n = 14
    g = fs.games.SOUMGame.random(n, n_terms=40, max_size=2, seed=11)
    truth = fs.exact(g, "shapley").values
    for complete in ("auto", False):
        phi = fs.estimate(g, "shapley", method="regression", budget=2 * n + 2, seed=0, complete=complete)
        np.testing.assert_allclose(phi.values, truth, atol=1e-10)


def test_completing_the_singletons_helps_at_small_budgets():
    """With budget 2n + 2 the default design takes every coalition of one player and of all but one
    (complete="auto"); on a game with third-order interactions that beats a spread-out sample."""
    n = 14
    g = fs.games.SOUMGame.random(n, n_terms=40, min_size=3, max_size=3, seed=12)
    truth = fs.exact(g, "shapley").values
    auto = median_error(g, "shapley", 2 * n + 2, truth=truth, method="regression")
    spread = median_error(g, "shapley", 2 * n + 2, truth=truth, method="regression", complete=False)
    assert auto < spread / 2, (auto, spread)
    phi = fs.estimate(g, "shapley", method="regression", budget=2 * n + 2, seed=0)
    sizes = phi.info["n_samples"]
    assert sizes == n                          # the n singleton pairs, nothing else


def test_complete_levels_in_the_sampler():
    from fairshare.engine.samplers import sample_without_replacement, shapley_size_log_mass

    q = shapley_size_log_mass(10, "kernel")
    rng = np.random.default_rng(0)
    whole = sample_without_replacement(rng, 10, q, 10, complete=True)          # exactly the 10 singleton pairs
    assert sorted(np.minimum(whole.coalitions.sum(1), 10 - whole.coalitions.sum(1))) == [1] * 20
    np.testing.assert_array_equal(whole.fpc, 0.0)
    mixed = sample_without_replacement(rng, 10, q, 40, complete="auto")       # singletons fill only 25%: sampled
    assert np.any(mixed.fpc > 0) and mixed.n_draws == 40
    forced = sample_without_replacement(rng, 10, q, 40, complete=True)        # forced, rest sampled
    sizes = np.minimum(forced.coalitions.sum(1), 10 - forced.coalitions.sum(1))
    assert (sizes == 1).sum() == 20 and forced.n_draws == 40
    with pytest.raises(ValueError, match="complete must be"):
        sample_without_replacement(rng, 10, q, 40, complete="yes")


def test_wide_additive_game_is_recovered_exactly_by_the_blocked_solver():
    # n = 1500 > one block of rows is not needed to hold the design: 4000 coalitions, 1500 players
    n = 1500
    w = np.random.default_rng(3).standard_normal(n)
    g = fs.games.AdditiveGame(w)
    phi = fs.estimate(g, "shapley", method="regression", budget=4000, seed=0)
    np.testing.assert_allclose(phi.values, w, atol=1e-8)
    mv = fs.estimate(g, "shapley", method="matrix-vector", budget=1000, seed=0)   # m < n: no control variate
    assert np.all(np.isfinite(mv.values)) and mv.values.sum() == pytest.approx(w.sum())


def test_gram_by_rank_k_updates_equals_the_dense_product():
    from fairshare.engine.solve import Design, gram

    rng = np.random.default_rng(0)
    r, d = 9000, 40                                                            # more rows than one block
    Z = rng.random((r, d)) < 0.3
    s, t, w = rng.random(r), rng.random(r), rng.random(r)
    design = Design(Z, s, t, w, np.zeros((r, 1)), np.ones(r), np.arange(r), np.zeros(r, int))
    A = Z * s[:, None] - t[:, None]
    np.testing.assert_allclose(gram(design), A.T @ (A * w[:, None]), rtol=1e-12, atol=1e-9)


def test_tree_control_variate_cuts_the_shapley_regression_error_on_interacting_games():
    g = interacting_game()
    truth = fs.exact(g, "shapley").values
    errors = {method: median_error(g, "shapley", 600, seeds=12, truth=truth, method=method)
              for method in ("regression", "regression-cv")}
    assert errors["regression-cv"] < 0.5 * errors["regression"], errors


def test_tree_control_variate_needs_independent_pairs_and_budget():
    g = interacting_game()
    with pytest.raises(ValueError, match="replacement"):
        fs.estimate(g, "shapley", method="regression-cv", budget=300, seed=0, replacement=False)
    with pytest.raises(ValueError, match="control_variate"):
        fs.estimate(g, "shapley", method="regression", budget=300, seed=0, control_variate="forest")
    with pytest.raises(ValueError, match="folds"):
        fs.estimate(g, "shapley", method="regression-cv", budget=300, seed=0, folds=1)
    with pytest.raises(TypeError, match="folds"):
        fs.estimate(g, "shapley", method="regression-cv", budget=300, seed=0, folds=2.5)
    # below 4n evaluations there are too few pairs for surrogates: the plain default regression, said so
    small = fs.estimate(g, "shapley", method="regression-cv", budget=40, seed=0)
    plain = fs.estimate(g, "shapley", method="regression", budget=40, seed=0)
    np.testing.assert_allclose(small.values, plain.values)
    assert small.info["control"].startswith("off")
    used = fs.estimate(g, "shapley", method="regression-cv", budget=300, seed=0)
    assert "control" not in used.info and used.info["control_beta"][0] > 0.5
