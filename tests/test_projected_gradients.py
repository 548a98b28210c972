"""Streaming projected Fisher embeddings of torch modules (issue 39, item 1): per-example gradients in batches,
projected block by block, equal to the whole gradient matrix times the whole projection matrix; layers; bad
inputs refused before any gradient."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fairshare.examples import fisher_embedding  # noqa: E402
from fairshare.examples.projection import BLOCK, GradientProjector  # noqa: E402


class CNN(torch.nn.Module):
    """A small CNN of images (1, 8, 8) with 10 classes (10,410 parameters); counts its forward passes."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.head = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * 8 * 8, 10))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.head(self.conv(x))


def _images(n: int = 23):
    rng = np.random.default_rng(1)
    return rng.normal(size=(n, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, n)


def _autograd_row(net, x, label):
    net.zero_grad()
    out = net(torch.as_tensor(x[None]))
    torch.log_softmax(out, -1)[0, int(label)].backward()
    return torch.cat([p.grad.reshape(-1) for p in net.parameters()]).double().numpy()


def test_the_full_embedding_is_each_examples_gradient():
    net, (X, y) = CNN(), _images()
    F = fisher_embedding(net, X, y, batch_size=5)
    assert F.shape == (23, sum(p.numel() for p in net.parameters()))
    for i in (0, 6, 22):
        np.testing.assert_allclose(F[i], _autograd_row(net, X[i], y[i]), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "countsketch"])
def test_streamed_projection_equals_the_whole_matrix_product(kind):
    net, (X, y) = CNN(), _images()
    P = sum(p.numel() for p in net.parameters())
    assert P > BLOCK                                                  # the matrix spans several blocks
    full = fisher_embedding(net, X, y)
    R = GradientProjector(P, 16, kind, seed=4)(torch.eye(P)).double().numpy()   # the matrix, whole, for the check
    streamed = fisher_embedding(net, X, y, projection=16, seed=4, projection_kind=kind, batch_size=5)
    np.testing.assert_allclose(streamed, full @ R, rtol=1e-4, atol=1e-5 * np.abs(full @ R).max())
    again = fisher_embedding(net, X, y, projection=16, seed=4, projection_kind=kind, batch_size=5)
    assert np.array_equal(streamed, again)
    other = fisher_embedding(net, X, y, projection=16, seed=5, projection_kind=kind, batch_size=5)
    assert not np.allclose(streamed, other)


def test_blocks_regenerated_equal_blocks_kept():
    G = torch.randn(6, 3 * BLOCK + 17)
    kept = GradientProjector(G.shape[1], 8, "gaussian", seed=2)
    dropped = GradientProjector(G.shape[1], 8, "gaussian", seed=2, keep_bytes=0)
    assert torch.equal(kept(G), dropped(G)) and not dropped._kept and len(kept._kept) == 4
    halves = dropped(G[:, :BLOCK + 5]) + dropped(G[:, BLOCK + 5:], start=BLOCK + 5)
    torch.testing.assert_close(halves, kept(G), rtol=1e-5, atol=1e-5)


def test_layers_differentiate_only_their_parameters():
    net, (X, y) = CNN(), _images()
    full = fisher_embedding(net, X, y)
    conv = fisher_embedding(net, X, y, layers=["conv"])
    n_conv = sum(p.numel() for p in net.conv.parameters())
    np.testing.assert_allclose(conv, full[:, :n_conv], rtol=1e-5, atol=1e-7)
    head = fisher_embedding(net, X, y, layers="head.2.weight")
    np.testing.assert_allclose(head, full[:, n_conv:n_conv + 10 * 1024], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kw, error, argument", [
    (dict(projection=0), ValueError, "projection"),
    (dict(projection=10**6), ValueError, "projection"),
    (dict(projection=2.5), TypeError, "projection"),
    (dict(projection=4, projection_kind="fast"), ValueError, "projection_kind"),
    (dict(layers=["conv", "nope"]), ValueError, "layers"),
    (dict(y=np.zeros(22, dtype=int)), ValueError, "y"),
    (dict(y=np.array(["a"] * 23)), TypeError, "y"),
    (dict(frozen=True), ValueError, "model"),
])
def test_bad_inputs_are_refused_before_any_gradient(kw, error, argument):
    net, (X, y) = CNN(), _images()
    if kw.pop("frozen", False):
        for p in net.parameters():
            p.requires_grad_(False)
    labels = kw.pop("y", y)
    with pytest.raises(error, match=argument):
        fisher_embedding(net, X, labels, **kw)
    assert net.calls == 0


