"""The even model's design (issue 42, item 2): unpaired draws with the products of two players fitted (kADDSHAP's
design) and the odd Walsh surrogate on top; ``even_model="budget"``: that design by a rule on the budget (item 3), bit
for bit the paired design where the rule does not take it; ``"auto"`` (the default): the pairs fitted so on unpaired
product-measure designs by a rule on the budget; ``"pilot"``: a pilot of the paired design's own pairs decides whether
the rest of the budget goes to that design."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.design_choice import SWITCH, _variance_ratio
from fairshare.engine.evaluation import BudgetError
from fairshare.engine.samplers.pilot import continue_unpaired
from fairshare.engine.samplers.sizes import shapley_size_log_mass
from fairshare.engine.samplers.without_replacement import sample_without_replacement
from fairshare.engine.surrogate_regression import EVEN_WORK
from fairshare.engine.walsh import walsh_products


def walsh_game(n: int, seed: int, **terms: tuple[int, float]) -> fs.games.FunctionGame:
    """An additive game plus Walsh products: ``terms[name] = (count, scale)`` for products of 2, 3, 4 or 7 players
    (``two``, ``three``, ``four``, ``seven``)."""
    rng = np.random.default_rng(seed)
    sizes = {"two": 2, "three": 3, "four": 4, "seven": 7}
    # coefficients on a grid of 1/64: every value is exact, the same whatever rows a batch of the game holds
    parts = [(np.array([rng.choice(n, sizes[k], replace=False) for _ in range(c)]).reshape(-1, sizes[k]),
              np.round(64 * s * rng.normal(size=c)) / 64) for k, (c, s) in terms.items()]
    a = np.round(64 * rng.normal(size=n)) / 64
    return fs.games.FunctionGame(lambda Z: Z @ a + sum(walsh_products(2.0 * Z - 1.0, T) @ c for T, c in parts),
                                 n_players=n)


def rel_error(estimate, truth) -> float:
    return float(np.sum((np.asarray(estimate) - truth) ** 2) / np.sum(truth ** 2))


@pytest.mark.parametrize("index, plain", [("shapley", "regression"), ("banzhaf", "kernel-banzhaf"),
                                          (fs.Semivalue.beta_shapley(4, 1), "semivalue-regression")])
def test_even_model_is_exact_on_additive_pairwise_and_three_player_products(index, plain):
    game = walsh_game(10, 1, two=(8, 1.0), three=(4, 1.0))
    truth = fs.exact(game, index=index).values
    est = fs.estimate(game, index=index, method="surrogate-regression", budget=400, seed=0, even_model="pairs")
    base = fs.estimate(game, index=index, method=plain, budget=400, seed=0)
    assert est.info["surrogate"]["kind"].startswith("order-2+walsh-3")
    assert rel_error(est.values, truth) < 1e-7 < 1e-4 < rel_error(base.values, truth)


def test_pilot_that_stays_paired_is_the_paired_design_bit_for_bit():
    # an even part of products of four players: the even model of pairs would leave it in every unpaired row
    game = walsh_game(10, 0, four=(10, 1.0), seven=(6, 0.3))
    plain = fs.estimate(game, "shapley", method="regression", budget=600, seed=3)
    paired = fs.estimate(game, "shapley", method="surrogate-regression", budget=600, seed=3, even_model="none")
    auto = fs.estimate(game, "shapley", method="surrogate-regression", budget=600, seed=3, even_model="pilot")
    assert auto.info["design"]["chosen"] == "paired" and auto.info["design"]["predicted_variance_ratio"] > 1.5
    assert auto.info["surrogate"]["kind"] == "none" and auto.n_evaluations == 600
    for other in (paired, plain):
        assert np.array_equal(auto.values, other.values) and np.array_equal(auto.stderr, other.stderr)


def test_pilot_switches_where_the_even_part_is_pairwise_and_gains():
    # the odd part beyond the surrogate (products of seven players) is the error of both designs; the even part is
    # pairwise, which the even model fits: the unpaired rows carry twice the odd information per evaluation
    game = walsh_game(10, 0, two=(10, 1.0), seven=(6, 0.3))
    truth = fs.exact(game, "shapley").values
    auto, paired = [], []
    for seed in range(8):
        est = fs.estimate(game, "shapley", method="surrogate-regression", budget=600, seed=seed, even_model="pilot")
        assert est.info["design"]["chosen"] == "unpaired, even model" and est.n_evaluations <= 600
        assert est.info["design"]["predicted_variance_ratio"] <= SWITCH
        auto.append(rel_error(est.values, truth))
        paired.append(rel_error(fs.estimate(game, "shapley", method="surrogate-regression", budget=600,
                                            seed=seed, even_model="none").values, truth))
    assert np.mean(auto) < 0.85 * np.mean(paired)


AUTO = dict(method="surrogate-regression", even_model="budget")


def test_auto_takes_the_even_design_by_the_budget_rule_and_the_paired_design_below_it_bit_for_bit():
    game = walsh_game(12, 0, two=(12, 1.0), three=(4, 0.5), seven=(6, 0.3))
    unknowns = 12 + math.comb(12, 2)                                      # 78: 6 rows each from 468 evaluations
    below = fs.estimate(game, "shapley", budget=467, seed=2, **AUTO)
    paired = fs.estimate(game, "shapley", budget=467, seed=2)                  # auto's method: the paired design
    assert paired.info["choice"]["method"] == "surrogate-regression" and below.info["design"]["chosen"] == "paired"
    assert np.array_equal(below.values, paired.values) and np.array_equal(below.stderr, paired.stderr)
    at = fs.estimate(game, "shapley", budget=6 * unknowns, seed=2, **AUTO)
    pairs = fs.estimate(game, "shapley", method="surrogate-regression", budget=6 * unknowns, seed=2,
                        even_model="pairs")
    assert at.info["design"]["chosen"] == "unpaired, even model" and at.info["design"]["rows_per_unknown"] == 6.0
    assert np.array_equal(at.values, pairs.values) and np.array_equal(at.stderr, pairs.stderr)
    # 15 players at 100n: 12.5 rows per unknown, but the fit's work (1500 x 120^2) is above EVEN_WORK: paired
    wide = fs.estimate(walsh_game(15, 0, two=(5, 1.0)), "shapley", budget=1500, seed=0, **AUTO)
    assert wide.info["design"]["chosen"] == "paired" and wide.info["design"]["work"] > EVEN_WORK


def test_auto_rule_gains_where_the_even_part_is_pairwise():
    game = walsh_game(10, 0, two=(10, 1.0), seven=(6, 0.3))        # 500 evaluations: 9.1 rows per unknown
    truth = fs.exact(game, "shapley").values
    auto, paired = [], []
    for seed in range(6):
        est = fs.estimate(game, "shapley", budget=500, seed=seed, **AUTO)
        assert est.info["design"]["chosen"] == "unpaired, even model"
        auto.append(rel_error(est.values, truth))
        paired.append(rel_error(fs.estimate(game, "shapley", method="surrogate-regression", budget=500, seed=seed,
                                            even_model="none").values, truth))
    # above half of all 2^10 coalitions the paired design, drawn without replacement, is kept
    assert fs.estimate(game, "shapley", budget=513, seed=0, **AUTO).info["design"]["chosen"] == "paired"
    # and under a stopping rule, which may spend far fewer evaluations than the budget the rule reads
    stopped = fs.estimate(game, "shapley", budget=500, seed=0, tol=0.05, **AUTO)
    paired = fs.estimate(game, "shapley", method="surrogate-regression", budget=500, seed=0, tol=0.05,
                         even_model="none")
    assert stopped.info["design"]["chosen"] == "paired" and "stopping rule" in stopped.info["design"]["why"]
    assert np.array_equal(stopped.values, paired.values) and stopped.n_evaluations == paired.n_evaluations
    assert np.mean(auto) < 0.85 * np.mean(paired)


def test_even_design_error_bars_cover_and_same_seed_same_bits():
    game = walsh_game(10, 2, two=(6, 1.0), three=(4, 0.5), four=(4, 0.1), seven=(6, 0.3))
    truth = fs.exact(game, "shapley").values.ravel()
    z = []
    for seed in range(6):
        for options in ({"even_model": "pairs"}, {"even_model": "pilot"}):
            est = fs.estimate(game, "shapley", method="surrogate-regression", budget=600, seed=seed, **options)
            z.append(np.abs(est.values.ravel() - truth) / est.stderr.ravel())
    assert np.mean(np.concatenate(z) <= 1.96) >= 0.9
    runs = [fs.estimate(game, "shapley", method="surrogate-regression", budget=600, seed=1, even_model="pilot")
            for _ in range(2)]
    assert np.array_equal(runs[0].values, runs[1].values) and np.array_equal(runs[0].stderr, runs[1].stderr)
    assert runs[0].info["design"] == runs[1].info["design"]


def test_continued_design_weighs_each_level_to_its_size():
    """The pilot's pairs and the new coalitions, distinct, weighted so that each size's rows sum to its number of
    coalitions (a uniform sample of that size), whole levels with weight 1."""
    q = shapley_size_log_mass(9, "leverage")
    pilot = sample_without_replacement(np.random.default_rng(0), 9, q, 40)
    s = continue_unpaired(np.random.default_rng(1), 9, q, pilot, 200)
    assert s.n_rows == 280 and len({r.tobytes() for r in s.coalitions}) == 280
    assert {r.tobytes() for r in pilot.coalitions} <= {r.tobytes() for r in s.coalitions}
    sums = np.bincount(s.sizes, weights=s.weight, minlength=10)
    np.testing.assert_allclose(sums[1:-1], [math.comb(9, h) for h in range(1, 9)], rtol=1e-12)
    assert np.all(s.weight[(s.sizes == 1) | (s.sizes == 8)] == pytest.approx(1.0))


def test_variance_ratio_of_the_designs():
    # no even residual: a third of the pairs as pilot, the rest unpaired: (4/3 + 4/3) / 4 = 2/3 of the paired
    assert _variance_ratio(1.0, 0.0, 300, 100, 400, 0) == pytest.approx(2 / 3)
    assert _variance_ratio(1.0, 1.0, 300, 100, 400, 0) == pytest.approx(1.0)        # an even residual as large
    assert _variance_ratio(1.0, 0.0, 300, 100, 400, 600) == np.inf                     # more unknowns than rows


class Refusing(fs.games.FunctionGame):
    """A game that fails the test if it is ever evaluated."""

    def __init__(self, n: int) -> None:
        super().__init__(lambda Z: pytest.fail("the game was evaluated"), n_players=n)


@pytest.mark.parametrize("options, error, match", [
    ({"even_model": "quadratic"}, ValueError, "even_model must be one of"),
    ({"even_model": "pairs", "paired": True}, ValueError, "not with paired=True"),
    ({"even_model": "pilot", "surrogate": "trees", "replacement": True}, ValueError, "'pilot' needs surrogate"),
    ({"even_model": "pairs", "surrogate": "trees", "replacement": True}, ValueError, "'pilot' needs surrogate"),
])
def test_bad_even_options_are_refused_before_any_evaluation(options, error, match):
    with pytest.raises(error, match=match):
        fs.estimate(Refusing(10), "shapley", method="surrogate-regression", budget=500, seed=0, **options)


def test_a_budget_below_the_even_design_is_refused_naming_the_minimum():
    minimum = 10 + math.comb(10, 2) + 6
    with pytest.raises(BudgetError, match=str(minimum)):
        fs.estimate(Refusing(10), "shapley", method="surrogate-regression", budget=minimum - 1, seed=0,
                    even_model="pairs")
    est = fs.estimate(walsh_game(10, 1, two=(3, 1.0)), "shapley", method="surrogate-regression", budget=minimum,
                      seed=0, even_model="pairs")
    assert est.n_evaluations <= minimum and np.all(np.isfinite(est.values))


def test_even_fit_linear_algebra_matches_the_explicit_forms():
    # the even design's basis (Cholesky, R^-1 by trtri, Q = A R^-1 by trmm) and the values' map formed through the
    # values' rows: against the pseudo-inverse and the explicit solution maps
    from fairshare.engine.ridge_path import RidgePath, gram_basis
    rng = np.random.default_rng(4)
    A, F, Y = rng.normal(size=(60, 12)), rng.normal(size=(60, 7)), rng.normal(size=(60, 1))
    Q, s, Rinv = gram_basis(A)
    np.testing.assert_allclose(Q.T @ Q, np.eye(12), atol=1e-12)
    np.testing.assert_allclose(Rinv @ Q.T, np.linalg.pinv(A), atol=1e-12)
    path = RidgePath(A, F, Y, base=(Q, s, Rinv))
    left, vmap = rng.normal(size=(5, 12)), rng.normal(size=(5, 7))
    X, C = path.maps(1e-2)
    np.testing.assert_allclose(path.value_map(1e-2, left, vmap), left @ X + vmap @ C, atol=1e-12)
    np.testing.assert_allclose(path.value_map(np.inf, left, vmap), left @ np.linalg.pinv(A), atol=1e-12)


@pytest.mark.parametrize("sv", [fs.Semivalue.weighted_banzhaf(0.3), fs.Semivalue.beta_shapley(4, 1)],
                         ids=["wbanzhaf(0.3)", "beta(4,1)"])
def test_auto_fits_the_pairs_unpenalized_on_product_measures_where_the_budget_affords_them(sv):
    """1200 evaluations of 12 players: 15 rows per unknown of the order-2 model (measured 3.5x / 3.6x lower mean error
    than the penalized pairs); 360, below the rule's 6 rows per unknown: the unpaired design without the even model."""
    game = walsh_game(12, 0, two=(12, 1.0), three=(4, 0.5), seven=(6, 0.3))
    truth = fs.exact(game, sv).values
    auto, none = [], []
    for seed in range(6):
        est = fs.estimate(game, sv, budget=1200, seed=seed)
        assert est.info["design"]["chosen"] == "unpaired, even model"
        auto.append(rel_error(est.values, truth))
        none.append(rel_error(fs.estimate(game, sv, method="surrogate-regression", budget=1200, seed=seed,
                                          even_model="none").values, truth))
    assert np.mean(auto) < np.mean(none) / 2.0, (np.mean(auto), np.mean(none))
    assert fs.estimate(game, sv, budget=360, seed=0).info["design"]["chosen"] == "unpaired"


