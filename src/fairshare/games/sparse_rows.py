"""Sparse (CSR) rows of coalitions: the explicand's stored entries on the known features, a background row's
elsewhere, built from the stored entries alone; and which features every background row shares with the
explicand."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sparse_hybrid_rows", "sparse_columns_equal"]


def sparse_hybrid_rows(coalitions: np.ndarray, x: Any, background: Any, player: np.ndarray | None = None) -> Any:
    """CSR rows ``(m B, features)``: for each coalition (``coalitions`` (m, players); ``player[j]``: the player of
    feature ``j``, default the identity) and background row, ``x``'s entries on the features the coalition knows
    and the background row's elsewhere; built from the stored entries alone (memory: the batch's entries, never
    coalitions x features).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> x, bg = sp.csr_matrix([[1.0, 2.0, 0.0]]), sp.csr_matrix([[0.0, 5.0, 6.0], [7.0, 0.0, 0.0]])
    >>> sparse_hybrid_rows(np.array([[True, False, False]]), x, bg).toarray()
    array([[1., 5., 6.],
           [1., 0., 0.]])
    """
    import scipy.sparse as sp

    m, nf = coalitions.shape[0], background.shape[1]
    player = np.arange(nf) if player is None else player
    B = background.shape[0]
    b_row = np.repeat(np.arange(B), np.diff(background.indptr))
    c, e = np.nonzero(~coalitions[:, player[background.indices]])   # background entries on unknown features
    rows_b, cols_b, vals_b = c * B + b_row[e], background.indices[e], background.data[e]
    c2, e2 = np.nonzero(coalitions[:, player[x.indices]])           # x's entries on known features, every b
    rows_x = (c2[:, None] * B + np.arange(B)[None, :]).ravel()
    cols_x, vals_x = np.repeat(x.indices[e2], B), np.repeat(x.data[e2], B)
    out = sp.csr_matrix((np.concatenate([vals_b, vals_x]), (np.concatenate([rows_b, rows_x]),
                                                            np.concatenate([cols_b, cols_x]))), shape=(m * B, nf))
    out.sort_indices()
    return out


def sparse_columns_equal(background: Any, x: Any) -> np.ndarray:
    """Per feature: every background row holds ``x``'s value there (stored or an implicit 0).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> sparse_columns_equal(sp.csr_matrix([[0.0, 2.0], [0.0, 3.0]]), sp.csr_matrix([[0.0, 2.0]])).tolist()
    [True, False]
    """
    xd = np.asarray(x.toarray()).ravel()
    csc = background.tocsc()
    B = background.shape[0]
    col = np.repeat(np.arange(csc.shape[1]), np.diff(csc.indptr))
    equal = np.bincount(col, weights=(csc.data == xd[col]).astype(float), minlength=csc.shape[1])
    stored = np.diff(csc.indptr)
    # a column is all x[j]: x[j] = 0 and every stored entry 0; or every row stored and equal to x[j]
    zero_ok = (xd == 0) & (equal == stored)
    nonzero_ok = (xd != 0) & (stored == B) & (equal == B)
    return zero_ok | nonzero_ok
