"""``method="auto"``: the most accurate estimator the budget can afford.

Exact values when the game has a closed form or the budget covers every coalition; otherwise the
registry's preferred estimator for the index, upgraded to its control-variate version (Shapley:
``regression-cv``, Banzhaf: ``kernel-banzhaf-cv``; 2-8x lower error on games whose players interact,
a tie otherwise) when that pays: xgboost is installed, the budget leaves at least 4n evaluations for
the surrogates, and their fits are predicted to cost no more than the model calls themselves or, for
a single explanation, about a second (``fs.explain`` shares that second among its rows). The
surrogates' cost comes from a fixed cost model of their size (so that the same seed gives the
same choice and the same values run after run); the model's cost is measured on its first call
(the empty and the grand coalition) and decides only when the model clearly dominates (ten times
the surrogates). ``fs.explain`` makes one choice for all its rows. The choice and why go into
``Attribution.options["auto"]``.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any


import numpy as np

from ..semivalues import Semivalue, resolve_index
from .evaluation import BudgetedEvaluator
from .registry import get_method, method_names, registered
from .surrogate import CONTROL_MIN_ROWS_PER_PLAYER

__all__ = ["auto_method", "control_variate_choice", "resolve_auto", "with_surrogate_allowance",
           "AUTO_SURROGATE_SECONDS"]

#: seconds of surrogate fitting ``method="auto"`` accepts for one estimate whatever the model costs
AUTO_SURROGATE_SECONDS: contextvars.ContextVar[float] = contextvars.ContextVar("fairshare_auto_surrogate_seconds",
                                                                              default=1.0)
_UPGRADES = {"regression": "regression-cv", "kernel-banzhaf": "kernel-banzhaf-cv"}
_FOLDS = 10
_UNIT_FIT_SECONDS = 0.045
_DOMINANCE = 10         # model calls this many times the surrogates' cost: worth them at any allowance


def auto_method(game: Any, sv: Semivalue, budget: int) -> str:
    """The method ``auto`` runs before the control-variate upgrade."""
    exact_spec = get_method("exact")
    if budget >= exact_spec.budget_needed(game, sv):
        return "exact"
    best, best_priority = None, -np.inf
    for spec in registered():
        for family, priority in spec.default_for.items():
            if spec.supports(sv) and family in spec.indices and priority > best_priority:
                best, best_priority = spec.name, priority
    if best is None:
        raise ValueError(
            f"no estimator for index {sv.name!r} is registered; methods: {method_names()} "
            f"(use method='exact' for small games)"
        )
    return best


def _fit_seconds(rows: int, d: int) -> float:
    """Predicted seconds of the cross-fitted surrogates for ``rows`` coalitions of ``d`` players: ten fits of
    100 trees, each (with its reading) 0.045 s up to 400 x 30 cells on one core of the 2-core machine the
    benchmarks run on, growing with the data beyond that. A fixed cost model, not a timing: the choice must
    not change between two runs with the same seed."""
    return _FOLDS * _UNIT_FIT_SECONDS * max(1.0, rows * d / 12_000.0)


def control_variate_choice(name: str, evaluator: BudgetedEvaluator, budget: int) -> tuple[str, dict | None]:
    """The method ``auto`` runs: ``name`` or its control-variate version, with the reason."""
    upgrade = _UPGRADES.get(name)
    d = evaluator.game.n_players
    if upgrade is None or budget - 2 < CONTROL_MIN_ROWS_PER_PLAYER * d:
        return name, None
    try:
        import xgboost  # noqa: F401
    except ImportError:
        return name, {"chose": name, "why": "xgboost is not installed (the control variate's surrogates need it)"}
    start = time.perf_counter()
    evaluator(evaluator.game.empty_and_full())              # the model's first call: the ends, reused by the run
    model_seconds = (time.perf_counter() - start) / 2.0 * budget
    surrogate_seconds = _fit_seconds(budget, d)
    allowance = AUTO_SURROGATE_SECONDS.get()
    why = (f"surrogate fits ~{surrogate_seconds:.2g} s against an allowance of {allowance:.2g} s and model calls "
           f"~{model_seconds:.2g} s")
    if surrogate_seconds <= allowance:
        return upgrade, {"chose": upgrade, "why": why}
    if model_seconds >= _DOMINANCE * surrogate_seconds:
        return upgrade, {"chose": upgrade, "why": why + f" (the model calls dominate: over {_DOMINANCE}x)"}
    return name, {"chose": name, "why": why + ": the surrogates would cost more than they save"}


def resolve_auto(game: Any, sv: Any, budget: int) -> tuple[str, dict | None]:
    """The method ``auto`` would run on ``game`` at ``budget`` (the model is called once, on the ends)."""
    sv = resolve_index(sv, game.n_players)
    name = auto_method(game, sv, budget)
    if name == "exact":
        return name, None
    return control_variate_choice(name, BudgetedEvaluator(game, None), budget)


def with_surrogate_allowance(seconds: float, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with ``AUTO_SURROGATE_SECONDS`` set to ``seconds`` (``fs.explain``: a second shared by its rows)."""
    token = AUTO_SURROGATE_SECONDS.set(seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        AUTO_SURROGATE_SECONDS.reset(token)
