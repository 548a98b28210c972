"""scikit-learn pipelines explained on the user's raw columns (issue 40, item 1), against brute force.

The brute force here knows nothing of fairshare's tracing or tree walks: the raw-column game is
``v(S) = mean over background rows b of f(pipeline on the raw row with the columns of S from x and the rest from b)``,
built by writing every hybrid raw row (all 2^n coalitions) and running it through the pipeline's own steps, and the
Shapley values come from the enumeration formula. ``f`` is the final model's own raw output (lightgbm's raw score,
catboost's RawFormulaVal, scikit-learn's decision function or prediction, the pipeline's predict_proba); for xgboost,
which predicts in float32, the trees' margin in float64, checked against xgboost's own margin to float32 precision.
The adult census rows keep their missing values (workclass, occupation) and get some in age.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

import fairshare as fs
from fairshare.trees import read_ensemble

from conftest import model_raw_output

warnings.filterwarnings("ignore", message=".*feature names.*")
DATASETS = Path(os.environ.get("FAIRSHARE_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
COLUMNS = ["age", "workclass", "education-num", "marital-status", "occupation", "sex", "hours-per-week"]
NUMBERS = ["age", "education-num", "hours-per-week"]


@pytest.fixture(scope="module")
def adult():
    """300 adult census rows as users hold them: strings, NaN in workclass and occupation, and some in age."""
    path = DATASETS / "adult" / "adult_census.csv"
    if not path.is_file():
        pytest.skip("the adult census data (../shared/datasets) is not available")
    frame = pd.read_csv(path, nrows=300)
    y = (frame.pop("class").str.strip() == ">50K").to_numpy(int)
    X = frame[COLUMNS].copy()
    X.loc[X.index % 9 == 4, "age"] = np.nan
    missing = X.isna().any(axis=1).to_numpy()
    rows = X.iloc[np.r_[np.flatnonzero(missing)[:2], 0]]                    # rows with a NaN, and one without
    return X, y, rows, X.iloc[200:207]


def columns(remainder: str = "passthrough") -> ColumnTransformer:
    """Imputers, a scaler, a column-wise function and a min-max scaler, one-hot and ordinal encoders; education-num
    passed through (``remainder="passthrough"``) or dropped."""
    return ColumnTransformer([
        ("age", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["age"]),
        ("hours", make_pipeline(FunctionTransformer(np.log1p, feature_names_out="one-to-one"), MinMaxScaler()),
         ["hours-per-week"]),
        ("onehot", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["workclass", "marital-status"]),
        ("ordinal", make_pipeline(SimpleImputer(strategy="constant", fill_value="?"),
                                  OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)),
         ["occupation", "sex"]),
    ], remainder=remainder)


def game_table(f, rows: pd.DataFrame, background: pd.DataFrame) -> np.ndarray:
    """``v[r, code]`` of every coalition (bit ``j`` of ``code``: raw column ``j`` from the row), ``(R, 2^n[, k])``."""
    n, R, B = rows.shape[1], len(rows), len(background)
    codes = np.arange(1 << n)
    S = (codes[:, None] >> np.arange(n)[None, :]) & 1 == 1                                # (2^n, n)
    x, z = rows.to_numpy(object), background.to_numpy(object)
    hybrid = np.where(S[None, :, None, :], x[:, None, None, :], z[None, None, :, :])      # (R, 2^n, B, n)
    frame = pd.DataFrame(hybrid.reshape(-1, n), columns=rows.columns).astype(rows.dtypes.to_dict())
    out = np.asarray(f(frame), dtype=float).reshape(R, 1 << n, B, -1).mean(axis=2)
    return out[..., 0] if out.shape[-1] == 1 else out


def shapley(v: np.ndarray) -> np.ndarray:
    """Shapley values by enumeration from ``v[r, code]``: ``(R, n[, k])``."""
    n = int(np.log2(v.shape[1]))
    codes = np.arange(1 << n)
    size = np.array([bin(c).count("1") for c in codes])
    weight = np.array([math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) for s in range(n)])
    out = []
    for i in range(n):
        without = codes[(codes >> i) & 1 == 0]
        w = weight[size[without]].reshape((-1,) + (1,) * (v.ndim - 2))
        out.append((w * (v[:, without | (1 << i)] - v[:, without])).sum(axis=1))
    return np.stack(out, axis=1)


def through(pipe, raw=None):
    """``f`` of raw rows: the pipeline's steps, then ``raw`` (the final model's own raw output by default)."""
    final = pipe.steps[-1][1]
    return lambda frame: (raw or (lambda X: model_raw_output(final, X)))(pipe[:-1].transform(frame))


def _finals():
    import lightgbm as lgb
    import xgboost as xgb

    finals = {"xgboost": lambda: xgb.XGBRegressor(n_estimators=15, max_depth=4, random_state=0),
              "lightgbm": lambda: lgb.LGBMClassifier(n_estimators=15, num_leaves=12, min_child_samples=5,
                                                     verbose=-1, random_state=0),
              "sklearn": lambda: RandomForestRegressor(n_estimators=8, max_depth=6, random_state=0)}
    try:
        import catboost as cb

        finals["catboost"] = lambda: cb.CatBoostRegressor(iterations=15, depth=4, verbose=0, random_seed=0,
                                                          allow_writing_files=False, thread_count=1)
    except ImportError:
        pass
    return finals


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "sklearn", "catboost"])
def test_raw_column_values_through_a_pipeline_equal_enumeration_of_the_raw_column_game(adult, library):
    """Interventional values of the raw columns (one-hot, scaled, imputed, ordinal, function and passthrough
    columns, NaN in the raw data) from the grouped tree walk = Shapley values of the raw-column game enumerated."""
    X, y, rows, background = adult
    finals = _finals()
    if library not in finals:
        pytest.skip(f"{library} is not installed")
    pipe = Pipeline([("prep", columns("passthrough" if library != "lightgbm" else "drop")),
                     ("model", finals[library]())]).fit(X, y)
    e = fs.explain(pipe, rows, background=background, progress=False)
    raw = None
    if library == "xgboost":                                   # xgboost predicts in float32: its trees in float64
        ens = read_ensemble(pipe.steps[-1][1])
        raw = lambda Z: ens.predict(Z)                        # noqa: E731
        Z = pipe[:-1].transform(X.iloc[:50])
        assert np.allclose(ens.predict(Z)[:, 0], pipe.steps[-1][1].predict(Z, output_margin=True), atol=1e-5)
    expected = shapley(game_table(through(pipe, raw), rows, background))
    assert e.player_names == COLUMNS and e.method == "exact" and e.info["pipeline"]["exact"] is True
    np.testing.assert_allclose(e.values, expected, rtol=0, atol=1e-9)
    if library == "lightgbm":                                  # remainder="drop": education-num is no player's
        assert e.info["pipeline"]["columns"]["marital-status"] > 1 and np.all(e.values[:, 2] == 0.0)


def _cover_game(ens, go_left, in_coalition) -> float:
    """The path-dependent game of one row: a node whose column is in the coalition follows the row, any other
    node splits the row's weight by the training cover."""
    def walk(node):
        if ens.feature[node] < 0:
            return ens.value[node, 0]
        left, right = ens.left[node], ens.right[node]
        if in_coalition[ens.feature[node]]:
            return walk(left if go_left[node] else right)
        return (ens.cover[left] * walk(left) + ens.cover[right] * walk(right)) / ens.cover[node]

    return ens.base[0] + sum(walk(root) for root in ens.roots)


