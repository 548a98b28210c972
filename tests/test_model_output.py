"""Output scales of tree models: the model's own predict_proba (and the log loss of a label) explained from its
trees, against brute force over predict_proba; explain's model_output and y; bad arguments refused first."""

from __future__ import annotations

import numpy as np
import pytest

import fairshare as fs

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return X[:, :8], y, np.digitize(X[:, 0], np.quantile(X[:, 0], [0.33, 0.66]))


def _models(X, y, y3):
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    return {
        "xgboost": xgb.XGBClassifier(n_estimators=40, max_depth=3).fit(X, y),
        "lightgbm": lgb.LGBMClassifier(n_estimators=40, verbose=-1).fit(X, y),
        "random forest": RandomForestClassifier(n_estimators=30, max_depth=4, random_state=0).fit(X, y),
        "sklearn boosting": GradientBoostingClassifier(n_estimators=20, random_state=0).fit(X, y),
        "xgboost 3 classes": xgb.XGBClassifier(n_estimators=20, max_depth=3).fit(X, y3),
    }


def brute(model, x, background, transform):
    """The game of ``transform(model.predict_proba(hybrid rows))`` averaged over the background (no trees)."""
    def value(S):
        rows = np.where(S[:, None, :], x, background).reshape(-1, x.size)
        out = transform(model.predict_proba(rows))
        return out.reshape(len(S), len(background), -1).mean(axis=1)
    return fs.games.FunctionGame(value, n_players=x.size)


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "random forest", "sklearn boosting", "xgboost 3 classes"])
def test_probability_output_equals_brute_force_over_predict_proba(data, name):
    X, y, y3 = data
    model = _models(X, y, y3)[name]
    x, bg = X[0], X[100:120]
    game = fs.games.TreeGame(model, x, mode="interventional", background=bg, model_output="probability")
    assert game.link == {"random forest": "identity", "xgboost 3 classes": "softmax"}.get(name, "logistic")
    got = fs.exact(game, "shapley")
    want = fs.exact(brute(model, x, bg, lambda p: p), "shapley").values
    assert got.info["via"] == "enumeration" and got.values.shape == want.shape
    np.testing.assert_allclose(got.values, want, atol=1e-6)
    np.testing.assert_allclose(got.values.sum(axis=0), model.predict_proba(x[None])[0] - want.sum(axis=0) * 0
                               - model.predict_proba(bg).mean(axis=0), atol=1e-6)


@pytest.mark.parametrize("name", ["lightgbm one class against the rest", "sklearn exponential loss"])
@pytest.mark.parametrize("features", [8, 18])                  # 8: the table of every coalition; 18: hybrid rows
def test_one_logistic_per_class_and_the_exponential_loss_are_links_too(data, name, features):
    """lightgbm's multiclassova gives each class the logistic of its margin (not a softmax) and scikit-learn's
    exponential loss the logistic of twice the margin; both were refused ("no link ... maps the trees' output")."""
    from sklearn.ensemble import GradientBoostingClassifier

    X, y, y3 = data
    X = np.column_stack([X, np.random.default_rng(1).standard_normal((X.shape[0], 10))])[:, :features]
    model = (lgb.LGBMClassifier(objective="multiclassova", n_estimators=15, verbose=-1).fit(X, y3)
             if name.startswith("lightgbm") else
             GradientBoostingClassifier(loss="exponential", n_estimators=15, random_state=0).fit(X, y))
    x, bg = X[0], X[100:104]
    game = fs.games.TreeGame(model, x, mode="interventional", background=bg, model_output="probability")
    assert game.link == ("logistic per output" if name.startswith("lightgbm") else "logistic of twice the margin")
    coalitions = np.random.default_rng(0).random((12, features)) < 0.5
    want = brute(model, x, bg, lambda p: p)
    np.testing.assert_allclose(game(coalitions), want(coalitions), atol=1e-12)
    label = int((y3 if name.startswith("lightgbm") else y)[0])
    loss = fs.games.TreeGame(model, x, mode="interventional", background=bg, model_output="log_loss", y=label)
    want_loss = brute(model, x, bg, lambda p: -np.log(p[:, [label]]))
    np.testing.assert_allclose(loss(coalitions), want_loss(coalitions)[:, 0], atol=1e-12)
    if features == 8:
        phi = fs.explain(model, X[:2], bg, model_output="probability", progress=False)
        np.testing.assert_allclose(phi.values.sum(axis=1), model.predict_proba(X[:2]) - model.predict_proba(bg).mean(0),
                                   atol=1e-12)


