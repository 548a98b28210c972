"""FunctionGame: any Python function of a boolean coalition matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arguments import check_positive_float
from .base import Game

__all__ = ["FunctionGame"]


class FunctionGame(Game):
    """A game defined by a vectorized function ``fn(bool[m, n]) -> float[m]`` or ``float[m, k]``.

    Parameters
    ----------
    fn : callable
        Receives a boolean ``(m, n_players)`` array, returns one value (or ``k``) per row.
    n_players : int
    player_names : sequence of str, optional
    batch_size : int, optional
        Largest number of coalitions passed to ``fn`` in one call.
    cost : float, optional
        Seconds one evaluation of ``fn`` takes, if you know it: ``method="auto"`` adds the tree control
        variate (a second or so of surrogate fits) only when that is a small share of what the game costs.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: S.sum(axis=1) ** 2.0, n_players=3)
    >>> g(np.array([[1, 1, 0]], dtype=bool))
    array([4.])
    >>> fs.exact(g, "shapley").values
    array([3., 3., 3.])
    """

    def __init__(self, fn: Callable[[np.ndarray], Any], n_players: int, player_names: Any = None,
                 batch_size: int | None = None, cost: float | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        super().__init__(n_players, player_names=player_names, batch_size=batch_size)
        self.fn = fn
        self._cost = None if cost is None else check_positive_float(cost, "cost")

    def cost(self) -> float | None:
        return self._cost

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn(coalitions))
