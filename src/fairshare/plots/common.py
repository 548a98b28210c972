"""What every plot shares: matplotlib imported lazily, user strings drawn literally, axes, colours, row and feature
lookups. Every plot draws on ``ax=`` when given, returns the Axes, and shows two standard errors where values have
them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..results.html import output_slice

__all__ = ["pyplot", "plain", "shown_names", "new_axes", "numeric_column", "plt_colors", "check_row",
           "feature_label", "player_position", "output_slice", "top_and_rest", "with_others", "finite_rows",
           "finite_players", "error_text", "POS", "NEG", "GREY"]

POS, NEG, GREY = "#d62728", "#1f77b4", "#7f7f7f"


def pyplot():
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


def shown_names(expl: Any) -> list[str]:
    """The players' names as the plots draw them (:func:`plain`)."""
    return [plain(name) for name in expl.player_names]


def new_axes(ax: Any, height: float) -> Any:
    plt = pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, height))
    return ax


def numeric_column(column: np.ndarray) -> np.ndarray | None:
    """A data column as floats, or None when it holds strings or categories (which are coloured by category)."""
    try:
        return np.asarray(column, dtype=float)
    except (TypeError, ValueError):
        return None


def plt_colors(k: int) -> list:
    """``k`` distinct colours (matplotlib's tab10, then tab20)."""
    plt = pyplot()
    cmap = plt.get_cmap("tab10" if k <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(k)]


def check_row(expl: Any, row: Any) -> int:
    n = len(expl.values)
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
        raise TypeError(f"row must be an integer position, got {row!r}")
    if not -n <= int(row) < n:
        raise ValueError(f"row must be in 0..{n - 1} (the explanation holds {n} rows), got {row}")
    return int(row) % n


def top_and_rest(importance: np.ndarray, max_display: int) -> tuple[np.ndarray, np.ndarray]:
    """The players by ``importance``, largest first: the ``max_display`` drawn one by one, and the rest (drawn
    as one entry, :func:`with_others`).

    Examples
    --------
    >>> top, rest = top_and_rest(np.array([0.1, 3.0, 2.0, 0.5]), 2)
    >>> top.tolist(), rest.tolist()
    ([1, 2], [3, 0])
    """
    order = np.argsort(-np.asarray(importance, dtype=float), kind="stable")
    return order[:max_display], order[max_display:]


def with_others(labels: list[str], values: np.ndarray, errors: np.ndarray, top: np.ndarray,
                rest: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The entries drawn for players ``top`` (labels, values and errors indexed by player), then, when ``rest``
    holds any, one ``"N other players"`` entry: the rest's values summed (along the first axis: values may be
    ``(players, rows)``), their errors added in quadrature (as the HTML report does).

    Examples
    --------
    >>> with_others(["a", "b", "c"], np.array([3.0, 1.0, 2.0]), np.array([0.3, 0.4, 0.0]), np.array([0]),
    ...             np.array([2, 1]))
    (['a', '2 other players'], array([3., 3.]), array([0.3, 0.4]))
    """
    names = [labels[i] for i in top]
    values, errors = np.asarray(values, dtype=float), np.asarray(errors, dtype=float)
    if not rest.size:
        return names, values[top], errors[top]
    return (names + [f"{rest.size} other players"], np.concatenate([values[top], values[rest].sum(axis=0)[None]]),
            np.append(errors[top], np.sqrt((errors[rest] ** 2).sum())))


def feature_label(expl: Any, row: int, i: int) -> str:
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


def player_position(expl: Any, feature: Any, what: str = "feature") -> int:
    """A player's position from its name or position."""
    names = list(expl.player_names)
    if isinstance(feature, str):
        if feature not in names:
            raise ValueError(f"{what} {feature!r} is not one of the players {names[:20]}")
        return names.index(feature)
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool) and -len(names) <= feature < len(names):
        return int(feature) % len(names)
    raise ValueError(f"{what} must be a player's name or a position in 0..{len(names) - 1}, got {feature!r}")


def _what(values: np.ndarray) -> str:
    """``NaN``, ``infinite`` or ``NaN or infinite``: what the non-finite ``values`` hold."""
    nan, inf = bool(np.isnan(values).any()), bool(np.isinf(values).any())
    return "NaN or infinite" if nan and inf else "NaN" if nan else "infinite"


def finite_rows(expl: Any, output: Any, plot: str) -> tuple[Any, str]:
    """The Explanation of the rows whose values (of the output shown) are all finite, and a note naming how many
    were left out (``""`` when none): a plot of many rows draws what is finite, warns naming the rows it leaves
    out, and refuses, naming the cause, when no row is left.

    Examples
    --------
    >>> import fairshare as fs, warnings
    >>> e = fs.Explanation(values=[[1.0, 2.0], [np.nan, 1.0]], stderr=None, empty_value=[0.0, 0.0],
    ...                    player_names=["a", "b"], index="shapley")
    >>> with warnings.catch_warnings(record=True):
    ...     kept, note = finite_rows(e, None, "beeswarm")
    >>> len(kept), note
    (1, '1 of 2 rows left out: NaN values')
    """
    values = output_slice(expl, output)[0]
    bad = ~np.isfinite(values).all(axis=1)
    if not bad.any():
        return expl, ""
    what = _what(values[bad])
    if bad.all():
        raise ValueError(f"every row's values hold {what} values: the {plot} plot has no finite row to draw")
    named = [expl.row_names[r] for r in np.flatnonzero(bad)]
    warnings.warn(f"{plot} plot: row(s) {named[:10]}{' ...' if len(named) > 10 else ''} hold {what} values and "
                  "are left out", UserWarning, stacklevel=3)
    return expl[np.flatnonzero(~bad)], f"{int(bad.sum())} of {bad.size} rows left out: {what} values"


def finite_players(expl: Any, values: np.ndarray, plot: str) -> tuple[np.ndarray, str]:
    """Positions of the players whose ``values`` (one row's) are finite, and a note naming those left out (``""``
    when none), warned; refused, naming the cause, when none is finite.

    Examples
    --------
    >>> import fairshare as fs, warnings
    >>> e = fs.Explanation(values=[[1.0, np.inf]], stderr=None, empty_value=[0.0], player_names=["a", "b"],
    ...                    index="shapley")
    >>> with warnings.catch_warnings(record=True):
    ...     print(finite_players(e, e.values[0], "waterfall"))
    (array([0]), "left out: ['b'] (infinite values)")
    """
    ok = np.isfinite(values)
    if ok.all():
        return np.arange(values.size), ""
    what = _what(values[~ok])
    if not ok.any():
        raise ValueError(f"every player's value is {what}: the {plot} plot has no finite value to draw")
    named = [expl.player_names[i] for i in np.flatnonzero(~ok)]
    shown = f"{named[:10]}{' ...' if len(named) > 10 else ''}"
    warnings.warn(f"{plot} plot: player(s) {shown} have {what} values and are left out", UserWarning, stacklevel=3)
    return np.flatnonzero(ok), f"left out: {shown} ({what} values)"


def error_text(err: float) -> str:
    """Two standard errors as a plot writes them after a value: ``" ± 0.2"``, ``""`` for none, ``" ± n/a"`` for an
    unknown (NaN) one, as the HTML report shows it.

    Examples
    --------
    >>> error_text(0.1), error_text(0.0), error_text(float("nan")), error_text(float("inf"))
    (' ± 0.2', '', ' ± n/a', ' ± inf')
    """
    if np.isnan(err):
        return " ± n/a"
    return f" ± {2 * err:.2g}" if err > 0 else ""
