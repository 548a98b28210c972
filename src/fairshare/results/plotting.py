"""Which plot draws which result: ``plots/`` registers its functions here by kind, and a result's ``plot(kind)``
looks them up, so results never import the plots (they lie above them in the house).

Kinds have aliases shap users know: ``"scatter"`` is ``"dependence"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "draw", "kinds", "ALIASES"]

#: (result family, kind) -> plotting function ``fn(result, **kwargs) -> Axes``
_PLOTS: dict[tuple[str, str], Callable[..., Any]] = {}

#: other names of kinds (shap's)
ALIASES = {"scatter": "dependence"}


def register(family: str, kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as plot ``kind`` of results of ``family`` (``"explanation"``,
    ``"data values"``).

    Examples
    --------
    >>> @register("example", "dots")
    ... def dots(result, **kwargs):
    ...     return "drawn"
    >>> draw("example", "dots", None)
    'drawn'
    """
    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        _PLOTS[(family, kind)] = fn
        return fn

    return add


def kinds(family: str) -> list[str]:
    """The plot kinds registered for ``family``, in the order they were registered.

    Examples
    --------
    >>> "bar" in kinds("explanation")
    True
    """
    return [k for f, k in _PLOTS if f == family]


def draw(family: str, kind: str, result: Any, *args: Any, **kwargs: Any) -> Any:
    """Draw ``result`` as plot ``kind`` (or one of its :data:`ALIASES`) of its ``family``; ``args`` and ``kwargs``
    go to the plotting function (``draw("explanation", "scatter", e, "age")`` is shap's ``scatter`` of ``age``).

    Examples
    --------
    >>> draw("explanation", "pie", None)
    Traceback (most recent call last):
    ...
    ValueError: kind must be one of ['bar', 'waterfall', 'beeswarm', 'dependence', 'heatmap', 'decision', 'text', 'image'] or an alias ['scatter'], got 'pie'
    """
    fn = _PLOTS.get((family, ALIASES.get(kind, kind)))
    if fn is None and not kinds(family):
        raise ValueError(f"no plot kinds are registered for {family or 'these'} results, got {kind!r}")
    if fn is None:
        raise ValueError(f"kind must be one of {kinds(family)} or an alias {list(ALIASES)}, got {kind!r}")
    return fn(result, *args, **kwargs)
