"""Run a chosen method on a game: drop null players, call the exact method or the driver, put the result together.

:func:`run` is what every door calls after :func:`fairshare.engine.choice.choose`. It owns what is
the same for every method: the random streams split from the seed by the one seed policy
(:mod:`fairshare._core.seeds`: one for the sampler, one for the error bars), the evaluator that never evaluates a coalition twice nor past the budget, null players
(their values are 0 for every semivalue; the rest is estimated on the smaller game), and the honesty
of the error bars: infinite standard errors come with a warning that says which budget would give
finite ones.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from .._core.errors import FairshareWarning
from .._core.heap import settle_heap
from .._core.seeds import SeedLike, generator, streams
from ..results.attribution import Attribution
from ..games.base import Game
from ..games.restricted import RestrictedGame
from ..indices.semivalues import Semivalue
from ..games.function import FunctionGame
from .choice import Choice, choose
from .driver import run as drive
from .evaluation import BudgetedEvaluator, BudgetError
from .spec import Estimate, Setup
from .split import Split, plan_split
from .ridge_path import one_thread
from .stopping import StoppingRule

__all__ = ["run", "execute", "run_parts", "PartsRun", "squeezed", "Executed", "FairshareWarning", "sufficient_budget",
           "infinite_stderr_note"]



@dataclass
class Executed:
    """What :func:`execute` returns: the method's result on the game of the non-null players, and the facts."""

    result: Estimate
    info: dict
    n_evaluations: int
    active: np.ndarray | None          # the players the method ran on (None: all of them)
    scalar: bool                       # the game returns one value per coalition


def execute(game: Game, index: Any, choice: Choice, seed: SeedLike = None, stop: StoppingRule | None = None,
            progress: Any = None) -> Executed:
    """Run the method ``choice`` names on ``game`` for ``index`` (a semivalue or an interaction index): the random
    streams, the evaluator, null players set aside (the method runs on the others).

    Examples
    --------
    >>> import fairshare as fs
    >>> from fairshare.engine.choice import choose
    >>> g = fs.games.AdditiveGame([1.0, 0.0, 2.0])
    >>> ix = fs.InteractionIndex("k-sii", 2)
    >>> execute(g, ix, choose(g, ix, "exact")).result.values.shape     # 3 players and 3 pairs
    (6, 1)
    """
    settle_heap()                         # the estimators' large temporaries from the heap (glibc)
    spec = choice.spec
    n = game.n_players
    sampler_rng, solver_rng = streams(generator(seed), 2)
    target, target_index, active = game, index, None
    nulls = game.null_players() if spec.exact is None and spec.direct is None else None
    if nulls is not None and nulls.any() and not nulls.all():
        active = np.flatnonzero(~nulls)
        target = RestrictedGame(game, active)
        target_index = index.reduced(n, int(nulls.sum()), active=active)
        need = spec.budget_needed(target, target_index, choice.options)
        if choice.budget is not None and choice.budget < need:
            raise BudgetError(f"budget={choice.budget} is too small for method {choice.method!r} with "
                              f"{target.n_players} non-null players; it needs at least {need} evaluations")
    evaluator = BudgetedEvaluator(target, choice.budget)
    if nulls is not None and nulls.all():
        ends = evaluator(game.empty_and_full())
        result = Estimate(values=np.zeros((0, ends.shape[1])), stderr=np.zeros((0, ends.shape[1])),
                          empty_value=ends[0], grand_value=ends[1])
        active = np.zeros(0, dtype=np.int64)
    elif spec.exact is not None:
        result = spec.exact(target, target_index, evaluator, choice.options)
    elif spec.direct is not None:
        result = spec.direct(target, target_index, evaluator, dict(choice.options), sampler_rng)
    else:
        device = getattr(target, "device", None) if getattr(target, "on_device", False) else None
        setup = Setup(target.n_players, target_index, choice.budget, dict(choice.options), sampler_rng, solver_rng,
                      game=target, device=device, early_stop=bool(stop is not None and stop.needs_rounds))
        result = drive(spec, setup, evaluator, stop, progress=progress)
    info = {"choice": choice.as_info(), **result.info}
    if nulls is not None and nulls.any():
        info["null_players"] = int(nulls.sum())
    return Executed(result, info, evaluator.n_spent, active, evaluator.scalar)