def test_log_loss_output_equals_brute_force(data):
    X, y, y3 = data
    model = _models(X, y, y3)["lightgbm"]
    x, bg = X[3], X[200:230]
    game = fs.games.TreeGame(model, x, mode="interventional", background=bg, model_output="log_loss", y=y[3])
    want = fs.exact(brute(model, x, bg, lambda p: -np.log(np.clip(p[:, [y[3]]], 1e-15, 1))), "shapley").values
    np.testing.assert_allclose(fs.exact(game, "shapley").values, want.ravel(), atol=1e-9)


def test_explain_probability_exact_when_the_budget_covers_it_else_estimated(data):
    from sklearn.datasets import load_breast_cancer

    X, y, y3 = data
    model = _models(X, y, y3)["xgboost"]
    e = fs.explain(model, X[:3], X[100:120], model_output="probability", progress=False)
    assert e.method == "exact" and e.values.shape == (3, 8, 2) and e.info["model_output"].startswith("probability")
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, model.predict_proba(X[:3]), atol=1e-6)
    as_black_box = fs.explain(model.predict_proba, X[:3], X[100:120], progress=False)
    np.testing.assert_allclose(e.values, as_black_box.values, atol=1e-6)
    ll = fs.explain(model, X[:3], X[100:120], model_output="log_loss", y=y[:3], progress=False)
    p = model.predict_proba(X[:3])[np.arange(3), y[:3]]
    np.testing.assert_allclose(ll.values.sum(axis=1) + ll.empty_value, -np.log(p), atol=1e-6)
    Xw, yw = load_breast_cancer(return_X_y=True)                      # 30 features: 2^30 coalitions, estimated
    wide = xgb.XGBClassifier(n_estimators=30, max_depth=3).fit(Xw, yw)
    est = fs.explain(wide, Xw[:1], Xw[100:140], model_output="probability", budget=1500, seed=0, progress=False)
    assert est.method == "surrogate-regression" and np.all(np.isfinite(est.stderr)) and est.stderr.max() > 0
    np.testing.assert_allclose(est.values.sum(axis=1) + est.empty_value, wide.predict_proba(Xw[:1]), atol=1e-6)


class Counting:
    """A classifier that counts its calls."""

    def __init__(self, model):
        self.model, self.calls = model, 0
        self.classes_ = model.classes_

    def predict_proba(self, X):
        self.calls += 1
        return self.model.predict_proba(X)


@pytest.mark.parametrize("kw, match", [
    (dict(model_output="prob"), "model_output must be one of"),
    (dict(model_output="log_loss"), "y .* is required for model_output='log_loss'"),
    (dict(model_output="probability", y=[0, 1]), "only used there"),
    (dict(model_output="log_loss", y=[0]), "one label per row of X"),
    (dict(model_output="log_loss", y=[0, 7]), r"y must hold classes of the model \[0, 1\], got 7"),
    (dict(model_output="raw"), "model_output='raw' is the raw output of a tree model"),
])
def test_bad_output_arguments_are_refused_before_any_model_call(data, kw, match):
    X, y, y3 = data
    model = Counting(_models(X, y, y3)["random forest"])
    with pytest.raises(ValueError, match=match):
        fs.explain(model, X[:2], X[100:110], progress=False, **kw)
    assert model.calls == 0


