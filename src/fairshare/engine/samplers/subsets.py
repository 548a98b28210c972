"""Uniform random subsets of given sizes: by rank (small populations, exactly without replacement), by Floyd's
algorithm (:mod:`.floyd`, compiled, any mix of sizes at once) or on a torch device; and complementary pairs.

Every draw takes its random numbers from the generator it is given (a sampler's own stream, split from the
run's seed by :mod:`fairshare._core.seeds`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._core.combinatorics import log_binom
from ..._core.seeds import integer_seed
from ...store.coalitions import coalition_keys
from .floyd import floyd_fill, floyd_rows

__all__ = ["random_subsets", "distinct_subsets", "distinct_by_size", "torch_subsets", "to_device",
           "with_complements"]

_UNRANK_LIMIT = 1 << 62


def _unrank_colex(ranks: np.ndarray, d: int, h: int) -> np.ndarray:
    """Subsets of size ``h`` of ``range(d)`` with the given colexicographic ranks (vectorized)."""
    m = ranks.size
    out = np.zeros((m, d), dtype=bool)
    if h == 0 or m == 0:
        return out
    # table[c, k] = C(c, k) for c < d, by C(c, k) = sum_{j < c} C(j, k - 1): a cumulative sum per column. Every
    # entry used is at most the population (<= 2^62), and the columns grow with c, so nothing overflows
    # below the entries that matter; larger ones are capped (never chosen)
    table = np.zeros((d, h + 1), dtype=np.int64)
    table[:, 0] = 1
    for k in range(1, h + 1):
        col = np.cumsum(np.minimum(table[:-1, k - 1], _UNRANK_LIMIT).astype(np.float64))
        exact = np.cumsum(table[:-1, k - 1])
        table[1:, k] = np.where(col < 2.0**62, exact, _UNRANK_LIMIT)
    r = ranks.astype(np.int64).copy()
    rows = np.arange(m)
    for k in range(h, 0, -1):
        c = np.searchsorted(table[:, k], r, side="right") - 1
        out[rows, c] = True
        r -= table[c, k]
    return out


def random_subsets(rng: np.random.Generator, d: int, sizes: np.ndarray) -> np.ndarray:
    """One uniform random subset of ``range(d)`` per entry of ``sizes`` (repeats possible).

    Compiled Floyd's algorithm over all rows at once (:mod:`.floyd`): no loop per size or row.

    Examples
    --------
    >>> S = random_subsets(np.random.default_rng(0), 10, np.array([3, 7, 0, 10]))
    >>> S.sum(axis=1)
    array([ 3,  7,  0, 10])
    """
    return floyd_rows(rng, d, np.asarray(sizes, dtype=np.int64))


def distinct_by_size(rng: np.random.Generator, d: int, sizes: np.ndarray, containing: np.ndarray,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Uniform random subsets of the given sizes, distinct among rows of the same size (populations so large
    that repeats are rare: they are drawn again). ``containing[r]``: row ``r`` must hold player 0. Written into
    ``out`` (all False; a view such as every other row of the caller's array) when given.

    Examples
    --------
    >>> S = distinct_by_size(np.random.default_rng(0), 6, np.array([3, 3]), np.array([True, False]))
    >>> S.sum(axis=1).tolist(), bool(S[0, 0])
    ([3, 3], True)
    """
    def draw(rows: np.ndarray, block: np.ndarray) -> None:
        hold = containing[rows].astype(np.int64)           # player 0, then a subset of players 1..d-1
        block[hold == 1, 0] = True
        order = np.concatenate([np.flatnonzero(hold == 1), np.flatnonzero(hold == 0)])
        floyd_fill(rng, block, sizes[rows] - hold, d - hold, hold, draw_order=order)

    out = np.zeros((sizes.size, d), dtype=bool) if out is None else out
    draw(np.arange(sizes.size), out)
    # only sizes whose repeats are not negligible are checked (expected repeats count^2 / (2 C(d, h)))
    counts = np.bincount(sizes, minlength=d + 1).astype(float)
    risk = counts**2 / 2.0 * np.exp(-log_binom(d, np.arange(d + 1)))
    checked = risk[sizes] > 1e-12
    idx = np.flatnonzero(checked)
    for _ in range(64):
        if idx.size == 0:
            return out
        # a repeat within a size: keep the first, draw the others again
        all_keys = coalition_keys(out[idx])
        order = np.lexsort((all_keys, sizes[idx]))
        keys, sz = all_keys[order], sizes[idx][order]
        dup = np.zeros(idx.size, dtype=bool)
        dup[order[1:]] = (keys[1:] == keys[:-1]) & (sz[1:] == sz[:-1])
        todo = idx[dup]
        if todo.size == 0:
            return out
        block = np.zeros((todo.size, d), dtype=bool)
        draw(todo, block)
        out[todo] = block
    raise RuntimeError("could not draw distinct subsets")


