"""Compiled (numba) walks over tree ensembles, run over many rows: exact semivalues, split decisions, leaves.

The walks take the flat arrays of :class:`~fairshare.trees.ensemble.TreeEnsemble` and the split
decisions of the rows at every node (:func:`decisions`, which with :func:`leaves` runs the one
implementation of every library's split rule, :mod:`fairshare.trees.split_rules`), and add the rows' values
into ``out``. They are the engine of :func:`fairshare.games.tree_values` and of ``fairshare.doors.exact`` on a
:class:`~fairshare.games.TreeGame`; use those. Rows (or blocks of rows) run in parallel on numba's
threads; a call made while another thread runs a parallel kernel runs serially instead, so the
kernels compose with ``explain``'s threads.

*Path-dependent* (:func:`path_dependent_rows`): :func:`~fairshare.trees.path_walk.path_dependent_walk`, one
depth-first walk per tree for a whole block of rows (:mod:`fairshare.trees.path_walk`).

*Interventional* (:func:`interventional_rows`): for each (row, background row, tree), a walk that follows both
rows where they agree and branches where they disagree (:mod:`fairshare.trees.intervene_walk`).
"""

from __future__ import annotations

import threading

import numpy as np

from .intervene_walk import _intervene_chunks, _intervene_chunks_serial, _intervene_parallel, _intervene_serial
from .path_walk import _path_dependent_parallel, _path_dependent_serial, path_dependent_walk, path_layout
from .split_rules import (_decisions_parallel, _decisions_serial, _leaves_parallel, _leaves_serial, _sums_parallel,
                          _sums_serial)

__all__ = ["path_layout", "path_dependent_walk", "path_dependent_rows", "interventional_rows", "decisions", "leaves",
           "leaf_sums"]


_PARALLEL = threading.Lock()     # one parallel kernel at a time; a concurrent caller runs the serial one
_CHUNKS = 8                      # background chunks of a single explained row


def _run(serial, parallel, parallel_ok: bool, *args) -> None:
    if parallel_ok and _PARALLEL.acquire(blocking=False):
        try:
            parallel(*args)
        finally:
            _PARALLEL.release()
        return
    serial(*args)


def _split_arrays(ens) -> tuple:
    empty_bool, empty_keys = np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64)
    if ens.categorical is None:
        return empty_bool, empty_keys, empty_keys, empty_bool
    return ens.categorical, ens.cat_left, ens.cat_right, ens.cat_other_left


def decisions(ens, X: np.ndarray) -> np.ndarray:
    """``go_left[r, node]`` for every row of ``X`` at every internal node of ``ens`` (False at leaves).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=1).fit(np.arange(4.0)[:, None], [0, 0, 1, 1]))
    >>> decisions(ens, np.array([[0.0], [3.0]]))[:, 0]
    array([ True, False])
    """
    X = np.ascontiguousarray(X, dtype=float)
    out = np.zeros((X.shape[0], ens.feature.shape[0]), dtype=np.bool_)
    _run(_decisions_serial, _decisions_parallel, X.shape[0] * ens.feature.shape[0] > 1 << 20,
         ens.feature, ens.threshold, ens.default_left, ens.missing, ens.strict, ens.float32, *_split_arrays(ens), X,
         out)
    return out


def leaves(ens, X: np.ndarray) -> np.ndarray:
    """Leaf reached by every row of ``X`` in every tree of ``ens``: ``(m, T)`` node indices."""
    X = np.ascontiguousarray(X, dtype=float)
    out = np.empty((X.shape[0], ens.roots.shape[0]), dtype=np.int64)
    _run(_leaves_serial, _leaves_parallel, X.shape[0] * ens.roots.shape[0] > 1 << 14, ens.feature, ens.left,
         ens.right, ens.roots, ens.threshold, ens.default_left, ens.missing, ens.strict, ens.float32,
         *_split_arrays(ens), X, out)
    return out