def test_tree_games_refuse_probability_without_a_background_or_a_classifier(data):
    from sklearn.ensemble import RandomForestRegressor

    X, y, y3 = data
    model = _models(X, y, y3)["xgboost"]
    with pytest.raises(ValueError, match="defined for mode='interventional'"):
        fs.games.TreeGame(model, X[0], model_output="probability")
    with pytest.raises(ValueError, match="defined with a background"):
        fs.explain(model, X[:1], model_output="probability", progress=False)
    with pytest.raises(ValueError, match="y must be one of the model's classes"):
        fs.games.TreeGame(model, X[0], mode="interventional", background=X[:5], model_output="log_loss", y=3)
    reg = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="needs a classifier with predict_proba"):
        fs.games.TreeGame(reg, X[0], mode="interventional", background=X[:5], model_output="probability")


def test_logit_link_explains_a_black_box_on_the_log_odds_scale(data):
    """A logistic regression against one baseline row: on the log-odds scale its values are exactly its linear
    terms coef_j (x_j - b_j); with many background rows they add up to logit(p(x)) - logit(mean p)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X, y, _ = data
    Z = StandardScaler().fit_transform(X)
    model = LogisticRegression(max_iter=5000).fit(Z, y)
    e = fs.explain(model, Z[:4], Z[100:101], link="logit", progress=False)
    assert e.info["model_output"] == "logit of the mean of LogisticRegression.predict_proba"
    np.testing.assert_allclose(e.values[:, :, 1], (Z[:4] - Z[100]) * model.coef_[0], atol=1e-9)
    many = fs.explain(model, Z[:2], Z[100:140], link="logit", budget=500, seed=0, progress=False)
    p = model.predict_proba(Z[100:140]).mean(axis=0)[1]
    np.testing.assert_allclose(many.values[:, :, 1].sum(axis=1), model.decision_function(Z[:2]) - np.log(p / (1 - p)),
                               atol=1e-9)


@pytest.mark.parametrize("kw, match", [(dict(link="probit"), "link must be one of"),
                                       (dict(link="logit", tree=True), "a tree model's scale is model_output"),
                                       (dict(link="logit", model_output="log_loss", y=[0, 1]), "no probability")])
def test_bad_links_are_refused_before_any_model_call(data, kw, match):
    X, y, y3 = data
    forest = _models(X, y, y3)["random forest"]
    model = forest if kw.pop("tree", False) else Counting(forest)
    with pytest.raises(ValueError, match=match):
        fs.explain(model, X[:2], X[100:110], progress=False, **kw)
    assert getattr(model, "calls", 0) == 0


def test_every_coalitions_margin_in_the_table_is_the_trees_output_on_its_hybrid_row():
    """The table of all 2^n coalitions (one walk per background row and tree, Moebius terms, subset sums) against
    the ensemble's own prediction of every hybrid row: missing values, several outputs, categorical splits."""
    from sklearn.ensemble import RandomForestClassifier

    from fairshare.engine.exact import all_coalitions
    from fairshare.trees import prepared
    from fairshare.trees.tabulate import margin_tables

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 7))
    X[rng.random(X.shape) < 0.1] = np.nan
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]), [-0.5, 0.5])
    models = [xgb.XGBClassifier(n_estimators=15, max_depth=4).fit(X, y3 > 0),
              lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(X, y3),
              RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0).fit(np.nan_to_num(X), y3)]
    S = all_coalitions(7)
    for model in models:
        prep = prepared(model)
        x, bg = np.nan_to_num(X[0]) if isinstance(model, RandomForestClassifier) else X[0], X[10:13]
        bg = np.nan_to_num(bg) if isinstance(model, RandomForestClassifier) else bg
        tables = margin_tables(prep, x, bg)
        for b in range(3):
            hybrid = np.where(S, x[None, :], bg[b][None, :])
            np.testing.assert_allclose(tables[b], prep.ensemble.predict(hybrid), rtol=1e-12, atol=1e-12)


