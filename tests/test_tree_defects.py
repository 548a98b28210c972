"""Tree defects of issue 43, each reproduced first: catboost ensembles holding trees without splits (1), catboost
string categoricals the model never splits on (2), and probability outputs of tree models whose exact table of all
2^n coalitions auto must choose (10).

catboost's own ``get_feature_importance(type="ShapValues")`` is the reference for path-dependent values; the
interventional game is checked against brute-force enumeration of the model's own raw output on every hybrid row.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

import fairshare as fs
from fairshare.engine.exact import all_coalitions

cb = pytest.importorskip("catboost")

warnings.filterwarnings("ignore", message=".*feature names.*")

DATASETS = os.environ.get("FAIRSHARE_DATASETS",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "datasets"))
BANK = os.path.join(DATASETS, "bank_marketing", "bank.zip")
BANK_CATEGORIES = ["job", "marital", "education", "default", "housing", "loan", "contact", "month", "poutcome"]


def _trees(model) -> list[dict]:
    """The model's oblivious trees as catboost writes them (``splits`` is None for a tree without splits)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["oblivious_trees"]


def _catboost_shap(model, rows, cats):
    """catboost's own path-dependent values (its ShapValues without the base column)."""
    theirs = np.asarray(model.get_feature_importance(cb.Pool(rows, cat_features=cats), type="ShapValues"))
    return theirs[:, :-1]


def _raw(model, rows) -> np.ndarray:
    return np.asarray(model.predict(rows, prediction_type="RawFormulaVal"), dtype=float).reshape(len(rows))


def _brute_interventional(model, X, x_row, b_rows):
    """Exact Shapley values of the interventional game evaluated by the model itself: for every coalition S, the mean
    over the background rows b of the model's raw output on the row equal to x on S and to b elsewhere."""
    n = X.shape[1]
    S = all_coalitions(n)
    values = np.zeros(S.shape[0])
    for b in b_rows:
        x = X.iloc[np.full(S.shape[0], x_row)].reset_index(drop=True)
        hybrid = X.iloc[np.full(S.shape[0], b)].reset_index(drop=True)
        for j, col in enumerate(X.columns):
            hybrid[col] = hybrid[col].where(~S[:, j], x[col])
        values += _raw(model, hybrid) / len(b_rows)
    brute = fs.games.FunctionGame(lambda T: values[T.astype(np.int64) @ (1 << np.arange(n))], n_players=n)
    return fs.exact(brute, "shapley").values


def _small_frame(seed: int = 1, rows: int = 12) -> tuple[pd.DataFrame, np.ndarray]:
    draw = np.random.default_rng(seed)
    X = pd.DataFrame({"a": draw.standard_normal(rows), "c": draw.choice(["p", "q", "r"], rows),
                      "z": draw.choice(["u", "v"], rows)})
    return X, (X.a + (X.c == "p") > 0.5).to_numpy().astype(int)


KW = dict(verbose=0, random_seed=0, thread_count=1, allow_writing_files=False)


# ------------------------------------------------------------------------ 1: trees without splits
@pytest.mark.parametrize("kw", [{}, dict(max_ctr_complexity=1)], ids=["default-ctrs", "one-feature-ctrs"])
def test_catboost_trees_without_splits_equal_catboosts_own_values(kw):
    """The smallest model found that holds a tree without splits (catboost writes its ``splits`` as null): 12 rows, 5
    trees of depth 1 with string categoricals; reading it crashed. Path-dependent values equal catboost's ShapValues,
    interventional values equal enumeration of the model's own output."""
    X, y = _small_frame()
    model = cb.CatBoostClassifier(iterations=5, depth=1, **KW, **kw).fit(X, y, cat_features=["c", "z"])
    trees = _trees(model)
    assert any(not t["splits"] for t in trees) and any(t["splits"] for t in trees)     # the configuration holds one
    e = fs.explain(model, X, progress=False)
    np.testing.assert_allclose(e.values, _catboost_shap(model, X, ["c", "z"]), atol=1e-9)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, _raw(model, X), atol=1e-9)
    x_row, b_rows = 3, [0, 7, 10]
    inter = fs.explain(model, X.iloc[[x_row]], background=X.iloc[b_rows], progress=False)
    np.testing.assert_allclose(inter.values[0], _brute_interventional(model, X, x_row, b_rows), atol=1e-9)


@pytest.fixture(scope="module")
def bank():
    with zipfile.ZipFile(BANK) as z:
        frame = pd.read_csv(z.open([n for n in z.namelist() if n.endswith(".csv")][0]))
    y = (frame.pop("y") == "yes").to_numpy().astype(int)
    return frame, y


