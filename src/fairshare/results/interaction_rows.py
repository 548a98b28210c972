"""Interaction values of many rows (what :func:`fairshare.games.tree_interactions` returns): one array for all rows,
and the :class:`~fairshare.Interactions` of each row by position."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..indices.interactions import subsets_up_to
from .base import Result
from .interactions import Interactions

__all__ = ["InteractionRows"]


@dataclass(eq=False, kw_only=True)
class InteractionRows(Result):
    """Interaction values of many explained rows, in one of two layouts.

    Attributes
    ----------
    values : ndarray
        ``(rows, n, n[, k])`` with ``subsets=None``: shap's ``shap_interaction_values`` matrices (index
        ``"sii-matrix"``: half of each pair's SII in both off-diagonal cells, the rest of each Shapley value on the
        diagonal, each row summing to the Shapley values; ``"bii-matrix"`` the same with BII and Banzhaf values);
        or ``(rows, p[, k])``: one value per row and subset of ``subsets``.
    stderr : like ``values``, or None
    subsets : int ndarray (p, order), or None for the matrices
        The players of each subset, padded with -1 (as :class:`~fairshare.Interactions`).
    order : int
    empty_value, grand_value : ``(rows,)`` or ``(rows, k)``
    n_evaluations : per row
    data, row_names : the rows as the model read them, and their labels
    index, method, options, info, player_names, base_values, feature_names
        As in :class:`~fairshare.results.base.Result`.

    ``rows[r]`` (and iterating) gives row ``r`` as an :class:`~fairshare.Interactions` (the matrices as index
    ``"sii-matrix"`` / ``"bii-matrix"``, whose ``matrix()`` is the row's matrix); ``np.asarray(rows)`` is
    ``rows.values``.

    Examples
    --------
    >>> M = np.array([[[0.5, 1.0], [1.0, 0.5]]])
    >>> rows = InteractionRows(values=M, stderr=None, index="sii-matrix", method="exact", empty_value=0.0)
    >>> len(rows), rows.base_values, rows[0].get((0, 1))
    (1, array([0.]), 1.0)
    >>> bool(np.array_equal(rows[0].matrix(), M[0]))
    True
    """

    subsets: np.ndarray | None = None
    order: int = 2
    data: np.ndarray | None = None
    row_names: list[str] | None = None

    _required: ClassVar[tuple[str, ...]] = ("index", "method")
    _plot_family: ClassVar[str] = "interactions"
    _default_plot: ClassVar[str | None] = "heatmap"

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=float)
        if self.subsets is not None:
            self.subsets = np.asarray(self.subsets, dtype=np.int64)
            if self.values.ndim not in (2, 3) or self.values.shape[1] != self.subsets.shape[0]:
                raise ValueError(f"values must be (rows, subsets[, outputs]) with one column per subset "
                                 f"({self.subsets.shape[0]}), got {self.values.shape}")
        elif self.values.ndim not in (3, 4) or self.values.shape[1] != self.values.shape[2]:
            raise ValueError(f"values must be (rows, n, n[, outputs]) matrices (no subsets), got {self.values.shape}")
        super().__post_init__()
        rows, outputs = len(self), self._outputs()
        self.empty_value = np.broadcast_to(np.asarray(self.empty_value if self.empty_value is not None else np.nan,
                                                      dtype=float), (rows,) + outputs).copy()
        if self.grand_value is not None:
            self.grand_value = np.asarray(self.grand_value, dtype=float)
        self.row_names = [str(r) for r in (self.row_names if self.row_names is not None else range(rows))]
        if len(self.row_names) != rows:
            raise ValueError(f"row_names must have {rows} names, got {len(self.row_names)}")
        self.n_evaluations = np.broadcast_to(np.asarray(self.n_evaluations), (rows,)).copy()

    def _outputs(self) -> tuple[int, ...]:
        return self.values.shape[2:] if self.subsets is not None else self.values.shape[3:]

    def _count_players(self) -> int | None:
        if self.subsets is None:
            return int(self.values.shape[1])
        return None if len(self.player_names or []) else int(self.subsets.max(initial=-1)) + 1

    def _no_evaluations(self) -> np.ndarray:
        return np.zeros(self.values.shape[0], dtype=np.int64)

    # ------------------------------------------------------------------------------------- rows
    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def __getitem__(self, row: int) -> Interactions:
        """Row ``row`` as an :class:`~fairshare.Interactions` (its values, subsets, base and model output)."""
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
            raise TypeError(f"rows are taken by position (an int), got {type(row).__name__}; .values holds the array")
        r = range(len(self))[row]
        if self.subsets is not None:
            subsets, order = self.subsets, self.order
            values, stderr = self.values[r], None if self.stderr is None else self.stderr[r]
        else:
            n = self.values.shape[1]
            subsets, order = subsets_up_to(n, 2, 1), 2
            i, j = subsets[:, 0], np.where(subsets[:, 1] >= 0, subsets[:, 1], subsets[:, 0])   # (a, a), (a, b)
            values = self.values[r][i, j]
            stderr = None if self.stderr is None else self.stderr[r][i, j]
        one = lambda a: None if a is None else (float(a[r]) if np.ndim(a[r]) == 0 else a[r])   # noqa: E731
        return Interactions(values=values, stderr=stderr, subsets=subsets, index=self.index, order=order,
                            method=self.method, options=dict(self.options), info=dict(self.info),
                            n_evaluations=int(self.n_evaluations[r]), empty_value=one(self.empty_value),
                            grand_value=one(self.grand_value), player_names=list(self.player_names))

    def __iter__(self) -> Iterator[Interactions]:
        return (self[r] for r in range(len(self)))

    def __repr__(self) -> str:
        layout = "matrices" if self.subsets is None else f"order={self.order}, subsets={self.subsets.shape[0]}"
        return (f"InteractionRows(index={self.index!r}, method={self.method!r}, rows={len(self)}, "
                f"players={self.n_players}, {layout})")
