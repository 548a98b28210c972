"""A game whose evaluated coalitions are kept on disk (a store/ record log): coalitions evaluated before, in this
or an earlier run, are answered from there; new values are logged as each model call returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..store.cache import CacheFolder
from ..store.coalitions import CoalitionStore, coalition_keys
from ..store.record_log import RecordLog
from .base import Game, SameValues

__all__ = ["CachedGame"]


class CachedGame(SameValues):
    """Wraps a game; coalitions evaluated before (in this or an earlier run) are answered from disk.

    New values are appended to ``values.log`` in ``folder`` as each model call returns: a game that calls its
    model several times within one game call hands each batch to the cache through its ``on_batch`` hook
    (:class:`~fairshare.games.ModelGame`'s row batches); batches a game splits by its ``batch_size`` (a
    TextGame's) are the cache's own calls, as it takes the game's ``batch_size``; any other game is logged per
    game call. ``owner`` (default: the folder's, for a :class:`CacheFolder`) names whose values they are; a log
    written for another owner is computed again.

    Examples
    --------
    >>> import tempfile, fairshare as fs
    >>> d = tempfile.mkdtemp(); g = fs.games.AdditiveGame([1.0, 2.0])
    >>> CachedGame(g, d)(np.array([[True, False]])).tolist()
    [1.0]
    >>> c = CachedGame(g, d); c(np.array([[True, False]])).tolist(), c.model_calls
    ([1.0], 0)
    """

    def __init__(self, game: Game, folder: Any, owner: str | None = None) -> None:
        super().__init__(game.n_players, player_names=game.player_names, batch_size=game.batch_size)
        self.game, self.folder = game, Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.n_outputs = game.n_outputs
        if owner is None:                              # a CacheFolder names its owner; a plain path none
            owner = folder.owner if isinstance(folder, CacheFolder) else ""
        self.owner = owner
        self.log = RecordLog(self.folder / "values.log", owner, key_width=(game.n_players + 7) // 8)
        self._store = CoalitionStore()
        if self.log.keys.shape[0]:
            self._store.add(self.log.keys.copy().view(f"S{self.log.key_width}").ravel(), self.log.values)
        self.model_calls = 0

    def part_of(self, part: Game, b: int) -> Game:
        """Part ``b`` of the game with its own log (``part-b`` in this folder, the same owner)."""
        return CachedGame(part, self.folder / f"part-{b}", owner=self.owner)

    def _keep(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Log and hold new values (their finite rows: a NaN is the game's error, raised by the caller)."""
        ok = np.isfinite(values) if values.ndim == 1 else np.all(np.isfinite(values), axis=1)
        keys, values = keys[ok], values[ok]
        if keys.size:
            raw = np.frombuffer(keys.tobytes(), dtype=np.uint8).reshape(keys.size, -1)
            self.log.append(raw, values.reshape(keys.size, -1), tag=int(values.ndim == 1))
            self._store.add(keys, values.reshape(keys.size, -1))

    def _evaluate_missing(self, coalitions: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """The game's values of new coalitions, each batch of model calls logged as it returns."""
        kept = [0]

        def on_batch(batch: np.ndarray, values: np.ndarray) -> None:
            n = batch.shape[0]
            if np.array_equal(coalition_keys(batch), keys[kept[0]:kept[0] + n]):
                self._keep(keys[kept[0]:kept[0] + n], np.asarray(values, dtype=float))
                kept[0] += n

        hooked = hasattr(self.game, "on_batch")
        if hooked:
            self.game.on_batch = on_batch
        try:
            new = np.asarray(self.game(coalitions), dtype=float)
        finally:
            if hooked:
                self.game.on_batch = None
        self.model_calls += 1
        if kept[0] < keys.size:                       # what no hook logged
            self._keep(keys[kept[0]:], new[kept[0]:])
        return new

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        keys = coalition_keys(coalitions)
        pos = self._store.find(keys)
        found = pos >= 0
        missing = np.flatnonzero(~found)
        new = self._evaluate_missing(coalitions[missing], keys[missing]) if missing.size else None
        if not found.any():
            return new
        old = self._store.values[pos[found]]
        if self.log.tag == 1:                                   # a scalar game: one value per coalition
            old = old[:, 0]
        full = np.empty((keys.size,) + old.shape[1:])
        full[found] = old
        if new is not None:
            full[missing] = new
        return full
