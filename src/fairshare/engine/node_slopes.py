"""The slopes of a function on the players' indicators under several product measures at once: the correction
that makes a fit under their mixture exact for a semivalue of that measure
(:meth:`~fairshare.engine.formulations.MeasureRegression.correction`).

Under ``mu_u`` (each player in with probability ``u``) the slope of ``r`` on ``z_i`` in the least-squares fit with a
free intercept is ``r``'s weighted Banzhaf value at ``u``. From one sample, node ``k``'s fit weighs row ``j`` by its
Horvitz-Thompson weight times ``mu_{u_k}(S_j)``, a function of the coalition's size: so every node's normal
equations are sums over sizes of moments taken once (``m d^2`` multiply-adds for all nodes, then ``d^3`` a node).
The result is ``sum_k c_k`` times node ``k``'s slopes. A node whose sampled rows cannot determine its ``d + 1``
unknowns (its normal equations singular, or a sampled row fitted exactly: a node near ``u = 0`` or ``1`` of little
weight at a small budget) adds nothing, and its weight is reported.

Standard errors: random groups of sampling units (the same groups for every node, so the nodes' covariances count),
each row's contribution over ``1 - h_j`` (its leverage in its node's fit), with the small-sample ``t`` factor, as
:func:`~fairshare.engine.solve.group_stderr` does for one fit. The nodes and sizes are fixed loops of matrix
products; no loop over rows.
"""

from __future__ import annotations

import numpy as np

from .._core import arrays
from .ridge_path import one_thread
from .samplers.sample import CoalitionSample
from .solve import MAX_GROUPS, indicator_product, replicate_stderr, unit_groups

__all__ = ["node_slopes", "fit_residual", "EXACT_LEVERAGE_WORK"]

#: leverages are exact up to this many multiply-adds (``nodes m d^2``); beyond, ``w_j ||z_j - zbar||^2`` over the
#: mean diagonal of the normal equations (as :func:`~fairshare.engine.solve.solve_regression` does), exact again for
#: a node where that reaches 1/2 on a sampled row (a fit near saturation, where the approximation is furthest off)
EXACT_LEVERAGE_WORK = 2e9
#: the most elements of a batch of nodes' centred rows (``nodes m d k``) the standard errors hold at once
_BATCH = 1 << 22
#: the most elements of the sizes' ``d x d`` moments held at once (256 MB)
_MOMENTS = 1 << 25


