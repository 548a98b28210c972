"""Kernels on Fisher embeddings: the practical kernel (inner products) and the full Fisher kernel
``f_i^T I^-1 f_j`` with the regularized empirical Fisher information."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

__all__ = ["LinearKernel", "FisherKernel", "CallableKernel", "as_kernel"]


class LinearKernel:
    """``k(a, b) = a . b`` on embeddings (the practical Fisher kernel).

    Examples
    --------
    >>> LinearKernel()(np.eye(2), np.ones((1, 2)))
    array([[1.],
           [1.]])
    """

    linear = True

    def transform(self, E: np.ndarray) -> np.ndarray:
        return np.asarray(E, dtype=float)

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return self.transform(A) @ self.transform(B).T


class FisherKernel(LinearKernel):
    """``k(f_i, f_j) = f_i^T I^-1 f_j`` with ``I = F^T F / N + reg * Id`` from fitting embeddings ``F``.

    Computed as an exact whitening ``g = I^(-1/2) f`` so the kernel is an inner product of whitened
    embeddings: a Cholesky factor when there are fewer parameters than examples, otherwise the thin
    SVD of ``F`` (Woodbury: ``I^-1 = V diag(1 / (s^2/N + reg)) V^T + (Id - V V^T) / reg``).

    Examples
    --------
    >>> F = np.random.default_rng(0).normal(size=(100, 3))
    >>> k = FisherKernel(F, reg=1e-6)
    >>> I = F.T @ F / 100 + 1e-6 * np.eye(3)
    >>> bool(np.allclose(k(F[:2], F[:3]), F[:2] @ np.linalg.solve(I, F[:3].T)))
    True
    """

    def __init__(self, fit_embeddings: Any, reg: float = 1e-3) -> None:
        F = np.asarray(fit_embeddings, dtype=float)
        if F.ndim != 2 or F.shape[0] < 1:
            raise ValueError(f"fit_embeddings must be a 2-D array, got shape {F.shape}")
        if not np.isfinite(reg) or reg <= 0:
            raise ValueError(f"reg must be > 0, got {reg}")
        N, p = F.shape
        self.reg = float(reg)
        if p <= N:
            info = F.T @ F / N + reg * np.eye(p)
            self._chol = scipy.linalg.cholesky(info, lower=True)
            self._V = None
        else:
            _, s, Vt = np.linalg.svd(F, full_matrices=False)
            self._V = Vt.T                                          # (p, r)
            self._scale = 1.0 / np.sqrt(s**2 / N + reg)
            self._chol = None

    def transform(self, E: np.ndarray) -> np.ndarray:
        E = np.asarray(E, dtype=float)
        if self._chol is not None:
            return scipy.linalg.solve_triangular(self._chol, E.T, lower=True).T
        coords = E @ self._V                                        # (m, r)
        inside = coords * self._scale
        outside = (E - coords @ self._V.T) / np.sqrt(self.reg)
        return np.hstack([inside, outside])


class CallableKernel:
    """A user kernel ``fn(A, B) -> (len(A), len(B))`` on whatever ``A`` and ``B`` are."""

    linear = False

    def __init__(self, fn: Any) -> None:
        if not callable(fn):
            raise TypeError("kernel must be 'linear', 'fisher', a kernel object or a callable")
        self.fn = fn

    def __call__(self, A: Any, B: Any) -> np.ndarray:
        return np.asarray(self.fn(A, B), dtype=float)


def as_kernel(kernel: Any, train: Any, reg: float = 1e-3) -> Any:
    """``"linear"`` / ``"fisher"`` / a kernel object / a callable, as a kernel object."""
    if isinstance(kernel, str):
        if kernel == "linear":
            return LinearKernel()
        if kernel == "fisher":
            return FisherKernel(train, reg=reg)
        raise ValueError(f"kernel must be 'linear', 'fisher', a kernel object or a callable, got {kernel!r}")
    if isinstance(kernel, (LinearKernel, CallableKernel)):
        return kernel
    return CallableKernel(kernel)
