"""Inputs of any shape: sequences (rows, time, features) for numpy functions, scikit-learn and torch recurrent
models; values of the input's shape that add up; groups over time steps, windows and feature channels."""

from __future__ import annotations

import numpy as np
import pytest

import fairshare as fs


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6, 3))
    w = rng.normal(size=(6, 3))
    return X, w


def test_cells_are_players_values_add_up_and_match_the_flat_table(data):
    X, w = data
    f = lambda A: (A * w).sum(axis=(1, 2)) + A[:, 2, 0] * A[:, 3, 1]          # noqa: E731
    e = fs.explain(f, X[:3], background=X[20:30], budget=600, seed=4, progress=False)
    assert e.values.shape == (3, 18) and e.input_values().shape == (3, 6, 3)
    assert e.player_names[:4] == ["t0:f0", "t0:f1", "t0:f2", "t1:f0"]
    np.testing.assert_allclose(e.values.sum(axis=1), e.grand_value - e.empty_value, atol=1e-9)
    flat = fs.explain(lambda R: f(R.reshape(-1, 6, 3)), X[:3].reshape(3, -1), background=X[20:30].reshape(10, -1),
                      budget=600, seed=4, progress=False)
    np.testing.assert_array_equal(e.values, flat.values)
    np.testing.assert_array_equal(e.input_values(stderr=True), flat.stderr.reshape(3, 6, 3))


def test_linear_sequences_are_exact_cell_by_cell(data):
    X, w = data
    e = fs.explain(lambda A: (A * w).sum(axis=(1, 2)), X[:2], background=X[20:30], seed=0, progress=False)
    expected = w * (X[:2] - X[20:30].mean(axis=0))
    np.testing.assert_allclose(e.input_values(), expected, atol=1e-9)


def test_groups_over_time_windows_and_features(data):
    X, w = data
    f = lambda A: (A * w).sum(axis=(1, 2)) + np.tanh(A[:, 1, 0] * A[:, 4, 2])  # noqa: E731
    cells = fs.explain(f, X[:2], background=X[20:25], seed=0, progress=False, budget=3000)
    steps = fs.explain(f, X[:2], background=X[20:25], seed=0, progress=False, groups="time")
    assert steps.player_names == [f"t{t}" for t in range(6)] and steps.method == "exact"
    game = fs.games.ModelGame(lambda R: f(R.reshape(-1, 6, 3)), X[:1].reshape(1, -1), X[20:25].reshape(5, -1),
                              groups=[list(range(3 * t, 3 * t + 3)) for t in range(6)])
    np.testing.assert_allclose(steps.values[0], fs.exact(game).values, atol=1e-12)
    linear_part = fs.explain(lambda A: (A * w).sum(axis=(1, 2)), X[:2], background=X[20:25], groups="time",
                             progress=False)
    np.testing.assert_allclose(linear_part.values, (w * (X[:2] - X[20:25].mean(axis=0))).sum(axis=2), atol=1e-9)
    windows = fs.explain(f, X[:2], background=X[20:25], progress=False, groups=("time", 4))
    assert windows.player_names == ["t0-3", "t4-5"]
    np.testing.assert_allclose(windows.values.sum(axis=1), cells.grand_value - cells.empty_value, atol=1e-9)
    channels = fs.explain(f, X[:2], background=X[20:25], progress=False, groups="features",
                          feature_names=["price", "volume", "spread"])
    assert channels.player_names == ["price", "volume", "spread"]
    assert channels.input_values().shape == (2, 6, 3)
    np.testing.assert_array_equal(channels.input_values()[:, 0, :], channels.values)


def test_scikit_learn_model_on_flattened_sequences(data):
    from sklearn.ensemble import RandomForestRegressor
    X, w = data
    y = (X * w).sum(axis=(1, 2))
    model = RandomForestRegressor(n_estimators=20, random_state=0).fit(X.reshape(40, -1), y)
    predict = lambda A: model.predict(A.reshape(len(A), -1))                  # noqa: E731
    e = fs.explain(predict, X[:2], background=X[20:30], groups="time", progress=False)
    np.testing.assert_allclose(e.values.sum(axis=1), predict(X[:2]) - predict(X[20:30]).mean(), atol=1e-9)


def test_torch_recurrent_model_on_the_same_path(data):
    torch = pytest.importorskip("torch")
    X, _ = data
    torch.manual_seed(0)

    class GRU(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(3, 8, batch_first=True)
            self.out = torch.nn.Linear(8, 1)

        def forward(self, x):
            h, _ = self.gru(x)
            return self.out(h[:, -1])

    model = GRU().eval()
    Xt = torch.tensor(X[:2], dtype=torch.float32)
    with torch.no_grad():
        gap = (model(Xt) - model(torch.zeros(1, 6, 3))).numpy().ravel()
    e = fs.explain(model, Xt, budget=1500, seed=0, progress=False)
    assert e.input_values().shape == (2, 6, 3) and e.player_names[0] == "t0:f0"
    np.testing.assert_allclose(e.values.sum(axis=1), gap, atol=1e-5)
    steps = fs.explain(model, Xt, groups="time", seed=0, progress=False)
    assert steps.method == "exact" and steps.player_names == [f"t{t}" for t in range(6)]

    def masked(S):
        keep = torch.as_tensor(np.repeat(S[:, :, None], 3, axis=2), dtype=torch.float32)
        with torch.no_grad():
            return model(Xt[:1] * keep).numpy().ravel()

    np.testing.assert_allclose(steps.values[0], fs.exact(fs.games.FunctionGame(masked, 6)).values, atol=1e-5)


def test_bad_shaped_inputs_are_refused_before_any_model_call(data):
    X, _ = data
    calls = []

    def f(A):
        calls.append(len(A))
        return A.sum(axis=(1, 2))

    for kwargs, match in [
        (dict(groups=("time", 0)), "window of w >= 1"),
        (dict(groups=np.zeros((6, 2), dtype=int)), "integer labels shaped"),
        (dict(groups="channels"), "must be 'time', 'features'"),
        (dict(background=X[:5, :4]), "shaped like those of X"),
    ]:
        kwargs.setdefault("background", X[20:25])
        with pytest.raises(ValueError, match=match):
            fs.explain(f, X[:2], progress=False, **kwargs)
    assert calls == []
