"""Example-based attribution: embeddings, kernels, SBQ prototypes and influence functions."""

import numpy as np
import pytest

from fairshare.examples import (FisherKernel, LinearKernel, RBFKernel, fisher_embedding, influence, rank_mislabeled,
                                select_prototypes, self_influence)
from fairshare.examples.fisher import parameters_of
from fairshare.examples.influence import hessian_matrix
from fairshare.examples.prototypes import greedy_on_embeddings

sklearn = pytest.importorskip("sklearn")
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402


def data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.7 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _fd_gradient(loglik, theta, eps=1e-6):
    return np.array([(loglik(theta + eps * e) - loglik(theta - eps * e)) / (2 * eps) for e in np.eye(theta.size)])


# ---------------------------------------------------------------------------------- embeddings
def test_logistic_embeddings_equal_finite_differences():
    X, y = data()
    model = LogisticRegression().fit(X, y)
    F = fisher_embedding(model, X, y)
    theta = parameters_of(model)
    for i in (0, 17, 99):
        def ll(t, i=i):
            s = 1 / (1 + np.exp(-(X[i] @ t[:3] + t[3])))
            return y[i] * np.log(s) + (1 - y[i]) * np.log(1 - s)
        np.testing.assert_allclose(F[i], _fd_gradient(ll, theta), atol=1e-7)


def test_multinomial_and_linear_embeddings_equal_finite_differences():
    X, _ = data()
    labels = np.digitize(X[:, 1], [-0.5, 0.5])
    model = LogisticRegression(max_iter=2000).fit(X, labels)
    F = fisher_embedding(model, X, labels)
    theta = parameters_of(model)                                       # (K * (p + 1),)
    K = 3

    def ll(t, i=5):
        W = t.reshape(K, 4)
        logits = W[:, :3] @ X[i] + W[:, 3]
        return logits[labels[i]] - np.log(np.exp(logits).sum())

    np.testing.assert_allclose(F[5], _fd_gradient(ll, theta), atol=1e-7)
    y = X @ [1.0, -2.0, 0.5] + 0.3 * np.random.default_rng(1).normal(size=len(X))
    lin = LinearRegression().fit(X, y)
    G = fisher_embedding(lin, X, y)
    theta = parameters_of(lin)

    def gauss(t, i=9):                                                 # a unit-variance Gaussian: the squared loss
        return -0.5 * (y[i] - X[i] @ t[:3] - t[3]) ** 2

    np.testing.assert_allclose(G[9], _fd_gradient(gauss, theta), atol=1e-6)


def torch_classifier(hidden: int, seed: int):
    """A small tanh network fitted to three classes of the shared toy data (float64)."""
    import torch

    X, _ = data()
    labels = np.digitize(X[:, 1], [-0.5, 0.5])
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 3)).double()
    opt = torch.optim.Adam(net.parameters(), 0.05)
    Xt, yt = torch.tensor(X), torch.tensor(labels)
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt), yt).backward()
        opt.step()
    return X, labels, net


def test_torch_embeddings_equal_finite_differences_and_project():
    torch = pytest.importorskip("torch")
    X, labels, net = torch_classifier(hidden=4, seed=0)
    Xt = torch.tensor(X)
    F = fisher_embedding(net, X, labels)
    assert F.shape == (200, 31)
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()
    shapes = [p.shape for p in net.parameters()]

    def ll(t, i=11):
        from torch.func import functional_call

        chunks, start = {}, 0
        for (name, _), shape in zip(net.named_parameters(), shapes):
            size = int(np.prod(shape))
            chunks[name] = torch.tensor(t[start:start + size]).reshape(shape)
            start += size
        out = functional_call(net, chunks, (Xt[i:i + 1],))[0]
        return float(torch.log_softmax(out, -1)[labels[i]])

    np.testing.assert_allclose(F[11], _fd_gradient(ll, flat), atol=1e-6)
    P1 = fisher_embedding(net, X, labels, projection=16, seed=3)
    P2 = fisher_embedding(net, X, labels, projection=16, seed=3)
    assert P1.shape == (200, 16)
    np.testing.assert_array_equal(P1, P2)