def run(game: Game, sv: Semivalue, choice: Choice, seed: SeedLike = None, stop: StoppingRule | None = None,
        progress: Any = None) -> Attribution:
    """The values of ``game`` for ``sv`` with the method ``choice`` names; ``Attribution.info`` says what happened.

    Examples
    --------
    >>> import fairshare as fs
    >>> from fairshare.engine.choice import choose
    >>> g = fs.games.FunctionGame(lambda S: S.sum(axis=1) ** 1.5, n_players=5)
    >>> sv = fs.Semivalue.shapley()
    >>> run(g, sv, choose(g, sv, budget=32)).info["choice"]["method"]
    'exact'
    """
    split = plan_split(game, sv, choice, stop, progress)
    if split is not None:
        return _run_split(game, sv, choice, split, seed)
    done = execute(game, sv, choice, seed, stop, progress)
    result, info, active = done.result, done.info, done.active
    n = game.n_players
    values, stderr = result.values, result.stderr
    if active is not None:
        values = np.zeros((n, result.values.shape[1]))
        values[active] = result.values
        if stderr is not None:
            stderr = np.zeros_like(values)
            stderr[active] = result.stderr
    if stderr is not None and not np.all(np.isfinite(stderr)):        # the note's budget: for the players run on
        ran = sv if active is None or type(sv) is not Semivalue else sv.reduced(n, n - active.size, active=active)
        info["stderr"] = infinite_stderr_note(choice, ran, n if active is None else active.size, info.get("stderr"))
        warnings.warn(info["stderr"], FairshareWarning, stacklevel=3)
    return _attribution(game, sv, choice.method, dict(choice.options), info, done.n_evaluations, done.scalar,
                        values, stderr, result.empty_value, result.grand_value)


def _attribution(game: Game, sv: Semivalue, method: str, options: dict, info: dict, n_evaluations: int,
                 squeeze: bool, values: Any, stderr: Any, empty: Any, grand: Any) -> Attribution:
    """The result: arrays of one output squeezed to the game's scalar shape."""
    def out(a: np.ndarray | None) -> Any:
        return squeezed(a, squeeze)

    return Attribution(values=out(values), stderr=out(stderr), index=sv.name, method=method, options=options,
                       info=info, n_evaluations=n_evaluations, empty_value=out(empty), grand_value=out(grand),
                       player_names=list(game.player_names))


def squeezed(a: Any, scalar: bool) -> Any:
    """``a`` as floats, its last axis (the outputs) dropped where the game is scalar, a 0-d result as a float; None
    stays None.

    Examples
    --------
    >>> squeezed(np.ones((3, 1)), True).shape, squeezed(np.ones(1), True), squeezed(None, True)
    ((3,), 1.0, None)
    """
    if a is None:
        return None
    a = np.asarray(a, dtype=float)
    if scalar:
        a = a[..., 0]
    return float(a) if a.ndim == 0 else a


