"""fs.global_importance (SAGE): closed forms on linear models, brute force of the game, seeds and budgets, the
classification losses, and bad inputs refused before any model call."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import fairshare as fs


class Counting:
    """A linear model that counts the rows it is asked about."""

    def __init__(self, beta):
        self.beta, self.rows, self.calls = np.asarray(beta, dtype=float), 0, 0

    def predict(self, R):
        self.calls += 1
        self.rows += len(R)
        return np.asarray(R) @ self.beta


def _shapley(values: dict, d: int) -> np.ndarray:
    """Shapley values of a game given as {frozenset: value}, by the formula."""
    phi = np.zeros(d)
    for j in range(d):
        others = [k for k in range(d) if k != j]
        for size in range(d):
            w = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
            for S in itertools.combinations(others, size):
                phi[j] += w * (values[frozenset(S) | {j}] - values[frozenset(S)])
    return phi


def _brute(f, X, y, bg, imputation="marginal"):
    """v(S) for every S from the model's imputed predictions at each row (ModelGame, row by row): mse."""
    d = X.shape[1]
    masks = np.array(list(itertools.product([False, True], repeat=d)))
    preds = np.array([fs.games.ModelGame(f, x, bg, imputation=imputation)(masks) for x in X])    # (N, 2^d)
    loss = ((preds - y[:, None]) ** 2).mean(axis=0)
    empty = loss[0]
    return {frozenset(np.flatnonzero(m)): empty - loss[k] for k, m in enumerate(masks)}


def _white(rows: np.ndarray) -> np.ndarray:
    """Rows with mean exactly 0 and covariance (ddof 0) exactly the identity."""
    rows = rows - rows.mean(axis=0)
    return rows @ np.linalg.inv(np.linalg.cholesky(rows.T @ rows / len(rows)).T)


def test_linear_model_mse_marginal_matches_the_closed_form():
    rng = np.random.default_rng(0)
    N, beta, scale = 2000, np.array([3.0, -2.0, 1.0, 0.0]), np.array([1.0, 0.5, 2.0, 1.0])
    X = rng.normal(size=(N, 4)) * scale
    noise = 0.3 * rng.normal(size=N)
    y = X @ beta + noise
    bg = X[:200]
    model = Counting(beta)
    e = fs.global_importance(model, X, y, background=bg, budget=16, seed=0)
    assert e.method == "exact" and np.all(e.stderr == 0)
    # the finite game's closed form: phi_j = beta_j sum_k beta_k M_jk + 2 beta_j mean(eps c_j), c = X - mean(bg)
    C = X - bg.mean(axis=0)
    M = C.T @ C / N
    finite = beta * (M @ beta) + 2 * beta * (C * noise[:, None]).mean(axis=0)
    np.testing.assert_allclose(e.values, finite, rtol=1e-9, atol=1e-9)
    # probe, v(empty)'s mean prediction, 16 coalitions of which the empty one costs no model rows (its loss is known)
    assert model.rows == e.info["model_rows"] == 64 + 200 + 15 * N * 200
    # independent features (sample covariance diagonal, background mean the rows' mean), noise orthogonal to
    # them: SAGE value_j = beta_j^2 Var(x_j) exactly
    Xw, bw = _white(rng.normal(size=(N, 4))) * scale, _white(rng.normal(size=(200, 4))) * scale
    eps = rng.normal(size=N)
    eps -= Xw @ np.linalg.lstsq(Xw, eps, rcond=None)[0]
    w = fs.global_importance(Counting(beta), Xw, Xw @ beta + eps, background=bw, budget=16, seed=0)
    np.testing.assert_allclose(w.values, beta ** 2 * scale ** 2, rtol=1e-9, atol=1e-9)
    assert w.info["loss_of_model"] == pytest.approx(np.mean(eps ** 2), rel=1e-9)


def _banzhaf(values: dict, d: int) -> np.ndarray:
    return np.array([np.mean([values[S | {j}] - values[S] for S in values if j not in S]) for j in range(d)])


