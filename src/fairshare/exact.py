"""``fairshare.exact``: exact semivalues, from a game's closed form or by enumerating its ``2^n`` coalitions."""

from __future__ import annotations

import numpy as np

from .arguments import Arguments, Option
from .attribution import Attribution
from .estimation.enumeration import DEFAULT_CHUNK, exact_estimate
from .game import Game
from .semivalues import Semivalue, resolve_index

__all__ = ["exact", "EXACT"]

#: fs.exact's arguments (besides the game)
EXACT = Arguments("exact", (
    Option("index", "shapley", "the semivalue: a name or a Semivalue", check=resolve_index),
    Option("via", "auto", "auto (the closed form when the game has one), closed-form or enumeration",
           allowed=("auto", "closed-form", "enumeration")),
    Option("allow_large", False, "enumerate games of more than 22 players", kind="bool"),
    Option("chunk_size", DEFAULT_CHUNK, "coalitions evaluated per game call", kind="int", minimum=1),
))


def exact(game: Game, index: str | Semivalue = "shapley", *, via: str = "auto", allow_large: bool = False,
          chunk_size: int = DEFAULT_CHUNK) -> Attribution:
    """Exact semivalues of ``game``.

    Games that know their values (synthetic games, tree games) answer in closed
    form; otherwise every one of the ``2^n`` coalitions is evaluated, in chunks of
    ``chunk_size`` so memory stays bounded.

    Parameters
    ----------
    game : Game
    index : "shapley", "banzhaf" or Semivalue
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
    """
    if not isinstance(game, Game):
        raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
    args = EXACT.check(dict(index=index, via=via, allow_large=allow_large, chunk_size=chunk_size))
    via, allow_large, chunk_size = args["via"], args["allow_large"], args["chunk_size"]
    sv = resolve_index(args["index"], game.n_players)
    before = game.n_evaluations
    result = exact_estimate(game, sv, via=via, allow_large=allow_large, chunk_size=chunk_size)
    squeeze = not game.n_outputs

    def out(a: np.ndarray) -> float | np.ndarray:
        a = np.asarray(a, dtype=float)
        a = a[..., 0] if squeeze else a
        return float(a) if a.ndim == 0 else a

    return Attribution(values=out(result.values), stderr=out(result.stderr), index=sv.name, method="exact",
                       options={"allow_large": allow_large}, info=dict(result.info),
                       n_evaluations=game.n_evaluations - before,
                       empty_value=out(result.empty_value), grand_value=out(result.grand_value),
                       player_names=list(game.player_names))