def node_slopes(Z: np.ndarray, log_weight: np.ndarray, log_mu: np.ndarray, c: np.ndarray, residual: np.ndarray,
                errors: np.ndarray, unit: np.ndarray, stratum: np.ndarray, fpc: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """``sum_k c_k`` times node ``k``'s weighted least-squares slopes of ``residual`` on the rows ``Z`` (``(m, d)``)
    with a free intercept, row ``j`` weighted by ``exp(log_weight_j + log_mu[k, |S_j|])``; their standard errors
    from the same fits of ``errors`` (``(m, k)`` both); and the weight ``sum c_k`` of the nodes left out.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.random((200, 3)) < 0.3
    >>> r = (Z @ np.array([1.0, 2.0, 3.0]))[:, None]               # additive: every node's slopes are 1, 2, 3
    >>> h = np.arange(4)
    >>> log_mu = np.stack([h * np.log(u) + (3 - h) * np.log1p(-u) for u in (0.2, 0.6)])
    >>> values, stderr, left = node_slopes(Z, np.zeros(200), log_mu, np.array([0.5, 0.5]), r, r, np.arange(200),
    ...                                    np.zeros(200, int), np.ones(200), rng)
    >>> np.round(values.ravel(), 10).tolist(), bool(np.allclose(stderr, 0.0)), left
    ([1.0, 2.0, 3.0], True, 0.0)
    """
    with one_thread():                  # small products: one BLAS thread (two threads measured 6-12x slower)
        return _node_slopes(Z, log_weight, log_mu, c, residual, errors, unit, stratum, fpc, rng)


def _node_slopes(Z: np.ndarray, log_weight: np.ndarray, log_mu: np.ndarray, c: np.ndarray, residual: np.ndarray,
                 errors: np.ndarray, unit: np.ndarray, stratum: np.ndarray, fpc: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    Z = np.asarray(arrays.to_numpy(Z), dtype=float)
    m, d = Z.shape
    k = residual.shape[1]
    sizes = Z.sum(axis=1).astype(np.int64)
    log_weight = np.asarray(arrays.to_numpy(log_weight), dtype=float)
    present = np.unique(sizes)
    weight = np.asarray(c, dtype=float)
    base, a = _scales(log_weight, sizes, present, log_mu)                      # a: (nodes, sizes)
    S0, S1, R0, R1, raw = _size_moments(Z, sizes, present, base, residual, a)
    random_rows = fpc > 1e-12
    _, first = np.unique(unit, return_index=True)
    n_random = int(random_rows[first].sum())
    G = min(MAX_GROUPS, n_random)
    onehot = None
    if G >= 2:
        onehot = np.zeros((G, m))
        onehot[unit_groups(unit, stratum, rng, G), np.arange(m)] = 1.0
    exact_leverage = log_mu.shape[0] * m * d * d <= EXACT_LEVERAGE_WORK
    total = a @ S0
    zbar = (a @ S1) / total[:, None]
    gram = raw - total[:, None, None] * zbar[:, :, None] * zbar[:, None, :]
    rhs = np.tensordot(a, R1, axes=1) - zbar[:, :, None] * (a @ R0)[:, None, :]          # (nodes, d, k)
    eig = np.linalg.eigvalsh(gram)
    usable = eig[:, 0] > 1e-12 * np.maximum(eig[:, -1], 1e-300)       # else the sample cannot determine the node
    inverse = np.zeros_like(gram)
    if usable.any():
        inverse[usable] = _inverses(gram[usable])                     # d x d: every solve below a product
    w = base * a[:, np.searchsorted(present, sizes)]                  # (nodes, m)
    dx = np.zeros((d, G, k))
    if onehot is not None:
        usable &= _slope_deviations(Z, w, total, zbar, gram, inverse, errors, fpc, random_rows, onehot,
                                    exact_leverage, usable, weight, dx)
    left = float(weight[~usable].sum())
    values = np.einsum("n,nij,njk->ik", weight * usable, inverse, rhs)
    if n_random == 0:
        return values, np.zeros((d, k)), left
    if onehot is None:
        return values, np.full((d, k), np.inf), left
    return values, replicate_stderr(dx, axis=1), left


def _scales(log_weight: np.ndarray, sizes: np.ndarray, present: np.ndarray,
            log_mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row ``j``'s weight in node ``k`` as ``base_j a[k, |S_j|]``: ``base`` scaled by the heaviest row, ``a`` by each
    node's heaviest size; below e^-70 none (rows 1e-30 of its heaviest count for nothing, and their products would go
    subnormal and slow every step 100x). Where a node's rows would then all weigh 0 (a node far from the sizes the
    sample's weights favour: at 2,000 players and 2n evaluations half of beta(4, 1)'s nodes, whose sums of 0 made
    their normal equations NaN and the eigensolver fail), ``base`` is scaled per size and the sizes' scales go into
    ``a``; elsewhere the weights are as they were."""
    where = np.searchsorted(present, sizes)
    base = np.exp(log_weight - log_weight.max())
    log_a = log_mu[:, present] - log_mu[:, present].max(axis=1, keepdims=True)
    a = np.where(log_a > -70.0, np.exp(np.maximum(log_a, -70.0)), 0.0)                     # (nodes, sizes)
    if np.all(a @ np.bincount(where, weights=base, minlength=present.size) > 0.0):
        return base, a
    top = np.full(present.size, -np.inf)
    np.maximum.at(top, where, log_weight)                                     # each size's heaviest row
    log_b = log_mu[:, present] + top
    log_a = log_b - log_b.max(axis=1, keepdims=True)
    return np.exp(log_weight - top[where]), np.where(log_a > -70.0, np.exp(np.maximum(log_a, -70.0)), 0.0)


def _size_moments(Z: np.ndarray, sizes: np.ndarray, present: np.ndarray, base: np.ndarray, residual: np.ndarray,
                  a: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per coalition size, the moments of the rows weighted by their Horvitz-Thompson weights ``base``: ``S0``
    ``(sizes,)``, ``S1`` ``(sizes, d)``, ``R0`` ``(sizes, k)``, ``R1`` ``(sizes, d, k)``; and the nodes' weighted
    second moments ``sum_h a[:, h] S2_h`` ``(nodes, d, d)``. The ``d x d`` moments ``S2_h`` are held for at most
    :data:`_MOMENTS` elements of sizes at a time (all at once for up to ~300 players; 2,000 players have ~850 sizes
    at 2n evaluations: 25 GiB at once)."""
    d, k = Z.shape[1], residual.shape[1]
    S0, S1 = np.zeros(present.size), np.zeros((present.size, d))
    R0, R1 = np.zeros((present.size, k)), np.zeros((present.size, d, k))
    raw = np.zeros((a.shape[0], d, d))
    step = max(1, _MOMENTS // max(d * d, 1))
    for start in range(0, present.size, step):
        S2 = np.zeros((min(step, present.size - start), d, d))
        for i in range(start, start + S2.shape[0]):
            rows = sizes == present[i]
            b, Zh = base[rows], Z[rows]
            S0[i], S1[i], S2[i - start] = b.sum(), b @ Zh, Zh.T @ (b[:, None] * Zh)
            R0[i], R1[i] = b @ residual[rows], Zh.T @ (b[:, None] * residual[rows])
        raw += np.tensordot(a[:, start:start + S2.shape[0]], S2, axes=1)
    return S0, S1, R0, R1, raw


def _inverses(gram: np.ndarray) -> np.ndarray:
    """The inverses of positive definite matrices ``(nodes, d, d)`` at once (a pseudo-inverse for any that is not
    numerically so)."""
    try:
        inverse = np.linalg.inv(gram)
    except np.linalg.LinAlgError:
        inverse = np.full_like(gram, np.nan)
    bad = ~np.isfinite(inverse).all(axis=(1, 2))
    for i in np.flatnonzero(bad):
        inverse[i] = np.linalg.pinv(gram[i], hermitian=True)
    return inverse


def _slope_deviations(Z: np.ndarray, w: np.ndarray, total: np.ndarray, zbar: np.ndarray, gram: np.ndarray,
                      inverse: np.ndarray, errors: np.ndarray, fpc: np.ndarray, random_rows: np.ndarray,
                      onehot: np.ndarray, exact_leverage: bool, usable: np.ndarray, weight: np.ndarray,
                      dx: np.ndarray) -> np.ndarray:
    """Add every usable node's random-group deviations of its slopes of ``errors`` to ``dx`` ``(d, G, k)`` (weighted
    by ``weight``), all nodes in a few products; return which nodes keep every sampled row's leverage below 1 (a
    sampled row fitted exactly leaves its node out)."""
    out = usable.copy()
    nodes = np.flatnonzero(usable)
    per = max(1, _BATCH // (Z.size * errors.shape[1]))               # nodes at once: a bounded working set
    for start in range(0, nodes.size, per):
        chunk = nodes[start:start + per]
        out[chunk] = _node_deviations(Z, w[chunk], total[chunk], zbar[chunk], gram[chunk], inverse[chunk], errors,
                                      fpc, random_rows, onehot, exact_leverage, weight[chunk], dx)
    return out


def _node_deviations(Z: np.ndarray, w: np.ndarray, total: np.ndarray, zbar: np.ndarray, gram: np.ndarray,
                     inverse: np.ndarray, errors: np.ndarray, fpc: np.ndarray, random_rows: np.ndarray,
                     onehot: np.ndarray, exact_leverage: bool, weight: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """:func:`_slope_deviations` for some nodes (all usable): whether each keeps its sampled rows' leverages below 1."""
    m, d = Z.shape
    G, k = onehot.shape[0], errors.shape[1]
    count = w.shape[0]
    Zc = Z[None, :, :] - zbar[:, None, :]                                       # (nodes, m, d)
    e = errors[None] - (w @ errors)[:, None, :] / total[:, None, None]            # (nodes, m, k)
    e = e - Zc @ (inverse @ (Zc.transpose(0, 2, 1) @ (w[:, :, None] * e)))
    if exact_leverage:
        leverage = w * np.einsum("nmi,nmi->nm", Zc @ inverse, Zc)
    else:
        diag = np.mean(np.diagonal(gram, axis1=1, axis2=2), axis=1)
        leverage = w * (Zc * Zc).sum(axis=2) / diag[:, None]
        # a node near saturation (effective rows not far above d + 1: a node far from u = 1/2 at a small budget) has
        # leverages near 1, where the approximation is furthest off: those nodes' are exact (capped at 1/2, the
        # approximation made beta(16, 1)'s error bars at 2.4 rows a player 2.4-16x too small, coverage 0.44-0.58)
        near = np.any(leverage[:, random_rows] >= 0.5, axis=1)
        if near.any():
            leverage[near] = w[near] * np.einsum("nmi,nmi->nm", Zc[near] @ inverse[near], Zc[near])
    keep = ~np.any(leverage[:, random_rows] > 1.0 - 1e-9, axis=1)
    scale = np.where(random_rows, 1.0 / (1.0 - np.where(keep[:, None], leverage, 0.0)), 1.0) * np.sqrt(fpc) * w
    spread = (e * scale[:, :, None])[:, :, :, None] * Zc[:, :, None, :]        # (nodes, m, k, d)
    totals = (onehot @ spread.reshape(count, m, k * d)).reshape(count, G, k, d) * G
    deviation = (totals - totals.mean(axis=1, keepdims=True)).transpose(0, 3, 1, 2)     # (nodes, d, G, k)
    dx += np.einsum("n,nij,njgk->igk", weight * keep, inverse, deviation)
    return keep


def fit_residual(sample: CoalitionSample, w: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``y - b - Z x`` for the fit with a free intercept ``b`` in the weights ``w`` (the sample's rows, ``(m, k)``).

    Examples
    --------
    >>> from fairshare.engine.samplers.sample import CoalitionSample
    >>> Z = np.array([[True, False], [False, True], [True, True], [False, False]])
    >>> sample = CoalitionSample(Z, np.zeros(4), np.arange(4), np.zeros(4, int), np.ones(4), 4, False, "random")
    >>> fit_residual(sample, np.ones(4), np.array([[1.0], [2.0], [3.0], [0.0]]), np.array([[1.0], [2.0]])).ravel()
    array([0., 0., 0., 0.])
    """
    y = np.asarray(arrays.to_numpy(y), dtype=float)
    fitted = np.asarray(arrays.to_numpy(indicator_product(sample.coalitions, x)), dtype=float)
    w = np.asarray(arrays.to_numpy(w), dtype=float)
    return (y - w @ y / w.sum()) - (fitted - w @ fitted / w.sum())
