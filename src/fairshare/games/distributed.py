"""DistributedGame: one expensive game evaluated on a Dask cluster, batch by batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..game import Game, GameWrapper

__all__ = ["DistributedGame"]


def _evaluate_chunk(game: Game, coalitions: np.ndarray) -> np.ndarray:
    return np.asarray(game(coalitions))


class DistributedGame(GameWrapper):
    """Splits each request into chunks of ``chunk_size`` coalitions evaluated on ``client``'s workers;
    results come back in order, so estimates equal a local run's.

    Examples
    --------
    >>> from dask.distributed import Client                      # doctest: +SKIP
    >>> g = DistributedGame(game, Client())                     # doctest: +SKIP
    """

    def __init__(self, game: Game, client: Any, chunk_size: int = 256) -> None:
        super().__init__(game.n_players, player_names=game.player_names)
        self.game, self.client, self.chunk_size = game, client, int(chunk_size)
        self._remote = client.scatter(game, broadcast=True)

    def null_players(self) -> np.ndarray | None:
        return self.game.null_players()

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        chunks = [coalitions[i:i + self.chunk_size] for i in range(0, coalitions.shape[0], self.chunk_size)]
        futures = self.client.map(_evaluate_chunk, [self._remote] * len(chunks), chunks, pure=False)
        return np.concatenate(self.client.gather(futures), axis=0)
