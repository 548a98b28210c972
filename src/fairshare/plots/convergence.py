"""Estimated relative error against the budget for one game."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..doors.estimate import estimate
from .common import POS, new_axes

__all__ = ["convergence"]


def convergence(game: Any, index: Any = "shapley", method: str = "auto", budgets: Any = None, seed: int = 0,
                ax: Any = None, **options: Any) -> Any:
    """Estimated relative error ``||stderr|| / ||values||`` against the budget for one game: how many
    evaluations an explanation of the wanted accuracy needs.

    Examples
    --------
    >>> import fairshare as fs
    >>> game = fs.games.FunctionGame(fs.games.SOUMGame.random(10, seed=0), n_players=10)
    >>> ax = convergence(game, budgets=[40, 80, 160])
    """
    n = game.n_players
    budgets = list(budgets) if budgets is not None else [int(f * n) for f in (4, 8, 16, 32, 64)]
    errors = []
    for b in budgets:
        phi = estimate(game, index, method=method, budget=b, seed=seed, **options)
        norm = float(np.linalg.norm(phi.values))
        errors.append(float(np.linalg.norm(phi.stderr)) / norm if phi.stderr is not None and norm > 0 else np.nan)
    ax = new_axes(ax, 3.5)
    ax.plot(budgets, errors, marker="o", color=POS)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("budget (game evaluations)")
    ax.set_ylabel("estimated relative error")
    ax.grid(alpha=0.3)
    ax.figure.tight_layout()
    return ax
