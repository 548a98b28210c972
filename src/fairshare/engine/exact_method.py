"""The ``exact`` registry entry: closed form when the game has one, else full enumeration."""

from __future__ import annotations

import numpy as np

from .enumeration import MAX_ENUMERATION_PLAYERS, all_values, exact_estimate
from .evaluation import BudgetedEvaluator
from ..games.base import Game
from ..indices.hierarchy import OwenIndex
from ..indices.interactions import InteractionIndex, subsets_up_to
from ..indices.moebius import interactions_from_all_values
from ..indices.semivalues import Semivalue
from .._core.arguments import Option
from .owen import exact_owen, owen_exact_cost
from .spec import Estimate, MethodSpec


def run_exact(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, options: dict) -> Estimate:
    """Exact values through :func:`~fairshare.engine.enumeration.exact_estimate`, charged to the budget."""
    before = game.n_evaluations
    if isinstance(sv, OwenIndex):
        return exact_owen(game, sv, evaluator)
    if isinstance(sv, InteractionIndex):
        result = exact_interactions(game, sv, allow_large=options["allow_large"])
    else:
        result = exact_estimate(game, sv, allow_large=options["allow_large"])
    evaluator.charge(game.n_evaluations - before)
    return result


def exact_interactions(game: Game, index: InteractionIndex, allow_large: bool = False) -> Estimate:
    """Exact interaction values ``(p, k)`` of :func:`subsets_up_to` ``(n, order)``: the game's closed form (its
    Moebius terms, a tree's leaves), else the Moebius transform of all ``2^n`` values. ``info["via"]`` says which.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: (S[:, 0] & S[:, 1]).astype(float), n_players=3)
    >>> exact_interactions(g, fs.InteractionIndex("sii", 2)).values[:, 0]
    array([0.5, 0.5, 0. , 1. , 0. , 0. ])
    """
    n = game.n_players
    subsets = subsets_up_to(n, index.order, 1)
    closed = game.exact_interactions(index, subsets) if game.knows_exact_interactions(index) else None
    if closed is not None:
        ends = np.asarray(game(game.empty_and_full()), dtype=float).reshape(2, -1)
        values = np.asarray(closed, dtype=float).reshape(subsets.shape[0], -1)
        return Estimate(values=values, stderr=np.zeros_like(values), empty_value=ends[0], grand_value=ends[1],
                        info={"via": "closed-form"})
    if n > MAX_ENUMERATION_PLAYERS and not allow_large:
        raise ValueError(
            f"exact interaction values of a {n}-player game need 2^{n} = {float(2**n):.3g} evaluations; the limit "
            f"is {MAX_ENUMERATION_PLAYERS} players unless allow_large=True (or estimate them with a budget)")
    V = all_values(game)
    values = interactions_from_all_values(V, n, index, subsets)
    return Estimate(values=values, stderr=np.zeros_like(values), empty_value=V[0], grand_value=V[-1],
                    info={"via": "enumeration"})


SPECS = [MethodSpec(
    name="exact", indices=("any semivalue", "interactions", "owen"),
    description=f"exact values: the game's closed form, or enumeration of all 2^n coalitions "
                f"(n <= {MAX_ENUMERATION_PLAYERS} unless allow_large); Owen values: the coalitions of whole blocks only",
    sampler=None, solver=None, exact=run_exact,
    options=(Option("allow_large", False, f"enumerate games of more than {MAX_ENUMERATION_PLAYERS} players",
                    kind="bool"),),
    min_budget=lambda n, sv, opts: owen_exact_cost(sv.hierarchy) if isinstance(sv, OwenIndex) else 2 ** n,
    needs_budget=False)]
