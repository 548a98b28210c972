"""TorchGame and the tensor path: coalitions, masked inputs, model calls, solve and standard errors on the
model's device (the CPU here; the same code runs on a GPU)."""

import re
import warnings

import numpy as np
import pytest

import fairshare as fs

torch = pytest.importorskip("torch")


def cnn(seed=0, classes=4):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(16, classes)).eval()


def quadrants():
    """3 x 4 x 4 images in 6 players: two halves of each channel."""
    labels = np.zeros((3, 4, 4), dtype=np.int64)
    for c in range(3):
        labels[c, :, 2:] = 1
        labels[c] += 2 * c
    return labels


def test_the_game_is_the_model_on_masked_inputs():
    net = cnn()
    x, base = torch.rand(3, 4, 4), torch.rand(3, 4, 4)
    g = fs.games.TorchGame(net, x, baseline=base, groups=quadrants())
    S = np.random.default_rng(0).random((7, 6)) < 0.5
    owner = quadrants().reshape(-1)
    expected = []
    for row in S:
        mask = torch.as_tensor(row[owner].reshape(3, 4, 4))
        expected.append(net(torch.where(mask, x, base)[None])[0].detach().numpy())
    np.testing.assert_allclose(g(S), np.array(expected), rtol=1e-5, atol=1e-6)
    values = g(torch.as_tensor(S))                                   # tensors in, tensors out, same device
    assert torch.is_tensor(values) and values.dtype == torch.float64
    np.testing.assert_allclose(values.numpy(), g(S), atol=1e-12)


def test_masks_are_gathered_once_for_the_dimensions_where_the_players_do_not_change():
    """Labels shared by every channel (patches) or every feature of a step (sequences) give the mask of one channel or
    one feature, broadcast by torch.where; the masked inputs are those composed on every element, bit for bit."""
    rng = np.random.default_rng(4)
    patches = np.broadcast_to(np.arange(4).repeat(2)[None, :, None] * np.ones((1, 1, 8), dtype=np.int64), (3, 8, 8))
    steps = np.arange(5)[:, None].repeat(3, axis=1)
    cases = [((3, 8, 8), patches, (1, 8, 1)), ((5, 3), steps, (5, 1)), ((3, 4, 4), quadrants(), (3, 1, 4)),
             ((2, 3), None, (2, 3))]
    for shape, groups, reduced in cases:
        x, base = torch.rand(shape), torch.rand((4,) + shape)
        for baseline in (base[0], base):
            g = fs.games.TorchGame(lambda z: z.reshape(z.shape[0], -1), x, baseline=baseline, groups=groups)
            assert g.mask_shape == reduced, (shape, reduced)
            S = rng.random((6, g.n_players)) < 0.5
            owner = np.arange(x.numel()) if groups is None else np.unique(groups, return_inverse=True)[1].reshape(-1)
            keep = torch.as_tensor(S[:, owner].reshape((6, 1) + shape))
            by_hand = torch.where(keep, x, baseline).reshape(6, -1, x.numel()).double().mean(dim=1).numpy()
            np.testing.assert_array_equal(g(S), by_hand)


def test_explaining_keeps_torchs_thread_count():
    """numba's OpenMP pool, started by the first compiled kernel of a run, shares torch's OpenMP runtime and set
    torch's threads (OMP_NUM_THREADS=1) to numba's count: forward passes then ran 5-15x slower on two busy cores. A
    fresh process, since the pool starts once."""
    import os
    import subprocess
    import sys

    code = ("import torch, numpy as np, fairshare as fs\n"
            "assert torch.get_num_threads() == 1\n"
            "net = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3), torch.nn.Flatten(), torch.nn.Linear(72, 3)).eval()\n"
            "x = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))\n"
            "fs.explain(net, x, groups='patches', patch_size=2, output=0, budget=200, seed=0, progress=False)\n"
            "fs.estimate(fs.games.TorchGame(net, x[0], outputs=1), method='integrated-gradients', budget=9, seed=0)\n"
            "print(torch.get_num_threads())\n")
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="2")       # torch's threads as a user sets them
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "1"


