"""Shared fixtures: small games with a few shapes of structure."""

from __future__ import annotations

import numpy as np
import pytest

import fairshare as fs
from fairshare.exact import all_coalitions


def table_game(table: np.ndarray, n: int) -> fs.games.FunctionGame:
    """A game given by its value on every coalition (indexed by the coalition's bit code)."""
    weights = 1 << np.arange(n)

    def fn(S: np.ndarray) -> np.ndarray:
        return table[S.astype(np.int64) @ weights]

    return fs.games.FunctionGame(fn, n_players=n)


def random_table(n: int, rng: np.random.Generator, k: int | None = None) -> np.ndarray:
    shape = (1 << n,) if k is None else (1 << n, k)
    return rng.standard_normal(shape)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


INDICES = [
    fs.Semivalue.shapley(),
    fs.Semivalue.banzhaf(),
    fs.Semivalue.beta_shapley(4, 1),
    fs.Semivalue.weighted_banzhaf(0.3),
]
INDEX_IDS = ["shapley", "banzhaf", "beta(4,1)", "wbanzhaf(0.3)"]

def stderr_coverage(game: fs.Game, index: str, method: str, budget: int, runs: int = 60) -> float:
    """Share of (player, run) pairs whose error is within two reported standard errors."""
    truth = fs.exact(game, index).values
    inside = [np.abs(phi.values - truth) <= 2 * phi.stderr
              for phi in (fs.estimate(game, index, method=method, budget=budget, seed=s) for s in range(runs))]
    return float(np.mean(inside))


__all__ = ["stderr_coverage", "table_game", "random_table", "all_coalitions", "INDICES", "INDEX_IDS"]
