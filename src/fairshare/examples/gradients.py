"""Per-example gradients of a torch module, streamed in batches (``torch.func``: ``vmap`` of ``grad``) and
projected on the fly (:class:`~fairshare.examples.projection.GradientProjector`): the ``n x P`` gradient matrix
never exists, only one batch of it, whose size is bounded by :data:`GRADIENT_BYTES`."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from .projection import GradientProjector
from .rows import check_rows, host_array, resolve_seed

__all__ = ["torch_embedding", "chosen_parameters", "evaluating", "as_inputs", "GRADIENT_BYTES"]

#: most bytes of per-example gradients held at once (a batch of ``b`` examples of ``P`` parameters holds about
#: ``3 b P`` numbers while ``vmap`` computes it)
GRADIENT_BYTES = 256 * 2**20


def chosen_parameters(model: Any, layers: Any) -> tuple[dict, dict]:
    """The parameters to differentiate (``layers``: None for every one that requires a gradient, or names of
    submodules or parameters) and the others, held fixed; names that are neither are refused.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    >>> free, fixed = chosen_parameters(net, ["1"])
    >>> sorted(free), sorted(fixed)
    (['1.bias', '1.weight'], ['0.bias', '0.weight'])
    """
    params = {k: v.detach() for k, v in model.named_parameters()}
    trainable = {k for k, v in model.named_parameters() if v.requires_grad}
    if layers is None:
        chosen = trainable
    else:
        names = [layers] if isinstance(layers, str) else list(layers)
        modules = {name for name, _ in model.named_modules() if name}
        unknown = [n for n in names if not isinstance(n, str) or (n not in modules and n not in params)]
        if unknown or not names:
            raise ValueError(f"layers must name submodules or parameters of the model; unknown: {unknown[:5] or names}"
                             f" (some of: {sorted(modules)[:8]})")
        chosen = {k for k in params for n in names if k == n or k.startswith(n + ".")}
    if not chosen & trainable:
        raise ValueError("model: no parameter requires a gradient" + ("" if layers is None else f" in layers {layers}"))
    free = {k: v for k, v in params.items() if k in chosen and k in trainable}
    return free, {k: v for k, v in params.items() if k not in free}


@contextlib.contextmanager
def evaluating(model: Any) -> Iterator[None]:
    """``model`` in eval mode (dropout off, batch norm's running statistics) while the block runs, then as it was:
    gradients and Hessians are of the model as it predicts.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Dropout(0.5).train()
    >>> with evaluating(net):
    ...     inside = net.training
    >>> inside, net.training
    (False, True)
    """
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def as_inputs(X: Any, like: Any) -> Any:
    """``X`` as a tensor on ``like``'s device, floats in ``like``'s dtype, integers (token ids) left integers.

    Examples
    --------
    >>> import torch
    >>> as_inputs(np.array([[1, 2]]), torch.zeros(1)).dtype, as_inputs(np.array([[0.5]]), torch.zeros(1)).dtype
    (torch.int64, torch.float32)
    """
    import torch

    inputs = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(getattr(X, "values", X)))
    return inputs.to(like.device, like.dtype if inputs.is_floating_point() else None)


def _loglik(model: Any, fixed: dict, log_likelihood: Any) -> Any:
    import torch
    from torch.func import functional_call

    def loglik(p: dict, x: Any, target: Any) -> Any:
        out = functional_call(model, {**fixed, **p}, (x.unsqueeze(0),)).squeeze(0)
        if log_likelihood is not None:
            return log_likelihood(out, target)
        if out.ndim >= 1 and out.shape[-1] > 1:
            onehot = (torch.arange(out.shape[-1], device=out.device) == target.long()).to(out.dtype)
            return (torch.log_softmax(out, dim=-1) * onehot).sum()
        return -0.5 * (out.reshape(()) - target.to(out.dtype)) ** 2

    return loglik


def _labels(model: Any, inputs: Any, y: Any, log_likelihood: Any, first: Any) -> np.ndarray:
    """``y`` as numbers, refused (naming it) before any gradient where it is not one finite label per row, or, for
    the default log-likelihood of a model of several outputs (its classes), where a label is not a class index
    (one forward pass of the first example tells the number of classes)."""
    import torch

    check_rows(inputs, y, "X", "y", one_label=log_likelihood is None)
    labels = host_array(y)
    if labels.dtype.kind not in "biuf":
        raise TypeError(f"y must hold numbers (class indices or targets), got dtype {labels.dtype}")
    if log_likelihood is None:
        with torch.no_grad(), evaluating(model):
            out = model(as_inputs(inputs[:1], first)).squeeze(0)
        classes = int(out.shape[-1]) if out.ndim >= 1 and out.shape[-1] > 1 else 0
        bad = (labels != np.round(labels)) | (labels < 0) | (labels >= classes) if classes else np.zeros(0, bool)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"y holds {labels[row]:g} at row {row}: the model's {classes} outputs are classes, so "
                             f"every label must be a class index in 0..{classes - 1}")
    return labels


def torch_embedding(model: Any, X: Any, y: Any, *, log_likelihood: Any = None, projection: int | None = None,
                    seed: int | np.random.Generator | None = 0, batch_size: int = 256, kind: str = "gaussian",
                    layers: Any = None) -> np.ndarray:
    """Per-example log-likelihood gradients of a torch module at its parameters, ``(n, P)`` or projected
    ``(n, projection)``; :func:`fairshare.examples.fisher_embedding` for torch modules.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2).double()
    >>> X = np.random.default_rng(0).normal(size=(10, 3)); y = np.arange(10) % 2
    >>> torch_embedding(net, X, y).shape, torch_embedding(net, X, y, projection=4, kind="countsketch").shape
    ((10, 8), (10, 4))
    """
    import torch
    from torch.func import grad, vmap

    free, fixed = chosen_parameters(model, layers)
    names = list(free)
    n_params = int(sum(free[k].numel() for k in names))
    first = next(iter(free.values()))
    inputs = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(getattr(X, "values", X)))
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    projector = None if projection is None else GradientProjector(n_params, projection, kind, resolve_seed(seed),
                                                                  first.device, first.dtype)
    labels = _labels(model, inputs, y, log_likelihood, first)
    step = int(max(1, min(batch_size, GRADIENT_BYTES // (3 * n_params * first.element_size()))))
    per_example = vmap(grad(_loglik(model, fixed, log_likelihood)), in_dims=(None, 0, 0))
    blocks = []
    with evaluating(model):
        for start in range(0, int(inputs.shape[0]), step):
            xb = as_inputs(inputs[start:start + step], first)
            yb = torch.as_tensor(labels[start:start + step], device=first.device)
            g = per_example(free, xb, yb)
            if projector is None:
                blocks.append(torch.cat([g[k].reshape(g[k].shape[0], -1) for k in names], 1).double().cpu().numpy())
                continue
            out, offset = None, 0
            for k in names:
                part = projector(g[k].reshape(g[k].shape[0], -1), offset)
                out = part if out is None else out + part
                offset += free[k].numel()
            blocks.append(out.double().cpu().numpy())
            del g
    return np.concatenate(blocks)