@pytest.mark.parametrize("label, shown", [(10, "10"), (-1, "-1"), (2.5, "2.5")])
def test_a_label_that_is_no_class_index_is_refused_not_given_a_zero_gradient(label, shown):
    """The default log-likelihood one-hot encodes the label: 10 or -1 (of 10 classes) met no class and gave a row of
    zeros, 2.5 was truncated to class 2; only one forward pass (that counts the classes) runs before the refusal."""
    net, (X, y) = CNN(), _images()
    bad = y.astype(float)
    bad[3] = label
    with pytest.raises(ValueError, match=rf"y holds {shown} at row 3: the model's 10 outputs are classes"):
        fisher_embedding(net, X, bad)
    assert net.calls == 1


@pytest.mark.parametrize("make, message", [
    (lambda X, y: (X[:0], y[:0]), r"X holds no rows"),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 70, np.nan, X), y), r"X holds NaN at row 1"),
    (lambda X, y: (X, np.c_[y, y]), r"y must hold one label per row of X \(23 rows\), got shape \(23, 2\)"),
])
def test_empty_or_missing_inputs_and_labels_of_two_columns_are_refused_before_any_call(make, message):
    net, (X, y) = CNN(), _images()
    X, y = make(X, y)
    with pytest.raises(ValueError, match=message):
        fisher_embedding(net, X, y)
    assert net.calls == 0


def test_a_generator_seed_gives_the_projection_of_the_integer_it_draws():
    net, (X, y) = CNN(), _images()
    a = fisher_embedding(net, X, y, projection=8, seed=np.random.default_rng(3))
    b = fisher_embedding(net, X, y, projection=8, seed=np.random.default_rng(3))
    assert np.array_equal(a, b)
    with pytest.raises(TypeError, match="seed must be"):
        fisher_embedding(net, X, y, projection=8, seed="3")


# ------------------------------------------------------------------------------- influence in k dimensions
def _trained_mlp(n: int = 240, flipped: int = 24, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    noisy = y.copy()
    noisy[:flipped] = 1 - noisy[:flipped]
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(noisy)
    for _ in range(150):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt), yt).backward()
        opt.step()
    return net, X, y, noisy


def test_projected_influence_is_the_fisher_influence_of_the_projected_embeddings():
    from fairshare.examples import influence

    net, X, _, noisy = _trained_mlp()
    got = influence(net, X, noisy, X[:5], noisy[:5], hessian="fisher", damping=1e-2, projection=40, seed=3,
                    projection_kind="rademacher")
    F = fisher_embedding(net, X, noisy, projection=40, seed=3, projection_kind="rademacher")
    H = F.T @ F / len(F) + 1e-2 * np.eye(40)
    np.testing.assert_allclose(got, -(np.linalg.solve(H, F[:5].T).T @ F.T), rtol=1e-4, atol=1e-6)   # float32 rows
    # the default damping with a projection: a tenth of the projected Fisher's mean eigenvalue
    default = influence(net, X, noisy, X[:5], noisy[:5], hessian="fisher", projection=40, seed=3,
                        projection_kind="rademacher")
    H = F.T @ F / len(F)
    H += 0.1 * np.trace(H) / 40 * np.eye(40)
    np.testing.assert_allclose(default, -(np.linalg.solve(H, F[:5].T).T @ F.T), rtol=1e-4, atol=1e-4)


def test_without_a_projection_the_default_damping_is_zero():
    from sklearn.linear_model import LogisticRegression

    from fairshare.examples import self_influence

    Z = np.random.default_rng(0).normal(size=(80, 3))
    labels = (Z[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(Z, labels)                         # Koh and Liang's undamped influence
    np.testing.assert_array_equal(self_influence(model, Z, labels), self_influence(model, Z, labels, damping=0.0))
    assert not np.allclose(self_influence(model, Z, labels), self_influence(model, Z, labels, damping="auto"))


def test_flipped_labels_are_ranked_first_from_projected_embeddings():
    from scipy.stats import spearmanr

    from fairshare.examples import rank_mislabeled, self_influence

    net, X, y, noisy = _trained_mlp()
    found = {}
    for name, kw in {"full": {}, "gaussian 128": dict(projection=128), "countsketch 64": dict(
            projection=64, projection_kind="countsketch")}.items():
        order, _ = rank_mislabeled(net, X, noisy, X[200:], y[200:], **kw)
        found[name] = int(np.sum(order[:24] < 24))                    # 24 flipped of 240; chance finds ~2.4
    assert found["full"] >= 12 and found["gaussian 128"] >= found["full"] - 2 and found["countsketch 64"] >= 9
    full = self_influence(net, X, noisy, hessian="fisher", damping=1e-2)
    projected = self_influence(net, X, noisy, hessian="fisher", damping=1e-2, projection=96)
    assert spearmanr(full, projected)[0] > 0.9


def test_a_hessian_of_parameter_space_is_refused_with_a_projection():
    from fairshare.examples import influence

    net, X, _, noisy = _trained_mlp(n=20, flipped=2)
    with pytest.raises(ValueError, match="hessian='exact' works in parameter space"):
        influence(net, X, noisy, X[:2], noisy[:2], projection=8)
