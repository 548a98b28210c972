"""Stopping rules: when an estimate has spent enough. They compose with ``|`` (either) and ``&`` (both).

A run spends its budget in rounds when its rule needs to look at the estimate (standard errors,
rankings, time): each round doubles what was spent, and after each the rule sees the current
values and standard errors. The budget itself always stops a run.

>>> import fairshare as fs
>>> from fairshare.stopping import RelativeError, MaxTime
>>> g = fs.games.FunctionGame(fs.games.SOUMGame.random(14, n_terms=30, seed=0), n_players=14)
>>> phi = fs.estimate(g, "shapley", method="regression", budget=16000, seed=0, stop=RelativeError(0.05) | MaxTime(30))
>>> phi.info["stopped"]["reason"].startswith("RelativeError")
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.arguments import check_int, check_positive_float

__all__ = ["StoppingRule", "RelativeError", "StandardError", "MaxEvaluations", "MaxTime", "RankStable", "RunState",
           "as_rule"]


@dataclass
class RunState:
    """What a rule sees after a round."""

    values: np.ndarray | None           # (n, k)
    stderr: np.ndarray | None
    n_evaluations: int
    budget: int
    round: int
    started: float = field(default_factory=time.perf_counter)
    rankings: list = field(default_factory=list)          # top-k orders of earlier rounds (RankStable)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started


class StoppingRule:
    """A condition on a run; ``rule(state)`` returns why it holds, or None."""

    #: whether the rule needs the estimate between rounds (then the budget is spent in doubling rounds)
    needs_rounds = True
    #: whether the rule needs standard errors
    needs_stderr = False

    def __call__(self, state: RunState) -> str | None:
        raise NotImplementedError

    def evaluation_cap(self) -> int | None:
        """Most evaluations the rule allows (None: no cap of its own)."""
        return None

    def __or__(self, other: StoppingRule) -> StoppingRule:
        return _Either(self, as_rule(other))

    def __and__(self, other: StoppingRule) -> StoppingRule:
        return _Both(self, as_rule(other))


class _Combined(StoppingRule):
    """Two rules together (``|`` or ``&``): rounds and standard errors if either needs them."""

    symbol = ""

    def __init__(self, a: StoppingRule, b: StoppingRule) -> None:
        self.a, self.b = a, b
        self.needs_rounds = a.needs_rounds or b.needs_rounds
        self.needs_stderr = a.needs_stderr or b.needs_stderr

    def caps(self) -> list[int]:
        return [c for c in (self.a.evaluation_cap(), self.b.evaluation_cap()) if c is not None]

    def __repr__(self) -> str:
        return f"({self.a!r} {self.symbol} {self.b!r})"


class _Either(_Combined):
    symbol = "|"

    def __call__(self, state: RunState) -> str | None:
        return self.a(state) or self.b(state)

    def evaluation_cap(self) -> int | None:
        return min(self.caps(), default=None)


class _Both(_Combined):
    symbol = "&"

    def __call__(self, state: RunState) -> str | None:
        ra, rb = self.a(state), self.b(state)
        return f"{ra} and {rb}" if ra and rb else None

    def evaluation_cap(self) -> int | None:
        caps = self.caps()
        return max(caps) if len(caps) == 2 else None


class RelativeError(StoppingRule):
    """Stop once ``||stderr|| / ||values|| <= tol`` (the estimated relative error).

    Examples
    --------
    >>> rule = RelativeError(0.1)
    >>> rule(RunState(np.array([[1.0], [1.0]]), np.array([[0.05], [0.05]]), 100, 1000, 0)) is not None
    True
    """

    needs_stderr = True

    def __init__(self, tol: float) -> None:
        self.tol = check_positive_float(tol, "tol")

    def __call__(self, state: RunState) -> str | None:
        if state.values is None or state.stderr is None:
            return None
        norm = float(np.linalg.norm(state.values))
        err = float(np.linalg.norm(state.stderr))
        if norm > 0 and np.isfinite(err) and err / norm <= self.tol:
            return f"RelativeError({self.tol:g}): estimated relative error {err / norm:.3g}"
        return None

    def __repr__(self) -> str:
        return f"RelativeError({self.tol:g})"


class StandardError(StoppingRule):
    """Stop once every standard error is at most ``abs_tol``.

    Examples
    --------
    >>> StandardError(0.1)(RunState(np.ones((2, 1)), np.full((2, 1), 0.2), 10, 100, 0)) is None
    True
    """

    needs_stderr = True

    def __init__(self, abs_tol: float) -> None:
        self.abs_tol = check_positive_float(abs_tol, "abs_tol")

    def __call__(self, state: RunState) -> str | None:
        if state.stderr is None:
            return None
        worst = float(np.max(state.stderr))
        if np.isfinite(worst) and worst <= self.abs_tol:
            return f"StandardError({self.abs_tol:g}): largest standard error {worst:.3g}"
        return None

    def __repr__(self) -> str:
        return f"StandardError({self.abs_tol:g})"


class MaxEvaluations(StoppingRule):
    """Stop after ``n`` game evaluations (a cap below the budget).

    Examples
    --------
    >>> MaxEvaluations(50).evaluation_cap()
    50
    """

    needs_rounds = False

    def __init__(self, n: int) -> None:
        self.n = check_int(n, "n", minimum=1)

    def __call__(self, state: RunState) -> str | None:
        return f"MaxEvaluations({self.n})" if state.n_evaluations >= self.n else None

    def evaluation_cap(self) -> int | None:
        return self.n

    def __repr__(self) -> str:
        return f"MaxEvaluations({self.n})"


class MaxTime(StoppingRule):
    """Stop after the round that passes ``seconds`` of wall time.

    Examples
    --------
    >>> MaxTime(0.5).seconds
    0.5
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = check_positive_float(seconds, "seconds")

    def __call__(self, state: RunState) -> str | None:
        return f"MaxTime({self.seconds:g}): {state.elapsed:.3g} s" if state.elapsed >= self.seconds else None

    def __repr__(self) -> str:
        return f"MaxTime({self.seconds:g})"


