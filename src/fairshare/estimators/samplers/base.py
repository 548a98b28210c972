"""What every sampler shares: its random stream, how many evaluations a unit can cost, its round plan.

A sampler proposes the next batch of coalitions (or permutations) for an allowance of
evaluations; it never calls the game. An adaptive sampler may read the values seen so far from
the :class:`History` the driver passes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Sampler", "History", "doubling"]


@dataclass
class History:
    """The batches evaluated so far and their values (read-only for samplers), and the current estimate."""

    batches: list = field(default_factory=list)
    values: list = field(default_factory=list)
    estimate: Any = None            # (values, stderr) after the last round, when the driver computed it
    empty_value: np.ndarray | None = None
    grand_value: np.ndarray | None = None


def doubling(total: int, first: int) -> list[int]:
    """Rounds that spend ``total`` evaluations: ``first``, then each round as much as all before it.

    Examples
    --------
    >>> doubling(100, 10)
    [10, 10, 20, 40, 20]
    """
    first = max(1, min(total, first))
    out, spent = [first], first
    while spent < total:
        step = min(spent, total - spent)
        out.append(step)
        spent += step
    return out


class Sampler:
    """Base class: ``propose(allowance, history)`` returns a batch costing at most ``allowance`` new
    evaluations, or None when it has nothing more to propose."""

    #: most evaluations one sampling unit (a coalition, a pair, a permutation) can cost
    unit_cost: int = 1
    #: a design drawn as a whole each round (without replacement); otherwise the driver keeps proposing,
    #: topping a round up while repeats (which cost nothing) leave its allowance unspent
    one_draw_per_round: bool = False

    def __init__(self, rng: np.random.Generator, n_players: int) -> None:
        self.rng = rng
        self.d = n_players

    def schedule(self, total: int, rounds: bool) -> list[int]:
        """Evaluations per round: one round, or doubling rounds when the stopping rule looks between rounds."""
        return doubling(total, max(2 * self.d + 2, total // 64)) if rounds else [total]

    def propose(self, allowance: int, history: History) -> Any:
        raise NotImplementedError
