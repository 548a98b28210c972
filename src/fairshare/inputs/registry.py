"""The input kinds ``fs.explain`` reads, asked in order: the first that accepts the data reads it. A new kind is
one module in ``inputs/`` and one line here."""

from __future__ import annotations

from typing import Any

from .base import Input
from .frame import FrameInput
from .image import IMAGE_ARGUMENTS, ImageInput
from .game import GameInput
from .pipeline import PipelineInput
from .sequence import SequenceInput
from .sparse import SparseInput
from .table import TableInput
from .text import TextInput
from .torch import TorchInput

__all__ = ["KINDS", "read_input", "register"]

#: the kinds, most specific first (a Game with no X is explained as it is; TableInput takes any table)
KINDS: list[type[Input]] = [GameInput, TextInput, ImageInput, TorchInput, SequenceInput, SparseInput, PipelineInput,
                            FrameInput, TableInput]


def register(kind: type[Input], before: type[Input] | None = None) -> type[Input]:
    """Add an input kind (before ``before``, default: before the catch-all :class:`~.table.TableInput`).

    Examples
    --------
    >>> class Nothing(TableInput):
    ...     @classmethod
    ...     def accepts(cls, model, X, background):
    ...         return False
    >>> _ = register(Nothing); KINDS.remove(Nothing)
    """
    if kind not in KINDS:
        KINDS.insert(KINDS.index(before if before is not None else TableInput), kind)
    return kind


def read_input(model: Any, X: Any, background: Any, args: dict) -> Input:
    """The data read by the first kind that accepts it: checked, its players known, before any model call.

    Examples
    --------
    >>> import numpy as np
    >>> args = {"imputation": None, "groups": None, "batch_size": None, "feature_names": None, "model_output": None,
    ...         "y": None, "link": "identity", "tokenizer": None, "mask_token": None}
    >>> read_input(lambda A: A.sum(axis=1), np.ones((2, 3)), np.zeros((1, 3)), args).kind
    'table'
    """
    kind = next(k for k in KINDS if k.accepts(model, X, background))
    if not issubclass(kind, TorchInput) and TorchInput.takes_rows_for_gradients(model, X, args):
        kind = TorchInput                                 # rows with a background batch: gradients of the module
    if kind is not TextInput and (args.get("tokenizer") is not None or args.get("mask_token") is not None):
        raise ValueError("tokenizer and mask_token are for texts; X holds no texts")
    given = [name for name in IMAGE_ARGUMENTS if args.get(name) is not None]
    if kind is not ImageInput and given:
        raise ValueError(f"{', '.join(given)}: for images (a torch module and images (N, C, H, W)); X is read as "
                         f"{kind.kind} data")
    if args.get("batch_size") == "auto" and not issubclass(kind, TorchInput):
        args = {**args, "batch_size": None}            # 'auto' fits a device's memory; other kinds: their default
    return kind(model, X, background, args)
