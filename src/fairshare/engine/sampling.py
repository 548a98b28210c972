"""Coalition samplers: pure numpy, no game.

Every distribution used by the estimators is *size-symmetric*: it puts a mass
``q_h`` on coalition size ``h`` and spreads it uniformly over the ``C(d, h)``
coalitions of that size. A sampler therefore works in two steps: decide how many
coalitions of each size to take (with or without replacement, paired or not), then
draw that many uniform subsets of each size. The result is a :class:`CoalitionSample`
holding the rows and the weights that make weighted sums over the sample unbiased
for sums over all coalitions (Horvitz-Thompson weights).

Sizes and probabilities live in log space, so ``d = 3072`` works.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.arrays import row_counts
from .._core.combinatorics import log_binom, logsumexp
from ..store.coalitions import coalition_keys

__all__ = [
    "DISTRIBUTIONS",
    "shapley_size_log_mass",
    "distinct_subsets",
    "random_subsets",
    "CoalitionSample",
    "sample_with_replacement",
    "sample_without_replacement",
]

#: Sampling distributions of the unified Shapley framework and their tau (Eq. 2.1): q_h ~ (h (d-h))^-tau.
DISTRIBUTIONS = {"kernel": 1.0, "modified": 0.5, "leverage": 0.0}

_UNRANK_LIMIT = 1 << 62
_RANDOM_DRAW_POPULATION = 1 << 40      # sizes with more coalitions are drawn at random (repeats ~ count^2 / 2^41)
_AUTO_COMPLETE_SHARE = 0.6


def shapley_size_log_mass(d: int, distribution: str = "kernel", tau: float | None = None) -> np.ndarray:
    """``log q_h`` for ``h = 0..d``: the probability that a sampled coalition has size ``h``.

    Kernel weights (tau = 1), leverage scores (tau = 0), modified l2 (tau = 1/2) or
    any ``tau`` in [0, 1] (unified framework v1, Eq. 2.1 and A.66): coalitions of size
    ``h`` get total mass proportional to ``(h (d - h))^-tau``; the empty and full
    coalitions get none.

    Examples
    --------
    >>> q = np.exp(shapley_size_log_mass(4, "leverage"))
    >>> np.round(q, 3)
    array([0.   , 0.333, 0.333, 0.333, 0.   ])
    """
    if distribution == "tau":
        if tau is None or not 0.0 <= float(tau) <= 1.0:
            raise ValueError(f"tau must be given in [0, 1] with distribution='tau', got {tau!r}")
        t = float(tau)
    elif distribution in DISTRIBUTIONS:
        if tau is not None:
            raise ValueError(f"tau is only used with distribution='tau', not {distribution!r}")
        t = DISTRIBUTIONS[distribution]
    else:
        raise ValueError(f"distribution must be one of {sorted(DISTRIBUTIONS) + ['tau']}, got {distribution!r}")
    if d < 2:
        raise ValueError("sampling coalitions of sizes 1..d-1 needs at least 2 players")
    h = np.arange(d + 1, dtype=float)
    out = np.full(d + 1, -np.inf)
    inner = h[1:-1]
    out[1:-1] = -t * (np.log(inner) + np.log(d - inner))
    return out - logsumexp(out)


# --------------------------------------------------------------------------- uniform subsets of one size
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

    Compiled Floyd's algorithm over all rows at once (:mod:`fairshare.engine.subsets`): no loop per size or row.

    Examples
    --------
    >>> S = random_subsets(np.random.default_rng(0), 10, np.array([3, 7, 0, 10]))
    >>> S.sum(axis=1)
    array([ 3,  7,  0, 10])
    """
    from .subsets import floyd_rows

    return floyd_rows(rng, d, np.asarray(sizes, dtype=np.int64))


