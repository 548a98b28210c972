"""Conditional imputation: the features outside a coalition drawn given the ones in it (Aas, Jullum and Loland
2021), fitted once on the background.

``v(S) = E[f(x_S, X_{-S}) | X_S = x_S]`` instead of the marginal ``E[f(x_S, X_{-S})]``: correlated features
share credit as the data do, and the model is not asked about rows the data never hold.

- :class:`GaussianImputer`: the background as one multivariate normal; ``X_{-S} | x_S`` is normal with mean
  ``mu_U + S_UK S_KK^-1 (x_K - mu_K)`` and covariance ``S_UU - S_UK S_KK^-1 S_KU``.
- :class:`CopulaImputer`: the same in normal scores (each feature through its empirical distribution and the
  normal quantile), the draws mapped back through the empirical quantiles: any marginal distributions, the
  dependence of a Gaussian copula.
- :class:`EmpiricalImputer`: no model of the data: the background rows themselves, weighted by a Gaussian
  kernel of their Mahalanobis distance to ``x`` on the known features (``exp(-D^2 / 2 sigma^2)``,
  ``D^2 = d_K' S_KK^-1 d_K / |K|``; Aas et al.'s empirical approach).

Every coalition of a batch is conditioned at once (batched solves, no loop over coalitions). The Gaussian and
copula imputers draw with *common random numbers*: one fixed set of standard normal draws (from ``seed``,
moment-matched: mean 0, covariance the identity) serves every coalition, so a coalition's value does not depend on the batch it came in, the thread or the
worker that evaluated it (same seed, same values), and the values of neighbouring coalitions differ by the
conditioning, not by fresh noise.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from .._core.arguments import check_int
from .._core.errors import FairshareWarning

__all__ = ["Imputer", "GaussianImputer", "CopulaImputer", "EmpiricalImputer", "CONDITIONAL", "make_imputer"]


class Imputer:
    """Fitted on a background; ``rows(known, x)`` gives the model's input rows ``(m, K, features)`` for a batch of
    coalitions (``known``: which features each keeps from ``x``) and their weights ``(m, K)`` (rows to average
    with), or None for equal weights."""

    name = "conditional"
    #: fitted on a background (an imputer passed fitted is used as it is)
    fitted = False

    def fit(self, background: np.ndarray) -> Imputer:
        raise NotImplementedError

    @property
    def samples(self) -> int:
        """Model rows per coalition."""
        raise NotImplementedError

    def rows(self, known: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        raise NotImplementedError

    def describe(self) -> str:
        """What the result records about the imputation."""
        return self.name


def _numeric(background: Any, name: str) -> np.ndarray:
    B = np.asarray(background)
    if B.dtype == object or not np.issubdtype(B.dtype, np.number):
        raise ValueError(f"imputation={name!r} models numeric features; the background holds non-numeric columns "
                         "(use imputation='marginal', or encode them)")
    B = np.ascontiguousarray(B, dtype=float)          # one layout: the same sums (bits) however it was sliced
    if np.isnan(B).any():                              # a Gaussian would take the column for a constant NaN
        r, c = (int(i) for i in np.argwhere(np.isnan(B))[0])
        raise ValueError(f"imputation={name!r} fits the background's distribution, which takes no missing values: "
                         f"the background holds NaN at row {r}, column {c} (impute it first, or use "
                         "imputation='marginal')")
    if B.ndim != 2 or B.shape[0] < 2:
        raise ValueError(f"imputation={name!r} fits the background's distribution: it needs at least 2 rows, got "
                         f"{B.shape[0] if B.ndim == 2 else B.ndim}")
    return B


#: the smallest eigenvalue, relative to the largest, of a correlation matrix fitted without shrinkage
_CONDITION = 1e-10


class FittedCovariance:
    """The background's covariance as the imputers use it, never singular.

    - A constant feature (zero variance) carries no dependence: it is drawn as its constant, and its row and
      column of the covariance hold 1 on the diagonal and 0 elsewhere, so conditioning on it changes nothing.
    - Where the other features' correlation matrix is singular (no more background rows than such features, or
      numerically), it is shrunk toward the identity by Ledoit and Wolf's formula (2004), the amount in
      :attr:`shrinkage` (0: none), with a warning that names it; elsewhere it is the sample covariance with a ridge
      of 1e-9 of each variance.

    Examples
    --------
    >>> B = np.random.default_rng(0).normal(size=(5, 8))              # fewer rows than features
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fit = FittedCovariance(B, "gaussian")
    >>> 0 < fit.shrinkage < 1, bool(np.linalg.eigvalsh(fit.cov).min() > 0)
    (True, True)
    """

    def __init__(self, B: np.ndarray, name: str) -> None:
        n_rows, n = B.shape
        self.mean = B.mean(axis=0)
        std = B.std(axis=0, ddof=1)
        self.constant = ~(std > 1e-12 * np.maximum(np.abs(self.mean), 1.0))
        live = np.flatnonzero(~self.constant)
        self.shrinkage = 0.0
        sample = np.atleast_2d(np.cov(B, rowvar=False))
        cov = sample + np.diag(1e-9 * np.maximum(np.diag(sample), 1e-12))     # a ridge of 1e-9 of each variance
        cov[self.constant, :] = 0.0
        cov[:, self.constant] = 0.0
        cov[self.constant, self.constant] = 1.0
        if live.size:
            Z = (B[:, live] - self.mean[live]) / std[live]
            corr = np.atleast_2d(np.cov(Z, rowvar=False))
            eig = np.linalg.eigvalsh(corr)
            if n_rows <= live.size or eig[0] < _CONDITION * eig[-1]:
                self.shrinkage = _ledoit_wolf(Z)
                corr = (1.0 - self.shrinkage) * corr + self.shrinkage * np.eye(live.size)
                warnings.warn(f"imputation={name!r}: the background's covariance is singular ({n_rows} rows for "
                              f"{live.size} varying features); it is shrunk toward the identity (Ledoit-Wolf "
                              f"shrinkage {self.shrinkage:.3g}, in e.info['imputation']); {live.size + 1} or more "
                              "rows that span the features fit it without shrinkage", FairshareWarning, stacklevel=4)
                cov[np.ix_(live, live)] = corr * np.outer(std[live], std[live])
        self.cov = cov

    def describe(self) -> str:
        """What changed from the sample covariance, for the result's ``info`` ('' when nothing did)."""
        parts = [f"shrinkage={self.shrinkage:.3g}"] if self.shrinkage else []
        if self.constant.any():
            parts.append(f"constant features={np.flatnonzero(self.constant).tolist()}")
        return ", ".join(parts)


