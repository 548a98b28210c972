"""Data values plotted: each training point's value with two standard errors, sorted, flagged points in red."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results.data_values import flag_mask
from .common import new_axes, plain

__all__ = ["data_values"]


def data_values(dv: Any, flag: Any = None, ax: Any = None, flag_label: str = "flagged") -> Any:
    """Values with two-standard-error bars, sorted; points where ``flag`` is true in red, with the detection AUC
    in the title.

    Examples
    --------
    >>> import fairshare as fs
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]]); y = np.array([0, 0, 1, 0])
    >>> dv = fs.value_data(KNeighborsClassifier(1), X, y, np.array([[1.09]]), np.array([1]), index="shapley")
    >>> data_values(dv, flag=[False, False, False, True]).get_xlabel()
    'training points, by value'
    """
    ax = new_axes(ax, 4.0)
    order = np.argsort(dv.values, kind="stable")
    x = np.arange(order.size)
    f = np.zeros(order.size, dtype=bool) if flag is None else flag_mask(flag, order.size)
    err = None if dv.stderr is None else 2 * dv.stderr[order]
    for mask, colour, label in ((~f[order], "#1f77b4", "other points"), (f[order], "#d62728", flag_label)):
        if mask.any():
            ax.errorbar(x[mask], dv.values[order][mask], yerr=None if err is None else err[mask], fmt="o",
                        ms=2.5, lw=0.6, color=colour, label=plain(label))
    ax.axhline(0.0, color="#7f7f7f", lw=0.6)
    ax.set_xlabel("training points, by value")
    ax.set_ylabel(plain(f"{dv.index} value (+-2 stderr)"))
    title = f"data values: {dv.method}, {dv.n_fits + dv.reused_fits} fits"
    if flag is not None and 0 < f.sum() < f.size:
        auc = "n/a (NaN values)" if np.isnan(dv.values).any() else f"{dv.detection_auc(f):.3f}"
        title += f"; AUC of finding '{flag_label}' from the lowest: {auc}"
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(plain(title), fontsize=9)
    return ax