@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "countsketch"])
def test_projection_preserves_inner_products_on_average(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 40))
    y = (X[:, 0] + X[:, 1] + 0.7 * rng.normal(size=300) > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    F = fisher_embedding(model, X, y)                                  # 41 parameters
    exact = F @ F.T
    approx = np.mean([fisher_embedding(model, X, y, projection=32, seed=s, projection_kind=kind) @
                      fisher_embedding(model, X, y, projection=32, seed=s, projection_kind=kind).T
                      for s in range(40)], axis=0)
    assert np.abs(approx - exact).max() < 0.1 * np.abs(exact).max()


# --------------------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("n, p", [(200, 5), (20, 60)])          # Cholesky path and SVD / Woodbury path
def test_fisher_kernel_equals_the_explicit_inverse(n, p):
    F = np.random.default_rng(0).normal(size=(n, p))
    reg = 1e-2
    info = F.T @ F / n + reg * np.eye(p)
    A, B = F[:7], np.random.default_rng(1).normal(size=(4, p))
    np.testing.assert_allclose(FisherKernel(F, reg=reg)(A, B), A @ np.linalg.solve(info, B.T), rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="reg must be > 0"):
        FisherKernel(F, reg=0.0)


# ------------------------------------------------------------------------------------ prototypes
def brute_force_greedy(K_train, K_cross, k):
    z = K_cross.mean(axis=1)
    chosen = []
    for _ in range(k):
        best, best_val = None, -np.inf
        for i in range(len(z)):
            if i in chosen:
                continue
            S = chosen + [i]
            val = z[S] @ np.linalg.inv(K_train[np.ix_(S, S)]) @ z[S]          # an inverse per candidate
            if val > best_val + 1e-12:
                best, best_val = i, val
        chosen.append(best)
    return np.array(chosen)


@pytest.mark.parametrize("kernel", ["linear", "fisher", "rbf"])
def test_greedy_equals_brute_force_greedy(kernel):
    rng = np.random.default_rng(4)
    train, test = rng.normal(size=(40, 6)), rng.normal(size=(15, 6)) + 0.5
    if kernel == "rbf":
        def rbf(A, B):
            A, B = np.asarray(A), np.asarray(B)
            return np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
        kern, K_train, K_cross = rbf, rbf(train, train), rbf(train, test)
    elif kernel == "fisher":
        fk = FisherKernel(train, reg=1e-2)
        kern, K_train, K_cross = fk, fk(train, train), fk(train, test)
    else:
        kern, K_train, K_cross = "linear", train @ train.T, train @ test.T
    k = 6 if kernel == "rbf" else 5            # below the embedding width: no ties from a full span
    chosen = select_prototypes(train, test, k=k, kernel=kern)
    np.testing.assert_array_equal(chosen.indices, brute_force_greedy(K_train, K_cross, k))
    # the objective after each step is v(S) = mu - z_S^T K_SS^-1 z_S, recomputed from scratch
    z = K_cross.mean(axis=1)
    for step in range(1, k + 1):
        S = chosen.indices[:step]
        val = z[S] @ np.linalg.solve(K_train[np.ix_(S, S)], z[S])
        assert chosen.objective[0] - chosen.objective[step] == pytest.approx(val, rel=1e-8, abs=1e-12)
    np.testing.assert_allclose(chosen.weights, np.linalg.solve(K_train[np.ix_(chosen.indices, chosen.indices)],
                                                               z[chosen.indices]), rtol=1e-8, atol=1e-10)


def test_weights_make_the_quadrature_exact_when_every_point_is_selected():
    rng = np.random.default_rng(5)
    train = rng.normal(size=(25, 3))
    test = train[rng.choice(25, 8, replace=False)]                   # the test distribution lives on training points

    def rbf(A, B):
        return np.exp(-((np.asarray(A)[:, None] - np.asarray(B)[None]) ** 2).sum(-1))

    p = select_prototypes(train, test, k=25, kernel=rbf)
    assert p.objective[-1] == pytest.approx(0.0, abs=1e-8)          # v(S) = 0: the test mean is reproduced
    # every kernel section f = k(., x_j) is integrated exactly: sum_i w_i f(x_i) = mean over test of f
    sections = rbf(train[p.indices], train)                          # (selected, j)
    np.testing.assert_allclose(p.weights @ sections, rbf(test, train).mean(axis=0), atol=1e-6)


def test_stochastic_greedy_is_reproducible_and_close_to_greedy():
    rng = np.random.default_rng(6)
    train, test = rng.normal(size=(2000, 20)), rng.normal(size=(100, 20)) + 0.3
    greedy = select_prototypes(train, test, k=15)
    stochastic = select_prototypes(train, test, k=15, method="stochastic", seed=0, delta=0.05)
    again = select_prototypes(train, test, k=15, method="stochastic", seed=0, delta=0.05)
    np.testing.assert_array_equal(stochastic.indices, again.indices)
    assert len(set(stochastic.indices.tolist())) == 15
    reduction = lambda p: p.objective[0] - p.objective[-1]          # noqa: E731
    assert reduction(stochastic) >= 0.8 * reduction(greedy)


def test_distributed_greedy_on_a_local_cluster():
    distributed = pytest.importorskip("dask.distributed")
    rng = np.random.default_rng(7)
    train, test = rng.normal(size=(1200, 10)), rng.normal(size=(80, 10)) + 0.4
    k, parts = 8, 4
    greedy = select_prototypes(train, test, k=k)
    local = select_prototypes(train, test, k=k, method="distributed", n_parts=parts, seed=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        remote = select_prototypes(train, test, k=k, method="distributed", n_parts=parts, seed=1, client=client)
        rbf_remote = select_prototypes(train, test, k=k, kernel="rbf", method="distributed", n_parts=parts, seed=1,
                                       client=client)
    rbf_local = select_prototypes(train, test, k=k, kernel="rbf", method="distributed", n_parts=parts, seed=1)
    np.testing.assert_array_equal(rbf_remote.indices, rbf_local.indices)       # a full-rank kernel's parts on Dask
    assert len(set(rbf_remote.indices.tolist())) == k
    np.testing.assert_array_equal(remote.indices, local.indices)
    assert len(set(remote.indices.tolist())) == k and remote.indices.max() < 1200
    # GreeDi's guarantee (Mirzasoleiman et al. 2013) relative to the centralized greedy solution
    reduction = lambda p: p.objective[0] - p.objective[-1]          # noqa: E731
    bound = (1 - 1 / np.e) ** 2 / min(parts, k)
    assert reduction(remote) >= bound * reduction(greedy)
    assert reduction(remote) >= 0.9 * reduction(greedy)               # and in practice close to it


def test_bad_arguments_to_select_prototypes():
    train, test = np.ones((5, 2)), np.ones((3, 2))
    with pytest.raises(ValueError, match="method must be one of"):
        select_prototypes(train, test, 2, method="random")
    with pytest.raises(ValueError, match="larger than the 5 training points"):
        select_prototypes(train, test, 6)
    with pytest.raises(ValueError, match="same width"):
        select_prototypes(train, np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match="kernel must be"):
        select_prototypes(train, test, 2, kernel="cosine")
    with pytest.raises(ValueError, match=r"kernel='rbf' needs at least 2 training points .* train of shape \(1, 2\)"):
        select_prototypes(train[:1], test, 1, kernel="rbf")            # it named fit_embeddings, no argument here


# ------------------------------------------------------------------------------------- influence
def test_logistic_hessian_equals_finite_differences_of_the_objective():
    X, y = data()
    model = LogisticRegression(C=0.5).fit(X, y)
    theta = parameters_of(model)
    N = len(X)

    def objective(t):
        z = X @ t[:3] + t[3]
        return np.mean(np.logaddexp(0, z) - y * z) + 0.5 * (t[:3] @ t[:3]) / (model.C * N)

    eps = 1e-4
    H_fd = np.array([[(objective(theta + eps * (ei + ej)) - objective(theta + eps * (ei - ej))
                       - objective(theta - eps * (ei - ej)) + objective(theta - eps * (ei + ej))) / (4 * eps**2)
                      for ej in np.eye(4)] for ei in np.eye(4)])
    np.testing.assert_allclose(hessian_matrix(model, X, y), H_fd, atol=1e-5)


def test_influence_predicts_the_effect_of_removing_a_point():
    """Removing z changes the test loss by about -I(z, z_test) / N (Koh and Liang's check, with retraining)."""
    X, y = data(300, seed=2)
    model = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(X, y)
    x_test, y_test = X[:1] + 0.1, y[:1]

    def test_loss(m):
        p = m.predict_proba(x_test)[0, y_test[0]]
        return -np.log(p)

    scores = influence(model, X, y, x_test, y_test)[0]
    candidates = np.argsort(-np.abs(scores))[:12]
    predicted, actual = [], []
    for i in candidates:
        keep = np.ones(len(X), bool)
        keep[i] = False
        # sklearn scales the penalty by 1/(C N); keep the same objective on N-1 points (C * (N-1) / N)
        refit = LogisticRegression(C=1.0 * (len(X) - 1) / len(X), tol=1e-10, max_iter=10_000).fit(X[keep], y[keep])
        actual.append(test_loss(refit) - test_loss(model))
        predicted.append(-scores[i] / len(X))
    assert np.corrcoef(predicted, actual)[0, 1] > 0.95
    np.testing.assert_allclose(predicted, actual, rtol=0.3, atol=2e-4)


def test_section_5_equivalence_with_the_practical_kernel():
    """With the Hessian replaced by the identity (practical Fisher kernel) influence is minus the kernel,
    and SBQ with one test point and k = 1 picks argmax k(i, test)^2 / k(i, i), i.e. the largest
    squared influence relative to self-influence; with H the regularized empirical Fisher, influence is
    minus the full Fisher kernel (Proposition 3)."""
    X, y = data(150, seed=3)
    model = LogisticRegression().fit(X, y)
    F = fisher_embedding(model, X, y)
    f_test = fisher_embedding(model, X[:1] * 0.5, y[:1])
    infl = influence(model, X, y, X[:1] * 0.5, y[:1], hessian="identity")[0]
    np.testing.assert_allclose(infl, -(LinearKernel()(F, f_test)[:, 0]), atol=1e-12)
    self_infl = self_influence(model, X, y, hessian="identity")
    first = select_prototypes(F, f_test, k=1).indices[0]
    assert first == int(np.argmax(infl**2 / self_infl))
    fisher_infl = influence(model, X, y, X[:1] * 0.5, y[:1], hessian="fisher", damping=1e-3)[0]
    np.testing.assert_allclose(fisher_infl, -FisherKernel(F, reg=1e-3)(F, f_test)[:, 0], rtol=1e-8, atol=1e-12)


def test_auto_damping_is_a_tenth_of_the_mean_eigenvalue():
    """damping="auto" adds 0.1 x trace(H) / p to the diagonal of the Fisher or exact Hessian (1 x 0.1 for the
    identity); a damping that is neither a number >= 0 nor "auto" is refused, naming it, before any model call."""
    X, y = data(120, seed=4)
    model = LogisticRegression().fit(X, y)
    F = fisher_embedding(model, X, y)
    f_test = fisher_embedding(model, X[:2] * 0.5, y[:2])
    H = F.T @ F / len(F)
    lam = 0.1 * np.trace(H) / 4
    expected = -(f_test @ np.linalg.solve(H + lam * np.eye(4), F.T))
    got = influence(model, X, y, X[:2] * 0.5, y[:2], hessian="fisher", damping="auto")
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-14)
    lam_exact = 0.1 * np.trace(hessian_matrix(model, X, y)) / 4
    np.testing.assert_allclose(self_influence(model, X, y, damping="auto"),
                               self_influence(model, X, y, damping=lam_exact), rtol=1e-12)
    np.testing.assert_allclose(influence(model, X, y, X[:2], y[:2], hessian="identity", damping="auto"),
                               influence(model, X, y, X[:2], y[:2], hessian="identity", damping=0.1), rtol=1e-12)
    for bad, hessian in (("auto", "cg"), ("tenth", "fisher"), (-1.0, "fisher"), (float("nan"), "exact"),
                         (True, "fisher")):
        with pytest.raises(ValueError, match="damping"):
            influence(object(), X, y, X[:2], y[:2], hessian=hessian, damping=bad)


def test_torch_influence_cg_equals_exact():
    pytest.importorskip("torch")
    X, labels, net = torch_classifier(hidden=5, seed=1)
    exact = influence(net, X, labels, X[:3], labels[:3], hessian="exact", damping=0.01)
    cg = influence(net, X, labels, X[:3], labels[:3], hessian="cg", damping=0.01, iterations=500)
    np.testing.assert_allclose(cg, exact, rtol=1e-5, atol=1e-7)
    assert np.all(self_influence(net, X, labels, hessian="exact", damping=0.01) > 0)


def test_a_hessian_that_is_not_positive_definite_is_refused_naming_the_damping_that_serves():
    """A network away from a minimum has an indefinite Hessian: the exact and Fisher ones stopped on scipy's
    "k-th leading minor of the array is not positive definite"; conjugate gradients returned NaN for every point."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(6, 3)), rng.integers(0, 2, size=6)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()  # untrained
    smallest = float(np.linalg.eigvalsh(hessian_matrix(net, X, y))[0])
    assert smallest < 0
    with pytest.raises(ValueError, match=rf"damping=0: .* not positive definite \(smallest eigenvalue "
                                         rf"{-abs(smallest):.3g}\).*give a damping above {abs(smallest):.3g}"):
        influence(net, X, y, X[:2], y[:2], hessian="exact", damping=0.0)
    got = influence(net, X, y, X[:2], y[:2], hessian="exact", damping=1.5 * abs(smallest))
    assert np.all(np.isfinite(got))
    with pytest.raises(ValueError, match=r"hessian='cg' with damping=0: .*a direction of curvature -"):
        influence(net, X, y, X[:2], y[:2], hessian="cg", damping=0.0)
    with pytest.raises(ValueError, match=r"hessian='fisher' with damping=0: .*not positive definite"):
        influence(net, X, y, X[:2], y[:2], hessian="fisher", damping=0.0)   # 6 gradients, 26 parameters


# ------------------------------------------------------------------ the use cases of section 6
def flipped_task(seed=0, n=400, flips=30):
    """Two well separated classes; the first ``flips`` labels are flipped (known, and separable from the rest)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    X[:, 0] += np.where(y == 1, 1.5, -1.5)
    noisy = y.copy()
    noisy[:flips] = 1 - noisy[:flips]
    return X, y, noisy


def test_rank_mislabeled_puts_the_flipped_labels_first():
    X, y, noisy = flipped_task()
    model = LogisticRegression().fit(X, noisy)
    clean = np.arange(300, 400)                                      # a small correctly labeled set (no flips)
    order, scores = rank_mislabeled(model, X, noisy, X[clean], y[clean])
    assert set(order[:30].tolist()) == set(range(30))              # every flip ranked before every clean label
    # the score is the influence on the clean set's mean loss (full Fisher kernel, Proposition 3)
    np.testing.assert_allclose(scores, influence(model, X, noisy, X[clean], y[clean], hessian="fisher",
                                                 damping=1e-2).mean(axis=0), rtol=1e-8, atol=1e-12)
    # without a clean set: self-influence
    order_self, scores_self = rank_mislabeled(model, X, noisy)
    np.testing.assert_allclose(scores_self, self_influence(model, X, noisy, hessian="fisher", damping=1e-2))
    assert len(set(order_self[:30].tolist()) & set(range(30))) >= 25
    with pytest.raises(ValueError, match="X_clean and y_clean go together"):
        rank_mislabeled(model, X, noisy, X[clean])
    with pytest.raises(ValueError, match="hessian must be one of"):
        rank_mislabeled(model, X, noisy, hessian="diagonal")


def test_sbq_greedy_order_is_blind_to_the_sign_of_the_affinity():
    """Why SBQ's selection order does not find flips (the enron1 investigation): its first gain z_i^2 / k_ii
    is the same for a point and its mirror image, so a harmful point (z < 0) and a helpful one (z > 0) tie."""
    rng = np.random.default_rng(3)
    helpful = rng.normal(size=(1, 5))
    train = np.vstack([helpful, -helpful, rng.normal(size=(20, 5)) * 0.1])
    test = helpful + 0.01 * rng.normal(size=(10, 5))
    p = select_prototypes(train, test, k=2)
    assert p.indices[0] in (0, 1)                                    # the best direction, whatever its sign
    first_gain = (train @ test.mean(0)) ** 2 / np.einsum("ij,ij->i", train, train)
    assert first_gain[0] == pytest.approx(first_gain[1], rel=1e-12)


def test_a_signed_gain_picks_the_harmful_mirror_first():
    """The gain hook the enron1 investigation measures with: scoring -r / sqrt(d) (harmful only) picks the point
    whose affinity is most negative, where SBQ's r^2 / d ties it with its helpful mirror image."""
    rng = np.random.default_rng(3)
    helpful = rng.normal(size=(1, 5))
    train = np.vstack([helpful, -helpful, rng.normal(size=(20, 5)) * 0.1])
    z = train @ (helpful[0] + 0.01 * rng.normal(size=5))
    mu = float(helpful[0] @ helpful[0])
    plain, _, _ = greedy_on_embeddings(train, z, mu=mu, k=3)
    same, _, _ = greedy_on_embeddings(train, z, mu=mu, k=3, gain=lambda r, d: r**2 / d)
    np.testing.assert_array_equal(plain, same)
    signed, _, _ = greedy_on_embeddings(train, z, mu=mu, k=1, gain=lambda r, d: np.where(r < 0, r**2 / d, -np.inf))
    assert signed[0] == 1 and z[1] < 0


def test_rbf_kernel_on_whitened_embeddings():
    rng = np.random.default_rng(8)
    F = rng.normal(size=(300, 4)) * np.array([1.0, 3.0, 0.2, 1.0])
    k = RBFKernel(F, reg=1e-3, bandwidth=2.0)
    info = F.T @ F / 300 + 1e-3 * np.eye(4)
    d = F[:5, None, :] - F[None, :7, :]
    expected = np.exp(-np.einsum("abi,ij,abj->ab", d, np.linalg.inv(info), d) / 2.0)
    np.testing.assert_allclose(k(F[:5], F[:7]), expected, rtol=1e-10)
    plain = RBFKernel(F, reg=None, bandwidth=2.0)
    np.testing.assert_allclose(plain(F[:2], F[:3]), np.exp(-((F[:2, None] - F[None, :3]) ** 2).sum(-1) / 2.0))
    G = F @ np.linalg.cholesky(np.linalg.inv(info))                  # whitened: squared distances d^T info^-1 d
    d2 = ((G[:, None] - G[None]) ** 2).sum(-1)[np.triu_indices(300, 1)]
    assert RBFKernel(F).bandwidth == pytest.approx(np.quantile(d2, 0.9), rel=0.1)   # 90th percentile, sampled
    with pytest.raises(ValueError, match="bandwidth must be"):
        RBFKernel(F, bandwidth=0.0)


def test_rbf_prototypes_go_past_the_embedding_width_and_their_prefix_weights_are_exact():
    rng = np.random.default_rng(9)
    train, test = rng.normal(size=(150, 3)), rng.normal(size=(40, 3)) + 0.5
    p = select_prototypes(train, test, k=20, kernel="rbf")            # a linear kernel stops at 3
    assert p.indices.size == 20 and np.all(np.diff(p.objective) <= 1e-12)
    kern = RBFKernel(train, reg=1e-3)
    z = kern(train, test).mean(axis=1)
    for m in (1, 7, 20):
        S = p.indices[:m]
        np.testing.assert_allclose(p.weights_at(m), np.linalg.solve(kern(train[S], train[S]), z[S]), rtol=1e-6,
                                   atol=1e-9)
    w = p.sample_weight(7)
    assert w.shape == (7,) and np.all(w >= 0) and w.mean() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="more than the 20 prototypes"):
        p.weights_at(21)


