"""Tree games: readers, game values, exact values against enumeration and against shap."""

import warnings

import numpy as np
import pytest

import fairshare as fs
from fairshare.trees import leaf_paths, read_ensemble

from conftest import INDEX_IDS, INDICES, model_raw_output

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,  # noqa: E402
                              HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

warnings.filterwarnings("ignore", message=".*feature names.*")


def data(n, rows=300, missing=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, n))
    clean = X.copy()
    y = clean[:, 0] * clean[:, 1] + np.sin(2 * clean[:, 2 % n]) + (clean.sum(axis=1) > 0) + 0.1 * rng.standard_normal(rows)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y


def model_zoo(n, seed=0):
    """Shallow and deep trees of every supported family; deep trees on few features repeat features
    along their paths, and the xgboost / lightgbm models see missing values."""
    X, y = data(n, missing=0.08, seed=seed)
    Xc, _ = data(n, seed=seed)
    labels = np.digitize(y, np.quantile(y, [0.4, 0.7]))
    return {
        "xgboost-shallow": (xgb.XGBRegressor(n_estimators=30, max_depth=2, random_state=seed).fit(X, y), X),
        "xgboost-deep": (xgb.XGBRegressor(n_estimators=10, max_depth=9, random_state=seed).fit(X, y), X),
        "xgboost-multiclass": (xgb.XGBClassifier(n_estimators=8, max_depth=4).fit(X, labels), X),
        "lightgbm": (lgb.LGBMRegressor(n_estimators=15, num_leaves=24, min_child_samples=5, verbose=-1).fit(X, y), X),
        "sklearn-tree-deep": (DecisionTreeRegressor(max_depth=12, random_state=seed).fit(Xc, y), Xc),
        "sklearn-forest": (RandomForestRegressor(n_estimators=8, max_depth=6, random_state=seed).fit(Xc, y), Xc),
        "sklearn-extratrees": (ExtraTreesRegressor(n_estimators=8, max_depth=6, random_state=seed).fit(Xc, y), Xc),
        "sklearn-gb-classifier": (GradientBoostingClassifier(n_estimators=10, max_depth=3).fit(Xc, labels), Xc),
        "sklearn-forest-classifier": (RandomForestClassifier(n_estimators=6, max_depth=5, random_state=seed).fit(Xc, labels), Xc),
    }


raw_output = model_raw_output


ZOO = model_zoo(7)


@pytest.mark.parametrize("name", list(ZOO))
def test_readers_reproduce_the_models_raw_output(name):
    model, X = ZOO[name]
    ens = read_ensemble(model)
    tol = 1e-5 if name.startswith("xgboost") else 1e-10       # xgboost sums leaves in float32
    np.testing.assert_allclose(ens.predict(X), raw_output(model, X), atol=tol)


def test_deep_trees_repeat_features_along_paths():
    paths = leaf_paths(read_ensemble(ZOO["sklearn-tree-deep"][0]))
    steps = (paths.node >= 0).sum(axis=1)
    assert np.any(steps > paths.n_factors)


@pytest.mark.parametrize("sv", INDICES, ids=INDEX_IDS)
@pytest.mark.parametrize("mode", ["path-dependent", "interventional"])
@pytest.mark.parametrize("name", list(ZOO))
def test_exact_values_equal_enumeration(name, mode, sv):
    model, X = ZOO[name]
    bg = X[1:4] if mode == "interventional" else None
    g = fs.games.TreeGame(model, X[0], mode=mode, background=bg)
    closed = fs.exact(g, sv)
    assert closed.info == {"via": "closed-form"}
    np.testing.assert_allclose(closed.values, fs.exact(g, sv, via="enumeration").values, atol=1e-9)


@pytest.mark.parametrize("mode", ["path-dependent", "interventional"])
@pytest.mark.parametrize("name", ["xgboost-deep", "sklearn-forest-classifier", "lightgbm"])
def test_semivalue_given_by_weights_only_equals_enumeration(name, mode):
    # no measure on u: the per-leaf polynomial path (path-dependent) and the sign tables (interventional)
    model, X = ZOO[name]
    weights = np.array([0.3, 0.05, 0.02, 0.01, 0.02, 0.05, 0.3]) / 2.0
    sv = fs.Semivalue(weights)
    assert sv.quadrature(6) is None
    g = fs.games.TreeGame(model, X[2], mode=mode, background=X[5:9] if mode == "interventional" else None)
    np.testing.assert_allclose(fs.exact(g, sv).values, fs.exact(g, sv, via="enumeration").values, atol=1e-9)


