"""The peers of ``fairshare bench default`` at their best configurations, each calling the game through
:class:`Counted` (boolean masks, one row or many; evaluations, wall and CPU seconds counted)."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

import fairshare as fs


class Counted:
    """The game as a peer calls it (boolean masks, one row or many), counting the evaluations."""

    def __init__(self, game: fs.Game) -> None:
        self.game, self.rows, self.seconds, self.cpu = game, 0, 0.0, 0.0

    def __call__(self, S: Any) -> np.ndarray:
        S = np.atleast_2d(np.asarray(S) > 0.5)
        self.rows += S.shape[0]
        start, cpu = time.perf_counter(), time.process_time()
        out = np.asarray(self.game(S), float).reshape(-1)
        self.seconds += time.perf_counter() - start
        self.cpu += time.process_time() - cpu
        return out


def _shap_kernel(f: Counted, n: int, budget: int, seed: int, l1_reg: Any = None) -> np.ndarray:
    import shap

    np.random.seed(seed)
    kw = dict(nsamples=max(budget - 2, 2), silent=True)
    if l1_reg is not None:
        kw["l1_reg"] = l1_reg
    return np.asarray(shap.KernelExplainer(f, np.zeros((1, n))).shap_values(np.ones((1, n)), **kw), float)


def _shap_permutation(f: Counted, n: int, budget: int, seed: int) -> np.ndarray:
    import shap

    masker = shap.maskers.Independent(np.zeros((1, n)), max_samples=1)
    return np.asarray(shap.PermutationExplainer(f, masker, seed=seed)(np.ones((1, n)), max_evals=budget,
                                                                        silent=True).values, float)


def _shapiq(cls: str, **kw: Any) -> Callable:
    def run(f: Counted, n: int, budget: int, seed: int) -> np.ndarray:
        import shapiq.approximator as A

        values = getattr(A, cls)(n=n, random_state=seed, **kw).approximate(budget=budget, game=f)
        return np.asarray(values.get_n_order_values(1), float)
    return run


def _captum(kind: str) -> Callable:
    def run(f: Counted, n: int, budget: int, seed: int) -> np.ndarray:
        import torch
        from captum.attr import KernelShap, ShapleyValueSampling

        torch.manual_seed(seed)
        model = lambda X: torch.as_tensor(f(X.detach().numpy()), dtype=torch.float64)       # noqa: E731
        x, base = torch.ones((1, n), dtype=torch.float64), torch.zeros((1, n), dtype=torch.float64)
        if kind == "kernel":
            out = KernelShap(model).attribute(x, baselines=base, n_samples=budget, perturbations_per_eval=budget)
        else:
            out = ShapleyValueSampling(model).attribute(x, baselines=base, n_samples=max(1, budget // (n + 1)),
                                                        perturbations_per_eval=n + 1)
        return out.detach().numpy()
    return run


PEERS = {
    "shap Kernel": lambda f, n, b, s: _shap_kernel(f, n, b, s),
    "shap Kernel l1_reg=False": lambda f, n, b, s: _shap_kernel(f, n, b, s, False),
    "shap Permutation": _shap_permutation,
    "shapiq KernelSHAP": _shapiq("KernelSHAP"),
    "shapiq KernelSHAP paired": _shapiq("KernelSHAP", pairing_trick=True),
    "shapiq kADDSHAP": _shapiq("kADDSHAP", max_order=2),
    "shapiq UnbiasedKernelSHAP": _shapiq("UnbiasedKernelSHAP"),
    "shapiq SVARM": _shapiq("SVARM"),
    "shapiq PermutationSamplingSV": _shapiq("PermutationSamplingSV"),
    "captum KernelShap": _captum("kernel"),
    "captum ShapleyValueSampling": _captum("svs"),
}
