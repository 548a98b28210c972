"""The one registry of attribution methods: it drives the method choice, estimate(), the CLI, the docs table and
the tests.

Methods are declared in their estimator modules (``SPECS`` lists of
:class:`~fairshare.engine.spec.MethodSpec`: sampler, solver, declared options) and listed here, in the
order ``fairshare methods`` shows them; adding a method touches its sampler or solver module, its
declaration (and its line below) and its test.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import (exact, gradients, interaction_permutation, interaction_regression, leave_one_out, montecarlo, owen,
               owen_adaptive, regression, sgd, surrogate_regression)
from .spec import INDEX_FAMILIES, MethodSpec

__all__ = ["MethodInfo", "get_method", "methods", "method_names", "methods_markdown", "registered"]


def _build(specs: list[MethodSpec]) -> dict[str, MethodSpec]:
    """The registry (names unique, index families known), in the order given."""
    out: dict[str, MethodSpec] = {}
    for spec in specs:
        if spec.name in out or spec.name == "auto":
            raise ValueError(f"a method named {spec.name!r} is already registered")
        unknown = [f for f in spec.indices if f not in INDEX_FAMILIES]
        if unknown:
            raise ValueError(f"unknown index families {unknown}; known: {sorted(INDEX_FAMILIES)}")
        out[spec.name] = spec
    return out


_REGISTRY = _build(exact.SPECS + montecarlo.SPECS[:2] + regression.SPECS + surrogate_regression.SPECS
                   + montecarlo.SPECS[2:] + sgd.SPECS
                   + leave_one_out.SPECS + interaction_regression.SPECS
                   + interaction_permutation.SPECS + owen.SPECS + owen_adaptive.SPECS + gradients.SPECS)


def method_names() -> list[str]:
    """Registered method names, in the order ``fairshare methods`` lists them.

    Examples
    --------
    >>> "permutation" in method_names()
    True
    """
    return list(_REGISTRY)


def get_method(name: str) -> MethodSpec:
    """The registered method ``name``; ``ValueError`` listing the valid names otherwise.

    Examples
    --------
    >>> get_method("mc-banzhaf").indices
    ('weighted-banzhaf',)
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"method must be one of {list(_REGISTRY)} (or 'auto'), got {name!r}")
    return _REGISTRY[name]


def registered() -> list[MethodSpec]:
    """Every registered method's declaration."""
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
        index = index.replace("permutation interactions", "interactions: k-SII, SII, STII")
        index = index.replace(", interactions", ", any interaction index").replace("^interactions", "")
        if index == "interactions":
            index = "any interaction index"
        index = index.replace("shapley", "Shapley").replace("banzhaf", "Banzhaf").replace("owen", "Owen")
        opts = ", ".join(f"`{k}`" for k in m.options) or "-"
        lines.append(f"| `{m.name}` | {index} | {m.description} | {opts} |")
    return "\n".join(lines)

