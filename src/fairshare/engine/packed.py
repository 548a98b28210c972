"""Coalition rows packed eight to a byte, and products with them at a byte a step (compiled).

``Z v`` for a boolean ``(m, d)`` matrix costs ``m d`` multiply-adds done naively; with the rows packed
(bit ``i`` of byte ``j`` is player ``8 j + i``) and, per product, a table ``T[j, b] = sum of v over the
players whose bits are set in byte value b at position j`` (``d / 8 * 256`` entries, built in ``O(32 d)``),
a row's product is ``d / 8`` table lookups: eight times fewer operations, and the coalition matrix
in an eighth of the memory. ``Z^T u`` scatters ``u`` into per-position byte histograms and reads each
player's sum off its position's histogram (the eight bit marginals of 256 cells, by halving). These are
the ``O(m n)`` products of the iterative least-squares solver (:mod:`fairshare.engine.iterative`).

The bytes are stored position-major (``(d / 8, m)``), so that both products stream them: ``Z v`` takes
rows a tile at a time (the tile's partial sums stay in cache while four positions' tables are read
from L1), ``Z^T u`` takes eight positions per task (their histograms stay in cache while the rows of
``u`` stream past once for the eight).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._core.compiled import CACHE, threads_for

__all__ = ["PackedRows"]

_LOW_BIT = np.array([0] + [(b & -b).bit_length() - 1 for b in range(1, 256)], dtype=np.int64)
_TILE_ROWS = 8192               # rows whose partial sums Z v keeps in cache while it sweeps the positions
_STEP = 8                       # byte positions Z^T u takes per task (their histograms stay in cache)


@njit(cache=CACHE, nogil=True, parallel=True)
def _pack(Z: np.ndarray, out: np.ndarray, sizes: np.ndarray) -> None:  # pragma: no cover
    """``out[j, r]`` = byte ``j`` of row ``r`` (bit ``i`` = player ``8 j + i``); ``sizes[r]``: the row's members."""
    m, d = Z.shape
    nb = out.shape[0]
    for r in prange(m):
        count = 0
        for j in range(nb):
            byte = 0
            for i in range(min(8, d - 8 * j)):
                if Z[r, 8 * j + i]:
                    byte |= 1 << i
                    count += 1
            out[j, r] = byte
        sizes[r] = count