def _run_split(game: Game, sv: Semivalue, choice: Choice, split: Split, seed: SeedLike) -> Attribution:
    """``auto`` on each part of a split game (:mod:`fairshare.engine.split`) on the players it has, the values
    averaged, independent parts' standard errors added in quadrature."""
    n = game.n_players

    def scatter(active: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.zeros((n, values.shape[1]))
        out[active] = values
        return out

    done = run_parts(split, sv, choice, seed, scatter, n)
    return _attribution(game, sv, done.method, {}, done.info, done.n_evaluations, done.scalar, done.values,
                        done.stderr, done.empty, done.grand)


@dataclass
class PartsRun:
    """The mean of a split game's parts: values and standard errors over the index's rows, the ends, evaluations
    (model rows / parts, rounded up), the method named for it, its ``info`` and whether the game is scalar."""

    values: np.ndarray
    stderr: np.ndarray | None
    empty: np.ndarray
    grand: np.ndarray
    n_evaluations: int
    method: str
    info: dict
    scalar: bool


def run_parts(split: Split, index: Any, choice: Choice, seed: SeedLike,
              scatter: Callable[[np.ndarray, np.ndarray], np.ndarray], rows: int) -> PartsRun:
    """``auto`` on each part on its non-null players (``index`` reduced to them), each result put on the game's
    ``rows`` (its players, or its subsets for an interaction index) by ``scatter(active, values)``, averaged; the
    parts' standard errors added in quadrature (independent streams split from ``seed``)."""
    B = len(split.parts)
    total, variance, ends, spent, methods, scalar = 0.0, 0.0, 0.0, 0, {}, True
    no_stderr = False
    with one_thread() if split.cheap else contextlib.nullcontext():
        for part, active, budget, rng in zip(split.parts, split.active, split.budgets, streams(generator(seed), B)):
            phi, se, ends_b, used, method, scalar = _part_values(part, active, int(budget), rng, index,
                                                                 split.allowance, scatter, rows)
            spent += used
            if method is not None:
                methods[method] = methods.get(method, 0) + 1
            total, ends = total + phi, ends + ends_b
            no_stderr |= se is None
            variance = 0.0 if no_stderr else variance + se ** 2
    estimated = {m: c for m, c in methods.items() if m != "exact"}      # "exact" only where every part is
    method = max(estimated, key=estimated.get) if estimated else "exact"
    n = split.parts[0].n_players
    info = {"choice": {"method": method, "why": split.reason(n, int(choice.budget), methods)},
            "split": {"parts": B, "exact_parts": B - split.estimated, "methods": methods, "model_rows": spent,
                      "mean_players": float(np.mean([a.size for a in split.active]))}}
    stderr = None if no_stderr else np.sqrt(variance) / B
    if stderr is not None and not np.all(np.isfinite(stderr)):
        info["stderr"] = (f"some standard errors are infinite: a part of {max(a.size for a in split.active)} players "
                          f"got too few of the budget's evaluations to estimate its error; raise the budget")
        warnings.warn(info["stderr"], FairshareWarning, stacklevel=4)
    return PartsRun(total / B, stderr, ends[0] / B, ends[1] / B, -(-spent // B), method, info, scalar)


def _part_values(part: Game, active: np.ndarray, budget: int, rng: Any, index: Any, allowance: float,
                 scatter: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 rows: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, int, str | None, bool]:
    """One part's values over the game's ``rows`` (0 where a null player is involved), standard errors, ends
    ``(2, k)``, evaluations, the method ``auto`` ran on its players (None: every player null) and whether it is
    scalar."""
    n = part.n_players
    if active.size == 0:              # x equals this row: values 0, both ends the same model row, read once
        row = np.asarray(BudgetedEvaluator(part, 1)(part.empty_and_full()[1:]), dtype=float).reshape(1, -1)
        zeros = np.zeros((rows, row.shape[1]))
        return zeros, zeros.copy(), np.repeat(row, 2, axis=0), 1, None, part.n_outputs == 0
    target = part if active.size == n else RestrictedGame(part, active)
    reduced = index.reduced(n, n - active.size, active=active)
    ran = choose(target, reduced, "auto", budget, allowance=allowance)
    done = execute(target, reduced, ran, rng)
    r = done.result
    phi = scatter(active, r.values)
    se = None if r.stderr is None else scatter(active, r.stderr)
    ends = np.stack([np.asarray(r.empty_value, float).reshape(-1), np.asarray(r.grand_value, float).reshape(-1)])
    return phi, se, ends, done.n_evaluations, ran.method, done.scalar


def infinite_stderr_note(choice: Choice, sv: Any, n: int, detail: str | None) -> str:
    """The warning for infinite standard errors: which budget would give finite ones (``sv``: a semivalue or an
    interaction index; ``n``: the players the method ran on)."""
    declared = {o.name for o in choice.spec.options}
    simple = tuple(sorted((k, v) for k, v in choice.options.items()
                          if k in declared and isinstance(v, (bool, int, float, str))))
    method = "auto" if choice.auto else choice.method
    need = sufficient_budget(method, sv, n, int(choice.budget or 0), () if choice.auto else simple)
    head = (f"some standard errors are infinite: budget={choice.budget} is too small for {choice.method!r} to "
            f"estimate its error on {n} players" + (f" ({detail})" if detail else ""))
    if need is None:
        return head + "; raise the budget"
    if n <= 62 and need >= (1 << n):
        return head + f"; a budget of {1 << n} covers every coalition (exact values, zero error)"
    return head + f"; a budget of {need} gives finite standard errors"


#: the most coalition cells (budget x players) the probe of :func:`sufficient_budget` evaluates
_PROBE_CELLS = 1 << 24


@lru_cache(maxsize=64)
def sufficient_budget(method: str, sv: Any, n: int, budget: int, options: tuple = ()) -> int | None:
    """The smallest of ``budget * 2^k`` (k = 1..10) at which ``method`` (a registry key, or ``"auto"``: what auto
    chooses there; with ``options``, as ``(name, value)`` pairs) reports finite standard errors on a non-additive game of ``n`` players (whether its error bars are
    finite depends on the design, not on the game's values); ``2^n`` once that covers every coalition; None if
    nothing up to ``1024 budget`` does.

    Examples
    --------
    >>> import fairshare as fs
    >>> sufficient_budget("permutation", fs.Semivalue.shapley(), 10, 10)
    20
    """
    weights = np.linspace(0.5, 2.0, n)
    probe = FunctionGame(lambda S: np.sqrt(S @ weights) + (S[:, 0] & S[:, -1]), n_players=n)
    for k in range(1, 11):
        b = budget * (1 << k)
        if n <= 62 and b >= (1 << n):
            return 1 << n
        if b * n > _PROBE_CELLS:                   # the probe itself would hold b x n cells: say "raise the budget"
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FairshareWarning)
                stderr = execute(probe, sv, choose(probe, sv, method, b, options=dict(options)), seed=0).result.stderr
        except (ValueError, TypeError):
            return None
        if stderr is not None and np.all(np.isfinite(stderr)):
            return b
    return None
