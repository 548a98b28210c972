"""Data values: what each training point is worth to a model (:class:`DataValues`), and how well they find
flagged points (:func:`detection_auc`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from .._core.arguments import check_int
from .attribution import Attribution
from .base import Result

__all__ = ["DataValues", "detection_auc", "flag_mask"]


def flag_mask(flag: Any, n: int) -> np.ndarray:
    """``flag`` as a mask of ``n`` booleans: booleans, or 0 and 1, one per point; positions (other integers) or
    another length are refused naming ``flag``.

    Examples
    --------
    >>> flag_mask([0, 1, 1], 3).tolist()
    [False, True, True]
    >>> flag_mask([0, 2, 1], 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: flag must be one boolean (or 0/1) per point, got the values [2]: for positions, pass np.isin(...)
    """
    a = np.asarray(flag).ravel()
    if a.dtype != bool:
        if a.dtype.kind not in "iuf" or not np.isin(a, (0, 1)).all():
            other = np.unique(a[~np.isin(a, (0, 1))])[:5].tolist() if a.dtype.kind in "iuf" else a[:5].tolist()
            raise ValueError(f"flag must be one boolean (or 0/1) per point, got the values {other}: for positions, "
                             f"pass np.isin(np.arange({n}), positions)")
        a = a.astype(bool)
    if a.size != n:
        raise ValueError(f"flag must have one entry per value ({n}), got {a.size}")
    return a


def detection_auc(values: Any, flag: Any) -> float:
    """Area under the ROC curve of finding the flagged points by ranking values from the lowest up
    (ties share their rank): 1 when every flagged point is valued below every other one, 0.5 at random. ``flag`` is
    a mask (:func:`flag_mask`); NaN values are refused (they have no rank).

    Examples
    --------
    >>> detection_auc([-1.0, 0.5, 0.2, 0.9], [True, False, False, False])
    1.0
    """
    v = np.asarray(values, dtype=float).ravel()
    f = flag_mask(flag, v.size)
    if np.isnan(v).any():
        raise ValueError(f"values: the points {np.flatnonzero(np.isnan(v))[:10].tolist()} have NaN values, which have "
                         "no rank: the AUC has no value")
    n_pos, n_neg = int(f.sum()), int((~f).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("flag must mark some points and leave others unmarked")
    from scipy.stats import rankdata

    ranks = rankdata(-v)                      # the lowest value gets the highest rank
    return float((ranks[f].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(eq=False, kw_only=True)
class DataValues(Attribution):
    """Values of training points (an :class:`~fairshare.Attribution`, so a
    :class:`~fairshare.results.base.Result`, with the facts of the fits).

    Attributes (beyond Attribution's)
    ---------------------------------
    n_fits : model fits run (cached ones not counted)
    reused_fits : fits answered from the cache
    degenerate : coalitions given the constant predictor's score, by cause
    seconds : wall time

    Examples
    --------
    >>> import fairshare as fs
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]]); y = np.array([0, 0, 1, 0])
    >>> dv = fs.value_data(KNeighborsClassifier(1), X, y, np.array([[1.09]]), np.array([1]), index="shapley")
    >>> dv.values.tolist()                       # the mislabelled point at 1.1 hurts, its neighbour at 1.0 helps
    [0.0, 0.0, 0.5, -0.5]
    """

    n_fits: int = 0
    reused_fits: int = 0
    degenerate: dict = field(default_factory=dict)
    seconds: float = 0.0

    _plot_family: ClassVar[str] = "data values"
    _default_plot: ClassVar[str | None] = "values"

    @classmethod
    def from_attribution(cls, phi: Attribution, **facts: Any) -> DataValues:
        """The data values of an :class:`~fairshare.Attribution` of a data game: its fields, with ``facts`` of the
        fits (``n_fits``, ``reused_fits``, ``degenerate``, ``seconds``) or any field replaced.

        Examples
        --------
        >>> import fairshare as fs
        >>> phi = fs.exact(fs.games.AdditiveGame([1.0, -1.0]), "shapley")
        >>> dv = DataValues.from_attribution(phi, n_fits=4)
        >>> dv.values.tolist(), dv.n_fits, dv.method
        ([1.0, -1.0], 4, 'exact')
        """
        shared = {f.name: getattr(phi, f.name) for f in fields(Attribution) if f.init}
        return cls(**{**shared, **facts})

    def lowest(self, k: int) -> np.ndarray:
        """Positions of the ``k`` lowest-valued points, lowest first (candidates for label errors)."""
        k = check_int(k, "k", minimum=0)
        return np.argsort(self.values, kind="stable")[:k]

    def detection_auc(self, flag: Any) -> float:
        """:func:`detection_auc` of these values for ``flag`` (e.g. "the label was flipped")."""
        return detection_auc(self.values, flag)

    def plot(self, flag: Any = None, ax: Any = None, flag_label: str = "flagged") -> Any:
        """Values with two-standard-error bars, sorted; points where ``flag`` is true in red, with the detection AUC
        in the title (:func:`fairshare.plots.data_values`). A string is the plot's kind, as for every result
        (``"values"``, the only one), not a flag.

        Examples
        --------
        >>> dv = DataValues(values=np.array([0.3, -0.1, 0.2]), stderr=np.full(3, 0.05), index="banzhaf",
        ...                 method="exact", player_names=["a", "b", "c"])
        >>> dv.plot("values").get_ylabel() == dv.plot([0, 1, 0]).get_ylabel()
        True
        """
        kind = "values"
        if isinstance(flag, str):                     # dv.plot("values"): a kind, as Result.plot takes it
            kind, flag = flag, None
        return Result.plot(self, kind, flag=flag, ax=ax, flag_label=flag_label)

    def _plotted(self) -> DataValues:
        return self                                   # drawn as data values, not as a row of an Explanation
