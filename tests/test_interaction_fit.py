"""The interaction estimator's cross-fitted surrogates: each fold's normal equations are the fit on the other folds,
the penalized solve is the bordered system's solution, and wide fits (the pairs of many players) are accurate."""

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine import interaction_regression as IR
from fairshare.engine.interaction_fit import FoldSystems
from fairshare.indices.interactions import subsets_up_to
from fairshare.indices.moebius import contains


def _sample(n=7, rows=90, folds=4, seed=0):
    rng = np.random.default_rng(seed)
    Z = np.vstack([np.zeros(n, bool), np.ones(n, bool), rng.random((rows, n)) < rng.uniform(0.2, 0.8, (rows, 1))])
    V = rng.standard_normal((rows + 2, 2)) + Z[:, :1] * Z[:, 1:2] * 3.0
    mu = np.r_[1.0, 1.0, rng.uniform(0.5, 2.0, rows)]
    fold = np.r_[-1, -1, np.where(rng.random(rows) < 0.2, -1, rng.integers(0, folds, rows))]
    return Z, V, mu, fold


@pytest.mark.parametrize("shapley", [True, False])
def test_each_folds_system_is_the_fit_on_the_other_folds(shapley):
    Z, V, mu, fold = _sample()
    folds = 4
    systems = FoldSystems(Z, V, mu, fold, folds, 2, shapley=shapley)
    feats = subsets_up_to(Z.shape[1], 2, 0)[1 if shapley else 0:]
    X = contains(Z, feats).astype(float)
    y = V - V[0] if shapley else V
    for f in range(folds):
        # the training rows' weights: the certain rows as they are, the other folds' rows scaled by folds / (folds - 1)
        w = np.where(fold == -1, mu, np.where(fold == f, 0.0, mu * folds / (folds - 1)))
        if shapley:
            w[:2] = 0.0                                         # the ends are fitted exactly, outside the squares
        A, b = systems.system(f)
        np.testing.assert_allclose(A, X.T @ (X * w[:, None]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, X.T @ (y * w[:, None]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapley", [True, False])
def test_the_penalized_solve_is_the_bordered_systems_solution(shapley):
    Z, V, mu, fold = _sample(seed=1)
    systems = FoldSystems(Z, V, mu, fold, 4, 2, shapley=shapley)
    A, b = systems.system(2)
    shrunk = np.flatnonzero(systems.shrunk)
    for ridge in (1e-4, 1e-1):
        K = A.copy()
        K[shrunk, shrunk] += ridge * np.mean(np.diag(A))
        if shapley:                                     # sum of the coefficients = v(N) - v(empty), by a multiplier
            p = K.shape[0]
            K = np.block([[K, np.ones((p, 1))], [np.ones((1, p)), np.zeros((1, 1))]])
            b = np.vstack([systems.system(2)[1], (V[1] - V[0])[None, :]])
        want = np.linalg.solve(K, b)[:A.shape[0]]
        got = systems.solve(2, [ridge])[:, :, 0]
        np.testing.assert_allclose(got[1:] if shapley else got, want, rtol=1e-8, atol=1e-10)
        if shapley:
            np.testing.assert_allclose(got[0], V[0])
            np.testing.assert_allclose(got.sum(axis=0), V[1], rtol=1e-10)


@pytest.mark.parametrize("shapley", [True, False])
def test_the_cholesky_solve_and_its_lu_fallback_agree(shapley, monkeypatch):
    """The penalized systems are solved by a Cholesky factor; where it fails (not positive definite) the LU of the
    bordered system answers, with the same coefficients, and every fold's stored matrix is left as it was."""
    from fairshare.engine import interaction_fit

    Z, V, mu, fold = _sample(seed=3)
    systems = FoldSystems(Z, V, mu, fold, 1, 2, shapley=shapley)
    stored = systems.system(-1)[0].copy()
    got = systems.solve(-1, [1e-4, 1e-2])
    np.testing.assert_array_equal(systems.system(-1)[0], stored)
    monkeypatch.setattr(interaction_fit, "spd_solve", lambda *args, **kwargs: None)
    np.testing.assert_allclose(systems.solve(-1, [1e-4, 1e-2]), got, rtol=1e-8, atol=1e-10)
    assert np.all(np.isfinite(got))


def test_pairs_of_many_players_come_from_a_wide_pairwise_surrogate():
    """64 players (2,081 unknowns at order 2): the pairwise surrogate is a wide fit (8 folds, 3 penalties). Its
    pairs' relative squared errors (0.24, 0.33) are the former fit's (7 fits a fold, about 10x the time) and a tenth of
    the additive surrogate's (2.86, 3.17: worse than answering zeros)."""
    n, budget = 64, 4200
    assert IR.surrogate_candidates(n, 2, budget)[2:] == [(2, 1e-4), (2, 1e-3), (2, 1e-2)]
    for seed in (0, 1):
        g = fs.games.SOUMGame.random(n, n_terms=100, max_size=4, seed=seed)
        exact = fs.interactions(g, "k-sii", order=2, method="exact").values
        f = fs.games.FunctionGame(lambda S, g=g: g(S), n_players=n)
        res = fs.interactions(f, "k-sii", order=2, budget=budget, seed=seed)
        additive = fs.interactions(f, "k-sii", order=2, budget=budget, seed=seed, method="iq-regression",
                                   surrogate_order=1)
        err = fs.metrics.relative_squared_error(res.values, exact)
        err_additive = fs.metrics.relative_squared_error(additive.values, exact)
        assert res.info["surrogate_order"] == 2
        assert err < 0.5 and err < err_additive / 5, (err, err_additive)
        assert np.mean(np.abs(res.values - exact) <= 2 * res.stderr) >= 0.9


def test_an_order_asked_for_is_fitted_whatever_it_costs(monkeypatch):
    """Over the cap, an order asked for gave no candidate, and the run failed after spending its budget (40 players,
    30,000 evaluations, ``surrogate_order=2``: ``ValueError: need at least one array to concatenate``)."""
    monkeypatch.setattr(IR, "_MAX_FIT_WORK", 1.0)
    assert IR.surrogate_candidates(30, 2, 900) == [(0, 0.0)]
    assert IR.surrogate_candidates(30, 2, 900, fixed=2) == [(2, 0.0)]
    g = fs.games.SOUMGame.random(12, n_terms=20, max_size=2, seed=0)
    f = fs.games.FunctionGame(lambda S: g(S), n_players=12)
    res = fs.interactions(f, "k-sii", order=2, budget=400, seed=0, method="iq-regression", surrogate_order=2)
    exact = fs.interactions(g, "k-sii", order=2, method="exact").values
    assert res.info["surrogate_order"] == 2
    np.testing.assert_allclose(res.values, exact, atol=1e-8)     # order 2 fits a game of pairs exactly


@pytest.mark.parametrize("n, order", [(16, 3), (30, 2), (30, 3), (64, 2), (100, 2), (111, 2), (112, 2)])
def test_a_larger_budget_never_loses_a_surrogate_a_smaller_one_had(n, order):
    """The cap is on the factorizations (they do not grow with the budget): the pairs of up to 111 players."""
    before: set = set()
    for rows in np.unique(np.geomspace(2 * n, 400_000, 40).astype(int)):
        orders = {ell for ell, _ in IR.surrogate_candidates(n, order, int(rows))}
        assert before <= orders, (rows, before, orders)
        before = orders
    assert (2 in before) == (n <= 111)


def test_wide_fits_give_the_same_bits_for_the_same_seed():
    """45 players (1,036 unknowns at order 2: the smallest wide fit), two runs and two indices."""
    g = fs.games.SOUMGame.random(45, n_terms=60, max_size=3, seed=2)
    f = fs.games.FunctionGame(lambda S: g(S), n_players=45)
    for index in ("k-sii", "fbii"):
        a, b = (fs.interactions(f, index, order=2, budget=1200, seed=7) for _ in range(2))
        assert a.info["surrogate_order"] == 2 and a.info["surrogate_ridge"] in (1e-4, 1e-3, 1e-2)
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.stderr, b.stderr)


def test_the_cross_fitted_correction_is_unbiased_when_most_coalitions_are_drawn():
    """Drawn without replacement, a fold's held-out coalitions are never its fit's training ones: their residuals
    alone, weighted as a sample of the whole size, were biased (6 players, 50 of the 64 coalitions, an order-2
    surrogate: mean |t| of the bias 1.87 and max 6.2 over 100 seeds; 0.83 and 2.6 once the drawn coalitions'
    residuals are summed exactly and the held-out ones stand for the coalitions not drawn only)."""
    n = 6
    table = np.random.default_rng(7).normal(size=1 << n)
    g = fs.games.FunctionGame(lambda S: table[np.asarray(S, bool).astype(np.int64) @ (1 << np.arange(n))]
                              + 2.0 * S[:, 0] * S[:, 1], n_players=n)
    exact = fs.interactions(g, "k-sii", order=2, method="exact").values
    err = np.array([fs.interactions(g, "k-sii", order=2, budget=50, seed=s, method="iq-regression",
                                    surrogate_order=2).values - exact for s in range(100)])
    t = np.abs(err.mean(axis=0)) / (err.std(axis=0, ddof=1) / np.sqrt(err.shape[0]))
    assert t.mean() < 1.2 and t.max() < 4.0, (t.mean(), t.max())