@pytest.mark.parametrize("imputation", ["marginal", "conditional", "copula"])
def test_exact_enumeration_equals_brute_force_and_adds_up(imputation):
    rng = np.random.default_rng(1)
    X = rng.multivariate_normal([0, 0, 1], [[1, 0.6, 0], [0.6, 1, 0.3], [0, 0.3, 1]], size=40)
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.1 * rng.normal(size=40)

    def f(R):
        return R[:, 0] * R[:, 1] + np.sin(R[:, 2])

    bg = X[:25]
    brute = _brute(f, X, y, bg, "gaussian" if imputation == "conditional" else imputation)
    e = fs.global_importance(f, X, y, background=bg, imputation=imputation, budget=8, seed=0)
    np.testing.assert_allclose(e.values, _shapley(brute, 3), rtol=1e-9, atol=1e-12)
    full = brute[frozenset(range(3))]
    assert e.grand_value == pytest.approx(full, rel=1e-10) and e.empty_value == 0.0
    assert e.values.sum() == pytest.approx(full, rel=1e-9)
    if imputation == "marginal":                       # v(all) = loss of the mean prediction - the model's loss
        mean_pred = f(bg).mean()
        assert full == pytest.approx(np.mean((mean_pred - y) ** 2) - np.mean((f(X) - y) ** 2), rel=1e-10)
    assert e.player_names == ["x0", "x1", "x2"] and e.info["rows"] == 40
    b = fs.global_importance(f, X, y, background=bg, imputation=imputation, index="banzhaf", budget=8, seed=0)
    np.testing.assert_allclose(b.values, _banzhaf(brute, 3), rtol=1e-9, atol=1e-12)


def test_same_seed_same_bits_and_the_budget_counts_coalitions():
    rng = np.random.default_rng(2)
    beta = np.linspace(1, 2, 8)
    X = rng.normal(size=(50, 8))
    y = X @ beta + np.sin(X[:, 0])
    runs = []
    for _ in range(2):
        model = Counting(beta)
        runs.append((fs.global_importance(model, X, y, budget=60, seed=7), model))
    (a, ma), (b, _) = runs
    assert a.method != "exact" and a.n_evaluations <= 60
    assert np.array_equal(a.values, b.values) and np.array_equal(a.stderr, b.stderr)
    assert np.array_equal(a.info["data_stderr"], b.info["data_stderr"])
    assert ma.rows == 50 + 50 + (a.n_evaluations - 1) * 50 * 50    # probe, empty's mean prediction, the others
    c = fs.global_importance(Counting(beta), X, y, budget=60, seed=8)
    assert not np.array_equal(a.values, c.values)
    # the standard errors are honest: the exact values lie within a few of them
    exact = fs.global_importance(Counting(beta), X, y, budget=256, seed=7)
    assert np.all(np.abs(a.values - exact.values) <= 4 * a.stderr + 1e-9)
    assert np.all(a.info["total_stderr"] >= a.stderr) and "data_stderr" in a.info["stderr_covers"]


@pytest.mark.parametrize("folds", [2, 5])
def test_the_data_stderr_covers_the_population_value_at_few_folds(folds):
    # linear model, MSE, marginal imputation from a fixed background B: the population's SAGE values are
    # beta_j (M beta)_j with M = I + mean(B) mean(B)^T (x ~ N(0, I)); two data_stderr must hold them 95% of the time
    # (the folds' spread has folds - 1 degrees of freedom: the normal quantile covered 0.71 at 2 folds, 0.86 at 5)
    beta = np.array([1.5, -1.0, 0.5])
    B = np.random.default_rng(123).normal(size=(30, 3))
    m = B.mean(axis=0)
    truth = beta * ((np.eye(3) + np.outer(m, m)) @ beta)
    hits = []
    for t in range(120):
        X = np.random.default_rng(1000 + t).normal(size=(40, 3))
        e = fs.global_importance(lambda R: R @ beta, X, X @ beta, background=B, budget=8, seed=t, folds=folds)
        hits.append(np.abs(e.values - truth) <= 1.96 * e.info["data_stderr"])
    assert e.method == "exact" and 0.91 <= np.mean(hits) <= 0.99


def test_classification_losses_and_a_callable_loss():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.metrics import log_loss

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    labels = np.array(["a", "b", "c"])[np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(120, 3)), axis=1)]
    clf = LogisticRegression().fit(X, labels)
    bg = X[:30]
    mean_proba = clf.predict_proba(bg).mean(axis=0)
    e = fs.global_importance(clf, X, labels, loss="log_loss", background=bg, budget=8)
    want = log_loss(labels, np.tile(mean_proba, (120, 1)), labels=clf.classes_) - log_loss(labels, clf.predict_proba(X))
    assert e.grand_value == pytest.approx(want, rel=1e-9) and e.values.sum() == pytest.approx(want, rel=1e-9)
    z = fs.global_importance(clf, X, labels, loss="zero_one", background=bg, budget=8)
    err_mean = np.mean(clf.classes_[np.argmax(mean_proba)] != labels)
    assert z.grand_value == pytest.approx(err_mean - np.mean(clf.predict(X) != labels), abs=1e-12)
    y = X @ np.array([1.0, 2.0, 0.0]) + 0.5 * rng.normal(size=120)
    reg = LinearRegression().fit(X, y)

    def mae(pred, target):
        return np.abs(pred - target)

    m = fs.global_importance(reg, X, y, loss=mae, background=bg, budget=8)
    want = np.mean(np.abs(reg.predict(bg).mean() - y)) - np.mean(np.abs(reg.predict(X) - y))
    assert m.grand_value == pytest.approx(want, rel=1e-9) and m.info["loss"] == "mae"
    same = fs.global_importance(reg, X, y, loss=lambda p, t: (p - t) ** 2, background=bg, budget=8)
    np.testing.assert_allclose(same.values, fs.global_importance(reg, X, y, background=bg, budget=8).values,
                               rtol=1e-12)
    import matplotlib
    matplotlib.use("Agg")
    assert m.plot("bar") is not None


