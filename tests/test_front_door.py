"""The front door's promises, one test per way a new user broke them (issue 22's table), on real models and data.

Each test reproduces what the user did and checks what happens now: the same seed gives the same values in
every call and process; ``auto`` is decided from facts and costs no more than it saves; columns are aligned
by name; bad input is refused before any model call, naming the argument; MaxEvaluations caps every
method; small budgets say what would suffice; index names are the same at every door; plots and the CLI
work on frames with string columns.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import fairshare as fs
from fairshare.cli import main as cli_main
from fairshare import FairshareWarning
from fairshare.stopping import MaxEvaluations, RelativeError

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CANCER = load_breast_cancer(as_frame=True)
X, Y = CANCER.data, CANCER.target


@pytest.fixture(scope="module")
def xgb_model():
    xgb = pytest.importorskip("xgboost")
    return xgb.XGBClassifier(n_estimators=200, max_depth=4).fit(X.iloc[:400], Y.iloc[:400])


def adult(rows: int = 1500) -> tuple[pd.DataFrame, np.ndarray]:
    """The adult census table (shapiq's copy) with its string columns: 12 features, as shap's adult."""
    frame = pd.read_csv(DATASETS / "adult" / "adult_census.csv", nrows=rows).dropna()
    y = (frame.pop("class").str.strip() == ">50K").to_numpy(int)
    return frame.drop(columns=["fnlwgt", "education"]).reset_index(drop=True), y


def adult_pipeline():
    frame, y = adult()
    strings = list(frame.select_dtypes(exclude="number").columns)
    numbers = [c for c in frame.columns if c not in strings]
    pipe = make_pipeline(ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), strings),
                                            ("num", StandardScaler(), numbers)]), LogisticRegression(max_iter=2000))
    return pipe.fit(frame, y), frame


class Counting:
    """A model that counts its calls (proves that a refusal came before any)."""

    def __init__(self, model) -> None:
        self.model, self.calls = model, 0
        self.feature_names_in_ = model.feature_names_in_
        self.classes_ = model.classes_

    def predict_proba(self, Z):
        self.calls += 1
        return self.model.predict_proba(Z)


# -------------------------------------------------------------------------------- same seed, same values
RUN_AGAIN = textwrap.dedent("""
    import sys, numpy as np, xgboost as xgb
    from sklearn.datasets import load_breast_cancer
    import fairshare as fs
    d = load_breast_cancer(as_frame=True)
    model = xgb.XGBClassifier(n_estimators=200, max_depth=4).fit(d.data.iloc[:400], d.target.iloc[:400])
    e = fs.explain(model.predict_proba, d.data.iloc[400:403], background=d.data.iloc[:50], budget=800, seed=0,
                   progress=False)
    np.save(sys.argv[1], e.values)
""")


def test_predict_proba_twice_in_a_process_in_a_fresh_process_and_from_the_cache_gives_the_same_values(
        xgb_model, tmp_path):
    """Row 1: the first call no longer times the model: both calls (and a cache hit, and a fresh process) agree
    bit for bit, and the second call with cache= reads the first's run."""
    args = dict(background=X.iloc[:50], budget=800, seed=0, progress=False)
    first = fs.explain(xgb_model.predict_proba, X.iloc[400:403], **args)
    second = fs.explain(xgb_model.predict_proba, X.iloc[400:403], **args)
    np.testing.assert_array_equal(first.values, second.values)
    assert first.method == second.method == "surrogate-regression"  # 800 cheap evaluations: no tree surrogates
    cached = fs.explain(xgb_model.predict_proba, X.iloc[400:403], cache=tmp_path / "c", **args)
    again = fs.explain(xgb_model.predict_proba, X.iloc[400:403], cache=tmp_path / "c", **args)
    np.testing.assert_array_equal(cached.values, first.values)
    np.testing.assert_array_equal(again.values, first.values)
    assert again.n_evaluations.tolist() == first.n_evaluations.tolist()
    out = tmp_path / "fresh.npy"
    subprocess.run([sys.executable, "-c", RUN_AGAIN, str(out)], check=True, capture_output=True)
    np.testing.assert_array_equal(np.load(out), first.values)


# ------------------------------------------------------------------------------- auto on cheap models
def test_auto_takes_no_tree_control_variate_for_a_cheap_pipeline_and_a_torch_mlp():
    """Row 2: a ColumnTransformer pipeline (12 features, 2072 evaluations) and a torch MLP (budget 200) are cheap:
    auto does not add the tree surrogates' fits (which cost 0.3-0.9 s here), and says why; it runs the surrogate
    regression, whose Walsh surrogate costs milliseconds."""
    pipe, frame = adult_pipeline()
    e = fs.explain(pipe, frame.iloc[:2], background=frame.iloc[:50], seed=0, progress=False)
    assert e.method == "surrogate-regression" and e.info["budget"] == 2072
    why = e.info["choice"]["why"]
    assert "no tree control variate" in why and "covers over 1/8 of the 2^12" in why
    # below 1/8 coverage it is the cost of the surrogates' fits that keeps it plain
    e = fs.explain(pipe, frame.iloc[:2], background=frame.iloc[:50], budget=400, seed=0, progress=False)
    assert e.method == "surrogate-regression" and "more than 30%" in e.info["choice"]["why"]
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(30, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    Xs = ((X - X.mean()) / X.std()).to_numpy(np.float32)
    e = fs.explain(net, Xs[:3], background=Xs[:20], budget=200, seed=0, progress=False)
    assert e.method == "surrogate-regression" and "more than 30%" in e.info["choice"]["why"]


# -------------------------------------------------------------------------- keywords on the tree path
@pytest.mark.parametrize("kw", [dict(n_sample=100), dict(model_ouput="probability")])
def test_a_typo_on_the_tree_path_is_refused_like_on_a_function(xgb_model, kw):
    """Row 3: an unknown keyword is refused on the tree path as it is for a function."""
    for model, extra in ((xgb_model, {}), (xgb_model.predict_proba, dict(background=X.iloc[:10]))):
        with pytest.raises(ValueError, match=rf"unknown option\(s\) \['{next(iter(kw))}'\]"):
            fs.explain(model, X.iloc[:2], progress=False, **extra, **kw)


# ------------------------------------------------------------------------------------------ alignment
def test_reversed_columns_for_a_bound_method_are_aligned_by_name():
    """Row 4: lr.predict_proba with X and background in reversed column order gives each feature the value it
    gets in the model's order."""
    lr = LogisticRegression(max_iter=5000).fit(X, Y)
    rev = list(X.columns[::-1])
    args = dict(budget=400, seed=0, progress=False)
    ref = fs.explain(lr.predict_proba, X.iloc[:2], background=X.iloc[:10], **args)
    got = fs.explain(lr.predict_proba, X[rev].iloc[:2], background=X[rev].iloc[:10], **args)
    assert got.player_names == list(X.columns)                    # the model's order
    np.testing.assert_array_equal(got.values, ref.values)


def test_lightgbm_fitted_on_names_with_spaces_is_explained():
    """Row 5: LGBMClassifier stores 'mean_radius' for 'mean radius'; the README's first example with it works, and
    the values keep the user's names."""
    lgb = pytest.importorskip("lightgbm")
    model = lgb.LGBMClassifier(n_estimators=30, verbose=-1).fit(X, Y)
    e = fs.explain(model, X.iloc[:3], progress=False)
    assert e.method == "exact" and e.player_names == list(X.columns)
    margin = model.predict(X.iloc[:3], raw_score=True)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, margin, atol=1e-6)
    b = fs.explain(model.predict_proba, X.iloc[:2], background=X.iloc[:10], budget=200, seed=0, progress=False)
    assert b.player_names == list(X.columns)


def test_non_finite_background_is_named_before_any_model_call():
    """Row 6: inf in the background is refused naming background, its row and column, before any call."""
    lr = Counting(LogisticRegression(max_iter=5000).fit(X, Y))
    bg = X.iloc[:10].copy()
    bg.iloc[3, 4] = np.inf
    with pytest.raises(ValueError, match=r"background holds inf at row 3, column 'mean smoothness'"):
        fs.explain(lr, X.iloc[:2], background=bg, budget=200, progress=False)
    rows = X.iloc[:2].copy()
    rows.iloc[1, 0] = -np.inf
    with pytest.raises(ValueError, match=r"X holds -inf at row 1, column 'mean radius'"):
        fs.explain(lr, rows, background=X.iloc[:10], budget=200, progress=False)
    assert lr.calls == 0


# -------------------------------------------------------------------------------------------- stopping
def test_max_evaluations_caps_auto_even_where_it_would_enumerate():
    """Row 7: 14 players, budget 100000, RelativeError(0.001) | MaxEvaluations(3000): auto no longer enumerates
    all 16384 coalitions; the cap holds."""
    g = fs.games.FunctionGame(lambda S: np.sqrt(S @ np.arange(1.0, 15.0)) + S[:, 0] * S[:, 1], n_players=14)
    phi = fs.estimate(g, "shapley", budget=100_000, seed=0, stop=RelativeError(0.001) | MaxEvaluations(3000))
    assert phi.n_evaluations <= 3000 and phi.method == "surrogate-regression"
    exact = fs.exact(g, "shapley").values
    assert fs.metrics.relative_squared_error(phi.values, exact) < 1e-3


@pytest.mark.parametrize("budget, method", [(31, "permutation"), (64, "surrogate-regression")])
def test_tiny_budgets_on_30_players_give_sane_values_and_say_what_would_suffice(budget, method):
    """Row 8: budget 31 or 64 on a 30-player game: values on the true scale (no 1000x), and the infinite
    standard errors come with a warning naming a budget that gives finite ones."""
    game = fs.games.SOUMGame.random(30, n_terms=60, max_size=3, seed=0)
    opaque = fs.games.FunctionGame(game, n_players=30)
    truth = fs.exact(game, "shapley").values
    with pytest.warns(FairshareWarning, match=r"budget=\d+ is too small for .* a budget of (\d+) gives finite"):
        phi = fs.estimate(opaque, "shapley", budget=budget, seed=0)
    assert phi.method == method and np.abs(phi.values).max() < 3 * np.abs(truth).max()
    need = int(phi.info["stderr"].rsplit("a budget of ", 1)[1].split()[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FairshareWarning)                # the suggested budget: finite errors
        assert np.all(np.isfinite(fs.estimate(opaque, "shapley", budget=need, seed=0).stderr))


def test_sgd_at_a_budget_covering_every_coalition_runs_exact_values_and_says_so():
    """Row 9: sgd on 7 players at budget 128 (= 2^7) gives the exact values instead of a BudgetError."""
    g = fs.games.FunctionGame(lambda S: np.sqrt(S @ np.arange(1.0, 8.0)), n_players=7)
    phi = fs.estimate(g, "shapley", method="sgd", budget=128, seed=0)
    assert phi.method == "exact" and "exact values instead" in phi.info["choice"]["why"]
    np.testing.assert_allclose(phi.values, fs.exact(g, "shapley").values)


@pytest.mark.parametrize("index", ["beta-shapley", "beta-shapley(4,1)", "weighted-banzhaf(0.3)", "loo"])
def test_index_names_are_the_same_at_every_door(index):
    """Row 10: index names accepted by value_data work in estimate and explain (and exact) alike."""
    sv = fs.indices.semivalues.resolve_index(index)
    g = fs.games.FunctionGame(lambda S: np.sqrt(S @ np.arange(1.0, 7.0)), n_players=6)
    np.testing.assert_allclose(fs.estimate(g, index, budget=64).values, fs.exact(g, sv).values)
    lr = LogisticRegression(max_iter=5000).fit(X.iloc[:, :6], Y)
    e = fs.explain(lr.predict_proba, X.iloc[:2, :6], background=X.iloc[:5, :6], index=index, budget=64,
                   progress=False)
    assert e.index == sv.name and e.method == ("loo" if index == "loo" else "exact")   # loo: its own n + 2


# ---------------------------------------------------------------------------------------- plots and CLI
def test_the_readme_cli_command_on_a_pipeline_with_string_columns_writes_values_and_a_png(tmp_path, capsys):
    """Row 11: the README's command (--plot beeswarm.png) on a pipeline with string columns writes every row and
    the plot (categories coloured, their names as text); a waterfall for --rows 5 is titled row 5."""
    joblib = pytest.importorskip("joblib")
    pytest.importorskip("matplotlib")
    pipe, frame = adult_pipeline()
    joblib.dump(pipe, tmp_path / "model.joblib")
    frame.iloc[:8].to_csv(tmp_path / "rows.csv", index=False)
    frame.iloc[100:130].to_csv(tmp_path / "bg.csv", index=False)
    code = cli_main(["explain", "--model", str(tmp_path / "model.joblib"), "--data", str(tmp_path / "rows.csv"),
                     "--rows", "0:8", "--background", str(tmp_path / "bg.csv"), "--index", "banzhaf", "--budget",
                     "300", "--seed", "0", "--out", str(tmp_path / "values.csv"), "--plot",
                     str(tmp_path / "beeswarm.png"), "--quiet", "--trust-model"])
    assert code == 0, capsys.readouterr().err
    values = pd.read_csv(tmp_path / "values.csv")
    assert len(values) == 8 and values["row"].tolist() == list(range(8))
    png = tmp_path / "beeswarm.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    import matplotlib.pyplot as plt

    e = fs.explain(pipe, frame.iloc[:8], background=frame.iloc[100:130], budget=300, seed=0, progress=False)
    ax = e.plot("beeswarm", output=1)
    texts = {t.get_text() for t in ax.texts}
    assert texts & set(frame["occupation"].iloc[:8])                  # categories named by their values
    plt.close("all")
    code = cli_main(["explain", "--model", str(tmp_path / "model.joblib"), "--data", str(tmp_path / "rows.csv"),
                     "--rows", "5", "--background", str(tmp_path / "bg.csv"), "--budget", "300", "--out",
                     str(tmp_path / "one.csv"), "--plot", str(tmp_path / "waterfall.png"), "--quiet", "--trust-model"])
    assert code == 0
    one = fs.explain(pipe, frame.iloc[[5]], background=frame.iloc[100:130], budget=300, seed=0, progress=False)
    assert one.plot("waterfall", output=1).get_title().startswith("row 5:")
    plt.close("all")


def test_value_data_with_knn_needs_no_budget_as_its_help_says(tmp_path, capsys):
    """Row 12: fairshare value-data --model knn without --budget: the KNN closed form (exact, no fits)."""
    frame = X.iloc[:120, :5].assign(label=Y.iloc[:120].to_numpy())
    frame.iloc[:80].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[80:].to_csv(tmp_path / "val.csv", index=False)
    code = cli_main(["value-data", "--model", "knn", "--train", str(tmp_path / "train.csv"), "--val",
                     str(tmp_path / "val.csv"), "--target", "label", "--out", str(tmp_path / "v.csv"), "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert "(exact, 0 fits" in capsys.readouterr().out and len(pd.read_csv(tmp_path / "v.csv")) == 80
    assert "--budget" in subprocess.run([sys.executable, "-m", "fairshare.cli", "value-data", "--help"],
                                        capture_output=True, text=True).stdout
