"""RestrictedGame: the game of a subset of the players, the others held absent."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from .base import Game, GameWrapper
from .._core.compiled import CACHE, threads_for

__all__ = ["RestrictedGame"]


class RestrictedGame(GameWrapper):
    """The game of the players ``active`` of ``game``; the other players are never in a coalition.

    Used to drop null players before estimating (their values are 0 for every semivalue).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdditiveGame([1.0, 0.0, 2.0])
    >>> r = RestrictedGame(g, [0, 2])
    >>> r(np.array([[True, True]]))
    array([3.])
    """

    def __init__(self, game: Game, active: Any) -> None:
        idx = np.asarray(active, dtype=np.int64).reshape(-1)
        if idx.size < 1 or idx.min() < 0 or idx.max() >= game.n_players or np.unique(idx).size != idx.size:
            raise ValueError(f"active must list distinct player indices of the game, got {active!r}")
        super().__init__(idx.size, player_names=[game.player_names[i] for i in idx], batch_size=game.batch_size)
        self.game = game
        self.active = idx
        self._source = np.full(game.n_players, -1, dtype=np.int64)      # the column of each player, -1: absent
        self._source[idx] = np.arange(idx.size)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        # the full game's coalitions a block of rows at a time (a column scatter of the whole sample would
        # cost as much as the estimator and hold a second copy of the coalitions)
        step = max(1, _BLOCK_CELLS // self.game.n_players)
        parts = []
        for start in range(0, coalitions.shape[0], step):
            block = np.ascontiguousarray(coalitions[start:start + step])
            full = np.empty((block.shape[0], self.game.n_players), dtype=bool)
            with threads_for(full.size):
                _expand_columns(block, self._source, full)
            parts.append(self.game(full))
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


_BLOCK_CELLS = 1 << 24          # coalition cells per call of the full game (16 MB)


@njit(cache=CACHE, nogil=True, parallel=True)
def _expand_columns(Z: np.ndarray, source: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Every cell of ``out`` written in order: ``out[r, c] = Z[r, source[c]]``, False where ``source[c] < 0``."""
    for r in prange(Z.shape[0]):
        for c in range(source.shape[0]):
            out[r, c] = Z[r, source[c]] if source[c] >= 0 else False
