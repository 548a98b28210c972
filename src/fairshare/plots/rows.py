"""Plots of many rows' values: bar (mean |value|), waterfall (one row), beeswarm, heatmap, decision."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results.report.payload import summary
from .._core.arguments import check_int
from .common import (GREY, NEG, POS, check_row, error_text, feature_label, finite_players, finite_rows, shown_names,
                     numeric_column, new_axes, output_slice, plain, plt_colors, top_and_rest, with_others)

__all__ = ["bar", "waterfall", "beeswarm", "heatmap", "decision"]


def bar(expl: Any, max_display: int = 10, output: Any = None, ax: Any = None) -> Any:
    """Mean |value| per player over rows, largest first, with two-standard-error bars (the error of
    the mean over rows combined with the estimation error of each value); the players beyond ``max_display``
    summed in one bar, ``N other players``. One row (an Attribution's values: SAGE's, a game's) is drawn with its
    signs, as shap draws one row, largest |value| first: a feature that adds loss keeps its negative value. An error
    that is not finite (a budget too small for it, or none known) is written by its bar, ``± inf`` or ``± n/a``.

    Examples
    --------
    >>> import fairshare as fs, numpy as np
    >>> e = fs.Explanation(values=np.random.default_rng(0).normal(size=(20, 4)), stderr=None,
    ...                    empty_value=np.zeros(20), data=None, player_names=list("abcd"), index="shapley")
    >>> ax = bar(e)
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    expl, note = (expl, "") if len(expl) == 1 else finite_rows(expl, output, "bar")
    values, stderr, label, _ = output_slice(expl, output)
    one = values.shape[0] == 1                                        # one row: its signed values
    keep, left = finite_players(expl, values[0], "bar") if one else (np.arange(values.shape[1]), note)
    values, stderr = values[:, keep], None if stderr is None else stderr[:, keep]
    mean_abs, err = summary(values, stderr)
    shown = values[0] if one else mean_abs
    names = [shown_names(expl)[i] for i in keep]
    labels, heights, errs = with_others(names, shown, err, *top_and_rest(mean_abs, max_display))
    ax = new_axes(ax, 0.4 * len(labels) + 1.2)
    positions = np.arange(len(labels))[::-1]                               # largest on top, the others last
    known = np.isfinite(errs)
    ax.barh(positions, heights, xerr=np.where(known, errs, 0.0), color=np.where(heights < 0, NEG, POS), ecolor=GREY,
            capsize=3)
    for pos, h, e in zip(positions[~known], heights[~known], errs[~known]):     # no bar can show it: written
        ax.annotate(error_text(e / 2).strip(), (h, pos), xytext=(4 if h >= 0 else -4, 0), textcoords="offset points",
                    ha="left" if h >= 0 else "right", va="center", fontsize=8, color=GREY)
    if one:
        ax.axvline(0.0, color=GREY, lw=0.6)
    ax.set_yticks(positions, labels)
    ax.set_xlabel(plain(f"{expl.index} value{label}" if one else f"mean |{expl.index} value|{label}"))
    ax.set_title(("1 row" if one else f"{len(expl)} rows") + (f"; {plain(left)}" if left else ""))
    ax.figure.tight_layout()
    return ax


def waterfall(expl: Any, row: int = 0, max_display: int = 10, output: Any = None, ax: Any = None) -> Any:
    """One row: from the base value to the prediction, one bar per player (largest |value| first, the
    rest summed), with two-standard-error bars.

    Examples
    --------
    >>> import fairshare as fs, numpy as np
    >>> e = fs.Explanation(values=[[1.0, -0.5, 0.2]], stderr=[[0.1, 0.1, 0.05]], empty_value=[2.0],
    ...                    data=None, player_names=list("abc"), index="shapley")
    >>> ax = waterfall(e)
    >>> a = fs.Attribution(values=np.array([1.0, 2.0]), stderr=np.array([0.1, np.inf]), index="shapley",
    ...                    method="given", player_names=["a", "b"])    # no empty value; an infinite error bar
    >>> waterfall(a.to_explanation()).get_xlabel()
    "the values' sum 3 (the empty coalition's value is not known)"
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    row = check_row(expl, row)
    values, stderr, label, j = output_slice(expl, output)
    keep, left = finite_players(expl, values[row], "waterfall")       # NaN values: drawn without them, named
    v = values[row][keep]
    se = stderr[row][keep] if stderr is not None else np.zeros_like(v)
    base = np.asarray(expl.empty_value[row], dtype=float).reshape(-1)
    base = float(base[j] if j is not None and base.size > 1 else base[0])
    known = bool(np.isfinite(base))                    # an estimate's empty value may be unknown: start at 0
    base = base if known else 0.0
    names = [feature_label(expl, row, i) for i in keep]
    labels, contrib, errs = with_others(names, v, se, *top_and_rest(np.abs(v), max_display))
    ax = new_axes(ax, 0.4 * len(labels) + 1.5)
    positions = np.arange(len(labels))[::-1]
    running = base
    for pos, c, e in zip(positions, contrib, errs):
        ax.barh(pos, c, left=running, color=POS if c >= 0 else NEG)
        drawn = e if np.isfinite(e) else 0.0           # an infinite error bar (a budget too small) is written only
        ax.errorbar(running + c, pos, xerr=2 * drawn, color=GREY, capsize=3, fmt="none")
        text = f"{c:+.3g}" + error_text(e)
        ax.annotate(text, (max(running, running + c) + 2 * drawn, pos), xytext=(4, 0), textcoords="offset points",
                    va="center", ha="left", fontsize=8, color="#333333")
        running += c
    ax.set_yticks(positions, labels)
    ax.axvline(base, color=GREY, lw=0.8, ls="--")
    ax.axvline(running, color="black", lw=0.8)
    bars = 2 * np.where(np.isfinite(errs), errs, 0.0)
    ends = np.concatenate([[base, running], base + np.cumsum(contrib), base + np.cumsum(contrib) + bars])
    pad = 0.05 * (ends.max() - ends.min() or 1.0)
    ax.set_xlim(ends.min() - pad, ends.max() + 6 * pad)                  # room for the numbers on the right
    ax.set_xlabel(plain(f"base value {base:.3g} -> {running:.3g}{label}" if known else
                        f"the values' sum {running:.3g}{label} (the empty coalition's value is not known)"))
    ax.set_title(plain(f"row {expl.row_names[row]}: {expl.index} values" + (f"; {left}" if left else "")))
    ax.figure.tight_layout()
    return ax


def beeswarm(expl: Any, max_display: int = 10, output: Any = None, ax: Any = None) -> Any:
    """Every row's value for the most important players, colored by the feature's value (when the
    players are features); the players beyond ``max_display`` summed row by row in one grey line,
    ``N other players``.

    Examples
    --------
    >>> import fairshare as fs, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> e = fs.Explanation(values=rng.normal(size=(50, 3)), stderr=None, empty_value=np.zeros(50),
    ...                    data=rng.random((50, 3)), player_names=list("abc"), index="shapley")
    >>> ax = beeswarm(e)
    >>> words = np.array(["craft", "sales", "tech"], dtype=object)[rng.integers(0, 3, 50)]
    >>> e.data = np.column_stack([e.data[:, :2], words])          # a string column: coloured by category
    >>> ax = beeswarm(e)
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    expl, note = finite_rows(expl, output, "beeswarm")
    values, _, label, _ = output_slice(expl, output)
    top, rest = top_and_rest(np.abs(values).mean(axis=0), max_display)
    names, lines, _ = with_others(shown_names(expl), values.T, np.zeros(values.shape[1]), top, rest)
    ax = new_axes(ax, 0.4 * len(names) + 1.5)
    rng = np.random.default_rng(0)
    data = expl.data if expl.data is not None and np.shape(expl.data)[1] == values.shape[1] else None
    scatter = None
    for pos, i in enumerate(top[::-1], start=len(names) - len(top)):       # the most important on top
        jitter = rng.uniform(-0.25, 0.25, size=values.shape[0])
        column = None if data is None else numeric_column(np.asarray(data)[:, i])
        if column is not None:
            lo, hi = np.nanpercentile(column, 5), np.nanpercentile(column, 95)
            color = np.clip((column - lo) / (hi - lo if hi > lo else 1.0), 0, 1)
            scatter = ax.scatter(values[:, i], pos + jitter, c=color, cmap="coolwarm", s=10, vmin=0, vmax=1)
        elif data is not None:                            # strings or categories: a colour per category, named
            labels = np.asarray(data)[:, i].astype(str)
            categories, codes = np.unique(labels, return_inverse=True)
            palette = plt_colors(len(categories))
            ax.scatter(values[:, i], pos + jitter, c=[palette[c] for c in codes], s=10)
            # the most frequent categories named at the middle of their points, alternately above and below the row
            shown = np.argsort(-np.bincount(codes))[:3]
            for k, c in enumerate(sorted(shown, key=lambda c: np.median(values[codes == c, i]))):
                ax.annotate(plain(categories[c]), (float(np.median(values[codes == c, i])), pos + (0.3 if k % 2 else -0.3)),
                            ha="center", va="center", fontsize=6.5, color=palette[c], clip_on=True)
        else:
            ax.scatter(values[:, i], pos + jitter, color=POS, s=10)
    if rest.size:                                       # the other players' values summed row by row, at the bottom
        ax.scatter(lines[-1], rng.uniform(-0.25, 0.25, size=values.shape[0]), color=GREY, s=10)
    ax.axvline(0, color=GREY, lw=0.8)
    ax.set_yticks(np.arange(len(names))[::-1], names)
    ax.set_xlabel(plain(f"{expl.index} value{label}"))
    if scatter is not None:
        bar_ = ax.figure.colorbar(scatter, ax=ax, pad=0.01)
        bar_.set_label("feature value (low to high)")
    if note:
        ax.set_title(plain(note), fontsize=8)
    ax.figure.tight_layout()
    return ax


def heatmap(expl: Any, max_display: int = 10, output: Any = None, ax: Any = None) -> Any:
    """Rows x features: every row's values for the ``max_display`` features of largest mean |value| (the rest
    summed in one column), rows ordered by their total, the model output above.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=np.array([[1.0, -2.0], [3.0, 0.5]]), stderr=None, empty_value=np.zeros(2),
    ...                    data=None, player_names=["a", "b"], index="shapley")
    >>> heatmap(e).images[0].get_array().tolist()         # rows by total (-1 then 3.5), columns a, b
    [[1.0, -2.0], [3.0, 0.5]]
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    expl, note = finite_rows(expl, output, "heatmap")
    values, _, label, j = output_slice(expl, output)
    top = np.argsort(-np.abs(values).mean(axis=0), kind="stable")[:max_display]
    rest = np.setdiff1d(np.arange(values.shape[1]), top)
    M = values[:, top]
    names = [shown_names(expl)[i] for i in top]
    if rest.size:
        M = np.column_stack([M, values[:, rest].sum(axis=1)])
        names.append(f"{rest.size} other features")
    order = np.argsort(values.sum(axis=1), kind="stable")
    ax = new_axes(ax, 0.35 * len(names) + 1.5)
    bound = float(np.abs(M).max()) or 1.0
    image = ax.imshow(M[order], aspect="auto", cmap="RdBu_r", vmin=-bound, vmax=bound,
                      interpolation="nearest")
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_ylabel("rows (by total attribution)")
    if note:
        ax.set_title(plain(note), fontsize=8)
    ax.figure.colorbar(image, ax=ax, label=plain(f"{expl.index} value{label}"))
    return ax


def decision(expl: Any, rows: Any = None, max_display: int = 20, output: Any = None, ax: Any = None) -> Any:
    """One line per row from the base value (``v(empty)``) to the model's output, adding the features' values in
    order of importance (least important first, as shap's decision plot); the features beyond ``max_display``
    enter together at the start. A row whose empty value is not known (an estimate's) starts at 0, as the waterfall
    does, and the axis says so.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=np.array([[1.0, -2.0], [3.0, 0.5]]), stderr=None, empty_value=np.array([0.5, 0.5]),
    ...                    data=None, player_names=["a", "b"], index="shapley")
    >>> [float(line.get_xdata()[-1]) for line in decision(e).lines[:2]]       # each row ends at its output
    [-0.5, 4.0]
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    if rows is not None:
        expl = expl[np.atleast_1d([check_row(expl, r) for r in np.atleast_1d(rows)])]
    expl, note = finite_rows(expl, output, "decision")
    values, _, label, j = output_slice(expl, output)
    picked = np.arange(values.shape[0])
    base = np.asarray(expl.empty_value, dtype=float)
    base = base if base.ndim == 1 else base[:, j if j is not None else 0]
    unknown = ~np.isfinite(base)                         # an estimate's empty value may be unknown: start at 0
    base = np.where(unknown, 0.0, base)
    order = np.argsort(np.abs(values).mean(axis=0), kind="stable")                     # least important first
    shown = order[-max_display:]
    hidden = order[:-max_display] if order.size > max_display else order[:0]
    ax = new_axes(ax, 0.35 * (shown.size + 1) + 1.5)
    for r in picked:
        steps = [base[r]] + ([base[r] + values[r, hidden].sum()] if hidden.size else [])
        steps = np.concatenate([steps, steps[-1] + np.cumsum(values[r, shown])])
        ax.plot(steps, np.arange(steps.size), marker="o", ms=2, lw=1)
    ticks = ["base value"] + ([f"{hidden.size} other features"] if hidden.size else []) + \
        [shown_names(expl)[i] for i in shown]
    ax.set_yticks(range(len(ticks)), ticks)
    ax.axvline(float(np.mean(base[picked])), color=GREY, lw=0.8)
    start = "" if not unknown.any() else " (all rows start at 0: the empty coalition's value is not known)" \
        if unknown.all() else f" ({int(unknown.sum())} of {unknown.size} rows start at 0: their empty coalition's " \
        "value is not known)"
    ax.set_xlabel(plain(f"model output{label}" if not unknown.any() else f"the values' sum{label}{start}"))
    if note:
        ax.set_title(plain(note), fontsize=8)
    return ax
