"""What a method is: declared options, a sampler, a solver; and what a run returns.

A method is declared once (:class:`MethodSpec`): the indices it supports, its options (each with
its default, allowed values and a one-line doc, validated before the game is called once), a
*sampler* factory (proposes coalitions or permutations from its own random stream, never calls
the game) and a *solver* factory (absorbs evaluated batches and gives values and standard errors
at any time). :func:`fairshare.engine.driver.run` runs every method.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.arguments import Option
from ..indices.hierarchy import OwenIndex
from ..indices.interactions import InteractionIndex
from ..indices.semivalues import Semivalue

__all__ = ["Estimate", "MethodSpec", "Setup", "INDEX_FAMILIES", "knows_closed_form"]


@dataclass
class Estimate:
    """What a run returns (the entry point adds the bookkeeping)."""

    values: np.ndarray            # (n, k)
    stderr: np.ndarray | None     # (n, k) or None
    empty_value: np.ndarray | None = None   # (k,)
    grand_value: np.ndarray | None = None   # (k,)
    info: dict = field(default_factory=dict)  # extra facts for Attribution.options


INDEX_FAMILIES: dict[str, Callable[[Any], bool]] = {
    "shapley": lambda sv: isinstance(sv, Semivalue) and sv.is_shapley,
    "banzhaf": lambda sv: isinstance(sv, Semivalue) and sv.is_banzhaf,
    "weighted-banzhaf": lambda sv: isinstance(sv, Semivalue) and (sv.is_banzhaf or sv.name.startswith("weighted-banzhaf")),
    "leave-one-out": lambda sv: isinstance(sv, Semivalue) and sv.name == "leave-one-out",
    "any semivalue": lambda sv: isinstance(sv, Semivalue),
    "interactions": lambda ix: isinstance(ix, InteractionIndex),
    "permutation interactions": lambda ix: isinstance(ix, InteractionIndex) and ix.kind in ("sii", "k-sii", "stii",
                                                                                           "sii-matrix"),
    "owen": lambda ix: isinstance(ix, OwenIndex),
}


def knows_closed_form(game: Any, index: Semivalue | InteractionIndex) -> bool:
    """Whether ``game`` has closed-form values for ``index`` (a semivalue or an interaction index)."""
    if isinstance(index, InteractionIndex):
        return game.knows_exact_interactions(index)
    if isinstance(index, OwenIndex):
        return False
    return game.knows_exact_values(index)


@dataclass
class Setup:
    """What a sampler or solver factory is given (before any evaluation)."""

    n_players: int
    semivalue: Semivalue
    budget: int
    options: dict
    sampler_rng: np.random.Generator
    solver_rng: np.random.Generator
    game: Any = None              # the game (solvers may read its declared facts; never evaluate it)
    device: Any = None            # a torch device when the game evaluates tensors there (TorchGame on a GPU)
    early_stop: bool = False      # a stopping rule may end the run before the budget (one that needs rounds)
    plan: dict = field(default_factory=dict)        # settings the method's ``plan`` decided from the options and the
                                                    # budget, before the sampler and the solver are built (both read it)
    notes: dict = field(default_factory=dict)       # facts for the result's ``info`` (e.g. a fallback taken)


@dataclass(frozen=True)
class MethodSpec:
    """One registered method.

    Attributes
    ----------
    name : registry key (``method=`` argument and CLI name)
    indices : index families it supports (keys of ``INDEX_FAMILIES``)
    description : one line for ``fairshare methods`` and the docs
    sampler, solver : factories ``f(setup) -> Sampler`` / ``f(setup) -> Solver``
    options : the user-settable options, declared
    fixed : settings of the method that users cannot change (a published estimator's semantics)
    min_budget : ``f(n_players, semivalue, options) -> int``, the smallest budget it works with
    default_for : index families for which ``method="auto"`` picks it, with a priority (highest wins among the
        methods the budget affords); a key ``"family@kind"`` applies to games of that ``Game.kind`` only
        (``"shapley@data"``: truncated Monte Carlo for data valuation)
    upgrades : the methods this one replaces under ``auto`` when its extra work pays (the tree control variate:
        ``regression-cv`` upgrades ``surrogate-regression`` and ``regression``); decided by
        :mod:`fairshare.engine.choice`
    needs_budget : False for methods whose evaluations are fixed (exact values, leave-one-out): without a budget
        they spend what they need
    has_stderr : whether it reports standard errors
    validate : ``f(options, n_players, semivalue)`` for constraints between options (raises)
    exact : for method "exact" only: ``f(game, semivalue, evaluator, options) -> Estimate`` (closed form or
        enumeration; no sampler, no rounds)
    plan : ``f(setup) -> dict``: settings decided from the options and the budget before the sampler and the
        solver are built (e.g. a fallback that a small budget forces); stored in ``setup.plan``
    requires : capabilities the game must have besides its values (names of its methods: ``"gradient"``, which
        :class:`~fairshare.games.TorchGame` gives); :func:`~fairshare.engine.choice.choose` refuses the method for
        a game without them, and ``auto`` never picks it
    direct : ``f(game, index, evaluator, options, rng) -> Estimate`` for a method that is no sampler and solver on
        the driver (the gradient explainers): it spends its evaluations through ``evaluator`` (``charge`` for those
        it makes itself) and draws from ``rng``
    """

    name: str
    indices: tuple[str, ...]
    description: str
    sampler: Callable[[Setup], Any] | None
    solver: Callable[[Setup], Any] | None
    options: tuple[Option, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)
    min_budget: Callable[[int, Semivalue, dict], int] = lambda n, sv, opts: 1
    default_for: Mapping[str, int] = field(default_factory=dict)
    has_stderr: bool = True
    validate: Callable[[dict, int, Semivalue], None] | None = None
    exact: Callable[..., Estimate] | None = None    # the one method that is no sampling estimate
    upgrades: tuple[str, ...] = ()
    needs_budget: bool = True
    plan: Callable[[Setup], dict] | None = None
    requires: tuple[str, ...] = ()
    direct: Callable[..., Estimate] | None = None

    def supports(self, sv: Semivalue) -> bool:
        """True when the method can estimate the semivalue ``sv``."""
        return any(INDEX_FAMILIES[fam](sv) for fam in self.indices)

    def priority(self, sv: Semivalue, kind: str) -> int | None:
        """How much ``method="auto"`` prefers this method for ``sv`` on a game of ``kind`` (None: not a default).

        Examples
        --------
        >>> import fairshare as fs
        >>> tmc = fs.engine.registry.get_method("tmc")
        >>> tmc.priority(fs.Semivalue.shapley(), "data"), tmc.priority(fs.Semivalue.shapley(), "model")
        (30, None)
        """
        best = None
        for key, priority in self.default_for.items():
            family, _, only = key.partition("@")
            if INDEX_FAMILIES[family](sv) and (not only or only == kind):
                best = priority if best is None else max(best, priority)
        return best

    def budget_needed(self, game: Any, sv: Semivalue, options: Mapping[str, Any] | None = None) -> int:
        """The smallest budget the method works with on ``game`` (exact values of a closed form need only the ends).

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.engine.registry.get_method("permutation").budget_needed(fs.games.AdditiveGame([1.0] * 5), fs.Semivalue.shapley())
        6
        """
        if self.exact is not None and knows_closed_form(game, sv):
            return 2
        opts = {**self.fixed, **self.defaults, **(options or {})}
        return int(self.min_budget(game.n_players, sv, opts))

    @property
    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}

    def resolve(self, user: Mapping[str, Any], n_players: int, sv: Semivalue) -> dict:
        """Defaults, fixed settings and the user's options, every value checked; raises before any evaluation."""
        known = {o.name: o for o in self.options}
        unknown = sorted(set(user) - set(known))
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} for method {self.name!r}; valid options: "
                             f"{sorted(known) or 'none'}")
        out = dict(self.fixed)
        for name, opt in known.items():
            out[name] = opt.validate(user[name]) if name in user else opt.default
        if self.validate is not None:
            self.validate(out, n_players, sv)
        return out
