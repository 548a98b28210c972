"""numpy or torch: the few array operations whose spelling differs, so that the heavy paths (sampling,
the solve, standard errors, masking) run on whichever holds the coalitions, a GPU included.

Code written against numpy's operators (``@``, ``*``, ``sum(axis=...)``, ``mean(axis=..., keepdims=...)``,
slicing) runs on torch tensors as it is; these helpers cover allocation, conversion and factorization.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["is_tensor", "zeros", "like", "to_numpy", "factor_solver", "sqrt", "stack", "concat", "take_rows", "row_counts"]


def is_tensor(a: Any) -> bool:
    """Whether ``a`` is a torch tensor (torch is never imported for numpy input).

    Examples
    --------
    >>> is_tensor(np.zeros(2))
    False
    """
    return type(a).__module__.startswith("torch") and hasattr(a, "device")


def zeros(shape: tuple, ref: Any, dtype: Any = None) -> Any:
    """Zeros on ``ref``'s side (float64 unless ``dtype``)."""
    if is_tensor(ref):
        import torch

        return torch.zeros(shape, dtype=dtype or torch.float64, device=ref.device)
    return np.zeros(shape, dtype=dtype or float)


def like(a: Any, ref: Any) -> Any:
    """``a`` (numpy or scalar) on ``ref``'s side: a float64 tensor on ``ref``'s device for a tensor ``ref``."""
    if is_tensor(ref) and not is_tensor(a):
        import torch

        arr = np.asarray(a)
        dtype = torch.bool if arr.dtype == bool else (torch.int64 if arr.dtype.kind in "iu" else torch.float64)
        return torch.as_tensor(np.ascontiguousarray(arr), dtype=dtype, device=ref.device)
    return a


def to_numpy(a: Any) -> Any:
    """A numpy array from a tensor (moved to the host; bfloat16, which numpy lacks, as float32), anything else
    unchanged."""
    if is_tensor(a):
        a = a.detach()
        return (a.float() if str(a.dtype) == "torch.bfloat16" else a).cpu().numpy()
    return a


def sqrt(a: Any) -> Any:
    if is_tensor(a):
        import torch

        return torch.sqrt(a)
    return np.sqrt(a)


def stack(items: list, ref: Any) -> Any:
    if is_tensor(ref):
        import torch

        return torch.stack(items)
    return np.stack(items)


def concat(items: list) -> Any:
    if items and is_tensor(items[0]):
        import torch

        return torch.cat(items)
    return np.concatenate(items)


def take_rows(a: Any, rows: np.ndarray) -> Any:
    """``a[rows]`` for a numpy index array (a tensor takes them on its device)."""
    return a[like(rows, a)] if is_tensor(a) else a[rows]


def row_counts(Z: Any) -> Any:
    """Members of each coalition (row sums of a boolean matrix) as int64, on ``Z``'s side; numpy sums the rows
    as bytes (a third of the time of ``Z.sum(axis=1)``).

    Examples
    --------
    >>> row_counts(np.array([[True, False, True], [False, False, False]])).tolist()
    [2, 0]
    """
    if is_tensor(Z):
        return Z.sum(dim=1)
    Z = np.asarray(Z, dtype=bool)
    return Z.view(np.uint8).sum(axis=1, dtype=np.uint16 if Z.shape[1] < 65536 else np.int64).astype(np.int64)


def factor_solver(M: Any) -> Callable[[Any], Any]:
    """``rhs -> M^-1 rhs`` for a symmetric positive (semi)definite ``M``: Cholesky, else a pseudo-inverse."""
    if is_tensor(M):
        import torch

        L, info = torch.linalg.cholesky_ex(M)
        if int(info) == 0:
            solve = lambda rhs: torch.cholesky_solve(rhs, L)                   # noqa: E731
            probe = solve(torch.ones((M.shape[0], 1), dtype=M.dtype, device=M.device))
            if bool(torch.isfinite(probe).all()):
                return solve
        pinv = torch.linalg.pinv(M, hermitian=True)
        return lambda rhs: pinv @ rhs
    import scipy.linalg

    try:
        factor = scipy.linalg.cho_factor(M, check_finite=False)
        solve = lambda rhs: scipy.linalg.cho_solve(factor, rhs, check_finite=False)   # noqa: E731
        if np.all(np.isfinite(solve(np.ones((M.shape[0], 1))))):
            return solve
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        pass
    pinv = np.linalg.pinv(M, hermitian=True)
    return lambda rhs: pinv @ rhs
