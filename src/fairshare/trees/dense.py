"""Sparse rows made dense for the tree walks, an absent entry read as missing (NaN) or as zero."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["dense_from_sparse", "DENSE_LIMIT"]

DENSE_LIMIT = 1 << 30          # cells: refuse to densify a sparse input larger than 8 GB of float64


def dense_from_sparse(X: Any, absent_missing: bool, name: str) -> np.ndarray:
    """The rows of a scipy.sparse matrix ``X`` as a dense float array, absent entries NaN when ``absent_missing``
    (a library that stores only present values) and 0 otherwise; ``name`` names the argument in errors.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> dense_from_sparse(sp.csr_matrix([[0.0, 2.0]]), True, "X")
    array([[nan,  2.]])
    """
    m, n = X.shape
    if m * n > DENSE_LIMIT:
        raise ValueError(f"{name} is a sparse {m} x {n} matrix; explain it in slices of rows (at most "
                         f"{DENSE_LIMIT // max(n, 1)} rows at a time)")
    csr = X.tocsr()
    out = np.full((m, n), np.nan if absent_missing else 0.0)
    rows = np.repeat(np.arange(m), np.diff(csr.indptr))
    out[rows, csr.indices] = csr.data
    return out
