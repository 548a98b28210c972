"""On a GPU (skipped without one): every door that takes a torch module gives on CUDA the values it gives on the CPU.

Float64 models, so that the only differences are the order of floating-point sums: the estimators' array code runs
on the device (the tensor path), on the host with the model on the device (the table door), and the influence
functions' Hessians and their products on the device. Token ids stay ids on the module's device, and a module in
half precision gets its rows in its dtype there. A language model (a tiny GPT-2) gives its spans' values on CUDA as
on the CPU. Run on a lent H200 (2026-11-26): values within 2e-13 of the CPU's for the doors, 2e-16 for influence;
25 passed at 20aa939 (the language model's first run found its log-softmax in float32 for a float64 model: 2e-7).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import fairshare as fs
from tiny_lm import PROMPT, tiny_gpt2

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


class _Bag(torch.nn.Module):
    """Token ids -> an embedding (float64) summed over the sequence -> two outputs."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.out = torch.nn.Embedding(50, 8), torch.nn.Linear(8, 2)
        self.double().eval()

    def forward(self, ids):
        return self.out(torch.tanh(self.embed(ids).sum(dim=1)))


@pytest.mark.parametrize("where", ["host", "cuda"])
def test_token_ids_on_a_gpu_give_the_values_they_give_on_the_cpu(where):
    """Ids stay ids on the module's device: with a padding id (the tensor door) and with a background of id rows
    (the table door), given on the host or on the GPU."""
    ids = torch.randint(1, 50, (2, 6), generator=torch.Generator().manual_seed(3))
    background = torch.randint(1, 50, (5, 6), generator=torch.Generator().manual_seed(4))
    pad = torch.zeros(6, dtype=torch.long)
    move = (lambda t: t.cuda()) if where == "cuda" else (lambda t: t)
    args = dict(budget=300, seed=0, progress=False)
    for x, b in ((ids, pad), (ids, background)):
        gpu = fs.explain(_Bag().cuda(), move(x), move(b), **args)
        cpu = fs.explain(_Bag(), x, b, **args)
        assert gpu.method == cpu.method and _relative(gpu.values, cpu.values) < 1e-9


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_half_precision_module_on_a_gpu_is_explained_at_both_doors(dtype):
    """Rows given as float64 arrays go to the module in its dtype on its device; its answers come back as floats.
    Half precision differs between the devices' kernels, so the values agree only to its precision."""
    half = getattr(torch, dtype)
    rng = np.random.default_rng(0)
    X, background = rng.normal(size=(2, 5)), rng.normal(size=(8, 5))
    args = dict(budget=64, seed=0, progress=False)
    for b in (background, background[0]):
        one = b.ndim == 1                                  # one baseline: the tensor door, tensors on the GPU
        gpu = fs.explain(_tabular(5).to(half).cuda(), *((torch.as_tensor(X).cuda(), torch.as_tensor(b).cuda())
                                                         if one else (X, b)), **args)
        cpu = fs.explain(_tabular(5).to(half), *((torch.as_tensor(X), torch.as_tensor(b)) if one else (X, b)), **args)
        assert np.all(np.isfinite(gpu.values)) and _relative(gpu.values, cpu.values) < 0.1


@pytest.mark.parametrize("removal, kv_cache", [("drop", True), ("drop", False), (1, True)])
def test_a_language_model_on_a_gpu_gives_the_spans_values_it_gives_on_the_cpu(removal, kv_cache):
    """The generation door (greedy answer, batches padded, the KV cache of kept prefixes) with the model on CUDA."""
    model, tokenizer = tiny_gpt2(torch.float64)
    args = dict(tokenizer=tokenizer, spans="words", removal=removal, kv_cache=kv_cache, max_new_tokens=3,
                batch_size=8)
    gpu = fs.games.GenerationGame(model.cuda(), PROMPT, **args)
    gpu_values = fs.explain(gpu, budget=300, seed=0, progress=False)
    cpu = fs.games.GenerationGame(model.cpu(), PROMPT, **args)
    cpu_values = fs.explain(cpu, budget=300, seed=0, progress=False)
    assert gpu.target.tolist() == cpu.target.tolist() and gpu_values.method == cpu_values.method
    assert _relative(gpu_values.values, cpu_values.values) < 1e-9


def test_a_bfloat16_language_model_on_a_gpu_is_read_in_float32():
    """The common case: a bfloat16 model on CUDA. Its log-probabilities (read in float32) are the float64 model's to
    bfloat16's three digits, and its spans' values are finite and add up to the answer's."""
    model, tokenizer = tiny_gpt2(torch.float64)
    args = dict(tokenizer=tokenizer, spans="words", target="Paris is old")
    exact = fs.games.GenerationGame(model, PROMPT, **args)
    half = fs.games.GenerationGame(copy.deepcopy(model).to(torch.bfloat16).cuda(), PROMPT, **args)
    S = np.random.default_rng(1).random((16, exact.n_players)) < 0.6
    np.testing.assert_allclose(half(S), exact(S), rtol=0.1)
    e = fs.explain(half, budget=300, seed=0, progress=False)
    assert np.all(np.isfinite(e.values))
    np.testing.assert_allclose(e.values.sum(), e.grand_value[0] - e.empty_value[0], atol=1e-6)