@pytest.mark.parametrize("mode", ["path-dependent", "interventional"])
@pytest.mark.parametrize("name", list(ZOO))
def test_leave_one_out_is_the_full_value_minus_the_value_without_the_player(name, mode):
    """Leave-one-out's measure is a point at u = 1, where the compiled path-dependent walk divided 0 by 0 for the
    players the row leaves (A = 0) and gave them nothing: 0.038 instead of 0.147 for the one feature of a tree."""
    model, X = ZOO[name]
    bg = X[1:4] if mode == "interventional" else None
    g = fs.games.TreeGame(model, X[0], mode=mode, background=bg)
    n = X.shape[1]
    full = np.ones((1, n), dtype=bool)
    without = ~np.eye(n, dtype=bool)
    direct = g(full) - g(without)                                 # v(N) - v(N \ {i}), (n[, k])
    closed = fs.exact(g, "leave-one-out")
    np.testing.assert_allclose(closed.values, direct, atol=1e-9)
    np.testing.assert_allclose(closed.values, fs.exact(g, "loo", via="enumeration").values, atol=1e-9)
    rows = fs.games.tree_values(model, X[:3], "loo", mode=mode, background=bg).values
    np.testing.assert_allclose(rows[0], direct, atol=1e-9)
    if mode == "path-dependent":
        assert np.abs(direct).max() > 0.05                       # the players the walk left out are not null


def test_interventional_background_sharing_features_with_the_row():
    # background rows equal to the explicand on some features: the walk follows both where they agree
    model, X = ZOO["xgboost-deep"]
    bg = np.repeat(X[:1], 4, axis=0)
    bg[0, :3], bg[1, 3:], bg[2, ::2], bg[3] = X[7, :3], X[8, 3:], X[9, ::2], X[10]
    g = fs.games.TreeGame(model, X[0], mode="interventional", background=bg)
    for sv in ("shapley", "banzhaf"):
        np.testing.assert_allclose(fs.exact(g, sv).values, fs.exact(g, sv, via="enumeration").values, atol=1e-9)


@pytest.mark.parametrize("n", [12, 14])
def test_exact_values_equal_enumeration_at_fourteen_players(n):
    X, y = data(n, missing=0.05, seed=n)
    model = xgb.XGBRegressor(n_estimators=20, max_depth=6).fit(X, y)
    for mode, bg in (("path-dependent", None), ("interventional", X[5:7])):
        g = fs.games.TreeGame(model, X[0], mode=mode, background=bg)
        for sv in ("shapley", "banzhaf"):
            np.testing.assert_allclose(fs.exact(g, sv).values, fs.exact(g, sv, via="enumeration").values, atol=1e-9)


@pytest.mark.parametrize("name", list(ZOO))
def test_interventional_values_are_the_models_predictions_on_imputed_rows(name):
    model, X = ZOO[name]
    bg = X[10:13]
    g = fs.games.TreeGame(model, X[0], mode="interventional", background=bg)
    S = np.random.default_rng(0).random((25, X.shape[1])) < 0.5
    imputed = np.where(S[:, None, :], X[0][None, None, :], bg[None, :, :]).reshape(-1, X.shape[1])
    expected = raw_output(model, imputed).reshape(25, 3, -1).mean(axis=1)
    got = g(S)
    got = got[:, None] if got.ndim == 1 else got
    tol = 1e-5 if name.startswith("xgboost") else 1e-10
    np.testing.assert_allclose(got, expected, atol=tol)


@pytest.mark.parametrize("mode", ["path-dependent", "interventional"])
@pytest.mark.parametrize("name", list(ZOO))
def test_full_coalition_is_the_prediction(name, mode):
    model, X = ZOO[name]
    g = fs.games.TreeGame(model, X[3], mode=mode, background=X[4] if mode == "interventional" else None)
    full = g(np.ones((1, X.shape[1]), bool))
    tol = 1e-5 if name.startswith("xgboost") else 1e-10
    np.testing.assert_allclose(np.atleast_2d(full), raw_output(model, X[3:4]), atol=tol)


