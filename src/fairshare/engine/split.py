"""``auto`` on a game that is the mean of parts: each part estimated on its own share of the model rows.

A model explained over ``B`` background rows (marginal imputation) is the mean of ``B`` games, one per background
row (:meth:`~fairshare.games.ModelGame.parts`). Each part's null players are the features where the explicand
equals that row, so on tables with categorical or discrete columns a part has far fewer players than the game
(german credit: 11 of 20 on average, nhanes: 13 of 40). A semivalue is linear, so the game's values are the mean of
the parts' values; estimating each part on the players it has, with the model rows that one evaluation of the
whole game costs (one row per part), spends the same model rows on smaller games: a part whose ``2^d`` coalitions
fit its share is exact, and what it does not need goes to the larger parts (water filling).

Measured (``fairshare bench default``, 16 background rows, each part on its plain regression: what the surrogate's
allowance affords for 16 parts): 1.9-11x lower error than the surrogate regression on the whole game where the parts
keep 0.33-0.66 of the players (german credit / MLP 3.3-7.0x, bank / lightgbm 3.5-11x, adult / random forest
4.2-6.7x, nhanes / xgboost 1.9-3.8x; adult's logistic pipeline exact from 10n); worse where they keep nearly every
player (the same games split by hand: pima, 0.90 of them, 100x at 30n; communities, 0.98, 1.5x at 30n and 5x at
100n). So ``auto`` splits only where the parts keep at most :data:`SPLIT_SHARE` of the players on average, without
a stopping rule or progress reports (their rounds belong to one design), for semivalues and interaction indices
(not Owen values: their blocks are not a part's players), and never where it chose exact values or leave-one-out.
The parts' seeds are split from the seed (same seed, same values), and the standard errors of independent parts add
in quadrature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..games.base import Game
from ..indices.interactions import InteractionIndex
from ..indices.semivalues import Semivalue
from .choice import Choice, SURROGATE_SHARE, WALSH_ALLOWANCE

__all__ = ["Split", "plan_split", "water_fill", "SPLIT_SHARE"]

#: split where the parts keep at most this share of the players on average (measured: 0.33-0.66 gain 1.9-11x,
#: 0.90-0.98 lose 1.5-100x against the surrogate on the whole game)
SPLIT_SHARE = 0.8


#: the most seconds of model calls a part may be predicted to take for its fits to run on one BLAS thread
CHEAP_CALLS = 0.05
#: predicted estimator seconds per part (a fixed cost model: german credit's 16 parts of 11 players on average at
#: 600 evaluations each took 36 ms in all on one core); the split runs where its parts' seconds are within the Walsh
#: surrogate's allowance or ``SURROGATE_SHARE`` of the game's declared evaluations (1,000 background rows of a
#: fast model: the parts' fits, 3 s a row, would cost more than the model calls)
PART_SECONDS = 0.003
#: model calls of a part (its design's rounds; the whole game makes as many for all its rows): each costs the game's
#: ``call_seconds()`` (a pipeline over 50 background rows: 50 parts' calls took 0.53 s a row against 0.33 whole)
CALLS_PER_PART = 2


@dataclass
class Split:
    """The parts of a game, the players each one has (its non-null players) and its evaluations."""

    parts: list[Game]
    active: list[np.ndarray]
    budgets: np.ndarray
    allowance: float

    @property
    def cheap(self) -> bool:
        """Whether the parts' model calls are predicted to take at most :data:`CHEAP_CALLS` seconds each (or the
        game declares no cost): their small fits then run with BLAS on one thread, whose other threads would spin
        between them (measured: twice the CPU seconds, the same wall seconds)."""
        cost = self.parts[0].cost()                  # the parts' model and rows are the same: one cost
        return cost is None or cost * int(self.budgets.max()) <= CHEAP_CALLS

    @property
    def estimated(self) -> int:
        """Parts whose share does not cover all their coalitions."""
        return int(sum(b < _coalitions(a.size) for a, b in zip(self.active, self.budgets)))

    def reason(self, n: int, budget: int, methods: dict) -> str:
        """Why and how the game was split, in words (``info["choice"]["why"]``)."""
        sizes = np.array([a.size for a in self.active])
        used = ", ".join(f"{m} {c}" for m, c in sorted(methods.items(), key=lambda t: -t[1]))
        return (f"the mean of {len(self.parts)} parts (one per background row) with {sizes.mean():.1f} of {n} "
                f"players on average (at most {SPLIT_SHARE:g} of them: split): each part estimated on its own share "
                f"of the {budget} x {len(self.parts)} model rows ({len(self.parts) - self.estimated} exact); parts' "
                f"methods: {used}")


def _coalitions(d: int) -> int:
    """Coalitions of ``d`` players, or 2 for none (the ends), capped where they would not fit an int64."""
    return 2 if d == 0 else (1 << d if d < 62 else 1 << 62)


def water_fill(needs: np.ndarray, total: int) -> np.ndarray:
    """Integer shares of ``total`` evaluations: each part ``min(need, level)``, the level as high as ``total`` allows
    (what a part that is covered does not need goes to the others).

    Examples
    --------
    >>> water_fill(np.array([4, 100, 100]), 90).tolist()
    [4, 43, 43]
    """
    needs = np.asarray(needs, dtype=np.int64)
    order = np.sort(needs)
    left, level = int(total), 0
    for i, need in enumerate(order):
        share = left // (order.size - i)
        if need > share:
            level = share
            break
        left -= int(need)
    else:
        return needs.copy()
    return np.minimum(needs, level)


def _affordable(game: Game, n_parts: int, budget: int) -> bool:
    """Whether the parts' predicted seconds beyond the whole game's (their fits, :data:`PART_SECONDS`, and their
    model calls' fixed costs, :data:`CALLS_PER_PART` each) are within the allowance."""
    seconds = n_parts * (PART_SECONDS + CALLS_PER_PART * game.call_seconds())
    if seconds <= WALSH_ALLOWANCE:
        return True
    cost = game.cost()
    return cost is not None and seconds <= SURROGATE_SHARE * cost * budget


def plan_split(game: Game, sv: object, choice: Choice, stop: object, progress: object) -> Split | None:
    """The parts ``auto`` estimates one by one (see the module docstring), or None where the game runs whole.

    Examples
    --------
    >>> import fairshare as fs
    >>> from fairshare.engine.choice import choose
    >>> g = fs.games.ModelGame(lambda X: X.prod(axis=1), x=[1.0] * 6, background=[[1.0] * 3 + [0.0] * 3,
    ...                                                                            [0.0] * 3 + [1.0] * 3])
    >>> sv = fs.Semivalue.shapley()
    >>> s = plan_split(g, sv, choose(g, sv, budget=20), None, None)
    >>> [a.tolist() for a in s.active], s.budgets.tolist()      # 2^3 coalitions each: both exact
    ([[3, 4, 5], [0, 1, 2]], [8, 8])
    """
    if not (choice.auto and choice.budget is not None and stop is None and progress is None
            and isinstance(sv, (Semivalue, InteractionIndex)) and choice.method not in ("exact", "loo")):
        return None
    parts = game.parts()
    if not parts or not _affordable(game, len(parts), choice.budget):
        return None
    n = game.n_players
    active = [np.flatnonzero(~np.asarray(p.null_players(), dtype=bool)) for p in parts]
    if np.mean([a.size for a in active]) > SPLIT_SHARE * n:
        return None
    budgets = water_fill(np.array([_coalitions(a.size) for a in active]), choice.budget * len(parts))
    split = Split(parts, active, budgets, WALSH_ALLOWANCE)
    split.allowance = WALSH_ALLOWANCE / max(1, split.estimated)
    return split
