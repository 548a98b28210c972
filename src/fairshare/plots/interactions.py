"""Plots of pairwise interaction values: heatmap, network, dependence."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..results.html import output_position, unnamed_output
from ..results.interaction_rows import InteractionRows
from .._core.arguments import check_int
from .common import player_position, shown_names, numeric_column, new_axes, plain

__all__ = ["interaction_heatmap", "interaction_network", "interaction_dependence"]


def _pair_matrix(result: Any, output: Any) -> tuple[np.ndarray, list[str], str]:
    """The pairwise matrix to draw: an Interactions result's, or the mean |value| over an Explanation's or an
    InteractionRows' rows."""
    if getattr(result, "interactions", None) is not None:                    # an Explanation
        M = np.abs(result.interactions)
        if M.ndim == 4:
            M = M[..., output_position(result, output)]
        return M.mean(axis=0), shown_names(result), "mean |interaction value| over the rows"
    if isinstance(result, InteractionRows):                                 # many rows: the mean |matrix|
        j = unnamed_output(result._outputs()[0] if result._outputs() else None, output)
        M = np.mean([np.abs(row.matrix()) for row in result], axis=0)
        if j is not None:
            M = M[..., j]
        return M, shown_names(result), f"mean |{result.index}| over the rows"
    if hasattr(result, "matrix"):
        j = result._output(output)
        M = result.matrix()
        if j is not None:
            M = M[..., j]
        return M, shown_names(result), plain(f"{result.index} (order {result.order})")
    raise TypeError("expected an Interactions result or an Explanation computed with interactions=2")


def _strongest(M: np.ndarray, max_display: int) -> np.ndarray:
    strength = np.nansum(np.where(np.isfinite(M), np.abs(M), np.nan), axis=1)      # what is finite ranks
    return np.sort(np.argsort(-strength, kind="stable")[:max_display])


def _unknown(M: np.ndarray, names: list[str], plot: str) -> tuple[np.ndarray, str]:
    """Where the drawn matrix is not finite (NaN: not estimated, or infinite), warned naming the players whose
    cells it is, and a note saying they are left out (``""`` when every cell is finite)."""
    bad = ~np.isfinite(M)
    if not bad.any():
        return bad, ""
    players = [names[i] for i in np.flatnonzero(bad.any(axis=1))]
    note = f"cells of {players} not finite: left out"
    warnings.warn(f"interaction {plot} plot: {note}", UserWarning, stacklevel=3)
    return bad, note


def interaction_heatmap(result: Any, max_display: int = 15, output: Any = None, ax: Any = None) -> Any:
    """The pairwise interaction matrix as a heatmap (main effects on the diagonal), for the ``max_display``
    features with the most interaction.

    Examples
    --------
    >>> import fairshare as fs
    >>> res = fs.interactions(fs.games.SOUMGame([[True, True, False]], [1.0]), "sii", method="exact")
    >>> interaction_heatmap(res).get_title()
    'sii (order 2)'
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    M, names, title = _pair_matrix(result, output)
    keep = _strongest(M, max_display)
    M = M[np.ix_(keep, keep)]
    bad, note = _unknown(M, [names[i] for i in keep], "heatmap")
    M = np.where(bad, np.nan, M)                                           # drawn blank
    ax = new_axes(ax, 0.4 * keep.size + 2)
    bound = float(np.abs(M[~bad]).max(initial=0.0)) or 1.0
    image = ax.imshow(M, cmap="RdBu_r", vmin=-bound, vmax=bound)
    ax.set_xticks(range(keep.size), [names[i] for i in keep], rotation=90)
    ax.set_yticks(range(keep.size), [names[i] for i in keep])
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title + (f"\n{plain(note)}" if note else ""))
    return ax


def interaction_network(result: Any, max_display: int = 12, output: Any = None, ax: Any = None) -> Any:
    """Features on a circle, node size by main effect, edges by pairwise interaction (width: size; red positive,
    blue negative), as shapiq's network plot.

    Examples
    --------
    >>> import fairshare as fs
    >>> res = fs.interactions(fs.games.SOUMGame([[True, True, False]], [1.0]), "sii", method="exact")
    >>> len(interaction_network(res).lines)       # one edge
    1
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    M, names, title = _pair_matrix(result, output)
    keep = _strongest(M, max_display)
    M = M[np.ix_(keep, keep)]
    bad, note = _unknown(M, [names[i] for i in keep], "network")
    M = np.where(bad, 0.0, M)                          # no edge, and the smallest node, where a value is not known
    ax = new_axes(ax, 6)
    angle = 2 * np.pi * np.arange(keep.size) / max(keep.size, 1)
    x, y = np.cos(angle), np.sin(angle)
    off = M - np.diag(np.diag(M))
    scale = float(np.abs(off).max()) or 1.0
    for a, b in zip(*np.triu_indices(keep.size, 1)):
        if off[a, b] == 0:
            continue
        ax.plot([x[a], x[b]], [y[a], y[b]], color="#d62728" if off[a, b] > 0 else "#1f77b4",
                lw=0.5 + 6 * abs(off[a, b]) / scale, alpha=0.7, zorder=1)
    main = np.diag(M)
    size = 100 + 1500 * np.abs(main) / (float(np.abs(main).max()) or 1.0)
    ax.scatter(x, y, s=size, c=np.where(main >= 0, "#d62728", "#1f77b4"), zorder=2, edgecolors="white")
    for i, k in enumerate(keep):
        ax.annotate(names[k], (1.18 * x[i], 1.18 * y[i]), ha="center", va="center")
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.5, 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title + (f"\n{plain(note)}" if note else ""))
    return ax


def interaction_dependence(expl: Any, feature: Any, other: Any, output: Any = None, ax: Any = None) -> Any:
    """The pair's interaction value against ``feature``'s value, coloured by ``other``'s value, over the rows of an
    Explanation computed with ``interactions=2``.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.random.default_rng(0).random((100, 3)); model = DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0] * X[:, 1])
    >>> e = fs.explain(model, X[:20], interactions=2, progress=False)
    >>> interaction_dependence(e, 0, 1).get_ylabel()
    'interaction x0 x x1'
    """
    if getattr(expl, "interactions", None) is None:
        raise ValueError("expl has no interaction values: explain(..., interactions=2) computes them")
    i, j = player_position(expl, feature), player_position(expl, other, "other")
    names = shown_names(expl)
    M = expl.interactions
    if M.ndim == 4:
        M = M[..., output_position(expl, output)]
    data = np.asarray(expl.data)
    xi, xj = numeric_column(data[:, i]), numeric_column(data[:, j])
    if xi is None:
        raise ValueError(f"feature {names[i]!r} is not numeric; a dependence plot needs numbers on its axis")
    ax = new_axes(ax, 4)
    points = ax.scatter(xi, M[:, i, j], c=xj if xj is not None else None, cmap="coolwarm", s=14)
    if xj is not None:
        ax.figure.colorbar(points, ax=ax, label=names[j])
    ax.set_xlabel(names[i])
    ax.set_ylabel(f"interaction {names[i]} x {names[j]}")
    return ax
