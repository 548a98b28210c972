"""A feature's value against its attribution over the rows, coloured by its strongest partner."""

from __future__ import annotations

from typing import Any

import numpy as np

from .common import GREY, POS, finite_rows, player_position, shown_names, numeric_column, new_axes, output_slice, plain

__all__ = ["strongest_partner", "dependence"]


def strongest_partner(expl: Any, i: int, values: np.ndarray, output: int | None = None) -> int | None:
    """The feature that interacts most with ``i``: by mean |interaction value| when the explanation has them, else
    the numeric feature that ``i``'s attribution follows most closely among rows of similar value of ``i`` (mean
    absolute correlation within bins of a tenth of the rows, as shap's ``approximate_interactions``). None when
    there is no other numeric feature. ``output``: the position of the output whose interactions count (the last
    where not given).

    Examples
    --------
    >>> import fairshare as fs
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(200, 3))
    >>> e = fs.Explanation(values=np.column_stack([X[:, 0] * X[:, 2], X[:, 1], X[:, 2]]), stderr=None,
    ...                    empty_value=np.zeros(200), data=X, player_names=list("abc"), index="shapley")
    >>> strongest_partner(e, 0, e.values)
    2
    """
    n = values.shape[1]
    inter = getattr(expl, "interactions", None)
    if inter is not None:
        M = np.abs(inter if inter.ndim == 3 else inter[..., -1 if output is None else output]).mean(axis=0)[i].copy()
        M[i] = -np.inf
        return int(np.argmax(M)) if n > 1 else None
    data = np.asarray(expl.data) if expl.data is not None else None
    own = None if data is None else numeric_column(data[:, i])
    if own is None:
        return None
    # within bins of rows of similar value of feature i, how closely the attribution follows feature j
    order = np.argsort(own, kind="stable")
    size = max(5, len(order) // 10)
    bins = [order[k:k + size] for k in range(0, len(order), size) if len(order[k:k + size]) >= 3]
    best, score = None, -1.0
    for j in range(n):
        col = None if j == i else numeric_column(data[:, j])
        if col is None:
            continue
        found = [abs(float(np.corrcoef(col[b], values[b, i])[0, 1])) for b in bins
                 if np.ptp(col[b]) > 0 and np.ptp(values[b, i]) > 0 and np.all(np.isfinite(col[b]))]
        if found and float(np.mean(found)) > score:
            best, score = j, float(np.mean(found))
    return best


def dependence(expl: Any, feature: Any = None, color: Any = "auto", output: Any = None, ax: Any = None) -> Any:
    """A feature's value against its attribution over the rows, with two-standard-error bars where the values
    have them, coloured by ``color``: ``"auto"`` (the strongest interaction partner, :func:`strongest_partner`),
    a feature, or None. No ``feature``: the one of the largest mean |value|.

    Examples
    --------
    >>> import fairshare as fs
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(100, 3))
    >>> e = fs.Explanation(values=np.column_stack([X[:, 0] * X[:, 2], X[:, 1], X[:, 2]]), stderr=None,
    ...                    empty_value=np.zeros(100), data=X, player_names=list("abc"), index="shapley")
    >>> ax = dependence(e, "a")
    >>> ax.get_xlabel(), ax.get_ylabel(), ax.collections[0].get_label()
    ('a', 'shapley value of a', 'coloured by c')
    >>> dependence(e).get_xlabel()                         # no feature: the strongest
    'b'
    """
    expl, note = finite_rows(expl, output, "dependence")
    values, stderr, label, position = output_slice(expl, output)
    i = int(np.argmax(np.abs(values).mean(axis=0))) if feature is None else player_position(expl, feature)
    if expl.data is None or np.ndim(expl.data) != 2 or np.shape(expl.data)[1] != values.shape[1]:
        raise ValueError("a dependence plot needs the explained rows' feature values (expl.data)")
    data = np.asarray(expl.data)
    x = numeric_column(data[:, i])
    if x is None:
        raise ValueError(f"feature {expl.player_names[i]!r} is not numeric; a dependence plot needs numbers on its axis")
    j = strongest_partner(expl, i, values, position) if color == "auto" else (
        None if color is None else player_position(expl, color, "color"))
    cj = None if j is None else numeric_column(data[:, j])
    ax = new_axes(ax, 4)
    if stderr is not None and np.any(stderr[:, i] > 0):
        ax.errorbar(x, values[:, i], yerr=2 * stderr[:, i], fmt="none", ecolor=GREY, alpha=0.5, lw=0.8)
    points = ax.scatter(x, values[:, i], c=cj if cj is not None else POS, cmap="coolwarm" if cj is not None else None,
                        s=14, label=f"coloured by {shown_names(expl)[j]}" if cj is not None else "")
    if cj is not None:
        ax.figure.colorbar(points, ax=ax, label=shown_names(expl)[j])
    ax.axhline(0, color=GREY, lw=0.8)
    ax.set_xlabel(shown_names(expl)[i])
    ax.set_ylabel(plain(f"{expl.index} value of {expl.player_names[i]}{label}"))
    if note:
        ax.set_title(plain(note), fontsize=8)
    return ax
