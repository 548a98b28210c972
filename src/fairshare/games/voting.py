"""Weighted majority voting games, with exact semivalues by dynamic programming over weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Game
from ..indices.semivalues import Semivalue

__all__ = ["WeightedVotingGame"]

_DP_MEMORY_FLOATS = 25_000_000  # ~200 MB for one block of per-player count tables


class WeightedVotingGame(Game):
    """``v(S) = 1`` when the players in ``S`` hold at least ``quota`` votes, else 0.

    With integer weights, exact values of any semivalue come from counting, for
    each player ``i`` and size ``l``, the coalitions of the other players of
    weight ``w`` (a dynamic program over sizes and weights): ``i`` swings ``S``
    exactly when ``quota - w_i <= w(S) < quota``.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.WeightedVotingGame([4, 4, 4, 2, 2, 1], quota=12)   # EEC Council of Ministers, 1958
    >>> np.round(fs.exact(g, "shapley").values * 60).astype(int)
    array([14, 14, 14,  9,  9,  0])
    """

    kind = "synthetic"

    def __init__(self, weights: Any, quota: float, player_names: Any = None, batch_size: int | None = None) -> None:
        w = np.asarray(weights, dtype=float)
        if w.ndim != 1 or w.size < 1 or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be a 1-D array of finite non-negative numbers")
        if not np.isfinite(quota) or quota <= 0:
            raise ValueError(f"quota must be finite and > 0, got {quota}")
        super().__init__(w.size, player_names=player_names, batch_size=batch_size)
        self.weights = w
        self.quota = float(quota)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        return (coalitions.astype(float) @ self.weights >= self.quota).astype(float)

    def knows_exact_values(self, index: Semivalue) -> bool:
        return bool(np.all(self.weights == np.round(self.weights)))

    def exact_values(self, index: Semivalue) -> np.ndarray | None:
        if not self.knows_exact_values(index):
            return None
        n = self.n_players
        w = self.weights.astype(np.int64)
        total = int(w.sum())
        q = int(np.ceil(self.quota))
        if q > total:
            return np.zeros(n)
        p = index.weights(n)
        phi = np.zeros(n)
        block = max(1, _DP_MEMORY_FLOATS // (n * (total + 1)))
        for start in range(0, n, block):
            players = np.arange(start, min(start + block, n))
            counts = _counts_without(w, players, total)              # (b, n, total + 1)
            cum = np.concatenate([np.zeros(counts.shape[:2] + (1,)), np.cumsum(counts, axis=2)], axis=2)
            lo = np.clip(q - w[players], 0, total + 1)
            swings = cum[:, :, q] - cum[np.arange(players.size), :, lo]   # (b, n): by size l
            phi[players] = swings[:, : n] @ p
        return phi


def _counts_without(w: np.ndarray, players: np.ndarray, total: int) -> np.ndarray:
    """``C[b, l, s]``: number of coalitions of size ``l`` and weight ``s`` among all players but ``players[b]``."""
    n = w.size
    C = np.zeros((players.size, n, total + 1))
    C[:, 0, 0] = 1.0
    for j in range(n):
        wj = int(w[j])
        keep = players != j
        if not keep.any():
            continue
        shifted = np.zeros_like(C[keep])
        shifted[:, 1:, wj:] = C[keep][:, :-1, : total + 1 - wj]
        C[keep] += shifted
    return C
