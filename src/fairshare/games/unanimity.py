"""Unanimity games and sums of unanimity games (SOUM), with exact semivalues from the Mobius form."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arguments import SeedLike, check_int
from .._core.seeds import generator
from .._core.combinatorics import log_binom, logsumexp
from .base import Game
from ..indices.semivalues import Semivalue

__all__ = ["UnanimityGame", "SOUMGame", "unanimity_share"]


def unanimity_share(semivalue: Semivalue, n_players: int, sizes: np.ndarray) -> np.ndarray:
    """Value of each member of a unanimity game ``u_T`` with ``|T| = t``, for every ``t`` in ``sizes``.

    A member ``i`` of ``T`` has a marginal contribution of 1 exactly when ``S``
    (not holding ``i``) contains the other ``t - 1`` members, so its value is
    ``sum_{l=t-1}^{n-1} p_l C(n-t, l-t+1)``, summed in log space.

    Examples
    --------
    >>> import fairshare as fs
    >>> unanimity_share(fs.Semivalue.shapley(), 10, np.array([1, 2, 5]))
    array([1. , 0.5, 0.2])
    >>> unanimity_share(fs.Semivalue.banzhaf(), 10, np.array([3]))
    array([0.25])
    """
    n = n_players
    log_p = semivalue.log_weights(n)
    t = np.asarray(sizes, dtype=int)
    ell = np.arange(n)
    # terms[a, l] = log p_l + log C(n - t_a, l - t_a + 1)
    terms = log_p[None, :] + log_binom(n - t[:, None], ell[None, :] - t[:, None] + 1)
    return np.exp(logsumexp(terms, axis=1))


class SOUMGame(Game):
    """Sum of unanimity games: ``v(S) = sum_j a_j * 1[T_j subset of S]``.

    Every game is a SOUM (its Mobius transform); semivalues are linear, so the
    exact values come from :func:`unanimity_share` for any semivalue and any ``n``.

    Parameters
    ----------
    coalitions : bool array of shape (K, n)
        The carriers ``T_j`` (each non-empty).
    coefficients : array of shape (K,) or (K, k)

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> T = np.array([[1, 1, 0], [0, 1, 1]], dtype=bool)
    >>> g = fs.games.SOUMGame(T, [1.0, 2.0])
    >>> fs.exact(g, "shapley").values
    array([0.5, 1.5, 1. ])
    """

    kind = "synthetic"

    def __init__(self, coalitions: Any, coefficients: Any, player_names: Any = None,
                 batch_size: int | None = None) -> None:
        T = np.asarray(coalitions)
        if T.ndim != 2 or T.shape[0] < 1 or T.dtype.kind not in "biu":
            raise ValueError(f"coalitions must be a boolean (K, n) array, got shape {T.shape} and dtype {T.dtype}")
        T = T.astype(bool)
        if np.any(T.sum(axis=1) == 0):
            raise ValueError("coalitions must not contain the empty coalition")
        a = np.asarray(coefficients, dtype=float)
        if a.shape[:1] != (T.shape[0],) or a.ndim > 2 or not np.all(np.isfinite(a)):
            raise ValueError(f"coefficients must be finite with shape ({T.shape[0]},) or ({T.shape[0]}, k), got {a.shape}")
        super().__init__(T.shape[1], player_names=player_names, batch_size=batch_size)
        self.carriers = T
        self.coefficients = a
        self._sizes = T.sum(axis=1)
        self._T = T.astype(float)

    @classmethod
    def random(cls, n_players: int, n_terms: int = 50, *, min_size: int = 1, max_size: int | None = None,
               seed: SeedLike = None, player_names: Any = None, batch_size: int | None = None) -> SOUMGame:
        """A random SOUM: ``n_terms`` carriers with uniform sizes in ``[min_size, max_size]``
        and standard normal coefficients.

        Examples
        --------
        >>> g = SOUMGame.random(40, n_terms=30, seed=1)
        >>> g.n_players, g.carriers.shape
        (40, (30, 40))
        """
        n = check_int(n_players, "n_players", minimum=1)
        K = check_int(n_terms, "n_terms", minimum=1)
        hi = n if max_size is None else check_int(max_size, "max_size", minimum=1)
        lo = check_int(min_size, "min_size", minimum=1)
        if not lo <= hi <= n:
            raise ValueError(f"need 1 <= min_size <= max_size <= n_players, got {lo}, {hi}, {n}")
        rng = generator(seed)
        sizes = rng.integers(lo, hi + 1, size=K)
        keys = rng.random((K, n))
        ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
        T = ranks < sizes[:, None]
        return cls(T, rng.standard_normal(K), player_names=player_names, batch_size=batch_size)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        hits = coalitions.astype(float) @ self._T.T            # members of each carrier present (exact integers)
        inside = hits == self._sizes[None, :]
        # a row-wise sum, not a matrix product, so a row's value does not depend on the batch it came in
        if self.coefficients.ndim == 1:
            return np.where(inside, self.coefficients[None, :], 0.0).sum(axis=1)
        return np.where(inside[:, :, None], self.coefficients[None, :, :], 0.0).sum(axis=1)

    def exact_values(self, index: Semivalue) -> np.ndarray:
        share = unanimity_share(index, self.n_players, self._sizes)   # (K,)
        weighted = self.coefficients * (share if self.coefficients.ndim == 1 else share[:, None])
        return self._T.T @ weighted

    def moebius_terms(self) -> tuple[np.ndarray, np.ndarray]:
        return self.carriers, self.coefficients


class UnanimityGame(SOUMGame):
    """``v(S) = 1`` when ``S`` contains every player of ``carrier``, else 0.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.UnanimityGame([0, 2], n_players=4)
    >>> fs.exact(g, "shapley").values
    array([0.5, 0. , 0.5, 0. ])
    """

    def __init__(self, carrier: Any, n_players: int, player_names: Any = None, batch_size: int | None = None) -> None:
        n = check_int(n_players, "n_players", minimum=1)
        members = np.asarray(carrier, dtype=int).reshape(-1)
        if members.size == 0 or members.min() < 0 or members.max() >= n:
            raise ValueError(f"carrier must list player indices in [0, {n}), got {carrier!r}")
        T = np.zeros((1, n), dtype=bool)
        T[0, members] = True
        super().__init__(T, [1.0], player_names=player_names, batch_size=batch_size)