def test_batch_values_match_one_game_per_row():
    model, X = ZOO["lightgbm"]
    batch = fs.games.tree_values(model, X[:6], "banzhaf", mode="interventional", background=X[20:25]).values
    for r in range(6):
        g = fs.games.TreeGame(model, X[r], mode="interventional", background=X[20:25])
        np.testing.assert_allclose(batch[r], fs.exact(g, "banzhaf").values, atol=1e-12)


def test_image_scale_forest_is_exact_and_efficient():
    rng = np.random.default_rng(0)
    X = rng.random((400, 3072))
    y = (X[:, :30].sum(axis=1) > 15).astype(int)
    model = RandomForestClassifier(n_estimators=20, max_depth=10, random_state=0).fit(X, y)
    g = fs.games.TreeGame(model, X[0], mode="interventional", background=X[1])
    phi = fs.exact(g, "shapley")
    assert phi.values.shape == (3072, 2)
    np.testing.assert_allclose(phi.values.sum(axis=0), model.predict_proba(X[:1])[0] - model.predict_proba(X[1:2])[0],
                               atol=1e-12)
    banzhaf = fs.exact(fs.games.TreeGame(model, X[0]), "banzhaf")
    assert np.all(np.isfinite(banzhaf.values))


# ----------------------------------------------------------------------------------------- shap
shap = pytest.importorskip("shap")


def _shap_array(values, shape):
    values = np.asarray(values)
    if values.shape != shape:
        values = np.moveaxis(values, 0, -1)
    return values


@pytest.fixture(scope="module")
def breast_cancer_xgb():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return xgb.XGBClassifier(n_estimators=60, max_depth=4, random_state=0).fit(X, y), X


@pytest.fixture(scope="module")
def digits_forest():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return RandomForestClassifier(n_estimators=30, max_depth=8, random_state=0).fit(X, y), X


def test_shap_path_dependent_breast_cancer(breast_cancer_xgb):
    model, X = breast_cancer_xgb
    ours = fs.games.tree_values(model, X[:10], "shapley", mode="path-dependent").values
    theirs = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent").shap_values(X[:10])
    np.testing.assert_allclose(ours, theirs, atol=2e-5)       # shap computes xgboost values in float32


def test_shap_interventional_breast_cancer(breast_cancer_xgb):
    model, X = breast_cancer_xgb
    bg = X[200:240]
    ours = fs.games.tree_values(model, X[:5], "shapley", mode="interventional", background=bg).values
    explainer = shap.TreeExplainer(model, data=bg, feature_perturbation="interventional", model_output="raw")
    np.testing.assert_allclose(ours, explainer.shap_values(X[:5]), atol=2e-5)


def test_shap_path_dependent_digits(digits_forest):
    model, X = digits_forest
    ours = fs.games.tree_values(model, X[:5], "shapley").values
    theirs = _shap_array(shap.TreeExplainer(model).shap_values(X[:5]), ours.shape)
    np.testing.assert_allclose(ours, theirs, atol=1e-10)


def test_shap_interventional_digits(digits_forest):
    model, X = digits_forest
    bg = X[500:520]
    ours = fs.games.tree_values(model, X[:3], "shapley", mode="interventional", background=bg).values
    explainer = shap.TreeExplainer(model, data=bg, feature_perturbation="interventional")
    theirs = _shap_array(explainer.shap_values(X[:3]), ours.shape)
    # shap's interventional code rounds through float32 (its values miss efficiency by ~1e-8);
    # ours sum to the model's own probability differences to 1e-12
    np.testing.assert_allclose(ours, theirs, atol=1e-7)
    gap = model.predict_proba(X[:3]) - model.predict_proba(bg).mean(axis=0)
    np.testing.assert_allclose(ours.sum(axis=1), gap, atol=1e-12)


# ------------------------------------------------------------------------------------ bad input
def test_bad_arguments():
    model, X = ZOO["sklearn-forest"]
    with pytest.raises(ValueError, match="mode must be one of"):
        fs.games.TreeGame(model, X[0], mode="conditional")
    with pytest.raises(ValueError, match="background .* is required"):
        fs.games.TreeGame(model, X[0], mode="interventional")
    with pytest.raises(ValueError, match="background is only used"):
        fs.games.TreeGame(model, X[0], background=X[1])
    with pytest.raises(ValueError, match="x must have 7 columns"):
        fs.games.TreeGame(model, X[0, :5])
    with pytest.raises(ValueError, match="x must be one row"):
        fs.games.TreeGame(model, X[:2])
    with pytest.raises(ValueError, match="background must have 7 columns"):
        fs.games.TreeGame(model, X[0], mode="interventional", background=X[:3, :2])
    with pytest.raises(TypeError, match="model must be an xgboost, lightgbm, catboost or scikit-learn tree model"):
        fs.games.TreeGame(object(), X[0])