def test_path_dependent_raw_column_values_equal_enumeration_of_the_cover_game(adult):
    """A raw column met at several nodes of one path (its one-hot columns) is one player of the cover game: the
    grouped path-dependent walk is exact for groups (checked here, with the groups read from the column names)."""
    X, y, rows, _ = adult
    pipe = Pipeline([("prep", columns()), ("model", RandomForestRegressor(n_estimators=4, max_depth=6,
                                                                          random_state=1))]).fit(X, y)
    e = fs.explain(pipe, rows, progress=False)
    names = pipe[:-1].get_feature_names_out()
    source = np.array([next(j for j, c in enumerate(COLUMNS) if name.split("__")[1].startswith(c)) for name in names])
    ens = read_ensemble(pipe.steps[-1][1])
    go_left = ens.decisions(pipe[:-1].transform(rows))
    n = len(COLUMNS)
    v = np.array([[_cover_game(ens, go_left[r], ((code >> source) & 1) == 1) for code in range(1 << n)]
                  for r in range(len(rows))])
    assert e.info["tree_mode"] == "path-dependent"
    np.testing.assert_allclose(e.values, shapley(v), rtol=0, atol=1e-9)


def test_probabilities_and_interactions_through_a_pipeline_equal_enumeration(adult):
    """``model_output="probability"``: the pipeline's predict_proba of the hybrid raw rows, exactly (the table of
    the groups' coalitions); ``interactions=2``: shap's layout of the raw columns' SII, exactly."""
    X, y, rows, background = adult
    pipe = Pipeline([("prep", columns()), ("model", GradientBoostingClassifier(n_estimators=10, max_depth=3,
                                                                               random_state=0))]).fit(X, y)
    e = fs.explain(pipe, rows, background=background, model_output="probability", progress=False)
    v = game_table(pipe.predict_proba, rows, background)
    assert e.values.shape == (3, 7, 2) and e.method == "exact"
    np.testing.assert_allclose(e.values, shapley(v), rtol=0, atol=1e-9)
    pairs = fs.explain(pipe, rows, background=background, interactions=2, progress=False)
    margin = game_table(through(pipe), rows, background)
    n, codes = len(COLUMNS), np.arange(1 << len(COLUMNS))
    size = np.array([bin(c).count("1") for c in codes])
    i, j = 1, 3                                                # workclass and marital-status: both one-hot
    rest = codes[((codes >> i) & 1 == 0) & ((codes >> j) & 1 == 0)]
    w = np.array([math.factorial(s) * math.factorial(n - s - 2) / math.factorial(n - 1) for s in size[rest]])
    sii = (w * (margin[:, rest | 1 << i | 1 << j] - margin[:, rest | 1 << i] - margin[:, rest | 1 << j]
                + margin[:, rest])).sum(axis=1)
    np.testing.assert_allclose(pairs.interactions[:, i, j], sii / 2, rtol=0, atol=1e-9)
    np.testing.assert_allclose(pairs.values, shapley(margin), rtol=0, atol=1e-9)