@pytest.mark.parametrize("method", ["regression", "kernelshap", "matrix-vector", "leverageshap"])
def test_the_tensor_path_is_exact_at_a_full_budget_and_counts_evaluations(method):
    net = cnn()
    g = fs.games.TorchGame(net, torch.rand(3, 4, 4), groups=quadrants(), on_device=True)
    truth = fs.exact(fs.games.TorchGame(net, g.x, groups=quadrants()), "shapley").values
    phi = fs.estimate(g, "shapley", method=method, budget=64, seed=0)
    assert phi.info["solver"].startswith("dense on cpu") and phi.n_evaluations <= 64
    np.testing.assert_allclose(phi.values, truth, atol=1e-9)


def test_the_tensor_path_estimates_with_calibrated_error_bars():
    net = cnn(classes=3)
    x = torch.rand(3, 6, 6)
    truth_game = fs.games.TorchGame(net, x, groups=np.repeat(np.arange(12), 9).reshape(3, 6, 6))
    truth = fs.exact(truth_game, "shapley").values
    inside = []
    for seed in range(8):
        g = fs.games.TorchGame(net, x, groups=np.repeat(np.arange(12), 9).reshape(3, 6, 6), on_device=True)
        phi = fs.estimate(g, "shapley", method="regression", budget=600, seed=seed)
        inside.append(np.mean(np.abs(phi.values - truth) <= 2 * phi.stderr))
        assert phi.n_evaluations <= 600 and g.n_evaluations == phi.n_evaluations
    assert np.mean(inside) >= 0.85, np.mean(inside)
    banzhaf = fs.estimate(fs.games.TorchGame(net, x, groups=np.repeat(np.arange(12), 9).reshape(3, 6, 6),
                                             on_device=True), "banzhaf", method="kernel-banzhaf", budget=1000, seed=0)
    np.testing.assert_allclose(banzhaf.values, fs.exact(truth_game, "banzhaf").values, atol=0.05)


def test_explain_takes_a_torch_module_and_images():
    net = cnn()
    images = torch.rand(2, 3, 4, 4)
    e = fs.explain(net, images, budget=500, seed=0, progress=False)
    assert e.values.shape == (2, 48, 4) and e.method == "surrogate-regression"
    out = net(images).detach().numpy().astype(float)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, out, atol=1e-9)
    grouped = fs.explain(net, images, groups=quadrants(), seed=0, progress=False)       # 2^6 coalitions: exact
    assert grouped.values.shape == (2, 6, 4) and grouped.method == "exact"


def test_bad_arguments_name_what_is_wrong():
    net = cnn()
    x = torch.rand(3, 4, 4)
    with pytest.raises(ValueError, match="baseline must be a number, shaped like x"):
        fs.games.TorchGame(net, x, baseline=torch.zeros(3, 4))
    for bad in (None, "zero", [0.0, "a"]):          # None failed in numpy ('np.ndarray of type numpy.object_')
        with pytest.raises(ValueError, match=r"baseline must be a number \(what absent players take; default 0\)"):
            fs.games.TorchGame(net, x, baseline=bad)
    with pytest.raises(ValueError, match="groups overlap"):
        fs.games.TorchGame(net, x, groups=[[0, 1], [1, 2]] + [[i] for i in range(3, 48)])
    with pytest.raises(ValueError, match="groups must cover every element"):
        fs.games.TorchGame(net, x, groups=[[0, 1]])
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        fs.games.TorchGame(net, x, batch_size=0)


