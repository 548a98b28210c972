"""The architecture suite (issue 37): every Shapley method of the registry, and both gradient explainers, run on a
residual CNN that reuses one ReLU module (BatchNorm, max pooling), ResNet-18, a small vision transformer (attention,
LayerNorm, GELU), an LSTM and a GRU; Shapley values add up to f(x) - f(baseline); gradient methods report their
completeness gap, and warn exactly when it is above their tolerance."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.registry import get_method, registered

torch = pytest.importorskip("torch")
from architectures import built  # noqa: E402



SHAPLEY = [s.name for s in registered() if s.supports(fs.Semivalue.shapley())]
IMAGES = ["residual", "resnet18", "vit"]


def _data(name: str):
    """Two inputs of the network and its players: 16 x 16 images in 6 patches (8 x 5 pixels, a ragged last
    column), or sequences of 6 steps with one player per step."""
    gen = torch.Generator().manual_seed(1)
    if name in IMAGES:
        return torch.rand(2, 3, 16, 16, generator=gen), dict(groups="patches", patch_size=(8, 6), baseline="blur")
    return torch.randn(2, 6, 3, generator=gen), dict(groups="time", background=torch.zeros(6, 3))


def _explain(net, X, kw, method):
    need = get_method(method).budget_needed(fs.games.AdditiveGame(np.ones(6)), fs.Semivalue.shapley())
    budget = None if method == "exact" else max(24, min(need, 64))
    background = kw.get("background")
    args = {k: v for k, v in kw.items() if k != "background"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = fs.explain(net, X, background, method=method, budget=budget, seed=0, progress=False, **args)
    return e, [str(w.message) for w in caught if "completeness gap" in str(w.message)]


@pytest.mark.parametrize("name", IMAGES + ["lstm", "gru"])
def test_every_method_runs_and_adds_up_on_each_architecture(name):
    net = built(name)
    X, kw = _data(name)
    with torch.no_grad():
        outputs = net(X).double().numpy()
    for method in SHAPLEY:
        e, gap_warnings = _explain(net, X, kw, method)
        assert e.values.shape == (2, 6, outputs.shape[1]) and np.all(np.isfinite(e.values)), method
        np.testing.assert_allclose(e.grand_value, outputs, atol=1e-5, err_msg=method)
        if get_method(method).requires:                 # gradients: the gap is reported, warned of above tolerance
            gaps = e.info.get("completeness") or [row["completeness"] for row in e.info["rows"]]
            assert len(gaps) == 2 and all(len(g["gap"]) == outputs.shape[1] for g in gaps)
            sums = e.values.sum(axis=1) - (e.grand_value - e.empty_value)
            np.testing.assert_allclose(sums, [g["gap"] for g in gaps], atol=1e-9)
            above = any(max(g["relative_gap"]) > g["tolerance"] for g in gaps)
            assert bool(gap_warnings) == above, (method, gaps)
            assert np.all(e.stderr >= 0) and np.all(np.isfinite(e.stderr))
        else:                                           # Shapley values add up, whatever the activations
            np.testing.assert_allclose(e.values.sum(axis=1), e.grand_value - e.empty_value, atol=1e-6,
                                       err_msg=method)


def test_exact_values_of_a_resnet_are_those_of_its_masked_images():
    """The door's values on ResNet-18 are the Shapley values of the network on images composed by hand."""
    from itertools import combinations
    from math import factorial

    net = built("resnet18")
    X, _ = _data("resnet18")
    e = fs.explain(net, X[:1], groups="patches", patch_size=8, baseline=0.25, output=3, method="exact",
                   progress=False)
    patches = [(r, c) for r in range(2) for c in range(2)]

    def v(S):
        img = torch.full_like(X[0], 0.25)
        for p in S:
            r, c = patches[p]
            img[:, 8 * r:8 * r + 8, 8 * c:8 * c + 8] = X[0, :, 8 * r:8 * r + 8, 8 * c:8 * c + 8]
        with torch.no_grad():
            return float(net(img[None])[0, 3])

    truth = np.zeros(4)
    for i in range(4):
        others = [p for p in range(4) if p != i]
        for k in range(4):
            for S in combinations(others, k):
                truth[i] += factorial(k) * factorial(3 - k) / factorial(4) * (v(S + (i,)) - v(S))
    np.testing.assert_allclose(e.values[0], truth, atol=1e-5)