def test_a_step_that_mixes_columns_falls_back_to_the_black_box_and_says_which(adult):
    """PCA (declared) and a mixing function (caught numerically): the same raw-column game through the pipeline's
    predictions (exact here: the default budget covers every coalition), the step named in e.info and, with no
    background for the black box, in the refusal."""
    X, y, rows, background = adult
    pca = ColumnTransformer([("pca", make_pipeline(SimpleImputer(), PCA(2)), NUMBERS),
                             ("onehot", OneHotEncoder(handle_unknown="ignore"), ["workclass", "sex"])])
    pipe = Pipeline([("prep", pca), ("model", GradientBoostingClassifier(n_estimators=5, random_state=0))]).fit(X, y)
    e = fs.explain(pipe, rows, background=background, progress=False)
    assert e.info["pipeline"]["exact"] is False and "'pca' (PCA) mixes columns" in e.info["pipeline"]["reason"]
    np.testing.assert_allclose(e.values, shapley(game_table(through(pipe), rows, background)), rtol=0, atol=1e-9)

    mixing = FunctionTransformer(lambda A: np.column_stack([A[:, 0] + A[:, 1], A[:, 1]]))
    pipe = Pipeline([("prep", ColumnTransformer([("mix", make_pipeline(SimpleImputer(), mixing),
                                                   ["age", "hours-per-week"])])),
                     ("model", GradientBoostingClassifier(n_estimators=5, random_state=0))]).fit(X, y)
    e = fs.explain(pipe, rows, background=background, progress=False)
    assert "'mix' (Pipeline) mixes columns" in e.info["pipeline"]["reason"], e.info["pipeline"]
    with pytest.raises(ValueError, match=r"^background: step 'prep' \(ColumnTransformer\) → 'mix'"):
        fs.explain(pipe, rows, progress=False)


