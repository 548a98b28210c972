"""The ``exact`` registry entry: closed form when the game has one, else full enumeration."""

from __future__ import annotations

from .enumeration import MAX_ENUMERATION_PLAYERS, exact_estimate
from .evaluation import BudgetedEvaluator
from ..game import Game
from ..semivalues import Semivalue
from ..arguments import Option
from .spec import Estimate, MethodSpec


def run_exact(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, options: dict) -> Estimate:
    """Exact values through :func:`~fairshare.estimation.enumeration.exact_estimate`, charged to the budget."""
    before = game.n_evaluations
    result = exact_estimate(game, sv, allow_large=options["allow_large"])
    evaluator.charge(game.n_evaluations - before)
    return result


SPECS = [MethodSpec(
    name="exact", indices=("any semivalue",),
    description=f"exact values: the game's closed form, or enumeration of all 2^n coalitions "
                f"(n <= {MAX_ENUMERATION_PLAYERS} unless allow_large)",
    sampler=None, solver=None, exact=run_exact,
    options=(Option("allow_large", False, f"enumerate games of more than {MAX_ENUMERATION_PLAYERS} players",
                    kind="bool"),),
    min_budget=lambda n, sv, opts: 2 ** n, needs_budget=False)]
