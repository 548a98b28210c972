"""Variance-adaptive size allocation for the Shapley regression (Neyman allocation).

The unified framework leaves adaptive sampling as future work (v2, section 6). After a first round
from the base design (leverage scores), the sampler estimates, for each coalition size, how far the
game is from the additive model of the current estimate: the odd part of the residual of each
complementary pair, ``o_S = (r_S - r_{N \\ S}) / 2`` with ``r_S = v(S) - v(empty) - sum_{i in S} phi_i``
(the even part cancels in a paired design). A size-``h`` pair's contribution to the regression's
normal equations has scale ``k_h ||P z_S|| |o_S|``, so the Neyman allocation of later rounds puts
mass ``q_h ~ C(d, h) k_h ||P z_S|| s_h ~ s_h / sqrt(h (d - h))`` on size ``h`` (``s_h``: the RMS of ``o``
among sampled pairs of that size, shrunk towards the pooled RMS where few were sampled), mixed
half and half with the base design so that every size keeps positive probability. Each round is
its own design; the rounds are pooled as a mixture, which keeps the estimate unbiased.
"""

from __future__ import annotations

import numpy as np

from ..._core.arrays import to_numpy
from ..._core.combinatorics import logsumexp
from ..protocols import History
from .coalitions import CoalitionDesign

__all__ = ["NeymanSizes"]

_FIRST_SHARE = 0.3          # of the budget, spent on the base design before adapting
_SHRINK = 5.0               # pseudo-pairs of the pooled RMS added to each size's


class NeymanSizes(CoalitionDesign):
    """A paired design whose later rounds allocate sizes by Neyman allocation (see the module docstring).

    Examples
    --------
    >>> from fairshare.engine.samplers.sizes import shapley_size_log_mass
    >>> s = NeymanSizes(np.random.default_rng(0), 10, shapley_size_log_mass(10, "leverage"))
    >>> s.schedule(1000, rounds=False)
    [300, 700]
    """

    def __init__(self, rng: np.random.Generator, n_players: int, log_q: np.ndarray, counts: str = "systematic",
                 device: object = None) -> None:
        super().__init__(rng, n_players, log_q, replacement=False, paired=True, counts=counts, complete=False,
                         device=device)

    def schedule(self, total: int, rounds: bool) -> list[int]:
        if (self.population is not None and total + self.free >= self.population) or total < 8 * self.d:
            return super().schedule(total, rounds)
        first = int(_FIRST_SHARE * total)
        return [first] + (super().schedule(total - first, rounds) if rounds else [total - first])

    def size_log_mass(self, history: History) -> np.ndarray:
        if not history.batches or history.estimate is None:
            return self.log_q
        d = self.d
        phi = np.asarray(history.estimate[0], dtype=float).reshape(d, -1)
        sums = np.zeros(d + 1)
        counts = np.zeros(d + 1)
        for sample, V in zip(history.batches, history.values):
            if not sample.paired or sample.n_rows == 0:
                continue
            S = np.asarray(to_numpy(sample.coalitions[0::2]))               # (the pairs' first rows, to the host)
            V = np.asarray(to_numpy(V), dtype=float)
            fitted = S.astype(float) @ phi                                     # additive part of each row
            r_first = V[0::2] - history.empty_value[None, :] - fitted
            r_second = V[1::2] - history.empty_value[None, :] - (phi.sum(axis=0)[None, :] - fitted)
            odd = 0.5 * (r_first - r_second)
            level = np.minimum(S.sum(axis=1), d - S.sum(axis=1))
            np.add.at(sums, level, (odd ** 2).sum(axis=1))
            np.add.at(counts, level, 1.0)
        if counts.sum() < 2:
            return self.log_q
        pooled = sums.sum() / counts.sum()
        rms = np.sqrt((sums + _SHRINK * pooled) / (counts + _SHRINK))          # shrunk per level
        h = np.arange(d + 1)
        level = np.minimum(h, d - h)
        inner = (h > 0) & (h < d)
        log_neyman = np.full(d + 1, -np.inf)
        with np.errstate(divide="ignore"):
            log_neyman[inner] = np.log(np.maximum(rms[level[inner]], 1e-300)) - 0.5 * np.log(h[inner] * (d - h[inner]))
        log_neyman -= logsumexp(log_neyman[inner])
        mixed = np.logaddexp(np.log(0.5) + log_neyman, np.log(0.5) + self.log_q)
        return mixed - logsumexp(mixed[np.isfinite(mixed)])
