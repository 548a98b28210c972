"""Rows of a scipy sparse matrix: the model is called on sparse rows built from the stored entries alone (memory:
a batch's entries, never its cells); a conditional imputation, which models dense features, is refused."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.tables import is_sparse
from .table import TableInput, imputation_key

__all__ = ["SparseInput"]

#: most cells of the rows shown densified in a result's ``data``
MAX_DENSE_CELLS = 10_000_000


class SparseInput(TableInput):
    """Sparse rows explained as :class:`~.table.TableInput` explains rows.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> SparseInput.accepts(None, sp.eye(3, format="csr"), None)
    True
    """

    kind = "sparse"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return is_sparse(X)

    def check_conditional(self, imputation: Any) -> None:
        raise ValueError(f"imputation={imputation_key(imputation)!r} models dense numeric features; sparse "
                         "rows are imputed from the background rows (imputation='marginal' or 'baseline')")

    def data(self) -> np.ndarray | None:
        """The rows densified for plots, up to :data:`MAX_DENSE_CELLS` cells."""
        if self.groups is not None or self.rows.shape[0] * self.rows.shape[1] > MAX_DENSE_CELLS:
            return None
        return self.rows.toarray()