# ------------------------------------------------------------------------------------ background batches
def test_a_background_batch_gives_the_values_of_the_same_model_as_a_function():
    """Issue 43, item 11: a torch module on sequences with a 20-input background is explained (it was refused),
    with the values of the same model wrapped as a numpy function (marginal imputation over the background)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(30, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 10, 3)).astype(np.float32)
    background = rng.normal(size=(20, 10, 3)).astype(np.float32)

    def as_function(inputs):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(inputs, dtype=np.float32))).numpy().astype(float)

    for groups, budget in (("time", None), (None, 400)):
        module = fs.explain(net, torch.as_tensor(X), background=torch.as_tensor(background), groups=groups,
                            budget=budget, seed=0, progress=False)
        function = fs.explain(as_function, X, background=background, groups=groups, budget=budget, seed=0,
                              progress=False)
        assert module.method == function.method
        np.testing.assert_allclose(module.values, function.values, atol=1e-9)
        np.testing.assert_allclose(module.empty_value, function.empty_value, atol=1e-12)
        assert "20 background inputs" in module.info["imputation"]
    game = fs.games.TorchGame(net, X[0], baseline=background, batch_size=7)      # 7 inputs a pass: 1 coalition
    whole = fs.games.TorchGame(net, X[0], baseline=background)
    S = rng.random((9, 30)) < 0.5
    np.testing.assert_allclose(game(S), whole(S), atol=1e-12)


def test_rows_of_a_float64_module_as_tensors_or_arrays_give_the_values_of_the_same_model_as_a_function():
    """A float64 tabular module with a background of rows: its inputs were cast to float32 (refused by the module),
    and rows given as tensors stopped on a tensor's ``index`` method. Tensors and arrays now give the values of the
    same model as a float64 numpy function, bit for bit; a single baseline (the tensor path) the same values."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double().eval()
    rng = np.random.default_rng(1)
    X, background = rng.normal(size=(2, 6)), rng.normal(size=(12, 6))

    def as_function(rows):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(rows), dtype=torch.float64)).numpy()

    function = fs.explain(as_function, X, background, budget=200, seed=0, progress=False)
    arrays = fs.explain(net, X, background, budget=200, seed=0, progress=False)
    tensors = fs.explain(net, torch.as_tensor(X), torch.as_tensor(background), budget=200, seed=0, progress=False)
    for got in (arrays, tensors):
        np.testing.assert_array_equal(got.values, function.values)
        np.testing.assert_array_equal(got.stderr, function.stderr)
        assert got.row_names == ["0", "1"] and got.info["imputation"] == function.info["imputation"]
    one = fs.explain(net, torch.as_tensor(X), torch.as_tensor(background[0]), budget=200, seed=0, progress=False)
    by_function = fs.explain(as_function, X, background[:1], budget=200, seed=0, progress=False)
    np.testing.assert_allclose(one.values, by_function.values, rtol=1e-12, atol=1e-14)
    game = fs.games.TorchGame(net, torch.as_tensor(X[0]), baseline=torch.as_tensor(background[0]))
    assert game.x.dtype == torch.float64 and game.baseline.dtype == torch.float64
    values, grads = game.gradient(np.full((1, 6), 0.5))
    assert values.dtype == np.float64 and grads.shape == (1, 6, 1)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_modules_and_inputs_are_explained_at_every_door(dtype):
    """A module in half precision gets its inputs in its dtype and answers in it; bfloat16, which numpy lacks, is read
    as float (at the table door its answers stopped the game, and so did rows given in bfloat16)."""
    half = getattr(torch, dtype)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).to(half).eval()
    rng = np.random.default_rng(0)
    X, background = rng.normal(size=(2, 5)), rng.normal(size=(8, 5))

    def as_function(rows):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(rows), dtype=half)).double().numpy()

    function = fs.explain(as_function, X, background, budget=64, seed=0, progress=False)
    for x, b in ((X, background), (torch.as_tensor(X, dtype=half), torch.as_tensor(background, dtype=half))):
        got = fs.explain(net, x, b, budget=64, seed=0, progress=False)
        np.testing.assert_array_equal(got.values, function.values)
    one = fs.explain(net, torch.as_tensor(X), torch.as_tensor(background[0]), budget=64, seed=0, progress=False)
    assert one.method == "exact" and np.all(np.isfinite(one.values))