@pytest.mark.parametrize("kwargs, name", [
    (dict(y=np.zeros(9)), "y"),
    (dict(loss="hinge"), "loss"),
    (dict(imputation="magic"), "imputation"),
    (dict(X=np.where(np.eye(10, 3) == 1, np.nan, 0.0)), "X"),
    (dict(background=np.full((4, 3), np.inf)), "background"),
    (dict(folds=1), "folds"),
    (dict(budget=0), "budget"),
])
def test_bad_inputs_are_refused_naming_the_argument_before_any_model_call(kwargs, name):
    model = Counting([1.0, 2.0, 3.0])
    args = dict(X=np.ones((10, 3)), y=np.zeros(10)) | kwargs
    with pytest.raises((ValueError, TypeError), match=name):
        fs.global_importance(model, **{k: v for k, v in args.items() if k not in ("X", "y")}, X=args["X"],
                             y=args["y"])
    assert model.calls == 0


def test_a_classification_loss_on_a_regressor_is_refused():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(30, 2)), rng.integers(0, 2, size=30)
    reg = LinearRegression().fit(X, y)
    calls = []
    reg_predict = reg.predict
    reg.predict = lambda R: calls.append(1) or reg_predict(R)
    with pytest.raises(ValueError, match="loss='log_loss'.*regressor"):
        fs.global_importance(reg, X, y, loss="log_loss", budget=4)
    assert not calls                                           # an sklearn regressor: known without a call
    with pytest.raises(ValueError, match="loss='log_loss' reads probabilities"):
        fs.global_importance(lambda R: 5 * R[:, 0], X, y, loss="log_loss", budget=4)   # a function: one probe