@pytest.mark.skipif(not os.path.exists(BANK), reason="the shared bank marketing data set is not here")
def test_catboost_bank_marketing_with_trees_without_splits(bank):
    """Bank marketing with its nine string categoricals (the issue's case, at 100 rows and 10 trees of depth 6, which
    already grow a tree without splits): catboost's own values, and the interventional game of 16 features by
    enumeration of the model's own output."""
    X, y = bank
    X, y = X.iloc[:100], y[:100]
    model = cb.CatBoostClassifier(iterations=10, depth=6, max_ctr_complexity=1, **KW).fit(
        X, y, cat_features=BANK_CATEGORIES)
    assert any(not t["splits"] for t in _trees(model))
    rows = X.iloc[:20]
    e = fs.explain(model, rows, progress=False)
    np.testing.assert_allclose(e.values, _catboost_shap(model, rows, BANK_CATEGORIES), atol=1e-9)
    x_row, b_rows = 4, [30, 61]
    inter = fs.explain(model, X.iloc[[x_row]], background=X.iloc[b_rows], progress=False)
    assert inter.method == "exact"
    np.testing.assert_allclose(inter.values[0], _brute_interventional(model, X, x_row, b_rows), atol=1e-9)


# ------------------------------------------------------------------------ 2: categoricals never split on
@pytest.mark.parametrize("kw", [dict(one_hot_max_size=255), dict(max_ctr_complexity=1), {}],
                         ids=["one-hot", "one-feature-ctrs", "default-ctrs"])
def test_catboost_string_categorical_it_never_splits_on_is_explained_with_zeros(kw):
    """Column ``z`` holds strings the model never splits on: it was read as a number and refused. Its values are 0,
    the others equal catboost's own (path-dependent) and enumeration (interventional); rows as a plain object array
    too, and its strings are still checked as catboost checks them."""
    draw = np.random.default_rng(0)
    X = pd.DataFrame({"a": draw.standard_normal(200), "c": draw.choice(["p", "q", "r"], 200),
                      "z": draw.choice(["u", "v"], 200)})
    y = X.a + (X.c == "p")
    model = cb.CatBoostRegressor(iterations=5, depth=2, **KW, **kw).fit(X, y, cat_features=["c", "z"])
    z = 2
    importance = model.get_feature_importance()           # catboost's own: 0 for a feature no split reads
    assert importance[z] == 0.0 and importance[1] > 0.0
    rows = X.iloc[:15]
    e = fs.explain(model, rows, progress=False)
    np.testing.assert_allclose(e.values, _catboost_shap(model, rows, ["c", "z"]), atol=1e-9)
    assert np.all(e.values[:, z] == 0.0) and np.any(e.values[:, 1] != 0.0)
    x_row, b_rows = 2, [5, 9, 11]
    inter = fs.explain(model, X.iloc[[x_row]], background=X.iloc[b_rows], progress=False)
    np.testing.assert_allclose(inter.values[0], _brute_interventional(model, X, x_row, b_rows), atol=1e-9)
    assert inter.values[0, z] == 0.0
    as_objects = fs.games.tree_values(model, rows.to_numpy(dtype=object)).values
    np.testing.assert_allclose(as_objects, e.values, atol=1e-12)
    with pytest.raises(ValueError, match="column 'z'.*strings or integers, got 0.5"):
        fs.explain(model, rows.assign(z=0.5), progress=False)


# ------------------------------------------------------------------------ 10: the exact table of a probability
xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def cancer12():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return X[:, :12], y


@pytest.fixture(scope="module")
def probability_models(cancer12):
    X, y = cancer12
    return {
        "xgboost": xgb.XGBClassifier(n_estimators=40, max_depth=3, n_jobs=1).fit(X, y),
        "lightgbm": lgb.LGBMClassifier(n_estimators=40, verbose=-1, n_jobs=1).fit(X, y),
        "catboost": cb.CatBoostClassifier(iterations=40, depth=4, **KW).fit(X, y),
    }


def _enumerated(predict, x, background):
    """Exact Shapley values of ``mean over b of predict(x_S, b_{~S})`` by enumerating every coalition."""
    n = x.size
    S = all_coalitions(n)
    rows = np.where(S[:, None, :], x, background[None]).reshape(-1, n)
    table = predict(rows).reshape(S.shape[0], background.shape[0], -1).mean(axis=1)
    game = fs.games.FunctionGame(lambda T: table[T.astype(np.int64) @ (1 << np.arange(n))], n_players=n)
    return fs.exact(game, "shapley").values


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "catboost"])
def test_probability_of_twelve_features_at_the_default_budget_is_exact_from_the_table(cancer12, probability_models,
                                                                                     name):
    """12 features, 40 background rows, the default budget (2072 < 2^12): auto took regression although the game
    reads every coalition from its table; now exact values, to 1e-9 against enumeration of the trees' probabilities
    (float64) and to the model's own predict_proba (float32 for xgboost), the table's rule in info["choice"]."""
    X, y = cancer12
    model = probability_models[name]
    rows, bg = X[:2], X[100:140]
    e = fs.explain(model, rows, background=bg, model_output="probability", progress=False, seed=0)
    assert e.method == "exact" and e.info["budget"] == 2 * 12 + 2048
    why = e.info["choice"]["why"]
    assert why.startswith("exact values from the table of all 2^12 = 4096 coalitions") and "no model calls" in why
    ens = fs.trees.prepared(model).ensemble

    def trees_probability(Z):
        margin = ens.predict(Z)[:, 0]
        return np.column_stack([1.0 / (1.0 + np.exp(margin)), 1.0 / (1.0 + np.exp(-margin))])

    for r in range(2):
        np.testing.assert_allclose(e.values[r], _enumerated(trees_probability, rows[r], bg), atol=1e-9, rtol=0)
        np.testing.assert_allclose(e.values[r], _enumerated(model.predict_proba, rows[r], bg),
                                   atol=1e-6 if name == "xgboost" else 1e-9, rtol=0)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, model.predict_proba(rows), atol=1e-6)