def test_token_ids_stay_ids_and_what_cannot_apply_to_them_is_refused_before_any_model_call():
    """A module that embeds token ids, given ids (int64) and a padding id: the masked inputs are ids (they were cast
    to floats, which an embedding refuses), and the values are the same model's as a function of the kept ids. A
    baseline that is no id, and gradient methods (no path between ids), are refused before any model call."""
    torch.manual_seed(0)

    class Bag(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.out, self.calls = torch.nn.Embedding(50, 8), torch.nn.Linear(8, 2), 0

        def forward(self, ids):
            self.calls += 1
            return self.out(torch.tanh(self.embed(ids).sum(dim=1)))

    net = Bag().eval()
    ids = torch.randint(1, 50, (2, 6), generator=torch.Generator().manual_seed(3))
    got = fs.explain(net, ids, torch.zeros(6, dtype=torch.long), budget=64, seed=0, progress=False)

    def kept(i):
        def f(S):
            with torch.no_grad():
                return net(torch.where(torch.as_tensor(S), ids[i], 0)).double().numpy()
        return fs.games.FunctionGame(f, n_players=6)

    assert got.method == "exact"
    for i in range(2):
        np.testing.assert_allclose(got.values[i], fs.exact(kept(i), "shapley").values, atol=1e-12)
    # ids with a background of id rows (the table door): arrays and tensors, as the same model of id rows
    background = torch.randint(1, 50, (5, 6), generator=torch.Generator().manual_seed(4))

    def of_rows(rows):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(rows))).double().numpy()

    function = fs.explain(of_rows, ids.numpy(), background.numpy(), budget=64, seed=0, progress=False)
    for x, b in ((ids.numpy(), background.numpy()), (ids, background)):
        np.testing.assert_array_equal(fs.explain(net, x, b, budget=64, seed=0, progress=False).values,
                                      function.values)
    # integers given to a module without an embedding are numbers: cast to its dtype, as before
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).eval()
    numbers = fs.explain(mlp, ids, torch.zeros(6, dtype=torch.long), budget=64, seed=0, progress=False)
    as_floats = fs.explain(mlp, ids.float(), torch.zeros(6), budget=64, seed=0, progress=False)
    np.testing.assert_array_equal(numbers.values, as_floats.values)
    np.testing.assert_array_equal(fs.explain(mlp, ids.numpy(), background.numpy(), budget=64, seed=0,
                                             progress=False).values,
                                  fs.explain(mlp, ids.numpy().astype(float), background.numpy().astype(float),
                                             budget=64, seed=0, progress=False).values)
    net.calls = 0
    with pytest.raises(ValueError, match="baseline must hold whole numbers"):
        fs.explain(net, ids, 0.5, budget=64, seed=0, progress=False)
    with pytest.raises(ValueError, match="gradient methods need inputs of real numbers"):
        fs.explain(net, ids, 0, budget=64, seed=0, progress=False, method="integrated-gradients")
    assert net.calls == 0


@pytest.mark.parametrize("where", ["X", "background"])
@pytest.mark.parametrize("what", [np.nan, np.inf])
def test_nan_and_inf_in_shaped_inputs_are_refused_before_any_model_call(where, what):
    """Issue 43, item 9: NaN or inf in sequences (or their background) were found only after model calls."""
    calls = []

    def model(inputs):
        calls.append(len(inputs))
        return inputs.sum(axis=(1, 2))

    rng = np.random.default_rng(0)
    X, background = rng.normal(size=(3, 6, 2)), rng.normal(size=(5, 6, 2))
    (X if where == "X" else background)[1, 4, 1] = what
    name = "NaN" if np.isnan(what) else "inf"
    with pytest.raises(ValueError, match=rf"{where} holds {name} in input 1 at cell \(4, 1\)"):
        fs.explain(model, X, background=background, progress=False)
    with pytest.raises(ValueError, match=rf"{where} holds {name} in input 1 at cell \(4, 1\)"):
        fs.explain(linear_module(), torch.as_tensor(X), background=torch.as_tensor(background), progress=False)
    assert not calls


def linear_module():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 1))


class _Counting(torch.nn.Sequential):
    """A first layer ``conv`` that sees the input as given (a Sequential); counts the model's calls."""

    def __init__(self, conv, features):
        super().__init__(conv, torch.nn.Flatten(), torch.nn.Linear(features, 3))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x)


class _Unsqueezing(torch.nn.Module):
    """A Conv1d(1, ...) behind a forward that adds the channel axis itself: it takes (N, L)."""

    def __init__(self):
        super().__init__()
        self.conv, self.head = torch.nn.Conv1d(1, 2, 3), torch.nn.Linear(2 * 6, 1)

    def forward(self, x):
        return self.head(self.conv(x.unsqueeze(1)).flatten(1))


