"""What a model costs per input row, predicted from what the model object holds (never timed).

The method choice (:mod:`fairshare.engine.choice`) spends extra work on a game only where that
work stays a small share of the game's own cost; games tell their cost with ``Game.cost()``, built
from these predictions. They come from a fixed cost model so that the same arguments give the same
choice in every run, process and worker: the work of one row (tree levels walked, multiply-adds,
kernel evaluations) times a unit cost, plus the handling of the row's cells. The unit costs were
measured once on the 2-core machine the benchmarks run on (``fairshare bench auto`` prints the
predictions next to measured times); they are meant to be right within a few times, which is all
the choice needs.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..trees.readers import tree_levels

__all__ = ["CALL_SECONDS", "row_seconds", "fit_seconds", "torch_row_seconds", "torch_macs", "table_seconds",
           "CELL_SECONDS"]

#: one call of a model object (a library's input checks, a frame, a DMatrix): measured 5-10 ms for one row through a
#: ColumnTransformer pipeline on a frame and through xgboost's predict_proba on the 2-core machine; a function 0
CALL_SECONDS = 5e-3
#: handling one input cell (building a DataFrame, validating, converting): per row and feature
CELL_SECONDS = 30e-9
#: a string (or other object) cell: pandas and encoders handle them one by one
STRING_CELL_SECONDS = 250e-9
_LEVEL_SECONDS = 1.2e-9          # one tree level walked by a compiled predictor
_FLOP_SECONDS = 0.3e-9           # one multiply-add in a vectorized library
_TORCH_FLOP_SECONDS = 0.08e-9    # one multiply-add of a torch layer on a batch (measured: 0.5 us a row for 6,500)
_TORCH_GPU_FLOP_SECONDS = 3.5e-14   # ... on a GPU (measured: ResNet-50 on an H200, 4.09e9 a row in 1.43e-4 s)
_KERNEL_SECONDS = 2.0e-9         # one feature of one kernel evaluation (SVM)
_FIT_OVERHEAD = 2e-3             # a scikit-learn fit and score on a few rows
_TABLE_NODE_SECONDS = 20e-9      # one node of the joint walk of x and a background row (measured 8-22 ns, deep trees)
_TABLE_ADD_SECONDS = 1.5e-9      # one addition of the subset-sum transform, per output (measured 0.9-1.8 ns)
_TABLE_LINK_SECONDS = 5e-9       # the link (logistic, softmax) of one coalition's margin, per output


def _target(model: Any) -> Any:
    """The object behind a bound method (``model.predict_proba`` -> ``model``)."""
    return getattr(model, "__self__", model) if inspect.ismethod(model) else model


def _work_seconds(model: Any, n_features: int) -> float:
    """Seconds of computation one row costs in ``model`` (its cells' handling not included)."""
    model = _target(model)
    steps = getattr(model, "steps", None)
    if steps is not None:                                          # a Pipeline: its steps in turn
        return sum(_work_seconds(step, n_features) for _, step in steps if step not in (None, "passthrough"))
    transformers = getattr(model, "transformers_", None)
    if transformers is not None:                                   # a ColumnTransformer: a pass over the columns
        return sum(_work_seconds(t, n_features) for _, t, _ in transformers if not isinstance(t, str))
    levels = tree_levels(model)                                   # a tree ensemble: its library's reader says
    if levels is not None:
        return levels * _LEVEL_SECONDS
    if hasattr(model, "n_samples_fit_") and hasattr(model, "n_neighbors"):         # nearest neighbours
        return float(model.n_samples_fit_) * n_features * _FLOP_SECONDS
    if hasattr(model, "support_vectors_"):                                            # kernel machines
        return float(model.support_vectors_.size) * _KERNEL_SECONDS
    if hasattr(model, "coefs_"):                                                      # scikit-learn MLP
        return float(sum(np.size(c) for c in model.coefs_)) * _FLOP_SECONDS
    if hasattr(model, "coef_"):
        return float(np.size(model.coef_)) * _FLOP_SECONDS
    if hasattr(model, "parameters") and hasattr(model, "forward"):                   # a torch module
        return torch_row_seconds(model, None)
    return n_features * _FLOP_SECONDS                                                 # a function: unknown


def row_seconds(model: Any, n_features: int, n_strings: int = 0) -> float:
    """Predicted seconds one input row of ``n_features`` (``n_strings`` of them strings or categories) costs
    ``model`` (a fitted model, a bound method such as ``model.predict_proba``, a torch module or a function),
    its cells' handling included.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> model = LinearRegression().fit(np.eye(3), [0.0, 1.0, 2.0])
    >>> row_seconds(model, 3) < row_seconds(lambda X: X, 300)
    True
    """
    return ((n_features - n_strings) * CELL_SECONDS + n_strings * STRING_CELL_SECONDS
            + _work_seconds(model, n_features))


def torch_row_seconds(module: Any, input_shape: tuple[int, ...] | None, device: str = "cpu",
                      dtype: Any = None) -> float:
    """Predicted seconds of one input of ``input_shape`` (no batch dimension, of ``dtype``: float32 by default) in a
    torch module on ``device``: its multiply-adds, counted on meta tensors (shapes only, nothing computed:
    :func:`torch_macs`) times a unit cost, the CPU's or a GPU's. Where the module does not run on meta tensors, an
    upper bound: a linear layer's weights once and a convolution's at every position of the input's spatial grid
    (strides and pooling shrink later grids; 200x over on a ResNet-50).

    Measured on the 2-core CPU, counted against timed: ResNet-50 (width 8) 0.96x on 112 x 112 and 0.91x on
    224 x 224, a two-layer CNN 2x, a one-layer CNN 0.4x. On an H200, ResNet-50 (width 64, 224 x 224): 4.09e9
    multiply-adds a row in 1.43e-4 s.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(10, 4))
    >>> round(torch_row_seconds(net, (10,)) / 0.08e-9)
    40
    >>> conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1))
    >>> torch_macs(conv, (3, 32, 32))                     # 8 x 16 x 16 outputs, 27 multiply-adds each
    55296.0
    >>> bag = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Flatten(), torch.nn.Linear(7 * 8, 2))
    >>> torch_macs(bag, (7,), torch.long)                 # token ids: the input's own dtype
    112.0
    """
    macs = torch_macs(module, input_shape, dtype) if input_shape is not None else None
    if macs is None:
        spatial = float(np.prod(input_shape[1:])) if input_shape is not None and len(input_shape) > 1 else 1.0
        macs = 0.0
        for layer in module.modules():
            if any(True for _ in layer.children()):
                continue                                           # containers: their layers are counted
            size = float(sum(p.numel() for p in layer.parameters(recurse=False)))
            macs += size * (spatial if "Conv" in type(layer).__name__ else 1.0)
    return macs * (_TORCH_GPU_FLOP_SECONDS if str(device).startswith("cuda") else _TORCH_FLOP_SECONDS)


def torch_macs(module: Any, input_shape: tuple[int, ...], dtype: Any = None) -> float | None:
    """Multiply-adds of one input of ``input_shape`` in ``module``: a forward pass of two inputs on meta tensors (the
    module's parameters and buffers replaced by empty ones of the same shapes; nothing is computed or copied), each
    convolution, linear layer, recurrent layer and attention counted from the shapes it sees; None where the module
    does not run so (TorchScript, data-dependent steps) or holds none of those layers.

    Examples
    --------
    >>> import torch
    >>> torch_macs(torch.nn.Sequential(torch.nn.Linear(10, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)), (10,))
    44.0
    """
    total = [0.0]

    def count(layer: Any, inputs: tuple, output: Any) -> None:
        total[0] += _layer_macs(layer, inputs, output)

    if _meta_forward(module, input_shape, dtype, count) is None:
        return None
    return total[0] / 2.0 if total[0] > 0 else None


def meta_outputs(module: Any, input_shape: tuple[int, ...], dtype: Any = None) -> int | None:
    """The number of outputs ``module`` gives per input of ``input_shape`` (its output's elements per row), from a
    forward pass on meta tensors (shapes only: nothing is computed, no model call); None where the module does not
    run so (TorchScript, data-dependent steps).

    Examples
    --------
    >>> import torch
    >>> meta_outputs(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 5)), (3, 2, 2))
    5
    """
    out = _meta_forward(module, input_shape, dtype)
    return None if out is None or out.ndim == 0 else int(out[0].numel())


def _meta_forward(module: Any, input_shape: tuple[int, ...], dtype: Any = None, hook: Any = None) -> Any:
    """The module's output for two inputs of ``input_shape`` on meta tensors (its parameters and buffers replaced by
    empty ones of the same shapes; nothing is computed or copied), ``hook`` on each counted layer; None where the
    module does not run so or gives no tensor."""
    import warnings

    import torch

    hooks = []
    try:
        state = {name: torch.empty_like(t, device="meta") for name, t in
                 list(module.named_parameters()) + list(module.named_buffers())}
        if hook is not None:
            hooks = [m.register_forward_hook(hook) for m in module.modules() if _counted(m)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = torch.empty((2,) + tuple(input_shape), device="meta", dtype=dtype or torch.float32)
            out = torch.func.functional_call(module, state, (x,))
    except Exception:  # noqa: BLE001 - a module that cannot run on meta tensors: the caller's fallback
        return None
    finally:
        for h in hooks:
            h.remove()
    return out if torch.is_tensor(out) else None


def _counted(layer: Any) -> bool:
    import torch

    nn = torch.nn
    return isinstance(layer, (nn.modules.conv._ConvNd, nn.Linear, nn.Bilinear, nn.RNNBase, nn.MultiheadAttention))


def _layer_macs(layer: Any, inputs: tuple, output: Any) -> float:
    """One layer's multiply-adds for the shapes it saw (:func:`torch_macs`)."""
    import torch

    nn = torch.nn
    out = output[0] if isinstance(output, tuple) else output
    if isinstance(layer, nn.modules.conv._ConvNd):
        kernel = float(np.prod(layer.kernel_size)) * layer.in_channels / layer.groups
        if layer.transposed:                               # each input element spreads over the kernel
            return float(inputs[0].numel()) * kernel * layer.out_channels / layer.in_channels
        return float(out.numel()) * kernel
    if isinstance(layer, nn.Linear):
        return float(out.numel()) * layer.in_features
    if isinstance(layer, nn.Bilinear):
        return float(out.numel()) * layer.in1_features * layer.in2_features
    if isinstance(layer, nn.RNNBase):                      # per step, direction and layer: gates x hidden x inputs
        gates, hidden = {"LSTM": 4, "GRU": 3}.get(layer.mode, 1), layer.hidden_size
        dirs = 2 if layer.bidirectional else 1
        steps = float(inputs[0].numel()) / inputs[0].shape[-1]
        widths = [layer.input_size] + [hidden * dirs] * (layer.num_layers - 1)
        return steps * dirs * sum(gates * hidden * (w + hidden) for w in widths)
    q = inputs[0]                                          # attention: projections and the scores of each query
    length = q.shape[1] if layer.batch_first and q.dim() == 3 else q.shape[0]
    tokens = float(q.numel()) / layer.embed_dim
    return tokens * (4.0 * layer.embed_dim ** 2 + 2.0 * length * layer.embed_dim)


def fit_seconds(model: Any, n_rows: int, n_features: int, n_val: int) -> float:
    """Predicted seconds of one fit of ``model`` on ``n_rows`` rows and its score on ``n_val`` rows (a data-valuation
    game's evaluation): a fixed overhead plus a pass over the data per unit of the model's prediction work, at
    least ten passes (an iterative fit).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> fit_seconds(LogisticRegression(), 100, 5, 50) > 1e-3
    True
    """
    per_row = max(_work_seconds(model, n_features), n_features * _FLOP_SECONDS)
    return _FIT_OVERHEAD + (10 * n_rows + n_val) * (per_row + n_features * CELL_SECONDS)


def table_seconds(n_players: int, n_background: int, n_outputs: int, n_nodes: int) -> float:
    """Predicted seconds of the table of every coalition's value of an interventional tree game with a link
    (:func:`fairshare.trees.tabulate.interventional_table`): per background row, one joint walk over at most every
    node of the ensemble, ``n 2^n`` subset-sum additions and ``2^n`` links per margin output. Measured on the
    benchmark machine within 2x (12-16 features, 40-500 trees): 0.2 ms per background row at 12 features, 1-6 ms at
    16.

    Examples
    --------
    >>> round(table_seconds(12, 40, 1, 600) * 1e3, 1)       # milliseconds: 12 features, 40 background rows
    4.2
    """
    cells = 2.0 ** n_players
    per_row = n_nodes * _TABLE_NODE_SECONDS + cells * n_outputs * (n_players * _TABLE_ADD_SECONDS + _TABLE_LINK_SECONDS)
    return n_background * per_row
