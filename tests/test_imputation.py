"""Conditional imputation: closed-form conditional Shapley values of linear models on correlated Gaussian (and
log-normal) features, the batched conditioning against the textbook formula, same values whatever the batch,
the explain door, and bad arguments refused before any model call."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import fairshare as fs
from fairshare.games.imputers import CopulaImputer, EmpiricalImputer, GaussianImputer, known_solve

N = 5
MU = np.array([0.5, -1.0, 0.0, 1.0, 2.0])
COV = 0.6 ** np.abs(np.subtract.outer(np.arange(N), np.arange(N)))           # AR(1), correlation 0.6
BETA = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
X0 = np.array([1.5, 0.0, 1.0, -1.0, 2.5])


def conditional_mean(mu: np.ndarray, cov: np.ndarray, x: np.ndarray, S: tuple) -> np.ndarray:
    """E[X | X_S = x_S] of a normal distribution, from the textbook formula (not the package's code)."""
    S = list(S)
    U = [i for i in range(len(mu)) if i not in S]
    m = mu.copy()
    m[S] = x[S]
    if S and U:
        m[U] = mu[U] + cov[np.ix_(U, S)] @ np.linalg.solve(cov[np.ix_(S, S)], x[S] - mu[S])
    return m


def shapley_of(v, n: int) -> np.ndarray:
    phi = np.zeros(n)
    for i in range(n):
        rest = [j for j in range(n) if j != i]
        for r in range(n):
            for S in itertools.combinations(rest, r):
                w = math.factorial(r) * math.factorial(n - r - 1) / math.factorial(n)
                phi[i] += w * (v(tuple(sorted(S + (i,)))) - v(S))
    return phi


@pytest.fixture(scope="module")
def gaussian_background():
    return np.random.default_rng(0).multivariate_normal(MU, COV, size=4000)


def closed_form() -> np.ndarray:
    return shapley_of(lambda S: conditional_mean(MU, COV, X0, S) @ BETA, N)


def test_the_gaussian_linear_game_is_the_textbook_conditional_mean():
    game = fs.games.GaussianLinearGame(BETA, MU, COV, X0, intercept=0.5)
    coalitions = np.array(list(itertools.product([False, True], repeat=N)))
    want = [conditional_mean(MU, COV, X0, tuple(np.flatnonzero(S))) @ BETA + 0.5 for S in coalitions]
    np.testing.assert_allclose(game(coalitions), want, atol=1e-12)
    np.testing.assert_allclose(fs.exact(game, "shapley").values, closed_form(), atol=1e-12)
    with pytest.raises(ValueError, match="positive definite"):
        fs.games.GaussianLinearGame(BETA, MU, -COV, X0)


@pytest.mark.parametrize("imputation, tol", [("gaussian", 0.05), ("conditional", 0.05), ("copula", 0.05),
                                             ("empirical", 0.2)])
def test_conditional_shapley_of_a_linear_model_is_the_closed_form(gaussian_background, imputation, tol):
    """A 4000-row background of 5 correlated normal features: within 5% of the closed form (the kernel-weighted
    empirical imputation within 20%); the marginal imputation is 60% away, so the check can fail."""
    want = closed_form()
    game = fs.games.ModelGame(lambda X: X @ BETA, X0, gaussian_background, imputation=imputation)
    got = fs.exact(game, "shapley").values
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < tol, (got, want)
    marginal = fs.exact(fs.games.ModelGame(lambda X: X @ BETA, X0, gaussian_background[:500]), "shapley").values
    assert np.linalg.norm(marginal - want) / np.linalg.norm(want) > 0.4


def test_gaussian_draws_have_the_fitted_conditional_mean_exactly(gaussian_background):
    """Moment-matched common random numbers: a model linear in the features gets the conditional mean of the
    fitted normal (sample mean and covariance) for every coalition, to rounding."""
    imp = GaussianImputer(samples=64).fit(gaussian_background)
    coalitions = np.array(list(itertools.product([False, True], repeat=N)))
    rows, weights = imp.rows(coalitions, X0)
    assert weights is None and rows.shape == (32, 64, N)
    mu, cov = gaussian_background.mean(axis=0), np.cov(gaussian_background, rowvar=False)
    for c, S in enumerate(coalitions):
        want = conditional_mean(mu, cov, X0, tuple(np.flatnonzero(S)))
        np.testing.assert_allclose(rows[c].mean(axis=0), want, atol=1e-6)
        np.testing.assert_array_equal(rows[c][:, S], np.broadcast_to(X0[S], (64, S.sum())))


def test_known_solve_matches_the_submatrix_solve():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 6))
    cov = A @ A.T + 6 * np.eye(6)
    known = rng.random((20, 6)) < 0.5
    rhs = rng.normal(size=(20, 6, 2))
    got = known_solve(cov, known, rhs)
    for c in range(20):
        K = np.flatnonzero(known[c])
        want = np.zeros((6, 2))
        if K.size:
            want[K] = np.linalg.solve(cov[np.ix_(K, K)], rhs[c, K])
        np.testing.assert_allclose(got[c], want, atol=1e-10)


