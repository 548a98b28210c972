from math import comb

import numpy as np
import pytest

from fairshare.engine.samplers import (CoalitionSample, distinct_subsets, random_subsets, sample_with_replacement,
                                sample_without_replacement, shapley_size_log_mass)


def test_size_distributions_follow_eq_2_1():
    d = 9
    h = np.arange(1, d)
    for name, tau in (("kernel", 1.0), ("modified", 0.5), ("leverage", 0.0)):
        q = np.exp(shapley_size_log_mass(d, name))
        assert q[0] == 0.0 and q[-1] == 0.0 and q.sum() == pytest.approx(1.0)
        expected = (h * (d - h)) ** -tau
        np.testing.assert_allclose(q[1:-1], expected / expected.sum(), rtol=1e-12)
    np.testing.assert_allclose(np.exp(shapley_size_log_mass(d, "tau", tau=0.5)), np.exp(shapley_size_log_mass(d, "modified")))


@pytest.mark.parametrize("kwargs, match", [
    (dict(distribution="uniform"), "distribution must be one of"),
    (dict(distribution="tau"), "tau must be given in"),
    (dict(distribution="tau", tau=1.5), "tau must be given in"),
    (dict(distribution="kernel", tau=0.3), "only used with distribution='tau'"),
])
def test_bad_distribution_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        shapley_size_log_mass(6, **kwargs)


def test_size_distributions_work_at_image_scale():
    q = shapley_size_log_mass(3072, "kernel")
    assert np.all(np.isfinite(q[1:-1])) and np.exp(q).sum() == pytest.approx(1.0)


def test_random_subsets_have_the_requested_sizes():
    rng = np.random.default_rng(0)
    sizes = rng.integers(0, 41, size=500)
    S = random_subsets(rng, 40, sizes)
    np.testing.assert_array_equal(S.sum(axis=1), sizes)
    # each player is equally likely to be in a subset of size 20
    many = random_subsets(rng, 10, np.full(20000, 3))
    np.testing.assert_allclose(many.mean(axis=0), 0.3, atol=0.015)


@pytest.mark.parametrize("d, h, count", [(6, 2, 15), (12, 5, 300), (30, 3, 4060), (3072, 1536, 40), (3072, 2, 100)])
def test_distinct_subsets_are_distinct_and_of_size(d, h, count):
    S = distinct_subsets(np.random.default_rng(1), d, h, count)
    assert S.shape == (count, d)
    np.testing.assert_array_equal(S.sum(axis=1), h)
    assert len({r.tobytes() for r in np.packbits(S, axis=1)}) == count


def test_distinct_subsets_containing_a_player_and_overflow():
    S = distinct_subsets(np.random.default_rng(2), 8, 4, 35, containing=0)   # all C(7, 3) of them
    assert S[:, 0].all() and len({r.tobytes() for r in S}) == 35
    with pytest.raises(ValueError, match="cannot draw 11 distinct"):
        distinct_subsets(np.random.default_rng(2), 5, 2, 11)


def _weighted_size_totals(draw, d, reps=800):
    """Mean and standard error, over independent draws, of the weighted count of each size
    relative to the true count C(d, h)."""
    totals = np.zeros((reps, d + 1))
    for r in range(reps):
        s = draw(np.random.default_rng(r))
        np.add.at(totals[r], s.coalitions.sum(axis=1), s.weight)
    totals /= np.array([comb(d, h) for h in range(d + 1)])
    return totals.mean(axis=0), totals.std(axis=0, ddof=1) / np.sqrt(reps)


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("design", ["with", "systematic", "binomial"])
def test_horvitz_thompson_weights_are_unbiased(design, paired):
    d = 9
    q = shapley_size_log_mass(d, "modified")
    if design == "with":
        draw = lambda rng: sample_with_replacement(rng, d, q, 20, paired=paired)  # noqa: E731
    else:
        draw = lambda rng: sample_without_replacement(rng, d, q, 20, paired=paired, counts=design)  # noqa: E731
    ratio, se = _weighted_size_totals(draw, d)
    z = (ratio[1:-1] - 1.0) / se[1:-1]
    assert np.all(np.abs(z) < 4.0), (ratio, z)
    assert ratio[0] == 0.0 and ratio[-1] == 0.0


