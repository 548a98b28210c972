"""Plots of explanations (matplotlib, imported lazily): bar, waterfall, beeswarm, dependence, heatmap, decision,
convergence and the interaction plots. Every plot draws on ``ax=`` when given and returns the Axes.

Every plot shows error bars where the values have standard errors (two standard errors).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .html_output import output_slice, shade, text_html, text_values

__all__ = ["bar", "waterfall", "beeswarm", "dependence", "heatmap", "decision", "convergence", "interaction_heatmap",
           "interaction_network", "interaction_dependence", "text", "text_html"]

_POS, _NEG, _GREY = "#d62728", "#1f77b4", "#7f7f7f"


def _plt():
    try:
        import matplotlib

        if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - only without the plot extra
        raise ImportError("plots need matplotlib: pip install 'fairshare[plot]'") from exc
    return plt


def plain(text: Any) -> str:
    r"""A user string (a name, a token, an index) as matplotlib shows it literally: its ``$`` escaped, so a name
    such as ``"$x^$"`` is drawn as written instead of being parsed as mathtext (and failing at draw).

    Examples
    --------
    >>> print(plain("cost in $ ($US)"))
    cost in \$ (\$US)
    """
    return str(text).replace("$", r"\$")


def _names(expl: Any) -> list[str]:
    """The players' names as the plots draw them (:func:`plain`)."""
    return [plain(name) for name in expl.player_names]


def new_axes(ax: Any, height: float) -> Any:
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, height))
    return ax


def _numeric_column(column: np.ndarray) -> np.ndarray | None:
    """A data column as floats, or None when it holds strings or categories (which are coloured by category)."""
    try:
        return np.asarray(column, dtype=float)
    except (TypeError, ValueError):
        return None


def plt_colors(k: int) -> list:
    """``k`` distinct colours (matplotlib's tab10, then tab20)."""
    plt = _plt()
    cmap = plt.get_cmap("tab10" if k <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(k)]


def _check_row(expl: Any, row: Any) -> int:
    n = len(expl.values)
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
        raise TypeError(f"row must be an integer position, got {row!r}")
    if not -n <= int(row) < n:
        raise ValueError(f"row must be in 0..{n - 1} (the explanation holds {n} rows), got {row}")
    return int(row) % n


def _feature_label(expl: Any, row: int, i: int) -> str:
    """``name = value`` when the explained row's data is known (like shap's waterfall), else the name."""
    data = getattr(expl, "data", None)
    name = plain(expl.player_names[i])
    if data is None or np.ndim(data) != 2 or data.shape[1] != len(expl.player_names):
        return name
    value = data[row, i]
    try:
        text = f"{float(value):.4g}"
    except (TypeError, ValueError):
        text = plain(value)
    return f"{name} = {text}"


