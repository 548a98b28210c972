"""What a method is: declared options, a sampler, a solver; and what a run returns.

A method is declared once (:class:`MethodSpec`): the indices it supports, its options (each with
its default, allowed values and a one-line doc, validated before the game is called once), a
*sampler* factory (proposes coalitions or permutations from its own random stream, never calls
the game) and a *solver* factory (absorbs evaluated batches and gives values and standard errors
at any time). :func:`fairshare.estimation.driver.run` runs every method.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..semivalues import Semivalue

__all__ = ["Estimate", "Option", "MethodSpec", "Setup", "INDEX_FAMILIES"]


@dataclass
class Estimate:
    """What a run returns (the entry point adds the bookkeeping)."""

    values: np.ndarray            # (n, k)
    stderr: np.ndarray | None     # (n, k) or None
    empty_value: np.ndarray | None = None   # (k,)
    grand_value: np.ndarray | None = None   # (k,)
    info: dict = field(default_factory=dict)  # extra facts for Attribution.options


INDEX_FAMILIES: dict[str, Callable[[Semivalue], bool]] = {
    "shapley": lambda sv: sv.is_shapley,
    "banzhaf": lambda sv: sv.is_banzhaf,
    "weighted-banzhaf": lambda sv: sv.is_banzhaf or sv.name.startswith("weighted-banzhaf"),
    "leave-one-out": lambda sv: sv.name == "leave-one-out",
    "any semivalue": lambda sv: True,
}

_MISSING = object()


@dataclass(frozen=True)
class Option:
    """One declared option of a method.

    Parameters
    ----------
    name, default, doc : the option's name, default value and one-line description
    allowed : the values it may take (compared by value and type), or None
    kind : "int", "float", "bool" or None (any value, checked by ``check``)
    minimum, maximum : bounds for "int" and "float"
    check : ``check(value) -> value`` for anything else; raises naming the option

    Examples
    --------
    >>> Option("batch_size", None, "coalitions per step", kind="int", minimum=1, none_ok=True).validate(8)
    8
    >>> Option("schedule", "1/t", "step sizes", allowed=("1/t", "constant")).validate("x")
    Traceback (most recent call last):
    ...
    ValueError: schedule must be one of ['1/t', 'constant'], got 'x'
    """

    name: str
    default: Any
    doc: str
    allowed: tuple | None = None
    kind: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    none_ok: bool = False
    check: Callable[[Any], Any] | None = None

    def validate(self, value: Any) -> Any:
        """The value, checked (and normalized); an exception naming the option otherwise."""
        if value is None and (self.none_ok or self.default is None and self.kind is None and self.allowed is None):
            return None
        if self.allowed is not None:
            if not any(value is a or (type(value) is type(a) and value == a) for a in self.allowed):
                raise ValueError(f"{self.name} must be one of {list(self.allowed)}, got {value!r}")
            return value
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{self.name} must be True or False, got {value!r}")
            return bool(value)
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{self.name} must be an integer, got {value!r}")
            value = int(value)
        elif self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{self.name} must be a number, got {value!r}")
            value = float(value)
            if not np.isfinite(value):
                raise ValueError(f"{self.name} must be finite, got {value!r}")
        if self.kind in ("int", "float"):
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"{self.name} must be >= {self.minimum}, got {value!r}")
            if self.maximum is not None and value > self.maximum:
                raise ValueError(f"{self.name} must be <= {self.maximum}, got {value!r}")
        if self.check is not None:
            value = self.check(value)
        return value

    def describe(self) -> str:
        """``name=default``: doc (allowed values or range)."""
        if self.allowed is not None:
            rule = "one of " + ", ".join(repr(a) for a in self.allowed)
        elif self.kind in ("int", "float"):
            lo = "" if self.minimum is None else f">= {self.minimum:g}"
            hi = "" if self.maximum is None else f"<= {self.maximum:g}"
            rule = f"{'an integer' if self.kind == 'int' else 'a number'} {' and '.join(x for x in (lo, hi) if x)}".strip()
            if self.none_ok:
                rule += " or None"
        elif self.kind == "bool":
            rule = "True or False"
        else:
            rule = ""
        return f"{self.name}={self.default!r}: {self.doc}" + (f" ({rule})" if rule else "")


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
    default_for : index families for which ``method="auto"`` picks it, with a priority (highest wins)
    has_stderr : whether it reports standard errors
    validate : ``f(options, n_players, semivalue)`` for constraints between options (raises)
    exact : for method "exact" only: ``f(game, semivalue, evaluator, options) -> Estimate`` (closed form or
        enumeration; no sampler, no rounds)
    plan : ``f(setup) -> dict``: settings decided from the options and the budget before the sampler and the
        solver are built (e.g. a fallback that a small budget forces); stored in ``setup.plan``
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
    plan: Callable[[Setup], dict] | None = None

    def supports(self, sv: Semivalue) -> bool:
        """True when the method can estimate the semivalue ``sv``."""
        return any(INDEX_FAMILIES[fam](sv) for fam in self.indices)

    def budget_needed(self, game: Any, sv: Semivalue, options: Mapping[str, Any] | None = None) -> int:
        """The smallest budget the method works with on ``game`` (exact values of a closed form need only the ends).

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.estimation.registry.get_method("permutation").budget_needed(fs.games.AdditiveGame([1.0] * 5), fs.Semivalue.shapley())
        6
        """
        if self.exact is not None and game.knows_exact_values(sv):
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
