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
    n, errors = 12, {False: [], True: []}
    for seed in range(6):
        g = interacting(n, seed)
        exact = fs.exact(g, "shapley").values
        for s in range(5):
            for shrink in (False, True):
                e = fs.estimate(g, "shapley", method="regression", budget=40, seed=s, shrink=shrink)
                errors[shrink].append(np.sum((e.values - exact) ** 2) / np.sum(exact ** 2))
                assert e.values.sum() == pytest.approx(e.grand_value - e.empty_value, abs=1e-9)
                if shrink:
                    assert 0.0 <= e.info["shrinkage"][0] <= 1.0
    assert np.mean(errors[True]) < 0.8 * np.mean(errors[False])


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
