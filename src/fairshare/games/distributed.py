"""DistributedGame: one expensive game evaluated on a cluster (Dask, Spark, Ray), batch by batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import check_int
from .base import Game, SameValues
from ..backends.clients import as_backend
from ..backends.dask import wait_seconds

__all__ = ["DistributedGame"]


def _evaluate_chunk(game: Game, coalitions: np.ndarray) -> np.ndarray:
    return np.asarray(game(coalitions))


class DistributedGame(SameValues):
    """Splits each request into chunks of ``chunk_size`` coalitions evaluated on ``client``'s workers (a Dask
    client, a SparkSession or the ray module after ``ray.init``; :mod:`fairshare.backends`); results come back in
    order, so estimates equal a local run's.

    The game goes to the cluster once (:meth:`~fairshare.backends.base.Backend.put`; on Dask it lives in the task
    graph, so a worker that dies loses nothing: its chunks run again on the others; one Spark job per request). A request waits at most ``timeout`` seconds for the next
    chunk (None: the Dask setting ``fairshare.timeout``, else 1800) and at most ``min(timeout, 30)``
    seconds on a cluster with no worker, then raises
    :class:`~fairshare.backends.dask.WorkersLostError` naming the lost workers.

    Examples
    --------
    >>> from dask.distributed import Client                      # doctest: +SKIP
    >>> g = DistributedGame(game, Client(), timeout=600)        # doctest: +SKIP
    """

    def __init__(self, game: Game, client: Any, chunk_size: int = 256, timeout: float | None = None) -> None:
        chunk_size = check_int(chunk_size, "chunk_size", minimum=1)      # before anything goes to the cluster
        super().__init__(game.n_players, player_names=game.player_names)
        self.game, self.client, self.chunk_size = game, client, chunk_size
        self.timeout = None if timeout is None else wait_seconds(timeout)
        self.backend = as_backend(client)
        self._remote = self.backend.put(game)

    def part_of(self, part: Game, b: int) -> Game:
        """Part ``b`` of the game, evaluated on the same cluster in the same chunks."""
        return DistributedGame(part, self.client, self.chunk_size, self.timeout)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        chunks = [coalitions[i:i + self.chunk_size] for i in range(0, coalitions.shape[0], self.chunk_size)]
        return np.concatenate(self.backend.map(_evaluate_chunk, [self._remote], [(c,) for c in chunks],
                                               self.timeout), axis=0)
