"""Every coalition's value of an interventional tree game at once, for outputs that are no sum over trees.

A probability (or a log loss) of hybrid rows ``(x_S, b_{~S})`` is a non-linear function of the trees'
margin, so its semivalues have no closed form and an exact value needs the game on all ``2^n``
coalitions. Predicting ``2^n x B`` hybrid rows walks every tree ``2^n B`` times. Here each (background
row, tree) is walked once: the walk follows ``x`` and ``b`` together and branches only where they part
on a feature not yet decided on the path (as interventional TreeSHAP), so a reached leaf is the game
``1[P in S] 1[N out of S]`` times its value. Its Moebius coefficients are ``(-1)^|T|`` at ``P + T`` for
every ``T`` in ``N``; the ensemble's margin on every coalition is then one subset-sum (zeta) transform of
the summed coefficients, ``n 2^(n-1)`` additions per background row. The link is applied per background
row and the results averaged. Cost per explained row: ``B (walk + n 2^n)`` instead of ``2^n B`` walks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE
from .kernels import _run

__all__ = ["margin_tables", "interventional_table", "TABLE_PLAYERS"]

#: the most features whose ``2^n`` table a game keeps (65,536 coalitions)
TABLE_PLAYERS = 16
_CHUNKS = 8                        # fixed parts of the background, each summed on its own (the same sums on any threads)


@njit(cache=CACHE, nogil=True)
def _table_one(j: int, left: np.ndarray, right: np.ndarray, feature: np.ndarray, value: np.ndarray,
               roots: np.ndarray, tree_out: np.ndarray, base: np.ndarray, gx: np.ndarray, gz: np.ndarray,
               max_depth: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Margins of every coalition against one background row (decisions ``gz``) into ``out[j]`` ``(2^n, k)``."""
    k = value.shape[1]
    n_cells = out.shape[1]
    size = 2 * max_depth + 4
    st_node = np.empty(size, dtype=np.int64)
    st_in = np.empty(size, dtype=np.int64)
    st_out = np.empty(size, dtype=np.int64)
    for o in range(k):
        out[j, 0, o] += base[o]
    for t in range(roots.shape[0]):
        o_t = tree_out[t]
        st_node[0] = roots[t]
        st_in[0] = 0
        st_out[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = st_node[top]
            a = st_in[top]
            b = st_out[top]
            f = feature[node]
            if f < 0:                                  # the leaf's game: Moebius terms (-1)^|T| at a + T, T in b
                sub = b
                while True:
                    sign = 1.0
                    rest = sub
                    while rest:
                        rest &= rest - 1
                        sign = -sign
                    cell = a | sub
                    if o_t >= 0:
                        out[j, cell, o_t] += sign * value[node, o_t]
                    else:
                        for o in range(k):
                            out[j, cell, o] += sign * value[node, o]
                    if sub == 0:
                        break
                    sub = (sub - 1) & b
                continue
            go_x = gx[node]
            go_z = gz[node]
            bit = np.int64(1) << f
            if go_x == go_z or (a & bit):
                go = go_x
            elif b & bit:
                go = go_z
            else:                                      # the feature decides here: from b (out of S) or x (in S)
                st_node[top] = left[node] if go_z else right[node]
                st_in[top] = a
                st_out[top] = b | bit
                st_node[top + 1] = left[node] if go_x else right[node]
                st_in[top + 1] = a | bit
                st_out[top + 1] = b
                top += 2
                continue
            st_node[top] = left[node] if go else right[node]
            st_in[top] = a
            st_out[top] = b
            top += 1
    flat = out[j].reshape(n_cells * k)                 # subset sums: margin(S) = sum of coefficients of U in S;
    step = k                                           # cells with the bit += cells without it, contiguous runs
    while step < n_cells * k:
        for low in range(0, n_cells * k, 2 * step):
            for i in range(low, low + step):
                flat[i + step] += flat[i]
        step <<= 1


@njit(cache=CACHE, nogil=True, inline="always")
def _link_cell(m: np.ndarray, j: int, cell: int, link: int, label: int,
               res: np.ndarray) -> None:  # pragma: no cover - compiled
    """Add to ``res[j, cell]`` the link of the margins ``m[j, cell]``: identity (0), logistic as two classes (1; 4: of
    twice the margin), softmax (2), a logistic per output (3); with ``label`` >= 0 the log loss of that class,
    clipped at 1e-15 as scikit-learn's."""
    k = m.shape[2]
    if link == 3:
        for o in range(k):
            p = 1.0 / (1.0 + np.exp(-m[j, cell, o]))
            if label < 0:
                res[j, cell, o] += p
            elif o == label:
                res[j, cell, 0] += -np.log(min(max(p, 1e-15), 1.0))
        return
    if link == 1 or link == 4:
        p = 1.0 / (1.0 + np.exp(-m[j, cell, 0] * (2.0 if link == 4 else 1.0)))
        if label < 0:
            res[j, cell, 0] += 1.0 - p
            res[j, cell, 1] += p
        else:
            res[j, cell, 0] += -np.log(min(max(p if label == 1 else 1.0 - p, 1e-15), 1.0))
        return
    if link == 2:
        top = m[j, cell, 0]
        for o in range(1, k):
            top = max(top, m[j, cell, o])
        total = 0.0
        for o in range(k):
            total += np.exp(m[j, cell, o] - top)
        if label < 0:
            for o in range(k):
                res[j, cell, o] += np.exp(m[j, cell, o] - top) / total
        else:
            res[j, cell, 0] += -np.log(min(max(np.exp(m[j, cell, label] - top) / total, 1e-15), 1.0))
        return
    if label < 0:
        for o in range(k):
            res[j, cell, o] += m[j, cell, o]
    else:
        res[j, cell, 0] += -np.log(min(max(m[j, cell, label], 1e-15), 1.0))


@njit(cache=CACHE, nogil=True)
def _linked_chunk(c, bounds, left, right, feature, value, roots, tree_out, base, gx, go_z, max_depth, link, label,
                  buf, acc):  # pragma: no cover - compiled
    """Background rows ``bounds[c] .. bounds[c + 1]``, one after another: each one's margin table in ``buf[c]``, its
    link added into ``acc[c]``."""
    for b in range(bounds[c], bounds[c + 1]):
        buf[c] = 0.0
        _table_one(c, left, right, feature, value, roots, tree_out, base, gx, go_z[b], max_depth, buf)
        for cell in range(buf.shape[1]):
            _link_cell(buf, c, cell, link, label, acc)


@njit(cache=CACHE, nogil=True)
def _linked_serial(bounds, left, right, feature, value, roots, tree_out, base, gx, go_z, max_depth, link, label, buf,
                   acc):  # pragma: no cover - compiled
    for c in range(bounds.shape[0] - 1):
        _linked_chunk(c, bounds, left, right, feature, value, roots, tree_out, base, gx, go_z, max_depth, link, label,
                      buf, acc)


@njit(cache=CACHE, nogil=True, parallel=True)
def _linked_parallel(bounds, left, right, feature, value, roots, tree_out, base, gx, go_z, max_depth, link, label,
                     buf, acc):  # pragma: no cover - compiled
    for c in prange(bounds.shape[0] - 1):
        _linked_chunk(c, bounds, left, right, feature, value, roots, tree_out, base, gx, go_z, max_depth, link, label,
                      buf, acc)


def margin_tables(prep: Any, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    """The ensemble's margin on the hybrid row ``(x_S, b_{~S})`` for every coalition and background row:
    ``(B, 2^n, k)``, coalitions in :func:`~fairshare.engine.exact.all_coalitions` order.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> from fairshare.trees import prepared
    >>> X = np.random.default_rng(0).random((200, 3)); y = X[:, 0] * X[:, 1]
    >>> prep = prepared(GradientBoostingRegressor(n_estimators=5).fit(X, y))
    >>> T = margin_tables(prep, X[0], X[1:3])
    >>> hybrid = np.where([True, False, True], X[0], X[1])            # coalition {0, 2} = number 0b101
    >>> bool(np.isclose(T[0, 0b101, 0], prep.ensemble.predict(hybrid[None])[0, 0]))
    True
    """
    return _sums(prep, x, background, "identity", None, prep.ensemble.n_outputs, chunks=background.shape[0])


def _sums(prep: Any, x: np.ndarray, background: np.ndarray, link: str, label: int | None, width: int,
          chunks: int) -> np.ndarray:
    """The linked margin tables summed over each of ``chunks`` fixed, contiguous parts of the background:
    ``(chunks, 2^n, width)``; the parts run in parallel when numba's threads are free."""
    ens = prep.ensemble
    n = ens.n_features
    if ens.linear is not None:
        raise ValueError("linear leaves have no table of coalition values")
    if n > TABLE_PLAYERS:
        raise ValueError(f"a table of all 2^{n} coalitions is kept for at most {TABLE_PLAYERS} features")
    if link not in LINKS:
        raise ValueError(f"link must be one of {sorted(LINKS)}, got {link!r}")
    k, n_cells = ens.n_outputs, 1 << n
    go_x = np.ascontiguousarray(ens.decisions(np.asarray(x, dtype=float)[None, :])[0])   # the ensemble's own rule
    go_z = np.ascontiguousarray(prep.decisions(background))
    B = background.shape[0]
    chunks = max(1, min(chunks, B))
    bounds = np.linspace(0, B, chunks + 1).astype(np.int64)
    buf = np.empty((chunks, n_cells, k))
    acc = np.zeros((chunks, n_cells, width))
    _run(_linked_serial, _linked_parallel, chunks > 1, bounds, ens.left, ens.right, ens.feature,
         np.ascontiguousarray(ens.value, dtype=float), ens.roots, prep.tree_out, np.asarray(ens.base, dtype=float),
         go_x, go_z, prep.max_depth, LINKS[link], -1 if label is None else int(label), buf, acc)
    return acc


LINKS = {"identity": 0, "logistic": 1, "softmax": 2, "logistic per output": 3, "logistic of twice the margin": 4}
_TWO_CLASSES = ("logistic", "logistic of twice the margin")         # one margin, two class probabilities


def interventional_table(prep: Any, x: np.ndarray, background: np.ndarray, link: str = "identity",
                         label: int | None = None) -> np.ndarray:
    """``v(S) = mean over background rows b of link(margin(x_S, b_{~S}))`` for every coalition: ``(2^n, k')``.

    ``link``: ``"identity"``, ``"logistic"`` or ``"logistic of twice the margin"`` (one margin; two class
    probabilities), ``"softmax"`` or ``"logistic per output"`` (:mod:`fairshare.trees.links`); with ``label`` the log
    loss ``-log p[label]`` (one column). The background is taken in fixed blocks, so the table is the same whatever
    the threads.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> from fairshare.trees import prepared
    >>> X = np.random.default_rng(0).random((200, 3)); y = X[:, 0] > 0.5
    >>> prep = prepared(GradientBoostingClassifier(n_estimators=5).fit(X, y))
    >>> v = interventional_table(prep, X[0], X[1:50], "logistic")
    >>> p = 1.0 / (1.0 + np.exp(-prep.ensemble.predict(X[:1])[0, 0]))    # the grand coalition: x itself
    >>> bool(np.allclose(v[-1], [1.0 - p, p]))
    True
    """
    k = prep.ensemble.n_outputs
    width = 1 if label is not None else (2 if link in _TWO_CLASSES else k)
    return _sums(prep, x, background, link, label, width, _CHUNKS).sum(axis=0) / background.shape[0]
