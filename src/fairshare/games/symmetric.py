"""Games whose value depends only on coalition size, including the unified framework's adversarial game."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import check_int
from .._core.combinatorics import log_binom
from .base import Game
from ..indices.semivalues import Semivalue

__all__ = ["SymmetricGame", "AdversarialGame"]


class SymmetricGame(Game):
    """``v(S) = g(|S|)`` for a table ``g(0..n)``; every player gets
    ``sum_l p_l C(n-1, l) (g(l+1) - g(l))``.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.SymmetricGame([0.0, 1.0, 1.0, 3.0])
    >>> fs.exact(g, "shapley").values
    array([1., 1., 1.])
    """

    kind = "synthetic"

    def __init__(self, size_values: Any, player_names: Any = None, batch_size: int | None = None) -> None:
        g = np.asarray(size_values, dtype=float)
        if g.ndim != 1 or g.size < 2 or not np.all(np.isfinite(g)):
            raise ValueError("size_values must be a finite 1-D array g(0), ..., g(n) with n >= 1")
        super().__init__(g.size - 1, player_names=player_names, batch_size=batch_size)
        self.size_values = g

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        return self.size_values[coalitions.sum(axis=1)]

    def exact_values(self, index: Semivalue) -> np.ndarray:
        n = self.n_players
        ell = np.arange(n)
        mass = np.exp(index.log_weights(n) + log_binom(n - 1, ell))
        return np.full(n, float(mass @ np.diff(self.size_values)))


class AdversarialGame(SymmetricGame):
    """The adversarial model of the unified Shapley framework (v1, App. E).

    ``f(x) = g(sum_i h(x_i))`` with baseline 0 and explicand 1 gives ``v(S) = g(|S|)`` with
    ``g(x) = xi (x/d)^2 + chi x`` for ``1 <= x <= width`` or ``d - width <= x <= d - 1``, and
    ``chi x`` otherwise. Its Shapley values are ``chi`` for every player; kernel and
    modified-l2 sampling provably beat leverage-score sampling on it (Proposition E.1).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdversarialGame(20, width=2, xi=5.0, chi=0.3)
    >>> np.allclose(fs.exact(g, "shapley").values, 0.3)
    True
    """

    def __init__(self, n_players: int, width: int = 2, xi: float = 1.0, chi: float = 1.0,
                 player_names: Any = None, batch_size: int | None = None) -> None:
        d = check_int(n_players, "n_players", minimum=2)
        width = check_int(width, "width", minimum=0)
        x = np.arange(d + 1, dtype=float)
        bumped = ((x >= 1) & (x <= width)) | ((x >= d - width) & (x <= d - 1))
        g = chi * x + np.where(bumped, xi * (x / d) ** 2, 0.0)
        super().__init__(g, player_names=player_names, batch_size=batch_size)
        self.width, self.xi, self.chi = width, float(xi), float(chi)
