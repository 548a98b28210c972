"""Evaluating a game for an estimator: each distinct coalition once, within a budget."""

from __future__ import annotations

from typing import Any

import numpy as np

from numba import njit, prange

from ..arrays import is_tensor
from ..compiled import CACHE, threads_for
from ..game import Game
from .subsets import mix

__all__ = ["coalition_keys", "CoalitionStore", "BudgetedEvaluator", "BudgetError"]


class BudgetError(ValueError):
    """Raised when a budget is too small for a method, or would be exceeded."""


@njit(cache=CACHE, nogil=True, parallel=True)
def _hash_words(words: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """A 64-bit hash of each row of 64-bit words (SplitMix64's output function folded over the words)."""
    m, width = words.shape
    for r in prange(m):
        h = np.uint64(width)
        for j in range(width):
            h = mix(h ^ words[r, j])
        out[r] = h


def _hashes(keys: np.ndarray) -> np.ndarray:
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


def _unique(hashes: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        hashes = _hashes(keys) if hashes is None else hashes
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
        hashes = _hashes(keys) if hashes is None else hashes
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


class BudgetedEvaluator:
    """Evaluate coalitions for one estimate: never the same coalition twice, never past ``budget``.

    Values are kept (sorted by key) so a coalition asked for again, in the same
    call or a later one, is answered from memory at no cost. Results are always
    2-D ``(m, k)``; :attr:`scalar` tells whether the game returns one value.

    Parameters
    ----------
    game : Game
    budget : int or None
        Most distinct coalitions that may be evaluated; None for no limit.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdditiveGame([1.0, 2.0, 3.0])
    >>> ev = BudgetedEvaluator(g, budget=10)
    >>> X = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 1]], dtype=bool)
    >>> ev(X)[:, 0]
    array([1., 1., 5.])
    >>> ev.n_spent
    2
    """

    def __init__(self, game: Game, budget: int | None) -> None:
        self.game = game
        self.budget = budget
        self.n_spent = 0
        self._store = CoalitionStore()
        self._tkeys: Any = None             # the same for coalitions held as torch tensors (on their device)
        self._tvalues: Any = None

    @property
    def remaining(self) -> int | None:
        """Evaluations still allowed (None when unlimited)."""
        return None if self.budget is None else self.budget - self.n_spent

    @property
    def scalar(self) -> bool:
        """True when the game returns one value per coalition."""
        return not self.game.n_outputs

    def charge(self, n_evaluations: int) -> None:
        """Account for evaluations made outside this evaluator (e.g. by exact enumeration)."""
        if self.budget is not None and self.n_spent + n_evaluations > self.budget:
            raise BudgetError(
                f"{n_evaluations} more evaluations would exceed the budget of {self.budget} ({self.n_spent} spent)"
            )
        self.n_spent += n_evaluations

    def fresh(self, coalitions: np.ndarray) -> np.ndarray:
        """Evaluate every row afresh (no reuse of earlier values; classic Monte Carlo), charged to the budget."""
        X = np.asarray(coalitions, dtype=bool)
        self.charge(X.shape[0])
        vals = self.game(X)
        return vals[:, None] if vals.ndim == 1 else vals

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        if is_tensor(coalitions):
            return self._call_tensor(coalitions)
        X = np.asarray(coalitions, dtype=bool)
        if X.shape[0] == 0:
            k = max(self.game.n_outputs or 1, 1)
            return np.zeros((0, k))
        keys = coalition_keys(X)
        hashes = _hashes(keys)
        uniq, first, inverse = _unique(hashes, keys)
        pos = self._store.find(uniq, hashes[first])
        new = np.flatnonzero(pos < 0)
        if self.budget is not None and self.n_spent + new.size > self.budget:
            raise BudgetError(
                f"evaluating {new.size} new coalitions would exceed the budget of {self.budget} "
                f"({self.n_spent} already spent)"
            )
        if new.size:
            new = new[np.argsort(first[new])]
            rows = first[new]                       # the game sees the rows in the caller's order; when every
            every = rows.size == X.shape[0]         # row is new, without a copy
            vals = self.game(X if every else X[rows])
            vals = vals[:, None] if vals.ndim == 1 else vals
            self.n_spent += new.size
            pos[new] = self._store.add(keys if every else keys[rows], vals, hashes if every else hashes[rows])
        return self._store.values[pos[inverse]]

    def _call_tensor(self, X: Any) -> Any:
        """The same for coalitions held as a torch tensor: keys, lookups and values stay on its device."""
        import torch

        m = X.shape[0]
        k = max(self.game.n_outputs or 1, 1)
        if m == 0:
            return torch.zeros((0, k), dtype=torch.float64, device=X.device)
        keys = _tensor_keys(X)
        uniq, inverse = torch.unique(keys, dim=0, return_inverse=True)
        pos = torch.full((uniq.shape[0],), -1, dtype=torch.int64, device=X.device)
        if self._tkeys is not None:
            S = self._tkeys.shape[0]
            both, inv2 = torch.unique(torch.cat([self._tkeys, uniq]), dim=0, return_inverse=True)
            lut = torch.full((both.shape[0],), -1, dtype=torch.int64, device=X.device)
            lut[inv2[:S]] = torch.arange(S, device=X.device)
            pos = lut[inv2[S:]]
        new = torch.nonzero(pos < 0).ravel()
        if self.budget is not None and self.n_spent + int(new.numel()) > self.budget:
            raise BudgetError(f"evaluating {int(new.numel())} new coalitions would exceed the budget of {self.budget} "
                              f"({self.n_spent} already spent)")
        if new.numel():
            first = torch.full((uniq.shape[0],), m, dtype=torch.int64, device=X.device)
            first = first.scatter_reduce(0, inverse, torch.arange(m, device=X.device), reduce="amin")
            vals = self.game(X[first[new]])
            vals = vals[:, None] if vals.ndim == 1 else vals
            self.n_spent += int(new.numel())
            start = 0 if self._tkeys is None else self._tkeys.shape[0]
            self._tkeys = uniq[new] if self._tkeys is None else torch.cat([self._tkeys, uniq[new]])
            self._tvalues = vals if self._tvalues is None else torch.cat([self._tvalues, vals])
            pos[new] = torch.arange(start, start + int(new.numel()), device=X.device)
        return self._tvalues[pos[inverse]]

    def output(self, values: np.ndarray) -> np.ndarray:
        """Drop the output axis of a 2-D result for a scalar game.

        Examples
        --------
        >>> import fairshare as fs
        >>> ev = BudgetedEvaluator(fs.games.AdditiveGame([1.0]), None)
        >>> _ = ev(np.ones((1, 1), bool)); ev.output(np.zeros((3, 1))).shape
        (3,)
        """
        return values[..., 0] if self.scalar else values


_KEY_BITS = 62


def _tensor_keys(X: Any) -> Any:
    """Coalition rows of a boolean tensor as int64 words of 62 bits (exact, comparable on the device)."""
    import torch

    m, d = X.shape
    words = -(-d // _KEY_BITS)
    padded = torch.zeros((m, words * _KEY_BITS), dtype=torch.bool, device=X.device)
    padded[:, :d] = X
    weights = torch.pow(2, torch.arange(_KEY_BITS, device=X.device, dtype=torch.int64))
    out = torch.empty((m, words), dtype=torch.int64, device=X.device)
    step = max(1, (1 << 24) // (words * _KEY_BITS))
    for start in range(0, m, step):
        block = padded[start:start + step].reshape(-1, words, _KEY_BITS).to(torch.int64)
        out[start:start + step] = (block * weights).sum(dim=2)
    return out