def test_small_budgets_run_one_permutation_per_row_and_beat_one_permutation_of_the_mean():
    """Below the regression's 2d + 2 coalitions, auto spends the budget as each row's own permutation (antithetic in
    its second round): the same model rows as one permutation of the mean game, a lower error against exact."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5))
    bg = X[:10]
    f = lambda R: np.tanh(R[:, 0] * R[:, 1]) + R[:, 2] ** 2 + 0.5 * R[:, 3] * R[:, 4]  # noqa: E731
    y = f(X) + 0.1 * rng.normal(size=60)
    exact = fs.global_importance(f, X, y, background=bg, budget=32).values

    def err(v):
        return np.linalg.norm(v - exact) / np.linalg.norm(exact)

    ours, one, seen = [], [], []

    def counted(R):
        seen.append(len(R))
        return f(R)

    for seed in range(5):
        seen.clear()
        e = fs.global_importance(counted, X, y, background=bg, budget=8, seed=seed)
        assert e.method == "row-permutations" and e.n_evaluations == 8 and e.info["permutations"] == 105
        assert sum(seen) == e.info["model_rows"] == 8 * 60 * 10 + 10 + 60          # + the empty and the probe
        assert e.values.sum() == pytest.approx(e.grand_value, abs=1e-12) and np.all(np.isfinite(e.stderr))
        ours.append(err(e.values))
        one.append(err(fs.global_importance(f, X, y, background=bg, budget=8, seed=seed,
                                            method="permutation").values))
    np.testing.assert_allclose(e.values, [0.13324289, 0.20322544, 2.93512209, 0.1080087, 0.06947058], atol=1e-7)
    assert np.median(ours) < 0.04 and np.median(ours) < 0.75 * np.median(one)
    # one output (folds=0): the shapes every other method gives, the same values (the folds' outputs only add columns)
    single = fs.global_importance(f, X, y, background=bg, budget=8, seed=4, folds=0)
    plain = fs.global_importance(f, X, y, background=bg, budget=8, seed=4, folds=0, method="permutation")
    assert single.values.shape == single.stderr.shape == plain.values.shape == (5,)
    assert isinstance(single.grand_value, float) and single.grand_value == pytest.approx(plain.grand_value)
    np.testing.assert_allclose(single.values, e.values, atol=1e-12)


def test_pair_falls_equal_the_games_rows_under_both_imputations():
    X = np.random.default_rng(0).normal(size=(30, 4))
    f = lambda R: R @ np.array([1.0, 2.0, 0.0, 1.0]) + R[:, 0] * R[:, 2]  # noqa: E731
    S = np.random.default_rng(1).random((5, 4)) < 0.5
    rows, c = np.random.default_rng(2).integers(0, 30, 12), np.arange(12) % 5
    for imputer in (None, fs.games.imputers.make_imputer("gaussian", X)):
        g = fs.games.LossGame(f, X, f(X) + 0.1, background=X[:7], imputer=imputer)
        fall = g.empty_losses()[None] - g.losses(S)
        np.testing.assert_allclose(g.pair_falls(S[c], rows), fall[c, rows], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("budget, imputation, frame", [(15, "marginal", False), (150, "marginal", False),
                                                        (40, "conditional", False), (40, "marginal", True)])
def test_model_rows_counts_every_row_sent_to_the_model_the_probe_included(budget, imputation, frame):
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 10))
    w = rng.normal(size=10)
    model = Counting(w)
    rows = pd.DataFrame(X[:20], columns=[f"c{j}" for j in range(10)]) if frame else X[:20]
    e = fs.global_importance(model.predict, rows, X[:20] @ w, background=X[30:40], imputation=imputation,
                             budget=budget, seed=0)
    assert model.rows > 20 and e.info["model_rows"] == model.rows      # the 20 rows of the probe counted


def test_the_empty_coalition_falls_by_zero_without_model_rows():
    """Its loss is every row's empty loss (computed once, from the background alone): the mean game and each row's
    game answer it without sending the background to the model again, with the values they computed before."""
    X = np.random.default_rng(0).normal(size=(30, 4))
    f = lambda R: np.tanh(R[:, 0] * R[:, 1]) + R[:, 2]  # noqa: E731
    S = np.array([[False] * 4, [True, False, True, False], [False] * 4])
    for imputer in (None, fs.games.imputers.make_imputer("gaussian", X)):
        g = fs.games.LossGame(f, X, f(X) + 0.3, background=X[:7], imputer=imputer)
        g.empty_losses()
        before = g.model_rows
        values = g(S)
        assert values[0] == values[2] == 0.0 and g.model_rows - before == 30 * g.rows_per_pair    # one coalition
        np.testing.assert_allclose(values[1], g.empty_losses().mean() - g.losses(S[1:2]).mean(), rtol=1e-12)
        before = g.model_rows
        row = g.row_game(3)(S)
        assert row[0] == row[2] == 0.0 and g.model_rows - before == g.rows_per_pair
        assert row[1] == g.pair_falls(S[1:2], np.array([3]))[0]


def _interacting(R):
    return R[:, 0] * R[:, 1] * R[:, 2] + np.tanh(R[:, 3] + R[:, 4]) + 0.3 * R[:, 5] + R[:, 6] * R[:, 7]


@pytest.fixture(scope="module")
def interacting():
    """A model of 8 features with pairs and a triple, its rows, targets, background and exact SAGE values."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 8))
    y = _interacting(X) + 0.1 * rng.normal(size=40)
    exact = fs.global_importance(_interacting, X, y, background=X[:8], budget=256, folds=0).values
    return _interacting, X, y, X[:8], exact


