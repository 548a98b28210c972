"""The slopes of a function on the players' indicators under several product measures at once: the correction
that makes a fit under their mixture exact for a semivalue of that measure
(:meth:`~fairshare.engine.formulations.MeasureRegression.correction`).

Under ``mu_u`` (each player in with probability ``u``) the slope of ``r`` on ``z_i`` in the least-squares fit with a
free intercept is ``r``'s weighted Banzhaf value at ``u``. From one sample, node ``k``'s fit weighs row ``j`` by its
Horvitz-Thompson weight times ``mu_{u_k}(S_j)``; the result is ``sum_k c_k`` times node ``k``'s slopes. Standard
errors: random groups of sampling units (the same groups for every node, so the nodes' covariances count), each
row's contribution over ``1 - h_j`` (its leverage in its node's fit), with the small-sample ``t`` factor, as
:func:`~fairshare.engine.solve.group_stderr` does for one fit. The nodes are a fixed loop (a quadrature's, at most
``d / 2 + 1``) of matrix products; no loop over rows.
"""

from __future__ import annotations

import numpy as np

from .._core import arrays
from .solve import MAX_GROUPS, replicate_stderr, unit_groups

__all__ = ["node_slopes"]


def node_slopes(Z: np.ndarray, log_weight: np.ndarray, log_mu: np.ndarray, c: np.ndarray, residual: np.ndarray,
                errors: np.ndarray, unit: np.ndarray, stratum: np.ndarray, fpc: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``sum_k c_k`` times node ``k``'s weighted least-squares slopes of ``residual`` on the rows ``Z`` (``(m, d)``)
    with a free intercept, row ``j`` weighted by ``exp(log_weight_j + log_mu[k, |S_j|])``; and their standard errors
    from the same fits of ``errors`` (``(m, k)`` both).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.random((200, 3)) < 0.3
    >>> r = (Z @ np.array([1.0, 2.0, 3.0]))[:, None]               # additive: every node's slopes are 1, 2, 3
    >>> h = np.arange(4)
    >>> log_mu = np.stack([h * np.log(u) + (3 - h) * np.log1p(-u) for u in (0.2, 0.6)])
    >>> values, stderr = node_slopes(Z, np.zeros(200), log_mu, np.array([0.5, 0.5]), r, r, np.arange(200),
    ...                              np.zeros(200, int), np.ones(200), rng)
    >>> np.round(values.ravel(), 10).tolist(), bool(np.allclose(stderr, 0.0))
    ([1.0, 2.0, 3.0], True)
    """
    Z = np.asarray(arrays.to_numpy(Z), dtype=float)
    m, d = Z.shape
    k = residual.shape[1]
    sizes = Z.sum(axis=1).astype(np.int64)
    log_w = np.asarray(arrays.to_numpy(log_weight), dtype=float)[:, None] + log_mu[:, sizes].T       # (m, K)
    W = np.exp(log_w - log_w.max(axis=0, keepdims=True))
    random_rows = fpc > 1e-12
    _, first = np.unique(unit, return_index=True)
    n_random = int(random_rows[first].sum())
    G = min(MAX_GROUPS, n_random)
    onehot = None
    if G >= 2:
        onehot = np.zeros((G, m))
        onehot[unit_groups(unit, stratum, rng, G), np.arange(m)] = 1.0
    values, dx, exact = np.zeros((d, k)), np.zeros((d, G, k)), False
    for node, weight in enumerate(np.asarray(c, dtype=float)):
        w = W[:, node]
        total = w.sum()
        Zc = Z - (w @ Z) / total
        gram = Zc.T @ (w[:, None] * Zc)
        solve = arrays.factor_solver(gram)
        values += weight * solve(Zc.T @ (w[:, None] * (residual - (w @ residual) / total)))
        if onehot is None:
            continue
        e = errors - (w @ errors) / total
        e = e - Zc @ solve(Zc.T @ (w[:, None] * e))
        leverage = w * (Zc * solve(Zc.T).T).sum(axis=1)
        exact |= bool(np.any(leverage[random_rows] > 1.0 - 1e-9))
        scale = np.where(random_rows, 1.0 / np.maximum(1.0 - leverage, 1e-300), 1.0) * np.sqrt(fpc) * w
        contrib = e * scale[:, None]                                                   # (m, k)
        spread = (contrib[:, :, None] * Zc[:, None, :]).reshape(m, k * d)
        totals = (onehot @ spread).reshape(G, k, d).transpose(0, 2, 1) * G               # (G, d, k)
        deviation = totals - totals.mean(axis=0, keepdims=True)
        dx += weight * solve(deviation.transpose(1, 0, 2).reshape(d, G * k)).reshape(d, G, k)
    if n_random == 0:
        return values, np.zeros((d, k))
    if onehot is None or exact:
        return values, np.full((d, k), np.inf)
    return values, replicate_stderr(dx, axis=1)
