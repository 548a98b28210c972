"""The players of inputs of any shape (sequences ``(rows, time, features)``, images, tensors ``(rows, ...)``).

Each input's cells are the players (or groups of them: ``"time"`` steps, ``"features"`` channels, windows of
``w`` steps, or integer labels shaped like one input); the model is called on inputs of the original shape,
so a scikit-learn model on flattened sequences, a numpy function or a torch module all run on the same path.
Values come back one per player; :meth:`fairshare.Explanation.input_values` puts them in the input's shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["is_shaped_input", "input_groups", "flat_predict", "flat_rows", "cell_names", "is_structured",
           "check_finite_inputs"]


def is_shaped_input(X: Any) -> bool:
    """Whether ``X`` holds inputs of more than one dimension each (an array of ndim >= 3).

    Examples
    --------
    >>> is_shaped_input(np.zeros((4, 10, 3))), is_shaped_input(np.zeros((4, 3)))
    (True, False)
    """
    return len(getattr(X, "shape", ())) >= 3


def cell_names(shape: tuple[int, ...], feature_names: list[str] | None = None) -> list[str]:
    """One name per cell of an input of ``shape``: ``t{step}:{feature}`` for (time, features), else the index.

    Examples
    --------
    >>> cell_names((2, 2), ["a", "b"])
    ['t0:a', 't0:b', 't1:a', 't1:b']
    >>> cell_names((1, 2, 2))[:2]
    ['[0,0,0]', '[0,0,1]']
    """
    if len(shape) == 2:
        feats = feature_names or [f"f{j}" for j in range(shape[1])]
        return [f"t{t}:{feats[j]}" for t in range(shape[0]) for j in range(shape[1])]
    return ["[" + ",".join(map(str, idx)) + "]" for idx in np.ndindex(*shape)]


def is_structured(groups: Any, shape: tuple[int, ...]) -> bool:
    """Whether ``groups`` is one :func:`input_groups` reads (None, a name, a window, labels shaped like an input)
    rather than lists of flat cell positions.

    Examples
    --------
    >>> is_structured("time", (5, 3)), is_structured([[0, 1], [2]], (3,))
    (True, False)
    """
    return groups is None or isinstance(groups, str) or (isinstance(groups, tuple) and len(groups) == 2 and
                                                          groups[0] == "time") or \
        len(getattr(groups, "shape", ())) == len(shape)


def input_groups(groups: Any, shape: tuple[int, ...], feature_names: list[str] | None = None
                 ) -> tuple[np.ndarray, list[str]] | None:
    """Players of an input of ``shape`` as integer labels of its cells (shape ``shape``) and their names; None
    for one player per cell.

    Parameters
    ----------
    groups : None; ``"time"`` (one player per step: axis 0), ``"features"`` (one per channel: the last axis),
        ``("time", w)`` (windows of ``w`` steps), or integer labels shaped like one input.
    shape : one input's shape (without the rows)
    feature_names : names of the last axis's channels

    Examples
    --------
    >>> labels, names = input_groups(("time", 2), (5, 3))
    >>> labels[:, 0].tolist(), names
    ([0, 0, 1, 1, 2], ['t0-1', 't2-3', 't4'])
    >>> input_groups("features", (5, 3), ["a", "b", "c"])[1]
    ['a', 'b', 'c']
    """
    if groups is None:
        return None
    steps = shape[0]
    if isinstance(groups, str) or isinstance(groups, tuple) and len(groups) == 2 and groups[0] == "time":
        if groups == "time" or isinstance(groups, tuple):
            width = 1 if groups == "time" else groups[1]
            if not isinstance(width, (int, np.integer)) or isinstance(width, bool) or width < 1:
                raise ValueError(f"groups=('time', w) needs a window of w >= 1 steps, got {width!r}")
            if width > steps:
                raise ValueError(f"groups=('time', {width}): the window is longer than the inputs' {steps} steps "
                                 f"(one player would hold them all); use a window of at most {steps} steps")
            step_label = np.arange(steps) // int(width)
            labels = np.broadcast_to(step_label.reshape((steps,) + (1,) * (len(shape) - 1)), shape)
            names = [f"t{a}" if min(a + int(width), steps) - a == 1 else f"t{a}-{min(a + int(width), steps) - 1}"
                     for a in range(0, steps, int(width))]
            return np.ascontiguousarray(labels, dtype=np.int64), names
        if groups == "features":
            if len(shape) < 2:
                raise ValueError("groups='features' needs inputs of at least 2 dimensions (time, features)")
            labels = np.broadcast_to(np.arange(shape[-1]), shape)
            names = list(feature_names) if feature_names else [f"f{j}" for j in range(shape[-1])]
            return np.ascontiguousarray(labels, dtype=np.int64), names
        raise ValueError(f"groups for inputs of shape {shape} must be 'time', 'features', ('time', w) or integer "
                         f"labels shaped {shape}, got {groups!r}")
    labels = np.asarray(groups.detach().cpu() if hasattr(groups, "detach") else groups)
    if labels.shape != tuple(shape) or labels.dtype.kind not in "iu":
        raise ValueError(f"groups for inputs of shape {shape} must be 'time', 'features', ('time', w) or integer "
                         f"labels shaped {shape}, got an array of shape {labels.shape} and dtype {labels.dtype}")
    uniq, inverse = np.unique(labels, return_inverse=True)
    return inverse.reshape(shape).astype(np.int64), [f"g{u}" for u in uniq.tolist()]


def check_finite_inputs(X: Any, name: str, allow_nan: bool = False) -> None:
    """Refuse, before any model call, inputs (arrays or tensors of any shape, first axis the inputs) holding an
    infinite value, or NaN unless ``allow_nan``, naming the argument, the input and the cell.

    Examples
    --------
    >>> X = np.zeros((3, 4, 2)); X[2, 1, 0] = np.nan
    >>> check_finite_inputs(X, "X")
    Traceback (most recent call last):
    ...
    ValueError: X holds NaN in input 2 at cell (1, 0): the model cannot take it; replace it or drop the input
    """
    if hasattr(X, "detach"):                              # a tensor: checked where it lives
        import torch

        if not torch.is_floating_point(X) and not torch.is_complex(X):
            return
        bad = torch.isinf(X) if allow_nan else ~torch.isfinite(X)
        if not bool(bad.any()):
            return
        flat = int(torch.nonzero(bad.reshape(-1))[0, 0])
        value = float(X.reshape(-1)[flat])
        shape = tuple(X.shape)
    else:
        arr = np.asarray(X)
        if arr.dtype.kind not in "fc":
            return
        bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
        if not bad.any():
            return
        flat = int(np.flatnonzero(bad)[0])
        value = float(arr.reshape(-1)[flat])
        shape = arr.shape
    where = np.unravel_index(flat, shape)
    what = "NaN" if np.isnan(value) else "inf" if value > 0 else "-inf"
    cell = ", ".join(str(int(i)) for i in where[1:])
    raise ValueError(f"{name} holds {what} in input {int(where[0])} at cell ({cell}): the model cannot take it; "
                     "replace it or drop the input")


def flat_rows(X: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Inputs of ``shape`` as rows of cells ``(rows, prod(shape))``; one input without the rows axis is one row.

    Examples
    --------
    >>> flat_rows(np.zeros((2, 3)), (2, 3), "background").shape
    (1, 6)
    """
    arr = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=float)
    if arr.shape == tuple(shape):
        arr = arr[None]
    if arr.shape[1:] != tuple(shape):
        raise ValueError(f"{what} must hold inputs shaped like those of X {tuple(shape)}, got {arr.shape}")
    return arr.reshape(arr.shape[0], -1)


def flat_predict(predict: Any, shape: tuple[int, ...]) -> Any:
    """``predict`` of inputs of ``shape``, called with rows of cells (reshaped back before the call).

    Examples
    --------
    >>> f = flat_predict(lambda X: X.sum(axis=(1, 2)), (2, 3))
    >>> f(np.ones((4, 6))).tolist()
    [6.0, 6.0, 6.0, 6.0]
    """
    def predict_cells(rows: Any) -> np.ndarray:
        return predict(np.asarray(rows, dtype=float).reshape((-1,) + tuple(shape)))

    predict_cells.__name__ = getattr(predict, "__name__", "predict")
    return predict_cells
