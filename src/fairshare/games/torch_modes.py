"""A torch module's modes while it is explained: eval mode during every evaluation (BatchNorm's running statistics, no
dropout), each layer's own mode restored after, and a warning naming the layers that were training."""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any, Iterator

from .._core.errors import FairshareWarning

__all__ = ["eval_modes", "training_layers", "warn_training"]

#: layers whose outputs depend on their mode (train or eval)
_MODAL = ("BatchNorm", "InstanceNorm", "Dropout")


@contextmanager
def eval_modes(module: Any) -> Iterator[None]:
    """``module`` in eval mode inside (BatchNorm's running statistics, no dropout), each of its submodules' own mode
    restored after; nothing changes for None or a function.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Dropout(0.5).eval())
    >>> with eval_modes(net):
    ...     inside = [m.training for m in net.modules()]
    >>> inside, [m.training for m in net.modules()]
    ([False, False, False], [True, True, False])
    """
    if not hasattr(module, "modules"):
        yield
        return
    saved = [(m, m.training) for m in module.modules()]
    for m, _ in saved:                  # as module.eval() does (which a torch.export program refuses)
        m.training = False
    try:
        yield
    finally:
        for m, training in saved:
            m.training = training


def training_layers(model: Any) -> list[str]:
    """The names of the model's layers in train mode whose outputs depend on it (BatchNorm, dropout; a scripted
    module's layers by their original names; an exported program has none: its mode is fixed when exported).

    Examples
    --------
    >>> import torch
    >>> training_layers(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)))
    ['1']
    """
    layers = model.named_modules() if hasattr(model, "named_modules") else ()
    return [name or type(m).__name__ for name, m in layers if getattr(m, "training", False) and
            any(k in getattr(m, "original_name", type(m).__name__) for k in _MODAL)]


def warn_training(model: Any, stacklevel: int = 5) -> None:
    """A warning, where the model has layers in train mode (:func:`training_layers`), that it is explained in eval
    mode, each layer's mode restored after every batch.

    Examples
    --------
    >>> import torch, warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_training(torch.nn.Sequential(torch.nn.Dropout(0.5)))
    >>> str(caught[0].message)[:44]
    'the model has layers in train mode (0): it i'
    """
    training = training_layers(model)
    if training:
        warnings.warn(f"the model has layers in train mode ({', '.join(training[:3])}): it is explained in eval "
                      "mode (BatchNorm's running statistics, no dropout), each layer's mode restored after every "
                      "batch", FairshareWarning, stacklevel=stacklevel)
