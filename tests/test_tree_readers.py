"""Every tree model family fairshare reads, checked against the model itself.

For each configuration (20-25 trees, 6 features, built from the cases shap's own tree tests
cover): the ensemble reproduces the model's raw output; exact values equal brute-force
enumeration of the same game, in interventional mode with the game evaluated by the *model's own*
prediction on imputed rows (so the reader, the split rules and the walk are checked end to end)
and in path-dependent mode against enumeration of the tree game; values add up to the model's
output. Configurations fairshare cannot explain exactly are refused with a clear error.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import fairshare as fs
from fairshare.engine.exact import all_coalitions
from fairshare.trees import prepared, read_ensemble, tree_rows

from conftest import model_raw_output

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
from sklearn import ensemble as ske  # noqa: E402
from sklearn import tree as skt  # noqa: E402
from sklearn.ensemble._iforest import _average_path_length  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402

warnings.filterwarnings("ignore", message=".*feature names.*")
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", message=".*eval_set.*")

N_FEATURES = 6
rng0 = np.random.default_rng(0)
X_NUM = rng0.standard_normal((400, N_FEATURES))
Y_REG = X_NUM[:, 0] * X_NUM[:, 1] + np.sin(2 * X_NUM[:, 2]) + (X_NUM[:, 3] > 0) + 0.1 * rng0.standard_normal(400)
Y_BIN = (Y_REG > np.median(Y_REG)).astype(int)
Y_MULTI = np.digitize(Y_REG, np.quantile(Y_REG, [0.33, 0.66]))
X_NAN = X_NUM.copy()
X_NAN[rng0.random(X_NAN.shape) < 0.1] = np.nan
CATS = np.array(["red", "green", "blue", "violet", "amber"])
FRAME = pd.DataFrame(X_NUM[:, :5], columns=list("abcde"))
FRAME["colour"] = pd.Categorical(CATS[rng0.integers(5, size=400)], categories=CATS)
FRAME.loc[rng0.random(400) < 0.05, "colour"] = np.nan
Y_CAT = Y_REG + 2.0 * FRAME["colour"].isin(["red", "blue"]).to_numpy() - 1.0 * (FRAME["colour"] == "amber").to_numpy()
CODES = np.column_stack([X_NUM[:, :5], FRAME["colour"].cat.codes.replace(-1, np.nan).to_numpy()])


def _xgb_booster_margin(b, X):
    types = b.feature_types
    dm = xgb.DMatrix(X, feature_names=b.feature_names, feature_types=types, enable_categorical=True)
    return b.predict(dm, output_margin=True)


def case_xgboost():
    out = {}
    out["xgb-regressor-nan"] = (xgb.XGBRegressor(n_estimators=20, max_depth=4).fit(X_NAN, Y_REG), X_NAN, None)
    out["xgb-binary"] = (xgb.XGBClassifier(n_estimators=20, max_depth=3).fit(X_NAN, Y_BIN), X_NAN, None)
    out["xgb-multiclass"] = (xgb.XGBClassifier(n_estimators=8, max_depth=3).fit(X_NUM, Y_MULTI), X_NUM, None)
    out["xgb-dart"] = (xgb.XGBRegressor(booster="dart", n_estimators=20, max_depth=3, rate_drop=0.3, random_state=0)
                       .fit(X_NUM, Y_REG), X_NUM, None)
    out["xgb-random-forest"] = (xgb.XGBRFRegressor(n_estimators=20, max_depth=4).fit(X_NAN, Y_REG), X_NAN, None)
    out["xgb-multi-target"] = (xgb.XGBRegressor(n_estimators=10, max_depth=3).fit(X_NUM, np.c_[Y_REG, -Y_REG]),
                               X_NUM, None)
    out["xgb-multi-output-tree"] = (xgb.XGBRegressor(n_estimators=10, max_depth=3, tree_method="hist",
                                                     multi_strategy="multi_output_tree")
                                    .fit(X_NUM, np.c_[Y_REG, X_NUM[:, 4], Y_BIN]), X_NUM, None)
    sentinel = np.where(np.isnan(X_NAN), 1e-8, X_NAN)
    out["xgb-missing-sentinel"] = (xgb.XGBRegressor(n_estimators=20, max_depth=4, missing=1e-8).fit(sentinel, Y_REG),
                                   sentinel, None)
    out["xgb-early-stopping"] = (xgb.XGBRegressor(n_estimators=200, max_depth=3, learning_rate=0.9,
                                                  early_stopping_rounds=2)
                                 .fit(X_NUM[:300], Y_REG[:300], eval_set=[(X_NUM[300:], Y_REG[300:])], verbose=False),
                                 X_NUM, None)
    out["xgb-categorical-pandas"] = (xgb.XGBRegressor(n_estimators=20, max_depth=4, enable_categorical=True,
                                                      tree_method="hist").fit(FRAME, Y_CAT), FRAME, None)
    dm = xgb.DMatrix(CODES, label=Y_CAT, feature_types=["q"] * 5 + ["c"], enable_categorical=True)
    out["xgb-booster-categorical-codes"] = (xgb.train({"max_depth": 4, "tree_method": "hist"}, dm, 20), CODES,
                                            lambda m, X: _xgb_booster_margin(m, X))
    frame = pd.DataFrame(X_NUM, columns=[f"f{i}" for i in range(N_FEATURES)])
    out["xgb-booster-dataframe"] = (xgb.train({"max_depth": 3}, xgb.DMatrix(frame, label=Y_REG), 20), frame,
                                    lambda m, X: m.predict(xgb.DMatrix(X), output_margin=True))
    return out


def _lgb_rf_margin(model, X):
    return model.predict(X, raw_score=True) / model.booster_.current_iteration()


def case_lightgbm():
    kw = dict(n_estimators=20, num_leaves=12, min_child_samples=5, verbose=-1)
    out = {}
    out["lgb-regressor-nan"] = (lgb.LGBMRegressor(**kw).fit(X_NAN, Y_REG), X_NAN, None)
    out["lgb-binary"] = (lgb.LGBMClassifier(**kw).fit(X_NAN, Y_BIN), X_NAN, None)
    out["lgb-multiclass"] = (lgb.LGBMClassifier(**{**kw, "n_estimators": 8}).fit(X_NUM, Y_MULTI), X_NUM, None)
    out["lgb-random-forest"] = (lgb.LGBMRegressor(boosting_type="rf", subsample=0.7, subsample_freq=1, **kw)
                                .fit(X_NAN, Y_REG), X_NAN, _lgb_rf_margin)
    out["lgb-dart"] = (lgb.LGBMRegressor(boosting_type="dart", **kw).fit(X_NUM, Y_REG), X_NUM, None)
    zeros = np.where(np.abs(X_NUM) < 0.4, 0.0, X_NUM)
    out["lgb-zero-as-missing"] = (lgb.LGBMRegressor(zero_as_missing=True, **kw).fit(zeros, Y_REG), zeros, None)
    out["lgb-no-missing"] = (lgb.LGBMRegressor(use_missing=False, **kw).fit(X_NAN, Y_REG), X_NAN, None)
    out["lgb-early-stopping"] = (lgb.LGBMRegressor(**{**kw, "n_estimators": 300, "learning_rate": 0.9})
                                 .fit(X_NUM[:300], Y_REG[:300], eval_set=[(X_NUM[300:], Y_REG[300:])],
                                      callbacks=[lgb.early_stopping(2, verbose=False)]), X_NUM, None)
    out["lgb-categorical-pandas"] = (lgb.LGBMRegressor(**kw, min_data_per_group=5, cat_smooth=1).fit(FRAME, Y_CAT),
                                     FRAME, None)
    out["lgb-categorical-codes"] = (lgb.LGBMRegressor(**kw, min_data_per_group=5).fit(CODES, Y_CAT,
                                                                                        categorical_feature=[5]),
                                    CODES, None)
    out["lgb-linear-tree"] = (lgb.LGBMRegressor(linear_tree=True, **kw).fit(X_NAN, Y_REG), X_NAN, None)
    out["lgb-constant-target"] = (lgb.LGBMRegressor(**kw).fit(X_NUM, np.ones(400)), X_NUM, None)
    return out


def _iforest_path_length(model, X):
    return -np.log2(-model.score_samples(X)) * _average_path_length([model._max_samples])[0]


def case_sklearn():
    out = {}
    out["sk-tree-nan"] = (skt.DecisionTreeRegressor(max_depth=6, random_state=0).fit(X_NAN, Y_REG), X_NAN, None)
    out["sk-tree-classifier"] = (skt.DecisionTreeClassifier(max_depth=5, random_state=0).fit(X_NUM, Y_MULTI), X_NUM,
                                 None)
    out["sk-extra-tree"] = (skt.ExtraTreeRegressor(max_depth=6, random_state=0).fit(X_NUM, Y_REG), X_NUM, None)
    out["sk-forest"] = (ske.RandomForestRegressor(n_estimators=20, max_depth=5, random_state=0).fit(X_NUM, Y_REG),
                        X_NUM, None)
    out["sk-forest-classifier"] = (ske.RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0)
                                   .fit(X_NUM, Y_MULTI), X_NUM, None)
    out["sk-forest-multi-output"] = (ske.RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0)
                                     .fit(X_NUM, np.c_[Y_REG, X_NUM[:, 5]]), X_NUM, None)
    out["sk-extra-trees"] = (ske.ExtraTreesRegressor(n_estimators=20, max_depth=5, random_state=0).fit(X_NUM, Y_REG),
                             X_NUM, None)
    out["sk-gb-regressor"] = (ske.GradientBoostingRegressor(n_estimators=20, max_depth=3).fit(X_NUM, Y_REG), X_NUM,
                              None)
    out["sk-gb-binary"] = (ske.GradientBoostingClassifier(n_estimators=20, max_depth=3).fit(X_NUM, Y_BIN), X_NUM,
                           None)
    out["sk-gb-multiclass"] = (ske.GradientBoostingClassifier(n_estimators=8, max_depth=3).fit(X_NUM, Y_MULTI), X_NUM,
                               None)
    out["sk-gb-zero-init"] = (ske.GradientBoostingRegressor(n_estimators=20, max_depth=3, init="zero")
                              .fit(X_NUM, Y_REG), X_NUM, None)
    out["sk-hist-regressor-nan"] = (ske.HistGradientBoostingRegressor(max_iter=20, max_depth=4).fit(X_NAN, Y_REG),
                                    X_NAN, None)
    out["sk-hist-binary"] = (ske.HistGradientBoostingClassifier(max_iter=20, max_depth=4).fit(X_NAN, Y_BIN), X_NAN,
                             None)
    out["sk-hist-multiclass"] = (ske.HistGradientBoostingClassifier(max_iter=8, max_depth=3).fit(X_NUM, Y_MULTI),
                                 X_NUM, None)
    out["sk-hist-categorical-pandas"] = (ske.HistGradientBoostingRegressor(max_iter=20, max_depth=4,
                                                                           categorical_features="from_dtype")
                                         .fit(FRAME, Y_CAT), FRAME, None)
    shifted = CODES.copy()
    shifted[:, 5] = shifted[:, 5] * 10 + 3                   # categories 3, 13, 23, 33, 43: coded by the model
    out["sk-hist-categorical-values"] = (ske.HistGradientBoostingRegressor(max_iter=20, max_depth=4,
                                                                           categorical_features=[5])
                                         .fit(shifted, Y_CAT), shifted, None)
    out["sk-isolation-forest"] = (ske.IsolationForest(n_estimators=20, max_samples=64, max_features=0.8,
                                                      random_state=0).fit(X_NUM), X_NUM, _iforest_path_length)
    out["sk-bagging-regressor"] = (ske.BaggingRegressor(skt.DecisionTreeRegressor(max_depth=4), n_estimators=20,
                                                        max_features=0.7, random_state=0).fit(X_NUM, Y_REG), X_NUM,
                                   None)
    out["sk-bagging-classifier"] = (ske.BaggingClassifier(skt.DecisionTreeClassifier(max_depth=4), n_estimators=20,
                                                          max_samples=0.3, random_state=0).fit(X_NUM, Y_MULTI), X_NUM,
                                    None)
    return out


# catboost takes categories as strings or integers: colour as strings (missing ones named), e as integer codes
CB_FRAME = FRAME.copy()
CB_FRAME["colour"] = FRAME["colour"].astype(object).fillna("none").astype(str)
CB_FRAME["e"] = np.random.default_rng(7).integers(0, 7, size=400)
Y_CB = Y_CAT + 0.8 * (CB_FRAME["e"].to_numpy() % 3 == 0)
CB_CATEGORIES = ["colour", "e"]


def case_catboost():
    cb = pytest.importorskip("catboost")
    kw = dict(iterations=20, depth=4, verbose=0, random_seed=0, thread_count=1, allow_writing_files=False)
    cat = dict(cat_features=CB_CATEGORIES)
    return {
        # one-hot splits (hash of the category = the split's value) and CTR splits (a target statistic of one
        # feature's category against a border), binary, regression and multi-class
        "cb-categorical-one-hot": (cb.CatBoostRegressor(one_hot_max_size=255, **kw).fit(CB_FRAME, Y_CB, **cat),
                                   CB_FRAME, None),
        "cb-categorical-ctr": (cb.CatBoostRegressor(max_ctr_complexity=1, **kw).fit(CB_FRAME, Y_CB, **cat),
                               CB_FRAME, None),
        "cb-categorical-ctr-binary": (cb.CatBoostClassifier(max_ctr_complexity=1, **kw)
                                      .fit(CB_FRAME, Y_CB > np.median(Y_CB), **cat), CB_FRAME, None),
        "cb-categorical-ctr-multiclass": (cb.CatBoostClassifier(max_ctr_complexity=1, loss_function="MultiClass",
                                                                **{**kw, "iterations": 8})
                                          .fit(CB_FRAME, np.digitize(Y_CB, np.quantile(Y_CB, [0.33, 0.66])), **cat),
                                          CB_FRAME, None),
        "cb-regressor-nan": (cb.CatBoostRegressor(**kw).fit(X_NAN, Y_REG), X_NAN, None),
        "cb-nan-max": (cb.CatBoostRegressor(nan_mode="Max", **kw).fit(X_NAN, Y_REG), X_NAN, None),
        "cb-binary": (cb.CatBoostClassifier(**kw).fit(X_NUM, Y_BIN), X_NUM, None),
        "cb-multiclass": (cb.CatBoostClassifier(loss_function="MultiClass", **{**kw, "iterations": 8})
                          .fit(X_NUM, Y_MULTI), X_NUM, None),
    }


raw_output = model_raw_output


CASES = {**case_xgboost(), **case_lightgbm(), **case_sklearn()}
try:
    CASES.update(case_catboost())
except pytest.skip.Exception:        # catboost is an optional extra
    pass
FLOAT32 = ("xgb", "cb", "sk-tree", "sk-extra", "sk-forest", "sk-gb", "sk-iso", "sk-bag")


def _tol(name):
    return 2e-5 if name.startswith("xgb") or name.startswith("cb") else 1e-9


def _take(X, rows):
    return X.iloc[rows].reset_index(drop=True) if hasattr(X, "iloc") else X[rows]


def _hybrid(X, x_row, b_row, S):
    """Rows equal to row ``x_row`` of ``X`` on the players in ``S`` and to ``b_row`` elsewhere (model format)."""
    m = S.shape[0]
    xs, bs = _take(X, np.full(m, x_row)), _take(X, np.full(m, b_row))
    if hasattr(X, "iloc"):
        out = bs.copy()
        for j, col in enumerate(out.columns):
            out[col] = bs[col].where(~S[:, j], xs[col])
        return out
    return np.where(S, xs, bs)


@pytest.mark.parametrize("name", list(CASES))
def test_reader_reproduces_the_models_raw_output(name):
    model, X, custom = CASES[name]
    ens = read_ensemble(model)
    rows = tree_rows(X, ens)
    np.testing.assert_allclose(ens.predict(rows), raw_output(model, X, custom), atol=_tol(name), rtol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_interventional_values_equal_enumeration_with_the_models_own_predictions(name):
    model, X, custom = CASES[name]
    x_row, b_rows = 7, [11, 23]
    S_all = all_coalitions(N_FEATURES)
    # the game evaluated by the model itself: mean raw output over imputed rows
    values = np.mean([raw_output(model, _hybrid(X, x_row, b, S_all), custom) for b in b_rows], axis=0)
    brute = fs.games.FunctionGame(lambda S: values[S @ (1 << np.arange(N_FEATURES))], n_players=N_FEATURES)
    game = fs.games.TreeGame(model, _take(X, [x_row]), mode="interventional", background=_take(X, b_rows))
    for index in ("shapley", "banzhaf"):
        ours = np.asarray(fs.exact(game, index).values).reshape(N_FEATURES, -1)
        truth = np.asarray(fs.exact(brute, index).values).reshape(N_FEATURES, -1)
        np.testing.assert_allclose(ours, truth, atol=10 * _tol(name), rtol=1e-6, err_msg=index)
    full = raw_output(model, _take(X, [x_row]), custom)[0]
    empty = np.mean([raw_output(model, _take(X, [b]), custom)[0] for b in b_rows], axis=0)
    shap_sum = np.asarray(fs.exact(game, "shapley").values).reshape(N_FEATURES, -1).sum(axis=0)
    np.testing.assert_allclose(shap_sum, full - empty, atol=10 * _tol(name), rtol=1e-6)


PATH_DEPENDENT = [n for n in CASES if n != "lgb-linear-tree"]


@pytest.mark.parametrize("name", PATH_DEPENDENT)
def test_path_dependent_values_equal_enumeration_and_add_up(name):
    model, X, custom = CASES[name]
    game = fs.games.TreeGame(model, _take(X, [5]))
    for index in ("shapley", "banzhaf"):
        closed = fs.exact(game, index)
        np.testing.assert_allclose(closed.values, fs.exact(game, index, via="enumeration").values, atol=1e-9)
    phi = np.asarray(fs.exact(game, "shapley").values).reshape(N_FEATURES, -1)
    full = raw_output(model, _take(X, [5]), custom)[0]
    empty = np.atleast_1d(game(np.zeros((1, N_FEATURES), bool))[0])
    np.testing.assert_allclose(phi.sum(axis=0), full - empty, atol=10 * _tol(name), rtol=1e-6)


@pytest.mark.parametrize("name", ["xgb-categorical-pandas", "lgb-categorical-pandas", "sk-hist-categorical-pandas"])
def test_unseen_and_missing_categories(name):
    model, X, custom = CASES[name]
    frame = X.iloc[:6].copy()
    frame["colour"] = pd.Categorical(["red", None, "blue", "amber", "green", "violet"], categories=CATS)
    ens = read_ensemble(model)
    np.testing.assert_allclose(ens.predict(tree_rows(frame, ens)), raw_output(model, frame, custom),
                               atol=_tol(name), rtol=1e-6)
    # categories in another order, and one the model never saw, in a frame of their own
    odd = frame.copy()
    odd["colour"] = pd.Categorical(["blue", "ochre", "red", "amber", None, "green"],
                                   categories=["ochre", "green", "amber", "blue", "red", "violet"])
    reference = frame.copy()
    reference["colour"] = pd.Categorical(["blue", None, "red", "amber", None, "green"], categories=CATS)
    np.testing.assert_allclose(ens.predict(tree_rows(odd, ens)), ens.predict(tree_rows(reference, ens)))
    values = fs.games.tree_values(model, odd, "shapley", mode="interventional", background=X.iloc[:20]).values
    gap = raw_output(model, reference, custom) - raw_output(model, X.iloc[:20], custom).mean(axis=0)
    np.testing.assert_allclose(values.reshape(6, N_FEATURES, -1).sum(axis=1), gap, atol=1e-4)


def test_linear_trees_path_dependent_is_refused_with_the_reason():
    model, X, _ = CASES["lgb-linear-tree"]
    with pytest.raises(ValueError, match="path-dependent values of lightgbm linear trees are not defined"):
        fs.games.TreeGame(model, X[0])
    with pytest.raises(ValueError, match="mode='interventional'"):
        fs.explain(model, X[:3], progress=False)


def test_refused_configurations_say_why():
    with pytest.raises(ValueError, match="non-constant init estimator"):
        model = ske.GradientBoostingRegressor(n_estimators=5, init=LinearRegression()).fit(X_NUM, Y_REG)
        fs.games.TreeGame(model, X_NUM[0])
    linear = xgb.XGBRegressor(booster="gblinear", n_estimators=5).fit(X_NUM, Y_REG)
    with pytest.raises(ValueError, match="only tree boosters"):
        fs.games.TreeGame(linear, X_NUM[0])
    with pytest.raises(ValueError, match="background .* required to explain a non-tree model"):
        fs.explain(linear, X_NUM[:2], progress=False)
    with pytest.raises(ValueError, match="not fitted"):
        fs.games.TreeGame(xgb.XGBRegressor(), X_NUM[0])
    with pytest.raises(ValueError, match="not fitted"):
        fs.games.TreeGame(ske.RandomForestRegressor(), X_NUM[0])


def test_a_boosting_model_whose_init_draws_at_random_is_refused_before_any_model_call(monkeypatch):
    """GradientBoostingClassifier(init=DummyClassifier(strategy="stratified")) gives each row a random margin
    (decision_function of the same 4 rows differed by 72.1 between two calls); it was explained as if constant.
    Deterministic dummy inits (prior, uniform, most_frequent) are still read and add up to the model's margin."""
    from sklearn.dummy import DummyClassifier

    model = ske.GradientBoostingClassifier(n_estimators=5, random_state=0,
                                           init=DummyClassifier(strategy="stratified")).fit(X_NUM, Y_BIN)
    calls = []
    monkeypatch.setattr(DummyClassifier, "predict_proba", lambda self, *a, **k: calls.append(1))
    monkeypatch.setattr(ske.GradientBoostingClassifier, "decision_function", lambda self, *a, **k: calls.append(1))
    for door in (lambda: fs.games.tree_values(model, X_NUM[:3]), lambda: fs.explain(model, X_NUM[:3], progress=False),
                 lambda: fs.games.TreeGame(model, X_NUM[0], mode="interventional", background=X_NUM[:5])):
        with pytest.raises(ValueError, match=r"init estimator is DummyClassifier\(strategy='stratified'\), which "
                                             "draws its probabilities at random"):
            door()
    assert not calls
    monkeypatch.undo()
    for strategy in ("prior", "uniform", "most_frequent"):
        model = ske.GradientBoostingClassifier(n_estimators=5, random_state=0,
                                               init=DummyClassifier(strategy=strategy)).fit(X_NUM, Y_BIN)
        phi = fs.games.tree_values(model, X_NUM[:3])
        np.testing.assert_allclose(phi.values.sum(axis=1) + phi.empty_value, model.decision_function(X_NUM[:3]),
                                   rtol=1e-9)


