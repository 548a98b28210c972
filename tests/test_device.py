"""On a GPU (skipped without one): every door that takes a torch module gives on CUDA the values it gives on the CPU.

Float64 models, so that the only differences are the order of floating-point sums: the estimators' array code runs
on the device (the tensor path), on the host with the model on the device (the table door), and the influence
functions' Hessians and their products on the device. Run on a lent H200 (2026-11-26): values within 2e-13 of the
CPU's for the doors, 2e-16 for influence.
"""

from __future__ import annotations

import numpy as np
import pytest

import fairshare as fs

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"),
              pytest.mark.filterwarnings("ignore")]


def _tabular(n: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1),
                               torch.nn.Sigmoid()).double().eval()


def _cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(32, 4)).double().eval()


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(np.asarray(b))), 1e-300))


@pytest.mark.parametrize("door", ["table", "torch"])
@pytest.mark.parametrize("index,multiple", [("shapley", 10), ("shapley", 100), ("banzhaf", 30),
                                            ("beta-shapley(4,1)", 100), ("weighted-banzhaf(0.3)", 100)])
def test_rows_on_a_gpu_give_the_values_they_give_on_the_cpu(door, index, multiple):
    n = 16
    gen = torch.Generator().manual_seed(1)
    X, B = torch.rand((2, n), generator=gen, dtype=torch.float64), torch.rand((16, n), generator=gen,
                                                                           dtype=torch.float64)
    B = B if door == "table" else B[0]                     # rows of a background: the table door; one: tensors
    args = dict(index=index, budget=multiple * n, seed=0, progress=False)
    gpu = fs.explain(_tabular(n).cuda(), X.cuda(), B.cuda(), **args)
    cpu = fs.explain(_tabular(n), X, B, **args)
    assert gpu.method == cpu.method
    assert _relative(gpu.values, cpu.values) < 1e-9 and _relative(gpu.stderr, cpu.stderr) < 1e-6


@pytest.mark.parametrize("kwargs", [dict(budget=400), dict(budget=300, interactions=2), dict(budget=2000, tol=0.05),
                                    dict(method="integrated-gradients", budget=64)])
def test_images_on_a_gpu_give_the_values_they_give_on_the_cpu(kwargs):
    images = torch.rand((2, 3, 32, 32), generator=torch.Generator().manual_seed(1))
    args = dict(groups="patches", patch_size=8, seed=0, progress=False, **kwargs)
    gpu = fs.explain(_cnn().cuda(), images.cuda(), **args)
    cpu = fs.explain(_cnn(), images, **args)
    assert gpu.method == cpu.method and _relative(gpu.values, cpu.values) < 1e-9
    if "interactions" in kwargs:
        assert _relative(gpu.interactions, cpu.interactions) < 1e-9


@pytest.mark.parametrize("hessian", ["exact", "cg", "lissa"])
def test_influence_of_a_model_on_a_gpu_equals_the_cpus(hessian):
    """The Hessian (or its products) of a module on the GPU: the points were sent from the host and refused."""
    from fairshare.examples import influence

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()
    args = dict(hessian=hessian, damping=1.0)
    on_gpu = influence(net.cuda(), X, y, X[:3], y[:3], **args)
    on_cpu = influence(net.cpu(), X, y, X[:3], y[:3], **args)
    assert _relative(on_gpu, on_cpu) < 1e-9
