"""Image-scale linear algebra: packed coalition products, the iterative solver against the dense one on the same
draws, its error bars, and vectorized sampling."""

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.iterative import PackedDesign, use_iterative
from fairshare.engine.packed import PackedRows
from fairshare.engine.samplers import sample_without_replacement, shapley_size_log_mass


def test_packed_products_equal_dense_products():
    rng = np.random.default_rng(0)
    m, d, k = 700, 131, 3                                  # d not a multiple of 8
    Z = rng.random((m, d)) < 0.4
    P = PackedRows(Z)
    V, U = rng.standard_normal((d, k)), rng.standard_normal((m, k))
    s, t, w = rng.random(m), rng.random(m), rng.random(m)
    center = rng.standard_normal(d)
    np.testing.assert_allclose(P.matvec(V), Z @ V, atol=1e-10)
    np.testing.assert_allclose(P.rmatvec(U), Z.T @ U, atol=1e-10)
    group = rng.integers(5, size=m)
    grouped = P.rmatvec(U, group, 5)
    for g in range(5):
        np.testing.assert_allclose(grouped[g], Z[group == g].T @ U[group == g], atol=1e-10)
    group[group == 3] = 4                                  # an empty group
    grouped = P.rmatvec(U, group, 5)
    np.testing.assert_array_equal(grouped[3], 0.0)
    np.testing.assert_allclose(grouped[4], Z[group == 4].T @ U[group == 4], atol=1e-10)
    A = Z * s[:, None] - t[:, None] - center[None, :]
    design = PackedDesign(P, s, t, w, U, np.ones(m), np.arange(m), np.zeros(m, int), center)
    normal, image = design.normal(V)
    np.testing.assert_allclose(normal, A.T @ (w[:, None] * (A @ V)), rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(image, A @ V, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(P.sizes, Z.sum(axis=1))
    for c in (center, None):                               # with and without a free intercept
        A = Z * s[:, None] - t[:, None] - (0.0 if c is None else c[None, :])
        design = PackedDesign(P, s, t, w, U, np.ones(m), np.arange(m), np.zeros(m, int), c)
        Aty, diag, m1 = design.first_products()
        M = A.T @ (w[:, None] * A)
        np.testing.assert_allclose(Aty, A.T @ (w[:, None] * U), rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(diag, np.diag(M), rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(m1, M.sum(axis=1), rtol=1e-10, atol=1e-8)


@pytest.mark.parametrize("m, d", [(1, 1), (3, 7), (5, 8), (9, 9), (2, 33), (40000, 20)])
def test_packed_products_at_edge_sizes(m, d):
    """One row, fewer players than a byte, whole bytes, a partial last group of four positions, more rows than
    a tile: the same products as dense."""
    rng = np.random.default_rng(m + d)
    Z = rng.random((m, d)) < 0.5
    P = PackedRows(Z)
    V, U = rng.standard_normal((d, 2)), rng.standard_normal((m, 2))
    np.testing.assert_allclose(P.matvec(V), Z @ V, atol=1e-10)
    np.testing.assert_allclose(P.rmatvec(U), Z.T @ U, atol=1e-9)


def game(n, seed=0):
    rng = np.random.default_rng(seed)
    w, x, b = rng.standard_normal(n), rng.random(n), rng.random(n)

    def f(S):
        z = np.where(S, x, b)
        return np.stack([np.tanh(z @ w / np.sqrt(n) + z[:, 0] * z[:, 1]), z @ w], axis=1)

    return fs.games.FunctionGame(f, n_players=n)


@pytest.mark.parametrize("method, index, options", [
    ("regression", "shapley", {}), ("regression", "shapley", dict(paired=False, replacement=True)),
    ("matrix-vector", "shapley", {}), ("kernel-banzhaf", "banzhaf", {}),
    ("kernel-banzhaf", "banzhaf", dict(paired=False)), ("semivalue-regression", "beta", {})])
def test_iterative_solve_equals_the_dense_solve_on_the_same_draws(method, index, options):
    g = game(160)
    sv = fs.Semivalue.beta_shapley(4, 1) if index == "beta" else index
    dense = fs.estimate(g, sv, method=method, budget=3000, seed=1, solve="dense", **options)
    iterative = fs.estimate(g, sv, method=method, budget=3000, seed=1, solve="iterative", **options)
    assert dense.info["solver"] == "dense" and iterative.info["solver"] == "iterative"
    # the solver stops at a twentieth of the statistical error (a noise-free output: at a relative residual of 1e-8)
    gap = np.abs(iterative.values - dense.values)
    assert np.all(gap <= 0.05 * dense.stderr + 1e-6 * np.abs(dense.values).max(axis=0)), \
        (gap / np.maximum(dense.stderr, 1e-300)).max(axis=0)
    ratio = iterative.stderr[:, 0] / dense.stderr[:, 0]          # (the second output is linear: no error)
    assert 0.8 < np.median(ratio) < 1.2, np.median(ratio)


def test_iterative_error_bars_are_calibrated():
    n = 200
    u = fs.games.SOUMGame.random(n, n_terms=3 * n, max_size=4, seed=1)
    g = fs.games.FunctionGame(u, n_players=n)
    truth = fs.exact(u, "shapley").values
    inside = [np.mean(np.abs((phi := fs.estimate(g, "shapley", method="regression", budget=4000, seed=s,
                                                 solve="iterative")).values - truth) <= 2 * phi.stderr)
              for s in range(12)]
    assert 0.85 <= np.mean(inside) <= 0.99, np.mean(inside)


def test_the_cheaper_solver_is_chosen():
    assert not use_iterative(2000, 30, 1) and use_iterative(100_000, 3072, 10)
    phi = fs.estimate(game(400), "shapley", method="regression", budget=20_000, seed=0)
    assert phi.info["solver"] == "iterative"
    assert fs.estimate(game(20), "shapley", method="regression", budget=500, seed=0).info["solver"] == "dense"


def test_vectorized_sampling_at_image_scale_is_distinct_and_sized():
    d = 3072
    q = shapley_size_log_mass(d, "leverage")
    s = sample_without_replacement(np.random.default_rng(0), d, q, 5000, paired=True)
    assert s.coalitions.shape == (10000, d) and s.coverage == "random"
    np.testing.assert_array_equal(s.coalitions[0::2], ~s.coalitions[1::2])
    packed = np.packbits(s.coalitions[0::2], axis=1)
    assert np.unique(packed, axis=0).shape[0] == 5000
    sizes = s.coalitions[0::2].sum(axis=1)
    assert np.all((sizes >= 1) & (sizes <= d // 2))