@njit(cache=CACHE, nogil=True, parallel=True)
def _gather(bits_t: np.ndarray, order: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """``out[:, i] = bits_t[:, order[i]]`` (rows reordered)."""
    for j in prange(bits_t.shape[0]):
        for i in range(order.shape[0]):
            out[j, i] = bits_t[j, order[i]]


@njit(cache=CACHE, nogil=True, parallel=True)
def _table(V: np.ndarray, low_bit: np.ndarray, table: np.ndarray) -> None:  # pragma: no cover
    """``table[j, b] = sum of V[8 j + i]`` over the bits ``i`` set in ``b``: each entry one add past ``b & (b - 1)``."""
    nb, _, k = table.shape
    d = V.shape[0]
    for j in prange(nb):
        for q in range(k):
            table[j, 0, q] = 0.0
        for b in range(1, 256):
            i = 8 * j + low_bit[b]
            p = b & (b - 1)
            for q in range(k):
                table[j, b, q] = table[j, p, q] + (V[i, q] if i < d else 0.0)


@njit(cache=CACHE, nogil=True, parallel=True)
def _matvec(bits_t: np.ndarray, table: np.ndarray, bounds: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """``out[r] = sum_j table[j, bits_t[j, r]]``, a tile of rows per task, four positions a step."""
    nb = bits_t.shape[0]
    k = table.shape[2]
    for c in prange(bounds.shape[0] - 1):
        r0, r1 = bounds[c], bounds[c + 1]
        out[r0:r1] = 0.0
        j = 0
        while j + 4 <= nb:
            for r in range(r0, r1):
                b0, b1, b2, b3 = bits_t[j, r], bits_t[j + 1, r], bits_t[j + 2, r], bits_t[j + 3, r]
                for q in range(k):
                    out[r, q] += (table[j, b0, q] + table[j + 1, b1, q]) + (table[j + 2, b2, q] + table[j + 3, b3, q])
            j += 4
        while j < nb:
            for r in range(r0, r1):
                b0 = bits_t[j, r]
                for q in range(k):
                    out[r, q] += table[j, b0, q]
            j += 1


@njit(cache=CACHE, nogil=True, inline="always")
def _marginals(acc: np.ndarray, out: np.ndarray, base: int) -> None:  # pragma: no cover
    """``out[base + i] = sum of acc[b]`` over the byte values ``b`` with bit ``i`` set (``acc`` is consumed): the
    top bit's cells are summed, then folded onto the rest, and so on down (510 adds for 256 cells, not 1024)."""
    k = acc.shape[1]
    half = 128
    for i in range(7, -1, -1):
        for q in range(k):
            out[base + i, q] = 0.0
        for b in range(half):
            for q in range(k):
                out[base + i, q] += acc[b + half, q]
                acc[b, q] += acc[b + half, q]
        half //= 2


@njit(cache=CACHE, nogil=True, parallel=True)
def _rmatvec(bits_t: np.ndarray, U: np.ndarray, bounds: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """``out[g, 8 j + i] = sum of U[r]`` over the rows ``r`` of group ``g`` (``bounds[g] <= r < bounds[g + 1]``)
    with bit ``i`` of byte ``j`` set; eight positions per task, each row of ``U`` read once for the eight."""
    nb = bits_t.shape[0]
    k = U.shape[1]
    n_groups = bounds.shape[0] - 1
    for jq in prange((nb + _STEP - 1) // _STEP):
        j0 = _STEP * jq
        j1 = min(j0 + _STEP, nb)
        acc = np.empty((_STEP, 256, k))
        for g in range(n_groups):
            acc[:] = 0.0
            if j1 - j0 == _STEP:
                for r in range(bounds[g], bounds[g + 1]):
                    b0, b1, b2, b3 = bits_t[j0, r], bits_t[j0 + 1, r], bits_t[j0 + 2, r], bits_t[j0 + 3, r]
                    b4, b5, b6, b7 = bits_t[j0 + 4, r], bits_t[j0 + 5, r], bits_t[j0 + 6, r], bits_t[j0 + 7, r]
                    for q in range(k):
                        u = U[r, q]
                        acc[0, b0, q] += u
                        acc[1, b1, q] += u
                        acc[2, b2, q] += u
                        acc[3, b3, q] += u
                        acc[4, b4, q] += u
                        acc[5, b5, q] += u
                        acc[6, b6, q] += u
                        acc[7, b7, q] += u
            else:
                for j in range(j0, j1):
                    for r in range(bounds[g], bounds[g + 1]):
                        b0 = bits_t[j, r]
                        for q in range(k):
                            acc[j - j0, b0, q] += U[r, q]
            for j in range(j0, j1):
                _marginals(acc[j - j0], out[g], 8 * j)


def _tiles(m: int) -> np.ndarray:
    """Row tiles of about ``_TILE_ROWS``, as many per thread."""
    import numba

    threads = numba.get_num_threads()
    n = threads * max(1, -(-m // (threads * _TILE_ROWS)))
    return np.linspace(0, m, min(n, max(m, 1)) + 1).astype(np.int64)


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
        Z = np.asarray(Z, dtype=bool)                     # a strided view (every other row) is read as it is
        self.m, self.d = Z.shape
        self.nb = -(-self.d // 8)
        self.bits_t = np.empty((self.nb, self.m), dtype=np.uint8)         # byte j of row r at [j, r]
        self.sizes = np.empty(self.m)                                       # members of each row
        with threads_for(self.m * self.d):
            _pack(Z, self.bits_t, self.sizes)
        self._tile_bounds = _tiles(self.m)

    def _table(self, V: np.ndarray) -> np.ndarray:
        table = np.empty((self.nb, 256, V.shape[1]))
        with threads_for(table.size):
            _table(np.ascontiguousarray(V, dtype=float), _LOW_BIT, table)
        return table

    def matvec(self, V: np.ndarray) -> np.ndarray:
        """``Z @ V`` for ``V`` of shape ``(d, k)``: ``(m, k)``."""
        out = np.empty((self.m, V.shape[1]))
        table = self._table(V)
        with threads_for(out.size * self.nb):
            _matvec(self.bits_t, table, self._tile_bounds, out)
        return out

    def rmatvec(self, U: np.ndarray, group: np.ndarray | None = None, n_groups: int = 1) -> np.ndarray:
        """``Z^T @ U`` for ``U`` of shape ``(m, k)``: ``(d, k)``; with ``group`` (a group per row), the product of each
        group's rows apart: ``(n_groups, d, k)``."""
        U = np.ascontiguousarray(U, dtype=float)
        if group is None:
            out = np.empty((1, self.nb * 8, U.shape[1]))
            with threads_for(U.size * self.nb):
                _rmatvec(self.bits_t, U, np.array([0, self.m], dtype=np.int64), out)
            return out[0, : self.d]
        group = np.asarray(group, dtype=np.int64)
        order = np.argsort(group, kind="stable")                            # each group's rows together
        bounds = np.searchsorted(group[order], np.arange(n_groups + 1)).astype(np.int64)
        bits_t = np.empty_like(self.bits_t)
        with threads_for(bits_t.size):
            _gather(self.bits_t, order, bits_t)
        out = np.empty((n_groups, self.nb * 8, U.shape[1]))
        with threads_for(U.size * self.nb + out.size * 64):
            _rmatvec(bits_t, np.ascontiguousarray(U[order]), bounds, out)
        return out[:, : self.d]
