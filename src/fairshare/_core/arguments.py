"""Argument checks shared by every public entry point: declared options and argument tables.

Every door (``explain``, ``estimate``, ``exact``, ``value_data``, ``tree_values`` / ``TreeGame``, the CLI)
declares its arguments once in an :class:`Arguments` table of :class:`Option` s (type, range, allowed
values, a check for anything else; scikit-learn's ``_parameter_constraints`` is the model) and checks
them all before it builds a game or calls a model. Method options are declared the same way in the
method registry. Every message has the same shape and names the argument: ``budget must be an integer
>= 1, got 2.5``.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .seeds import SeedLike, generator as check_rng


__all__ = ["Option", "Arguments", "SeedLike", "check_rng", "check_int", "check_positive_float",
           "check_coalitions", "format_coalition", "check_progress", "check_unique_names"]


@dataclass(frozen=True)
class Option:
    """One declared argument of a door, or option of a method.

    Parameters
    ----------
    name, default, doc : the option's name, default value and one-line description
    allowed : the values it may take (compared by value and type), or None
    kind : "int", "float", "bool", "callable" or None (any value, checked by ``check``)
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
        if self.kind == "callable":
            if not callable(value):
                raise TypeError(f"{self.name} must be callable, got {type(value).__name__}")
            return value if self.check is None else self.check(value)
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


@dataclass(frozen=True)
class Arguments:
    """The declared arguments of one door: every one checked, in the declared order, before anything runs.

    Examples
    --------
    >>> table = Arguments("demo", (Option("budget", None, "evaluations", kind="int", minimum=1, none_ok=True),
    ...                            Option("progress", False, "a bar", kind="bool")))
    >>> table.check({"budget": 100, "progress": True})
    {'budget': 100, 'progress': True}
    >>> table.check({"budget": 0})
    Traceback (most recent call last):
    ...
    ValueError: budget must be >= 1, got 0
    """

    door: str
    options: tuple[Option, ...]

    def names(self) -> list[str]:
        """The arguments' names, in the declared order."""
        return [o.name for o in self.options]

    def check(self, given: Mapping[str, Any]) -> dict:
        """The given values checked (and normalized) in the declared order; names the table does not declare are
        refused as unknown arguments of the door."""
        unknown = sorted(set(given) - set(self.names()))
        if unknown:
            raise TypeError(f"{self.door}() got unknown argument(s) {unknown}; its arguments: {self.names()}")
        return {o.name: o.validate(given[o.name]) for o in self.options if o.name in given}

    def describe(self) -> list[str]:
        """One line per argument (``name=default: doc (rule)``), for the docs and the CLI."""
        return [o.describe() for o in self.options]

    def numpydoc(self, indent: int = 4, width: int = 116) -> str:
        """The arguments as the entries of a numpy-style ``Parameters`` section (a door's docstring is built from
        its table, so the two never disagree).

        Examples
        --------
        >>> print(Arguments("demo", (Option("budget", None, "evaluations", kind="int"),)).numpydoc(indent=0))
        budget : default None
            evaluations
        """
        import textwrap

        pad = " " * indent
        out = []
        for o in self.options:
            out.append(f"{pad}{o.name} : default {o.default!r}")
            out.extend(textwrap.wrap(o.doc, width - indent - 4, initial_indent=pad + "    ",
                                     subsequent_indent=pad + "    "))
        return "\n".join(out)


def check_progress(value: Any, name: str = "progress") -> Any:
    """``progress``: True (a progress bar), False (none) or a callable ``progress(done, total, relative_error)``.

    Examples
    --------
    >>> check_progress(False), check_progress(print) is print
    (False, True)
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if callable(value):
        return value
    raise TypeError(f"{name} must be True, False or a callable progress(done, total, relative_error), got {value!r}")



def check_unique_names(names: list[str], name: str) -> list[str]:
    """``names``, refused where one appears twice (naming the argument ``name`` and the names repeated).

    Examples
    --------
    >>> check_unique_names(["a", "b", "a"], "feature_names")
    Traceback (most recent call last):
    ...
    ValueError: feature_names must name each one once; 'a' appears more than once
    """
    twice = sorted({n for n, count in Counter(names).items() if count > 1})
    if twice:
        raise ValueError(f"{name} must name each one once; {', '.join(map(repr, twice))} appear"
                         f"{'s' if len(twice) == 1 else ''} more than once")
    return names


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Validate an integer argument, with an optional lower bound.

    Examples
    --------
    >>> check_int(3, "n_players", minimum=1)
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_positive_float(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Validate a finite positive (or non-negative) float.

    Examples
    --------
    >>> check_positive_float(0.5, "tol")
    0.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value}")
    return value


def check_coalitions(coalitions: Any, n_players: int, name: str = "coalitions") -> np.ndarray:
    """Validate a boolean ``(m, n_players)`` coalition matrix.

    Integer arrays holding only 0 and 1 are accepted and converted.

    Examples
    --------
    >>> check_coalitions([[1, 0], [0, 1]], 2).dtype
    dtype('bool')
    """
    arr = np.asarray(coalitions)
    if arr.ndim != 2 or arr.shape[1] != n_players:
        raise ValueError(
            f"{name} must have shape (m, {n_players}) (one row per coalition, one column "
            f"per player), got shape {arr.shape}"
        )
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iu":
        if arr.size and (arr.min() < 0 or arr.max() > 1):
            raise ValueError(f"{name} must be boolean (or 0/1 integers); found values outside {{0, 1}}")
        return arr.astype(bool)
    raise TypeError(f"{name} must be a boolean array, got dtype {arr.dtype}")


def format_coalition(row: np.ndarray, player_names: list[str] | None = None, limit: int = 12) -> str:
    """Readable form of one coalition row: the players it contains.

    Examples
    --------
    >>> format_coalition(np.array([True, False, True]))
    '{0, 2}'
    """
    members = np.flatnonzero(row)
    labels = [player_names[i] for i in members] if player_names else [str(i) for i in members]
    text = ", ".join(labels[:limit])
    if len(labels) > limit:
        text += f", ... ({len(labels)} players)"
    return "{" + text + "}"
