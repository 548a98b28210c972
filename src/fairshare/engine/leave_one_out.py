"""Leave-one-out: ``phi_i = v(N) - v(N \\ {i})`` from the ``n`` coalitions that miss one player each.

The classic baseline of data valuation (Koh and Liang 2017 use it to check influence functions);
exact for the game as evaluated, so its standard error is zero (a noisy game's noise is not seen).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .protocols import History, Sampler
from .spec import MethodSpec, Setup

__all__ = ["AllButOne", "LeaveOneOutSolver", "all_but_one", "SPECS"]


@dataclass
class AllButOneBatch:
    """Rows ``N \\ {who[r]}``."""

    who: np.ndarray
    coalitions: np.ndarray
    n_draws: int
    fresh: bool = False


class AllButOne(Sampler):
    """The coalitions missing one player each, in player order, as far as the allowance goes.

    Examples
    --------
    >>> AllButOne(np.random.default_rng(0), 3).propose(2, History()).coalitions.astype(int).tolist()
    [[0, 1, 1], [1, 0, 1]]
    """

    one_draw_per_round = True

    def __init__(self, rng: np.random.Generator, n_players: int) -> None:
        super().__init__(rng, n_players)
        self.done = 0

    def propose(self, allowance: int, history: History) -> AllButOneBatch | None:
        who = np.arange(self.done, min(self.d, self.done + allowance))
        if who.size == 0:
            return None
        self.done += who.size
        return AllButOneBatch(who, all_but_one(who, self.d), int(who.size))


def all_but_one(who: np.ndarray, n: int) -> np.ndarray:
    """The coalitions ``N \\ {i}`` of ``n`` players for each ``i`` of ``who``: ``(len(who), n)``.

    Examples
    --------
    >>> all_but_one(np.array([2, 0]), 3).astype(int).tolist()
    [[1, 1, 0], [0, 1, 1]]
    """
    rows = np.ones((who.size, n), dtype=bool)
    rows[np.arange(who.size), who] = False
    return rows


class LeaveOneOutSolver:
    """``v(N) - v(N \\ {i})`` for every player seen (zero standard error); NaN for players not reached."""

    def __init__(self, setup: Setup) -> None:
        self.d = setup.n_players

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.vN = vN
        self.values = np.full((self.d, vN.size), np.nan)

    def absorb(self, batch: AllButOneBatch, values: np.ndarray) -> None:
        self.values[batch.who] = self.vN[None, :] - values

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        return self.values, np.zeros_like(self.values), {}


SPECS = [
    MethodSpec(
        name="loo", indices=("leave-one-out",),
        description="leave-one-out: v(N) - v(N minus i), n + 2 evaluations, exact",
        sampler=lambda s: AllButOne(s.sampler_rng, s.n_players), solver=LeaveOneOutSolver,
        min_budget=lambda n, sv, o: min(n + 2, 1 << n), default_for={"leave-one-out": 10}, needs_budget=False),
]