def distinct_subsets(rng: np.random.Generator, d: int, h: int, count: int, *, containing: int | None = None) -> np.ndarray:
    """``count`` distinct uniform subsets of size ``h`` (sampling without replacement).

    With ``containing=i`` only subsets holding player ``i`` are drawn (used to pick one
    representative per complementary pair of size ``d/2``). Exact for any ``count`` up to
    the number of such subsets: small populations are drawn by rank without replacement
    and unranked; astronomically large ones by random subsets, redrawing the (vanishingly
    rare) repeats.

    Examples
    --------
    >>> S = distinct_subsets(np.random.default_rng(0), 5, 2, 10)    # all C(5, 2) = 10 of them
    >>> len({tuple(r) for r in S.astype(int)})
    10
    """
    if containing is not None:
        rest = distinct_subsets(rng, d - 1, h - 1, count)
        return np.insert(rest, containing, True, axis=1)
    if count == 0:
        return np.zeros((0, d), dtype=bool)
    flip = h > d - h
    k = d - h if flip else h
    population = math.comb(d, k)
    if count > population:
        raise ValueError(f"cannot draw {count} distinct subsets of size {h} from {population}")
    if population <= _UNRANK_LIMIT:
        ranks = rng.choice(population, size=count, replace=False)
        out = _unrank_colex(np.asarray(ranks), d, k)
    else:
        out = random_subsets(rng, d, np.full(count, k))
        while True:
            _, first = np.unique(coalition_keys(out), return_index=True)
            if first.size == count:
                break
            keep = np.sort(first)
            out = np.concatenate([out[keep], random_subsets(rng, d, np.full(count - keep.size, k))])
    return ~out if flip else out


def with_complements(S: Any) -> Any:
    """Rows ``S_0, N \\ S_0, S_1, N \\ S_1, ...`` (written in place: no stacked temporaries; on a tensor's device).

    Examples
    --------
    >>> with_complements(np.array([[True, False, False]])).astype(int).tolist()
    [[1, 0, 0], [0, 1, 1]]
    """
    if not isinstance(S, np.ndarray):
        import torch

        out = torch.empty((2 * S.shape[0], S.shape[1]), dtype=torch.bool, device=S.device)
        out[0::2] = S
        out[1::2] = ~S
        return out
    out = np.empty((2 * S.shape[0], S.shape[1]), dtype=bool)
    out[0::2] = S
    np.logical_not(S, out=out[1::2])
    return out


def to_device(rows: np.ndarray, device: Any) -> Any:
    """A boolean numpy array as a torch tensor on ``device``.

    Examples
    --------
    >>> to_device(np.array([[True, False]]), "cpu").tolist()
    [[True, False]]
    """
    import torch

    return torch.as_tensor(np.ascontiguousarray(rows), device=device)


def torch_subsets(rng: np.random.Generator, d: int, sizes: np.ndarray, device: Any,
                  containing: np.ndarray | None = None) -> Any:
    """Uniform random subsets of the given sizes drawn on a torch ``device``: a row's ``k`` smallest of ``d``
    uniform keys (one sort per row, in parallel on a GPU), the torch generator seeded from the numpy generator
    ``rng`` (:func:`fairshare._core.seeds.integer_seed`). ``containing[r]``: row ``r`` holds player 0 and ``k - 1``
    of the others. Rows of one size are distinct with overwhelming probability (the sizes drawn this way have
    more than 2^40 coalitions).

    Examples
    --------
    >>> S = torch_subsets(np.random.default_rng(0), 10, np.array([3, 7, 0, 10]), "cpu")
    >>> S.sum(dim=1).tolist()
    [3, 7, 0, 10]
    """
    import torch

    sizes = np.asarray(sizes, dtype=np.int64)
    m = sizes.size
    hold = np.zeros(m, dtype=bool) if containing is None else np.asarray(containing, dtype=bool)
    gen = torch.Generator(device=device)
    gen.manual_seed(integer_seed(rng, 2**62))
    out = torch.empty((m, d), dtype=torch.bool, device=device)
    step = max(1, (1 << 26) // max(d, 1))                   # rows per chunk: bounded temporaries
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        keys = torch.rand((hi - lo, d), generator=gen, device=device)
        keys[torch.as_tensor(hold[lo:hi], device=device), 0] = -1.0            # player 0 first where it must be in
        k = torch.as_tensor(sizes[lo:hi], device=device)
        threshold = torch.sort(keys, dim=1).values.gather(1, torch.clamp(k - 1, min=0)[:, None])
        out[lo:hi] = (keys <= threshold) & (k > 0)[:, None]
    return out
