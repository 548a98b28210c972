"""What the driver talks to: a :class:`Sampler` proposes :class:`Batch` es, a :class:`Solver` absorbs their values.

Everything the driver reads of them is declared here (it never probes with ``getattr``):

- a **sampler** proposes the next batch of coalitions (or permutations) for an allowance of evaluations
  from its own random stream; it never calls the game. An adaptive sampler may read the values seen so
  far from the :class:`History` the driver passes it. Subclass :class:`Sampler` for its defaults.
- a **batch** holds the coalitions to evaluate (numpy, or a torch tensor on a device), how many sampling
  draws it took and whether its rows are evaluated afresh; anything else in it is for its solver.
- a **solver** starts from ``v(empty)`` and ``v(N)``, absorbs evaluated batches and gives values, standard
  errors and facts about the run at any time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Sampler", "Batch", "Solver", "History", "doubling"]


@runtime_checkable
class Batch(Protocol):
    """What a sampler proposes: ``coalitions`` (m, n) to evaluate, ``n_draws`` sampling draws it took (the
    driver stops a run that draws four times its budget), and ``fresh``: evaluate every row anew, even a
    coalition seen before (classic Monte Carlo) instead of answering repeats from memory."""

    coalitions: Any
    n_draws: int
    fresh: bool


@runtime_checkable
class Solver(Protocol):
    """Turns evaluated batches into values ``(n, k)``, standard errors ``(n, k)`` (or None) and facts."""

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        """``v(empty)`` and ``v(N)``, ``(k,)`` each, before any batch."""

    def absorb(self, batch: Batch, values: np.ndarray) -> None:
        """The values ``(m, k)`` of ``batch.coalitions``."""

    def result(self) -> tuple[np.ndarray, np.ndarray | None, dict]:
        """The estimate so far: values, standard errors and facts for the result's ``info``."""


@dataclass
class History:
    """The batches evaluated so far and their values (read-only for samplers), and the current estimate."""

    batches: list = field(default_factory=list)
    values: list = field(default_factory=list)
    estimate: Any = None            # (values, stderr) after the last round, when the driver computed it
    empty_value: np.ndarray | None = None
    grand_value: np.ndarray | None = None
    #: whether the round under way is the last the budget plans (a sampler may keep what does not fill a round's
    #: remainder, such as a partial walk, for the last: what an earlier round leaves unspent goes to the next)
    last_round: bool = True


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
    """Base of every sampler: ``propose(allowance, history)`` returns a :class:`Batch` costing at most
    ``allowance`` new evaluations, or None when it has nothing more to propose."""

    #: most evaluations one sampling unit (a coalition, a pair, a permutation) can cost
    unit_cost: int = 1
    #: a design drawn as a whole each round (without replacement); otherwise the driver keeps proposing,
    #: topping a round up while repeats (which cost nothing) leave its allowance unspent
    one_draw_per_round: bool = False
    #: proposals in a row that find nothing new (all repeats) after which the driver ends a round
    max_stale: int = 3
    #: whether a progress callback makes the driver spend the budget in rounds (False: a design that must be
    #: drawn in one round to stay accurate; its error comes at the end)
    rounds_for_progress: bool = True
    #: a torch device the sampler draws its coalitions on (the ends of the game go there too), or None
    device: Any = None

    def __init__(self, rng: np.random.Generator, n_players: int) -> None:
        self.rng = rng
        self.d = n_players
        #: the sampler proposed every coalition it can (the estimate is exact); it proposes nothing more
        self.enumerated = False

    def schedule(self, total: int, rounds: bool) -> list[int]:
        """Evaluations per round: one round, or doubling rounds when the stopping rule looks between rounds."""
        return doubling(total, max(2 * self.d + 2, total // 64)) if rounds else [total]

    def propose(self, allowance: int, history: History) -> Any:
        raise NotImplementedError
