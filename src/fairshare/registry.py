"""The one registry of attribution methods: it drives estimate(), the CLI, the docs table and the tests.

A method registers a function ``run(game, semivalue, evaluator, rng, **options)``
returning an :class:`Estimate`; :func:`fairshare.estimate` wraps it with index,
budget and option checks, so a new method touches only its own module and the
``register`` call there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .semivalues import Semivalue

__all__ = ["Estimate", "MethodSpec", "register", "get_method", "methods", "method_names"]


@dataclass
class Estimate:
    """What a method's ``run`` function returns (the registry adds the bookkeeping)."""

    values: np.ndarray            # (n, k)
    stderr: np.ndarray | None     # (n, k) or None
    empty_value: np.ndarray | None = None   # (k,)
    grand_value: np.ndarray | None = None   # (k,)
    info: dict = field(default_factory=dict)  # extra facts for Attribution.options (e.g. samples used)


def _is_shapley(sv: Semivalue) -> bool:
    return sv.is_shapley


def _is_banzhaf(sv: Semivalue) -> bool:
    return sv.is_banzhaf


def _any(sv: Semivalue) -> bool:
    return True


INDEX_FAMILIES: dict[str, Callable[[Semivalue], bool]] = {
    "shapley": _is_shapley,
    "banzhaf": _is_banzhaf,
    "weighted-banzhaf": lambda sv: sv.is_banzhaf or sv.name.startswith("weighted-banzhaf"),
    "any semivalue": _any,
}


@dataclass(frozen=True)
class MethodSpec:
    """One registered method.

    Attributes
    ----------
    name : registry key (``method=`` argument and CLI name)
    run : the estimator function
    indices : index families it supports (keys of ``INDEX_FAMILIES``)
    description : one line for ``fairshare methods`` and the docs
    options : option names and their defaults
    min_budget : smallest budget the method can work with, as a function of (game, semivalue)
    default_for : index families for which this is the method ``method="auto"`` picks,
        mapped to a priority (highest wins)
    supports_tol : whether ``run`` accepts ``tol`` (spend the budget in rounds, stop once the
        estimated relative error is below it)
    has_stderr : whether the method reports standard errors
    """

    name: str
    run: Callable[..., Estimate]
    indices: tuple[str, ...]
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)
    min_budget: Callable[[Any, Semivalue], int] = lambda game, sv: 1
    default_for: Mapping[str, int] = field(default_factory=dict)
    supports_tol: bool = False
    has_stderr: bool = True

    def supports(self, sv: Semivalue) -> bool:
        """True when the method can estimate the semivalue ``sv``."""
        return any(INDEX_FAMILIES[fam](sv) for fam in self.indices)


_REGISTRY: dict[str, MethodSpec] = {}


def register(spec: MethodSpec) -> MethodSpec:
    """Add a method to the registry (names are unique).

    Examples
    --------
    >>> "permutation" in method_names()
    True
    """
    if spec.name in _REGISTRY:
        raise ValueError(f"a method named {spec.name!r} is already registered")
    unknown = [f for f in spec.indices if f not in INDEX_FAMILIES]
    if unknown:
        raise ValueError(f"unknown index families {unknown}; known: {sorted(INDEX_FAMILIES)}")
    _REGISTRY[spec.name] = spec
    return spec


def method_names() -> list[str]:
    """Registered method names, in registration order."""
    _load()
    return list(_REGISTRY)


def get_method(name: str) -> MethodSpec:
    """The registered method ``name``; ``ValueError`` listing the valid names otherwise.

    Examples
    --------
    >>> get_method("mc-banzhaf").indices
    ('weighted-banzhaf',)
    """
    _load()
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"method must be one of {list(_REGISTRY)} (or 'auto'), got {name!r}")
    return _REGISTRY[name]


@dataclass(frozen=True)
class MethodInfo:
    """Public summary of a registered method."""

    name: str
    indices: tuple[str, ...]
    description: str
    options: dict


def methods() -> list[MethodInfo]:
    """Every registered method with the indices it supports and a one-line description.

    Examples
    --------
    >>> import fairshare as fs
    >>> [m.name for m in fs.methods()][:3]
    ['exact', 'permutation', 'mc-banzhaf']
    """
    _load()
    return [MethodInfo(s.name, s.indices, s.description, dict(s.options)) for s in _REGISTRY.values()]


def _load() -> None:
    # importing the estimator modules registers them
    from . import estimators  # noqa: F401
