"""Monte Carlo accumulators: permutation sampling (Shapley), per-player marginals and maximum sample reuse
((weighted) Banzhaf), and their registry entries.

Each keeps running sums, so a round adds to the estimate instead of recomputing it, and gives
per-player standard errors from the spread of what it averaged (scaled by Student's quantile for
few samples, infinite with one). Antithetic permutations are averaged in their pairs before
their spread is taken (the two halves of a pair are not independent).
"""

from __future__ import annotations

import numpy as np

from ..indices.semivalues import Semivalue
from .samplers import (IndependentCoalitions, MarginalBatch, MarginalPairs, PermutationBatch, PermutationSampler,
                       TruncatedPermutations, WalkBatch, Walks, WeightedCoalitions)
from .solve import AGREEING_DRAWS, moderated_variance, small_sample_factor, without_rounding
from .._core.arguments import Option
from .spec import MethodSpec, Setup

#: the most sampled coalitions mc-banzhaf keeps to test its error bars of 0 against (an additive game's values fit
#: every one of them), and the most cells (coalitions x players) they hold
ADDITIVE_CHECK_ROWS = 4096
ADDITIVE_CHECK_CELLS = 1 << 22

__all__ = ["Moments", "PermutationSolver", "TruncatedSolver", "MarginalSolver", "ReuseSolver", "SPECS"]


