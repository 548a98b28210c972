"""The two simulated games of the projected-SGD Shapley paper (Hastie et al.'s examples).

Both compare an explicand ``x`` with a reference ``r``: the coalition ``S`` takes
``x`` on its players and ``r`` elsewhere, ``z(S) = where(S, x, r)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import chi2

from .._core.arguments import SeedLike, check_int
from .._core.seeds import generator
from .base import Game
from ..indices.semivalues import Semivalue

__all__ = ["HastieClassificationGame", "RadialGame"]

_RADIAL_CLOSED_FORM_MAX = 512


def _pair(x: Any, reference: Any) -> tuple[np.ndarray, np.ndarray]:
    xv = np.asarray(x, dtype=float).reshape(-1)
    rv = np.asarray(reference, dtype=float).reshape(-1)
    if xv.shape != rv.shape or xv.size < 1:
        raise ValueError(f"x and reference must be 1-D arrays of the same length, got {xv.shape} and {rv.shape}")
    if not (np.all(np.isfinite(xv)) and np.all(np.isfinite(rv))):
        raise ValueError("x and reference must be finite")
    return xv, rv


class HastieClassificationGame(Game):
    """Classification game: ``v(S) = 1[f(z(S)) == f(x)]`` with ``f(z) = 1[sum z_j^2 > median of chi2_d]``.

    The class boundary is the Bayes rule of Hastie et al.'s simulated data (ESL, p. 339):
    independent standard normal features, label 1 when the squared norm exceeds
    the median of a chi-squared variable with ``d`` degrees of freedom. The Shapley
    values sum to ``v(N) - v(empty) = 1`` when ``x`` and ``r`` lie in different classes.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.HastieClassificationGame.sample(8, seed=0)
    >>> round(float(fs.exact(g, "shapley").values.sum()), 9)
    1.0
    """

    kind = "synthetic"

    def __init__(self, x: Any, reference: Any, player_names: Any = None, batch_size: int | None = None) -> None:
        self.x, self.reference = _pair(x, reference)
        super().__init__(self.x.size, player_names=player_names, batch_size=batch_size)
        self.threshold = float(chi2.median(self.n_players))
        self._target = self.classify(self.x[None, :])[0]

    def classify(self, Z: np.ndarray) -> np.ndarray:
        """The classifier ``f``: 1 when ``sum z_j^2`` exceeds the chi-squared median."""
        return (np.sum(np.asarray(Z) ** 2, axis=1) > self.threshold).astype(int)

    @classmethod
    def sample(cls, n_players: int, seed: SeedLike = None) -> HastieClassificationGame:
        """Explicand and reference drawn from N(0, I), rejected until they lie in different classes."""
        d = check_int(n_players, "n_players", minimum=1)
        rng = generator(seed)
        threshold = chi2.median(d)
        x = rng.standard_normal(d)
        r = rng.standard_normal(d)
        while (np.sum(r**2) > threshold) == (np.sum(x**2) > threshold):
            r = rng.standard_normal(d)
        return cls(x, r)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        sq = np.where(coalitions, self.x**2, self.reference**2).sum(axis=1)
        return ((sq > self.threshold).astype(int) == self._target).astype(float)


def _rho(t: np.ndarray) -> np.ndarray:
    return np.sqrt(0.5 * np.pi) * np.exp(-0.5 * np.asarray(t) ** 2)


class RadialGame(Game):
    """Regression game: ``v(S) = f(z(S)) - f(r)`` with ``f(z) = prod_j rho(z_j)``, ``rho(t) = sqrt(pi/2) exp(-t^2/2)``
    (Hastie et al.'s radial example, ESL p. 401).

    The game is multiplicative, ``v(S) = f(r) (prod_{j in S} a_j - 1)`` with
    ``a_j = rho(x_j) / rho(r_j)``, so any semivalue has the closed form
    ``phi_i = f(r) (a_i - 1) sum_l p_l e_l(a without i)`` with elementary symmetric
    polynomials ``e_l``, computed in log space (for up to 512 players).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.RadialGame.sample(10, seed=0)
    >>> np.allclose(fs.exact(g, "shapley").values, fs.exact(g, "shapley", via="enumeration").values)
    True
    """

    kind = "synthetic"

    def __init__(self, x: Any, reference: Any, player_names: Any = None, batch_size: int | None = None) -> None:
        self.x, self.reference = _pair(x, reference)
        super().__init__(self.x.size, player_names=player_names, batch_size=batch_size)
        self._log_rho_x = np.log(_rho(self.x))
        self._log_rho_r = np.log(_rho(self.reference))
        self._log_f_r = float(self._log_rho_r.sum())

    @classmethod
    def sample(cls, n_players: int, seed: SeedLike = None) -> RadialGame:
        """Explicand and reference drawn independently from N(0, I)."""
        d = check_int(n_players, "n_players", minimum=1)
        rng = generator(seed)
        return cls(rng.standard_normal(d), rng.standard_normal(d))

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        log_f = np.where(coalitions, self._log_rho_x, self._log_rho_r).sum(axis=1)
        return np.exp(log_f) - np.exp(self._log_f_r)

    def knows_exact_values(self, index: Semivalue) -> bool:
        return self.n_players <= _RADIAL_CLOSED_FORM_MAX

    def exact_values(self, index: Semivalue) -> np.ndarray | None:
        if not self.knows_exact_values(index):
            return None
        n = self.n_players
        log_a = self._log_rho_x - self._log_rho_r
        # log e_l(a without i) for every i (rows) and l = 0..n-1 (columns), built one player at a time
        E = np.full((n, n), -np.inf)
        E[:, 0] = 0.0
        for j in range(n):
            others = np.arange(n) != j
            E[others, 1:] = np.logaddexp(E[others, 1:], E[others, :-1] + log_a[j])
        log_sum = np.logaddexp.reduce(E + index.log_weights(n)[None, :], axis=1)
        return np.exp(self._log_f_r + log_sum) * np.expm1(log_a)