def test_another_final_estimator_explains_the_raw_columns_as_a_black_box(adult):
    """A logistic regression behind imputers and encoders: the raw columns (strings, NaN) are the players, and the
    values are the raw-column game's of its predict_proba."""
    X, y, rows, background = adult
    prep = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMBERS),
                              ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                                                    OneHotEncoder(handle_unknown="ignore")),
                               ["workclass", "marital-status", "occupation", "sex"])])
    pipe = make_pipeline(prep, LogisticRegression(max_iter=500)).fit(X, y)
    e = fs.explain(pipe, rows, background=background, progress=False)
    assert e.player_names == COLUMNS and "no tree model" in e.info["pipeline"]["reason"]
    np.testing.assert_allclose(e.values, shapley(game_table(pipe.predict_proba, rows, background)), rtol=0,
                               atol=1e-9)


def test_a_pipelines_bound_method_takes_the_nan_its_imputer_fills_as_the_pipeline_does():
    # a left-out of the last stop: pipeline.predict_proba was refused for NaN that its own first step imputes
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    X[rng.random((200, 4)) < 0.1] = np.nan
    pipe = make_pipeline(SimpleImputer(), LogisticRegression()).fit(X, y)
    whole = fs.explain(pipe, X[:3], background=X[10:30], progress=False, seed=0)
    method = fs.explain(pipe.predict_proba, X[:3], background=X[10:30], progress=False, seed=0)
    np.testing.assert_array_equal(whole.values, method.values)
    plain = make_pipeline(LogisticRegression()).fit(np.nan_to_num(X), y)
    with pytest.raises(ValueError, match="background holds NaN at row 3, column 1, and the model does not take"):
        fs.explain(plain.predict_proba, X[:3], background=X[10:30], progress=False, seed=0)