def test_the_copula_follows_non_gaussian_marginals():
    """Log-normal features and a model linear in their logs: the copula's values are the Gaussian closed form
    of the logs; the Gaussian imputation on the raw features is off by more."""
    Z = np.random.default_rng(2).multivariate_normal(MU, COV, size=4000)
    model = lambda X: np.log(np.maximum(X, 1e-300)) @ BETA  # noqa: E731  (draws below 0: clipped)
    want = closed_form()
    errors = {}
    for name in ("copula", "gaussian"):
        got = fs.exact(fs.games.ModelGame(model, np.exp(X0), np.exp(Z), imputation=name), "shapley").values
        errors[name] = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert errors["copula"] < 0.05 and errors["gaussian"] > 2 * errors["copula"], errors


@pytest.mark.parametrize("imputation", ["gaussian", "copula", "empirical"])
def test_same_values_whatever_the_batch_and_the_order_of_coalitions(gaussian_background, imputation):
    bg = gaussian_background[:300]
    coalitions = np.random.default_rng(3).random((40, N)) < 0.5
    a = fs.games.ModelGame(lambda X: np.tanh(X) @ BETA, X0, bg, imputation=imputation)(coalitions)
    b = fs.games.ModelGame(lambda X: np.tanh(X) @ BETA, X0, bg, imputation=imputation, batch_size=7)
    got = np.concatenate([b(coalitions[::-1][i:i + 3]) for i in range(0, 40, 3)])[::-1]
    np.testing.assert_array_equal(a, got)


def test_explain_with_conditional_imputation_records_it_and_adds_up(gaussian_background):
    from sklearn.ensemble import GradientBoostingRegressor

    y = gaussian_background @ BETA + np.sin(gaussian_background[:, 0])
    model = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(gaussian_background, y)
    bg = gaussian_background[:500]
    e = fs.explain(model, gaussian_background[:3], bg, imputation="gaussian", progress=False, seed=0)
    assert e.method == "exact" and e.info["imputation"] == "gaussian(samples=100, seed=0)"
    imp = GaussianImputer(samples=100).fit(bg)
    base = model.predict(imp.rows(np.zeros((1, N), bool), X0)[0][0]).mean()      # v(empty): the fitted normal
    np.testing.assert_allclose(e.empty_value, base, rtol=1e-9)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, model.predict(gaussian_background[:3]),
                               atol=1e-9)
    # a tree model under conditional imputation is explained as a black box (its trees give marginal values)
    tree = fs.explain(model, gaussian_background[:1], bg, imputation=EmpiricalImputer(sigma=0.2), progress=False)
    assert tree.info["imputation"] == "empirical(sigma=0.2)" and tree.info["model_output"].endswith("predict")


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, X):
        self.calls += 1
        return X.sum(axis=1)


@pytest.mark.parametrize("imputation, match", [
    ("gauss", "imputation must be one of"),
    (3, "imputation must be one of"),
    ("copula", "numeric features"),
])
def test_bad_imputations_are_refused_before_any_model_call(imputation, match):
    import pandas as pd

    f = Counting()
    bg = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]})
    with pytest.raises(ValueError, match=match):
        fs.explain(f, bg.iloc[:1], bg, imputation=imputation, progress=False)
    assert f.calls == 0


def test_imputer_settings_are_checked():
    with pytest.raises(ValueError, match="samples must be >= 1"):
        GaussianImputer(samples=0)
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        EmpiricalImputer(sigma=-1.0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        CopulaImputer().fit(np.ones((1, 3)))


# ------------------------------------------------------------------------------ singular backgrounds (issue 43.3)
def _quadratic(weights):
    return lambda A: (np.asarray(A, dtype=float) ** 2) @ weights


@pytest.mark.parametrize("imputation", ["conditional", "gaussian", "copula", "empirical"])
def test_fewer_background_rows_than_features_are_shrunk_named_and_stay_on_the_output_scale(imputation):
    """5 rows for 8 features: the covariance is singular; it was used as it was (values up to 10^4 times the
    output's range); now it is shrunk (Ledoit-Wolf), the warning and e.info name the amount."""
    weights = np.abs(np.random.default_rng(0).normal(size=8))
    f = _quadratic(weights)
    for seed in range(6):
        rng = np.random.default_rng(seed)
        background, X = rng.normal(size=(5, 8)), rng.normal(size=(2, 8))
        with pytest.warns(fs.FairshareWarning, match=r"5 rows for 8 varying features.*shrinkage 0\.\d+"):
            e = fs.explain(f, X, background, imputation=imputation, progress=False, seed=0)
        outputs = f(np.vstack([background, X]))
        assert np.abs(e.values).max() <= 10 * (outputs.max() - outputs.min())
        assert "shrinkage=0." in e.info["imputation"]
        np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, f(X), atol=1e-9)