def test_paired_samples_hold_complements():
    q = shapley_size_log_mass(10, "kernel")
    for s in (sample_with_replacement(np.random.default_rng(0), 10, q, 30),
              sample_without_replacement(np.random.default_rng(0), 10, q, 30)):
        assert s.paired
        np.testing.assert_array_equal(s.coalitions[0::2], ~s.coalitions[1::2])
        np.testing.assert_array_equal(s.unit[0::2], s.unit[1::2])


def test_without_replacement_respects_the_unit_count_and_is_distinct():
    q = shapley_size_log_mass(12, "leverage")
    for counts in ("systematic", "binomial"):
        for n_units in (5, 50, 500):
            s = sample_without_replacement(np.random.default_rng(n_units), 12, q, n_units, counts=counts)
            assert s.n_draws <= n_units and s.n_rows == 2 * s.n_draws
            assert len({r.tobytes() for r in np.packbits(s.coalitions, axis=1)}) == s.n_rows
    s = sample_without_replacement(np.random.default_rng(0), 12, q, 500, counts="systematic")
    assert s.n_draws == 500


def test_full_coverage_takes_every_coalition_once():
    q = shapley_size_log_mass(7, "kernel")
    s = sample_without_replacement(np.random.default_rng(0), 7, q, 10_000)
    assert s.n_rows == 2**7 - 2
    np.testing.assert_array_equal(s.weight, 1.0)
    np.testing.assert_array_equal(s.fpc, 0.0)
    odd = sample_without_replacement(np.random.default_rng(0), 6, shapley_size_log_mass(6, "kernel"), 31)
    assert odd.n_rows == 62        # C(6, 3) / 2 = 10 middle pairs counted once


@pytest.mark.parametrize("sampler", ["with", "without"])
def test_image_scale_budget(sampler):
    d = 3072
    q = shapley_size_log_mass(d, "leverage")
    rng = np.random.default_rng(0)
    s = (sample_with_replacement(rng, d, q, 50_000) if sampler == "with"
         else sample_without_replacement(rng, d, q, 50_000))
    assert isinstance(s, CoalitionSample) and s.n_rows == 100_000
    assert np.all(np.isfinite(s.log_weight))
    sizes = s.coalitions[::997].sum(axis=1)
    assert sizes.min() >= 1 and sizes.max() <= d - 1


@pytest.mark.parametrize("d, h", [(8, 3), (7, 5), (9, 1)])       # a size above d / 2 is drawn as a complement
def test_random_subsets_are_uniform(d, h):
    """Every h-subset of d equally often (chi-square over all C(d, h) subsets, 60000 draws, two seeds)."""
    from scipy.stats import chisquare

    for seed in (0, 1):
        S = random_subsets(np.random.default_rng(seed), d, np.full(60_000, h))
        counts = np.unique(S @ (1 << np.arange(d)), return_counts=True)[1]
        assert counts.size == comb(d, h)
        assert chisquare(counts).pvalue > 1e-4, counts


def test_the_size_scale_s_log_sum_exp_gives_scipys_bits():
    """``scale_for`` bisects 64 times on a log-sum-exp: numpy's own, with scipy's arithmetic step by step (the
    largest terms set apart, then log1p), so every design keeps its bits (the golden values prove the rest)."""
    from scipy.special import logsumexp

    from fairshare.engine.samplers.sizes import _logsumexp

    rng = np.random.default_rng(0)
    for _ in range(3000):
        a = rng.normal(size=int(rng.integers(1, 40))) * rng.choice([1.0, 10.0, 300.0])
        if rng.random() < 0.3:
            a[rng.integers(0, a.size)] = a.max()                      # ties at the top
        assert _logsumexp(a) == float(logsumexp(a))
