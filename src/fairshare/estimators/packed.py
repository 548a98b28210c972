"""Coalition rows packed eight to a byte, and products with them at a byte a step (compiled).

``Z v`` for a boolean ``(m, d)`` matrix costs ``m d`` multiply-adds done naively; with the rows packed
(bit ``i`` of byte ``j`` is player ``8 j + i``) and, per product, a table ``T[j, b] = sum of v over the
players whose bits are set in byte value b at position j`` (``d / 8 * 256`` entries, built in ``O(32 d)``),
a row's product is ``d / 8`` table lookups: eight times fewer operations, and the coalition matrix
in an eighth of the memory. ``Z^T u`` scatters ``u`` into per-position byte histograms (a column of
bytes per thread, no races) and expands them the same way. These are the ``O(m n)`` products of
the iterative least-squares solver (:mod:`fairshare.estimators.iterative`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..trees.kernels import _CACHE

__all__ = ["PackedRows"]

_ACC_CELLS = 1 << 23            # byte-histogram cells per pass of Z^T u (64 MB)
_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float64)     # (256, 8)


_TILE_BYTES = 1 << 18           # table bytes a tile of byte positions keeps in the L2 cache
_TILE_ROWS = 8192               # rows a tile sweeps while its table slice stays cached


@njit(cache=_CACHE, nogil=True)
def _lookup(bits: np.ndarray, table: np.ndarray, r0: int, r1: int, span: int, val: np.ndarray) -> None:  # pragma: no cover
    """``val[r - r0] = sum_j table[j, bits[r, j]]`` for rows ``r0..r1``, ``span`` byte positions at a time (a slice of
    the table small enough to stay in cache while every row of the tile reads it)."""
    nb = bits.shape[1]
    k = table.shape[2]
    val[: r1 - r0] = 0.0
    for j0 in range(0, nb, span):
        j1 = min(j0 + span, nb)
        for r in range(r0, r1):
            i = r - r0
            if k == 1:                           # one output: the row's sum in a register
                total = 0.0
                for j in range(j0, j1):
                    total += table[j, bits[r, j], 0]
                val[i, 0] += total
                continue
            for j in range(j0, j1):
                b = bits[r, j]
                for q in range(k):
                    val[i, q] += table[j, b, q]


@njit(cache=_CACHE, nogil=True)
def _scatter(bits: np.ndarray, val: np.ndarray, r0: int, r1: int, span: int, acc: np.ndarray) -> None:  # pragma: no cover
    """``acc[j, bits[r, j]] += val[r - r0]`` for rows ``r0..r1``, tiled like :func:`_lookup`."""
    nb = bits.shape[1]
    k = val.shape[1]
    for j0 in range(0, nb, span):
        j1 = min(j0 + span, nb)
        for r in range(r0, r1):
            i = r - r0
            if k == 1:
                v = val[i, 0]
                for j in range(j0, j1):
                    acc[j, bits[r, j], 0] += v
                continue
            for j in range(j0, j1):
                b = bits[r, j]
                for q in range(k):
                    acc[j, b, q] += val[i, q]


@njit(cache=_CACHE, nogil=True, parallel=True)
def _matvec(bits: np.ndarray, table: np.ndarray, span: int, tile: int, out: np.ndarray) -> None:  # pragma: no cover
    m = bits.shape[0]
    tiles = (m + tile - 1) // tile
    for c in prange(tiles):
        r0 = c * tile
        r1 = min(r0 + tile, m)
        _lookup(bits, table, r0, r1, span, out[r0:r1])


@njit(cache=_CACHE, nogil=True, parallel=True)
def _rmatvec(bits_t: np.ndarray, U: np.ndarray, group: np.ndarray, acc: np.ndarray) -> None:  # pragma: no cover
    nb, m = bits_t.shape
    k = U.shape[1]
    for j in prange(nb):
        for r in range(m):
            b = bits_t[j, r]
            g = group[r]
            for c in range(k):
                acc[g, j, b, c] += U[r, c]


@njit(cache=_CACHE, nogil=True, parallel=True)
def _normal(bits: np.ndarray, table: np.ndarray, s: np.ndarray, t: np.ndarray, w: np.ndarray, shift: np.ndarray,
            bounds: np.ndarray, span: int, tile: int, acc: np.ndarray, sums: np.ndarray) -> None:  # pragma: no cover
    """One pass for ``A^T W A V``: each row's ``a_j^T V`` from the table, then ``w_j s_j (a_j^T V)`` scattered into
    its own chunk's byte histograms; ``sums[c] += (t_j, 1) * w_j (a_j^T V)`` for the constant parts. Rows go a
    tile at a time, and within a tile the byte positions ``span`` at a time, so that the slice of the table
    (and of the histograms) in use stays cached: with several outputs the whole table does not fit."""
    k = table.shape[2]
    for c in prange(bounds.shape[0] - 1):
        val = np.empty((tile, k))
        for r0 in range(bounds[c], bounds[c + 1], tile):
            r1 = min(r0 + tile, bounds[c + 1])
            _lookup(bits, table, r0, r1, span, val)
            for r in range(r0, r1):
                i = r - r0
                for q in range(k):
                    u = w[r] * (s[r] * val[i, q] - shift[r, q])
                    sums[c, 0, q] += t[r] * u
                    sums[c, 1, q] += u
                    val[i, q] = s[r] * u
            _scatter(bits, val, r0, r1, span, acc[c])


def _span(nb: int, k: int) -> int:
    """Byte positions per tile: all of them when the whole table fits the cache (one output: 2 KB a position)."""
    if nb * 256 * k * 8 <= 4 * _TILE_BYTES:
        return nb
    return max(1, min(nb, _TILE_BYTES // (256 * k * 8)))


def _expand(acc: np.ndarray) -> np.ndarray:
    """Byte histograms ``(..., nb, 256, k)`` to per-player sums ``(..., nb * 8, k)`` (one matrix product)."""
    out = np.tensordot(acc, _BITS, axes=([-2], [0]))                       # (..., nb, k, 8)
    return np.swapaxes(out, -1, -2).reshape(*acc.shape[:-3], acc.shape[-3] * 8, acc.shape[-1])


class PackedRows:
    """A boolean coalition matrix, packed, with ``Z v`` and ``Z^T u`` in ``O(m d / 8)``.

    Examples
    --------
    >>> Z = np.random.default_rng(0).random((5, 11)) < 0.5
    >>> P = PackedRows(Z); V = np.arange(22.0).reshape(11, 2)
    >>> np.allclose(P.matvec(V), Z @ V), np.allclose(P.rmatvec(np.ones((5, 2))), Z.T @ np.ones((5, 2)))
    (True, True)
    """

    def __init__(self, Z: np.ndarray) -> None:
        Z = np.asarray(Z, dtype=bool)
        self.m, self.d = Z.shape
        self.bits = np.packbits(Z, axis=1, bitorder="little")               # (m, ceil(d / 8))
        self.bits_t = np.ascontiguousarray(self.bits.T)
        self.nb = self.bits.shape[1]

    def _table(self, V: np.ndarray) -> np.ndarray:
        k = V.shape[1]
        padded = np.zeros((self.nb * 8, k))
        padded[: self.d] = V
        return np.ascontiguousarray(np.einsum("bi,jik->jbk", _BITS, padded.reshape(self.nb, 8, k)))

    def matvec(self, V: np.ndarray) -> np.ndarray:
        """``Z @ V`` for ``V`` of shape ``(d, k)``: ``(m, k)``."""
        k = V.shape[1]
        out = np.empty((self.m, k))
        _matvec(self.bits, self._table(np.asarray(V, dtype=float)), _span(self.nb, k), _TILE_ROWS, out)
        return out

    def normal(self, V: np.ndarray, s: np.ndarray, t: np.ndarray, w: np.ndarray,
               center: np.ndarray | None = None) -> np.ndarray:
        """``A^T W A V`` for rows ``a_j = s_j z_j - t_j 1 - center`` in one pass over the packed rows: ``(d, k)``."""
        import numba

        V = np.asarray(V, dtype=float)
        k = V.shape[1]
        shift = np.outer(t, V.sum(axis=0))
        if center is not None:
            shift += (center @ V)[None, :]
        chunks = max(1, min(numba.get_num_threads(), _ACC_CELLS // (self.nb * 256 * k), self.m))
        bounds = np.linspace(0, self.m, chunks + 1).astype(np.int64)
        acc = np.zeros((chunks, self.nb, 256, k))
        sums = np.zeros((chunks, 2, k))
        _normal(self.bits, self._table(V), s, t, w, np.ascontiguousarray(shift), bounds, _span(self.nb, k),
                min(_TILE_ROWS, self.m), acc, sums)
        out = _expand(acc.sum(axis=0))[: self.d]
        tu, total = sums.sum(axis=0)
        out -= tu[None, :]
        if center is not None:
            out -= np.outer(center, total)
        return out

    def rmatvec(self, U: np.ndarray, group: np.ndarray | None = None, n_groups: int = 1) -> np.ndarray:
        """``Z^T @ U`` for ``U`` of shape ``(m, k)``: ``(d, k)``; with ``group`` (a group per row), the product of each
        group's rows apart: ``(n_groups, d, k)``."""
        U = np.ascontiguousarray(U, dtype=float)
        if group is None:
            return self._rmatvec(self.bits_t, U)
        group = np.asarray(group, dtype=np.int64)
        k = U.shape[1]
        if n_groups * self.nb * 256 * k <= _ACC_CELLS:              # every group's histograms at once
            acc = np.zeros((n_groups, self.nb, 256, k))
            _rmatvec(self.bits_t, U, group, acc)
            return _expand(acc)[:, : self.d]
        # the rows of each group in turn (one reordering of the packed columns, one accumulator reused)
        order = np.argsort(group, kind="stable")
        bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
        bits_t, U = self.bits_t[:, order], U[order]
        out = np.zeros((n_groups, self.d, U.shape[1]))
        acc = np.empty((1, self.nb, 256, min(k, max(1, _ACC_CELLS // (self.nb * 256)))))
        for g in range(n_groups):
            lo, hi = bounds[g], bounds[g + 1]
            if hi > lo:
                out[g] = self._rmatvec(np.ascontiguousarray(bits_t[:, lo:hi]), U[lo:hi], acc)
        return out

    def _rmatvec(self, bits_t: np.ndarray, U: np.ndarray, acc: np.ndarray | None = None) -> np.ndarray:
        k = U.shape[1]
        out = np.empty((self.d, k))
        step = max(1, _ACC_CELLS // (self.nb * 256))                 # outputs per pass: bounded accumulators
        if acc is None:
            acc = np.empty((1, self.nb, 256, min(step, k)))
        zero = np.zeros(bits_t.shape[1], dtype=np.int64)
        for lo in range(0, k, step):
            part = acc[:, :, :, : min(step, k - lo)]
            part[...] = 0.0
            _rmatvec(bits_t, np.ascontiguousarray(U[:, lo:lo + step]), zero, part)
            out[:, lo:lo + step] = _expand(part[0])[: self.d]
        return out