def _torch_case():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    return torch, X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("hessian", ["exact", "cg"])
def test_influence_differentiates_only_the_layers_named_or_the_parameters_that_train(hessian):
    """The Hessian was of every parameter while the gradients were of the layers chosen: (26, 26) against (10, 2)."""
    torch, X, y = _torch_case()
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    named = influence(net, X, y, X[:2], y[:2], layers=["2"], hessian=hessian, damping=5.0)
    net[0].requires_grad_(False)
    frozen = influence(net, X, y, X[:2], y[:2], hessian=hessian, damping=5.0)
    assert named.shape == (2, 40) and np.all(np.isfinite(named))
    np.testing.assert_allclose(frozen, named, rtol=1e-4, atol=1e-7)


def test_influence_of_a_module_in_train_mode_is_that_of_the_module_as_it_predicts():
    """Dropout and batch norm in train mode: the Hessian raised (vmap's randomness, batch norm's in-place update) or
    changed from call to call; it is now the eval-mode module's, as the gradients are."""
    torch, X, y = _torch_case()
    for middle in (torch.nn.Dropout(0.5), torch.nn.BatchNorm1d(8)):
        net = torch.nn.Sequential(torch.nn.Linear(3, 8), middle, torch.nn.Linear(8, 2))
        if isinstance(middle, torch.nn.BatchNorm1d):
            net(torch.as_tensor(X))                                      # running statistics of the data
        evaluated = influence(net.eval(), X, y, X[:2], y[:2], damping=5.0)
        for hessian in ("exact", "cg"):
            first = influence(net.train(), X, y, X[:2], y[:2], hessian=hessian, damping=5.0)
            again = influence(net.train(), X, y, X[:2], y[:2], hessian=hessian, damping=5.0)
            np.testing.assert_array_equal(first, again)
            np.testing.assert_allclose(first, evaluated, rtol=1e-3, atol=1e-6)
            assert net.training


