"""The airport game (Littlechild and Owen 1973): a runway costs what its largest plane needs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.combinatorics import log_binom, logsumexp
from .base import Game
from ..indices.semivalues import Semivalue

__all__ = ["AirportGame"]


class AirportGame(Game):
    """``v(S) = max_{i in S} c_i`` (0 for the empty coalition).

    The game is a sum over cost levels of "any of these players" games, so every
    semivalue has a closed form; for Shapley it is the Littlechild-Owen rule:
    each cost increment is split equally among the players who need it.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AirportGame([1.0, 2.0, 4.0])
    >>> fs.exact(g, "shapley").values
    array([0.33333333, 0.83333333, 2.83333333])
    """

    kind = "synthetic"

    def __init__(self, costs: Any, player_names: Any = None, batch_size: int | None = None) -> None:
        c = np.asarray(costs, dtype=float)
        if c.ndim != 1 or c.size < 1 or not np.all(np.isfinite(c)) or np.any(c < 0):
            raise ValueError("costs must be a 1-D array of finite non-negative numbers")
        super().__init__(c.size, player_names=player_names, batch_size=batch_size)
        self.costs = c

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        return np.where(coalitions, self.costs[None, :], 0.0).max(axis=1)

    def exact_values(self, index: Semivalue) -> np.ndarray:
        n = self.n_players
        order = np.argsort(self.costs, kind="stable")
        sorted_costs = self.costs[order]
        increments = np.diff(np.concatenate([[0.0], sorted_costs]))      # d_j for level j = 0..n-1
        outside = np.arange(n)                                           # players below level j: n - |T_j| = j
        log_p = index.log_weights(n)
        # value to each member of T_j: sum_{l=0}^{j} p_l C(j, l)
        terms = log_p[None, :] + log_binom(outside[:, None], np.arange(n)[None, :])
        share = np.exp(logsumexp(terms, axis=1))
        per_rank = np.cumsum(increments * share)                         # player at sorted rank r gets levels 0..r
        phi = np.empty(n)
        phi[order] = per_rank
        return phi