def _distinct_by_size(rng: np.random.Generator, d: int, sizes: np.ndarray, containing: np.ndarray,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Uniform random subsets of the given sizes, distinct among rows of the same size (populations so large
    that repeats are rare: they are drawn again). ``containing[r]``: row ``r`` must hold player 0. Written into
    ``out`` (all False; a view such as every other row of the caller's array) when given."""
    from .subsets import floyd_fill

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


# --------------------------------------------------------------------------------------- samples
@dataclass
class CoalitionSample:
    """Sampled coalitions with Horvitz-Thompson weights.

    Attributes
    ----------
    coalitions : bool (m, d)
    log_weight : float (m,)
        Log of the Horvitz-Thompson weight: ``sum_j exp(log_weight_j) f(S_j)`` is an unbiased
        estimate of ``sum_S f(S)`` over the coalitions the distribution covers. Kept as a
        logarithm because weights reach ``C(3072, 1536)``.
    unit : int (m,)
        Sampling unit of each row (a complementary pair shares one unit).
    stratum : int (m,)
        Size class the unit was drawn from (used for balanced variance groups).
    fpc : float (m,)
        Finite-population factor ``1 - pi`` of the unit (0 for units taken with certainty;
        1 with replacement).
    n_draws : int
        Number of draws (with replacement) or units (without replacement).
    paired : bool
        Rows come in complementary pairs ``S, N \\ S`` (rows ``2i`` and ``2i + 1``).
    coverage : str
        ``"random"``: every coalition the distribution covers could have been drawn (weighted sums are
        unbiased and their variance is estimable); ``"all"``: every such coalition was taken (exact);
        ``"partial"``: some sizes were taken whole and others not at all (a deterministic design whose
        error cannot be estimated from the sample).
    """

    coalitions: np.ndarray
    log_weight: np.ndarray
    unit: np.ndarray
    stratum: np.ndarray
    fpc: np.ndarray
    n_draws: int
    paired: bool = False
    coverage: str = "random"
    fresh: bool = False
    _sizes: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def sizes(self) -> Any:
        """Members of each row (computed once; on the coalitions' device)."""
        if self._sizes is None:
            self._sizes = row_counts(self.coalitions)
        return self._sizes

    @property
    def n_rows(self) -> int:
        """Number of sampled rows."""
        return int(self.coalitions.shape[0])

    @property
    def weight(self) -> np.ndarray:
        """The weights themselves (overflow to inf for very large games; use ``log_weight``)."""
        with np.errstate(over="ignore"):
            return np.exp(self.log_weight)


def _check_symmetric(log_q: np.ndarray) -> None:
    finite = np.isfinite(log_q)
    if not np.array_equal(finite, finite[::-1]) or not np.allclose(log_q[finite], log_q[::-1][finite]):
        raise ValueError("paired sampling needs a size distribution symmetric under h -> d - h")


def _log_sizes(d: int, log_q: np.ndarray) -> np.ndarray:
    if log_q.shape != (d + 1,):
        raise ValueError(f"log_q must have one entry per size 0..{d}, got shape {log_q.shape}")
    return log_binom(d, np.arange(d + 1))


def sample_with_replacement(rng: np.random.Generator, d: int, log_q: np.ndarray, n_draws: int,
                            paired: bool = True, device: Any = None) -> CoalitionSample:
    """Draw coalitions i.i.d. from the size distribution ``exp(log_q)`` (App. F, Algorithm 1).

    With ``paired``, ``n_draws`` coalitions are drawn and each is followed by its
    complement (``2 n_draws`` rows). A row ``S`` gets weight ``1 / (E[count of S])``.

    Examples
    --------
    >>> q = shapley_size_log_mass(6, "kernel")
    >>> s = sample_with_replacement(np.random.default_rng(0), 6, q, 50)
    >>> s.n_rows, bool(np.all(s.coalitions[0::2] == ~s.coalitions[1::2]))
    (100, True)
    """
    log_c = _log_sizes(d, log_q)
    if paired:
        _check_symmetric(log_q)
    q = np.exp(log_q)
    sizes = rng.choice(d + 1, size=n_draws, p=q / q.sum())
    S = random_subsets(rng, d, sizes) if device is None else torch_subsets(rng, d, sizes, device)
    # expected number of times a given coalition of size h appears as a row
    expected_log = np.log(n_draws) + log_q - log_c + (np.log(2.0) if paired else 0.0)
    unit = np.arange(n_draws)
    if paired:
        S = _with_complements(S)
        sizes = np.stack([sizes, d - sizes], axis=1).reshape(-1)
        unit = np.repeat(unit, 2)
    stratum = np.minimum(sizes, d - sizes) if paired else sizes
    return CoalitionSample(S, -expected_log[sizes], unit, stratum, np.ones(S.shape[0]), int(n_draws), paired)


def _scale_for(log_units: np.ndarray, log_mass: np.ndarray, target: float) -> float:
    """log c such that sum_h min(N_h, c * mass_h) = target (bisection in log space)."""
    lo, hi = -800.0, 800.0
    for _ in range(64):                     # 1600 / 2^64: far below float resolution
        mid = 0.5 * (lo + hi)
        total = np.exp(logsumexp(np.minimum(log_units, mid + log_mass)))
        if total < target:
            lo = mid
        else:
            hi = mid
    return hi


def _systematic_round(expected: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Integer counts with the given means and a fixed total (systematic rounding)."""
    cum = np.concatenate([[0.0], np.cumsum(expected)])
    u = rng.random()
    return np.diff(np.floor(cum + u)).astype(np.int64)


def sample_without_replacement(rng: np.random.Generator, d: int, log_q: np.ndarray, n_units: int,
                               paired: bool = True, counts: str = "systematic",
                               complete: bool | str = False, device: Any = None) -> CoalitionSample:
    """Draw distinct coalitions (App. F, Algorithm 2), each with inclusion probability
    ``min(1, c * p_S)``, the scale ``c`` found by binary search so that about ``n_units``
    units are drawn.

    The number of units of each size is drawn by ``counts``:

    - ``"binomial"``: Binomial(N_h, pi_h) as in the paper, Poisson(N_h pi_h) for sizes with
      more than 1e10 coalitions; the total is random, so draws are repeated until it fits
      ``n_units``.
    - ``"systematic"`` (default): systematic rounding of the expected counts, which keeps
      every inclusion probability exact and the total equal to ``n_units``.

    With ``complete``, whole size levels (sizes ``h`` and ``d - h``) are taken with certainty
    from the outside in while the budget covers them (``True``), or only while a level fills
    at least 60% of what is left (``"auto"``: at small budgets the coalitions of one player
    and of all but one player, which alone make the estimate exact for games with pairwise
    interactions, are worth more than a spread-out sample; measured in benchmarks/shapley.py).
    The rest of the budget is sampled as above.

    Then that many distinct uniform subsets of each size are drawn. With ``paired``, a
    unit is a pair ``{S, complement of S}`` and both rows are returned. Once ``n_units``
    covers every unit, every coalition is taken with weight 1 (the estimate is exact).

    Examples
    --------
    >>> q = shapley_size_log_mass(5, "leverage")
    >>> s = sample_without_replacement(np.random.default_rng(0), 5, q, 15)   # all 15 pairs
    >>> s.n_rows, bool(np.all(s.weight == 1.0))
    (30, True)
    """
    if counts not in ("systematic", "binomial"):
        raise ValueError(f"counts must be 'systematic' or 'binomial', got {counts!r}")
    if complete not in (True, False, "auto"):
        raise ValueError(f"complete must be True, False or 'auto', got {complete!r}")
    log_c = _log_sizes(d, log_q)
    sizes_all = np.arange(d + 1)
    if paired:
        _check_symmetric(log_q)
        h = sizes_all[(sizes_all <= d / 2) & np.isfinite(log_q)]
        log_units = log_c[h] - np.where(2 * h == d, np.log(2.0), 0.0)
        # mass of one pair unit: p_S + p_complement = 2 q_h / C(d, h)
        log_unit_mass = np.log(2.0) + log_q[h] - log_c[h]
    else:
        h = sizes_all[np.isfinite(log_q)]
        log_units = log_c[h]
        log_unit_mass = log_q[h] - log_c[h]
    log_total = float(logsumexp(log_units))
    target = float(n_units)
    forced = np.zeros(h.size, dtype=bool)
    if complete:
        # take whole size levels from the outside in (sizes 1 and d-1 first) while the budget covers them
        level = np.minimum(h, d - h)
        left = target
        for lev in np.unique(level):
            members = level == lev
            need = float(np.exp(logsumexp(log_units[members])))
            if need > left + 1e-9 or (complete == "auto" and need < _AUTO_COMPLETE_SHARE * left):
                break
            forced |= members
            left -= need
    if counts == "binomial":
        # keep the random total within the budget: aim 3 standard deviations below it
        target = max(1.0, target - 3.0 * np.sqrt(target))
    if np.log(target + 0.5) >= log_total:
        log_pi = np.zeros(h.size)
    elif forced.any():
        log_pi = np.zeros(h.size)
        rest = ~forced
        remaining = target - float(np.exp(logsumexp(log_units[forced])))
        if rest.any() and remaining > 0:
            log_scale = _scale_for(log_units[rest], log_unit_mass[rest] + log_units[rest], remaining)
            log_pi[rest] = np.minimum(0.0, log_scale + log_unit_mass[rest])
        elif rest.any():
            log_pi[rest] = -np.inf
    else:
        log_scale = _scale_for(log_units, log_unit_mass + log_units, target)
        log_pi = np.minimum(0.0, log_scale + log_unit_mass)
    expected = np.exp(log_pi + log_units)
    with np.errstate(over="ignore"):
        units_h = np.exp(log_units)                # may be inf for huge sizes; only compared, never divided
    if counts == "systematic" or np.all(log_pi == 0.0):
        expected = np.minimum(expected, np.floor(units_h + 0.5))
        if expected.sum() > n_units:               # guard against rounding in the bisection
            expected *= n_units / expected.sum()
        n_h = _systematic_round(expected, rng)
        with np.errstate(divide="ignore"):
            log_pi_h = np.minimum(0.0, np.log(expected) - log_units)
        log_pi_h[expected >= units_h - 1e-9] = 0.0         # sizes taken whole
    else:
        n_h = _binomial_counts(rng, units_h, np.exp(log_pi), n_units)
        log_pi_h = log_pi
    if np.all(log_pi_h == 0.0):
        coverage = "all"
    elif np.any(np.isneginf(log_pi_h)):
        coverage = "partial"
    else:
        coverage = "random"
    # sizes with few coalitions are drawn exactly without replacement (by rank); the others all at once by
    # Floyd's algorithm, distinct within a size (repeats, vanishingly rare, drawn again). On the CPU every row
    # is written straight into the returned array (drawn rows, then their complements in place)
    big = log_c[h] > np.log(_RANDOM_DRAW_POPULATION)
    n_draw = int(n_h.sum())
    if n_draw == 0:
        empty = np.zeros(0)
        return CoalitionSample(np.zeros((0, d), bool), empty, empty.astype(int), empty.astype(int), empty, 0, paired,
                               coverage)
    order = np.concatenate([np.flatnonzero(~big), np.flatnonzero(big)])      # exact sizes first, then the rest
    size = np.repeat(h[order], n_h[order])
    log_upi = np.repeat(log_pi_h[order], n_h[order])
    S = None if device is not None else np.zeros((n_draw * (2 if paired else 1), d), dtype=bool)
    drawn = None if S is None else (S[0::2] if paired else S)
    blocks, row = [], 0
    for size_h, count in zip(h[~big], n_h[~big]):
        if count == 0:
            continue
        block = distinct_subsets(rng, d, int(size_h), int(count), containing=0 if paired and 2 * size_h == d else None)
        if drawn is None:
            blocks.append(to_device(block, device))
        else:
            drawn[row:row + count] = block
        row += int(count)
    if row < n_draw:
        rows = size[row:]
        holds = paired & (2 * rows == d)
        if drawn is None:
            blocks.append(torch_subsets(rng, d, rows, device, containing=holds))
        else:
            _distinct_by_size(rng, d, rows, holds, out=drawn[row:])
    if S is None:
        S = __import__("torch").cat(blocks)
    unit = np.arange(n_draw)
    if paired:
        if drawn is None:
            S = _with_complements(S)
        else:
            np.logical_not(drawn, out=S[1::2])
        unit = np.repeat(unit, 2)
        log_upi = np.repeat(log_upi, 2)
        size = np.repeat(size, 2)
    return CoalitionSample(S, -log_upi, unit, size, -np.expm1(log_upi), int(n_h.sum()), paired, coverage)


def _with_complements(S: Any) -> Any:
    """Rows ``S_0, N \\ S_0, S_1, N \\ S_1, ...`` (written in place: no stacked temporaries; on a tensor's device)."""
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
    """A boolean numpy array as a torch tensor on ``device``."""
    import torch

    return torch.as_tensor(np.ascontiguousarray(rows), device=device)


def torch_subsets(rng: np.random.Generator, d: int, sizes: np.ndarray, device: Any,
                  containing: np.ndarray | None = None) -> Any:
    """Uniform random subsets of the given sizes drawn on a torch ``device``: a row's ``k`` smallest of ``d``
    uniform keys (one sort per row, in parallel on a GPU), seeded from the numpy generator ``rng``.
    ``containing[r]``: row ``r`` holds player 0 and ``k - 1`` of the others. Rows of one size are distinct
    with overwhelming probability (the sizes drawn this way have more than 2^40 coalitions).

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
    gen.manual_seed(int(rng.integers(2**62)))
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


def _binomial_counts(rng: np.random.Generator, units: np.ndarray, pi: np.ndarray, limit: int) -> np.ndarray:
    big = units >= 1e10
    for _ in range(1000):
        n = np.where(big, rng.poisson(np.where(big, units * pi, 0.0)),
                     rng.binomial(np.round(np.where(big, 0, units)).astype(np.int64), np.where(big, 0.0, pi)))
        if n.sum() <= limit:
            return n.astype(np.int64)
    raise RuntimeError("could not draw binomial counts within the budget; use counts='systematic'")
