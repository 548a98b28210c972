"""Inputs of more than one dimension each (sequences ``(rows, time, features)``, images as arrays) for any model that
is not a torch module: every cell (or group of cells: time steps, windows, channels, labels) is a player, the model
is called on inputs of their own shape, the background averaged as for tables."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.missing import accepts_missing
from ..games.model import as_predict
from .cells import (cell_names, check_finite_inputs, flat_predict, flat_rows, input_groups, is_shaped_input,
                    is_structured)
from .table import TableInput

__all__ = ["SequenceInput", "shaped_groups", "check_shaped"]


def shaped_groups(groups: Any, shape: tuple[int, ...], feature_names: Any) -> tuple[Any, Any, list[str] | None]:
    """``groups`` of inputs of ``shape`` read: (labels and names of the players, or None; what the game takes as
    groups; the players' names, None for lists of cell positions).

    Examples
    --------
    >>> grouped, cells, names = shaped_groups("time", (3, 2), None)
    >>> names, cells
    (['t0', 't1', 't2'], {'t0': [0, 1], 't1': [2, 3], 't2': [4, 5]})
    """
    if not is_structured(groups, shape):
        return None, groups, None
    grouped = input_groups(groups, shape, feature_names)
    if grouped is None:
        return None, None, cell_names(shape, feature_names)
    cells = {name: np.flatnonzero(grouped[0].ravel() == g).tolist() for g, name in enumerate(grouped[1])}
    return grouped, cells, grouped[1]


def check_shaped(model: Any, X: Any, background: Any) -> None:
    """No NaN (unless the model takes it) or inf in shaped inputs or their background, before any model call."""
    allow_nan = accepts_missing(model) is True
    check_finite_inputs(X, "X", allow_nan)
    if background is not None and np.ndim(background) > 0:
        single = len(getattr(background, "shape", np.shape(background))) == len(X.shape) - 1
        check_finite_inputs(background[None] if single and hasattr(background, "detach") else
                            np.asarray(background)[None] if single else background, "background", allow_nan)


class SequenceInput(TableInput):
    """Inputs of shape ``(rows, *shape)`` as rows of cells: the players are cells ``t{step}:{feature}`` (or the
    groups of ``groups=``), the model sees inputs of their own shape.

    Examples
    --------
    >>> X = np.arange(12.0).reshape(2, 3, 2)
    >>> SequenceInput(lambda A: A.sum(axis=(1, 2)), X, X[:1] * 0, {"imputation": None, "groups": "time",
    ...     "batch_size": None, "feature_names": None, "model_output": None, "y": None, "link": "identity"}).n_items
    2
    """

    kind = "sequences"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return is_shaped_input(X)

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        self.shape = tuple(int(d) for d in X.shape[1:])
        check_shaped(model, X, background)
        self.grouped, cells, _ = shaped_groups(args["groups"], self.shape, args["feature_names"])
        flat = None if background is None else flat_rows(background, self.shape, "background")
        super().__init__(flat_predict(as_predict(model), self.shape), flat_rows(X, self.shape, "X"), flat,
                         {**args, "groups": cells, "feature_names": cell_names(self.shape, args["feature_names"])})
        self.named_by = model

    def output_model(self) -> Any:
        return self.named_by

    def info(self) -> dict:
        return {**super().info(), "input_shape": list(self.shape),
                "input_groups": None if self.grouped is None else self.grouped[0].tolist()}
