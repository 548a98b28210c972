import math
import re

import numpy as np
import pytest
from scipy.special import logsumexp

import fairshare as fs
from fairshare._core.combinatorics import log_binom
from fairshare.indices.semivalues import resolve_index

from conftest import INDEX_IDS, INDICES


@pytest.mark.parametrize("sv", INDICES, ids=INDEX_IDS)
@pytest.mark.parametrize("n", [1, 2, 7, 64, 3072])
def test_families_are_normalized_in_log_space(sv, n):
    log_mass = sv.log_size_probabilities(n)
    assert log_mass.shape == (n,)
    assert np.all(np.isfinite(log_mass) | (log_mass == -np.inf))
    assert logsumexp(log_mass) == pytest.approx(0.0, abs=1e-9)


def test_shapley_and_banzhaf_weights_match_textbook_formulas():
    n = 6
    shapley = [math.factorial(l) * math.factorial(n - 1 - l) / math.factorial(n) for l in range(n)]
    np.testing.assert_allclose(fs.Semivalue.shapley().weights(n), shapley, rtol=1e-12)
    np.testing.assert_allclose(fs.Semivalue.banzhaf().weights(n), np.full(n, 2.0 ** -(n - 1)), rtol=1e-12)


def test_beta_shapley_weights_match_beta_integral():
    # p_l = B(l + beta, n - 1 - l + alpha) / B(alpha, beta), computed here with gamma functions in floats
    n, a, b = 9, 4.0, 1.0
    B = lambda x, y: math.gamma(x) * math.gamma(y) / math.gamma(x + y)  # noqa: E731
    expected = [B(l + b, n - 1 - l + a) / B(a, b) for l in range(n)]
    np.testing.assert_allclose(fs.Semivalue.beta_shapley(a, b).weights(n), expected, rtol=1e-10)
    # alpha > beta puts more weight on small coalitions
    mass = np.exp(fs.Semivalue.beta_shapley(a, b).log_size_probabilities(n))
    assert mass[0] > mass[-1]


def test_special_cases_are_recognised():
    assert fs.Semivalue.beta_shapley(1, 1).is_shapley
    assert fs.Semivalue.weighted_banzhaf(0.5).is_banzhaf
    assert fs.Semivalue(fs.Semivalue.shapley().weights(5)).is_shapley
    assert fs.Semivalue(np.full(4, 1 / 8)).is_banzhaf
    assert not fs.Semivalue.beta_shapley(4, 1).is_shapley


def test_user_weights_round_trip_and_fixed_size():
    w = fs.Semivalue.beta_shapley(2, 3).weights(5)
    sv = fs.Semivalue(w, name="mine")
    assert sv.n_players == 5
    np.testing.assert_allclose(sv.weights(5), w)
    with pytest.raises(ValueError, match="5 players but the game has 6"):
        sv.log_weights(6)


@pytest.mark.parametrize("weights, message", [
    ([0.5, 0.6], "sum_l C"),
    ([1.5, -0.5], "non-negative"),
    ([[0.5, 0.5]], "1-D"),
    ([np.nan, 1.0], "finite"),
])
def test_bad_weights_are_rejected_with_the_argument_named(weights, message):
    with pytest.raises(ValueError, match=message):
        fs.Semivalue(weights)


@pytest.mark.parametrize("kwargs", [dict(alpha=0, beta=1), dict(alpha=1, beta=-2), dict(alpha=np.inf, beta=1)])
def test_bad_beta_parameters(kwargs):
    with pytest.raises(ValueError, match="alpha|beta"):
        fs.Semivalue.beta_shapley(**kwargs)


@pytest.mark.parametrize("w", [0.0, 1.0, -0.1, 2.0])
def test_bad_weighted_banzhaf_parameter(w):
    with pytest.raises(ValueError, match="w must lie"):
        fs.Semivalue.weighted_banzhaf(w)


@pytest.mark.parametrize("name, said", [("weighted-banzhaf(1.5)", "w must lie strictly between 0 and 1, got 1.5"),
                                        ("Beta-Shapley(0, 1)", "alpha must be finite and > 0, got 0.0")])
def test_a_named_family_member_with_bad_parameters_is_refused_naming_index(name, said):
    # hunt15: the family's message came alone, naming neither index= nor the CLI's --index
    calls = []
    g = fs.games.FunctionGame(lambda S: calls.append(1) or S.sum(axis=1).astype(float), n_players=3)
    with pytest.raises(ValueError, match="^" + re.escape(f"index='{name.lower().replace(' ', '')}': {said}") + "$"):
        fs.estimate(g, name, budget=8, seed=0)
    assert not calls


def test_resolve_index_accepts_names_and_lists_choices():
    assert resolve_index("SHAPLEY").is_shapley
    assert resolve_index(" banzhaf ").is_banzhaf
    assert resolve_index("beta-shapley").params == {"alpha": 16.0, "beta": 1.0}
    assert resolve_index("beta-shapley(4, 1)").params == {"alpha": 4.0, "beta": 1.0}
    assert resolve_index("Weighted-Banzhaf(0.3)").params == {"w": 0.3}
    with pytest.raises(ValueError, match=r"\['shapley', 'banzhaf', 'beta-shapley', 'leave-one-out', 'loo'\]"):
        resolve_index("owen")
    for bad in ("beta-shapley(4)", "weighted-banzhaf(x)", "weighted-banzhaf(1.5)"):
        with pytest.raises(ValueError):
            resolve_index(bad)


def test_log_binom_is_finite_at_image_scale():
    v = log_binom(3071, np.arange(3072))
    assert np.all(np.isfinite(v))
    assert v[1535] == pytest.approx(math.lgamma(3072) - 2 * math.lgamma(1536) - math.log(1536), rel=1e-12)
    assert log_binom(3, 5) == -np.inf