def _ledoit_wolf(Z: np.ndarray) -> float:
    """Ledoit and Wolf's (2004) shrinkage intensity of the sample correlation of standardized rows ``Z`` toward
    the identity, at least enough that the shrunk matrix's smallest eigenvalue is 1e-6."""
    m, p = Z.shape
    Z = Z - Z.mean(axis=0)
    R = Z.T @ Z / m
    d2 = float(((R - np.eye(p)) ** 2).sum())
    b2 = (float(((Z ** 2).sum(axis=1) ** 2).sum()) - m * float((R ** 2).sum())) / m ** 2
    delta = min(max(b2, 0.0), d2) / d2 if d2 > 0 else 1.0
    smallest = float(np.linalg.eigvalsh(np.atleast_2d(np.cov(Z, rowvar=False)))[0])
    floor = (1e-6 - smallest) / (1.0 - smallest) if smallest < 1e-6 else 0.0      # (1-d) l + d >= 1e-6
    return float(min(1.0, max(delta, floor)))


def known_solve(cov: np.ndarray, known: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``S_KK^-1 rhs_K`` for each coalition (batched; 0 on the unknown features): ``known (m, n)``,
    ``rhs (m, n, r)``.

    Examples
    --------
    >>> cov = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> known_solve(cov, np.array([[True, False]]), np.ones((1, 2, 1)))[0, :, 0]
    array([0.5, 0. ])
    """
    n = cov.shape[0]
    both = known[:, :, None] & known[:, None, :]
    A = np.where(both, cov[None], 0.0) + np.eye(n)[None] * (~known)[:, :, None]
    return np.linalg.solve(A, rhs * known[:, :, None])


def common_normals(samples: int, n: int, seed: int) -> np.ndarray:
    """``(samples, n)`` standard normal draws, moment-matched: centred, and with sample covariance exactly the
    identity when ``samples > n`` (so the draws' mean and covariance are the conditional ones exactly; the
    value of a model linear in the drawn features carries no sampling error).

    Examples
    --------
    >>> z = common_normals(50, 3, seed=0)
    >>> bool(np.allclose(z.mean(axis=0), 0)), bool(np.allclose(np.cov(z, rowvar=False), np.eye(3)))
    (True, True)
    """
    z = np.random.default_rng(seed).standard_normal((samples, n))
    if samples < 2:
        return z
    z = z - z.mean(axis=0)
    if samples > n:
        L = np.linalg.cholesky(z.T @ z / (samples - 1))
        z = np.linalg.solve(L, z.T).T
    return z


class GaussianImputer(Imputer):
    """Features outside the coalition drawn from the multivariate normal fitted to the background, given the
    features in it.

    Parameters
    ----------
    samples : draws per coalition (model rows per evaluation), default 100
    seed : the common random numbers' seed, default 0

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> bg = rng.multivariate_normal([0, 0], [[1, 0.9], [0.9, 1]], size=4000)
    >>> imp = GaussianImputer(samples=2000).fit(bg)
    >>> rows, _ = imp.rows(np.array([[True, False]]), np.array([1.0, 0.0]))
    >>> round(float(rows[0, :, 1].mean()), 1), float(rows[0, 0, 0])      # E[x1 | x0 = 1] = 0.9
    (0.9, 1.0)
    """

    name = "gaussian"

    def __init__(self, samples: int = 100, seed: int = 0) -> None:
        self.n_samples = check_int(samples, "samples", minimum=1)
        self.seed = check_int(seed, "seed", minimum=0)

    @property
    def samples(self) -> int:
        return self.n_samples

    def describe(self) -> str:
        fitted = self.fitted_cov.describe() if self.fitted else ""
        return f"{self.name}(samples={self.n_samples}, seed={self.seed}" + (f", {fitted})" if fitted else ")")

    def fit(self, background: Any) -> GaussianImputer:
        B = _numeric(background, self.name)
        self.fitted_cov = FittedCovariance(B, self.name)
        self.mean, self.cov = self.fitted_cov.mean, self.fitted_cov.cov
        self.z = common_normals(self.n_samples, B.shape[1], self.seed)
        self.fitted = True
        return self

    def _scores(self, x: np.ndarray) -> np.ndarray:
        return x

    def _values(self, draws: np.ndarray) -> np.ndarray:
        return draws

    def rows(self, known: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, None]:
        known = np.asarray(known, dtype=bool)
        m, n = known.shape
        xs = self._scores(np.asarray(x, dtype=float))
        mean_shift = known_solve(self.cov, known, np.broadcast_to((xs - self.mean)[None, :, None], (m, n, 1)))
        cond_mean = self.mean[None] + (self.cov @ mean_shift)[:, :, 0]                         # (m, n)
        cond_cov = self.cov[None] - self.cov @ known_solve(self.cov, known, np.broadcast_to(self.cov, (m, n, n)))
        unknown = ~known
        cond_cov = cond_cov * (unknown[:, :, None] & unknown[:, None, :])
        lam, vec = np.linalg.eigh(0.5 * (cond_cov + cond_cov.transpose(0, 2, 1)))
        # the symmetric square root V sqrt(L) V': unique (whatever basis eigh picks in a repeated eigenvalue's
        # space, and whatever signs), so the draws move continuously with the fitted covariance
        root = (vec * np.sqrt(np.clip(lam, 0.0, None))[:, None, :]) @ vec.transpose(0, 2, 1)   # (m, n, n)
        # per coalition, one product of its own matrices: the same bits whatever else is in the batch
        draws = cond_mean[:, None, :] + self.z[None] @ root.transpose(0, 2, 1)                # (m, K, n)
        constant = self.fitted_cov.constant
        if constant.any():                                  # a constant feature is drawn as its constant
            draws[..., constant] = self.mean[constant]
        draws = self._values(draws)
        out = np.where(known[:, None, :], np.asarray(x, dtype=float)[None, None, :], draws)
        return out, None


class CopulaImputer(GaussianImputer):
    """The Gaussian conditional in normal scores: each feature through its empirical distribution function
    (ranks of the background, ties averaged) and the normal quantile; draws mapped back through the
    background's empirical quantiles (any marginal distribution, a Gaussian copula).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.multivariate_normal([0, 0], [[1, 0.9], [0.9, 1]], size=4000)
    >>> bg = np.exp(z)                                          # log-normal marginals
    >>> imp = CopulaImputer(samples=2000).fit(bg)
    >>> rows, _ = imp.rows(np.array([[True, False]]), np.array([np.e, 1.0]))
    >>> round(float(np.median(rows[0, :, 1])), 1)             # median of exp(x1 | x0 = 1) = exp(0.9)
    2.5
    """

    name = "copula"

    def fit(self, background: Any) -> CopulaImputer:
        B = _numeric(background, self.name)
        self.sorted = np.sort(B, axis=0)
        self.levels = (np.arange(B.shape[0]) + 0.5) / B.shape[0]
        return super().fit(self._scores_of(B))

    def _scores_of(self, X: np.ndarray) -> np.ndarray:
        """Normal scores of rows ``X`` (..., n) under the background's empirical distributions (ties: mid-rank)."""
        out = np.empty(X.shape)
        N = self.sorted.shape[0]
        for j in range(X.shape[-1]):
            lo = np.searchsorted(self.sorted[:, j], X[..., j], side="left")
            hi = np.searchsorted(self.sorted[:, j], X[..., j], side="right")
            out[..., j] = ndtri(np.clip((lo + hi) / (2.0 * N), 0.5 / N, 1 - 0.5 / N))
        return out

    def _scores(self, x: np.ndarray) -> np.ndarray:
        return self._scores_of(x)

    def _values(self, draws: np.ndarray) -> np.ndarray:
        p = ndtr(draws)
        out = np.empty(draws.shape)
        for j in range(draws.shape[-1]):
            out[..., j] = np.interp(p[..., j], self.levels, self.sorted[:, j])
        return out


class EmpiricalImputer(Imputer):
    """The background rows, weighted by ``exp(-D^2 / (2 sigma^2))`` of their Mahalanobis distance ``D`` to ``x``
    on the known features (scaled by the number of known features).

    Parameters
    ----------
    sigma : the kernel's bandwidth, default 0.1 (Aas et al.'s)

    Examples
    --------
    >>> bg = np.array([[0.0, 0.0], [1.0, 10.0], [2.0, 17.0]])
    >>> rows, w = EmpiricalImputer(sigma=0.1).fit(bg).rows(np.array([[True, False]]), np.array([1.0, 0.0]))
    >>> rows[0, :, 1].tolist(), np.round(w[0], 3).tolist()          # the row with x0 = 1 takes the weight
    ([0.0, 10.0, 17.0], [0.0, 1.0, 0.0])
    """

    name = "empirical"

    def __init__(self, sigma: float = 0.1) -> None:
        if not (isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a positive number, got {sigma!r}")
        self.sigma = float(sigma)

    def describe(self) -> str:
        fitted = self.fitted_cov.describe() if self.fitted else ""
        return f"empirical(sigma={self.sigma:g}" + (f", {fitted})" if fitted else ")")

    @property
    def samples(self) -> int:
        return int(self.background.shape[0])

    def fit(self, background: Any) -> EmpiricalImputer:
        self.background = _numeric(background, self.name)
        self.fitted_cov = FittedCovariance(self.background, self.name)
        self.cov = self.fitted_cov.cov
        self.fitted = True
        return self

    def rows(self, known: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        known = np.asarray(known, dtype=bool)
        m, n = known.shape
        x = np.asarray(x, dtype=float)
        diff = (x[None, :] - self.background).T                                               # (n, B)
        solved = known_solve(self.cov, known, np.broadcast_to(diff, (m, n, diff.shape[1])))   # (m, n, B)
        d2 = (diff[None] * solved).sum(axis=1) / np.maximum(known.sum(axis=1), 1)[:, None]
        logw = -d2 / (2 * self.sigma ** 2)
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        out = np.where(known[:, None, :], x[None, None, :], self.background[None, :, :])
        return out, w / w.sum(axis=1, keepdims=True)


#: the conditional imputations by name
CONDITIONAL = {"gaussian": GaussianImputer, "copula": CopulaImputer, "empirical": EmpiricalImputer}


def make_imputer(imputation: Any, background: Any) -> Imputer | None:
    """The fitted imputer of ``imputation`` (a name of :data:`CONDITIONAL`, ``"conditional"`` meaning
    ``"gaussian"``, or an :class:`Imputer`), or None for ``"baseline"`` / ``"marginal"``.

    Examples
    --------
    >>> bg = np.random.default_rng(0).normal(size=(20, 3))
    >>> make_imputer("conditional", bg).name, make_imputer("marginal", bg) is None
    ('gaussian', True)
    """
    if isinstance(imputation, Imputer):
        return imputation if imputation.fitted else imputation.fit(background)
    if imputation == "conditional":
        imputation = "gaussian"
    if imputation in CONDITIONAL:
        return CONDITIONAL[imputation]().fit(background)
    return None