def test_from_the_regressions_budget_auto_runs_each_rows_own_regression(interacting):
    """From 2d + 2 coalitions auto gives each row its own regression (its own seed, the same model rows as the mean
    game's) while the budget covers under a quarter of all coalitions: values that add up, a lower error than one
    regression of the mean game, standard errors from the rows' own, and the mean game on the engine whenever a
    method or a stopping rule is given."""
    from fairshare._core.seeds import item_root, item_seed
    from fairshare.engine.choice import choose
    from fairshare.engine.engine import run

    f, X, y, bg, exact = interacting
    ours, plain, inside = [], [], []
    for seed in range(6):
        e = fs.global_importance(f, X, y, background=bg, budget=40, seed=seed, folds=0)
        assert e.method == "row-regressions" and e.n_evaluations == 40
        assert e.values.sum() == pytest.approx(e.grand_value, abs=1e-9)
        assert np.all(np.isfinite(e.stderr)) and np.all(e.stderr > 0)
        p = fs.global_importance(f, X, y, background=bg, budget=40, seed=seed, folds=0, method="regression")
        ours.append(np.linalg.norm(e.values - exact))
        plain.append(np.linalg.norm(p.values - exact))
        inside.append(np.mean(np.abs(e.values - exact) <= 1.96 * e.stderr))
    assert np.median(ours) < 0.6 * np.median(plain), (ours, plain)            # measured: 0.12 against 0.25
    assert np.mean(inside) >= 0.75, inside                          # the error bars hold the exact values
    game = fs.games.LossGame(f, X, y, background=bg)                # by hand: each row's run, its item seed
    sv = fs.Semivalue.shapley()
    choice = choose(game.row_game(0), sv, "regression", 40)
    rows = [run(game.row_game(i), sv, choice, item_seed(item_root(5), i)) for i in range(40)]
    np.testing.assert_allclose(e.values, np.mean([r.values for r in rows], axis=0), atol=1e-12)
    np.testing.assert_allclose(e.stderr, np.sqrt(np.sum([r.stderr ** 2 for r in rows], axis=0)) / 40, atol=1e-12)
    assert fs.global_importance(f, X, y, background=bg, budget=40, seed=1, tol=0.5).method == "surrogate-regression"
    heard = []
    folds = fs.global_importance(f, X, y, background=bg, budget=40, seed=5, progress=lambda *a: heard.append(a[:2]))
    assert heard == [(i, 40) for i in range(1, 41)]                                  # progress: row by row
    np.testing.assert_allclose(folds.values, e.values, atol=1e-12)                # folds add outputs, not calls
    assert np.all(np.isfinite(folds.info["data_stderr"])) and np.all(np.isfinite(folds.stderr))
    few = np.random.default_rng(0).normal(size=(20, 7))   # a budget too small for error bars: infinite, said once
    g = lambda R: R[:, 0] * R[:, 1] + R[:, 2]             # noqa: E731
    with pytest.warns(fs.FairshareWarning, match="budget=16 is too small for 'regression'.*a budget of 32"):
        small = fs.global_importance(g, few, g(few), background=few[:5], budget=16, seed=0)
    assert small.method == "row-regressions" and np.all(np.isinf(small.stderr))


def test_from_a_quarter_of_all_coalitions_auto_runs_the_mean_game_with_its_surrogate(interacting):
    """Above a quarter of all coalitions the mean game's regression (drawn without replacement) is the more accurate,
    and a coalition costs every row's model rows, so auto adds its interaction surrogate: lower error where the game
    interacts, the plain regression bit for bit where the surrogate does not pay."""
    f, X, y, bg, exact = interacting
    ours, plain = [], []
    for seed in range(4):
        e = fs.global_importance(f, X, y, background=bg, budget=100, seed=seed, folds=0)
        assert e.method == "surrogate-regression" and "each row" not in e.info["choice"]["why"]
        p = fs.global_importance(f, X, y, background=bg, budget=100, seed=seed, folds=0, method="regression")
        ours.append(np.linalg.norm(e.values - exact))
        plain.append(np.linalg.norm(p.values - exact))
    assert np.median(ours) < 0.75 * np.median(plain), (ours, plain)          # measured: 0.031 against 0.053
    import dataclasses

    from fairshare.doors.global_importance import _with_surrogate
    from fairshare.engine.choice import choose

    game, sv = fs.games.LossGame(f, X, y, background=bg), fs.Semivalue.shapley()
    own = choose(game, sv, budget=100)            # auto's own choice is the surrogate already: kept as it is
    assert own.method == "surrogate-regression" and _with_surrogate(game, sv, own, None, {}) is own
    gave_way = dataclasses.replace(choose(game, sv, "regression", 100), auto=True)   # where auto's rule gave way
    upgraded = _with_surrogate(game, sv, gave_way, None, {})
    assert upgraded.method == "surrogate-regression" and "upgraded to surrogate-regression" in upgraded.reason
    assert _with_surrogate(game, sv, gave_way, None, {"lam": 0.0}) is gave_way      # options given: as asked
    Z = np.random.default_rng(0).normal(size=(60, 6))
    Z[:, 1] += Z[:, 0]

    def h(R):
        return R[:, 0] * R[:, 1] + np.tanh(R[:, 2]) + R[:, 3]

    a = fs.global_importance(h, Z, h(Z), background=Z[:10], budget=30, seed=1, folds=0)
    b = fs.global_importance(h, Z, h(Z), background=Z[:10], budget=30, seed=1, folds=0, method="regression")
    assert a.method == "surrogate-regression" and np.array_equal(a.values, b.values)     # no gain: plain, bit for bit