def test_feature_names_become_player_names():
    import pandas as pd

    X, y = data(4)
    frame = pd.DataFrame(X, columns=["age", "bmi", "bp", "s1"])
    model = DecisionTreeClassifier(max_depth=3).fit(frame, y > 0)
    g = fs.games.TreeGame(model, frame.iloc[0])
    assert g.player_names == ["age", "bmi", "bp", "s1"]
    phi = fs.estimate(g, "shapley", method="regression", budget=14, seed=0)
    np.testing.assert_allclose(phi.values, fs.exact(g, "shapley").values, atol=1e-9)


def test_tree_games_declare_their_null_players():
    X, y = data(6)
    model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X[:, :4], y)      # splits on at most 3 of 4
    x, b = X[0, :4].copy(), X[1, :4].copy()
    b[0] = x[0]                                                                        # same value: null in interventional
    g = fs.games.TreeGame(model, x, mode="interventional", background=b)
    null = g.null_players()
    used = np.isin(np.arange(4), model.tree_.feature[model.tree_.feature >= 0])
    np.testing.assert_array_equal(null, ~used | (np.arange(4) == 0))
    exact = fs.exact(g, "shapley").values
    np.testing.assert_allclose(exact[null], 0.0, atol=1e-15)
    path = fs.games.TreeGame(model, x)
    np.testing.assert_array_equal(path.null_players(), ~used)


@pytest.mark.parametrize("cls", [GradientBoostingRegressor, GradientBoostingClassifier])
def test_a_model_that_refuses_missing_values_has_its_nan_rows_refused_not_walked(cls):
    # hunt: GradientBoosting's predict refuses NaN, yet the tree door walked a NaN row down the default ways and
    # returned values for a prediction the model never makes
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    model = cls(n_estimators=3).fit(X, X[:, 0] > 0)
    row = np.array([[0.0, np.nan, 0.0]])
    with pytest.raises(ValueError, match=rf"X holds a missing value \(NaN\) at row 0, column 1, and the "
                                         rf"{cls.__name__} takes none"):
        fs.games.tree_values(model, row)
    with pytest.raises(ValueError, match="background holds a missing value"):
        fs.games.tree_values(model, X[:1], mode="interventional", background=np.vstack([X[:3], row]))
    with pytest.raises(ValueError, match="x holds a missing value"):
        fs.games.TreeGame(model, row[0])
    nan_ok = HistGradientBoostingRegressor(max_iter=5).fit(np.vstack([X, row]), np.r_[X[:, 0], 0.0])
    assert np.isfinite(fs.games.tree_values(nan_ok, row).values).all()     # a model that takes NaN: walked


def test_tree_interactions_keep_the_rows_labels_as_tree_values_do():
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(100, 3)), columns=["a", "b", "c"], index=[f"id{i}" for i in range(100)])
    model = DecisionTreeRegressor(max_depth=3).fit(frame, frame.a * frame.b)
    rows = frame.iloc[[5, 7]]
    assert fs.games.tree_values(model, rows).row_names == ["id5", "id7"]
    for index in ("shap", "k-sii"):
        assert fs.games.tree_interactions(model, rows, index=index).row_names == ["id5", "id7"]


def test_a_lightgbm_models_features_are_named_as_the_frame_names_them_at_every_tree_door():
    """lightgbm keeps the column 'mean radius' as 'mean_radius': fs.explain named the value 'mean radius' (the frame's
    column), tree_values and tree_interactions 'mean_radius' (the model's), so the same feature had two names."""
    import pandas as pd
    lgb = pytest.importorskip("lightgbm")

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["mean radius", "worst area", "x"])
    model = lgb.LGBMRegressor(n_estimators=10, verbose=-1).fit(X, 2 * X["mean radius"] + X["x"])
    rows = X.iloc[:3][["x", "mean radius", "worst area"]]                          # another order: by name
    names = ["mean radius", "worst area", "x"]
    e = fs.explain(model, rows, progress=False)
    values = fs.games.tree_values(model, rows)
    pairs = fs.games.tree_interactions(model, rows)
    assert e.player_names == values.player_names == pairs.player_names == names
    assert np.array_equal(e.values, values.values) and abs(values.values[2, 0]) > 1.0    # mean radius, row 2


