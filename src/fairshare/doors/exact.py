"""``fairshare.doors.exact``: exact semivalues, from a game's closed form or by enumerating its ``2^n`` coalitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option
from ..results.attribution import Attribution
from ..engine.exact import DEFAULT_CHUNK, exact_estimate
from ..engine.evaluation import BudgetedEvaluator
from ..engine.exact import exact_owen
from ..engine.engine import squeezed
from ..games.base import Game
from ..indices.hierarchy import OwenIndex, check_partition, check_value_index, resolve_value_index
from ..indices.semivalues import Semivalue

__all__ = ["exact", "EXACT"]

#: fs.exact's arguments (besides the game)
EXACT = Arguments("exact", (
    Option("index", "shapley", "the semivalue: a name or a Semivalue; or owen (with partition)", check=check_value_index),
    Option("partition", None, "index='owen': the blocks of players (nested lists: a hierarchy)", check=check_partition),
    Option("via", "auto", "auto (the closed form when the game has one), closed-form or enumeration",
           allowed=("auto", "closed-form", "enumeration")),
    Option("allow_large", False, "enumerate games of more than 22 players", kind="bool"),
    Option("chunk_size", DEFAULT_CHUNK, "coalitions evaluated per game call", kind="int", minimum=1),
))


def exact(game: Game, index: str | Semivalue | OwenIndex = "shapley", *, partition: Any = None, via: str = "auto",
          allow_large: bool = False, chunk_size: int = DEFAULT_CHUNK) -> Attribution:
    """Exact semivalues of ``game``.

    Games that know their values (synthetic games, tree games) answer in closed
    form; otherwise every one of the ``2^n`` coalitions is evaluated, in chunks of
    ``chunk_size`` so memory stays bounded.

    Parameters
    ----------
    game : Game
    index : "shapley", "banzhaf", Semivalue or "owen"
    partition : list of blocks, optional
        For ``index="owen"``: the unions of players, nested lists for a hierarchy. Exact Owen values read only
        the coalitions made of whole blocks (12 of 16 for two pairs of players), so they reach beyond 22 players
        when the blocks are small.
    via : {"auto", "closed-form", "enumeration"}
        ``"auto"`` uses the closed form when the game has one.
    allow_large : bool
        Permit enumeration above ``MAX_ENUMERATION_PLAYERS`` players.
    chunk_size : int
        Coalitions evaluated per game call during enumeration.

    Returns
    -------
    Attribution
        ``stderr`` is all zeros; ``n_evaluations`` counts the game calls made.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.WeightedVotingGame([2, 1, 1], quota=3)
    >>> fs.exact(g, "shapley", via="enumeration").values
    array([0.66666667, 0.16666667, 0.16666667])
    >>> fs.exact(g, "owen", partition=[[0], [1, 2]]).values      # the pair bargains as one union
    array([0.5 , 0.25, 0.25])
    """
    if not isinstance(game, Game):
        raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
    args = EXACT.check(dict(index=index, partition=partition, via=via, allow_large=allow_large,
                            chunk_size=chunk_size))
    via, allow_large, chunk_size = args["via"], args["allow_large"], args["chunk_size"]
    sv = resolve_value_index(args["index"], game.n_players, args["partition"])
    before = game.n_evaluations
    if isinstance(sv, OwenIndex):
        if via == "closed-form":
            raise ValueError("via='closed-form': no game has a closed form for Owen values; use via='auto'")
        result = exact_owen(game, sv, BudgetedEvaluator(game, None))
    else:
        result = exact_estimate(game, sv, via=via, allow_large=allow_large, chunk_size=chunk_size)
    squeeze = not game.n_outputs

    def out(a: np.ndarray) -> float | np.ndarray:
        return squeezed(a, squeeze)

    return Attribution(values=out(result.values), stderr=out(result.stderr), index=sv.name, method="exact",
                       options={"allow_large": allow_large}, info=dict(result.info),
                       n_evaluations=game.n_evaluations - before,
                       empty_value=out(result.empty_value), grand_value=out(result.grand_value),
                       player_names=list(game.player_names))