def test_a_model_whose_column_transformer_imputes_takes_nan_as_the_pipeline_does(adult):
    """The bound method of a pipeline whose first step is a ColumnTransformer with imputers (the common layout), and
    a TransformedTargetRegressor or CalibratedClassifierCV around one, were refused for the NaN they impute (the
    ColumnTransformer's and wrappers' own tags say no NaN): their values are the raw-column game's; a scaler that
    passes NaN on to a logistic regression is still refused before any model call."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import Ridge

    X, y, rows, background = adult
    assert rows.isna().to_numpy().any()
    prep = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMBERS),
                              ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                                                    OneHotEncoder(handle_unknown="ignore")),
                               ["workclass", "marital-status", "occupation", "sex"])])
    pipe = make_pipeline(prep, LogisticRegression(max_iter=500)).fit(X, y)
    e = fs.explain(pipe.predict_proba, rows, background=background, progress=False)
    np.testing.assert_allclose(e.values, shapley(game_table(pipe.predict_proba, rows, background)), rtol=0,
                               atol=1e-9)
    calibrated = CalibratedClassifierCV(pipe, cv=3).fit(X, y)
    e = fs.explain(calibrated, rows, background=background, progress=False)
    np.testing.assert_allclose(e.values, shapley(game_table(calibrated.predict_proba, rows, background)), rtol=0,
                               atol=1e-9)
    ttr = TransformedTargetRegressor(make_pipeline(prep, Ridge()), func=np.log1p, inverse_func=np.expm1)
    ttr.fit(X, X["hours-per-week"].to_numpy())
    e = fs.explain(ttr, rows, background=background, progress=False)
    np.testing.assert_allclose(e.values, shapley(game_table(ttr.predict, rows, background)), rtol=0, atol=1e-9)
    scaled = ColumnTransformer([("num", StandardScaler(), NUMBERS)])
    plain = make_pipeline(scaled, LogisticRegression()).fit(X.fillna(dict.fromkeys(NUMBERS, 0.0)), y)
    with pytest.raises(ValueError, match="X holds NaN at row 0, column 'age', which the pipeline's steps leave for its final step"):
        fs.explain(plain.predict_proba, rows, background=background, progress=False)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")
def test_a_cell_the_final_step_refuses_is_named_by_its_raw_column(adult):
    """A scaler passes the rows' NaN in age on to a GradientBoostingClassifier, which takes none: refused before any
    model call, naming the raw column, where the message named only transformed column 0; likewise the -inf that
    a log makes of a zero in the background."""
    X, y, rows, background = adult
    clean = X.fillna({"age": 40.0})
    prep = ColumnTransformer([("num", StandardScaler(), ["age", "education-num"]),
                              ("log", FunctionTransformer(np.log, feature_names_out="one-to-one"), ["hours-per-week"]),
                              ("cat", OneHotEncoder(handle_unknown="ignore"), ["workclass", "sex"])])
    pipe = make_pipeline(prep, GradientBoostingClassifier(n_estimators=5, random_state=0)).fit(clean, y)
    with pytest.raises(ValueError, match=r"at row 0, column 0, .* comes from the raw column 'age'\)$"):
        fs.explain(pipe, rows, background=clean.iloc[200:207], progress=False)
    zero = clean.iloc[200:207].copy()
    zero.iloc[3, zero.columns.get_loc("hours-per-week")] = 0.0
    with pytest.raises(ValueError, match=r"^background holds an infinite value \(row 3, column 2\) .* raw column "
                                         r"'hours-per-week'\)$"):
        fs.explain(pipe, clean.iloc[:2], background=zero, progress=False)


@pytest.mark.filterwarnings("ignore:Skipping features without any observed values")
def test_an_imputer_that_drops_or_keeps_an_empty_column_is_traced_as_it_transforms(adult):
    """A column with no value at fit: SimpleImputer(strategy="constant") drops it (its statistic is NaN) and
    most_frequent on words keeps it (its statistic is None). The tracing kept the first and dropped the second
    ('declares 3 columns but gives 2'), so the pipeline went to the black box, which without a background was
    refused; both are now traced: exact, with or without background."""
    X, y, rows, background = adult
    X = X.assign(bonus=np.nan, note=pd.Series([None] * len(X), dtype=object))
    rows, background = X.loc[rows.index], X.loc[background.index]
    prep = ColumnTransformer([
        ("num", SimpleImputer(strategy="constant", fill_value=0.0), ["age", "bonus", "hours-per-week"]),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OrdinalEncoder()), ["workclass", "note"])])
    pipe = Pipeline([("prep", prep), ("model", RandomForestRegressor(n_estimators=4, max_depth=5,
                                                                     random_state=0))]).fit(X, y)
    e = fs.explain(pipe, rows, background=background, progress=False)
    assert e.info["pipeline"]["exact"] is True and e.info["pipeline"]["columns"]["bonus"] == 0
    assert e.info["pipeline"]["columns"]["note"] == 1
    np.testing.assert_allclose(e.values, shapley(game_table(through(pipe), rows, background)), rtol=0, atol=1e-9)
    path = fs.explain(pipe, rows, progress=False)
    assert path.info["tree_mode"] == "path-dependent"
    np.testing.assert_allclose(path.values.sum(axis=1) + path.base_values, pipe.predict(rows), rtol=0, atol=1e-9)


def test_array_rows_of_the_wrong_width_are_refused_before_any_model_call(adult):
    """Rows as an array with a column too few, for a pipeline with another final estimator (or its bound method):
    the pipeline was called and its ColumnTransformer's error came back from the model ('X has 6 features, but
    ColumnTransformer is expecting 7'); refused now before any call, with the columns the pipeline takes."""
    X, y, _, _ = adult
    prep = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), NUMBERS),
                              ("cat", OneHotEncoder(handle_unknown="ignore"), ["workclass", "sex"])])
    pipe = make_pipeline(prep, LogisticRegression(max_iter=500)).fit(X, y)
    calls = []
    transform = prep.transform
    prep.transform = lambda Z: calls.append(len(Z)) or transform(Z)
    for model in (pipe, pipe.predict_proba):
        with pytest.raises(ValueError, match=r"^X must have 7 columns \(the model's features: \['age', 'workclass'"):
            fs.explain(model, X.dropna().iloc[:3, :6].to_numpy(), background=X.dropna().iloc[200:207, :6].to_numpy(),
                       progress=False)
    assert calls == []