class Moments:
    """Running per-player weighted mean and sum of squared deviations (Chan et al.'s pairwise update).

    Examples
    --------
    >>> m = Moments((2, 1)); m.add_samples(np.array([[[1.0], [2.0]], [[3.0], [2.0]]]))
    >>> m.mean.ravel().tolist(), m.count.tolist()
    ([2.0, 2.0], [2.0, 2.0])
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.count = np.zeros(shape[0])
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)
        self.peak = np.zeros(shape[1:])                  # the largest |mean| absorbed: the scale of rounding

    def add(self, count: np.ndarray, mean: np.ndarray, m2: np.ndarray) -> None:
        total = self.count + count
        safe = np.where(total > 0, total, 1.0)
        delta = mean - self.mean
        self.mean = self.mean + delta * (count / safe)[:, None]
        self.m2 = self.m2 + m2 + delta**2 * (self.count * count / safe)[:, None]
        self.count = total
        self.peak = np.maximum(self.peak, np.abs(mean).max(axis=0, initial=0.0))

    def add_samples(self, samples: np.ndarray) -> None:
        """``samples``: (t, players, k), one sample per player per row."""
        t = samples.shape[0]
        mean = samples.mean(axis=0)
        self.add(np.full(samples.shape[1], float(t)), mean, ((samples - mean) ** 2).sum(axis=0))

    def add_grouped(self, who: np.ndarray, samples: np.ndarray) -> None:
        """``samples`` (t, k), sample ``j`` of player (or node) ``who[j]``.

        Examples
        --------
        >>> m = Moments((3, 1)); m.add_grouped(np.array([2, 0, 2]), np.array([[1.0], [5.0], [3.0]]))
        >>> m.mean.ravel().tolist(), m.count.tolist()
        ([5.0, 0.0, 2.0], [1.0, 0.0, 2.0])
        """
        if who.size == 0:
            return
        order = np.argsort(who, kind="stable")
        who, samples = who[order], samples[order]
        players, first, cnt = np.unique(who, return_index=True, return_counts=True)
        mean = np.add.reduceat(samples, first, axis=0) / cnt[:, None]
        m2 = np.add.reduceat((samples - np.repeat(mean, cnt, axis=0)) ** 2, first, axis=0)
        n, k = self.mean.shape
        c_all, mean_all, m2_all = np.zeros(n), np.zeros((n, k)), np.zeros((n, k))
        c_all[players], mean_all[players], m2_all[players] = cnt, mean, m2
        self.add(c_all, mean_all, m2_all)

    def stderr(self, agreeing: int = 2) -> np.ndarray:
        """Standard error of each mean, with the small-sample factor; infinite below two samples. Each player's
        variance is moderated by one degree of freedom of the variance pooled over the players (empirical Bayes, as
        limma's moderated variances): a player whose few samples happen to be equal (a rare large contribution
        unseen) gets the pooled spread, not zero; with many samples its own variance rules. Where no sample of any
        player differs from its mean (an additive game), 0 from ``agreeing`` samples on, infinite below
        (:data:`~fairshare.engine.solve.AGREEING_DRAWS` where nothing else tells luck from an additive game).

        Examples
        --------
        >>> m = Moments((2, 1)); m.add_samples(np.array([[[1.0], [0.0]], [[3.0], [0.0]], [[2.0], [0.0]]]))
        >>> bool(m.stderr()[1, 0] > 0)                    # player 1's three samples are all 0
        True
        >>> m = Moments((1, 1)); m.add_samples(np.ones((3, 1, 1)))
        >>> m.stderr().ravel().tolist(), m.stderr(agreeing=6).ravel().tolist()
        ([0.0], [inf])
        """
        m2 = without_rounding(self.m2, self.mean, self.count, self.peak)
        var = moderated_variance(self.count, m2, no_spread=0.0, agreeing=agreeing)
        return np.sqrt(var) * small_sample_factor(self.count - 1)[:, None]

    def agreement_note(self, stderr: np.ndarray, what: str = "player") -> dict:
        """``{"stderr": why}`` where ``stderr`` is infinite only because too few samples agreed (see :meth:`stderr`
        with ``agreeing``), else ``{}``.

        Examples
        --------
        >>> m = Moments((1, 1)); m.add_samples(np.ones((3, 1, 1)))
        >>> m.agreement_note(m.stderr(agreeing=6))["stderr"][:44]
        'no sample of any player varied, in 3 samples'
        """
        few = np.isinf(stderr).any(axis=1) & (self.count >= 2)
        if not few.any():
            return {}
        c = self.count[few]
        lo, hi = int(c.min()), int(c.max())
        counts = f"{lo}" if lo == hi else f"{lo}-{hi}"
        return {"stderr": f"no sample of any {what} varied, in {counts} samples of {int(few.sum())} {what}s: too few "
                          f"to tell an additive game (exact values) from a variation unseen (fewer than "
                          f"{AGREEING_DRAWS})"}


# ---------------------------------------------------------------------------------- permutations
class PermutationSolver:
    """Per-player means of marginal contributions along sampled permutations."""

    def __init__(self, setup: Setup) -> None:
        self.d = setup.n_players
        self.antithetic = setup.options.get("antithetic", False)
        self.n_perm = 0

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.v0, self.vN = v0, vN
        self.moments = Moments((self.d, v0.size))

    def absorb(self, batch: PermutationBatch, values: np.ndarray) -> None:
        t, n = batch.perms.shape
        k = values.shape[1]
        if batch.reuse:
            inner = values.reshape(t, n - 1, k)
            chain = np.concatenate([np.broadcast_to(self.v0, (t, 1, k)), inner, np.broadcast_to(self.vN, (t, 1, k))],
                                   axis=1)
            marginal = np.diff(chain, axis=1)
        else:
            marginal = (values[t * n:] - values[: t * n]).reshape(t, n, k)
        contrib = np.empty_like(marginal)
        contrib[np.arange(t)[:, None], batch.perms] = marginal                  # back to player order
        if self.antithetic:
            contrib = 0.5 * (contrib[0::2] + contrib[1::2])                     # one sample per pair
        self.moments.add_samples(contrib)
        self.n_perm += t

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        stderr = self.moments.stderr(AGREEING_DRAWS)          # its values add up whatever the walks saw
        return self.moments.mean, stderr, {"n_permutations": int(self.n_perm), **self.moments.agreement_note(stderr)}


def _permutation_sampler(setup: Setup) -> PermutationSampler:
    o = setup.options
    return PermutationSampler(setup.sampler_rng, setup.n_players, antithetic=o["antithetic"],
                              stratified=o["stratified"], reuse=o["reuse"], permutations=o["permutations"])


def _permutation_min_budget(n: int, sv: Semivalue, opts: dict) -> int:
    if n == 1:
        return 2
    per = n - 1 if opts.get("reuse", True) else 2 * n
    count = opts.get("permutations") or (2 if opts.get("antithetic") else 1)
    return 2 + per * count


class TruncatedSolver:
    """Per-player means of marginal contributions along truncated walks (TMC-Shapley): a walk counts once it
    is truncated or complete; the walks still under way when the budget ends are left out."""

    def __init__(self, setup: Setup) -> None:
        self.d = setup.n_players
        self.tol, self.patience = setup.options["truncation"], setup.options["patience"]
        self.n_walks, self.truncated_steps = 0, 0

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.walks = Walks(self.d, self.tol, v0, vN, self.patience)
        self.moments = Moments((self.d, v0.size))

    def absorb(self, batch: WalkBatch, values: np.ndarray) -> None:
        self.walks.start(batch.new_ids, batch.new_perms)
        done = self.walks.record(batch.ids, batch.steps, values)
        if done.size:
            self.moments.add_samples(self.walks.marginals(done))
            self.n_walks += done.size
            self.truncated_steps += int((self.d - self.walks.cut[done]).sum())
            self.walks.drop(done)

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        stderr = self.moments.stderr(AGREEING_DRAWS)
        return self.moments.mean, stderr, {
            "n_permutations": int(self.n_walks), "truncated_share": self.truncated_steps / max(1, self.n_walks * self.d),
            **self.moments.agreement_note(stderr)}


_WALK_ROWS = 4096   # walks under way at once, whatever runs the game (so that the same seed gives the same values
_ONE_WALK = 256     # locally and on Dask): ceil(4096 / n) for small games, where one batch per walk step would be
                    # a Python step per coalition; one at n >= 256 (data valuation), where an unfinished walk at the
                    # end of the budget wastes hundreds of fits


def _truncated_sampler(setup: Setup) -> TruncatedPermutations:
    o = setup.options
    n = setup.n_players
    parallel = o["parallel"] or (1 if n >= _ONE_WALK else -(-_WALK_ROWS // n))
    return TruncatedPermutations(setup.sampler_rng, setup.n_players, o["truncation"], parallel=parallel,
                                 stride=o["stride"], patience=o["patience"])


# ---------------------------------------------------------------------------- per-player marginals
class MarginalSolver:
    """Per-player means of ``v(S + i) - v(S)`` over sampled pairs (weighted when the sampler enumerates).

    Error bars of 0 (no sampled marginal of any player varied, as in an additive game) are kept only where the values
    are an additive game's: every kept sampled coalition's value ``v(S) = v(empty) + sum_(j in S) phi_j`` (up to
    :data:`ADDITIVE_CHECK_ROWS` of them). That the values add up to ``v(N) - v(empty)``
    (:func:`~fairshare.engine.driver._unseen_variation`, the check of every method) can be a coincidence:
    ``20 z_0 z_1`` plus an additive game, 6 players at 26 evaluations, player 0's 2-3 draws all held player 1 and
    player 1's none held player 0: values 10 and -10 off (they add up) with error bars of 0, 19 of 200 seeds.
    """

    def __init__(self, setup: Setup) -> None:
        self.d = setup.n_players
        self.exact = False

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.moments = Moments((self.d, v0.size))
        self.v0, self.total = np.ravel(np.asarray(v0, dtype=float)), np.ravel(np.asarray(vN - v0, dtype=float))
        self.kept: list[tuple[np.ndarray, np.ndarray]] = []      # sampled coalitions and values, for the check
        self.n_kept = 0

    def absorb(self, batch: MarginalBatch, values: np.ndarray) -> None:
        t = batch.who.size
        diff = values[t:] - values[:t]
        n, k = self.moments.mean.shape
        if batch.weights is not None:                        # every pair, weighted: the exact value
            totals = np.zeros((n, k))
            np.add.at(totals, batch.who, diff * batch.weights[:, None])
            self.moments.mean, self.moments.count = totals, np.full(n, np.inf)
            self.moments.m2 = np.zeros((n, k))
            self.exact = True
            return
        self.moments.add_grouped(batch.who, diff)
        room = max(min(ADDITIVE_CHECK_ROWS, ADDITIVE_CHECK_CELLS // self.d) - self.n_kept, 0)
        if room:
            self.kept.append((np.asarray(batch.coalitions[:room], dtype=bool),
                              np.asarray(values[:room], dtype=float).reshape(-1, k)))
            self.n_kept += self.kept[-1][0].shape[0]

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        if self.exact:
            return self.moments.mean, np.zeros_like(self.moments.mean), {"enumerated": True}
        c = self.moments.count
        mean, stderr = self.moments.mean, self.moments.stderr()
        info: dict = {"samples_per_player": (int(c.min()), int(c.max()))}
        scale = np.abs(self.total) + np.abs(mean).sum(axis=0) + 1e-300
        # (where the values do not add up, the driver's check makes the zeros infinite and says so)
        zero = np.any(stderr == 0, axis=0) & (np.abs(mean.sum(axis=0) - self.total) <= 1e-9 * scale)
        if zero.any() and self.kept:
            Z = np.concatenate([z for z, _ in self.kept]).astype(float)
            V = np.concatenate([v for _, v in self.kept])
            gap = np.abs(V - self.v0 - Z @ mean).max(axis=0)
            off = zero & (gap > 1e-9 * (np.abs(V).max(axis=0) + scale))
            if off.any():
                stderr[:, off] = np.where(stderr[:, off] == 0, np.inf, stderr[:, off])
                info["stderr"] = (f"no sampled marginal varied, yet the values miss a sampled coalition's value by "
                                  f"{float(gap[off].max()):.3g}: not an additive game, its variation unseen")
        return mean, stderr, info


def _w(sv: Semivalue) -> float:
    return float(sv.params.get("w", 0.5))


# ------------------------------------------------------------------------------------------- MSR
class ReuseSolver:
    """Maximum sample reuse: ``phi_i = mean(v(S) : i in S) - mean(v(S) : i not in S)``; the standard error is
    that of a difference of two independent means."""

    def __init__(self, setup: Setup) -> None:
        self.d = setup.n_players
        self.exact = False
        self.sums = None

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        k, d = v0.size, self.d
        self.sums_in, self.sums_out, self.sq_in, self.sq_out = (np.zeros((d, k)) for _ in range(4))
        self.cnt_in, self.cnt_out = np.zeros(d), np.zeros(d)

    def absorb(self, batch: WeightedCoalitions, values: np.ndarray) -> None:
        from .solve import indicator_product

        S, V = batch.coalitions, values
        w = np.ones(S.shape[0]) if batch.weights is None else batch.weights
        if batch.exact:
            self.exact = True
        Vw = V * w[:, None]
        s_in, q_in = np.split(indicator_product(S, np.hstack([Vw, Vw * V]), transpose=True), 2, axis=1)
        self.sums_in += s_in
        self.sq_in += q_in
        self.sums_out += Vw.sum(axis=0) - s_in
        self.sq_out += (Vw * V).sum(axis=0) - q_in
        n_in = indicator_product(S, w[:, None], transpose=True)[:, 0]
        self.cnt_in += n_in
        self.cnt_out += w.sum() - n_in

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_in = self.sums_in / self.cnt_in[:, None]
            mean_out = self.sums_out / self.cnt_out[:, None]
            values = np.nan_to_num(mean_in - mean_out)
            if self.exact:
                return values, np.zeros_like(values), {"enumerated": True}
            var_in = np.maximum(self.sq_in / self.cnt_in[:, None] - mean_in**2, 0.0) * (
                self.cnt_in / (self.cnt_in - 1))[:, None]
            var_out = np.maximum(self.sq_out / self.cnt_out[:, None] - mean_out**2, 0.0) * (
                self.cnt_out / (self.cnt_out - 1))[:, None]
            se = np.sqrt(var_in / self.cnt_in[:, None] + var_out / self.cnt_out[:, None])
        dof = np.minimum(self.cnt_in, self.cnt_out) - 1
        se = np.where((dof >= 1)[:, None], se, np.inf) * small_sample_factor(dof)[:, None]
        return values, se, {"n_samples": int(self.cnt_in[0] + self.cnt_out[0])}


# ------------------------------------------------------------------------------------ registry
SPECS = [
    MethodSpec(
        name="permutation", indices=("shapley",),
        description="permutation Monte Carlo, the optimized walk (n-1 evaluations per permutation); antithetic, "
                    "stratified or classic (reuse=False) on request",
        sampler=_permutation_sampler, solver=PermutationSolver,
        options=(Option("antithetic", False, "pair every permutation with its reverse", kind="bool"),
                 Option("stratified", False, "blocks of n cyclic shifts of one permutation", kind="bool"),
                 Option("reuse", True, "reuse each coalition's value for the next marginal (n - 1 evaluations per "
                        "permutation); False: classic Monte Carlo, 2n", kind="bool"),
                 Option("permutations", None, "number of permutations (default: as many as the budget pays for)",
                        kind="int", minimum=1, none_ok=True)),
        min_budget=_permutation_min_budget, default_for={"shapley": 10}),
    MethodSpec(
        name="mc-banzhaf", indices=("weighted-banzhaf",),
        description="Monte Carlo per player: mean of v(S+i) - v(S) over random S (Banzhaf and weighted Banzhaf)",
        sampler=lambda s: MarginalPairs(s.sampler_rng, s.n_players, _w(s.semivalue)), solver=MarginalSolver,
        min_budget=lambda n, sv, o: 2 * n + 2, default_for={"weighted-banzhaf": 10}),
    MethodSpec(
        name="msr", indices=("weighted-banzhaf",),
        description="maximum sample reuse: mean value of coalitions with minus without each player",
        sampler=lambda s: IndependentCoalitions(s.sampler_rng, s.n_players, _w(s.semivalue)), solver=ReuseSolver,
        min_budget=lambda n, sv, o: 2 * n + 4,
        # measured: MSR beat per-player Monte Carlo; the regression under the product measure beat MSR 2.7-20x
        # (semivalue-regression) and 6.6-71x (surrogate-regression) on bench default's tables at 10n-100n, w = 0.3,
        # and 1.04-2.6x (semivalue-regression) on three data games' tables of fits at 10n and 30n, so auto runs those
        default_for={"weighted-banzhaf": 18}),
    MethodSpec(
        name="tmc", indices=("shapley",),
        description="truncated Monte Carlo (TMC-Shapley): permutation walks stopped once the value stays within "
                    "a share (truncation) of v(N) for patience steps in a row, for games whose evaluations are model "
                    "fits",
        sampler=_truncated_sampler, solver=TruncatedSolver,
        options=(Option("truncation", 0.01, "stop a walk once |v(S) - v(N)| <= truncation * |v(N)| (patience steps in "
                        "a row); 0 never",
                        kind="float", minimum=0.0),
                 Option("patience", 6, "steps in a row within truncation of v(N) before a walk stops (as Ghorbani "
                        "and Zou's code; 1 stops at the first, which truncates every walk where v(N) ~ v(empty))",
                        kind="int", minimum=1),
                 Option("parallel", None, "walks under way at once, each batch advances all of them (default "
                        "ceil(4096 / n) below 256 players, else 1; locally and on Dask alike; more keeps a large "
                        "cluster busy); new walks start only while the budget can expect to finish them, and a walk "
                        "still under way at the end is not used", kind="int", minimum=1, none_ok=True),
                 Option("stride", None, "steps each walk advances per batch (default: n / 100)", kind="int",
                        minimum=1, none_ok=True)),
        min_budget=lambda n, sv, o: n + 1, default_for={"shapley@data": 30}),
]
