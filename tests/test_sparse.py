"""scipy.sparse rows and background for black-box models: the same values as the dense rows, the model fed CSR
rows built from the stored entries (never rows x features x coalitions), null features found, wide data."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fairshare as fs
from fairshare.games.model import sparse_columns_equal, sparse_hybrid_rows


class Recording:
    """A linear-logistic model that records what it was given."""

    def __init__(self, coef: np.ndarray):
        self.coef, self.calls = coef, []

    def __call__(self, X):
        self.calls.append((type(X).__name__, X.shape, X.nnz if sp.issparse(X) else X.size))
        z = np.asarray(X @ self.coef).ravel()
        return 1.0 / (1.0 + np.exp(-z))


def test_sparse_rows_give_the_dense_values_for_a_fitted_model():
    from sklearn.linear_model import LogisticRegression

    X = sp.random(120, 15, density=0.3, format="csr", random_state=0)
    y = (X[:, 0].toarray().ravel() + X[:, 3].toarray().ravel() > 0.3).astype(int)
    model = LogisticRegression().fit(X, y)
    for kw in (dict(budget=600, seed=0), dict(method="exact", budget=1 << 15)):
        a = fs.explain(model, X[:3], X[20:50], progress=False, **kw)
        b = fs.explain(model, X[:3].toarray(), X[20:50].toarray(), progress=False, **kw)
        np.testing.assert_allclose(a.values, b.values, atol=1e-12)
        assert a.method == b.method and a.data.shape == (3, 15)
    # null features (zero in the row and in every background row) are found and get exactly 0
    Xz = X.tolil()
    Xz[:, 7] = 0
    Xz = Xz.tocsr()
    e = fs.explain(model, Xz[:2], Xz[20:50], progress=False, budget=400, seed=0)
    assert np.all(e.values[:, 7] == 0)


def test_wide_sparse_data_is_fed_as_csr_rows_of_the_batch():
    """40,000 features in 16 groups: every model call gets CSR rows whose stored entries are those of the
    rows it asked about, and the values equal the dense computation."""
    rng = np.random.default_rng(1)
    nf, B = 40_000, 10
    X = sp.random(12, nf, density=0.002, format="csr", random_state=2)
    coef = rng.normal(size=nf)
    groups = np.array_split(rng.permutation(nf), 16)
    model = Recording(coef)
    e = fs.explain(model, X[:1], X[2:2 + B], groups=[list(g) for g in groups], budget=300, seed=0, progress=False)
    assert {c[0] for c in model.calls} == {"csr_matrix"}
    per_row = max(X[:1].nnz, 1) + X[2:2 + B].nnz / B
    assert all(nnz <= 2 * per_row * shape[0] for _, shape, nnz in model.calls)     # entries, not rows x features
    dense = fs.explain(Recording(coef), X[:1].toarray(), X[2:2 + B].toarray(), groups=[list(g) for g in groups],
                       budget=300, seed=0, progress=False)
    np.testing.assert_allclose(e.values, dense.values, atol=1e-12)


def test_hybrid_rows_and_equal_columns_by_hand():
    x = sp.csr_matrix([[1.0, 0.0, 3.0, 0.0]])
    bg = sp.csr_matrix([[0.0, 2.0, 3.0, 0.0], [5.0, 0.0, 3.0, 0.0]])
    S = np.array([[True, True, False, False], [False, False, False, True]])
    want = np.array([[1, 0, 3, 0], [1, 0, 3, 0], [0, 2, 3, 0], [5, 0, 3, 0]], float)
    np.testing.assert_array_equal(sparse_hybrid_rows(S, x, bg).toarray(), want)
    assert sparse_columns_equal(bg, x).tolist() == [False, False, True, True]


def test_sparse_rows_refuse_conditional_imputation_and_non_finite_entries():
    X = sp.random(30, 5, density=0.5, format="csr", random_state=0)
    model = Recording(np.ones(5))
    with pytest.raises(ValueError, match="imputation='gaussian' models dense numeric features"):
        fs.explain(model, X[:1], X[5:20], imputation="gaussian", progress=False)
    bad = X[:2].copy()
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="X holds inf at row 0"):
        fs.explain(model, bad, X[5:20], progress=False)
    assert model.calls == []
