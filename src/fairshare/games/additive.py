"""Additive games: every semivalue equals the players' own weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Game
from ..indices.semivalues import Semivalue

__all__ = ["AdditiveGame"]


class AdditiveGame(Game):
    """``v(S) = intercept + sum_{i in S} w_i``; every semivalue of player ``i`` is ``w_i``.

    ``weights`` of shape ``(n, k)`` give a ``k``-output game.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdditiveGame([1.0, 2.0, -0.5], intercept=3.0)
    >>> fs.exact(g, "banzhaf", via="enumeration").values
    array([ 1. ,  2. , -0.5])
    """

    kind = "synthetic"

    def __init__(self, weights: Any, intercept: Any = 0.0, player_names: Any = None,
                 batch_size: int | None = None) -> None:
        w = np.asarray(weights, dtype=float)
        if w.ndim not in (1, 2) or w.shape[0] < 1 or not np.all(np.isfinite(w)):
            raise ValueError(f"weights must be a finite (n,) or (n, k) array, got shape {w.shape}")
        super().__init__(w.shape[0], player_names=player_names, batch_size=batch_size)
        self.weights = w
        self.intercept = np.broadcast_to(np.asarray(intercept, dtype=float), w.shape[1:]).copy()

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        return coalitions.astype(float) @ self.weights + self.intercept

    def exact_values(self, index: Semivalue) -> np.ndarray:
        return self.weights.copy()

    def moebius_terms(self) -> tuple[np.ndarray, np.ndarray]:
        return np.eye(self.n_players, dtype=bool), self.weights