def test_a_constant_feature_is_imputed_as_its_constant_and_changes_no_other_value():
    """A constant feature carries no dependence: drawn as its constant, it takes no credit and leaves the others'
    values as they are without it."""
    rng = np.random.default_rng(3)
    cov = np.array([[1.0, 0.6, 0.2], [0.6, 1.0, 0.4], [0.2, 0.4, 1.0]])
    base = rng.multivariate_normal(np.zeros(3), cov, size=60)
    background = np.insert(base, 1, 2.5, axis=1)                      # column 1 is constant
    X = np.insert(rng.multivariate_normal(np.zeros(3), cov, size=3), 1, 2.5, axis=1)
    w = np.array([1.0, 4.0, -2.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.FairshareWarning)      # nothing to warn about: it is exact
        e = fs.explain(lambda A: np.asarray(A) @ w, X, background, imputation="gaussian", progress=False)
    assert "constant features=[1]" in e.info["imputation"]
    np.testing.assert_allclose(e.values[:, 1], 0.0, atol=1e-12)
    kept = [0, 2, 3]
    without = fs.explain(lambda A: np.asarray(A) @ w[kept] + 4.0 * 2.5, X[:, kept], background[:, kept],
                         imputation="gaussian", progress=False)                # linear: exact, whatever the draws
    np.testing.assert_allclose(e.values[:, kept], without.values, atol=1e-9)


def test_a_background_that_spans_the_features_is_fitted_as_it_is():
    rng = np.random.default_rng(0)
    background = rng.normal(size=(40, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.FairshareWarning)
        imputer = fs.games.GaussianImputer().fit(background)
    assert imputer.describe() == "gaussian(samples=100, seed=0)"
    sample = np.cov(background, rowvar=False)
    np.testing.assert_array_equal(imputer.cov, sample + np.diag(1e-9 * np.diag(sample)))


@pytest.mark.parametrize("imputation", ["conditional", "copula", "empirical"])
def test_nan_in_the_rows_or_the_background_of_a_conditional_imputation_is_refused_before_any_model_call(imputation):
    """A model that takes NaN (HistGradientBoosting, a pipeline whose imputer fills it) with NaN in the background:
    the Gaussian took the column for a constant NaN ('constant features=[1]') and returned values without a word,
    the empirical imputer blamed the model ('the model returned NaN'); NaN in an explained row was conditioned on.
    Refused now, naming the argument, the row and the column, before any model call."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    model = HistGradientBoostingRegressor(max_iter=20).fit(X, X @ np.array([1.0, 2.0, 3.0]))
    calls = []

    def predict(A):
        calls.append(len(A))
        return model.predict(A)

    background = X[100:160].copy()
    background[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"^background holds NaN at row 3, column 1: imputation="):
        fs.explain(predict, X[:2], background=background, imputation=imputation, progress=False, seed=0)
    row = X[:2].copy()
    row[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X holds NaN at row 1, column 2: imputation="):
        fs.explain(model, row, background=X[100:160], imputation=imputation, progress=False, seed=0)
    assert calls == []


def test_an_imputer_fitted_on_a_background_with_nan_is_refused():
    # fs.games.ModelGame(..., imputation="conditional") with NaN in the background fitted the column as a constant NaN
    # ('constant features=[1]') and fs.exact gave values from it
    rng = np.random.default_rng(0)
    background = rng.normal(size=(50, 3))
    background[3, 1] = np.nan
    for imputer in (GaussianImputer(), CopulaImputer(), EmpiricalImputer()):
        with pytest.raises(ValueError, match=r"the background holds NaN at row 3, column 1"):
            imputer.fit(background)
    with pytest.raises(ValueError, match=r"the background holds NaN at row 3, column 1"):
        fs.games.ModelGame(lambda A: A.sum(axis=1), np.zeros(3), background=background, imputation="conditional")
