"""The numbers the report's script draws, as JSON-ready lists: values and standard errors (six significant digits;
infinities and NaN as the strings JavaScript's ``Number`` reads), the rows' data, the summary of every player, the
images and the pairwise interactions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..html import output_slice, unnamed_output
from .pictures import image_layers

__all__ = ["numbers", "summary", "explanation_payload", "interactions_payload"]

_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def numbers(array: Any) -> Any:
    """``array`` as nested lists of floats rounded to six significant digits, with ``"Infinity"``,
    ``"-Infinity"`` and ``"NaN"`` in place of the values JSON cannot hold (the page reads them with ``Number``).

    Examples
    --------
    >>> numbers([[1 / 3, np.inf], [np.nan, -2.0]])
    [[0.333333, 'Infinity'], ['NaN', -2.0]]
    """
    a = np.asarray(array, dtype=float)
    flat = [float(f"{x:.6g}") if math.isfinite(x) else _NON_FINITE.get(x, "NaN") for x in a.ravel().tolist()]
    if a.ndim == 0:
        return flat[0]
    return np.array(flat, dtype=object).reshape(a.shape).tolist()


def summary(values: np.ndarray, stderr: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Mean |value| of each player over the rows ``(rows, players)``, and two standard errors of it: the error of
    the mean over rows combined with the estimation error of each value.

    Examples
    --------
    >>> mean, err = summary(np.array([[1.0, -2.0], [3.0, 2.0]]), None)
    >>> mean.tolist(), err.round(3).tolist()
    ([2.0, 2.0], [2.0, 0.0])
    """
    mean_abs = np.abs(values).mean(axis=0)
    rows = values.shape[0]
    spread = np.abs(values).std(axis=0, ddof=1) / np.sqrt(rows) if rows > 1 else np.zeros_like(mean_abs)
    est = np.sqrt((stderr**2).mean(axis=0) / rows) if stderr is not None else np.zeros_like(mean_abs)
    return mean_abs, 2 * np.sqrt(spread**2 + est**2)


def _per_row(value: Any, rows: int, j: int | None) -> np.ndarray | None:
    """A per-row quantity ``(rows,)`` or ``(rows, k)`` (the base value, the grand value) at output ``j``."""
    if value is None:
        return None
    a = np.asarray(value, dtype=float).reshape(rows, -1)
    return a[:, j if j is not None and a.shape[1] > 1 else 0]


def _data(expl: Any) -> tuple[list | None, list | None, list | None]:
    """The rows' data as nested lists (numbers, or strings for columns of words), and each column's colour range
    (5th and 95th percentile; None for words); None for a text (its players' names are its tokens)."""
    data = getattr(expl, "data", None)
    rows, n = expl.values.shape[:2]
    if getattr(expl, "is_text", False) or data is None or np.ndim(data) != 2 or np.shape(data) != (rows, n):
        return None, None, None
    table = np.empty((rows, n), dtype=object)
    low, high = [], []
    for j in range(n):
        column = np.asarray(data)[:, j]
        try:
            numeric = np.asarray(column, dtype=float)
        except (TypeError, ValueError):
            table[:, j] = [str(v) for v in column]
            low.append(None)
            high.append(None)
            continue
        table[:, j] = numbers(numeric)
        finite = numeric[np.isfinite(numeric)]
        lo, hi = (np.percentile(finite, [5, 95]) if finite.size else (0.0, 0.0))
        if lo == hi and finite.size:
            lo, hi = finite.min(), finite.max()
        low.append(numbers(lo))
        high.append(numbers(hi))
    return table.tolist(), low, high


def explanation_payload(expl: Any, output: Any = None, max_display: int = 20) -> dict:
    """What the script draws for an Explanation (one output of it: see
    :func:`~fairshare.results.html.output_slice`): every row's values, errors, base value and data, each player's
    mean |value|, the images and the mean pairwise interactions where the explanation has them. The bar chart draws
    ``bar``: the mean |value| of several rows, the signed values of one (``bar_signed``: an Attribution, SAGE's
    values), as the bar plot draws them.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=[[1.0, -2.0]], stderr=[[0.1, np.inf]], empty_value=[0.5], index="shapley")
    >>> p = explanation_payload(e)
    >>> p["players"], p["values"], p["stderr"], p["base"], p["mean_abs"], p["bar"]
    (['x0', 'x1'], [[1.0, -2.0]], [[0.1, 'Infinity']], [0.5], [1.0, 2.0], [1.0, -2.0])
    """
    values, stderr, label, j = output_slice(expl, output)          # a slice e[:, :, 1] of one output: named
    rows = values.shape[0]
    data, low, high = _data(expl)
    mean_abs, mean_err = summary(values, stderr)
    grand = _per_row(expl.grand_value, rows, j)
    payload = {"kind": "explanation", "index": str(expl.index), "label": label, "players": list(expl.player_names),
               "rows": list(expl.row_names), "values": numbers(values),
               "stderr": None if stderr is None else numbers(stderr), "base": numbers(_per_row(expl.empty_value, rows, j)),
               "grand": None if grand is None else numbers(grand), "data": data, "low": low, "high": high,
               "mean_abs": numbers(mean_abs), "mean_err": numbers(mean_err), "max_display": int(max_display),
               "bar": numbers(values[0] if rows == 1 else mean_abs), "bar_signed": rows == 1,
               "images": image_layers(expl, output) if "images" in expl.info else None, "pairs": None}
    if getattr(expl, "interactions", None) is not None:
        pairs = np.asarray(expl.interactions, dtype=float)
        pairs = pairs[..., j] if pairs.ndim == 4 else pairs
        payload["pairs"] = {"matrix": numbers(np.abs(pairs).mean(axis=0)),
                            "title": f"mean |interaction value| over {rows} rows (shap's layout: half of each pair's "
                                     "value in each of its two cells, the rest of each player's value on the diagonal)"}
    return payload


def interactions_payload(result: Any, output: int | None = None) -> dict:
    """What the script draws for :class:`~fairshare.Interactions`: each subset's players, value and error, and the
    pairwise matrix where the order is 2 or more.

    Examples
    --------
    >>> import fairshare as fs
    >>> res = fs.interactions(fs.games.SOUMGame([[True, True]], [1.0]), "sii", method="exact")
    >>> p = interactions_payload(res)
    >>> p["subsets"], p["values"], p["matrix"]
    ([['x0'], ['x1'], ['x0', 'x1']], [0.5, 0.5, 1.0], [[0.5, 1.0], [1.0, 0.5]])
    """
    values, stderr = result.values, result.stderr
    label, j = "", unnamed_output(values.shape[1] if values.ndim == 2 else None, output)
    if j is not None:
        values, stderr, label = values[:, j], None if stderr is None else stderr[:, j], f" (output {j})"
    subsets = [[result.player_names[i] for i in row if i >= 0] for row in result.subsets]
    matrix = None
    if result.order >= 2 and result.n_players:
        matrix = numbers(result.matrix(j))
    empty = _per_row(result.empty_value, 1, j)
    return {"kind": "interactions", "index": str(result.index), "label": label, "players": list(result.player_names),
            "subsets": subsets, "values": numbers(values), "stderr": None if stderr is None else numbers(stderr),
            "empty": None if empty is None else numbers(empty[0]), "matrix": matrix}