@pytest.mark.parametrize("make", [lambda: lgb.LGBMRegressor(), lambda: lgb.LGBMClassifier(),
                                  lambda: pytest.importorskip("catboost").CatBoostRegressor()],
                         ids=["lgb-regressor", "lgb-classifier", "catboost"])
def test_unfitted_lightgbm_and_catboost_models_are_said_to_be_unfitted(make):
    """They were "could not read the LGBMRegressor as a tree ensemble: AttributeError: ... 'model_to_string'" and
    "... CatBoostError: There is no trained model to use save_model()"."""
    model = make()
    for door in (lambda: fs.games.tree_values(model, X_NUM[:2]), lambda: fs.explain(model, X_NUM[:2], progress=False),
                 lambda: fs.games.TreeGame(model, X_NUM[0], mode="interventional", background=X_NUM[:3])):
        with pytest.raises(ValueError, match=f"^the {type(model).__name__} is not fitted; fit it before explaining it"):
            door()


def test_a_conditional_imputation_of_a_tree_model_without_a_background_says_so():
    """It is played through the model's predictions and needs a background; the refusal said the model was "a
    non-tree model", of a random forest. (Groups without a background are the path-dependent walk over the groups:
    tests/test_trees.py.)"""
    model = ske.RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X_NUM, Y_REG)
    with pytest.raises(ValueError, match="required for imputation='gaussian' on a tree model"):
        fs.explain(model, X_NUM[:2], imputation="gaussian", progress=False)
    grouped = fs.explain(model, X_NUM[:2], X_NUM[10:14], groups=[[0, 1], [2, 3, 4, 5]], progress=False)
    gap = model.predict(X_NUM[:2]) - model.predict(X_NUM[10:14]).mean()
    np.testing.assert_allclose(grouped.values.sum(axis=1), gap, atol=1e-9)


