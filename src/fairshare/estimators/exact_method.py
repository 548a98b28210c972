"""The ``exact`` registry entry: closed form when the game has one, else full enumeration."""

from __future__ import annotations

import numpy as np

from ..evaluation import BudgetedEvaluator
from ..exact import MAX_ENUMERATION_PLAYERS, exact
from ..game import Game
from ..registry import Estimate, MethodSpec, register
from ..semivalues import Semivalue


def _min_budget(game: Game, sv: Semivalue) -> int:
    return 2 if game.knows_exact_values(sv) else 2 ** game.n_players


def run_exact(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, rng: np.random.Generator,
              allow_large: bool = False) -> Estimate:
    """Exact values through :func:`fairshare.exact`, charged to the evaluator's budget."""
    result = exact(game, sv, allow_large=allow_large)
    evaluator.charge(result.n_evaluations)
    values = np.asarray(result.values, dtype=float)
    values = values[:, None] if values.ndim == 1 else values

    def col(v: object) -> np.ndarray:
        return np.atleast_1d(np.asarray(v, dtype=float))

    return Estimate(values=values, stderr=np.zeros_like(values), empty_value=col(result.empty_value),
                    grand_value=col(result.grand_value), info=dict(result.options))


register(MethodSpec(
    name="exact",
    run=run_exact,
    indices=("any semivalue",),
    description=f"exact values: the game's closed form, or enumeration of all 2^n coalitions "
                f"(n <= {MAX_ENUMERATION_PLAYERS} unless allow_large)",
    options={"allow_large": False},
    min_budget=_min_budget,
))
