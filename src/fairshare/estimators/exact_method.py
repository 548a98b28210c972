"""The ``exact`` registry entry: closed form when the game has one, else full enumeration."""

from __future__ import annotations

import numpy as np

from ..evaluation import BudgetedEvaluator
from ..exact import MAX_ENUMERATION_PLAYERS, exact
from ..game import Game
from ..semivalues import Semivalue
from .spec import Estimate, MethodSpec, Option


def run_exact(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, options: dict) -> Estimate:
    """Exact values through :func:`fairshare.exact`, charged to the evaluator's budget."""
    result = exact(game, sv, allow_large=options["allow_large"])
    evaluator.charge(result.n_evaluations)
    values = np.asarray(result.values, dtype=float)
    values = values[:, None] if values.ndim == 1 else values

    def col(v: object) -> np.ndarray:
        return np.atleast_1d(np.asarray(v, dtype=float))

    return Estimate(values=values, stderr=np.zeros_like(values), empty_value=col(result.empty_value),
                    grand_value=col(result.grand_value), info=dict(result.options))


SPECS = [MethodSpec(
    name="exact", indices=("any semivalue",),
    description=f"exact values: the game's closed form, or enumeration of all 2^n coalitions "
                f"(n <= {MAX_ENUMERATION_PLAYERS} unless allow_large)",
    sampler=None, solver=None, exact=run_exact,
    options=(Option("allow_large", False, f"enumerate games of more than {MAX_ENUMERATION_PLAYERS} players",
                    kind="bool"),),
    min_budget=lambda n, sv, opts: 2 ** n)]
