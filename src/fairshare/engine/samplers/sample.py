"""What a coalition design returns: the sampled coalitions with their Horvitz-Thompson weights, sampling units,
strata and finite-population factors (what the solvers need for unbiased sums and their standard errors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._core.arrays import row_counts, to_numpy

__all__ = ["CoalitionSample"]


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
    pilot : a look the design takes before it decides how to go on (:mod:`~fairshare.engine.samplers.pilot`): its
        rows come again in a later batch, so solvers skip it.

    Examples
    --------
    >>> S = np.array([[True, False], [False, True]])
    >>> s = CoalitionSample(S, np.log([2.0, 2.0]), np.array([0, 0]), np.array([1, 1]), np.zeros(2), 1, paired=True)
    >>> s.n_rows, s.weight.tolist(), s.sizes.tolist()
    (2, [2.0, 2.0], [1, 1])
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
    pilot: bool = False
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
    def n_units(self) -> int:
        """Number of sampling units (a coalition, or a complementary pair), drawn or taken with certainty."""
        return int(np.unique(np.asarray(to_numpy(self.unit))).size)

    @property
    def n_random_units(self) -> int:
        """Number of sampling units drawn at random (the others were taken with certainty, ``fpc`` 0)."""
        unit = np.asarray(to_numpy(self.unit))
        return int(np.unique(unit[np.asarray(self.fpc) > 1e-12]).size)

    @property
    def weight(self) -> np.ndarray:
        """The weights themselves (overflow to inf for very large games; use ``log_weight``)."""
        with np.errstate(over="ignore"):
            return np.exp(self.log_weight)