class _CountingTree(skt.DecisionTreeClassifier):
    calls = 0

    def predict_proba(self, X, check_input=True):
        type(self).calls += 1
        return super().predict_proba(X, check_input)


@pytest.mark.parametrize("make", [lambda: _CountingTree(max_depth=5, random_state=0),
                                  lambda: ske.RandomForestClassifier(n_estimators=3, max_depth=4, random_state=0),
                                  lambda: ske.ExtraTreesClassifier(n_estimators=3, max_depth=4, random_state=0)],
                         ids=["tree", "forest", "extra-trees"])
def test_a_classifier_of_several_targets_is_refused_before_any_model_call(make):
    """Such a tree holds (targets, classes) per node: it was read as the first target's classes alone (values of
    shape (3, 6, 3) for a model predicting 3 + 2 probabilities, the second target's lost) and a forest failed
    inside numpy ("inhomogeneous shape")."""
    model = make().fit(X_NUM, np.c_[Y_MULTI, Y_BIN])
    _CountingTree.calls = 0
    for door in (lambda: fs.games.tree_values(model, X_NUM[:3]), lambda: fs.games.tree_interactions(model, X_NUM[:3]),
                 lambda: fs.explain(model, X_NUM[:3], progress=False)):
        with pytest.raises(ValueError, match="fitted on 2 targets"):
            door()
    assert _CountingTree.calls == 0
    single = make().fit(X_NUM, Y_MULTI)                  # one target of 3 classes: still read, 3 outputs
    phi = fs.games.tree_values(single, X_NUM[:3])
    np.testing.assert_allclose(phi.values.sum(axis=1) + phi.empty_value, single.predict_proba(X_NUM[:3]), atol=1e-12)