def test_a_background_frame_is_matched_to_x_by_column_name_for_a_model_without_names():
    """A function reading columns by name: the background's columns in another order are aligned to X's names
    (were read by position: the values of a, b were 6.61, 3.47 instead of 5.90, 3.41), unknown names refused."""
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).normal(size=(30, 3)) * [1.0, 2.0, 3.0]
    frame, y = pd.DataFrame(X, columns=list("abc")), X @ [2.0, 1.0, 0.0]

    def f(D):
        return 2 * D["a"].to_numpy() + D["b"].to_numpy()

    same = fs.global_importance(f, frame, y, background=frame.iloc[:10], budget=8, seed=0)
    shuffled = fs.global_importance(f, frame, y, background=frame.iloc[:10][list("cab")], budget=8, seed=0)
    assert np.array_equal(same.values, shuffled.values)
    np.testing.assert_allclose(same.values, [5.90148003, 3.40619817, 0.0], atol=1e-7)
    with pytest.raises(ValueError, match="background columns do not match"):
        fs.global_importance(f, frame, y, background=frame.iloc[:10].rename(columns={"c": "z"}), budget=8)


def test_an_empty_background_is_refused_by_name_before_any_model_call():
    X = np.random.default_rng(0).normal(size=(20, 3))
    model = Counting([1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="background has no rows"):
        fs.global_importance(model.predict, X, X @ model.beta, background=X[:0], budget=8)
    assert model.calls == 0


def test_labels_are_read_through_classes_in_the_models_own_order():
    """classes_ not sorted (a custom model: its probability columns in that order) was refused as labels the
    model does not know; the labels now find their columns, as the same model with sorted classes does."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    labels = np.where(X[:, 0] > 0, "yes", "no")

    class YesFirst:
        classes_ = np.array(["yes", "no"])

        def predict_proba(self, R):
            p = 1 / (1 + np.exp(-3 * np.asarray(R)[:, 0]))
            return np.column_stack([p, 1 - p])

    class NoFirst(YesFirst):
        classes_ = np.array(["no", "yes"])

        def predict_proba(self, R):
            return super().predict_proba(R)[:, ::-1]

    unsorted = fs.global_importance(YesFirst(), X, labels, loss="log_loss", budget=8, seed=0)
    ordered = fs.global_importance(NoFirst(), X, labels, loss="log_loss", budget=8, seed=0)
    np.testing.assert_allclose(unsorted.values, ordered.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(unsorted.values, [0.56693108, 0.0, 0.0], atol=1e-7)


def test_the_budget_and_seed_are_recorded_and_the_report_shows_them(tmp_path):
    """As every other door records them: the report of a SAGE run said 'not recorded' for both."""
    X = np.random.default_rng(0).normal(size=(30, 4))
    model = Counting([2.0, 1.0, 0.0, 0.5])
    e = fs.global_importance(model.predict, X, X @ model.beta, budget=16, seed=7)
    assert (e.info["budget"], e.info["seed"]) == (16, "7")
    page = e.to_html(tmp_path / "sage.html").read_text(encoding="utf-8")
    assert "<th>budget</th><td>16</td>" in page and "<th>seed</th><td>7</td>" in page


@pytest.mark.parametrize("folds", [0, 5])
def test_no_rows_are_refused_by_name_before_any_model_call(folds):
    """Were a ZeroDivisionError (folds=0) or 'folds=5 is more than the 0 rows of X'."""
    model = Counting([1.0, 2.0])
    with pytest.raises(ValueError, match="X has no rows"):
        fs.global_importance(model.predict, np.zeros((0, 2)), np.zeros(0), folds=folds, budget=4)
    assert model.calls == 0


def test_the_bar_plot_of_sage_values_keeps_a_harmful_features_negative_value():
    """x2 is noise the model leans on: it adds loss (SAGE value -1.063). The bar drew |value| (+1.063, 'mean
    |shapley value|' over '1 rows'), as if x2 were important; one row is drawn with its signs, as shap does."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    X = np.random.default_rng(0).normal(size=(40, 3))
    e = fs.global_importance(lambda R: 2 * R[:, 0] + 1.5 * R[:, 2], X, 2 * X[:, 0], budget=8, seed=0)
    np.testing.assert_allclose(e.values, [4.43957803, 0.0, -1.06308536], atol=1e-7)
    ax = e.plot("bar")
    widths = {t.get_text(): p.get_width() for t, p in zip(ax.get_yticklabels(), ax.patches)}
    assert widths == pytest.approx({"x0": 4.43957803, "x2": -1.06308536, "x1": 0.0})
    assert (ax.get_xlabel(), ax.get_title()) == ("shapley value", "1 row")
    plt.close("all")


def test_mse_on_a_classifiers_probabilities_with_one_target_per_row_is_refused_before_any_model_call():
    """A classifier under loss='mse' answers predict_proba, one column per class: a 1-D y was refused only by the
    probe, after one model call of 30 rows; the model's classes_ (or scikit-learn's is_classifier) say it first."""
    from sklearn.linear_model import LogisticRegression

    X = np.random.default_rng(0).normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    calls = []
    proba = clf.predict_proba
    clf.predict_proba = lambda R: calls.append(len(R)) or proba(R)
    with pytest.raises(ValueError, match=r"^y holds one target per row.*predict_proba: 2 columns"):
        fs.global_importance(clf, X, y, loss="mse", budget=4)
    with pytest.raises(ValueError, match=r"^y has 3 columns.*2 columns"):
        fs.global_importance(clf, X, np.eye(3)[y], loss="mse", budget=4)
    assert calls == []
    e = fs.global_importance(clf, X, np.eye(2)[y], loss="mse", budget=8, seed=0)     # one-hot targets: still run
    assert e.values.shape == (3,) and e.values[0] > 0

    class Custom:                                              # not scikit-learn: its classes_ say it
        classes_ = np.array(["a", "b", "c"])
        calls = 0

        def predict_proba(self, R):
            Custom.calls += 1
            return np.full((len(R), 3), 1 / 3)

    with pytest.raises(ValueError, match=r"^y holds one target per row.*3 columns"):
        fs.global_importance(Custom(), X, y.astype(float), loss="mse", budget=4)
    assert Custom.calls == 0


def _word_pipeline(n_rows: int = 60, extra: int = 0):
    """A logistic pipeline that one-hot encodes a column of words, its raw frame (``extra`` more columns of numbers)
    and labels."""
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=n_rows), "b": rng.choice(["x", "y", "z"], n_rows),
                      "c": rng.normal(size=n_rows)} | {f"n{k}": rng.normal(size=n_rows) for k in range(extra)})
    y = (X.a + (X.b == "x") + 0.5 * rng.normal(size=n_rows) > 0.5).astype(int).to_numpy()
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["b"]),
                                                 (StandardScaler(), [c for c in X.columns if c != "b"])),
                         LogisticRegression()).fit(X, y)
    return pipe, X, y


