"""Evaluating a game for an estimator: each distinct coalition once, within a budget."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arrays import is_tensor
from ..games.base import Game
from ..store.coalitions import CoalitionStore, coalition_keys, key_hashes, unique_keys

__all__ = ["BudgetedEvaluator", "BudgetError"]


class BudgetError(ValueError):
    """Raised when a budget is too small for a method, or would be exceeded."""


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
        hashes = key_hashes(keys)
        uniq, first, inverse = unique_keys(hashes, keys)
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