def test_the_table_gives_the_same_bits_in_any_batch_and_softmax_log_loss_equals_brute_force(data):
    X, y, y3 = data
    model = _models(X, y, y3)["xgboost 3 classes"]
    x, bg = X[5], X[300:330]
    kw = dict(mode="interventional", background=bg, model_output="log_loss", y=y3[5])
    whole = fs.exact(fs.games.TreeGame(model, x, **kw), "shapley").values
    batched = fs.exact(fs.games.TreeGame(model, x, batch_size=7, **kw), "shapley").values
    assert np.array_equal(whole, batched)
    want = fs.exact(brute(model, x, bg, lambda p: -np.log(np.clip(p[:, [y3[5]]], 1e-15, 1))), "shapley").values
    np.testing.assert_allclose(whole, want.ravel(), atol=1e-6)
    # sampled coalitions read the same table: an estimate's evaluations equal the brute-force game's
    game = fs.games.TreeGame(model, x, mode="interventional", background=bg, model_output="probability")
    S = np.random.default_rng(0).random((40, 8)) < 0.5
    np.testing.assert_allclose(game(S), brute(model, x, bg, lambda p: p)(S), atol=1e-6)


def _label_matrix(X):
    """Three 0/1 labels of the rows (a multi-label target)."""
    return np.column_stack([X[:, 0] > np.median(X[:, 0]), X[:, 1] > np.median(X[:, 1]),
                            X[:, 2] + X[:, 3] > np.median(X[:, 2] + X[:, 3])]).astype(int)


@pytest.mark.parametrize("strategy", ["one_output_per_tree", "multi_output_tree"])
def test_a_multi_label_xgboost_classifier_gives_one_probability_per_label(data, strategy):
    """An XGBClassifier fitted on 3 labels has classes_ [0, 1] but predict_proba gives 3 columns (one logistic per
    label): explain(model_output='probability') was refused after a model call ("gives 3 probabilities, but its
    classes_ name 2"); its values are those of brute force over predict_proba."""
    X, _, _ = data
    model = xgb.XGBClassifier(n_estimators=10, max_depth=3, multi_strategy=strategy, tree_method="hist")
    model.fit(X, _label_matrix(X))
    x, bg = X[0], X[100:115]
    game = fs.games.TreeGame(model, x, mode="interventional", background=bg, model_output="probability")
    assert game.link == "logistic per output"
    want = fs.exact(brute(model, x, bg, lambda p: p), "shapley").values
    got = fs.exact(game, "shapley").values
    assert got.shape == want.shape == (8, 3) and np.abs(want).max() > 0.05
    np.testing.assert_allclose(got, want, atol=1e-6)
    e = fs.explain(model, X[:2], bg, model_output="probability", progress=False)
    assert e.values.shape == (2, 8, 3)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, model.predict_proba(X[:2]), atol=1e-6)


def test_the_log_loss_of_a_multi_label_classifier_is_refused_before_any_model_call(data, monkeypatch):
    """A label y of a multi-label classifier names no class of one probability: xgboost read -log p[:, y] of the
    y-th label's probability (catboost's MultiLogloss likewise) and returned it silently."""
    X, _, _ = data
    models = [xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(X, _label_matrix(X)[:, :2])]
    cb = pytest.importorskip("catboost")
    models.append(cb.CatBoostClassifier(iterations=5, depth=3, loss_function="MultiLogloss", verbose=0,
                                        allow_writing_files=False).fit(X, _label_matrix(X)))
    for model in models:
        calls = []
        monkeypatch.setattr(type(model), "predict_proba", lambda self, *a, **k: calls.append(1))
        with pytest.raises(ValueError, match="multi-label classifier .* explain model_output='probability'"):
            fs.explain(model, X[:2], X[100:110], model_output="log_loss", y=[1, 0], progress=False)
        assert calls == []


