"""The one registry of attribution methods: it drives estimate(), the CLI, the docs table and the tests.

Methods are declared in their estimator modules (``SPECS`` lists of
:class:`~fairshare.estimators.spec.MethodSpec`: sampler, solver, declared options) and registered
here when :mod:`fairshare.estimators` is imported; adding a method touches its sampler or solver
module, its declaration and its test.
"""

from __future__ import annotations

from dataclasses import dataclass

from .estimators.spec import INDEX_FAMILIES, Estimate, MethodSpec, Option

__all__ = ["Estimate", "MethodSpec", "Option", "register", "get_method", "methods", "method_names",
           "methods_markdown"]

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


def registered() -> list[MethodSpec]:
    """Every registered method's declaration."""
    _load()
    return list(_REGISTRY.values())


@dataclass(frozen=True)
class MethodInfo:
    """Public summary of a registered method."""

    name: str
    indices: tuple[str, ...]
    description: str
    options: dict
    option_docs: dict
    has_stderr: bool


def methods() -> list[MethodInfo]:
    """Every registered method with the indices it supports, a one-line description and its options.

    Examples
    --------
    >>> import fairshare as fs
    >>> [m.name for m in fs.methods()][:3]
    ['exact', 'permutation', 'mc-banzhaf']
    """
    _load()
    return [MethodInfo(s.name, s.indices, s.description, dict(s.defaults), {o.name: o.describe() for o in s.options},
                       s.has_stderr) for s in _REGISTRY.values()]


def methods_markdown() -> str:
    """The README's methods table, generated from the registry (``fairshare methods --markdown``).

    Examples
    --------
    >>> methods_markdown().splitlines()[0]
    '| method | index | what it is | options |'
    """
    lines = ["| method | index | what it is | options |", "|---|---|---|---|"]
    for m in methods():
        index = ", ".join(m.indices).replace("any semivalue", "any").replace("weighted-banzhaf", "(weighted) Banzhaf")
        index = index.replace("shapley", "Shapley").replace("banzhaf", "Banzhaf")
        opts = ", ".join(f"`{k}`" for k in m.options) or "-"
        lines.append(f"| `{m.name}` | {index} | {m.description} | {opts} |")
    return "\n".join(lines)


def _load() -> None:
    # importing the estimator modules registers them
    from .estimators import catalog  # noqa: F401