def test_the_table_rule_for_log_loss_estimate_and_an_explicit_method(cancer12, probability_models):
    """The same rule at every door that chooses: a log loss, fs.estimate on the tree game at a budget of 100; a
    method named runs as asked (regression reads the table, exact reads all of it below 2^n); above 16 features
    there is no table and the budget decides as before."""
    X, y = cancer12
    model = probability_models["lightgbm"]
    bg = X[200:230]
    ll = fs.explain(model, X[:1], background=bg, model_output="log_loss", y=y[:1], budget=300, progress=False)
    assert ll.method == "exact" and "table of all 2^12" in ll.info["choice"]["why"]

    def loss(Z):
        return -np.log(np.clip(model.predict_proba(Z)[:, [y[0]]], 1e-15, 1.0))

    np.testing.assert_allclose(ll.values[0], _enumerated(loss, X[0], bg)[:, 0], atol=1e-9, rtol=0)
    game = fs.games.TreeGame(model, X[0], mode="interventional", background=bg, model_output="probability")
    auto = fs.estimate(game, "shapley", budget=100, seed=0)
    assert auto.method == "exact" and auto.n_evaluations == 4096
    np.testing.assert_allclose(auto.values, _enumerated(model.predict_proba, X[0], bg), atol=1e-9, rtol=0)
    asked = fs.estimate(game, "shapley", method="exact", budget=100)
    assert "asked for: exact values from the table" in asked.info["choice"]["why"]
    np.testing.assert_array_equal(asked.values, auto.values)
    sampled = fs.estimate(game, "shapley", method="regression", budget=100, seed=0)
    assert sampled.method == "regression" and sampled.n_evaluations <= 100
    from sklearn.datasets import load_breast_cancer

    Xw, yw = load_breast_cancer(return_X_y=True)                      # 30 features: no table, the budget decides
    wide = lgb.LGBMClassifier(n_estimators=10, verbose=-1, n_jobs=1).fit(Xw, yw)
    g30 = fs.games.TreeGame(wide, Xw[0], mode="interventional", background=Xw[100:110], model_output="probability")
    assert g30.table_seconds() is None
    assert fs.estimate(g30, "shapley", budget=200, seed=0).method == "surrogate-regression"


def test_the_checked_reading_reuses_the_unchecked_one_instead_of_reading_the_trees_again(monkeypatch):
    """A pipeline's door plans on ``unchecked(model)`` and checks it later through ``prepared(model)``: the trees are
    read once (they were read twice), and the check still runs against the model's own predictions."""
    from sklearn.ensemble import RandomForestRegressor

    from fairshare.trees.prepared import prepared, unchecked
    from fairshare.trees.readers.sklearn import SklearnReader

    X = np.random.default_rng(0).normal(size=(60, 3))
    model = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, X[:, 0] - X[:, 2])
    reads, predictions = [], []
    read, predict = SklearnReader.read, type(model).predict
    monkeypatch.setattr(SklearnReader, "read", lambda self, m: reads.append(1) or read(self, m))
    monkeypatch.setattr(type(model), "predict", lambda self, R: predictions.append(len(R)) or predict(self, R))
    plan = unchecked(model)
    assert len(reads) == 1 and predictions == []                   # planning: no model call
    assert prepared(model).ensemble is plan and len(reads) == 1 and predictions   # checked, not read again
    np.testing.assert_allclose(plan.predict(X)[:, 0], predict(model, X), atol=1e-12)


def test_a_catboost_model_read_back_from_a_file_is_explained(tmp_path):
    """A catboost model fitted on an array and read back (its .cbm, pickle or joblib) says n_features_in_ = 0:
    every door refused its rows, 'X must have 0 columns (the model's features), got shape (2, 4)'."""
    import pickle

    X = np.random.default_rng(0).random((200, 4))
    model = cb.CatBoostRegressor(iterations=5, **KW).fit(X, X[:, 0] + 2 * X[:, 1])
    model.save_model(str(tmp_path / "m.cbm"))
    native = cb.CatBoostRegressor()
    native.load_model(str(tmp_path / "m.cbm"))
    for read in (native, pickle.loads(pickle.dumps(model))):
        assert read.n_features_in_ == 0                              # catboost's own: the cause
        for door in (lambda m: m, lambda m: m.predict):             # its trees, and a black box
            expected = fs.explain(door(model), X[:2], X[:5], seed=0, progress=False).values
            got = fs.explain(door(read), X[:2], X[:5], seed=0, progress=False).values
            np.testing.assert_allclose(got, expected, atol=1e-12)