def bar(expl: Any, max_display: int = 10, output: Any = None, ax: Any = None) -> Any:
    """Mean |value| per player over rows, largest first, with two-standard-error bars (the error of
    the mean over rows combined with the estimation error of each value).

    Examples
    --------
    >>> import fairshare as fs, numpy as np
    >>> e = fs.Explanation(values=np.random.default_rng(0).normal(size=(20, 4)), stderr=None,
    ...                    empty_value=np.zeros(20), data=None, player_names=list("abcd"), index="shapley")
    >>> ax = bar(e)
    """
    values, stderr, label, _ = output_slice(expl, output)
    mean_abs = np.abs(values).mean(axis=0)
    rows = values.shape[0]
    spread = np.abs(values).std(axis=0, ddof=1) / np.sqrt(rows) if rows > 1 else np.zeros_like(mean_abs)
    est = np.sqrt((stderr**2).mean(axis=0) / rows) if stderr is not None else np.zeros_like(mean_abs)
    err = 2 * np.sqrt(spread**2 + est**2)
    order = np.argsort(-mean_abs)[:max_display][::-1]
    ax = new_axes(ax, 0.4 * len(order) + 1.2)
    ax.barh(np.arange(len(order)), mean_abs[order], xerr=err[order], color=_POS, ecolor=_GREY, capsize=3)
    ax.set_yticks(np.arange(len(order)), [_names(expl)[i] for i in order])
    ax.set_xlabel(plain(f"mean |{expl.index} value|{label}"))
    ax.set_title(f"{len(expl)} rows")
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
    """
    row = _check_row(expl, row)
    values, stderr, label, j = output_slice(expl, output)
    v = values[row]
    se = stderr[row] if stderr is not None else np.zeros_like(v)
    base = np.asarray(expl.empty_value[row], dtype=float).reshape(-1)
    base = float(base[j] if j is not None and base.size > 1 else base[0])
    order = np.argsort(-np.abs(v))
    shown, rest = order[:max_display], order[max_display:]
    labels = [_feature_label(expl, row, i) for i in shown]
    contrib = list(v[shown])
    errs = list(se[shown])
    if rest.size:
        labels.append(f"{rest.size} other players")
        contrib.append(float(v[rest].sum()))
        errs.append(float(np.sqrt((se[rest] ** 2).sum())))
    ax = new_axes(ax, 0.4 * len(labels) + 1.5)
    positions = np.arange(len(labels))[::-1]
    running = base
    for pos, c, e in zip(positions, contrib, errs):
        ax.barh(pos, c, left=running, color=_POS if c >= 0 else _NEG)
        ax.errorbar(running + c, pos, xerr=2 * e, color=_GREY, capsize=3, fmt="none")
        text = f"{c:+.3g}" + (f" ± {2 * e:.2g}" if e > 0 else "")
        ax.annotate(text, (max(running, running + c) + 2 * e, pos), xytext=(4, 0), textcoords="offset points",
                    va="center", ha="left", fontsize=8, color="#333333")
        running += c
    ax.set_yticks(positions, labels)
    ax.axvline(base, color=_GREY, lw=0.8, ls="--")
    ax.axvline(running, color="black", lw=0.8)
    ends = np.concatenate([[base, running], base + np.cumsum(contrib), base + np.cumsum(contrib) + 2 * np.array(errs)])
    pad = 0.05 * (ends.max() - ends.min() or 1.0)
    ax.set_xlim(ends.min() - pad, ends.max() + 6 * pad)                  # room for the numbers on the right
    ax.set_xlabel(plain(f"base value {base:.3g} -> {running:.3g}{label}"))
    ax.set_title(plain(f"row {expl.row_names[row]}: {expl.index} values"))
    ax.figure.tight_layout()
    return ax


def beeswarm(expl: Any, max_display: int = 10, output: Any = None, ax: Any = None) -> Any:
    """Every row's value for the most important players, colored by the feature's value (when the
    players are features).

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
    values, _, label, _ = output_slice(expl, output)
    order = np.argsort(-np.abs(values).mean(axis=0))[:max_display][::-1]
    ax = new_axes(ax, 0.4 * len(order) + 1.5)
    rng = np.random.default_rng(0)
    data = expl.data if expl.data is not None and np.shape(expl.data)[1] == values.shape[1] else None
    scatter = None
    for pos, i in enumerate(order):
        jitter = rng.uniform(-0.25, 0.25, size=values.shape[0])
        column = None if data is None else _numeric_column(np.asarray(data)[:, i])
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
            ax.scatter(values[:, i], pos + jitter, color=_POS, s=10)
    ax.axvline(0, color=_GREY, lw=0.8)
    ax.set_yticks(np.arange(len(order)), [_names(expl)[i] for i in order])
    ax.set_xlabel(plain(f"{expl.index} value{label}"))
    if scatter is not None:
        bar_ = ax.figure.colorbar(scatter, ax=ax, pad=0.01)
        bar_.set_label("feature value (low to high)")
    ax.figure.tight_layout()
    return ax


def _feature(expl: Any, feature: Any, what: str = "feature") -> int:
    """A player's position from its name or position."""
    names = list(expl.player_names)
    if isinstance(feature, str):
        if feature not in names:
            raise ValueError(f"{what} {feature!r} is not one of the players {names[:20]}")
        return names.index(feature)
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool) and -len(names) <= feature < len(names):
        return int(feature) % len(names)
    raise ValueError(f"{what} must be a player's name or a position in 0..{len(names) - 1}, got {feature!r}")