def test_groups_of_raw_columns_are_one_grouped_walk_through_the_pipeline(adult):
    """groups= of raw columns: each transformed column takes its raw column's group, so the values come from one
    tree walk (they went to the black box: estimated where the budget does not enumerate), equal to enumerating the
    groups' game through the pipeline's predictions, with and without a background."""
    X, y, rows, background = adult
    pipe = Pipeline([("prep", columns()), ("model", RandomForestRegressor(n_estimators=3, max_depth=4,
                                                                          random_state=0))]).fit(X, y)
    groups = [["age", "education-num", "hours-per-week"], ["workclass", "occupation"], ["marital-status", "sex"]]
    assert set(sum(groups, [])) == set(X.columns)
    e = fs.explain(pipe, rows, background=background, groups=groups, progress=False)
    assert e.info["pipeline"]["exact"] and "groups" in e.info["via"] and e.player_names[0] == "age + education-num + hours-per-week"
    box = fs.explain(pipe.predict, rows, background=background, groups=groups, budget=8, progress=False)
    np.testing.assert_allclose(e.values, box.values, rtol=0, atol=1e-9)
    whole = fs.explain(pipe, rows, background=background, progress=False)
    np.testing.assert_allclose(e.values.sum(axis=1), whole.values.sum(axis=1), rtol=0, atol=1e-9)
    cover = fs.explain(pipe, rows, groups=groups, progress=False)
    np.testing.assert_allclose(cover.values.sum(axis=1) + cover.empty_value, pipe.predict(rows), rtol=0, atol=1e-9)


def test_an_unknown_category_is_named_by_argument_row_column_and_value_before_any_model_call():
    """OneHotEncoder(handle_unknown='error') and a row holding 'zz' in 'city': a tree final step was refused as
    "model: ... cannot transform rows of X and the background" (which of the two, which row, which column?), and
    another final step (LinearRegression) was called on 8 coalitions first and blamed 'row 0' of X for a background
    row. Now the argument, its row (and index), the raw column and the value are named, before any model call."""
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"size": rng.random(40), "city": rng.choice(["a", "b", "c"], 40), "rooms": rng.random(40)})
    y = X["size"] + (X["city"] == "a")
    bad = X.iloc[:3].copy()
    bad.iloc[2, 1] = "zz"
    for final in (DecisionTreeRegressor(max_depth=3), LinearRegression()):
        prep = ColumnTransformer([("oh", OneHotEncoder(handle_unknown="error"), ["city"]),
                                  ("sc", StandardScaler(), ["size", "rooms"])])
        pipe = make_pipeline(prep, final).fit(X, y)
        calls = []
        predict = final.predict
        final.predict = lambda Z: calls.append(len(Z)) or predict(Z)
        cases = ((bad, X.iloc[:10], r"^X: row 2, column 'city' holds 'zz', which the pipeline's step "
                                    r"'columntransformer' \(ColumnTransformer\) cannot transform \(ValueError: Found "
                                    r"unknown categories \['zz'\]"),
                 (X.iloc[:2], pd.concat([X.iloc[5:10], bad.iloc[2:]]),
                  r"^background: row 5 \(index 2\), column 'city' holds 'zz'"),
                 (bad.iloc[2:], X.iloc[:10], r"^X: row 0 \(index 2\), column 'city' holds 'zz'"))
        for rows, background, match in cases:
            with pytest.raises(ValueError, match=match):
                fs.explain(pipe, rows, background=background, progress=False)
        assert calls == []


def test_a_pipelines_bound_method_takes_the_nan_its_imputers_fill_and_refuses_the_nan_they_leave(adult):
    """``pipe.predict`` of rows with NaN in columns its imputers fill was refused ("X holds NaN at row 0, column
    'age', and the model does not take missing values"): the steps were judged as a whole, and the log1p of
    'hours-per-week' takes no NaN. Now the rows go through the steps: the values are the pipeline's own (the same
    game as ``fs.explain(pipe, ...)``), and a NaN where no imputer fills it is refused before any model call."""
    from sklearn.linear_model import LinearRegression

    X, y, rows, background = adult
    pipe = Pipeline([("prep", columns()), ("model", LinearRegression())]).fit(X.fillna({"age": 40.0}), y)
    assert rows["age"].isna().any()
    bound = fs.explain(pipe.predict, rows, background=background, budget=200, seed=0, progress=False)
    whole = fs.explain(pipe, rows, background=background, budget=200, seed=0, progress=False)
    np.testing.assert_array_equal(bound.values, whole.values)
    calls = []
    final = pipe.named_steps["model"]
    final.predict = lambda R, own=final.predict: calls.append(1) or own(R)
    bad = rows.copy()
    bad.iloc[1, list(bad.columns).index("hours-per-week")] = np.nan
    with pytest.raises(ValueError, match=r"X holds NaN at row 1, column 'hours-per-week'"):
        fs.explain(pipe.predict, bad, background=background, progress=False)
    assert calls == []