def test_one_row_given_as_a_series_is_named_by_its_name_at_every_tree_door():
    """tree_interactions(model, frame.iloc[5]) took the Series' index (its 3 feature names) as row names and failed
    ("row_names must have 1 names, got 3"); tree_values named the row '0' where fs.explain names it 'id5'."""
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(100, 3)), columns=["a", "b", "c"], index=[f"id{i}" for i in range(100)])
    model = DecisionTreeRegressor(max_depth=3).fit(frame, frame.a * frame.b)
    row = frame.iloc[5]
    values = fs.games.tree_values(model, row)
    assert values.row_names == ["id5"] == fs.explain(model, row, progress=False).row_names
    for index in ("shap", "k-sii"):
        pairs = fs.games.tree_interactions(model, row, index=index)
        assert pairs.row_names == ["id5"] and len(pairs) == 1
    np.testing.assert_allclose(fs.games.tree_interactions(model, row).values.sum(axis=2), values.values, atol=1e-12)
    assert fs.games.tree_values(model, row.rename(None)).row_names == ["0"]


def test_a_category_the_model_never_saw_is_read_as_missing_with_a_warning():
    # hunt: an unseen category became a missing value without a word
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=300), "c": pd.Categorical(rng.choice(["x", "y", "z"], 300))})
    model = HistGradientBoostingRegressor(max_iter=5, categorical_features="from_dtype").fit(
        frame, frame.a + frame.c.map({"x": 0, "y": 3, "z": -2}).astype(float))
    new = pd.DataFrame({"a": [0.1, 0.1], "c": pd.Categorical(["q", None], categories=["q", "x", "y", "z"])})
    with pytest.warns(fs.FairshareWarning, match=r"X column 'c' holds 'q', a category the model never saw in "
                                                 r"training: read as missing"):
        e = fs.games.tree_values(model, new)
    np.testing.assert_array_equal(e.values[0], e.values[1])           # 'q' and a missing value: the same row


# ------------------------------------------------------------------------------------------- groups of features
GROUPS = [[0, 3], [1], [2, 4, 5], [6]]


def _box(model, X, bg, groups, output=None):
    """The groups' game of the model's own raw output (or ``output``) enumerated through its predictions."""
    f = output or (lambda A: raw_output(model, A))
    return fs.explain(f, X, background=bg, groups=groups, budget=1 << len(groups), progress=False)


@pytest.mark.parametrize("name", list(ZOO))
def test_groups_of_a_tree_model_are_one_grouped_walk_of_its_raw_output(name):
    """groups= on a tree model: exact values from one grouped tree walk, the tree door's output (the raw margin,
    as without groups), equal to enumerating the groups' game through the model's own raw output. They were the
    black box's, of predict_proba for a classifier: another scale than the same model's values without groups."""
    model, X = ZOO[name]
    bg = X[200:216]
    e = fs.explain(model, X[:3], background=bg, groups=GROUPS, progress=False)
    assert e.method == "exact" and "tree walks" in e.info["via"] and e.player_names == ["x0 + x3", "x1",
                                                                                        "x2 + x4 + x5", "x6"]
    box = _box(model, X[:3], bg, GROUPS)
    scale = np.abs(box.values).max()
    np.testing.assert_allclose(e.values, box.values.reshape(e.values.shape), rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(np.ravel(e.empty_value), np.ravel(box.empty_value), rtol=0, atol=1e-5 * scale)


@pytest.mark.parametrize("name", ["xgboost-deep", "lightgbm", "sklearn-forest", "sklearn-gb-classifier"])
def test_groups_without_a_background_are_the_path_dependent_walk_over_the_groups(name):
    """Without a background (refused before): the path-dependent game of the groups; one feature per group gives the
    tree values without groups, and every grouping adds up to the raw output."""
    model, X = ZOO[name]
    plain = fs.explain(model, X[:4], progress=False)
    single = fs.explain(model, X[:4], groups=[[j] for j in range(7)], progress=False)
    np.testing.assert_allclose(single.values, plain.values, rtol=0, atol=1e-10)
    grouped = fs.explain(model, X[:4], groups=GROUPS, progress=False)
    total = grouped.values.sum(axis=1) + np.asarray(grouped.empty_value)
    np.testing.assert_allclose(total.reshape(4, -1), raw_output(model, X[:4]), rtol=0, atol=1e-5)
    mixed = np.abs(grouped.values[:, 0] - plain.values[:, 0] - plain.values[:, 3]).max()
    assert mixed > 1e-6                                       # the group's value is not the sum of its features'


def test_grouped_probabilities_names_and_interactions_equal_the_black_boxs():
    """model_output='probability', groups named in a dict over a frame in another column order, and the groups'
    interaction matrices: each equal to the same game enumerated through the model's predictions."""
    import pandas as pd

    model, X = ZOO["sklearn-gb-classifier"]
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(7)])
    fitted = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(frame, model.predict(X))
    groups = {"front": ["c0", "c3"], "one": ["c1"], "middle": ["c2", "c4", "c5"], "last": ["c6"]}
    shuffled = frame[["c6", "c2", "c0", "c5", "c1", "c4", "c3"]]
    e = fs.explain(fitted, shuffled.iloc[:2], background=shuffled.iloc[200:212], groups=groups,
                   model_output="probability", progress=False)
    assert e.player_names == list(groups) and e.method == "exact"
    box = _box(fitted, frame.iloc[:2], frame.iloc[200:212], groups, output=fitted.predict_proba)
    np.testing.assert_allclose(e.values, box.values, rtol=0, atol=1e-9)
    pairs = fs.explain(fitted, frame.iloc[:2], background=frame.iloc[200:212], groups=groups, interactions=2,
                       progress=False)
    want = fs.explain(lambda A: fitted.decision_function(A), frame.iloc[:2], background=frame.iloc[200:212],
                      groups=groups, interactions=2, budget=16, progress=False)
    np.testing.assert_allclose(pairs.interactions, want.interactions.reshape(pairs.interactions.shape), rtol=0,
                               atol=1e-9)