def test_an_even_design_ranks_its_products_of_three_without_projecting_the_pool(monkeypatch):
    """Beta(4, 1) values of 16 players at 100n: the even design's wide candidate keeps 231 of the 560 products of
    three, ranked by a first fit of all of them. Only the kept products (and the symmetric features and the error
    bars' quarter) are projected off the design's 137 columns, never the pool; the estimate's error is 600x below the
    plain semivalue regression's."""
    from fairshare.engine import surrogate_fit

    widths: list[int] = []
    project = surrogate_fit._Blocks._project
    monkeypatch.setattr(surrogate_fit._Blocks, "_project", lambda self, F: widths.append(F.shape[1]) or project(self, F))
    sv = fs.Semivalue.beta_shapley(4, 1)
    game = walsh_game(16, 0, two=(30, 1.0), three=(60, 0.3), four=(5, 0.05))
    truth = fs.exact(game, sv).values
    est = fs.estimate(game, sv, budget=1600, seed=0)
    assert est.info["surrogate"]["kind"] == "order-2+size+walsh-3-wide" and est.info["surrogate"]["features"] == 237
    assert sorted(widths) == [6, 57, 231]
    plain = fs.estimate(game, sv, method="semivalue-regression", budget=1600, seed=0)
    assert rel_error(est.values, truth) < 1e-5 < 1e-3 < rel_error(plain.values, truth)
