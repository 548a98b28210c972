"""A linear model on normal features under conditional imputation: its conditional values in closed form."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Game
from .imputers import known_solve

__all__ = ["GaussianLinearGame"]


class GaussianLinearGame(Game):
    """``v(S) = beta' E[X | X_S = x_S] + intercept`` for ``X ~ N(mean, cov)``: the game a linear model plays at
    ``x`` under exact Gaussian conditional imputation (the truth that conditional imputers are measured
    against, :mod:`fairshare.games.imputers`).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.GaussianLinearGame([1.0, 1.0], mean=[0.0, 0.0], cov=[[1.0, 0.5], [0.5, 1.0]], x=[1.0, 0.0])
    >>> g(np.array([[True, False]]))                 # x0 = 1 known: E[x1 | x0 = 1] = 0.5
    array([1.5])
    >>> fs.exact(g, "shapley").values                # x0 gets the credit of what it says about x1
    array([ 1.25, -0.25])
    """

    kind = "synthetic"

    def __init__(self, beta: Any, mean: Any, cov: Any, x: Any, intercept: float = 0.0,
                 player_names: Any = None) -> None:
        self.beta = np.asarray(beta, dtype=float).ravel()
        n = self.beta.size
        self.mean = np.asarray(mean, dtype=float).ravel()
        self.cov = np.asarray(cov, dtype=float)
        self.x = np.asarray(x, dtype=float).ravel()
        if self.mean.size != n or self.x.size != n or self.cov.shape != (n, n):
            raise ValueError(f"mean and x must have {n} entries and cov shape ({n}, {n}), got {self.mean.size}, "
                             f"{self.x.size} and {self.cov.shape}")
        if not np.allclose(self.cov, self.cov.T) or np.linalg.eigvalsh(self.cov).min() <= 0:
            raise ValueError("cov must be symmetric positive definite")
        self.intercept = float(intercept)
        super().__init__(n, player_names=player_names)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        known = np.asarray(coalitions, dtype=bool)
        m, n = known.shape
        shift = known_solve(self.cov, known, np.broadcast_to((self.x - self.mean)[None, :, None], (m, n, 1)))
        cond = self.mean[None] + (self.cov @ shift)[:, :, 0]
        cond = np.where(known, self.x[None], cond)
        return cond @ self.beta + self.intercept
