"""Hashing in compiled code: SplitMix64's output function, for coalition keys and seeded draws."""

from __future__ import annotations

import numpy as np
from numba import njit

from .compiled import CACHE

__all__ = ["mix"]


@njit(cache=CACHE, nogil=True, inline="always")
def mix(z: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """SplitMix64's output function: a 64-bit bijection whose outputs on consecutive inputs pass BigCrush."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