class RankStable(StoppingRule):
    """Stop once the order of the ``k`` players with the largest ``|value|`` (first output) has not changed
    over ``rounds`` consecutive rounds.

    Examples
    --------
    >>> rule = RankStable(2, rounds=2)
    >>> s = RunState(np.array([[3.0], [1.0], [2.0]]), None, 10, 100, 0)
    >>> [rule(s) is None for _ in range(3)]
    [True, True, False]
    """

    def __init__(self, k: int, rounds: int = 2) -> None:
        self.k = check_int(k, "k", minimum=1)
        self.rounds = check_int(rounds, "rounds", minimum=1)

    def __call__(self, state: RunState) -> str | None:
        if state.values is None:
            return None
        v = np.asarray(state.values)
        first = v[:, 0] if v.ndim == 2 else v
        top = tuple(np.argsort(-np.abs(first), kind="stable")[: self.k].tolist())
        state.rankings.append(top)
        recent = state.rankings[-(self.rounds + 1):]
        if len(recent) == self.rounds + 1 and all(r == top for r in recent):
            return f"RankStable({self.k}, {self.rounds}): top {self.k} unchanged over {self.rounds} rounds"
        return None

    def __repr__(self) -> str:
        return f"RankStable({self.k}, rounds={self.rounds})"


def as_rule(stop: Any, tol: float | None = None) -> StoppingRule | None:
    """A stopping rule from ``stop`` (a rule or None) and the ``tol`` shorthand (``RelativeError(tol)``).

    Examples
    --------
    >>> as_rule(None, tol=0.05)
    RelativeError(0.05)
    """
    rule = None
    if stop is not None:
        if not isinstance(stop, StoppingRule):
            raise TypeError(f"stop must be a fairshare.stopping rule (e.g. RelativeError(0.05) | MaxTime(60)), "
                            f"got {type(stop).__name__}")
        rule = stop
    if tol is not None:
        rel = RelativeError(tol)
        rule = rel if rule is None else rule | rel
    return rule
