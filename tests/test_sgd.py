"""Optimized permutation Monte Carlo and projected SGD (the projected-SGD paper)."""

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.samplers import draw_permutations
from fairshare.engine.sgd import curvature_ratio, dykstra_projection, project


def soum(n=12, seed=0):
    return fs.games.SOUMGame.random(n, n_terms=30, max_size=4, seed=seed)


# ---------------------------------------------------------------------------------- Monte Carlo
def test_optimized_monte_carlo_equals_classic_with_half_the_evaluations():
    n, T = 10, 40
    g = soum(n)
    walk = fs.estimate(g, "shapley", method="permutation", budget=2 + T * (n - 1), seed=3,
                       permutations=T)
    classic = fs.estimate(g, "shapley", method="permutation", budget=2 + T * 2 * n, seed=3,
                          reuse=False, permutations=T)
    assert walk.info["n_permutations"] == classic.info["n_permutations"] == T
    np.testing.assert_allclose(walk.values, classic.values, atol=1e-12)      # the same permutations, same estimate
    np.testing.assert_allclose(walk.stderr, classic.stderr, atol=1e-12)
    assert classic.n_evaluations == 2 + 2 * n * T
    assert walk.n_evaluations <= 2 + (n - 1) * T < classic.n_evaluations / 2 + 2


def test_antithetic_and_stratified_permutations():
    P = draw_permutations(np.random.default_rng(0), 6, 5, antithetic=True, stratified=False)
    np.testing.assert_array_equal(P[1], P[0][::-1])
    np.testing.assert_array_equal(P[3], P[2][::-1])
    S = draw_permutations(np.random.default_rng(0), 10, 5, antithetic=False, stratified=True)
    for block in (S[:5], S[5:]):
        for position in range(5):
            assert sorted(block[:, position].tolist()) == list(range(5))     # each player once per position
    g = soum(10)
    truth = fs.exact(g, "shapley").values
    for kw in (dict(antithetic=True), dict(stratified=True)):
        a = fs.estimate(g, "shapley", method="permutation", budget=2000, seed=1, **kw)
        b = fs.estimate(g, "shapley", method="permutation", budget=2000, seed=1, **kw)
        np.testing.assert_array_equal(a.values, b.values)
        assert fs.metrics.relative_squared_error(a, truth) < 0.05


def test_permutation_tol_stops_early():
    g = fs.games.HastieClassificationGame.sample(16, seed=2)
    phi = fs.estimate(g, "shapley", method="permutation", budget=100_000, seed=0, tol=0.1)
    assert phi.n_evaluations < 50_000 and phi.info["estimated_relative_error"] <= 0.1
    truth = fs.exact(g, "shapley").values
    assert np.sqrt(fs.metrics.relative_squared_error(phi, truth)) < 0.25


# ----------------------------------------------------------------------------------- projection
@pytest.mark.parametrize("seed", range(5))
def test_projection_is_exact_and_equals_dykstra(seed):
    rng = np.random.default_rng(seed)
    d, k = 8, 2
    phi = rng.normal(size=(d, k)) * 5
    total = rng.normal(size=k)
    radius = 3.0
    closed = project(phi, total, radius)
    np.testing.assert_allclose(closed.sum(axis=0), total, atol=1e-12)          # on the hyperplane
    assert np.all(np.linalg.norm(closed, axis=0) <= radius + 1e-12)            # in the ball
    np.testing.assert_allclose(closed, dykstra_projection(phi, total, radius, iterations=5000), atol=1e-8)
    # optimality: no feasible point (random ones, pushed into the set) is closer
    for _ in range(200):
        y = project(closed + rng.normal(size=(d, k)) * 0.3, total, radius)
        assert np.linalg.norm(phi - y) >= np.linalg.norm(phi - closed) - 1e-12


def test_projection_rejects_an_empty_intersection():
    with pytest.raises(ValueError, match="radius too small"):
        project(np.zeros((4, 1)), np.array([10.0]), 1.0)


# ------------------------------------------------------------------------------------------ SGD
def test_curvature_ratio_matches_the_kernel_gram():
    from fairshare.engine.exact import all_coalitions
    from fairshare.engine.formulations import log_kernel_weight

    d = 7
    X = all_coalitions(d)[1:-1].astype(float)
    w = np.exp(log_kernel_weight(d, X.sum(axis=1)))
    gram = (X * w[:, None]).T @ X
    P = np.eye(d) - 1.0 / d
    eig = np.linalg.eigvalsh(P @ gram @ P)
    mu = 2 * eig[-1]                                                           # on the hyperplane: one eigenvalue
    L = 2 * np.sum(w * X.sum(axis=1))
    assert np.allclose(eig[1:], eig[-1]) and L / mu == pytest.approx(curvature_ratio(d))


@pytest.mark.parametrize("make", [lambda: soum(12, seed=4), lambda: fs.games.HastieClassificationGame.sample(12, seed=4)],
                         ids=["soum", "hastie"])
def test_sgd_converges(make):
    g = make()
    truth = fs.exact(g, "shapley").values
    err = {B: np.mean([fs.metrics.relative_squared_error(fs.estimate(g, "shapley", method="sgd", budget=B, seed=s),
                                                          truth) for s in range(6)]) for B in (500, 5000)}
    assert err[5000] <= err[500] / 3, err


@pytest.mark.parametrize("schedule", ["constant", "1/t", "1/sqrt(t)"])
def test_sgd_estimate_satisfies_efficiency(schedule):
    g = fs.games.RadialGame.sample(10, seed=5)
    phi = fs.estimate(g, "shapley", method="sgd", budget=800, seed=0, schedule=schedule)
    assert phi.values.sum() == pytest.approx(phi.grand_value - phi.empty_value, abs=1e-12)
    assert phi.info["iterations"] >= 1 and phi.info["chains"] == 4
    assert np.all(np.isfinite(phi.stderr)) and np.all(phi.stderr > 0)       # from the spread of the chains


def test_sgd_arguments():
    g = soum(8)
    with pytest.raises(ValueError, match="schedule must be one of"):
        fs.estimate(g, "shapley", method="sgd", budget=100, schedule="adam")
    with pytest.raises(ValueError, match="step must be > 0"):
        fs.estimate(g, "shapley", method="sgd", budget=100, step=0.0)
