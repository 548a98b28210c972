"""James-Stein shrinkage of regression estimates (``regression``'s ``shrink``, a short generation prompt's default):
lower squared error than the plain estimate on noisy games at small budgets, values that still add up, a factor
near 1 where the errors are small, and nothing shrunk below 4 players or with infinite standard errors."""

from __future__ import annotations

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.shrink import james_stein


def interacting(n: int, seed: int) -> fs.Game:
    """A game of many strong interactions and one clear player: a hard game at a budget of a few n."""
    return fs.games.SOUMGame.random(n, n_terms=6 * n, max_size=min(6, n), seed=seed)


def test_shrinking_lowers_the_error_against_exact_values_and_the_values_still_add_up():
    # 16 players at 5n: 0.75 of the plain error (at 3.5n-5n: 0.75-0.94 on 12-16 players, but 1.05-1.48 on 20-24,
    # where the conservative error bars shrink too far; shrink is the default of generation prompts only)
    n, errors = 16, {False: [], True: []}
    for seed in range(6):
        g = interacting(n, seed)
        exact = fs.exact(g, "shapley").values
        for s in range(4):
            for shrink in (False, True):
                e = fs.estimate(g, "shapley", method="regression", budget=80, seed=s, shrink=shrink)
                errors[shrink].append(np.sum((e.values - exact) ** 2) / np.sum(exact ** 2))
                assert e.values.sum() == pytest.approx(e.grand_value - e.empty_value, abs=1e-9)
                if shrink:
                    assert 0.0 <= e.info["shrinkage"][0] <= 1.0
    assert np.mean(errors[True]) < 0.8 * np.mean(errors[False])


def test_nothing_is_shrunk_where_the_error_bars_are_not_estimable():
    """12 players at 40 evaluations: the sizes 1 and 11 whole and 7 draws beside them, whose error bars (a bias the
    draws cannot show) are infinite; shrinking by them had moved the values by their too small error bars."""
    g = interacting(12, 0)
    with pytest.warns(fs.FairshareWarning, match="so few draws cannot show"):
        plain = fs.estimate(g, "shapley", method="regression", budget=40, seed=0)
        e = fs.estimate(g, "shapley", method="regression", budget=40, seed=0, shrink=True)
    assert e.info["shrinkage"] == [1.0] and np.array_equal(e.values, plain.values) and np.all(np.isinf(e.stderr))


def test_a_clear_signal_is_left_almost_as_it_is_and_small_games_not_at_all():
    g = fs.games.AdditiveGame(np.arange(1.0, 11.0))
    e = fs.estimate(g, "shapley", method="regression", budget=200, seed=0, shrink=True)
    np.testing.assert_allclose(e.values, np.arange(1.0, 11.0), atol=1e-8)     # an additive game: no error, no shrink
    values, stderr, factor = james_stein(np.array([[3.0], [0.0], [1.0]]), np.ones((3, 1)))
    assert factor == [1.0] and values.ravel().tolist() == [3.0, 0.0, 1.0]
    values, stderr, factor = james_stein(np.array([[3.0], [0.0], [1.0], [2.0]]), np.full((4, 1), np.inf))
    assert factor == [1.0] and np.all(np.isinf(stderr))


def test_a_short_generation_prompt_shrinks_by_default_and_not_when_told():
    def logprobs(token_lists, target):
        return np.array([[-3.0 + 0.5 * (7 in t) + 0.3 * ((3 in t) and (5 in t))] * len(target) for t in token_lists])

    game = fs.games.GenerationGame(logprobs, prompt=[1, 7, 5, 3, 9, 2, 4, 6, 8, 10, 11, 12], target=[20])
    e = fs.explain(game, budget=60, seed=0, progress=False)
    assert (e.method, e.options["shrink"]) == ("surrogate-regression", True)
    assert "shrink=True (the game's)" in e.info["choice"]["why"]
    plain = fs.explain(game, budget=60, seed=0, progress=False, shrink=False)
    assert plain.options["shrink"] is False
    assert e.values[0].sum() == pytest.approx(plain.values[0].sum())
