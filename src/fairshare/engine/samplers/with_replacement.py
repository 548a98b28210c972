"""Coalitions drawn i.i.d. from a size distribution (unified framework App. F, Algorithm 1), alone or followed by
their complements, with the Horvitz-Thompson weights ``1 / E[count of S]``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .sample import CoalitionSample
from .sizes import check_symmetric, shapley_size_log_mass, size_log_counts
from .subsets import random_subsets, torch_subsets, with_complements

__all__ = ["sample_with_replacement"]


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
    log_c = size_log_counts(d, log_q)
    if paired:
        check_symmetric(log_q)
    q = np.exp(log_q)
    sizes = rng.choice(d + 1, size=n_draws, p=q / q.sum())
    S = random_subsets(rng, d, sizes) if device is None else torch_subsets(rng, d, sizes, device)
    # expected number of times a given coalition of size h appears as a row
    expected_log = np.log(n_draws) + log_q - log_c + (np.log(2.0) if paired else 0.0)
    unit = np.arange(n_draws)
    if paired:
        S = with_complements(S)
        sizes = np.stack([sizes, d - sizes], axis=1).reshape(-1)
        unit = np.repeat(unit, 2)
    stratum = np.minimum(sizes, d - sizes) if paired else sizes
    return CoalitionSample(S, -expected_log[sizes], unit, stratum, np.ones(S.shape[0]), int(n_draws), paired)