def test_groups_of_many_features_stay_exact_where_the_black_box_could_only_estimate():
    """40 features in 20 groups: one walk, exact (the black box would need 2^20 model evaluations per row), adding
    up to the margin's gap from the background's mean."""
    X, y = data(40, rows=400)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=5, random_state=0).fit(X, y)
    e = fs.explain(model, X[:5], background=X[300:340], groups=[[2 * k, 2 * k + 1] for k in range(20)],
                   progress=False)
    assert e.method == "exact" and e.values.shape == (5, 20)
    gap = model.predict(X[:5], output_margin=True) - model.predict(X[300:340], output_margin=True).mean()
    np.testing.assert_allclose(e.values.sum(axis=1), gap, rtol=0, atol=1e-4)


def test_groups_over_catboost_categories_and_lightgbm_linear_leaves():
    """catboost with categorical columns in the groups: the grouped walk equals the raw output's enumeration.
    lightgbm's linear leaves read every feature, so there is no grouped walk: their groups are the black box's of the
    model's margin (the same scale), which needs a background, refused by name without one."""
    import pandas as pd

    cb = pytest.importorskip("catboost")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.choice(["x", "y", "z"], 300), "c": rng.normal(size=300),
                      "d": rng.choice(["p", "q"], 300)})
    y = ((X.a + (X.b == "x") + (X.d == "p") * X.c) > 0.5).astype(int)
    model = cb.CatBoostClassifier(iterations=30, depth=3, verbose=0, cat_features=["b", "d"], random_seed=0).fit(X, y)
    groups = {"ab": ["a", "b"], "cd": ["c", "d"]}
    e = fs.explain(model, X.iloc[:3], background=X.iloc[100:120], groups=groups, progress=False)
    assert "tree walks" in e.info["via"]
    box = _box(model, X.iloc[:3], X.iloc[100:120], groups)
    np.testing.assert_allclose(e.values, box.values, rtol=0, atol=1e-9)
    numbers = X[["a", "c"]].assign(e=rng.normal(size=300))
    linear = lgb.LGBMRegressor(n_estimators=10, linear_tree=True, verbose=-1).fit(numbers, 2 * numbers.a + numbers.c)
    split = [["a", "c"], ["e"]]
    got = fs.explain(linear, numbers.iloc[:2], background=numbers.iloc[100:110], groups=split, progress=False)
    assert "linear leaves" in got.info["model_output"]
    np.testing.assert_allclose(got.values, _box(linear, numbers.iloc[:2], numbers.iloc[100:110], split).values,
                               rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="background .* is required for groups= on this model: its trees have linear"):
        fs.explain(linear, numbers.iloc[:2], groups=split, progress=False)