def test_influence_of_a_module_that_reads_token_ids_keeps_them_integers():
    torch, _, y = _torch_case()
    net = torch.nn.Sequential(torch.nn.Embedding(10, 3), torch.nn.Flatten(), torch.nn.Linear(6, 2))
    ids = np.random.default_rng(1).integers(0, 10, size=(40, 2))
    for hessian in ("exact", "cg"):
        assert np.all(np.isfinite(influence(net, ids, y, ids[:2], y[:2], hessian=hessian, damping=5.0)))


def test_a_label_the_model_never_saw_and_an_empty_test_set_are_refused_naming_them():
    from sklearn.linear_model import LogisticRegression

    _, X, y = _torch_case()
    model = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"y_test holds the label 5, which is none of the model.s classes"):
        influence(model, X, y, X[:2], np.array([0, 5]))
    with pytest.raises(ValueError, match="test holds no points"):
        select_prototypes(X, np.zeros((0, 3)), k=3)


# ------------------------------------------------------------------------ linear models' closed forms
def _regression(n=80, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ [1.0, -2.0, 0.5] + rng.normal(size=n)


def test_a_regressors_row_is_its_own_and_its_influence_the_explicit_formula_and_leave_one_out():
    """The embedding divided by the residual variance of the rows given: a row's gradient changed with the rows
    embedded beside it (0.64 apart), and one test row's influence was -1.18 alone, -1.46 among ten."""
    X, y = _regression()
    lin = LinearRegression().fit(X, y)
    np.testing.assert_array_equal(fisher_embedding(lin, X[:5], y[:5]), fisher_embedding(lin, X, y)[:5])
    x_t, y_t = X[:1] + 0.3, y[:1]
    one, batch = influence(lin, X, y, x_t, y_t), influence(lin, X, y, np.vstack([x_t, X[:9]]), np.r_[y_t, y[:9]])
    np.testing.assert_allclose(one[0], batch[0], rtol=1e-12)
    Xa, N = np.c_[X, np.ones(len(X))], len(X)
    r, r_t = y - lin.predict(X), y_t - lin.predict(x_t)
    explicit = -r_t[0] * r * (np.r_[x_t[0], 1.0] @ np.linalg.solve(Xa.T @ Xa / N, Xa.T))
    np.testing.assert_allclose(one[0], explicit, rtol=1e-10, atol=1e-12)
    for i in np.argsort(-np.abs(one[0]))[:5]:                 # the squared loss / 2 after refitting without i
        keep = np.arange(N) != i
        refit = LinearRegression().fit(X[keep], y[keep])
        change = 0.5 * (y_t - refit.predict(x_t))[0] ** 2 - 0.5 * r_t[0] ** 2
        np.testing.assert_allclose(-one[0, i] / N, change, rtol=0.25)


def test_classifiers_other_than_logistic_regression_and_regressors_of_two_outputs_are_refused():
    """A RidgeClassifier or SGDClassifier went down the regressor's formula: label minus predicted label, zeros."""
    from sklearn.linear_model import RidgeClassifier, SGDClassifier

    X, y = data()
    for model in (RidgeClassifier().fit(X, y), SGDClassifier(loss="log_loss", random_state=0).fit(X, y)):
        with pytest.raises(TypeError, match=f"got {type(model).__name__}"):
            fisher_embedding(model, X, y)
    Y = np.c_[X[:, 0], X[:, 1]]
    with pytest.raises(ValueError, match="predicts 2 outputs"):
        fisher_embedding(LinearRegression().fit(X, Y), X, Y)


def test_a_frames_columns_are_matched_to_the_models_features_by_name():
    """A DataFrame in another column order was read by position: embeddings 2.2 off, with no error."""
    pd = pytest.importorskip("pandas")
    X, y = data(50)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = LogisticRegression().fit(frame, y)
    F = fisher_embedding(model, frame, y)
    np.testing.assert_array_equal(fisher_embedding(model, frame[["c", "a", "b"]], y), F)
    np.testing.assert_array_equal(influence(model, frame, y, frame[["b", "c", "a"]][:3], y[:3]),
                                  influence(model, frame, y, frame[:3], y[:3]))
    with pytest.raises(ValueError, match=r"X_test columns do not match the model's features.*missing \['c'\]"):
        influence(model, frame, y, frame.rename(columns={"c": "z"})[:3], y[:3])


class CountingLogistic(LogisticRegression):
    calls = 0

    def predict_proba(self, X):
        type(self).calls += 1
        return super().predict_proba(X)


@pytest.mark.parametrize("make, message", [
    (lambda X, y: (X, np.r_[np.nan, y[1:]], X[:2], y[:2]), r"y_train holds nan at row 0"),
    (lambda X, y: (X, y, X[:2, :2], y[:2]), r"X_test must have shape \(n, 3\)"),
    (lambda X, y: (X, y, X[:0], y[:0]), r"X_test holds no rows"),
    (lambda X, y: (np.where(X > 2.5, np.inf, X), y, X[:2], y[:2]), r"X_train holds inf at row"),
    (lambda X, y: (X, y[:, None], X[:2], y[:2]), r"y_train must hold one label per row of X_train"),
])
def test_bad_rows_are_refused_before_any_model_call_naming_their_set(make, message):
    X, y = data()
    model = CountingLogistic().fit(X, y)
    CountingLogistic.calls = 0
    with pytest.raises(ValueError, match=message):
        influence(model, *make(X, y))
    assert CountingLogistic.calls == 0


def _fd_hessian(objective, theta, eps=1e-4):
    E = np.eye(theta.size)
    return np.array([[(objective(theta + eps * (a + b)) - objective(theta + eps * (a - b))
                       - objective(theta - eps * (a - b)) + objective(theta - eps * (a + b))) / (4 * eps**2)
                      for b in E] for a in E])


def test_the_hessian_holds_the_l2_part_of_the_models_own_penalty_and_no_l1_part():
    """An elastic-net LogisticRegression got its whole penalty as L2 (0.028 off the diagonal); Lasso got alpha / N
    of curvature an L1 penalty does not have, ElasticNet alpha / N for alpha (1 - l1_ratio)."""
    from sklearn.linear_model import ElasticNet, Lasso, Ridge, SGDRegressor

    X, y = _regression(60, seed=0)
    N = len(X)

    def sq(t):
        return np.mean((y - X @ t[:3] - t[3]) ** 2) / 2

    cases = [(Ridge(alpha=3.0), lambda t: sq(t) + 3.0 / (2 * N) * t[:3] @ t[:3]),
             (Lasso(alpha=0.1), sq),
             (ElasticNet(alpha=0.1, l1_ratio=0.3), lambda t: sq(t) + 0.1 * 0.7 / 2 * t[:3] @ t[:3]),
             (SGDRegressor(alpha=0.01, random_state=0), lambda t: sq(t) + 0.01 / 2 * t[:3] @ t[:3])]
    for model, objective in cases:
        model.fit(X, y)
        np.testing.assert_allclose(hessian_matrix(model, X, y), _fd_hessian(objective, parameters_of(model)),
                                   atol=1e-6, err_msg=type(model).__name__)
    Xc, yc = data(60)
    net = LogisticRegression(l1_ratio=0.5, solver="saga", C=0.3, max_iter=100_000).fit(Xc, yc)

    def logistic(t):
        z = Xc @ t[:3] + t[3]
        return np.mean(np.logaddexp(0, z) - yc * z) + 0.5 * 0.5 * (t[:3] @ t[:3]) / (0.3 * N)

    np.testing.assert_allclose(hessian_matrix(net, Xc, yc), _fd_hessian(logistic, parameters_of(net)), atol=1e-6)


def test_multinomial_influence_is_the_pseudo_inverse_on_the_parameters_the_data_identify():
    """The intercepts of a softmax are free to move together, so the exact Hessian is singular: undamped influence
    was refused (smallest eigenvalue -2.8e-17) or not, by rounding."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    labels = np.digitize(X[:, 0] + 0.3 * rng.normal(size=60), [-0.5, 0.5])
    model = LogisticRegression(max_iter=5000, tol=1e-12).fit(X, labels)
    H = hessian_matrix(model, X, labels)
    F, F_t = fisher_embedding(model, X, labels), fisher_embedding(model, X[:4], labels[:4])
    np.testing.assert_allclose(influence(model, X, labels, X[:4], labels[:4]), -(F_t @ np.linalg.pinv(H) @ F.T),
                               atol=1e-9)


@pytest.mark.parametrize("seed", [None, np.random.default_rng(2)])
def test_every_set_of_one_call_is_projected_by_one_matrix_whatever_the_seed(seed):
    """A None or Generator seed drew one matrix for the training points and another for the test points: the
    influence of a set on itself was 33 away from symmetric."""
    X, y = data(80)
    model = LogisticRegression().fit(X, y)
    I = influence(model, X, y, X, y, hessian="fisher", projection=3, seed=seed)
    np.testing.assert_allclose(I, I.T, atol=1e-12)
    ranked = rank_mislabeled(model, X, y, X[:20], y[:20], projection=3, seed=np.random.default_rng(5))[1]
    np.testing.assert_array_equal(ranked, rank_mislabeled(model, X, y, X[:20], y[:20], projection=3,
                                                          seed=np.random.default_rng(5))[1])


def test_fewer_than_one_iteration_is_refused():
    """cg and lissa with iterations=0 returned zeros for every influence."""
    torch, X, y = _torch_case()
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    for hessian in ("cg", "lissa"):
        with pytest.raises(ValueError, match="iterations must be >= 1, got 0"):
            influence(net, X, y, X[:2], y[:2], hessian=hessian, damping=1.0, iterations=0)


# ------------------------------------------------------------------------ prototypes' arguments
@pytest.mark.parametrize("kw, error, message", [
    (dict(kernel="fisher", test=np.ones((3, 3))), ValueError, r"same width, got \(50, 4\) and \(3, 3\)"),
    (dict(kernel="rbf", test=np.ones((3, 3))), ValueError, r"same width, got \(50, 4\) and \(3, 3\)"),
    (dict(kernel="fisher", nan=True), ValueError, r"train embeddings hold NaN or inf in 1 row\(s\) \(first: \[7\]\)"),
    (dict(method="distributed", n_parts=0), ValueError, "n_parts must be >= 1, got 0"),
    (dict(jitter=None), TypeError, "jitter must be a number, got None"),
    (dict(method="stochastic", delta="a"), TypeError, "delta must be a number"),
    (dict(kernel="linear", reg=-1.0), ValueError, "reg must be finite and > 0"),
    (dict(kernel=lambda A, B: np.ones(len(A))), ValueError, r"kernel\(A, B\) must return an array of shape"),
    (dict(train=np.array([["a"] * 4] * 50)), TypeError, "train embeddings must be numbers"),
])
def test_bad_prototype_arguments_are_refused_naming_them(kw, error, message):
    """Each went on or failed elsewhere: width and NaN met scipy inside the kernel's fit ('shapes of a (4, 4) and
    b (3, 10)', 'array must not contain infs or NaNs'), n_parts=0 became the default, a negative reg was ignored,
    a kernel of the wrong shape raised numpy's AxisError."""
    rng = np.random.default_rng(0)
    args = dict(train=rng.normal(size=(50, 4)), test=rng.normal(size=(10, 4)), k=3)
    if kw.pop("nan", False):
        args["train"][7, 2] = np.nan
    with pytest.raises(error, match=message):
        select_prototypes(**(args | kw))
