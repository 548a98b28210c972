from fractions import Fraction

import numpy as np
import pytest

import fairshare as fs


# --------------------------------------------------------------------- published voting indices
def test_eec_council_of_ministers_1958():
    """EEC Council of Ministers 1958: France, Germany, Italy 4 votes, Belgium, Netherlands 2,
    Luxembourg 1, quota 12 of 17. Published indices (Felsenthal and Machover, *The Measurement of
    Voting Power*, 1998, section 2.3 and Table 2.3.1; also Brams and Affuso 1976): Shapley-Shubik
    14/60 for each large state, 9/60 for Belgium and the Netherlands, 0 for Luxembourg; normalized
    Banzhaf index 5/21, 5/21, 5/21, 3/21, 3/21, 0 (raw Banzhaf: 10/32 and 6/32 swings)."""
    g = fs.games.WeightedVotingGame([4, 4, 4, 2, 2, 1], quota=12,
                                    player_names=["FR", "DE", "IT", "BE", "NL", "LU"])
    ss = fs.exact(g, "shapley").values
    np.testing.assert_allclose(ss, np.array([14, 14, 14, 9, 9, 0]) / 60, atol=1e-12)
    bz = fs.exact(g, "banzhaf").values
    np.testing.assert_allclose(bz, np.array([10, 10, 10, 6, 6, 0]) / 32, atol=1e-12)
    np.testing.assert_allclose(bz / bz.sum(), np.array([5, 5, 5, 3, 3, 0]) / 21, atol=1e-12)


def test_nassau_county_board_1964():
    """Nassau County Board of Supervisors 1964 (Banzhaf, 'Weighted voting doesn't work', Rutgers Law
    Review 19, 1965): weights 9, 9, 7, 3, 1, 1, quota 16 of 30. Banzhaf showed that the three small
    towns are powerless; the three large ones share all power equally."""
    g = fs.games.WeightedVotingGame([9, 9, 7, 3, 1, 1], quota=16)
    np.testing.assert_allclose(fs.exact(g, "shapley").values, [1 / 3, 1 / 3, 1 / 3, 0, 0, 0], atol=1e-12)
    bz = fs.exact(g, "banzhaf").values
    np.testing.assert_allclose(bz[3:], 0.0, atol=1e-15)
    np.testing.assert_allclose(bz[:3], 0.5, atol=1e-12)        # each of the big three swings 16 of 32


def test_voting_dp_matches_enumeration_for_a_larger_body():
    rng = np.random.default_rng(7)
    g = fs.games.WeightedVotingGame(rng.integers(1, 30, 14), quota=120)
    for sv in (fs.Semivalue.shapley(), fs.Semivalue.beta_shapley(2, 5)):
        np.testing.assert_allclose(fs.exact(g, sv).values, fs.exact(g, sv, via="enumeration").values, atol=1e-12)


def test_voting_with_fractional_weights_falls_back_to_enumeration():
    g = fs.games.WeightedVotingGame([1.5, 1.0, 0.5], quota=2)
    assert not g.knows_exact_values(fs.Semivalue.shapley())
    phi = fs.exact(g, "shapley")
    assert phi.info == {"via": "enumeration"}
    np.testing.assert_allclose(phi.values, [2 / 3, 1 / 6, 1 / 6])


def test_unreachable_quota_gives_zero_power():
    g = fs.games.WeightedVotingGame([1, 2, 3], quota=10)
    np.testing.assert_array_equal(fs.exact(g, "banzhaf").values, 0.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(weights=[1, -2], quota=1), "non-negative"),
    (dict(weights=[1, 2], quota=0), "quota"),
])
def test_voting_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fs.games.WeightedVotingGame(**kwargs)


# --------------------------------------------------------------------------------- airport game
def test_airport_littlechild_owen_rule():
    costs = [3.0, 1.0, 4.0, 1.0]
    phi = fs.exact(fs.games.AirportGame(costs), "shapley").values
    # increments 1, 2, 1 over levels shared by 4, 2 and 1 players
    expected = [Fraction(1, 4) + Fraction(2, 2), Fraction(1, 4), Fraction(1, 4) + 1 + 1, Fraction(1, 4)]
    np.testing.assert_allclose(phi, [float(f) for f in expected], atol=1e-12)
    assert phi.sum() == pytest.approx(max(costs))