def strongest_partner(expl: Any, i: int, values: np.ndarray) -> int | None:
    """The feature that interacts most with ``i``: by mean |interaction value| when the explanation has them, else
    the numeric feature that ``i``'s attribution follows most closely among rows of similar value of ``i`` (mean
    absolute correlation within bins of a tenth of the rows, as shap's ``approximate_interactions``). None when
    there is no other numeric feature.

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
        M = np.abs(inter if inter.ndim == 3 else inter[..., -1]).mean(axis=0)[i].copy()
        M[i] = -np.inf
        return int(np.argmax(M)) if n > 1 else None
    data = np.asarray(expl.data) if expl.data is not None else None
    own = None if data is None else _numeric_column(data[:, i])
    if own is None:
        return None
    # within bins of rows of similar value of feature i, how closely the attribution follows feature j
    order = np.argsort(own, kind="stable")
    size = max(5, len(order) // 10)
    bins = [order[k:k + size] for k in range(0, len(order), size) if len(order[k:k + size]) >= 3]
    best, score = None, -1.0
    for j in range(n):
        col = None if j == i else _numeric_column(data[:, j])
        if col is None:
            continue
        found = [abs(float(np.corrcoef(col[b], values[b, i])[0, 1])) for b in bins
                 if np.ptp(col[b]) > 0 and np.ptp(values[b, i]) > 0 and np.all(np.isfinite(col[b]))]
        if found and float(np.mean(found)) > score:
            best, score = j, float(np.mean(found))
    return best


def dependence(expl: Any, feature: Any, color: Any = "auto", output: Any = None, ax: Any = None) -> Any:
    """A feature's value against its attribution over the rows, with two-standard-error bars where the values
    have them, coloured by ``color``: ``"auto"`` (the strongest interaction partner, :func:`strongest_partner`),
    a feature, or None.

    Examples
    --------
    >>> import fairshare as fs
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(100, 3))
    >>> e = fs.Explanation(values=np.column_stack([X[:, 0] * X[:, 2], X[:, 1], X[:, 2]]), stderr=None,
    ...                    empty_value=np.zeros(100), data=X, player_names=list("abc"), index="shapley")
    >>> ax = dependence(e, "a")
    >>> ax.get_xlabel(), ax.get_ylabel(), ax.collections[0].get_label()
    ('a', 'shapley value of a', 'coloured by c')
    """
    values, stderr, label, _ = output_slice(expl, output)
    i = _feature(expl, feature)
    if expl.data is None or np.ndim(expl.data) != 2 or np.shape(expl.data)[1] != values.shape[1]:
        raise ValueError("a dependence plot needs the explained rows' feature values (expl.data)")
    data = np.asarray(expl.data)
    x = _numeric_column(data[:, i])
    if x is None:
        raise ValueError(f"feature {expl.player_names[i]!r} is not numeric; a dependence plot needs numbers on its axis")
    j = strongest_partner(expl, i, values) if color == "auto" else (None if color is None else
                                                                      _feature(expl, color, "color"))
    cj = None if j is None else _numeric_column(data[:, j])
    ax = new_axes(ax, 4)
    if stderr is not None and np.any(stderr[:, i] > 0):
        ax.errorbar(x, values[:, i], yerr=2 * stderr[:, i], fmt="none", ecolor=_GREY, alpha=0.5, lw=0.8)
    points = ax.scatter(x, values[:, i], c=cj if cj is not None else _POS, cmap="coolwarm" if cj is not None else None,
                        s=14, label=f"coloured by {_names(expl)[j]}" if cj is not None else "")
    if cj is not None:
        ax.figure.colorbar(points, ax=ax, label=_names(expl)[j])
    ax.axhline(0, color=_GREY, lw=0.8)
    ax.set_xlabel(_names(expl)[i])
    ax.set_ylabel(plain(f"{expl.index} value of {expl.player_names[i]}{label}"))
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
    values, _, label, j = output_slice(expl, output)
    top = np.argsort(-np.abs(values).mean(axis=0), kind="stable")[:max_display]
    rest = np.setdiff1d(np.arange(values.shape[1]), top)
    M = values[:, top]
    names = [_names(expl)[i] for i in top]
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
    ax.figure.colorbar(image, ax=ax, label=plain(f"{expl.index} value{label}"))
    return ax


def decision(expl: Any, rows: Any = None, max_display: int = 20, output: Any = None, ax: Any = None) -> Any:
    """One line per row from the base value (``v(empty)``) to the model's output, adding the features' values in
    order of importance (least important first, as shap's decision plot); the features beyond ``max_display``
    enter together at the start.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=np.array([[1.0, -2.0], [3.0, 0.5]]), stderr=None, empty_value=np.array([0.5, 0.5]),
    ...                    data=None, player_names=["a", "b"], index="shapley")
    >>> [float(line.get_xdata()[-1]) for line in decision(e).lines[:2]]       # each row ends at its output
    [-0.5, 4.0]
    """
    values, _, label, j = output_slice(expl, output)
    picked = np.arange(values.shape[0]) if rows is None else np.atleast_1d([_check_row(expl, r) for r in
                                                                            np.atleast_1d(rows)])
    base = np.asarray(expl.empty_value, dtype=float)
    base = base if base.ndim == 1 else base[:, j if j is not None else 0]
    order = np.argsort(np.abs(values).mean(axis=0), kind="stable")                     # least important first
    shown = order[-max_display:]
    hidden = order[:-max_display] if order.size > max_display else order[:0]
    ax = new_axes(ax, 0.35 * (shown.size + 1) + 1.5)
    for r in picked:
        steps = [base[r]] + ([base[r] + values[r, hidden].sum()] if hidden.size else [])
        steps = np.concatenate([steps, steps[-1] + np.cumsum(values[r, shown])])
        ax.plot(steps, np.arange(steps.size), marker="o", ms=2, lw=1)
    ticks = ["base value"] + ([f"{hidden.size} other features"] if hidden.size else []) + \
        [_names(expl)[i] for i in shown]
    ax.set_yticks(range(len(ticks)), ticks)
    ax.axvline(float(np.mean(base[picked])), color=_GREY, lw=0.8)
    ax.set_xlabel(plain(f"model output{label}"))
    return ax


def convergence(game: Any, index: Any = "shapley", method: str = "auto", budgets: Any = None, seed: int = 0,
                ax: Any = None, **options: Any) -> Any:
    """Estimated relative error ``||stderr|| / ||values||`` against the budget for one game: how many
    evaluations an explanation of the wanted accuracy needs.

    Examples
    --------
    >>> import fairshare as fs
    >>> game = fs.games.FunctionGame(fs.games.SOUMGame.random(10, seed=0), n_players=10)
    >>> ax = convergence(game, budgets=[40, 80, 160])
    """
    from .estimate import estimate

    n = game.n_players
    budgets = list(budgets) if budgets is not None else [int(f * n) for f in (4, 8, 16, 32, 64)]
    errors = []
    for b in budgets:
        phi = estimate(game, index, method=method, budget=b, seed=seed, **options)
        norm = float(np.linalg.norm(phi.values))
        errors.append(float(np.linalg.norm(phi.stderr)) / norm if phi.stderr is not None and norm > 0 else np.nan)
    ax = new_axes(ax, 3.5)
    ax.plot(budgets, errors, marker="o", color=_POS)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("budget (game evaluations)")
    ax.set_ylabel("estimated relative error")
    ax.grid(alpha=0.3)
    ax.figure.tight_layout()
    return ax


def _pair_matrix(result: Any, output: Any) -> tuple[np.ndarray, list[str], str]:
    """The pairwise matrix to draw: an Interactions result's, or the mean |value| over an Explanation's rows."""
    if getattr(result, "interactions", None) is not None:                    # an Explanation
        M = np.abs(result.interactions)
        if M.ndim == 4:
            names = result._outputs()
            j = names.index(str(output)) if output is not None and str(output) in names else (1 if len(names) == 2 else 0)
            M = M[..., j]
        return M.mean(axis=0), _names(result), "mean |interaction value| over the rows"
    if hasattr(result, "matrix"):
        M = result.matrix()
        if M.ndim == 3:
            M = M[..., 0 if output is None else int(output)]
        return M, _names(result), plain(f"{result.index} (order {result.order})")
    raise TypeError("expected an Interactions result or an Explanation computed with interactions=2")


def _strongest(M: np.ndarray, max_display: int) -> np.ndarray:
    strength = np.abs(M).sum(axis=1)
    return np.sort(np.argsort(-strength, kind="stable")[:max_display])


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
    M, names, title = _pair_matrix(result, output)
    keep = _strongest(M, max_display)
    M = M[np.ix_(keep, keep)]
    ax = new_axes(ax, 0.4 * keep.size + 2)
    bound = float(np.abs(M).max()) or 1.0
    image = ax.imshow(M, cmap="RdBu_r", vmin=-bound, vmax=bound)
    ax.set_xticks(range(keep.size), [names[i] for i in keep], rotation=90)
    ax.set_yticks(range(keep.size), [names[i] for i in keep])
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title)
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
    M, names, title = _pair_matrix(result, output)
    keep = _strongest(M, max_display)
    M = M[np.ix_(keep, keep)]
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
    ax.set_title(title)
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
    names = list(expl.player_names)
    i = names.index(feature) if isinstance(feature, str) else int(feature)
    j = names.index(other) if isinstance(other, str) else int(other)
    names = _names(expl)
    M = expl.interactions
    if M.ndim == 4:
        outs = expl._outputs()
        M = M[..., outs.index(str(output)) if output is not None and str(output) in outs else (1 if len(outs) == 2 else 0)]
    data = np.asarray(expl.data)
    xi, xj = _numeric_column(data[:, i]), _numeric_column(data[:, j])
    if xi is None:
        raise ValueError(f"feature {names[i]!r} is not numeric; a dependence plot needs numbers on its axis")
    ax = new_axes(ax, 4)
    points = ax.scatter(xi, M[:, i, j], c=xj if xj is not None else None, cmap="coolwarm", s=14)
    if xj is not None:
        ax.figure.colorbar(points, ax=ax, label=names[j])
    ax.set_xlabel(names[i])
    ax.set_ylabel(f"interaction {names[i]} x {names[j]}")
    return ax


# ------------------------------------------------------------------------------------------------------ texts
def text(expl: Any, output: Any = None, width: float = 9.0, ax: Any = None) -> Any:
    """The text drawn token by token, each on a background shaded by its value (red raises the output, blue
    lowers it), a token within two standard errors of zero outlined dotted; lines wrap at the axes' width.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("good") for t in ts], "good, bad", progress=False)
    >>> ax = text(e)
    """
    plt = _plt()
    pieces, v, se, label = text_values(expl, output)
    if ax is None:
        lines = sum(len(p) for p in pieces) / (11 * width) + sum(p.count("\n") for p in pieces) + 1
        _, ax = plt.subplots(figsize=(width, 0.5 + 0.3 * lines))
    ax.set_axis_off()
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    scale = float(np.abs(v).max()) if v.size else 0.0
    x, y, line_height = 0.0, 1.0, None
    space = None
    for piece, value, err in zip(pieces, v, se):
        core = piece.strip()
        t = ax.text(x, y, plain(core), transform=ax.transAxes, va="top", ha="left", fontsize=10, family="DejaVu Sans",
                    bbox=dict(boxstyle="round,pad=0.15", fc=shade(value, scale),
                              ec="#555555" if abs(value) <= 2 * err else "none", ls=":", lw=0.8))
        extent = t.get_window_extent(renderer)
        w = extent.width / box.width
        line_height = line_height or 1.6 * extent.height / box.height
        if space is None:
            probe = ax.text(0, 0, "a a", fontsize=10, transform=ax.transAxes)
            one = ax.text(0, 0, "aa", fontsize=10, transform=ax.transAxes)
            space = (probe.get_window_extent(renderer).width - one.get_window_extent(renderer).width) / box.width
            probe.remove()
            one.remove()
        if x > 0 and x + w > 1.0:                                       # wrap before this token
            x, y = 0.0, y - line_height
            t.set_position((x, y))
        x += w + (space if piece != piece.rstrip() else 0.15 * space)
        if "\n" in piece[len(piece.rstrip()):]:
            x, y = 0.0, y - line_height
    ax.set_ylim(min(0.0, y - line_height), 1.0)
    base = np.asarray(expl.empty_value, dtype=float).reshape(-1)
    ax.set_title(plain(f"{expl.index} values{label}") + f", base {base[-1]:.3g}: red raises, blue lowers; dotted: |value| < 2 s.e.",
                 fontsize=9, loc="left")
    return ax
