"""Monte Carlo baselines: permutation sampling (Shapley) and per-player sampling (Banzhaf).

Both return per-player standard errors from the sample variance of the
marginal contributions, at no extra evaluations.
"""

from __future__ import annotations

import numpy as np

from ..evaluation import BudgetedEvaluator, BudgetError
from ..game import Game
from ..registry import Estimate, MethodSpec, register
from ..semivalues import Semivalue

# Most booleans materialized at once for a block of sampled coalitions (64 MB).
_BLOCK_BOOLS = 1 << 26
_MAX_ROUNDS = 32


def _rounds(evaluator: BudgetedEvaluator, unit_cost: int, limit=None):
    """Yield how many sampling units (permutations, pairs) to draw, round after round.

    Repeated coalitions are answered from memory for free, so what a round leaves
    unspent is drawn again in the next one, until the budget cannot pay for one
    more unit, a round finds nothing new, or ``_MAX_ROUNDS`` rounds have run. With
    ``limit`` (a function giving the most units for the next round) rounds double, for ``tol``.
    """
    for _ in range(_MAX_ROUNDS if limit is None else 64):
        units = evaluator.remaining // unit_cost
        if limit is not None:
            units = min(units, limit())
        if units < 1:
            return
        spent = evaluator.n_spent
        yield units
        if evaluator.n_spent == spent:
            return


