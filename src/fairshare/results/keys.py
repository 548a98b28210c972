"""How a key picks positions along one axis of a result (rows, players, outputs): an int, a slice, a list or array
of ints, or a boolean mask as long as the axis, as numpy takes them; a bool alone, a float, or a list mixing bools
and ints is refused naming the axis (numpy would take ``True`` as a new axis, Python as position 1)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["names_of", "positions", "one_position"]


def names_of(key: Any) -> list[str] | None:
    """The names a key gives (a name, or a non-empty list, tuple, array or pandas Index of names), else None
    (positions, a slice, a mask).

    Examples
    --------
    >>> names_of("age"), names_of(["a", "b"]), names_of([0, 1])
    (['age'], ['a', 'b'], None)
    """
    if isinstance(key, str):
        return [key]
    if isinstance(key, (list, tuple, np.ndarray)) or type(key).__name__ == "Index":
        items = list(np.asarray(key, dtype=object).ravel()) if not isinstance(key, (list, tuple)) else list(key)
        if items and all(isinstance(k, str) for k in items):
            return [str(k) for k in items]
    return None


def one_position(key: Any, size: int, axis: str) -> int:
    """One position in ``0..size-1`` (negative ones count from the end) from an int that is not a bool.

    Examples
    --------
    >>> one_position(-1, 3, "players")
    2
    >>> one_position(True, 3, "players")
    Traceback (most recent call last):
    ...
    IndexError: players: True is a bool, not a position (give an int, a slice, or a mask of 3 booleans)
    """
    if isinstance(key, (bool, np.bool_)):
        raise IndexError(f"{axis}: {key} is a bool, not a position (give an int, a slice, or a mask of {size} "
                         "booleans)")
    if not isinstance(key, (int, np.integer)):
        raise IndexError(f"{axis}: {key!r} is not a position (give an int, a slice, a list of ints or a mask of "
                         f"{size} booleans)")
    if not -size <= int(key) < size:
        raise IndexError(f"{axis}: position {int(key)} is out of range for {size} {axis}")
    return int(key) % size


def positions(key: Any, size: int, axis: str) -> np.ndarray:
    """The positions a key picks along an axis of ``size`` (see the module), refused naming ``axis`` otherwise.

    Examples
    --------
    >>> positions(1, 3, "rows").tolist(), positions([True, False, True], 3, "rows").tolist()
    ([1], [0, 2])
    >>> positions([0, True], 3, "players")
    Traceback (most recent call last):
    ...
    IndexError: players: a key mixing bools and ints ([0, True]); give positions or a mask of 3 booleans
    """
    if isinstance(key, slice):
        return np.arange(size)[key]
    if np.ndim(key) == 0 and not isinstance(key, np.ndarray):
        return np.array([one_position(key, size, axis)])
    if isinstance(key, (list, tuple)):
        flat = list(np.asarray(key, dtype=object).ravel())
        bools = [isinstance(k, (bool, np.bool_)) for k in flat]
        if any(bools) and not all(bools):
            raise IndexError(f"{axis}: a key mixing bools and ints ({list(key)}); give positions or a mask of {size} "
                             "booleans")
    a = np.asarray(key).ravel()
    if a.dtype == bool:
        if a.size != size:
            raise IndexError(f"{axis}: a mask of {a.size} booleans for {size} {axis}")
        return np.flatnonzero(a)
    if a.size == 0:
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.integer):
        raise IndexError(f"{axis}: {key!r} holds no positions (give ints, a slice, or a mask of {size} booleans)")
    bad = a[(a < -size) | (a >= size)]
    if bad.size:
        raise IndexError(f"{axis}: position {int(bad[0])} is out of range for {size} {axis}")
    return a % size if size else a
