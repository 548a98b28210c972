"""TorchGame: a torch model explained at one input of any shape, on the model's device.

Players are the input's elements (pixels, channels, tokens' embeddings) or groups of them
(superpixels, patches, whole channels). A coalition keeps its players' elements from the input
and takes the others from the baseline. Coalitions given as a torch tensor stay on the device:
the masks, the masked inputs and the model's outputs never leave it, so an estimator that works
on tensors (fairshare's linear estimators do) runs end to end on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Game
from .cost import CELL_SECONDS, torch_row_seconds

__all__ = ["TorchGame"]

_BATCH_ELEMENTS = 1 << 24          # input elements per forward pass by default (64 MB of float32)


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
    batch_size : most inputs per forward pass (default: about 16 million elements)
    on_device : draw the coalitions and solve on ``device`` too (torch tensors end to end); default: when the
        device is a GPU (on the CPU numpy's packed iterative solver is faster)

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
                 batch_size: int | None = None, player_names: Any = None, on_device: bool | None = None) -> None:
        import torch

        if device is None:
            params = list(module.parameters()) if hasattr(module, "parameters") else []
            device = params[0].device if params else (x.device if torch.is_tensor(x) else "cpu")
        self.device = torch.device(device)
        self.on_device = self.device.type != "cpu" if on_device is None else bool(on_device)
        self.module = module
        xt = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x).to(self.device, torch.float32)
        if xt.ndim == 0:
            raise ValueError("x must have at least one element dimension (no batch dimension)")
        base = torch.as_tensor(np.asarray(baseline) if not torch.is_tensor(baseline) else baseline)
        base = base.to(self.device, torch.float32)
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
        super().__init__(n_players, player_names=player_names, batch_size=None)
        if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.row_batch = int(batch_size) if batch_size is not None else max(1, _BATCH_ELEMENTS // numel)
        self.coalition_batch = max(1, self.row_batch // self.n_background)     # coalitions per forward pass
        self.seconds = 0.0              # time spent in masking and forward passes (the model's share of a run)

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
        """Predicted seconds per evaluation: one forward pass of one input (:mod:`fairshare.games.cost`)."""
        one = torch_row_seconds(self.module, tuple(self.x.shape)) if hasattr(self.module, "modules") else \
            self.x.numel() * CELL_SECONDS
        return one * self.n_background

    def _sync(self) -> None:
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)

    def _evaluate(self, coalitions: Any) -> Any:
        import torch

        import time

        host = not torch.is_tensor(coalitions)
        S = torch.as_tensor(coalitions, device=self.device) if host else coalitions.to(self.device)
        outs = []
        self._sync()
        start = time.perf_counter()
        shape, B = tuple(self.x.shape), self.n_background
        with torch.inference_mode():
            for lo in range(0, S.shape[0], self.coalition_batch):
                mask = S[lo:lo + self.coalition_batch][:, self.owner].reshape((-1,) + shape)
                if B == 1:
                    inputs = torch.where(mask, self.x, self.baseline)
                else:                                       # every coalition over every background input
                    inputs = torch.where(mask[:, None], self.x, self.baseline[None]).reshape((-1,) + shape)
                out = self.module(inputs)
                out = out.reshape(out.shape[0], -1).to(torch.float64)
                outs.append(out if B == 1 else out.reshape(-1, B, out.shape[1]).mean(dim=1))
                if host and self.on_batch is not None:
                    done = outs[-1].cpu().numpy()
                    self.on_batch(coalitions[lo:lo + self.coalition_batch], done[:, 0] if done.shape[1] == 1 else done)
        values = torch.cat(outs) if outs else torch.zeros((0, 1), dtype=torch.float64, device=self.device)
        self._sync()
        self.seconds += time.perf_counter() - start
        values = values[:, 0] if values.shape[1] == 1 else values
        return values.cpu().numpy() if host else values