def leaf_sums(ens, X: np.ndarray) -> np.ndarray:
    """The sum over trees of the reached leaves' values for every row of ``X``: ``(m, k)`` (constant leaves), in one
    compiled pass (no ``(rows, trees)`` table of leaves).

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> from fairshare.trees import read_ensemble
    >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=1).fit(np.arange(4.0)[:, None], [0, 0, 1, 1]))
    >>> leaf_sums(ens, np.array([[0.0], [3.0]])).ravel().tolist()
    [0.0, 1.0]
    """
    X = np.ascontiguousarray(X, dtype=float)
    value = np.ascontiguousarray(ens.value, dtype=float)
    out = np.zeros((X.shape[0], value.shape[1]))
    _run(_sums_serial, _sums_parallel, X.shape[0] * ens.roots.shape[0] > 1 << 14, ens.feature, ens.left,
         ens.right, ens.roots, ens.threshold, ens.default_left, ens.missing, ens.strict, ens.float32,
         *_split_arrays(ens), value, X, out)
    return out


def interventional_rows(left: np.ndarray, right: np.ndarray, feature: np.ndarray, value: np.ndarray,
                        roots: np.ndarray, tree_out: np.ndarray, go_x: np.ndarray, go_z: np.ndarray, pos: np.ndarray,
                        neg: np.ndarray, linear: tuple, X: np.ndarray, Z: np.ndarray, max_depth: int,
                        out: np.ndarray) -> None:
    """Add the interventional values of every row of ``go_x`` against the background rows of ``go_z``
    (averaged) into ``out`` ``(rows, n_features, k)``; rows run in parallel.

    ``pos[p, q]`` / ``neg[p, q]``: value of a member of ``P`` / ``N`` in ``1[P in S, N out of S]``;
    ``linear``: ``(ptr, feature, coeff, fallback)`` of linear leaves (``ptr`` of length 1 when none)
    with ``X``, ``Z`` the raw rows and background rows they read.
    """
    import numba

    ptr, feat, coeff, fallback = linear
    max_terms = int(np.diff(ptr).max(initial=0)) if ptr.size > 1 else 0
    args = (left, right, feature, value, roots, tree_out, go_x, go_z, pos, neg, ptr, feat, coeff, fallback, X, Z,
            max_depth, max_terms)
    B = go_z.shape[0]
    if go_x.shape[0] < _CHUNKS and B >= 2 * _CHUNKS:
        # few rows (the per-row loop): the background in a fixed number of chunks, in parallel when the threads
        # are free and one after another otherwise; the same sums either way, whatever the threads
        bounds = np.linspace(0, B, _CHUNKS + 1).astype(np.int64)
        partial = np.zeros((_CHUNKS,) + out.shape)
        if numba.get_num_threads() > 1 and _PARALLEL.acquire(blocking=False):
            try:
                _intervene_chunks(*args, bounds, partial)
            finally:
                _PARALLEL.release()
        else:
            _intervene_chunks_serial(*args, bounds, partial)
        out += np.tensordot(np.diff(bounds) / B, partial, axes=1)
        return
    _run(_intervene_serial, _intervene_parallel, go_x.shape[0] > 1, *args, out)


def path_dependent_rows(left: np.ndarray, right: np.ndarray, feature: np.ndarray, ratio: np.ndarray,
                        parent: np.ndarray, slot: np.ndarray, repeat: np.ndarray, value: np.ndarray, roots: np.ndarray,
                        tree_out: np.ndarray, go_left_t: np.ndarray, nodes: np.ndarray, weights: np.ndarray,
                        max_depth: int, block: int, out: np.ndarray) -> None:
    """:func:`path_dependent_walk` over blocks of ``block`` rows of ``go_left_t`` ``(nodes, rows)`` into
    ``out`` ``(n_features, k, rows)``; blocks run in parallel."""
    _run(_path_dependent_serial, _path_dependent_parallel, go_left_t.shape[1] > block, left, right, feature, ratio,
         parent, slot, repeat, value, roots, tree_out, go_left_t, nodes, weights, max_depth, block, out)