def _frame_shapley(model, X, y, bg) -> np.ndarray:
    """SAGE's Shapley values (log loss, marginal) by the formula, each coalition's rows built as pandas frames."""
    from sklearn.metrics import log_loss

    d = X.shape[1]
    values = {}
    for size in range(d + 1):
        for S in itertools.combinations(range(d), size):
            mean = []
            for i in range(len(X)):
                rows = bg.copy()
                for j in S:
                    rows[X.columns[j]] = X.iloc[i, j]
                mean.append(model.predict_proba(rows).mean(axis=0))
            values[frozenset(S)] = log_loss(y, np.array(mean), labels=[0, 1])
    empty = values[frozenset()]
    return _shapley({S: empty - v for S, v in values.items()}, d)


def test_a_pipeline_that_encodes_words_gets_the_sage_values_of_its_raw_columns():
    """A column of words that the pipeline one-hot encodes (and a pandas categorical a HistGradientBoosting model
    splits on) is imputed as it is: the exact values equal the formula's on frames built by hand (refused before)."""
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier

    pipe, X, y = _word_pipeline()
    bg = X.iloc[:10]
    e = fs.global_importance(pipe, X, y, loss="log_loss", background=bg, budget=8)
    assert e.method == "exact" and e.player_names == ["a", "b", "c"]
    np.testing.assert_allclose(e.values, _frame_shapley(pipe, X, y, bg), rtol=0, atol=1e-12)
    assert e.values[1] > 0.05                                   # the words carry a real share of the loss
    coded = X.assign(b=X.b.astype("category"))
    hgb = HistGradientBoostingClassifier(max_iter=20, categorical_features="from_dtype", random_state=0).fit(coded, y)
    h = fs.global_importance(hgb, coded, y, loss="log_loss", background=coded.iloc[:10], budget=8)
    np.testing.assert_allclose(h.values, _frame_shapley(hgb, coded, y, coded.iloc[:10]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("budget, method", [(12, "row-permutations"), (40, "row-regressions"),
                                            (96, "surrogate-regression")])
def test_words_take_every_path_auto_spends_a_small_budget_on(budget, method):
    """Below enumeration (each row's permutations, each row's regression, the mean game's regression) the words are
    imputed the same way: same seed same bits, and the values within four error bars of the exact ones."""
    pipe, X, y = _word_pipeline(40, extra=5)
    bg = X.iloc[:8]
    exact = fs.global_importance(pipe, X, y, loss="log_loss", background=bg, budget=256).values
    e = fs.global_importance(pipe, X, y, loss="log_loss", background=bg, budget=budget, seed=3)
    again = fs.global_importance(pipe, X, y, loss="log_loss", background=bg, budget=budget, seed=3)
    assert e.method == method and np.all(np.isfinite(e.stderr))
    np.testing.assert_array_equal(e.values, again.values)
    assert np.all(np.abs(e.values - exact) <= 4 * e.stderr + 1e-9)


class _CountingPipe:
    """A fitted pipeline that counts its calls."""

    def __init__(self, pipe):
        self.pipe, self.calls, self.classes_ = pipe, 0, pipe.classes_

    def predict_proba(self, rows):
        self.calls += 1
        return self.pipe.predict_proba(rows)


@pytest.mark.parametrize("change, kwargs, match", [
    (None, dict(imputation="gaussian"), r"imputation='gaussian' draws numbers, but X's column 'b' holds words"),
    (("b", 3, None), {}, r"X holds a missing value at row 3, column 'b'"),
    (("a", 4, "oops"), {}, r"X holds 'oops' at row 4, column 'a'"),
])
def test_rows_of_words_that_cannot_be_imputed_are_refused_by_name_before_any_model_call(change, kwargs, match):
    pipe, X, y = _word_pipeline()
    X = X.astype({"a": object}) if change is not None and change[0] == "a" else X.copy()
    if change is not None:
        X.loc[change[1], change[0]] = change[2]
    model = _CountingPipe(pipe)
    with pytest.raises(ValueError, match=match):
        fs.global_importance(model, X, y, loss="log_loss", budget=8, **kwargs)
    assert model.calls == 0


def test_numpy_rows_for_a_model_fitted_on_a_frame_take_its_feature_names_by_position():
    """A pipeline that picks its columns by name, given numpy rows: they were passed as arrays and the pipeline
    failed at the first call ('Specifying the columns using strings is only supported for dataframes'); now they get
    the model's names by position, as at explain's door, with the frame's values; rows of another width are refused
    naming X before any call."""
    pipe, X, y = _word_pipeline()
    want = fs.global_importance(pipe, X, y, loss="log_loss", background=X.iloc[:10], budget=8)
    got = fs.global_importance(pipe, X.to_numpy(), y, loss="log_loss", background=X.iloc[:10].to_numpy(), budget=8)
    np.testing.assert_array_equal(got.values, want.values)
    assert got.player_names == ["a", "b", "c"]
    model = _CountingPipe(pipe)
    model.feature_names_in_ = pipe.feature_names_in_
    with pytest.raises(ValueError, match=r"X must have 3 columns \(the model's features: \['a', 'b', 'c'\]\)"):
        fs.global_importance(model, X.to_numpy()[:, :2], y, loss="log_loss", budget=8)
    assert model.calls == 0


def test_groups_of_features_are_the_players_of_the_loss_game():
    """groups= (there was none at this door): a coalition knows every feature of its groups. Exact values equal the
    formula over the groups' coalitions; groups of one feature give the features' values bit for bit, under marginal
    and conditional imputation and on auto's small-budget paths; bad groups are refused naming groups, no call."""
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 5)), columns=list("abcde"))
    w = np.array([1.0, 2.0, 0.5, 0.0, 1.5])

    def f(R):
        R = np.asarray(R, dtype=float)
        return np.tanh(R @ w) + 0.3 * R[:, 0] * R[:, 1]

    y = f(X) + 0.1 * rng.normal(size=80)
    bg = X.iloc[:10]
    groups = {"ab": ["a", "b"], "c": ["c"], "de": ["d", "e"]}
    e = fs.global_importance(f, X, y, background=bg, groups=groups, budget=8)
    assert e.method == "exact" and e.player_names == ["ab", "c", "de"]
    members = [[0, 1], [2], [3, 4]]
    values = {}
    for size in range(4):
        for S in itertools.combinations(range(3), size):
            known = [j for g in S for j in members[g]]
            pred = [f(bg.assign(**{X.columns[j]: X.iloc[i, j] for j in known})).mean() for i in range(80)]
            values[frozenset(S)] = np.mean((np.array(pred) - y) ** 2)
    empty = values[frozenset()]
    np.testing.assert_allclose(e.values, _shapley({S: empty - v for S, v in values.items()}, 3), rtol=0, atol=1e-12)
    for imputation, budget in (("marginal", 7), ("marginal", 14), ("conditional", 32)):
        args = dict(background=bg, imputation=imputation, budget=budget, seed=2)
        plain = fs.global_importance(f, X, y, **args)
        single = fs.global_importance(f, X, y, groups=[[j] for j in range(5)], **args)
        np.testing.assert_array_equal(single.values, plain.values)
        np.testing.assert_array_equal(single.stderr, plain.stderr)
    model = Counting([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"groups: every feature must be in exactly one group; missing: \[\], "
                                         r"repeated: \['x1'\]"):
        fs.global_importance(model, np.ones((10, 3)), np.zeros(10), groups=[[0, 1], [1, 2]], budget=8)
    assert model.calls == 0
