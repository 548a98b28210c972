"""Coalitions as keys: one fixed-width byte key per coalition, 64-bit hashes of the keys, and a store of values found
by key (what a cache and an estimator remember of the coalitions they have seen)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE, threads_for
from .._core.hashing import mix

__all__ = ["coalition_keys", "key_hashes", "unique_keys", "CoalitionStore"]


@njit(cache=CACHE, nogil=True, parallel=True)
def _hash_words(words: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """A 64-bit hash of each row of 64-bit words (SplitMix64's output function folded over the words)."""
    m, width = words.shape
    for r in prange(m):
        h = np.uint64(width)
        for j in range(width):
            h = mix(h ^ words[r, j])
        out[r] = h


def key_hashes(keys: np.ndarray) -> np.ndarray:
    """The 64-bit hash of each key of :func:`coalition_keys` (keys that are equal hash alike)."""
    width = keys.dtype.itemsize
    raw = np.ascontiguousarray(keys).view(np.uint8).reshape(keys.size, width)
    if width % 8:
        raw = np.concatenate([raw, np.zeros((keys.size, 8 - width % 8), np.uint8)], axis=1)
    out = np.empty(keys.size, dtype=np.uint64)
    if keys.size:
        with threads_for(raw.size // 8):
            _hash_words(raw.view(np.uint64), out)
    return out


def coalition_keys(coalitions: np.ndarray) -> np.ndarray:
    """One fixed-width byte key per coalition row (bit-packed), sortable and comparable.

    Examples
    --------
    >>> k = coalition_keys(np.array([[True, False], [True, False], [False, True]]))
    >>> bool(k[0] == k[1]), bool(k[0] == k[2])
    (True, False)
    """
    packed = np.ascontiguousarray(np.packbits(coalitions, axis=1))
    width = packed.shape[1]
    return packed.view(f"S{width}").ravel()


def unique_keys(hashes: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True, return_inverse=True)`` up to the order of the distinct keys (here by
    hash): a sort of 64-bit hashes, the keys compared only where hashes are equal."""
    order = np.argsort(hashes, kind="stable")
    h = hashes[order]
    same = h[1:] == h[:-1]
    if same.any():
        k = keys[order]
        if not np.all(k[1:][same] == k[:-1][same]):            # colliding hashes: the exact sort of the keys
            uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            return uniq, first, inverse.ravel()
    start = np.concatenate([[True], ~same])
    group = np.cumsum(start) - 1
    inverse = np.empty(keys.size, dtype=np.intp)
    inverse[order] = group
    first = order[start]                    # a stable sort: the first row of each run is the key's first row
    return keys[first], first, inverse


class CoalitionStore:
    """Values of coalitions found by their keys (:func:`coalition_keys`): keys and values held in the order they
    came (buffers grown by doubling), the 64-bit hashes of the keys sorted with the slot each points to, a key
    found by its hash compared. Sorting the keys themselves, a few hundred bytes each at image scale, cost more
    than the rest of a sample's bookkeeping. Adding is cheap; the hashes added since the last lookup are merged
    into the sorted ones by the next one.

    Examples
    --------
    >>> store = CoalitionStore()
    >>> keys = coalition_keys(np.array([[True, False], [False, True]]))
    >>> store.add(keys, np.array([[1.0], [2.0]])).tolist(), store.find(keys[::-1]).tolist()
    ([0, 1], [1, 0])
    >>> store.values[store.find(keys[:1])].tolist()
    [[1.0]]
    """

    def __init__(self) -> None:
        self.size = 0
        self.keys: np.ndarray | None = None
        self.values: np.ndarray | None = None
        self._arrived = np.zeros(0, dtype=np.uint64)      # hash of each slot, in arrival order
        self._sorted = np.zeros(0, dtype=np.uint64)       # the hashes of the first ``_merged`` slots, sorted
        self._slot = np.zeros(0, dtype=np.intp)
        self._merged = 0

    def add(self, keys: np.ndarray, values: np.ndarray, hashes: np.ndarray | None = None) -> np.ndarray:
        """Hold ``values`` (one row per key); returns the slots they are held in."""
        hashes = key_hashes(keys) if hashes is None else hashes
        n, c = self.size, keys.size
        if self.values is None or n + c > self.values.shape[0]:
            capacity = max(n + c, 2 * n)
            grown = [np.empty(capacity, dtype=keys.dtype), np.empty((capacity,) + values.shape[1:], dtype=values.dtype),
                     np.empty(capacity, dtype=np.uint64)]
            if n:
                grown[0][:n], grown[1][:n], grown[2][:n] = self.keys[:n], self.values[:n], self._arrived[:n]
            self.keys, self.values, self._arrived = grown
        self.keys[n:n + c], self.values[n:n + c], self._arrived[n:n + c] = keys, values, hashes
        self.size = n + c
        return np.arange(n, n + c)

    def find(self, keys: np.ndarray, hashes: np.ndarray | None = None) -> np.ndarray:
        """The slot of each key, -1 where it is not held."""
        pos = np.full(keys.size, -1, dtype=np.intp)
        if not self.size:
            return pos
        if self._merged < self.size:                       # two sorted runs: the stable sort merges them
            fresh = np.arange(self._merged, self.size)
            order = np.argsort(self._arrived[fresh], kind="stable")
            both = np.concatenate([self._sorted, self._arrived[fresh][order]])
            merge = np.argsort(both, kind="stable")
            self._sorted, self._slot = both[merge], np.concatenate([self._slot, fresh[order]])[merge]
            self._merged = self.size
        hashes = key_hashes(keys) if hashes is None else hashes
        lo = np.searchsorted(self._sorted, hashes, side="left")
        hi = np.searchsorted(self._sorted, hashes, side="right")
        one = np.flatnonzero(hi - lo == 1)
        slot = self._slot[lo[one]]
        hit = self.keys[slot] == keys[one]
        pos[one[hit]] = slot[hit]
        for i in np.flatnonzero(hi - lo > 1):       # coalitions whose hashes collide (odds about 1e-19 a pair)
            slots = self._slot[lo[i]:hi[i]]
            match = slots[self.keys[slots] == keys[i]]
            if match.size:
                pos[i] = match[0]
        return pos
