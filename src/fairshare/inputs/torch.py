"""Inputs of any shape for a torch module (images, sequences, rows as tensors): one
:class:`~fairshare.games.TorchGame` per input, on the module's device (tensors end to end on a GPU), the module in
eval mode during the run (each layer's mode restored after; a warning when BatchNorm or dropout was training); the
background is a number, one input, or a batch of inputs averaged over."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..games.base import Game
from ..games.model import feature_groups
from ..games.torch_game import TorchGame
from ..games.torch_modes import warn_training
from .base import Input
from .cells import is_shaped_input
from .image_parts import check_channels, first_sees_input
from .sequence import check_shaped, shaped_groups

__all__ = ["TorchInput", "is_torch_module"]


def is_torch_module(model: Any) -> bool:
    """Whether ``model`` is a torch module (or a module-like object from ``torch.nn``)."""
    return hasattr(model, "forward") and hasattr(model, "parameters") and type(model).__module__.startswith("torch") \
        or any(c.__module__.startswith("torch.nn") for c in type(model).__mro__)


def _row_players(groups: Any, feature_names: Any, n_features: int) -> tuple[Any, list[str]]:
    """The groups (lists of feature positions, or None: one player per feature) and the players' names of rows of
    ``n_features`` features, as the table door reads ``groups`` and ``feature_names``."""
    names = [str(f) for f in feature_names] if feature_names is not None else [f"x{j}" for j in range(n_features)]
    if len(names) != n_features:
        raise ValueError(f"feature_names must have {n_features} names, got {len(names)}")
    lists, player_names = feature_groups(groups, names)
    return (None if groups is None else lists), player_names


class TorchInput(Input):
    """A batch of inputs ``(n, *shape)`` for a torch module, each explained by a TorchGame.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(6, 1))
    >>> TorchInput.accepts(net, torch.ones(2, 2, 3), None), TorchInput.accepts(net, torch.ones(2, 6), torch.ones(5, 6))
    (True, False)
    """

    kind = "torch"
    noun = "input"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        """A torch module and a tensor (or array) of more than two dimensions, or a tensor of rows with at most one
        baseline (a number, a single input, or nothing)."""
        if not is_torch_module(model):
            return False
        ndim = len(getattr(X, "shape", ()))
        if ndim > 2:
            return True
        single = background is None or np.ndim(background) == 0 or (hasattr(background, "shape") and
                                                                     len(background.shape) == 1)
        return ndim == 2 and type(X).__module__.startswith("torch") and single

    @classmethod
    def takes_rows_for_gradients(cls, model: Any, X: Any, args: dict) -> bool:
        """Rows (an array or tensor of two dimensions, not a frame) of a torch module asked for a gradient method with
        none of the table door's own arguments (imputation, model_output, y, link): read here, where the game gives
        gradients, whatever their background (the table door's games give none).

        Examples
        --------
        >>> import torch
        >>> net, args = torch.nn.Linear(3, 1), {"method": "gradient-shap", "imputation": None}
        >>> TorchInput.takes_rows_for_gradients(net, np.ones((2, 3)), args)
        True
        """
        from ..engine.registry import get_method, method_names

        method = args.get("method")
        return is_torch_module(model) and len(getattr(X, "shape", ())) == 2 and not hasattr(X, "columns") and \
            all(args.get(name) is None for name in ("imputation", "model_output", "y")) and \
            args.get("link", "identity") == "identity" and method in method_names() and \
            "gradient" in get_method(method).requires

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        check_shaped(model, X, background)
        if first_sees_input(model):            # a forward of its own may reshape X first (x.unsqueeze(1)): then torch
            check_channels(model, X)           # says what its first layer could not take
        self.model, self.X, self.batch_size = model, X, args["batch_size"]
        self.shape = tuple(int(d) for d in X.shape[1:]) if is_shaped_input(X) else None
        groups, self.grouped, self.player_names = args["groups"], None, None
        if self.shape is not None:
            self.grouped, _, self.player_names = shaped_groups(groups, self.shape, args["feature_names"])
            groups = groups if self.player_names is None else None if self.grouped is None else self.grouped[0]
        else:                                  # rows: features named and grouped as the table door does
            groups, self.player_names = _row_players(groups, args["feature_names"], int(X.shape[1]))
        self.groups = groups
        self.n_items = int(X.shape[0])
        if self.n_items == 0:
            raise ValueError("X holds no inputs to explain")
        self.baseline = self._baseline(X, background)
        self.item_names = [str(i) for i in range(self.n_items)]
        warn_training(model)

    @staticmethod
    def _baseline(X: Any, background: Any) -> Any:
        baseline = 0.0 if background is None else background
        shape, given = tuple(X.shape[1:]), tuple(getattr(baseline, "shape", np.shape(baseline)))
        if given and given != shape and not (len(given) == len(shape) + 1 and given[1:] == shape and given[0] > 0):
            raise ValueError(f"background must be a number, one input shaped {shape} or a batch of inputs "
                             f"(B, {', '.join(map(str, shape))}), got an array of shape {given}")
        if hasattr(baseline, "shape") and len(baseline.shape) == len(X.shape) and baseline.shape[0] == 1:
            baseline = baseline[0]
        return baseline

    def game(self, i: int) -> Game:
        return TorchGame(self.model, self.X[i], baseline=self.baseline, groups=self.groups,
                         batch_size=self.batch_size, player_names=self.player_names, eval_mode=True)

    def key(self) -> tuple[tuple, dict]:
        return (self.X, self.baseline), dict(groups=repr(self.groups), names=self.player_names)

    def item_data(self, i: int) -> Any:
        return self.X[i]

    def info(self) -> dict:
        shape = tuple(getattr(self.baseline, "shape", ()))
        batch = len(shape) == len(self.X.shape)
        out = {"model_output": "torch module outputs", "input_shape": list(self.X.shape[1:]),
               "imputation": f"marginal (the mean over {shape[0]} background inputs)" if batch else "baseline"}
        if self.shape is not None:
            out["input_groups"] = None if self.grouped is None else self.grouped[0].tolist()
        return out