CB_NAMES = [n for n in CASES if n.startswith("cb-")]


@pytest.mark.parametrize("name", CB_NAMES)
def test_catboost_path_dependent_values_equal_catboosts_own(name):
    """catboost's ShapValues (its path-dependent TreeSHAP) are the reference, numerical and categorical splits."""
    cb = pytest.importorskip("catboost")
    model, X, _ = CASES[name]
    rows = _take(X, np.arange(25))
    cats = [c for c in CB_CATEGORIES if hasattr(X, "columns")]
    theirs = np.asarray(model.get_feature_importance(cb.Pool(rows, cat_features=cats or None), type="ShapValues"))
    theirs = theirs[:, :-1] if theirs.ndim == 2 else np.transpose(theirs[:, :, :-1], (0, 2, 1))   # drop the base
    ours = fs.games.tree_values(model, rows, "shapley").values.reshape(theirs.shape)
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)


def test_catboost_categories_it_never_saw_and_bad_categories():
    model, X, custom = CASES["cb-categorical-ctr"]
    ens = read_ensemble(model)
    odd = X.iloc[:5].copy()
    odd["colour"] = ["ochre", "red", "", "blue  ", "violet"]          # unseen, seen, empty, spaces
    odd["e"] = [99, 3, -1, 0, 6]
    np.testing.assert_allclose(ens.predict(tree_rows(odd, ens)), raw_output(model, odd, custom), atol=2e-5)
    with pytest.raises(ValueError, match="column 'colour' has a missing value"):
        tree_rows(odd.assign(colour=[None, "red", "red", "red", "red"]), ens)
    with pytest.raises(ValueError, match="column 'e'.*strings or integers, got 0.5"):
        tree_rows(odd.assign(e=[0.5, 1.0, 2.0, 3.0, 4.0]), ens)
    as_objects = X.iloc[:5].to_numpy(dtype=object)                      # a plain array of mixed values
    np.testing.assert_allclose(ens.predict(tree_rows(as_objects, ens)), raw_output(model, X.iloc[:5], custom))


