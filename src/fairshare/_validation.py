"""Argument checks shared by every public entry point.

Each helper raises an exception that names the offending argument, so a user
sees *which* input was wrong, not a numpy traceback from deep inside.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def check_rng(seed: SeedLike, name: str = "seed") -> np.random.Generator:
    """Turn ``seed`` into a ``numpy.random.Generator``.

    Examples
    --------
    >>> bool(check_rng(0).integers(10) == check_rng(0).integers(10))
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {seed}")
        return np.random.default_rng(int(seed))
    raise TypeError(f"{name} must be None, an int or a numpy Generator, got {type(seed).__name__}")


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
