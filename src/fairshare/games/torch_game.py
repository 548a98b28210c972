"""TorchGame: a torch model explained at one input of any shape, on the model's device.

Players are the input's elements (pixels, channels, tokens' embeddings) or groups of them
(superpixels, patches, whole channels). A coalition keeps its players' elements from the input
and takes the others from the baseline. Coalitions given as a torch tensor stay on the device:
the masks, the masked inputs and the model's outputs never leave it, so an estimator that works
on tensors (fairshare's linear estimators do) runs end to end on a GPU.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from .base import Game, check_output_axes
from .cost import CELL_SECONDS, torch_row_seconds
from .torch_modes import eval_modes, warn_training

__all__ = ["TorchGame", "module_input", "takes_ids"]

_BATCH_ELEMENTS = 1 << 24          # input elements per forward pass by default on a GPU (64 MB of float32)
#: on the CPU: a batch whose activations stay in the processor's caches (1 MB of float32 inputs); per input, small
#: CNNs and a narrow ResNet-50 on 32 x 32 images ran 1.5-5x slower with 2^24 elements per pass, one thread
_CPU_BATCH_ELEMENTS = 1 << 18


def module_input(model: Any) -> tuple[Any, Any]:
    """``(dtype, device)`` a torch module's inputs are sent in: those of its first floating parameter or buffer (a
    float64 module takes float64 inputs, a module on a GPU takes them there); torch's default dtype and no device
    (None) where it has none.

    Examples
    --------
    >>> import torch
    >>> module_input(torch.nn.Linear(2, 1).double())
    (torch.float64, device(type='cpu'))
    >>> module_input(torch.nn.ReLU())
    (torch.float32, None)
    """
    import torch

    for t in list(model.parameters()) + list(getattr(model, "buffers", lambda: [])()):
        if t.is_floating_point():
            return t.dtype, t.device
    return torch.get_default_dtype(), None


def takes_ids(model: Any) -> bool:
    """Whether integer inputs of ``model`` are token ids (kept as integers): it holds an embedding; integers given to
    any other module are numbers (cast to its floating dtype).

    Examples
    --------
    >>> import torch
    >>> takes_ids(torch.nn.Sequential(torch.nn.Embedding(9, 2))), takes_ids(torch.nn.Linear(2, 1))
    (True, False)
    """
    import torch

    return hasattr(model, "modules") and any(isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))
                                             for m in model.modules())


class TorchGame(Game):
    """The outputs of ``module`` at ``x`` when only the players in ``S`` keep their values.

    Parameters
    ----------
    module : a torch module (or any callable on a batch of inputs) returning ``(batch,)`` or ``(batch, k)``
    x : the input to explain, without a batch dimension (tensor or array of any shape)
    baseline : what absent players take: a tensor or array shaped like ``x``, a number (default 0), or a batch of
        background inputs ``(B, *x.shape)``: then a coalition's value is the mean output over the batch, each
        background input filling the absent players (interventional, as ``ModelGame``'s marginal imputation)
    groups : players as groups of elements: an integer array shaped like ``x`` (a group label per element,
        e.g. superpixels) or a list of lists of flat element indices; default, every element is a player
    device : where the computation runs (default: the module's parameters' device, else ``x``'s)
    batch_size : most inputs per forward pass: an integer, None (about 16 million input elements on a GPU, 262,144
        on the CPU: a batch whose activations stay in the caches) or ``"auto"`` (on a GPU: fitted to the device's
        free memory from the first forward pass's peak; on the CPU: None's element budget)
    on_device : draw the coalitions and solve on ``device`` too (torch tensors end to end); default: when the
        device is a GPU (on the CPU numpy's packed iterative solver is faster)
    outputs : the model outputs the game keeps: None (all of them), an index (one output: a scalar game) or a list
        of indices
    eval_mode : whether the module runs in eval mode during every evaluation (BatchNorm's running statistics, no
        dropout), each of its submodules' own mode restored after; default None: eval mode, with a warning naming
        the layers that were training (in train mode a BatchNorm's output depends on the other inputs of its batch,
        so a coalition's value would depend on the batch it is evaluated in); False keeps the module's own modes

    Examples
    --------
    >>> import torch, fairshare as fs
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2))
    >>> g = fs.games.TorchGame(net, torch.ones(3, 2, 2), groups=torch.arange(3).repeat_interleave(4).reshape(3, 2, 2))
    >>> g.n_players, fs.exact(g, "shapley").values.shape
    (3, (3, 2))
    """

    kind = "torch"

    accepts_tensors = True

    #: called as ``on_batch(coalitions, values)`` after every forward pass of coalitions given as a numpy array,
    #: with that pass's coalitions and values: a cache keeps each batch as it comes
    on_batch: Any = None

    def __init__(self, module: Any, x: Any, baseline: Any = 0.0, groups: Any = None, device: Any = None,
                 batch_size: int | str | None = None, player_names: Any = None, on_device: bool | None = None,
                 outputs: Any = None, eval_mode: bool | None = None) -> None:
        import torch

        # the module's floating dtype (a float64 module takes float64 inputs) and device; float32 for a function
        dtype, own = module_input(module) if hasattr(module, "parameters") else (torch.float32, None)
        if device is None:
            device = own if own is not None else (x.device if torch.is_tensor(x) else "cpu")
        self.device = torch.device(device)
        self.on_device = self.device.type != "cpu" if on_device is None else bool(on_device)
        self.module = module
        raw = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x)
        ids = raw.dtype in (torch.int64, torch.int32) and takes_ids(module)     # token ids for an embedding stay ids
        dtype = raw.dtype if ids else dtype
        xt = raw.to(self.device, dtype)
        if xt.ndim == 0:
            raise ValueError("x must have at least one element dimension (no batch dimension)")
        try:
            if baseline is None or not torch.is_tensor(baseline) and np.asarray(baseline).dtype == object:
                raise TypeError("not numbers")
            base = torch.as_tensor(np.asarray(baseline) if not torch.is_tensor(baseline) else baseline)
        except (TypeError, ValueError):
            raise ValueError(f"baseline must be a number (what absent players take; default 0), shaped like x "
                             f"{tuple(xt.shape)} or a batch of background inputs, got {baseline!r:.80}") from None
        if ids and (base.is_floating_point() or base.is_complex()) and not bool(torch.all(base == torch.round(base))):
            shown = base.reshape(-1)[:4].tolist()
            raise ValueError("baseline must hold whole numbers (token ids) where x holds token ids; got "
                             f"{shown}{'...' if base.numel() > 4 else ''}")
        base = base.to(self.device, dtype)
        batch = base.ndim == xt.ndim + 1 and tuple(base.shape[1:]) == tuple(xt.shape) and base.shape[0] > 0
        if base.ndim and tuple(base.shape) != tuple(xt.shape) and not batch:
            raise ValueError(f"baseline must be a number, shaped like x {tuple(xt.shape)} or a batch of background "
                             f"inputs (B, {', '.join(map(str, xt.shape))}), got {tuple(base.shape)}")
        self.n_background = int(base.shape[0]) if batch else 1
        self.x = xt
        self.baseline = base.contiguous() if batch else torch.broadcast_to(base, xt.shape).contiguous()
        numel = xt.numel()
        owner, n_players = self._owners(groups, numel, tuple(xt.shape))
        self.owner = torch.as_tensor(owner, device=self.device)                 # player of each element
        #: the shape of a coalition's mask: x's, with 1 along the dimensions where no player changes (the channels of
        #: patches, the features of a step), which torch.where broadcasts; its elements' players
        self.mask_shape, mask_owner = _mask_players(owner, tuple(xt.shape))
        self._mask_owner = torch.as_tensor(mask_owner, device=self.device)
        super().__init__(n_players, player_names=player_names, batch_size=None)
        self.outputs, self._columns = _outputs(outputs)
        if eval_mode is None:                   # the doors warn themselves and pass True
            warn_training(module, stacklevel=3)
        self.eval_mode = eval_mode is None or bool(eval_mode)
        self._auto = batch_size == "auto" and self.device.type == "cuda"      # fitted at the first forward pass
        self._auto_gradient = self._auto                                    # and at the first backward pass
        self._gradient_chunk: int | None = None
        if batch_size is not None and batch_size != "auto" and (isinstance(batch_size, bool) or not isinstance(
                batch_size, (int, np.integer)) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or 'auto', got {batch_size!r}")
        fixed = batch_size is not None and batch_size != "auto"
        elements = _BATCH_ELEMENTS if self.device.type == "cuda" else _CPU_BATCH_ELEMENTS
        self.row_batch = int(batch_size) if fixed else max(1, elements // numel)
        self.coalition_batch = max(1, self.row_batch // self.n_background)     # coalitions per forward pass
        self.seconds = 0.0              # time spent in masking and forward passes (the model's share of a run)
        self._row_cost: float | None = None
        self._threads = torch.get_num_threads()     # torch's threads as the caller has them, kept (see _sync)

    @staticmethod
    def _owners(groups: Any, numel: int, shape: tuple) -> tuple[np.ndarray, int]:
        if groups is None:
            return np.arange(numel), numel
        if hasattr(groups, "shape") and tuple(np.shape(groups)) == shape:
            labels = np.asarray(groups.detach().cpu() if hasattr(groups, "detach") else groups).reshape(-1)
            if labels.dtype.kind not in "iu":
                raise TypeError(f"groups given as labels must be integers, got {labels.dtype}")
            uniq, owner = np.unique(labels, return_inverse=True)
            return owner.astype(np.int64), int(uniq.size)
        owner = np.full(numel, -1, dtype=np.int64)
        for p, members in enumerate(groups):
            members = np.asarray(list(members), dtype=np.int64)
            if members.size == 0 or members.min() < 0 or members.max() >= numel:
                raise ValueError(f"groups[{p}] must hold flat element indices in [0, {numel}), got {members.tolist()}")
            if np.any(owner[members] >= 0):
                raise ValueError(f"groups overlap: group {p} repeats elements of an earlier group")
            owner[members] = p
        if np.any(owner < 0):
            raise ValueError(f"groups must cover every element: {int((owner < 0).sum())} of {numel} are in none")
        return owner, len(groups)

    def cost(self) -> float:
        """Predicted seconds per evaluation: one forward pass of one input on the game's device, its multiply-adds
        counted once (:mod:`fairshare.games.cost`)."""
        if self._row_cost is None:
            self._row_cost = torch_row_seconds(self.module, tuple(self.x.shape), self.device.type, self.x.dtype) \
                if hasattr(self.module, "modules") else self.x.numel() * CELL_SECONDS
        return self._row_cost * self.n_background

    def _sync(self) -> None:
        """Wait for the device; and keep torch's threads as the caller had them: numba's OpenMP pool (fairshare's
        compiled kernels), started by the run's first kernel, shares torch's OpenMP runtime and sets its threads to
        numba's count (torch with OMP_NUM_THREADS=1 then ran on two threads, 5-15x slower on two busy cores)."""
        import torch

        if torch.get_num_threads() != self._threads:
            torch.set_num_threads(self._threads)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _modes(self) -> Any:
        """The module in eval mode inside (where ``eval_mode``), each submodule's own mode restored after."""
        return eval_modes(self.module if self.eval_mode else None)

    def _forward(self, inputs: Any) -> Any:
        """The module's outputs ``(rows, k)`` on a batch of inputs, only the kept outputs; an index past the model's
        outputs is refused naming ``outputs``."""
        out = self.module(inputs)
        check_output_axes(tuple(out.shape), "the module")
        out = out.reshape(out.shape[0], -1)
        if self.outputs is None:
            return out
        if self._columns.max() >= out.shape[1]:
            raise ValueError(f"outputs {self.outputs!r}: the model gives {out.shape[1]} outputs (indices 0.."
                             f"{out.shape[1] - 1})")
        return out[:, self._columns.to(out.device)]

    def _masked(self, mask: Any, base: Any | None = None) -> Any:
        """Inputs where ``mask`` (coalitions' elements, ``(c, *x.shape)``, boolean or in [0, 1]) keeps ``x`` and
        the rest comes from the baseline (``base``: one per row; default the game's, every background input for each
        row of a background batch: ``(c * B, *x.shape)``)."""
        import torch

        shape = tuple(self.x.shape)
        if base is None and self.n_background > 1:
            mask = mask[:, None]
            base = self.baseline[None]
        elif base is None:
            base = self.baseline
        if mask.dtype == torch.bool:
            return torch.where(mask, self.x, base).reshape((-1,) + shape)
        return (base + mask * (self.x - base)).reshape((-1,) + shape)

    def _evaluate(self, coalitions: Any) -> Any:
        import torch

        host = not torch.is_tensor(coalitions)
        S = torch.as_tensor(coalitions, device=self.device) if host else coalitions.to(self.device)
        outs = []
        self._sync()
        start = time.perf_counter()
        B, S8 = self.n_background, S.to(torch.uint8)        # index_select gathers bytes ~5x faster than booleans
        with torch.inference_mode(), self._modes():
            lo = 0
            while lo < S.shape[0]:
                size = min(self.coalition_batch, 8) if self._auto else self.coalition_batch
                peak = _peak_start(self.device) if self._auto else 0
                mask = torch.index_select(S8[lo:lo + size], 1, self._mask_owner).view((-1,) + self.mask_shape)
                mask = mask.view(torch.bool)                # the bytes 0 / 1 read as booleans, no copy
                out = self._forward(self._masked(mask)).to(torch.float64)
                if self._auto:
                    self._fit_batch(mask.shape[0] * B, peak)
                outs.append(out if B == 1 else out.reshape(-1, B, out.shape[1]).mean(dim=1))
                if host and self.on_batch is not None:
                    done = outs[-1].cpu().numpy()
                    self.on_batch(coalitions[lo:lo + size], done[:, 0] if done.shape[1] == 1 else done)
                lo += size
        values = torch.cat(outs) if outs else torch.zeros((0, 1), dtype=torch.float64, device=self.device)
        self._sync()
        self.seconds += time.perf_counter() - start
        values = values[:, 0] if values.shape[1] == 1 else values
        return values.cpu().numpy() if host else values

    def _fit_batch(self, rows: int, peak_before: int) -> None:
        """``batch_size="auto"`` on a GPU: rows per forward pass fitted to half the free memory, from the peak
        memory that ``rows`` rows took (measured once, on the first forward pass)."""
        import torch

        used = max(torch.cuda.max_memory_allocated(self.device) - peak_before, 1)
        free, _ = torch.cuda.mem_get_info(self.device)
        self.row_batch = max(1, int(0.5 * free * rows / used))
        self.coalition_batch = max(1, self.row_batch // self.n_background)
        self._auto = False

    def gradient(self, points: Any, background: Any = None) -> tuple[Any, Any]:
        """Values and gradients of the game's continuous extension ``F(m) = module(b + m (x - b))`` (each player's
        elements scaled by its ``m_j`` in [0, 1]: 0 the baseline, 1 the input) at ``points``: what integrated and
        expected gradients integrate (their sum along a path from 0 to 1 is ``F(1) - F(0)``).

        Parameters
        ----------
        points : ``(p, n_players)`` numbers in [0, 1] (array or tensor)
        background : None (``F`` averages over every background input, as the game's values do) or ``(p,)``
            indices of one background input per point

        Returns
        -------
        values ``(p, k)`` and gradients ``(p, n_players, k)`` as float64 (numpy; tensors where ``points`` is one);
        each point counts as one evaluation of the game

        Examples
        --------
        >>> import torch, fairshare as fs
        >>> g = fs.games.TorchGame(torch.nn.Linear(3, 1), torch.ones(3))
        >>> values, grads = g.gradient(np.full((2, 3), 0.5))
        >>> np.allclose(grads[0, :, 0], g.module.weight.detach().numpy()[0])
        True
        """
        import torch

        host = not torch.is_tensor(points)
        P = torch.as_tensor(np.asarray(points) if host else points).to(self.device, self.x.dtype)
        if P.ndim != 2 or P.shape[1] != self.n_players:
            raise ValueError(f"points must be (p, {self.n_players}) numbers in [0, 1], got {tuple(P.shape)}")
        picks = None if background is None else torch.as_tensor(np.asarray(background), device=self.device).long()
        if picks is not None and (tuple(picks.shape) != (P.shape[0],) or P.shape[0] and (
                int(picks.min()) < 0 or int(picks.max()) >= self.n_background)):
            raise ValueError(f"background must hold one index in 0..{self.n_background - 1} per point")
        per_point = 1 if picks is not None else self.n_background
        chunk = self._gradient_chunk or max(1, self.row_batch // per_point // 4)   # a backward pass holds activations
        values, grads = [], []
        self._sync()
        start = time.perf_counter()
        with torch.enable_grad(), self._modes(), _without_cudnn(self.device):
            lo = 0
            while lo < P.shape[0]:
                size = 2 if self._auto_gradient else chunk
                peak = _peak_start(self.device) if self._auto_gradient else 0
                m = P[lo:lo + size].detach().requires_grad_(True)
                mask = m[:, self.owner].reshape((-1,) + tuple(self.x.shape))
                base = None if picks is None else self.baseline[picks[lo:lo + m.shape[0]]] \
                    if self.n_background > 1 else self.baseline
                out = self._forward(self._masked(mask, base))
                if picks is None and self.n_background > 1:
                    out = out.reshape(m.shape[0], self.n_background, -1).mean(dim=1)
                k = out.shape[1]
                g = [torch.autograd.grad(out[:, j].sum(), m, retain_graph=j < k - 1)[0] for j in range(k)]
                values.append(out.detach().to(torch.float64))
                grads.append(torch.stack(g, dim=-1).to(torch.float64))
                if self._auto_gradient:                 # points per backward pass fitted to half the free memory
                    used = max(torch.cuda.max_memory_allocated(self.device) - peak, 1)
                    chunk = max(1, int(0.5 * torch.cuda.mem_get_info(self.device)[0] * m.shape[0] / used))
                    self._gradient_chunk, self._auto_gradient = chunk, False
                lo += m.shape[0]
        self._sync()
        self.seconds += time.perf_counter() - start
        self.n_evaluations += int(P.shape[0])
        v, d = torch.cat(values), torch.cat(grads)
        return (v.cpu().numpy(), d.cpu().numpy()) if host else (v, d)


def _mask_players(owner: np.ndarray, shape: tuple) -> tuple[tuple, np.ndarray]:
    """The mask's shape (``shape`` with 1 along each dimension where the players of ``owner``, one per element, do
    not change) and the players of its elements.

    Examples
    --------
    >>> shape, owner = _mask_players(np.array([0, 0, 1, 1, 0, 0, 1, 1]), (2, 2, 2))   # channels, rows, columns
    >>> shape, owner.tolist()
    ((1, 2, 1), [0, 1])
    """
    labels = np.asarray(owner).reshape(shape)
    for d in range(labels.ndim):
        first = np.take(labels, [0], axis=d)
        if labels.shape[d] > 1 and np.array_equal(labels, np.broadcast_to(first, labels.shape)):
            labels = first
    return tuple(labels.shape), labels.reshape(-1)


def _outputs(outputs: Any) -> tuple[Any, Any]:
    """``outputs`` checked (None, an index or a list of indices) and its columns as a tensor."""
    import torch

    if outputs is None:
        return None, None
    listed = [outputs] if isinstance(outputs, (int, np.integer)) and not isinstance(outputs, bool) else outputs
    if isinstance(listed, (str, bytes)) or not hasattr(listed, "__iter__"):
        raise ValueError(f"outputs must be an index or a list of indices, got {outputs!r}")
    listed = list(listed)
    if not listed or any(isinstance(j, bool) or not isinstance(j, (int, np.integer)) or j < 0 for j in listed):
        raise ValueError(f"outputs must be an index >= 0 or a non-empty list of them, got {outputs!r}")
    return outputs, torch.as_tensor([int(j) for j in listed])


def _peak_start(device: Any) -> int:
    """The memory allocated now on a GPU, its peak counter reset (what a forward pass adds is measured from it)."""
    import torch

    torch.cuda.reset_peak_memory_stats(device)
    return int(torch.cuda.memory_allocated(device))


@contextmanager
def _without_cudnn(device: Any) -> Iterator[None]:
    """cuDNN off for gradients on a GPU: its recurrent layers (LSTM, GRU) give none in eval mode."""
    import torch

    if device.type != "cuda":
        yield
        return
    with torch.backends.cudnn.flags(enabled=False):
        yield