def test_catboost_feature_combinations_are_explained_through_the_model_with_a_background():
    """CTRs of feature combinations read several features at one split: no tree game on single features, so
    TreeGame refuses them with the ways out, and explain with a background plays the same interventional game
    through the model's own predictions: equal to enumerating the model's raw output on every hybrid row."""
    cb = pytest.importorskip("catboost")
    model = cb.CatBoostRegressor(iterations=30, depth=4, max_ctr_complexity=2, verbose=0, random_seed=0, thread_count=1,
                                 allow_writing_files=False).fit(CB_FRAME, Y_CB, cat_features=CB_CATEGORIES)
    with pytest.raises(ValueError, match="CTR statistics of feature combinations.*max_ctr_complexity=1"):
        fs.games.TreeGame(model, CB_FRAME.iloc[[0]])
    x_row, b_rows = 7, [11, 23, 40]
    e = fs.explain(model, CB_FRAME.iloc[[x_row]], CB_FRAME.iloc[b_rows], progress=False)
    assert e.method == "exact" and "through the model's own predictions" in e.info["model_output"]
    S_all = all_coalitions(N_FEATURES)
    values = np.mean([raw_output(model, _hybrid(CB_FRAME, x_row, b, S_all)) for b in b_rows], axis=0)[:, 0]
    brute = fs.games.FunctionGame(lambda S: values[S @ (1 << np.arange(N_FEATURES))], n_players=N_FEATURES)
    np.testing.assert_allclose(e.values[0], fs.exact(brute, "shapley").values, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(max_ctr_complexity=2), dict(max_ctr_complexity=3, one_hot_max_size=2),
                                dict(loss_function="MultiClass", max_ctr_complexity=4)])
def test_catboost_combination_classes_equal_catboosts_own_path_dependent_values(kw):
    """Without a background: each combination class (the CTR projection's categorical features) is a player of the
    walk, its value shared equally among its features, as catboost's ShapValues; classes of two features occur."""
    cb = pytest.importorskip("catboost")
    from fairshare.trees.readers.catboost import read_catboost

    draw = np.random.default_rng(0)
    n = 1500
    X = pd.DataFrame({"a": draw.choice(list("pqrstu"), n), "b": draw.choice(list("xyzwv"), n), "c": draw.random(n),
                      "d": draw.choice(list("klm"), n)})
    y = 2.0 * (X.a + X.b).isin(["px", "qy", "rz", "sw", "tv"]) + X.c + (X.d == "k")
    multi = kw.get("loss_function") == "MultiClass"
    target = np.digitize(y, np.quantile(y, [0.33, 0.66])) if multi else y
    Model = cb.CatBoostClassifier if multi else cb.CatBoostRegressor
    model = Model(iterations=40, depth=4, verbose=0, random_seed=0, thread_count=1, allow_writing_files=False,
                  **kw).fit(X, target, cat_features=["a", "b", "d"])
    _, members = read_catboost(model, classes=True)
    assert any(len(m) == 2 for m in members)
    reads = [0]
    save = model.save_model

    def counted(*args, **kwargs):                     # every reading of the model dumps it once
        reads[0] += 1
        return save(*args, **kwargs)

    model.save_model = counted
    rows = X.iloc[:30]
    theirs = np.asarray(model.get_feature_importance(cb.Pool(rows, cat_features=["a", "b", "d"]), type="ShapValues"))
    theirs = theirs[:, :-1] if theirs.ndim == 2 else np.transpose(theirs[:, :, :-1], (0, 2, 1))
    np.testing.assert_allclose(fs.games.tree_values(model, rows).values, theirs, atol=1e-10)
    e = fs.explain(model, rows[["d", "c", "b", "a"]], progress=False)             # columns follow their names
    np.testing.assert_allclose(e.values, theirs, atol=1e-10)
    assert e.method == "exact" and "combination class" in e.info["choice"]["why"]
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, e.grand_value, atol=1e-9)
    with pytest.raises(ValueError, match="method: this catboost model's CTRs combine features"):
        fs.explain(model, rows, method="permutation", progress=False)
    assert reads[0] == 2                              # read once as trees (refused, remembered), once by classes


def test_catboost_category_hash_equals_catboosts_own():
    """CityHash64 v1.0.2's low 32 bits, against the hashes catboost writes for a pool's categories: strings of every
    length class of the hash (0-16, 17-32, 33-64, over 64 bytes, several 64-byte blocks), unicode, integers."""
    cb = pytest.importorskip("catboost")
    import json
    import os
    import tempfile

    from fairshare.trees.readers.catboost.hashing import category_hash

    model, _, _ = CASES["cb-categorical-ctr"]
    draw = np.random.default_rng(4)
    alphabet = list("abcXYZ019 -\t") + ["é", "漢", "🙂", "\u00a0"]
    values = ["".join(draw.choice(alphabet, size=n)) for n in list(range(0, 70)) + [100, 128, 129, 200, 513]]
    values += ["none", "None", "nan", "3", "-7", "12345678901"]
    pool_frame = CB_FRAME.iloc[np.zeros(len(values), dtype=int)].reset_index(drop=True).assign(colour=values)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json", pool=cb.Pool(pool_frame, cat_features=CB_CATEGORIES))
        with open(path, encoding="utf-8") as fh:
            theirs = {d["value"]: int(d["hash"]) for d in json.load(fh)["features_info"]["cat_features_hash"]}
    assert all(category_hash(v) == theirs[v] for v in values)
    assert category_hash(-7) == theirs["-7"] and category_hash(12345678901) == theirs["12345678901"]