def test_inputs_the_first_convolution_cannot_take_are_refused_before_any_model_call():
    """Grayscale images without their channel axis (N, H, W) to a Conv2d(1, ...) reached the model: torch's
    RuntimeError about channels after a model call (the image door refused wrong channels before any)."""
    torch.manual_seed(0)
    net = _Counting(torch.nn.Conv2d(1, 2, 3), 2 * 6 * 6).eval()
    with pytest.raises(ValueError, match=re.escape(
            "X holds inputs shaped (8, 8) (X is (2, 8, 8)), the model's first layer (Conv2d) takes (N, 1, H, W); no "
            "channel axis? pass X[:, None], shaped (2, 1, 8, 8)")):
        fs.explain(net, torch.rand(2, 8, 8), budget=200, progress=False, seed=0)
    seq = _Counting(torch.nn.Conv1d(2, 2, 3), 2 * 6).eval()
    with pytest.raises(ValueError, match=re.escape("X has 3 channels per input (N, C, L), the model's first layer "
                                                   "(Conv1d) takes 2")):
        fs.explain(seq, torch.rand(2, 3, 8), budget=200, progress=False, seed=0)
    with pytest.raises(ValueError, match=re.escape("X holds inputs shaped (2, 8, 8, 1) (X is (2, 2, 8, 8, 1)), "
                                                   "the model's first layer (Conv1d) takes (N, 2, L)")):
        fs.explain(seq, torch.rand(2, 2, 8, 8, 1), budget=200, progress=False, seed=0)
    assert net.calls == seq.calls == 0
    e = fs.explain(net, torch.rand(2, 1, 8, 8), budget=200, progress=False, seed=0)       # what it takes: explained
    assert net.calls > 0 and np.isfinite(e.values).all()
    X = torch.rand(2, 2, 8)
    e = fs.explain(seq, X, progress=False, seed=0)
    with torch.no_grad():
        out = seq(X).numpy()
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, out, atol=1e-5)
    own = _Unsqueezing().eval()                         # its forward reshapes: not refused on its first layer's terms
    X = torch.rand(2, 8)
    e = fs.explain(own, X, progress=False, seed=0)
    with torch.no_grad():
        np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, own(X).numpy()[:, 0], atol=1e-5)


def test_a_time_window_longer_than_the_series_is_refused():
    X = np.zeros((2, 5, 3))
    with pytest.raises(ValueError, match=r"groups=\('time', 8\): the window is longer than the inputs' 5 steps"):
        fs.explain(lambda A: A.sum(axis=(1, 2)), X, background=X[:1], groups=("time", 8), progress=False)


def test_a_modules_cost_counts_its_multiply_adds_on_meta_tensors():
    """The cost model counts each layer's multiply-adds from the shapes it sees (strides, pooling, recurrent steps,
    attention), without computing or copying anything; a module that does not run on meta tensors keeps the upper
    bound; a GPU's unit cost is the GPU's."""
    from fairshare.games.cost import torch_macs, torch_row_seconds

    nn = torch.nn
    strided = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(8, 4, 1), nn.Flatten(), nn.Linear(4 * 8 * 8, 10))
    assert torch_macs(strided, (3, 32, 32)) == 8 * 16 * 16 * 27 + 4 * 8 * 8 * 8 + 10 * 256

    class Recurrent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm, self.attend = nn.LSTM(8, 16, num_layers=2, batch_first=True), nn.MultiheadAttention(16, 2,
                                                                                                      batch_first=True)

        def forward(self, x):
            h = self.lstm(x)[0]
            return self.attend(h, h, h)[0].sum(dim=1)

    lstm = 10 * 4 * 16 * ((8 + 16) + (16 + 16))                   # 10 steps, 4 gates, two layers
    attention = 10 * (4 * 16 * 16 + 2 * 10 * 16)                  # projections and scores of 10 tokens
    net = Recurrent()
    before = [p.detach().clone() for p in net.parameters()]
    assert torch_macs(net, (10, 8)) == lstm + attention
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))          # nothing moved or copied
    assert torch_macs(torch.jit.script(nn.Linear(3, 2)), (3,)) is None              # TorchScript: the upper bound
    assert torch_row_seconds(torch.jit.script(nn.Linear(3, 2)), (3,)) == pytest.approx(8 * 0.08e-9)   # 6 + 2 weights
    assert torch_row_seconds(strided, (3, 32, 32), "cuda") < 1e-3 * torch_row_seconds(strided, (3, 32, 32))


@pytest.mark.parametrize("method", ["semivalue-regression", "surrogate-regression"])
@pytest.mark.parametrize("sv", [fs.Semivalue.beta_shapley(4, 1), fs.Semivalue.weighted_banzhaf(0.3)],
                         ids=["beta(4,1)", "wbanzhaf(0.3)"])
def test_the_tensor_path_fits_product_measures_as_the_host_does(sv, method):
    net, x = cnn(classes=3), torch.rand(3, 6, 6)
    groups = np.repeat(np.arange(12), 9).reshape(3, 6, 6)
    on_device = fs.estimate(fs.games.TorchGame(net, x, groups=groups, on_device=True), sv, method=method, budget=600,
                            seed=0)
    host = fs.estimate(fs.games.TorchGame(net, x, groups=groups), sv, method=method, budget=600, seed=0)
    np.testing.assert_allclose(on_device.values, host.values, atol=1e-12)
    full = fs.estimate(fs.games.TorchGame(net, x, groups=groups, on_device=True), sv, method=method, budget=4096,
                       seed=0)
    np.testing.assert_allclose(full.values, fs.exact(fs.games.TorchGame(net, x, groups=groups), sv).values, atol=1e-7)