@pytest.mark.parametrize("objective, says", [("binary:logitraw", "the raw margin"), ("binary:hinge", "0/1 labels")])
def test_an_xgboost_objective_whose_predict_proba_is_no_probability_is_refused_before_any_model_call(
        data, monkeypatch, objective, says):
    """binary:logitraw's predict_proba is the margin m as [1 - m, m], binary:hinge's 0/1 labels: no link maps the
    trees to them, which was found only by the link search's call to predict_proba. The objective says it first."""
    X, y, _ = data
    model = xgb.XGBClassifier(n_estimators=5, max_depth=3, objective=objective).fit(X, y)
    calls = []
    monkeypatch.setattr(type(model), "predict_proba", lambda self, *a, **k: calls.append(1))
    for output, extra in (("probability", {}), ("log_loss", {"y": [y[0], y[1]]})):
        with pytest.raises(ValueError, match=f"objective '{objective}' makes its predict_proba {says}"):
            fs.explain(model, X[:2], X[100:110], model_output=output, progress=False, **extra)
    assert calls == []
    assert fs.explain(model, X[:2], X[100:110], progress=False).method == "exact"     # its margin, as before


def test_the_probability_link_is_found_on_the_background_as_the_model_reads_it(data):
    """TreeGame aligns a background frame to the model's features by name and takes one row as a Series, but the
    probability link was found by predict_proba on the background as given: columns in another order failed inside
    xgboost ("feature_names mismatch") and scikit-learn, and lightgbm predicted the misordered columns and was
    refused ("no link maps the trees' output"); a Series background failed ("Expected a 2-dimensional container")."""
    import pandas as pd
    from sklearn.ensemble import GradientBoostingClassifier

    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    makers = [lambda: xgb.XGBClassifier(n_estimators=10, max_depth=3).fit(frame, y),
              lambda: lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame, y),
              lambda: GradientBoostingClassifier(n_estimators=10, random_state=0).fit(frame, y)]
    S = np.random.default_rng(0).random((10, X.shape[1])) < 0.5
    for make in makers:
        for background in (frame.iloc[100:110, ::-1], frame.iloc[100]):
            model = make()                                       # a fresh model: its link not yet found
            game = fs.games.TreeGame(model, frame.iloc[0], mode="interventional", background=background,
                                     model_output="probability")
            rows = np.atleast_2d(np.asarray(background))[:, ::-1] if background.ndim == 2 else X[[100]]
            np.testing.assert_allclose(game(S), brute(model, X[0], rows, lambda p: p)(S), atol=1e-6)


def test_probability_of_sparse_rows_equals_brute_force_over_the_models_sparse_predictions():
    """A scipy.sparse background with model_output='probability' failed after the reading's model calls: the link
    rows were np.asarray of the matrix (a 0-d object array), refused by the model ("Feature shape mismatch", "setting
    an array element with a sequence"). The link is found on the sparse rows as the model reads them."""
    import scipy.sparse as sp
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    X[np.abs(X) < 0.5] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    models = [xgb.XGBClassifier(n_estimators=8, max_depth=3).fit(sp.csr_matrix(X), y),
              RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y),
              lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y)]
    x, bg = X[0], X[10:20]
    S = np.random.default_rng(1).random((12, 4)) < 0.5
    for model in models:
        game = fs.games.TreeGame(model, sp.csr_matrix(x[None]), mode="interventional", background=sp.csr_matrix(bg),
                                 model_output="probability")
        hybrid = np.where(S[:, None, :], x, bg).reshape(-1, 4)            # absent entries: as the model reads them
        want = model.predict_proba(sp.csr_matrix(hybrid)).reshape(len(S), len(bg), -1).mean(axis=1)
        np.testing.assert_allclose(game(S), want, atol=1e-6)
        e = fs.explain(model, sp.csr_matrix(X[:2]), sp.csr_matrix(bg), model_output="probability", progress=False)
        np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, model.predict_proba(sp.csr_matrix(X[:2])),
                                   atol=1e-6)