def test_catboost_fitted_on_integer_column_names_matches_columns_by_name_as_catboost_does():
    """catboost names a frame's integer columns "0", "1", ... as it numbers unnamed (numpy) columns, but matches the
    former by name: the same frame with its columns reversed was read by position (grand value and values off by
    1.0 and 1.1 here, player names '5' ... '0')."""
    cb = pytest.importorskip("catboost")
    kw = dict(iterations=10, depth=4, verbose=0, random_seed=0, thread_count=1, allow_writing_files=False)
    named = cb.CatBoostRegressor(**kw).fit(pd.DataFrame(X_NUM, columns=range(N_FEATURES)), Y_REG)
    reversed_rows = pd.DataFrame(X_NUM[:5, ::-1], columns=range(N_FEATURES)[::-1])
    np.testing.assert_allclose(named.predict(reversed_rows), named.predict(X_NUM[:5]), atol=1e-12)   # catboost's rule
    theirs = named.get_feature_importance(cb.Pool(X_NUM[:5]), type="ShapValues")[:, :-1]
    e = fs.games.tree_values(named, reversed_rows)
    assert e.player_names == [str(i) for i in range(N_FEATURES)]
    np.testing.assert_allclose(e.values, theirs, atol=1e-12)
    np.testing.assert_allclose(e.grand_value, named.predict(X_NUM[:5]), atol=1e-12)
    bg = pd.DataFrame(X_NUM[50:60, ::-1], columns=range(N_FEATURES)[::-1])
    phi = fs.explain(named, reversed_rows, bg, progress=False)
    np.testing.assert_allclose(phi.values.sum(axis=1), named.predict(X_NUM[:5]) - named.predict(X_NUM[50:60]).mean(),
                               atol=1e-9)
    unnamed = cb.CatBoostRegressor(**kw).fit(X_NUM, Y_REG)     # fitted on numpy: a frame is read by position
    frame = pd.DataFrame(X_NUM[:5], columns=list("uvwxyz"))
    np.testing.assert_allclose(fs.games.tree_values(unnamed, frame).grand_value, unnamed.predict(X_NUM[:5]),
                               atol=1e-12)


def test_catboost_numbered_feature_names_are_read_from_the_models_json_once_per_fit(monkeypatch):
    """Telling numbered names (unnamed columns) from a frame's integer names costs a JSON dump of the model (0.24 s
    for 1000 trees of depth 6): done once per fitted model, not at every door call."""
    cb = pytest.importorskip("catboost")
    from fairshare.trees.readers.catboost import trees

    dumps = []
    dump = trees._model_json
    monkeypatch.setattr(trees, "_model_json", lambda model: dumps.append(1) or dump(model))
    kw = dict(iterations=3, depth=2, verbose=0, thread_count=1, allow_writing_files=False)
    model = cb.CatBoostRegressor(**kw).fit(X_NUM, Y_REG)
    assert [trees.fitted_names(model) for _ in range(3)] == [None] * 3 and len(dumps) == 1
    model.fit(pd.DataFrame(X_NUM, columns=range(N_FEATURES)), Y_REG)            # refitted, with names now
    assert trees.fitted_names(model) == [str(i) for i in range(N_FEATURES)] and len(dumps) == 2
    assert trees.fitted_names(model) == [str(i) for i in range(N_FEATURES)] and len(dumps) == 2


# ------------------------------------------------------------------------------------ inputs
def test_sparse_rows_and_dmatrix_read_as_the_model_reads_them():
    import scipy.sparse as sp

    dense = np.where(np.abs(X_NUM) < 0.5, 0.0, X_NUM)
    xgb_model = xgb.XGBRegressor(n_estimators=20, max_depth=4).fit(sp.csr_matrix(dense), Y_REG)
    csr = sp.csr_matrix(dense[:30])
    # xgboost: entries absent from a sparse matrix are missing
    ours = fs.games.tree_values(xgb_model, csr, "shapley").values
    np.testing.assert_allclose(ours.sum(axis=1) + fs.games.TreeGame(xgb_model, csr[0])(
        np.zeros((1, N_FEATURES), bool))[0], xgb_model.predict(csr, output_margin=True), atol=2e-5)
    dm = xgb.DMatrix(dense[:30], missing=0.0)
    np.testing.assert_allclose(fs.games.tree_values(xgb_model, dm, "shapley").values, ours, atol=1e-12)
    # scikit-learn: absent entries are zeros
    forest = ske.RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(dense, Y_REG)
    np.testing.assert_allclose(fs.games.tree_values(forest, csr, "banzhaf", mode="interventional",
                                                    background=sp.csr_matrix(dense[40:50])).values,
                               fs.games.tree_values(forest, dense[:30], "banzhaf", mode="interventional",
                                                    background=dense[40:50]).values, atol=1e-12)


def test_a_dmatrix_with_a_base_margin_is_refused_before_any_model_call(monkeypatch):
    """xgboost predicts base_margin + trees (no base score) on such a DMatrix; tree_values read its rows alone and
    gave grand values of the trees alone (-2.79, -4.69, -4.74 where the model predicts 1.79, -0.11, -0.15 here)."""
    train = xgb.DMatrix(X_NUM, label=Y_REG, base_margin=np.full(len(X_NUM), 5.0))
    booster = xgb.train({"max_depth": 3}, train, 10)
    with_offset = xgb.DMatrix(X_NUM[:3], base_margin=np.full(3, 5.0))
    plain = xgb.DMatrix(X_NUM[:3])
    calls = []
    monkeypatch.setattr(xgb.Booster, "predict", lambda self, *a, **k: calls.append(1))
    with pytest.raises(ValueError, match="X is a DMatrix with a base_margin"):
        fs.games.tree_values(booster, with_offset)
    with pytest.raises(ValueError, match="background is a DMatrix with a base_margin"):
        fs.games.tree_values(booster, plain, mode="interventional", background=with_offset)
    with pytest.raises(ValueError, match="X is a DMatrix with a base_margin"):
        fs.games.tree_interactions(booster, with_offset)
    assert not calls
    monkeypatch.undo()
    e = fs.games.tree_values(booster, plain)                     # without the offset: the trees' own margin
    np.testing.assert_allclose(e.grand_value, booster.predict(plain, output_margin=True), atol=1e-5)


def test_a_catboost_pool_is_read_by_its_names_and_containers_without_rows_are_refused_first(monkeypatch):
    """A catboost Pool (X or background) was refused with "X must be a row or a 2-D array of rows, got shape ()"
    (fs.explain: "got a single Pool"), a lightgbm Dataset likewise. A Pool of numbers is read (by its feature
    names, as catboost matches them); one that keeps categories only as hashes, or carries a baseline, and a lightgbm
    Dataset (whose rows lightgbm itself does not predict) are refused naming the type and what to pass."""
    cb = pytest.importorskip("catboost")
    names = [f"f{i}" for i in range(N_FEATURES)]
    frame = pd.DataFrame(X_NUM, columns=names)
    model = cb.CatBoostRegressor(iterations=20, depth=3, verbose=0, allow_writing_files=False).fit(frame, Y_REG)
    pool = cb.Pool(frame.iloc[:4, ::-1])                                  # columns reversed: matched by name
    want = fs.games.tree_values(model, frame.iloc[:4])
    got = fs.games.tree_values(model, pool)
    np.testing.assert_allclose(got.values, want.values, atol=1e-12)
    np.testing.assert_allclose(got.values.sum(axis=1) + got.empty_value, model.predict(pool), atol=1e-9)
    e = fs.explain(model, pool, cb.Pool(X_NUM[50:60]), progress=False)
    np.testing.assert_allclose(e.values, fs.explain(model, frame.iloc[:4], frame.iloc[50:60], progress=False).values,
                               atol=1e-12)
    cats = frame.assign(c=np.where(X_NUM[:, 0] > 0, "p", "q"))
    with_cats = cb.CatBoostRegressor(iterations=5, depth=3, verbose=0, allow_writing_files=False).fit(
        cats, Y_REG, cat_features=["c"])
    booster = lgb.LGBMRegressor(n_estimators=5, verbose=-1).fit(X_NUM, Y_REG)
    calls = []
    monkeypatch.setattr(cb.CatBoostRegressor, "predict", lambda self, *a, **k: calls.append(1))
    monkeypatch.setattr(lgb.Booster, "predict", lambda self, *a, **k: calls.append(1))
    for door in (lambda m, rows: fs.games.tree_values(m, rows), lambda m, rows: fs.explain(m, rows, progress=False)):
        with pytest.raises(ValueError, match="X is a catboost Pool with categorical features .* pass the rows the "
                                             "Pool was made from"):
            door(with_cats, cb.Pool(cats.iloc[:3], cat_features=["c"]))
        with pytest.raises(ValueError, match="X is a catboost Pool with a baseline"):
            door(model, cb.Pool(frame.iloc[:3], baseline=np.ones(3)))
        with pytest.raises(ValueError, match="X is a lightgbm Dataset, .* pass the rows it was made from"):
            door(booster, lgb.Dataset(X_NUM[:3]))
        with pytest.raises(ValueError, match=r"X is a Pool of numbers, but the model reads \['c'\] as categories|"
                                             r"X column 'c': catboost's categorical features take strings"):
            door(with_cats, cb.Pool(cats.iloc[:3].assign(c=1.0)))        # catboost refuses it too
    assert not calls


