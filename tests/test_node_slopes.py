"""The node slopes of the product measures' regression (:mod:`fairshare.engine.node_slopes`): every node's weighted
least-squares slopes, batched over the nodes, against a direct fit per node; the batches' size changes nothing; the
nodes a sample cannot determine are left out and their weight reported."""

from __future__ import annotations

import numpy as np
import pytest

from fairshare.engine import node_slopes as ns


def _case(seed: int, m: int = 300, d: int = 6, k: int = 2, nodes=(0.15, 0.4, 0.7, 0.9)):
    rng = np.random.default_rng(seed)
    u = np.array(nodes)
    Z = rng.random((m, d)) < rng.uniform(0.2, 0.8, size=(m, 1))
    h = np.arange(d + 1)
    log_mu = h * np.log(u)[:, None] + (d - h) * np.log1p(-u)[:, None]
    c = rng.dirichlet(np.ones(u.size))
    residual = rng.normal(size=(m, k)) + Z @ rng.normal(size=(d, k))
    log_weight = rng.normal(scale=0.3, size=m)
    return Z, log_weight, log_mu, c, residual


def _direct(Z, log_weight, log_mu, c, residual):
    """Each node's weighted least squares with a free intercept, by lstsq, weighted by ``c``."""
    sizes = Z.sum(axis=1)
    out = np.zeros((Z.shape[1], residual.shape[1]))
    for node, weight in enumerate(c):
        w = np.exp(log_weight + log_mu[node, sizes] - np.max(log_weight + log_mu[node, sizes]))
        X = np.hstack([np.ones((Z.shape[0], 1)), Z]) * np.sqrt(w)[:, None]
        coef = np.linalg.lstsq(X, residual * np.sqrt(w)[:, None], rcond=None)[0]
        out += weight * coef[1:]
    return out


def _slopes(Z, log_weight, log_mu, c, residual, seed=0):
    m = Z.shape[0]
    return ns.node_slopes(Z, log_weight, log_mu, c, residual, residual, np.arange(m), np.zeros(m, dtype=int),
                          np.ones(m), np.random.default_rng(seed))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_batched_nodes_give_each_nodes_own_weighted_least_squares_slopes(seed):
    case = _case(seed)
    values, stderr, left = _slopes(*case)
    np.testing.assert_allclose(values, _direct(*case), rtol=1e-10, atol=1e-12)
    assert left == 0.0
    assert np.all(np.isfinite(stderr)) and np.all(stderr > 0)


def test_batches_of_any_size_give_the_same_values_and_error_bars(monkeypatch):
    case = _case(3, nodes=(0.1, 0.3, 0.5, 0.7, 0.9))
    whole = _slopes(*case)
    monkeypatch.setattr(ns, "_BATCH", 1)                  # one node a batch
    single = _slopes(*case)
    np.testing.assert_allclose(single[0], whole[0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(single[1], whole[1], rtol=1e-12)


def test_the_estimated_leverages_keep_error_bars_near_the_exact_ones(monkeypatch):
    case = _case(4, m=2000)
    exact = _slopes(*case)[1]
    monkeypatch.setattr(ns, "EXACT_LEVERAGE_WORK", 0)
    estimated = _slopes(*case)[1]
    assert np.all(np.abs(np.log(estimated / exact)) < 0.05)


def test_a_node_the_sample_cannot_determine_is_left_out_with_its_weight():
    Z, log_weight, log_mu, c, residual = _case(5, nodes=(0.4, 0.6))
    Z[:, 0] = True                                        # player 0 in every coalition: no node sees its slope
    values, _, left = _slopes(Z, log_weight, log_mu, c, residual)
    assert left == pytest.approx(1.0)
    assert np.all(values == 0.0)


def test_a_node_whose_weight_sits_on_one_sampled_row_is_left_out_and_the_others_kept():
    Z, log_weight, log_mu, c, residual = _case(6, m=400, nodes=(1e-11, 0.4, 0.7))
    Z[Z.sum(axis=1) <= 1] = True
    Z[0], Z[1:7] = False, np.eye(6, dtype=bool)           # one empty coalition, and each player alone once
    # node 1e-11: the empty coalition weighs 1e11 times a single player's, so its leverage is 1 - 1e-10
    values, _, left = _slopes(Z, log_weight, log_mu, c, residual)
    assert left == pytest.approx(c[0])
    np.testing.assert_allclose(values, _direct(Z, log_weight, log_mu, np.r_[0.0, c[1:]], residual), rtol=1e-10,
                               atol=1e-12)


def test_a_node_near_saturation_has_its_exact_leverages_and_error_bars(monkeypatch):
    # 2.5 rows a player: a node's effective rows near d + 1, leverages near 1, where the estimated ones (capped at
    # 1/2) made the error bars several times too small (beta(16, 1) of 500 players at 1,200 rows: coverage 0.58)
    case = _case(7, m=100, d=40, k=1, nodes=(0.1, 0.3, 0.5))
    values, exact, left = _slopes(*case)
    monkeypatch.setattr(ns, "EXACT_LEVERAGE_WORK", 0)
    estimated = _slopes(*case)
    np.testing.assert_array_equal(estimated[0], values)
    assert estimated[2] == left
    np.testing.assert_allclose(estimated[1], exact, rtol=1e-10)


def test_the_sizes_moments_held_a_few_at_a_time_give_the_same_values_and_error_bars(monkeypatch):
    # hunt: every size's d x d moments were held at once, (sizes, d, d): beta(4, 1) of 1,000 players at 2,200
    # evaluations peaked at 6.4 GB (0.96 GB now, the same values bit for bit), 2,000 players asked for 25.4 GiB
    case = _case(8, m=400, d=12, nodes=(0.1, 0.4, 0.8))
    whole = _slopes(*case)
    monkeypatch.setattr(ns, "_MOMENTS", 1)                 # one size at a time
    parts = _slopes(*case)
    np.testing.assert_allclose(parts[0], whole[0], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(parts[1], whole[1], rtol=1e-10)
    np.testing.assert_allclose(whole[0], _direct(*case), rtol=1e-10, atol=1e-12)


def test_a_node_whose_rows_all_underflow_in_the_shared_scale_is_fitted_on_its_own():
    # hunt: the rows were scaled by the heaviest row and each node by its heaviest size apart; a node whose heaviest
    # sizes hold only rows of tiny weight summed to 0, its normal equations to NaN, and the eigensolver raised
    # ('Eigenvalues did not converge': beta(4, 1) of 2,000 players at 4,200 evaluations, 8 of its 16 nodes)
    Z, log_weight, log_mu, c, residual = _case(9, m=400, nodes=(0.3, 1.0 - 1e-8))
    sizes = Z.sum(axis=1)
    log_weight = np.where(sizes <= 2, 0.0, -800.0)         # the node near 1 weighs sizes 0-2 under e^-70 of size 6
    values, stderr, left = _slopes(Z, log_weight, log_mu, c, residual)
    assert left == 0.0 and np.all(np.isfinite(stderr))
    # (normal equations against lstsq on weights 1e8 apart: agreement to 1e-7)
    np.testing.assert_allclose(values, _direct(Z, log_weight, log_mu, c, residual), rtol=1e-6, atol=1e-9)