def test_a_module_in_train_mode_is_explained_in_eval_mode_at_the_torch_and_table_doors():
    # hunt: only the image door put the module in eval mode; sequences, tensor rows and array rows ran it with its
    # dropout on, so the same seed gave other values at every call (and none were the model's)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 16), torch.nn.Dropout(0.5), torch.nn.Tanh(),
                              torch.nn.Linear(16, 1))
    net.train()
    net[0].eval()                                                 # a layer's own mode is kept too
    seqs = torch.rand(2, 4, 3, generator=torch.Generator().manual_seed(1))
    rows = seqs.reshape(2, 12)
    for X, kw in ((seqs, dict(groups="time")), (rows, {}), (rows.numpy(), dict(background=np.zeros((1, 12))))):
        with pytest.warns(fs.FairshareWarning, match=r"layers in train mode \(2\): it is explained in eval mode"):
            trained = fs.explain(net, X, budget=5000, seed=0, progress=False, **kw)
        assert net.training and net[2].training and not net[0].training
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error")
            net.eval()
            truth = fs.explain(net, X, budget=5000, seed=0, progress=False, **kw)
            change = (net(seqs) - net(torch.zeros_like(seqs)))[:, 0].numpy()
            net.train()
            net[0].eval()
        np.testing.assert_array_equal(trained.values, truth.values)
        np.testing.assert_allclose(trained.values.sum(axis=1), change, atol=1e-6)


def test_a_torch_game_of_a_module_in_train_mode_plays_it_in_eval_mode_whatever_the_batch():
    # hunt: TorchGame built directly (fs.exact / fs.estimate on it) kept a BatchNorm training, so each coalition's
    # value used the statistics of the batch it came in: exact Shapley values differed between batch_size=3 and the
    # default (by 0.16 here) and from the module's eval-mode values (by 0.11, 5x their size), with no warning
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    with torch.no_grad():
        net[1].running_mean.uniform_(-0.5, 0.5)
        net[1].running_var.uniform_(0.5, 2.0)
    X = torch.rand(12, 4, generator=torch.Generator().manual_seed(1))
    net.eval()
    truth = fs.exact(fs.games.TorchGame(net, X[0], baseline=X[2:10]), "shapley").values
    net.train()
    for batch_size in (None, 3):
        with pytest.warns(fs.FairshareWarning, match=r"layers in train mode \(1\): it is explained in eval mode"):
            game = fs.games.TorchGame(net, X[0], baseline=X[2:10], batch_size=batch_size)
        np.testing.assert_allclose(fs.exact(game, "shapley").values, truth, atol=1e-6)
        assert net.training and net[1].training                       # its own modes, restored
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                # eval_mode=False: asked for, no warning
        own = fs.exact(fs.games.TorchGame(net, X[0], baseline=X[2:10], eval_mode=False), "shapley").values
    assert np.abs(own - truth).max() > 0.01


def test_tensor_rows_take_feature_names_and_groups_as_array_rows_do():
    # hunt: tensor rows (the torch door) dropped feature_names (players 'x0'...; a list of the wrong length passed
    # too), named groups 'x0', 'x1' instead of 'a + b', and stopped on groups given as a dict (int('a'))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double().eval()
    X = torch.rand(2, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for kw, names in ((dict(feature_names=list("abcd")), ["a", "b", "c", "d"]),
                      (dict(feature_names=list("abcd"), groups=[["a", "b"], [2, "d"]]), ["a + b", "c + d"]),
                      (dict(groups={"front": [0, 1, 2], "back": [3]}), ["front", "back"])):
        rows = fs.explain(net, X, seed=0, progress=False, **kw)
        table = fs.explain(net, X.numpy(), np.zeros((1, 4)), seed=0, progress=False, **kw)
        assert rows.player_names == table.player_names == names
        np.testing.assert_allclose(rows.values, table.values, rtol=0, atol=1e-15)
    with torch.no_grad():
        change = (net(X) - net(torch.zeros_like(X)))[:, 0].numpy()
    np.testing.assert_allclose(rows.values.sum(axis=1), change, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="feature_names must have 4 names, got 3"):
        fs.explain(net, X, feature_names=list("abc"), progress=False)