def test_a_dmatrix_named_in_another_order_is_read_by_its_names():
    """A DMatrix made from a frame with the columns reversed names them; xgboost matches them by name (it refuses
    a mismatch), tree_values read them by position and explained other rows (grand value 1.03 where the model
    predicts 0.09 for the first row here)."""
    names = [f"f{i}" for i in range(N_FEATURES)]
    frame = pd.DataFrame(X_NUM, columns=names)
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3).fit(frame, Y_REG)
    reversed_ = xgb.DMatrix(frame.iloc[:4, ::-1])
    want = fs.games.tree_values(model, frame.iloc[:4])
    got = fs.games.tree_values(model, reversed_)
    np.testing.assert_allclose(got.values, want.values, atol=1e-12)
    np.testing.assert_allclose(got.grand_value, model.predict(frame.iloc[:4], output_margin=True), atol=1e-5)
    back = fs.games.tree_values(model, frame.iloc[:4], mode="interventional",
                                background=xgb.DMatrix(frame.iloc[9:20, ::-1]))
    np.testing.assert_allclose(back.values, fs.games.tree_values(model, frame.iloc[:4], mode="interventional",
                                                                 background=frame.iloc[9:20]).values, atol=1e-12)
    e = fs.explain(model, reversed_, progress=False)
    np.testing.assert_allclose(e.values, want.values, atol=1e-12)
    with pytest.raises(ValueError, match="X columns do not match the model's features"):
        fs.games.tree_values(model, xgb.DMatrix(X_NUM[:2], feature_names=[f"g{i}" for i in range(N_FEATURES)]))


def test_pandas_nullable_dtypes_and_reordered_columns():
    frame = pd.DataFrame(X_NAN, columns=[f"f{i}" for i in range(N_FEATURES)])
    model = xgb.XGBRegressor(n_estimators=20, max_depth=4).fit(frame, Y_REG)
    nullable = frame.astype("Float64")
    nullable["f2"] = (frame["f2"] * 3).round().astype("Int64")          # integers with pd.NA
    plain = nullable.astype(float)
    np.testing.assert_allclose(fs.games.tree_values(model, nullable.iloc[:10]).values,
                               fs.games.tree_values(model, plain.iloc[:10]).values, atol=1e-12)
    shuffled = frame.iloc[:10][["f3", "f0", "f5", "f1", "f4", "f2"]]
    np.testing.assert_allclose(fs.games.tree_values(model, shuffled).values,
                               fs.games.tree_values(model, frame.iloc[:10]).values)
    with pytest.raises(ValueError, match=r"missing \['f5'\], unexpected \['g'\]"):
        fs.games.tree_values(model, frame.iloc[:3].rename(columns={"f5": "g"}))
    with pytest.raises(ValueError, match="column 'f1' holds"):
        fs.games.tree_values(model, frame.iloc[:3].assign(f1="x"))


def test_lightgbm_names_label_the_values_of_a_booster_and_numbered_columns_read_by_position():
    """A lightgbm Booster fitted on a frame, given its columns reversed, was read by name but labelled in X's order
    (f2's value 0.66 on the first row shown as f3's, f3's 0.42 as f2's; the command line's CSV too); an
    LGBMRegressor fitted on numpy (lightgbm names its columns Column_0, ...) had fs.explain refuse a frame ("X
    columns do not match") that tree_values read."""
    import os
    import tempfile

    from fairshare.cli import main

    frame = pd.DataFrame(X_NUM, columns=[f"f{i}" for i in range(N_FEATURES)])
    booster = lgb.train({"verbose": -1, "num_leaves": 8}, lgb.Dataset(frame, Y_REG), 20)
    reversed_rows = frame.iloc[:3, ::-1]
    want = fs.games.tree_values(booster, frame.iloc[:3]).values
    for e in (fs.games.tree_values(booster, reversed_rows), fs.explain(booster, reversed_rows, progress=False)):
        assert e.player_names == list(frame.columns)
        np.testing.assert_allclose(e.values, want, atol=1e-12)
    with tempfile.TemporaryDirectory() as folder:                # the command line reads the saved Booster so too
        path = os.path.join(folder, "{}").format
        booster.save_model(path("model.txt"))
        reversed_rows.to_csv(path("rows.csv"), index=False)
        assert main(["explain", "--model", path("model.txt"), "--data", path("rows.csv"), "--out", path("out.csv"),
                     "--quiet"]) == 0
        written = pd.read_csv(path("out.csv"))
    np.testing.assert_allclose(written[list(frame.columns)].to_numpy(), want, atol=1e-9)
    unnamed = lgb.LGBMRegressor(n_estimators=20, num_leaves=8, verbose=-1).fit(X_NUM, Y_REG)
    other = pd.DataFrame(X_NUM[:3], columns=list("uvwxyz"))
    e = fs.explain(unnamed, other, progress=False)
    assert e.player_names == list("uvwxyz")
    np.testing.assert_allclose(e.values, fs.games.tree_values(unnamed, X_NUM[:3]).values, atol=1e-12)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, unnamed.predict(X_NUM[:3]), atol=1e-9)


