"""Size-symmetric coalition designs (unified framework App. F, Kernel Banzhaf Theorem 3.5).

A design puts mass ``q_h`` on coalition size ``h`` and spreads it uniformly within the size;
coalitions are drawn with replacement (i.i.d., Algorithm 1) or without (Algorithm 2), alone or in
complementary pairs, optionally taking whole size levels with certainty (``complete``). Once the
allowance covers every coalition the design takes them all with weight 1, so every estimator on
it is exact there (with or without replacement).
"""

from __future__ import annotations

import math

import numpy as np

from .sample import CoalitionSample
from .with_replacement import sample_with_replacement
from .without_replacement import sample_without_replacement
from ..protocols import History, Sampler

__all__ = ["CoalitionDesign"]


class CoalitionDesign(Sampler):
    """Coalitions of sizes drawn from ``exp(log_q)`` (``log_q[h]`` for ``h = 0..d``).

    Examples
    --------
    >>> from fairshare.engine.samplers.sizes import shapley_size_log_mass
    >>> s = CoalitionDesign(np.random.default_rng(0), 6, shapley_size_log_mass(6, "kernel"), replacement=True)
    >>> s.propose(62, History()).coverage                   # 62 = 2^6 - 2: every coalition, exactly
    'all'
    """

    def __init__(self, rng: np.random.Generator, n_players: int, log_q: np.ndarray, *, replacement: bool,
                 paired: bool = True, counts: str = "systematic", complete: bool | str = False,
                 device: object = None) -> None:
        super().__init__(rng, n_players)
        self.device = device              # a torch device: the coalition rows are drawn there
        self.log_q = np.asarray(log_q, dtype=float)
        self.replacement = replacement
        self.one_draw_per_round = not replacement
        self.paired = paired
        self.counts = counts
        self.complete = complete
        self.unit_cost = 2 if paired else 1
        sizes = np.flatnonzero(np.isfinite(self.log_q))
        self.population = int(sum(math.comb(n_players, int(h)) for h in sizes)) if n_players <= 62 else None
        # the empty and the grand coalition are evaluated before any sampling: in a design they cost nothing
        self.free = int(np.isfinite(self.log_q[0])) + int(np.isfinite(self.log_q[-1]))
        self.first = True

    def schedule(self, total: int, rounds: bool) -> list[int]:
        if rounds:
            # rounds are pooled as a mixture: a round that took some sizes whole and none of the others would
            # bias all of them, so levels are completed only in a single-round design
            self.complete = False
            return super().schedule(total, rounds)
        return [total]

    def size_log_mass(self, history: History) -> np.ndarray:
        """The size distribution of the next round (adaptive designs override this)."""
        return self.log_q

    def propose(self, allowance: int, history: History) -> CoalitionSample | None:
        n_units = allowance // self.unit_cost
        if n_units < 1:
            return None
        first, self.first = self.first, False
        if self.enumerated:
            return None                                   # every coalition was taken: the estimate is exact
        log_q = self.size_log_mass(history)
        if first and self.population is not None and allowance + self.free >= self.population:
            self.enumerated = True
            # the allowance covers every coalition: take them all (weight 1), whatever the design
            return sample_without_replacement(self.rng, self.d, log_q, self.population,
                                              paired=self.paired, counts="systematic", device=self.device)
        if self.replacement:
            return sample_with_replacement(self.rng, self.d, log_q, n_units, paired=self.paired, device=self.device)
        return sample_without_replacement(self.rng, self.d, log_q, n_units, paired=self.paired, counts=self.counts,
                                          complete=self.complete, device=self.device)