# -------------------------------------------------------------------------- size-only games
def test_adversarial_game_shapley_is_chi_everywhere():
    g = fs.games.AdversarialGame(16, width=3, xi=50.0, chi=-0.7)
    np.testing.assert_allclose(fs.exact(g, "shapley", via="enumeration").values, -0.7, atol=1e-12)
    ends = g(g.empty_and_full())
    np.testing.assert_allclose(ends, [0.0, -0.7 * 16])
    # the bump really is there: size 1 and size d-1 deviate from chi * size
    one = np.zeros((1, 16), bool)
    one[0, 0] = True
    assert g(one)[0] == pytest.approx(-0.7 + 50.0 / 256)


# ------------------------------------------------------------------------------- Hastie games
def test_hastie_classification_game_values_and_efficiency():
    g = fs.games.HastieClassificationGame.sample(10, seed=3)
    ends = g(g.empty_and_full())
    np.testing.assert_array_equal(ends, [0.0, 1.0])            # reference in the other class
    phi = fs.exact(g, "shapley").values
    assert phi.sum() == pytest.approx(1.0)
    # the features whose squared value moves the norm across the threshold matter most
    assert g.threshold == pytest.approx(9.341818, rel=1e-6)   # median of chi2 with 10 degrees of freedom


def test_radial_game_closed_form_at_three_hundred_players():
    g = fs.games.RadialGame.sample(300, seed=1)
    phi = fs.exact(g, "shapley")
    assert np.all(np.isfinite(phi.values))
    # values of both signs nearly cancel (v(S) spans many orders of magnitude), so the
    # efficiency check is relative to the scale of the values
    scale = np.abs(phi.values).sum()
    assert abs(phi.values.sum() - (phi.grand_value - phi.empty_value)) < 1e-12 * scale


def test_radial_matches_the_product_formula():
    x, r = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.1, -0.4])
    g = fs.games.RadialGame(x, r)
    rho = lambda t: np.sqrt(np.pi / 2) * np.exp(-t**2 / 2)  # noqa: E731
    S = np.array([[True, False, True]])
    expected = rho(0.3) * rho(0.1) * rho(2.0) - np.prod(rho(r))
    assert g(S)[0] == pytest.approx(expected)


def test_hastie_inputs_are_checked():
    with pytest.raises(ValueError, match="same length"):
        fs.games.RadialGame([1.0, 2.0], [1.0])


# -------------------------------------------------------------------------------- noisy games
def test_noisy_game_adds_gaussian_noise_of_the_given_scale():
    base = fs.games.AdditiveGame(np.ones(5))
    g = fs.games.NoisyGame(base, sigma=0.5, seed=0)
    X = np.random.default_rng(1).random((20000, 5)) < 0.5
    noise = g(X) - base(X)
    assert abs(noise.mean()) < 0.02
    assert noise.std() == pytest.approx(0.5, rel=0.03)


def test_noisy_game_with_one_player_perturbs_only_its_coalitions():
    base = fs.games.AdditiveGame(np.arange(4.0))
    g = fs.games.NoisyGame(base, sigma=1.0, player=2, seed=0)
    X = np.random.default_rng(1).random((500, 4)) < 0.5
    diff = g(X) - base(X)
    assert np.all(diff[~X[:, 2]] == 0.0)
    assert np.all(diff[X[:, 2]] != 0.0)


def test_noisy_game_arguments():
    base = fs.games.AdditiveGame(np.ones(3))
    with pytest.raises(ValueError, match="sigma"):
        fs.games.NoisyGame(base, sigma=-1)
    with pytest.raises(ValueError, match="player must be in"):
        fs.games.NoisyGame(base, sigma=1, player=3)
    with pytest.raises(TypeError, match="game must be"):
        fs.games.NoisyGame(lambda S: S, sigma=1)


# ------------------------------------------------------------------------------ SOUM helpers
def test_random_soum_respects_size_bounds():
    g = fs.games.SOUMGame.random(30, n_terms=100, min_size=2, max_size=5, seed=0)
    sizes = g.carriers.sum(axis=1)
    assert sizes.min() >= 2 and sizes.max() <= 5
    with pytest.raises(ValueError, match="min_size <= max_size"):
        fs.games.SOUMGame.random(5, min_size=4, max_size=2)


def test_soum_rejects_empty_carriers():
    with pytest.raises(ValueError, match="empty coalition"):
        fs.games.SOUMGame(np.zeros((1, 3), bool), [1.0])
