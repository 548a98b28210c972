"""The one method choice: what runs for a game, an index, a method name (or ``"auto"``), a budget and a stopping rule.

Every door (``fs.estimate``, ``fs.explain`` for tables, trees and torch inputs, ``fs.value_data``, the CLI)
asks :func:`choose` once, before any model call, and runs what it answers. The answer depends only on
facts that do not change between runs, so the same seed gives the same values in every call, process,
thread and Dask worker: the game's size, kind and closed forms, its declared cost per evaluation
(``Game.cost()``, a fixed cost model), the budget (capped by ``MaxEvaluations``), the index, the
options given and whether xgboost is installed. Never a clock.

``auto``:

1. exact values when the game has a closed form for the index, or the budget covers all ``2^n`` coalitions, or
   the game reads every evaluation from a table of all ``2^n`` coalitions (``game.table_seconds()`` is not None:
   a tree game's probability or log loss on at most 16 features): the table is built once whichever method runs,
   so exact values cost the table plus one pass over its cells, and an estimate costs the same table plus its
   sampling and solve and carries errors. The table is affordable wherever the game builds it, whatever the
   budget (measured per background row: the table 0.05-0.2 ms at 12 features and 1-6 ms at 16, the default
   budget's ~2,070 hybrid rows through the trees 1-5 ms); its ``2^n`` reads are counted as evaluations, none of
   them a model call, and the choice's reason gives the table's and the budget's predicted costs;
2. otherwise the registry's preferred method for the index and the game's kind that the budget affords (Shapley:
   ``surrogate-regression`` from ``2n + 2`` evaluations, the paired regression with its Walsh surrogate (plain
   regression bit for bit where it does not pay), one or more permutations below; Banzhaf values and, from ``2 + n
   + C(n, 2)`` evaluations, beta and other semivalues: ``surrogate-regression`` too (below, their plain
   regressions; weighted Banzhaf and beta values fitted under product measures); data valuation: truncated Monte
   Carlo for Shapley values, Kernel Banzhaf, the plain semivalue regression). The
   surrogate regression gives way to the plain one where its surrogate's predicted fit (a fixed cost model in
   ``predicted_walsh_seconds``) is over ``WALSH_ALLOWANCE`` seconds and over ``SURROGATE_SHARE`` of the game's
   declared evaluations (a tiny CNN at 100,000 coalitions; never at 100n on tables of up to 60 features);
3. upgraded to its tree control variate (``regression-cv``, ``kernel-banzhaf-cv``) when the budget leaves
   4n evaluations for the surrogates but covers at most 1/8 of all coalitions (above that, plain regression
   drawn without replacement is nearly exact), and the surrogates' fits are predicted to cost at most 30% of
   the game's own evaluations: then ``auto`` costs at most 1.3x plain regression, and where the game dominates the run the
   control variate's accuracy comes nearly free (measured 2-17x lower error on interacting games, a tie on
   near-additive ones; ten surrogate fits take 0.25-1.5 s, more than most models' calls for one row).

4. a game that is the mean of parts (a model over ``B`` background rows, marginal imputation: one part per row,
   :meth:`~fairshare.games.Game.parts`) is split after this choice, row by row, where its parts keep at most
   ``SPLIT_SHARE`` of the players on average (:mod:`fairshare.engine.split`): each part gets ``auto``'s choice
   on its own players and its share of the same model rows (a part's ``2^d`` coalitions covered: exact), with the
   Walsh surrogate's allowance shared among the parts, and only where what the parts add (their fits and
   model calls) is within that allowance or ``SURROGATE_SHARE`` of the model calls; the row's ``info["split"]``
   says what ran.

An explicit method runs as asked; if the budget is below what it needs but covers every coalition, exact
values are computed instead and the result says so. The choice and the reason go into the result's
``info["choice"]``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

from ..games.base import Game
from ..indices.hierarchy import OwenIndex
from ..indices.interactions import InteractionIndex
from ..indices.semivalues import Semivalue
from .evaluation import BudgetError
from .exact import MAX_ENUMERATION_PLAYERS, covers_all, owen_cost_lower_bound
from .registry import get_method, registered
from .spec import MethodSpec, knows_closed_form
from .stopping import StoppingRule
from .surrogate import CONTROL_MIN_ROWS_PER_PLAYER, predicted_fit_seconds, predicted_walsh_seconds

__all__ = ["Choice", "choose", "SURROGATE_SHARE", "COVERAGE_SHARE", "WALSH_ALLOWANCE", "NO_TREE_KINDS"]

#: the most the control variate's surrogate fits may cost, as a share of the game's evaluations
SURROGATE_SHARE = 0.3
#: ``surrogate-regression``'s Walsh surrogate is auto's wherever its predicted seconds are at most this, else only where
#: they are at most ``SURROGATE_SHARE`` of the game's declared evaluations (a tiny CNN of 64 patches at 100,000
#: coalitions: 0.8-1 s on 1.5-6 s of forward passes; 20-50 players at 100n: 0.04-0.08 s)
WALSH_ALLOWANCE = 0.25
#: the control variate only where the budget is at most this fraction (1 / share) of all coalitions: measured on
#: an RBF support-vector game of 8 features at 200 evaluations (78% of them), plain regression drawn without
#: replacement had 0.6x the error of the control variate, which needs draws with replacement
COVERAGE_SHARE = 8
#: the kinds of game that never take the tree control variate (``Game.kind``)
NO_TREE_KINDS = ("torch",)


@dataclass(frozen=True)
class Choice:
    """What runs: a registry method, its options (checked, defaults filled in), the evaluations it may spend and why.

    Attributes
    ----------
    method : registry key
    options : the method's options as it runs them (the user's, checked, and the defaults)
    budget : most evaluations (the budget, or a smaller ``MaxEvaluations`` cap); None: the method's own need; ``2^n``
        where exact values read a game's table of every coalition
    reason : why this method, in words (``info["choice"]["why"]`` of the result)
    auto : whether ``auto`` chose it (then what a larger budget would do is ``auto``'s choice there too)
    """

    method: str
    options: dict = field(default_factory=dict)
    budget: int | None = None
    reason: str = ""
    auto: bool = False

    @property
    def spec(self) -> MethodSpec:
        return get_method(self.method)

    def as_info(self) -> dict:
        """``{"method": ..., "why": ...}`` for a result's ``info``."""
        return {"method": self.method, "why": self.reason}


def _cap(budget: int | None, stop: StoppingRule | None) -> int | None:
    cap = None if stop is None else stop.evaluation_cap()
    if budget is None:
        return cap
    return budget if cap is None else min(budget, cap)


def _exact(game: Game, sv: Semivalue, cap: int | None, reason: str, options: dict | None = None,
           auto: bool = False) -> Choice:
    spec = get_method("exact")
    opts = spec.resolve(options or {}, game.n_players, sv)
    if game.n_players > MAX_ENUMERATION_PLAYERS and not knows_closed_form(game, sv) and not isinstance(sv, OwenIndex):
        opts["allow_large"] = True                 # the budget pays for all 2^n coalitions: the user asked for it
    return Choice("exact", opts, cap, reason, auto)


def _active(game: Game) -> int:
    """Players that enter an estimate: the game's known null players are set aside (their values are 0)."""
    nulls = game.null_players()
    if nulls is None or not nulls.any() or nulls.all():
        return game.n_players
    return int(game.n_players - nulls.sum())


def _need(spec: MethodSpec, game: Game, sv: Semivalue, opts: dict, active: int) -> int:
    """The smallest budget ``spec`` runs at on ``game`` (its non-null players count for sampling methods, under the
    semivalue of that smaller game: fixed weights for all ``n`` players are summed down, as the run does)."""
    if spec.exact is not None:
        return spec.budget_needed(game, sv, opts)
    if active < game.n_players and type(sv) is Semivalue:
        sv = sv.reduced(game.n_players, game.n_players - active)
    return int(spec.min_budget(active, sv, {**spec.fixed, **spec.defaults, **opts}))


def _table(game: Game, sv: Any, cap: int | None) -> str | None:
    """Why exact values come from the game's table of all ``2^n`` coalitions (rule 1 of the module docstring), or
    None where the game evaluates coalitions one by one (or the index is an Owen index: its own rule)."""
    seconds = None if isinstance(sv, OwenIndex) else game.table_seconds()
    if seconds is None:
        return None
    n = game.n_players
    why = (f"exact values from the table of all 2^{n} = {1 << n} coalitions that this {type(game).__name__} reads "
           f"every evaluation from (~{seconds:.2g} s predicted, built once whichever method runs; its reads are no "
           "model calls): an estimate would read the same table and carry errors")
    cost = game.cost()
    if cap is not None and cost is not None:
        why += f"; the budget's {cap} evaluations through the model would cost ~{cap * cost:.2g} s"
    return why


def _baselines(game: Game, index: Any, options: dict, active: int, need: int, ranked: set) -> str:
    """For interaction indices: the methods ``auto`` never picks (baselines) that run below ``need``, named."""
    if not isinstance(index, InteractionIndex):
        return ""
    below = []
    for spec in registered():
        if spec.name in ranked or spec.exact is not None or not spec.supports(index):
            continue
        try:
            low = _need(spec, game, index, spec.resolve(options, game.n_players, index), active)
        except ValueError:
            continue
        if low < need:
            below.append(f"method={spec.name!r} runs from {low}")
    return f"; baselines auto never picks: {', '.join(below)}" if below else ""


def _surrogate_pays(game: Game, cap: int, n: int) -> tuple[bool, str]:
    """Whether the tree control variate's surrogate fits are worth their cost on ``game`` at ``cap`` evaluations."""
    if cap - 2 < CONTROL_MIN_ROWS_PER_PLAYER * n:
        return False, f"budget below {CONTROL_MIN_ROWS_PER_PLAYER}n + 2 (too few coalitions to fit surrogates)"
    if n <= 62 and COVERAGE_SHARE * cap > (1 << n):
        return False, (f"the budget covers over 1/{COVERAGE_SHARE} of the 2^{n} coalitions, where plain regression "
                       "drawn without replacement is nearly exact (the surrogates need draws with replacement)")
    if game.kind in NO_TREE_KINDS:
        return False, ("a torch module's game: the surrogate regression's symmetric features measured 2.7-3.4x more "
                       "accurate than the tree control variate (a random ResNet-50, 196 patches, 1,000-4,000 "
                       "evaluations)")
    if importlib.util.find_spec("xgboost") is None:
        return False, "xgboost is not installed (the control variate's surrogates need it)"
    cost = game.cost()
    if cost is None:
        return False, "the game declares no cost per evaluation (FunctionGame(..., cost=seconds) does)"
    fits, calls = predicted_fit_seconds(cap, n), cap * cost
    why = f"surrogate fits ~{fits:.2g} s against game evaluations ~{calls:.2g} s"
    if fits <= SURROGATE_SHARE * calls:
        return True, why + f" (at most {SURROGATE_SHARE:.0%} of them)"
    return False, why + f" (more than {SURROGATE_SHARE:.0%} of them)"


def choose(game: Game, sv: Semivalue, method: str = "auto", budget: int | None = None,
           stop: StoppingRule | None = None, options: dict | None = None,
           allowance: float = WALSH_ALLOWANCE) -> Choice:
    """The method that runs, decided from facts that do not change between runs (see the module docstring).

    Parameters
    ----------
    game : the game (or, for many rows, the first row's game: the facts are the same for every row)
    sv : the semivalue
    method : a registry key or ``"auto"``
    budget : most evaluations, or None (only methods that need no budget: exact, leave-one-out)
    stop : the stopping rule; its ``MaxEvaluations`` cap bounds the evaluations whatever is chosen
    options : the user's method options (checked against the chosen method; unknown names refused)
    allowance : seconds the Walsh surrogate may take whatever the game's cost (a part of a split game: its share)

    Returns
    -------
    Choice

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.FunctionGame(lambda S: S.sum(axis=1) ** 1.5, n_players=30)
    >>> sv = fs.Semivalue.shapley()
    >>> [choose(g, sv, budget=b).method for b in (40, 1000)]
    ['permutation', 'surrogate-regression']
    >>> choose(fs.games.FunctionGame(lambda S: S.sum(axis=1), n_players=8), sv, budget=256).reason
    'the budget covers all 2^8 = 256 coalitions: exact values'
    """
    options = dict(options or {})
    active = _active(game)
    cap = _cap(budget, stop)
    if method != "auto":
        return _asked(game, sv, method, budget, cap, stop, options, active)
    n = game.n_players
    if _leave_one_out(sv) and not options and (cap is None or cap >= n + 2):
        return Choice("loo", get_method("loo").resolve({}, n, sv), n + 2,
                      f"leave-one-out values are exact from their own {n + 2} evaluations", True)
    exact = _auto_exact(game, sv, cap, options)
    if exact is not None:
        return exact
    ranked = _ranked(game, sv, cap, options)
    if cap is None:
        return _without_budget(game, sv, ranked, options, active)
    spec, opts = _affordable(game, sv, ranked, cap, options, active)
    if spec.name == "surrogate-regression":
        pays, why = _walsh_pays(game, cap, active, allowance)
        rest = [t for t in ranked if t[2] is not spec]
        plain = _affordable_or_none(game, sv, rest, cap, options, active) if not pays else None
        if plain is not None:                       # the next estimator the budget affords: its plain regression
            return _with_upgrade(game, sv, *plain, rest[0][2], cap, options, active,
                                 f"; not surrogate-regression: {why}")
    return _with_upgrade(game, sv, spec, opts, ranked[0][2], cap, options, active)


def _affordable_or_none(game: Game, sv: Semivalue, ranked: list, cap: int, options: dict,
                        active: int) -> tuple[MethodSpec, dict] | None:
    """:func:`_affordable`, or None where no ranked estimator is (or none is ranked)."""
    try:
        return _affordable(game, sv, ranked, cap, options, active) if ranked else None
    except BudgetError:
        return None


def _walsh_pays(game: Game, cap: int, n: int, allowance: float = WALSH_ALLOWANCE) -> tuple[bool, str]:
    """Whether the Walsh surrogate's predicted seconds are within ``allowance`` or ``SURROGATE_SHARE`` of the
    game's declared evaluations (a fixed cost model, never a clock)."""
    fit = predicted_walsh_seconds(cap, n)
    if fit <= allowance:
        return True, ""
    cost = game.cost()
    if cost is None:
        return False, (f"its surrogate fit ~{fit:.2g} s is over {allowance:.2g} s and the game declares no cost "
                       "per evaluation")
    calls = cap * cost
    if fit <= SURROGATE_SHARE * calls:
        return True, ""
    return False, (f"its surrogate fit ~{fit:.2g} s against game evaluations ~{calls:.2g} s (more than "
                   f"{SURROGATE_SHARE:.0%} of them)")


def _asked(game: Game, sv: Semivalue, method: str, budget: int | None, cap: int | None, stop: StoppingRule | None,
           options: dict, active: int) -> Choice:
    """An explicit method, as asked (exact values instead where its budget falls short but covers every
    coalition); refused when it does not support the index or the budget is too small for it."""
    n = game.n_players
    spec = get_method(method)
    if not spec.supports(sv):
        valid = [s.name for s in registered() if s.supports(sv)]
        raise ValueError(f"method {method!r} supports the {', '.join(spec.indices)} index, not {sv.name!r}; "
                         f"methods for {sv.name!r}: {valid}")
    opts = spec.resolve(options, n, sv)
    if spec.exact is not None:
        return _asked_exact(game, sv, spec, opts, budget, stop)
    _check_requires(game, spec, stop)
    need = _need(spec, game, sv, opts, active)
    if cap is None:
        if spec.needs_budget:
            raise ValueError(f"budget must be given: the number of game evaluations {method!r} may spend "
                             f"(at least {need} for {active} player{'s' if active != 1 else ''})")
        return Choice(method, opts, need, "asked for")
    if cap < need:
        if covers_all(n, cap):
            return _exact(game, sv, cap, f"{method!r} needs {need} evaluations for {n} players; the budget of "
                                         f"{cap} covers all 2^{n} = {1 << n} coalitions: exact values instead")
        raise BudgetError(f"budget={cap} is too small for method {method!r} with {active} players; it needs at "
                          f"least {need} evaluations" + ("" if budget == cap else f" (MaxEvaluations caps at {cap})"))
    return Choice(method, opts, cap, "asked for")


def _check_requires(game: Game, spec: MethodSpec, stop: StoppingRule | None) -> None:
    """Refuse a method that needs what the game does not give (the gradients of a differentiable model), or a
    direct method (no rounds) with a stopping rule other than a cap on evaluations."""
    lacking = [c for c in spec.requires if not callable(getattr(game, c, None))]
    if lacking:
        raise ValueError(f"method {spec.name!r} needs a game that gives {' and '.join(lacking)} (the gradients of a "
                         f"differentiable model: fs.games.TorchGame, or fs.explain of a torch module); this "
                         f"{type(game).__name__} gives none: use a sampling method such as 'regression'")
    if spec.direct is not None and stop is not None and (stop.needs_rounds or stop.evaluation_cap() is None):
        raise ValueError(f"method {spec.name!r} takes no stopping rule but a cap on evaluations (MaxEvaluations): "
                         "it spends its points in one pass")


def _asked_exact(game: Game, sv: Semivalue, spec: MethodSpec, opts: dict, budget: int | None,
                 stop: StoppingRule | None) -> Choice:
    """``method="exact"`` as asked: no stopping rule; a budget that covers what it evaluates (or a table's reads)."""
    if stop is not None:
        raise ValueError("method 'exact' takes no stopping rule (tol or stop): it spends 2^n evaluations or "
                         "none")
    need = spec.budget_needed(game, sv, opts)
    table = _table(game, sv, budget) if budget is not None and budget < need else None
    if table is not None:                  # the reads of a table of every coalition, as auto takes them
        return Choice("exact", opts, need, "asked for: " + table)
    if budget is not None and budget < need:
        raise BudgetError(f"budget={budget} is too small for method 'exact' with {game.n_players} players; it needs "
                          f"at least {need} evaluations")
    return Choice("exact", opts, budget, "asked for")


def _auto_exact(game: Game, sv: Semivalue, cap: int | None, options: dict) -> Choice | None:
    """``auto``'s exact values (rule 1 of the module docstring), or None where an estimator runs."""
    n = game.n_players
    exact_spec = get_method("exact")
    exact_takes = set(options) <= {o.name for o in exact_spec.options}
    if knows_closed_form(game, sv) and exact_takes:
        return _exact(game, sv, cap, f"{type(game).__name__} knows its exact {sv.name} values (closed form)", options,
                      auto=True)
    if covers_all(n, cap) and exact_takes and not isinstance(sv, OwenIndex) and not _leave_one_out(sv):
        return _exact(game, sv, cap, f"the budget covers all 2^{n} = {1 << n} coalitions: exact values", options,
                      auto=True)
    table = _table(game, sv, cap) if exact_takes else None
    if table is not None:
        return _exact(game, sv, 1 << n, table, options, auto=True)
    if isinstance(sv, OwenIndex) and cap is not None and exact_takes and cap >= owen_cost_lower_bound(sv.hierarchy) \
            and cap >= exact_spec.budget_needed(game, sv):
        return _exact(game, sv, cap, f"the budget covers the {exact_spec.budget_needed(game, sv)} coalitions of "
                                     "whole blocks that exact Owen values read", options, auto=True)
    return None


def _leave_one_out(sv: Any) -> bool:
    """Leave-one-out values, exact from their own ``n + 2`` evaluations: no enumeration of all ``2^n`` (a budget of
    256 for 8 players spent 256 evaluations where 10 give the same values)."""
    return isinstance(sv, Semivalue) and sv.name == "leave-one-out"


def _ranked(game: Game, sv: Semivalue, cap: int | None, options: dict) -> list[tuple[float, int, MethodSpec]]:
    """The estimators ``auto`` picks from for ``sv`` on this kind of game, best first, that take the options given."""
    ranked = sorted(((spec.priority(sv, game.kind), i, spec) for i, spec in enumerate(registered())
                     if spec.supports(sv) and spec.priority(sv, game.kind) is not None), key=lambda t: (-t[0], t[1]))
    if options:
        given = set(options)
        fitting = [t for t in ranked if given <= {o.name for o in t[2].options}]
        if not fitting:
            considered = (["exact"] if knows_closed_form(game, sv) or covers_all(game.n_players, cap) else []) + \
                [t[2].name for t in ranked]
            takers = [s.name for s in registered() if s.supports(sv) and given <= {o.name for o in s.options}]
            raise ValueError(f"unknown option(s) {sorted(given)} for method='auto' with index {sv.name!r}: the "
                             f"methods auto picks from here ({considered}) do not take them"
                             + (f"; methods that do: {takers} (name one with method=)" if takers else ""))
        ranked = fitting
    if not ranked:
        raise ValueError(f"no estimator for index {sv.name!r} is registered (use method='exact' for small games)")
    return ranked


def _without_budget(game: Game, sv: Semivalue, ranked: list, options: dict, active: int) -> Choice:
    """``auto`` with no budget: the best estimator that needs none, else a request for a budget."""
    free = [t for t in ranked if not t[2].needs_budget]
    if not free:
        best = ranked[0][2]
        example = max(10 * active, _need(best, game, sv, {}, active))
        n = game.n_players                                 # a small game: the budget of its exact values is less
        exact = f"; budget={1 << n} covers every coalition: exact values" if covers_all(n, example) else ""
        raise ValueError(f"budget must be given: the number of game evaluations the method may spend (e.g. "
                         f"budget={example} for {active} player{'s' if active != 1 else ''}{exact})")
    spec = free[0][2]
    opts = spec.resolve(options, game.n_players, sv)
    return Choice(spec.name, opts, _need(spec, game, sv, opts, active), f"the default for {sv.name} values",
                  auto=True)


def _affordable(game: Game, sv: Semivalue, ranked: list, cap: int, options: dict,
                active: int) -> tuple[MethodSpec, dict]:
    """The best ranked estimator the budget affords, with its options; a ``BudgetError`` naming the smallest
    budget otherwise."""
    n = game.n_players
    for _, _, spec in ranked:
        opts = spec.resolve(options, n, sv)
        need = _need(spec, game, sv, opts, active)
        if need <= cap:
            return spec, opts
    needs = {t[2].name: _need(t[2], game, sv, t[2].resolve(options, n, sv), active) for t in ranked}
    smallest = min(needs, key=needs.get)
    who = "the methods auto picks from accept" if isinstance(sv, InteractionIndex) else "any method accepts"
    raise BudgetError(f"budget={cap} is too small for {sv.name} values of {active} players: the smallest budget "
                      f"{who} is {needs[smallest]} ({smallest!r})"
                      + _baselines(game, sv, options, active, needs[smallest], set(needs)))


def _with_upgrade(game: Game, sv: Semivalue, spec: MethodSpec, opts: dict, first: MethodSpec, cap: int,
                  options: dict, active: int, note: str = "") -> Choice:
    """``auto``'s estimator with its reason, upgraded to its tree control variate where that pays (rule 3)."""
    n = game.n_players
    kind_specific = any(key.endswith("@" + game.kind) for key in spec.default_for)
    reason = f"the default for {sv.name} values" + (f" of a {game.kind} game" if kind_specific else "")
    if spec is not first:
        reason += f" at this budget ({first.name!r} needs {_need(first, game, sv, first.resolve(options, n, sv), active)})"
    reason += note
    upgrade = next((s for s in registered() if spec.name in s.upgrades and s.supports(sv)), None)
    if upgrade is not None and not options:
        pays, why = _surrogate_pays(game, cap, active)
        if pays:
            return Choice(upgrade.name, upgrade.resolve({}, n, sv), cap,
                          f"{reason}, with the tree control variate: {why}", auto=True)
        reason += f"; no tree control variate: {why}"
    return Choice(spec.name, opts, cap, reason, auto=True)
