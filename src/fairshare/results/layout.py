"""How an Explanation's fields lie along its rows, players and outputs: per-row values laid out one per row, the
fields checked against the values' shape, and ``info`` taken along with a slice of rows or players."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["one_per_row", "check_layout", "players_of", "rows_of"]


def one_per_row(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` laid out one per row, ``(rows,)`` or ``(rows, outputs)`` for values of ``shape``: a value shared by
    every row (a number, or one per output) is given to each row, so that slices, plots and reports read row ``r``'s
    at ``[r]``; another shape is kept as given."""
    a = np.asarray(value, dtype=float)
    try:
        return np.broadcast_to(a, shape[:1] + shape[2:]).copy()
    except ValueError:
        return a


def check_layout(expl: Any) -> None:
    """Refuse, naming the field, what does not fit the values ``(rows, players[, outputs])``: base and grand values
    not one per row (and output), data of another number of rows, interaction matrices of other players or outputs,
    output names of another number of outputs.

    Examples
    --------
    >>> import fairshare as fs
    >>> fs.Explanation(values=np.ones((2, 3)), stderr=None, empty_value=np.zeros(5), index="shapley")
    Traceback (most recent call last):
    ...
    ValueError: empty_value must be one per row, (2,) for values (2, 3), got shape (5,)
    """
    shape = expl.values.shape
    want = shape[:1] + shape[2:]
    for name in ("empty_value", "grand_value"):
        value = getattr(expl, name)
        if value is not None and np.shape(value) != want:
            raise ValueError(f"{name} must be one per row{' and output' if len(shape) == 3 else ''}, {want} for "
                             f"values {shape}, got shape {np.shape(value)}")
    if expl.data is not None and np.ndim(expl.data) >= 1 and np.shape(expl.data)[0] != shape[0]:
        raise ValueError(f"data must have one row per explained row ({shape[0]}), got shape {np.shape(expl.data)}")
    pairs = shape[:2] + shape[1:2] + shape[2:]
    for name in ("interactions", "interactions_stderr"):
        value = getattr(expl, name)
        if value is not None and np.shape(value) != pairs:
            raise ValueError(f"{name} must be (rows, players, players[, outputs]), {pairs} for values {shape}, got "
                             f"shape {np.shape(value)}")
    k = shape[2] if len(shape) == 3 else None
    if expl.output_names is not None and (k is None or len(expl.output_names) != k):
        raise ValueError(f"output_names must have one name per output ({k or 'none: values of one output'}), got "
                         f"{len(expl.output_names)}")


def players_of(info: dict, cols: np.ndarray, n: int) -> dict:
    """``info`` of the players ``cols`` (of ``n``): each cell of a shaped input (sequences, images) mapped to its
    player's new position, -1 where its player was sliced away, so ``input_values`` puts values in their cells."""
    shape, groups = info.get("input_shape"), info.get("input_groups")
    if shape is None or (cols.size == n and np.array_equal(cols, np.arange(n))):
        return info
    labels = np.arange(int(np.prod(shape))).reshape(shape) if groups is None else np.asarray(groups)
    if groups is None and labels.size != n:                   # groups given as lists: no cells to map
        return info
    new = np.full(n, -1, dtype=np.int64)
    new[cols] = np.arange(cols.size)
    return {**info, "input_groups": new[labels] if isinstance(groups, np.ndarray) else new[labels].tolist()}


def rows_of(info: dict, rows: np.ndarray, n_rows: int) -> dict:
    """``info`` of the rows ``rows``: the entries it names in ``info["per_row"]`` (one per row: images, their labels)
    and the rows' own reports (``info["rows"]``, one per row) taken at those rows, the rest as it is."""
    out = dict(info)
    per_row = list(info.get("per_row", ()))
    if isinstance(info.get("rows"), list) and len(info["rows"]) == n_rows and "rows" not in per_row:
        per_row.append("rows")
    for key in per_row:
        value = info.get(key)
        if value is not None:
            out[key] = np.asarray(value)[rows] if isinstance(value, np.ndarray) else [value[int(r)] for r in rows]
    return out
