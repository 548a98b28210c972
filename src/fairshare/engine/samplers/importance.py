"""Coalitions for projected SGD: sizes drawn with probability proportional to each term's Lipschitz
constant (projected-SGD paper, section 4), uniform within a size, in steps of ``batch`` coalitions for
each of ``chains`` independent chains."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._core.combinatorics import log_binom, logsumexp
from .subsets import random_subsets
from ..protocols import History, Sampler

__all__ = ["LipschitzSizes", "StepBatch", "lipschitz_size_probabilities"]

_MAX_STEPS_PER_RUN = 4000        # Python steps of the solver per run: batches grow beyond this
_BLOCK_BOOLS = 1 << 26


def lipschitz_size_probabilities(d: int) -> np.ndarray:
    """Probability of each size ``1..d-1``: ``C(d, h) L_h / L`` with ``L_S = 2 w_S |S|`` (kernel weights ``w_S``).

    Examples
    --------
    >>> np.round(lipschitz_size_probabilities(4), 3)
    array([0.182, 0.273, 0.545])
    """
    h = np.arange(1, d, dtype=float)
    log_w = np.log(d - 1.0) - log_binom(d, h) - np.log(h) - np.log(d - h)
    log_mass = log_binom(d, h) + np.log(2.0) + log_w + np.log(h)
    probs = np.exp(log_mass - logsumexp(log_mass))
    return probs / probs.sum()


@dataclass
class StepBatch:
    """``steps`` SGD steps: coalitions ``(steps, chains, batch, d)`` flattened row-wise."""

    coalitions: np.ndarray
    steps: int
    chains: int
    batch: int
    n_draws: int
    fresh: bool = False


class LipschitzSizes(Sampler):
    """Steps of ``batch`` coalitions per chain; the batch grows when the budget would take more than
    4000 steps, so a run is a bounded number of vectorized steps.

    Examples
    --------
    >>> b = LipschitzSizes(np.random.default_rng(0), 6, batch=8, chains=2).propose(64, History())
    >>> b.steps, b.coalitions.shape
    (4, (64, 6))
    """

    def __init__(self, rng: np.random.Generator, n_players: int, batch: int, chains: int, budget: int = 0) -> None:
        super().__init__(rng, n_players)
        self.chains = chains
        self.batch = max(batch, -(-budget // (chains * _MAX_STEPS_PER_RUN)))
        self.unit_cost = self.batch * chains
        self.probs = lipschitz_size_probabilities(n_players)

    def propose(self, allowance: int, history: History) -> StepBatch | None:
        per_step = self.batch * self.chains
        steps = min(allowance // per_step, max(1, _BLOCK_BOOLS // (per_step * self.d)))
        if steps < 1:
            return None
        m = steps * per_step
        sizes = self.rng.choice(np.arange(1, self.d), size=m, p=self.probs)
        return StepBatch(random_subsets(self.rng, self.d, sizes), steps, self.chains, self.batch, m)