def test_readme_tree_example_runs_as_written():
    """The README's first example, exactly: an XGBClassifier fitted on a DataFrame (feature names)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    data = load_breast_cancer(as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(data.data, data.target, random_state=0)
    model = xgb.XGBClassifier(n_estimators=200, max_depth=4).fit(X_train, y_train)
    exact = fs.explain(model, X_test)
    margin = model.predict(X_test, output_margin=True)
    np.testing.assert_allclose(exact.values.sum(axis=1) + exact.empty_value, margin, atol=1e-4)
    assert exact.player_names == list(data.data.columns)


# ----------------------------------------------------------------------------------- parse cache
def test_the_parse_cache_reads_a_model_once_and_again_after_a_refit():
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3).fit(X_NUM, Y_REG)
    first = prepared(model)
    assert prepared(model) is first
    assert fs.games.TreeGame(model, X_NUM[0]).prepared is first
    model.fit(X_NUM, -Y_REG)
    again = prepared(model)
    assert again is not first
    np.testing.assert_allclose(fs.games.tree_values(model, X_NUM[:3]).values.sum(axis=1),
                               model.predict(X_NUM[:3], output_margin=True)
                               - fs.games.TreeGame(model, X_NUM[0])(np.zeros((1, N_FEATURES), bool))[0], atol=2e-5)
    booster = xgb.train({"max_depth": 2}, xgb.DMatrix(X_NUM, label=Y_REG), 3)
    before = prepared(booster)
    booster.update(xgb.DMatrix(X_NUM, label=Y_REG), 3)                # trained further in place
    assert prepared(booster) is not before
    forest = ske.RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X_NUM, Y_REG)
    old = prepared(forest)
    forest.fit(X_NUM, -Y_REG)
    assert prepared(forest) is not old


# ------------------------------------------------------------------------------------------ shap
SHAP_CASES = ["xgb-regressor-nan", "xgb-multiclass", "xgb-categorical-pandas", "lgb-binary", "lgb-categorical-codes",
              "sk-hist-regressor-nan", "sk-hist-multiclass", "sk-isolation-forest", "sk-extra-tree", "cb-regressor-nan",
              "cb-multiclass"]
# shap 0.51 computes these interventional values wrongly (they miss efficiency by 0.3 to 1.2: shap reads
# categorical splits and HistGradientBoosting's missing-value / threshold rules its own way); fairshare's equal
# brute-force enumeration with the model's own predictions (test above) and add up exactly
SHAP_WRONG = {("lgb-categorical-codes", "interventional"), ("sk-hist-regressor-nan", "interventional"),
              ("sk-hist-multiclass", "interventional")}
SHAP_CRASHES = {("cb-multiclass", "interventional")}          # shap aborts the process


@pytest.mark.parametrize("mode", ["path-dependent", "interventional"])
@pytest.mark.parametrize("name", [n for n in SHAP_CASES if n in CASES])
def test_agreement_with_shap_where_shap_reads_the_model(name, mode):
    shap = pytest.importorskip("shap")
    if (name, mode) in SHAP_CRASHES:
        pytest.skip("shap.TreeExplainer aborts the Python process on this configuration")
    model, X, custom = CASES[name]
    rows, bg = _take(X, list(range(5))), _take(X, list(range(40, 60)))
    try:
        if mode == "path-dependent":
            explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
        else:
            explainer = shap.TreeExplainer(model, data=bg, feature_perturbation="interventional", model_output="raw")
        theirs = np.asarray(explainer.shap_values(rows, check_additivity=False))
    except Exception as exc:  # noqa: BLE001 - shap refuses some configurations: nothing to compare
        pytest.skip(f"shap does not read this configuration: {type(exc).__name__}")
    ours = fs.games.tree_values(model, rows, "shapley", mode=mode,
                                background=bg if mode == "interventional" else None).values
    if theirs.shape != ours.shape:
        theirs = np.moveaxis(theirs, 0, -1)
    theirs = theirs.reshape(ours.shape)
    if (name, mode) not in SHAP_WRONG:
        np.testing.assert_allclose(ours, theirs, atol=5e-5)
        return
    gap = raw_output(model, rows, custom) - raw_output(model, bg, custom).mean(axis=0)
    ours_sum, theirs_sum = ours.reshape(5, N_FEATURES, -1).sum(axis=1), theirs.reshape(5, N_FEATURES, -1).sum(axis=1)
    np.testing.assert_allclose(ours_sum, gap, atol=1e-9)
    assert np.abs(theirs_sum - gap).max() > 0.1, "shap now gets this right: remove it from SHAP_WRONG"


def test_the_parse_cache_holds_models_that_cannot_be_hashed_and_lets_them_go():
    import gc
    import weakref

    class Unhashable(ske.RandomForestRegressor):
        __hash__ = None

    model = Unhashable(n_estimators=3, max_depth=2, random_state=0).fit(X_NUM, Y_REG)
    assert prepared(model) is prepared(model)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None                             # the cache does not keep a model alive


def test_values_beyond_float32_are_refused_where_the_models_own_predict_refuses_them(monkeypatch):
    """scikit-learn's trees cast rows to float32 and refuse 1e39 (an infinity there); tree_values walked it as an
    infinity and returned a prediction the model never gives. Refused, naming argument, row and column,
    before any model call; xgboost, lightgbm and HistGradientBoosting predict such rows, and still explain them."""
    frame = pd.DataFrame(X_NUM, columns=[f"f{i}" for i in range(N_FEATURES)])
    forest = ske.RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(frame, Y_REG)
    boosting = ske.GradientBoostingRegressor(n_estimators=5, random_state=0).fit(X_NUM, Y_REG)
    big = frame.iloc[:3].copy()
    big.iloc[1, 2] = -1e39
    calls = []
    for cls in (ske.RandomForestRegressor, ske.GradientBoostingRegressor):
        monkeypatch.setattr(cls, "predict", lambda self, *a, **k: calls.append(1))
    for door, arg, model in [(lambda m, b: fs.explain(m, b, progress=False), "X", forest),
                             (lambda m, b: fs.explain(m, X_NUM[:2], b, progress=False), "background", forest),
                             (lambda m, b: fs.games.tree_values(m, b), "X", boosting),
                             (lambda m, b: fs.games.tree_interactions(m, b), "X", boosting)]:
        column = "'f2'" if model is forest else "2"
        with pytest.raises(ValueError, match=f"{arg} holds -1e\\+39 at row 1, column {column}, beyond float32's"):
            door(model, big if model is forest else big.to_numpy())
    assert not calls
    monkeypatch.undo()
    edge = big.copy()
    edge.iloc[1, 2] = float(np.finfo(np.float32).max)            # the largest float32: taken by the model
    phi = fs.games.tree_values(forest, edge)
    np.testing.assert_allclose(phi.values.sum(axis=1) + phi.empty_value, forest.predict(edge), atol=1e-12)
    for model in (xgb.XGBRegressor(n_estimators=5, max_depth=3).fit(X_NUM, Y_REG),
                  lgb.LGBMRegressor(n_estimators=5, verbose=-1).fit(X_NUM, Y_REG),
                  ske.HistGradientBoostingRegressor(max_iter=5).fit(X_NUM, Y_REG)):
        phi = fs.games.tree_values(model, big.to_numpy())
        np.testing.assert_allclose(phi.values.sum(axis=1) + phi.empty_value, model.predict(big.to_numpy()), atol=1e-5)