class _Moments:
    """Running per-player mean and sum of squared deviations (Chan et al.'s pairwise update)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.count = np.zeros(shape[0])
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add(self, count: np.ndarray, mean: np.ndarray, m2: np.ndarray) -> None:
        total = self.count + count
        safe = np.where(total > 0, total, 1.0)
        delta = mean - self.mean
        self.mean = self.mean + delta * (count / safe)[:, None]
        self.m2 = self.m2 + m2 + delta**2 * (self.count * count / safe)[:, None]
        self.count = total

    def stderr(self) -> np.ndarray | None:
        if np.any(self.count < 2):
            return None
        return np.sqrt(self.m2 / (self.count - 1)[:, None] / self.count[:, None])


# --------------------------------------------------------------------------- permutation
def _permutation_min_budget(game: Game, sv: Semivalue) -> int:
    return 2 if game.n_players == 1 else game.n_players + 1


def draw_permutations(rng: np.random.Generator, t: int, n: int, antithetic: bool, stratified: bool) -> np.ndarray:
    """``t`` permutations of ``range(n)`` as rows: uniform; with ``stratified``, blocks of ``n`` cyclic shifts
    of one random permutation (each player takes every position once per block); with ``antithetic``,
    every second permutation is the reverse of the one before.

    Examples
    --------
    >>> P = draw_permutations(np.random.default_rng(0), 4, 4, antithetic=False, stratified=True)
    >>> sorted(P[:, 0].tolist()) == [0, 1, 2, 3]     # every player first exactly once
    True
    """
    base_count = (t + 1) // 2 if antithetic else t
    if stratified:
        blocks = -(-base_count // n)
        seeds = np.argsort(rng.random((blocks, n)), axis=1)
        shifts = (np.arange(n)[None, :] + np.arange(n)[:, None]) % n          # (n shifts, n positions)
        base = seeds[:, shifts].reshape(-1, n)[:base_count]
    else:
        base = np.argsort(rng.random((base_count, n)), axis=1)
    if not antithetic:
        return base
    return np.stack([base, base[:, ::-1]], axis=1).reshape(-1, n)[:t]


def run_permutation(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator, rng: np.random.Generator,
                    antithetic: bool = False, stratified: bool = False, reuse: bool = True,
                    permutations: int | None = None, tol: float | None = None) -> Estimate:
    """Permutation Monte Carlo for Shapley values; by default the optimized walk of the projected-SGD
    paper (Algorithm 1).

    Each permutation walks from the empty coalition to the grand coalition adding one player at a
    time, reusing each coalition's value as the start of the next marginal contribution: ``n - 1`` new
    evaluations per permutation (the empty and grand coalitions are shared). Per-player means and
    variances are accumulated online, giving ``stderr`` and the ``tol`` stopping rule. With
    ``reuse=False`` every marginal contribution ``v(S + i) - v(S)`` is evaluated afresh (classic Monte
    Carlo: ``2n`` evaluations per permutation, for comparisons); the estimate is the same for the
    same permutations. ``permutations`` fixes how many permutations are drawn (the budget must cover
    them); by default as many as the budget pays for.
    """
    n = game.n_players
    ends = evaluator(game.empty_and_full())
    empty, full = ends[0], ends[1]
    if n == 1:
        diff = (full - empty)[None, :]
        return Estimate(values=diff, stderr=np.zeros_like(diff), empty_value=empty, grand_value=full,
                        info={"n_permutations": 0})
    cost = n - 1 if reuse else 2 * n
    if permutations is not None:
        if not isinstance(permutations, (int, np.integer)) or permutations < 1:
            raise ValueError(f"permutations must be a positive integer, got {permutations!r}")
        if evaluator.remaining < permutations * cost:
            raise BudgetError(f"{permutations} permutations of {n} players may need {permutations * cost + 2} "
                              f"evaluations; the budget is {evaluator.budget}")
    if evaluator.remaining < cost:
        raise BudgetError(f"budget too small for one permutation of {n} players ({cost} evaluations)")
    k = ends.shape[1]
    moments = _Moments((n, k))
    block = max(2, _BLOCK_BOOLS // (n * n))
    block -= block % 2
    steps = np.arange(1, n)
    n_perm = 0
    while evaluator.remaining >= cost and (permutations is None or n_perm < permutations):
        units = min(evaluator.remaining // cost, block)
        if permutations is not None:
            units = min(units, permutations - n_perm)
        if tol is not None:
            units = min(units, max(2, n_perm))                           # doubling rounds
        perms = draw_permutations(rng, units, n, antithetic, stratified)
        spent = evaluator.n_spent
        if reuse:
            _permutation_block(evaluator, moments, empty, full, perms, steps)
        else:
            _classic_block(game, evaluator, moments, perms)
        n_perm += units
        if tol is not None and n_perm >= 2 and moments.count.min() >= 2:
            se = moments.stderr()
            norm = np.linalg.norm(moments.mean)
            if se is not None and norm > 0 and np.linalg.norm(se) / norm <= tol:
                break
        if reuse and evaluator.n_spent == spent and n_perm > 32 * n:
            break                                                         # every coalition is known already
    info = {"n_permutations": int(n_perm)}
    if tol is not None:
        se, norm = moments.stderr(), np.linalg.norm(moments.mean)
        info["estimated_relative_error"] = float(np.linalg.norm(se) / norm) if se is not None and norm > 0 else None
    return Estimate(values=moments.mean, stderr=moments.stderr(), empty_value=empty, grand_value=full, info=info)


def _permutation_block(evaluator: BudgetedEvaluator, moments: _Moments, empty: np.ndarray, full: np.ndarray,
                       perms: np.ndarray, steps: np.ndarray) -> None:
    t, n = perms.shape
    k = empty.size
    ranks = np.empty_like(perms)
    rows = np.arange(t)[:, None]
    ranks[rows, perms] = np.arange(n)[None, :]
    # coalition after j players joined: players whose rank is below j
    X = ranks[:, None, :] < steps[None, :, None]                       # (t, n-1, n)
    inner = evaluator(X.reshape(-1, n)).reshape(t, n - 1, k)
    chain = np.concatenate([np.broadcast_to(empty, (t, 1, k)), inner, np.broadcast_to(full, (t, 1, k))], axis=1)
    _accumulate(moments, np.diff(chain, axis=1), perms)


def _classic_block(game: Game, evaluator: BudgetedEvaluator, moments: _Moments, perms: np.ndarray) -> None:
    """Classic Monte Carlo: v(S) and v(S + i) evaluated separately for every position (2n evaluations
    per permutation, charged to the budget; the game is called directly, without reuse)."""
    t, n = perms.shape
    ranks = np.empty_like(perms)
    rows = np.arange(t)[:, None]
    ranks[rows, perms] = np.arange(n)[None, :]
    before = ranks[:, None, :] < np.arange(n)[None, :, None]            # S for position j: first j players
    after = ranks[:, None, :] < np.arange(1, n + 1)[None, :, None]      # S + i
    evaluator.charge(2 * t * n)
    vals = game(np.concatenate([before.reshape(-1, n), after.reshape(-1, n)]))
    vals = vals[:, None] if vals.ndim == 1 else vals
    k = vals.shape[1]
    marginal = (vals[t * n:] - vals[: t * n]).reshape(t, n, k)
    _accumulate(moments, marginal, perms)


def _accumulate(moments: _Moments, marginal: np.ndarray, perms: np.ndarray) -> None:
    t, n = perms.shape
    contrib = np.empty_like(marginal)
    contrib[np.arange(t)[:, None], perms] = marginal                    # back to player order
    mean = contrib.mean(axis=0)
    moments.add(np.full(n, float(t)), mean, ((contrib - mean) ** 2).sum(axis=0))


register(MethodSpec(
    name="permutation",
    run=run_permutation,
    indices=("shapley",),
    description="permutation Monte Carlo, the optimized walk (n-1 evaluations per permutation); antithetic, "
                "stratified or classic (reuse=False) on request",
    options={"antithetic": False, "stratified": False, "reuse": True, "permutations": None},
    min_budget=_permutation_min_budget,
    default_for={"shapley": 10},
    supports_tol=True,
))


# --------------------------------------------------------------------------- mc-banzhaf
def _inclusion_probability(sv: Semivalue) -> float:
    return float(sv.params.get("w", 0.5))


def _relative_error(moments: _Moments) -> float | None:
    se = moments.stderr()
    norm = float(np.linalg.norm(moments.mean))
    return float(np.linalg.norm(se)) / norm if se is not None and norm > 0 else None


def run_mc_banzhaf(game: Game, sv: Semivalue, evaluator: BudgetedEvaluator,
                   rng: np.random.Generator, tol: float | None = None) -> Estimate:
    """Per-player Monte Carlo for (weighted) Banzhaf values (Kernel Banzhaf paper, section 4.1).

    The budget left after the empty and grand coalitions is split into pairs
    ``(S, S + i)``, spread evenly over players (the remainder to randomly chosen
    players); ``S`` holds each other player independently with probability ``w``
    (1/2 for Banzhaf). Player ``i``'s estimate is the mean of ``v(S + i) - v(S)``.
    """
    n = game.n_players
    ends = evaluator(game.empty_and_full())
    k = ends.shape[1]
    if evaluator.remaining < 2 * n:
        raise BudgetError(f"mc-banzhaf needs at least one pair of evaluations per player (2n + 2 = {2 * n + 2})")
    w = _inclusion_probability(sv)
    moments = _Moments((n, k))
    block = max(1, _BLOCK_BOOLS // (2 * n))
    done = 0
    for n_pairs in _rounds(evaluator, 2, limit=None if tol is None else lambda: max(2 * n, done)):
        done += n_pairs
        counts = np.full(n, n_pairs // n)
        counts[rng.choice(n, n_pairs % n, replace=False)] += 1
        owner = np.repeat(np.arange(n), counts)                            # sorted by player
        for start in range(0, n_pairs, block):
            _banzhaf_block(evaluator, rng, moments, owner[start:start + block], w)
        if tol is not None:
            err = _relative_error(moments)
            if err is not None and err <= tol:
                break
    info = {"samples_per_player": (int(moments.count.min()), int(moments.count.max()))}
    if tol is not None:
        info["estimated_relative_error"] = _relative_error(moments)
    return Estimate(values=moments.mean, stderr=moments.stderr(), empty_value=ends[0], grand_value=ends[1], info=info)


def _banzhaf_block(evaluator: BudgetedEvaluator, rng: np.random.Generator, moments: _Moments,
                   who: np.ndarray, w: float) -> None:
    n, k = moments.mean.shape
    t = who.size
    without = rng.random((t, n)) < w
    without[np.arange(t), who] = False
    with_i = without.copy()
    with_i[np.arange(t), who] = True
    vals = evaluator(np.concatenate([without, with_i]))
    diff = vals[t:] - vals[:t]                                          # (t, k)
    players, first, cnt = np.unique(who, return_index=True, return_counts=True)
    sums = np.add.reduceat(diff, first, axis=0)
    mean = sums / cnt[:, None]
    m2 = np.add.reduceat((diff - np.repeat(mean, cnt, axis=0)) ** 2, first, axis=0)
    c_all, mean_all, m2_all = np.zeros(n), np.zeros((n, k)), np.zeros((n, k))
    c_all[players], mean_all[players], m2_all[players] = cnt, mean, m2
    moments.add(c_all, mean_all, m2_all)


register(MethodSpec(
    name="mc-banzhaf",
    run=run_mc_banzhaf,
    indices=("weighted-banzhaf",),
    description="Monte Carlo per player: mean of v(S+i) - v(S) over random S (Banzhaf and weighted Banzhaf)",
    min_budget=lambda game, sv: 2 * game.n_players + 2,
    default_for={"weighted-banzhaf": 10},
    supports_tol=True,
))
