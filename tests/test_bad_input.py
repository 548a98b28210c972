"""Wrong inputs get a clear error naming the argument, before any model call where they could be checked first.

Each case gives the exception type, a pattern its message must match (naming the argument) and whether
the model may have been called. A call-counting model (a real scikit-learn pipeline on breast-cancer
data) tells.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fairshare as fs
from fairshare.cli import main as cli_main
from fairshare.games.model import ModelError

_DATA = load_breast_cancer(as_frame=True)
X = _DATA.data.iloc[:, :6].copy()
y = _DATA.target
_PIPE = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
BG = X.iloc[:20]


class Counting:
    """The fitted pipeline, counting its predict_proba calls; sklearn-like (feature_names_in_, classes_)."""

    def __init__(self) -> None:
        self.calls = 0
        self.feature_names_in_ = _PIPE.feature_names_in_
        self.classes_ = _PIPE.classes_

    def predict_proba(self, Z):
        self.calls += 1
        return _PIPE.predict_proba(Z)


def _explain(model, **kw):
    args = dict(X=X.iloc[:2], background=BG, budget=100, progress=False, seed=0) | kw
    Xr, bg = args.pop("X"), args.pop("background")
    return fs.explain(model, Xr, bg, **args)


# (label, keyword changes to fs.explain, exception, message pattern, model calls allowed)
EXPLAIN_CASES = [
    ("no rows", dict(X=X.iloc[:0]), ValueError, r"X holds no rows", False),
    ("budget 0", dict(budget=0), ValueError, r"budget must be >= 1", False),
    ("budget negative", dict(budget=-5), ValueError, r"budget must be >= 1", False),
    ("budget float", dict(budget=2.5), TypeError, r"budget must be an integer", False),
    ("budget string", dict(budget="100"), TypeError, r"budget must be an integer", False),
    ("seed string", dict(seed="abc"), TypeError, r"seed", False),
    ("unknown index", dict(index="median"), ValueError, r"index must be one of", False),
    ("unknown method", dict(method="nope"), ValueError, r"method must be one of", False),
    ("n_jobs 0", dict(n_jobs=0), ValueError, r"n_jobs must be >= 1", False),
    ("n_jobs string", dict(n_jobs="x"), TypeError, r"n_jobs must be an integer", False),
    ("n_jobs -2", dict(n_jobs=-2), ValueError, r"n_jobs must be >= 1, or -1 for one thread per core", False),
    ("batch_size 0", dict(batch_size=0), ValueError, r"batch_size must be >= 1", False),
    ("batch_size -1", dict(batch_size=-1), ValueError, r"batch_size must be >= 1", False),
    ("batch_size 2.5", dict(batch_size=2.5), TypeError, r"batch_size must be a positive integer", False),
    ("sgd batch_size 2.5", dict(method="sgd", budget=500, batch_size=2.5), TypeError, r"batch_size must be a positive integer",
     False),
    ("progress string", dict(progress="yes"), TypeError, r"progress must be True, False or a callable", False),
    ("background missing", dict(background=None), ValueError, r"background .*is required", False),
    ("background too narrow (numpy)", dict(X=X.iloc[:2].to_numpy(), background=BG.iloc[:, :4].to_numpy()),
     ValueError, r"background has 4 columns but X has 6", False),
    ("background without a column", dict(background=BG.iloc[:, :5]), ValueError,
     r"background columns do not match .*missing \['mean compactness'\]", False),
    ("background with an extra column", dict(background=BG.assign(extra=1.0)), ValueError,
     r"background columns do not match .*unexpected \['extra'\]", False),
    ("X without a column", dict(X=X.iloc[:2, :5]), ValueError, r"X columns do not match .*missing", False),
    ("X with duplicate columns", dict(X=pd.concat([X.iloc[:2, :5], X.iloc[:2, :1]], axis=1)), ValueError,
     r"X has duplicate column names \['mean radius'\]", False),
    ("empty background", dict(background=BG.iloc[:0]), ValueError, r"background must hold at least one row", False),
    ("groups overlap", dict(groups=[[0, 1], [1, 2, 3, 4, 5]]), ValueError, r"exactly one group.*repeated", False),
    ("groups miss a feature", dict(groups=[[0, 1], [2, 3, 4]]), ValueError, r"exactly one group.*missing", False),
    ("groups by an unknown name", dict(groups=[["mean radius"], ["nope"]]), ValueError,
     r"groups name the feature 'nope'", False),
    ("groups with a float", dict(groups=[[0.5]]), TypeError, r"groups must hold feature positions or names", False),
    ("groups as a string", dict(groups="mean radius"), TypeError, r"groups must be lists of features .* got the "
     r"string 'mean radius'", False),                      # its letters were read as feature names
    ("imputation unknown", dict(imputation="median"), ValueError, r"imputation must be one of", False),
    ("feature_names too short", dict(feature_names=["a", "b"]), ValueError, r"feature_names must have 6 names", False),
    ("feature_names twice", dict(feature_names=["a", "b", "a", "c", "b", "d"]), ValueError,
     r"feature_names must name each one once; 'a', 'b' appear more than once", False),
    ("unknown option", dict(method="permutation", foo=1), ValueError, r"unknown option\(s\) \['foo'\]", False),
    ("option value out of range", dict(method="regression", lam="beta"), ValueError, r"lam", False),
    ("option wrong type", dict(method="permutation", antithetic="yes"), TypeError, r"antithetic must be True or False",
     False),
    ("budget below the method's minimum", dict(method="permutation", budget=3), fs.BudgetError,
     r"budget=3 is too small for method 'permutation'", False),
    ("cache unwritable", dict(cache="/proc/fairshare-nope"), ValueError, r"cache '/proc/fairshare-nope' cannot be", False),
    ("cache not a path", dict(cache=3), TypeError, r"cache must be a folder path", False),
]


@pytest.mark.parametrize("label, change, exc, match, may_call", EXPLAIN_CASES, ids=[c[0] for c in EXPLAIN_CASES])
def test_explain_rejects(label, change, exc, match, may_call):
    model = Counting()
    with pytest.raises(exc, match=match):
        _explain(model, **change)
    if not may_call:
        assert model.calls == 0, f"{label}: {model.calls} model call(s) spent before the error"


# ------------------------------------------------------------------------------- model failures
def _raising(Z):
    raise RuntimeError("model exploded")


@pytest.mark.parametrize("predict, Xr, exc, match", [
    (_raising, X.iloc[:2], ModelError, r"row 0: the model raised RuntimeError \(model exploded\) on the rows of .* "
                                       r"coalition\(s\), the first \{"),
    (lambda Z: np.full(len(Z), np.nan), X.iloc[:2], ValueError, r"row 0: the model returned NaN or inf"),
    (lambda Z: np.full(len(Z), np.inf), X.iloc[:2], ValueError, r"row 0: the model returned NaN or inf"),
    (lambda Z: np.zeros(3), X.iloc[:2], ValueError, r"predict returned 3 values for \d+ rows"),
    (lambda Z: np.asarray(Z, dtype=float).sum(axis=1), X.iloc[:2].astype(object).assign(**{"mean radius": "big"}),
     ModelError, r"row 0: the model raised ValueError"),
], ids=["raises", "nan output", "inf output", "wrong row count", "strings in a numeric model"])
def test_model_failures_are_chained_with_row_and_coalition(predict, Xr, exc, match):
    with pytest.raises(exc, match=match) as info:
        fs.explain(predict, Xr, BG, budget=100, progress=False, method="permutation")
    if exc is ModelError:
        assert info.value.__cause__ is not None                 # the model's own exception is kept


@pytest.mark.parametrize("as_frame", [True, False])
def test_a_background_of_words_under_x_numbers_is_refused_before_any_model_call(as_frame):
    """A background column of words under X's numbers reached the model, which raised 'could not convert string to
    float' at its first call (a ModelError naming row 0 of X, not the background)."""
    calls = []

    def predict(Z):
        calls.append(1)
        return np.asarray(Z, dtype=float).sum(axis=1)

    bg = BG.iloc[:5].astype(object).assign(**{"mean texture": [f"w{i}" for i in range(5)]})
    column = "'mean texture'" if as_frame else str(list(BG.columns).index("mean texture"))
    with pytest.raises(ValueError, match=f"background holds 'w0' at row 0, column {column}, where X holds numbers"):
        fs.explain(predict, X.iloc[:2] if as_frame else X.iloc[:2].to_numpy(), bg if as_frame else bg.to_numpy(),
                   budget=100, progress=False, method="permutation")
    assert calls == []


def test_nan_is_refused_before_any_call_for_a_model_that_does_not_take_it_and_passed_to_one_that_does():
    Xn = X.iloc[:1].copy()
    Xn.iloc[0, 2] = np.nan
    # the pipeline's steps leave the NaN for a LogisticRegression: refused naming X, the row and the column
    with pytest.raises(ValueError, match=r"X holds NaN at row 0, column 'mean perimeter', which the pipeline's steps "
                                         r"leave for its final step, and it takes no missing values"):
        fs.explain(_PIPE, Xn, BG, budget=100, progress=False, method="permutation")
    from sklearn.ensemble import HistGradientBoostingClassifier
    hgb = HistGradientBoostingClassifier(max_iter=20).fit(X, y)          # takes NaN as missing: explained
    e = fs.explain(hgb.predict_proba, Xn, BG, budget=100, progress=False, seed=0)
    assert np.all(np.isfinite(e.values))
    # a plain function is given what it was given; its own failure is reported with the row
    with pytest.raises(ModelError, match=r"row 0: the model raised ValueError \(Input X contains NaN"):
        fs.explain(lambda Z: _PIPE.predict_proba(Z), Xn, BG, budget=100, progress=False, method="permutation")


# ------------------------------------------------------------------------------- inputs that work
def test_reordered_columns_are_aligned_by_name_in_x_and_background():
    ref = fs.explain(_PIPE, X.iloc[:2], BG, budget=200, progress=False, seed=3)
    cols = list(X.columns)[::-1]
    both = fs.explain(_PIPE, X.iloc[:2][cols], BG[cols], budget=200, progress=False, seed=3)
    bg_only = fs.explain(_PIPE, X.iloc[:2], BG[cols], budget=200, progress=False, seed=3)
    assert np.array_equal(ref.values, both.values) and np.array_equal(ref.values, bg_only.values)
    assert both.player_names == list(X.columns)


def test_one_row_as_series_or_1d_array_is_explained():
    ref = fs.explain(_PIPE, X.iloc[[0]], BG, budget=200, progress=False, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # no "feature names" warning from scikit-learn
        series = fs.explain(_PIPE, X.iloc[0], BG, budget=200, progress=False, seed=3)
        flat = fs.explain(_PIPE, X.iloc[0].to_numpy(), BG.to_numpy(), budget=200, progress=False, seed=3)
    assert np.allclose(series.values, ref.values) and np.allclose(flat.values, ref.values)


def test_fs_examples_is_reachable():
    assert callable(fs.examples.select_prototypes)


# ---------------------------------------------------------------------------------- estimate & co
@pytest.mark.parametrize("call, exc, match", [
    (lambda g: fs.estimate(g, budget=0), ValueError, r"budget must be >= 1"),
    (lambda g: fs.estimate("game", budget=10), TypeError, r"game must be a fairshare.Game"),
    (lambda g: fs.estimate(g, "shapley", method="msr", budget=100), ValueError, r"method 'msr' supports"),
    (lambda g: fs.estimate(g, budget=100, tol=-1.0), ValueError, r"tol"),
    (lambda g: fs.estimate(g, budget=100, stop="soon"), TypeError, r"stop"),
    (lambda g: fs.estimate(g, budget=100, progress=3), TypeError, r"progress must be True, False or a callable"),
    (lambda g: fs.estimate(g, budget=100, seed=[1.5]), (TypeError, ValueError), r"seed"),
    (lambda g: fs.exact(fs.games.AdditiveGame(np.ones(40)).__class__.__mro__[0](np.ones(40)), "shapley",
                        via="enumeration"), ValueError, r"40 players|2\^40"),
], ids=["budget 0", "not a game", "index unsupported", "negative tol", "stop not a rule", "progress not callable",
        "seed list of floats", "enumeration too large"])
def test_estimate_and_exact_reject(call, exc, match):
    g = fs.games.SOUMGame.random(8, n_terms=10, seed=0)
    before = g.n_evaluations
    with pytest.raises(exc, match=match):
        call(g)
    assert g.n_evaluations == before


@pytest.mark.parametrize("make, exc, match", [
    (lambda: fs.games.ModelGame(_PIPE, X.iloc[:2], BG), ValueError, r"x must be one row"),
    (lambda: fs.games.ModelGame(_PIPE, X.iloc[0], BG, batch_size=0), ValueError, r"batch_size must be >= 1"),
    (lambda: fs.games.ModelGame(_PIPE, X.iloc[0].to_numpy()[:4], BG.to_numpy()), ValueError,
     r"background has 6 columns but x has 4"),
    (lambda: fs.games.TreeGame(RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y), X.iloc[0, :4]),
     ValueError, r"x"),
    (lambda: fs.games.TreeGame(LogisticRegression().fit(X, y), X.iloc[0]), (TypeError, ValueError), r"tree"),
], ids=["ModelGame two rows", "ModelGame batch_size 0", "ModelGame narrow x", "TreeGame narrow x",
        "TreeGame not a tree model"])
def test_games_reject(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


# ------------------------------------------------------------------------------ examples half
@pytest.mark.parametrize("kw, exc, match", [
    (dict(k=0), ValueError, r"k must be >= 1"),
    (dict(k=5, method="nope"), ValueError, r"method must be one of"),
    (dict(k=5, test=np.zeros((3, 4))), ValueError, r"same width"),
    (dict(k=5, train=np.where(np.eye(50, 8) > 0, np.nan, 1.0)), ValueError, r"train embeddings hold NaN"),
    (dict(k=5000), ValueError, r"k = 5000 is larger than the 50 training points"),
], ids=["k 0", "method", "widths", "nan", "k too large"])
def test_select_prototypes_rejects(kw, exc, match):
    from fairshare.examples import select_prototypes

    rng = np.random.default_rng(0)
    args = dict(train=rng.normal(size=(50, 8)), test=rng.normal(size=(5, 8))) | kw
    with pytest.raises(exc, match=match):
        select_prototypes(**args)


def test_select_prototypes_warns_at_the_rank_of_a_linear_kernel():
    from fairshare.examples import select_prototypes

    rng = np.random.default_rng(0)
    F = rng.normal(size=(300, 16))
    with pytest.warns(UserWarning, match=r"rank at most 16.*jitter=1e-3"):
        p = select_prototypes(F, F[:10], k=40, kernel="linear")
    assert len(p.indices) <= 16
    full = select_prototypes(F, F[:10], k=40, kernel="linear", jitter=1e-3)
    assert len(full.indices) == 40 and np.all(np.diff(full.objective) <= 1e-12)
    assert np.array_equal(full.indices[:8], select_prototypes(F, F[:10], k=8, kernel="linear", jitter=1e-3).indices)
    with pytest.raises(ValueError, match="jitter must be"):
        select_prototypes(F, F[:10], k=4, jitter=-1.0)


def test_rank_mislabeled_rejects_bad_arguments_before_computing():
    from sklearn.linear_model import LogisticRegression

    from fairshare.examples import rank_mislabeled

    rng = np.random.default_rng(0)
    Xe, ye = rng.normal(size=(60, 3)), rng.integers(0, 2, 60)
    model = LogisticRegression().fit(Xe, ye)
    with pytest.raises(ValueError, match="hessian must be one of"):
        rank_mislabeled(model, Xe, ye, hessian="exactly")
    with pytest.raises(ValueError, match="X_clean and y_clean go together"):
        rank_mislabeled(model, Xe, ye, Xe[:5])
    with pytest.raises(ValueError, match="X_clean holds no rows"):
        rank_mislabeled(model, Xe, ye, Xe[:0], ye[:0])


def test_influence_rejects_mismatched_labels():
    from fairshare.examples import influence

    model = LogisticRegression(max_iter=5000).fit(X, y)
    with pytest.raises(ValueError, match=r"y"):
        influence(model, X.to_numpy()[:50], y.to_numpy()[:40], X.to_numpy()[:3], y.to_numpy()[:3])


# ---------------------------------------------------------------------------------------- plots
@pytest.mark.parametrize("kw, exc, match", [
    (dict(kind="waterfall", row=5), ValueError, r"row must be in 0..1"),
    (dict(kind="waterfall", row=1.5), TypeError, r"row must be an integer"),
    (dict(kind="waterfall", output=7), ValueError, r"output must be a position in 0..1"),
    (dict(kind="waterfall", output="cat"), ValueError, r"output must be one of \['0', '1'\]"),
    (dict(kind="pie"), ValueError, r"kind must be"),
], ids=["row out of range", "row float", "output out of range", "output unknown", "kind"])
def test_plot_rejects(kw, exc, match):
    e = fs.explain(_PIPE, X.iloc[:2], BG, budget=100, progress=False, seed=0)
    kind = kw.pop("kind")
    with pytest.raises(exc, match=match):
        e.plot(kind, **kw)


def test_waterfall_labels_show_feature_values_and_numbers():
    e = fs.explain(_PIPE, X.iloc[:2], BG, budget=100, progress=False, seed=0)
    ax = e.plot("waterfall", row=1, output=1)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert any(lab.startswith("mean radius = ") for lab in labels)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 6 and all(t[0] in "+-" for t in texts)


# ------------------------------------------------------------------------------------------ cache
def test_cache_with_another_model_is_refused(tmp_path):
    _explain(_PIPE, cache=tmp_path)
    other = make_pipeline(StandardScaler(), LogisticRegression(C=0.01)).fit(X, y)
    with pytest.raises(ValueError, match=r"cache .* holds a different run"):
        _explain(other, cache=tmp_path)


def test_damaged_cache_files_are_recomputed_never_read(tmp_path):
    first = _explain(Counting(), cache=tmp_path, method="permutation")
    row_file = sorted((tmp_path / "rows").glob("*.npz"))[0]
    row_file.write_bytes(row_file.read_bytes()[:40])               # a truncated row file
    model = Counting()
    with pytest.warns(RuntimeWarning, match=r"cache file .*00000000.npz is damaged; row 0 is computed again"):
        again = _explain(model, cache=tmp_path, method="permutation")
    assert np.array_equal(first.values, again.values)
    assert model.calls == 0                      # the row's coalitions were kept: recomputed from them, no model call
    with np.load(row_file) as z:                 # and the row file is whole again
        assert np.array_equal(z["values"], first.values[0])
    log = tmp_path / "coalitions" / "00000000" / "values.log"
    log.write_bytes(log.read_bytes()[:-7])       # a torn coalition record as well: detected, that value recomputed
    row_file.unlink()
    model = Counting()
    third = _explain(model, cache=tmp_path, method="permutation")
    assert np.array_equal(first.values, third.values) and model.calls == 1


def test_damaged_manifest_is_reported_with_the_file(tmp_path):
    _explain(Counting(), cache=tmp_path)
    (tmp_path / "manifest.json").write_bytes(b"\xff\xfe garbage")
    model = Counting()
    with pytest.raises(ValueError, match=r"manifest.json is damaged"):
        _explain(model, cache=tmp_path)


class Interrupted(Counting):
    """Interrupted at the call FS_TEST_STOP_AT names (3): out of the cache's key, which reads the class's data."""

    def predict_proba(self, Z):
        if self.calls + 1 == int(os.environ.get("FS_TEST_STOP_AT", "3")):
            self.calls += 1
            raise KeyboardInterrupt
        return super().predict_proba(Z)


def test_keyboard_interrupt_leaves_the_cache_consistent_and_the_next_call_resumes(tmp_path, monkeypatch):
    Xr = X.iloc[:3]
    fresh = fs.explain(Counting(), Xr, BG, budget=300, progress=False, seed=4, method="permutation")
    model = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        fs.explain(model, Xr, BG, budget=300, progress=False, seed=4, method="permutation", cache=tmp_path,
                   batch_size=2000)
    done = model.calls - 1
    monkeypatch.setenv("FS_TEST_STOP_AT", "-1")                  # the same model, no longer interrupted
    resumed_model = Interrupted()
    resumed = fs.explain(resumed_model, Xr, BG, budget=300, progress=False, seed=4, method="permutation",
                         cache=tmp_path, batch_size=2000)
    full = Interrupted()
    fs.explain(full, Xr, BG, budget=300, progress=False, seed=4, method="permutation", batch_size=2000)
    assert np.allclose(resumed.values, fresh.values)
    # the resumed run makes every call of an uncached run but those the interrupted run finished: none twice
    assert done >= 1 and resumed_model.calls == full.calls - done


# -------------------------------------------------------------------------------------------- CLI
@pytest.fixture()
def saved(tmp_path):
    import joblib

    joblib.dump(_PIPE, tmp_path / "model.joblib")
    X.iloc[:3].to_csv(tmp_path / "rows.csv", index=False)
    BG.to_csv(tmp_path / "bg.csv", index=False)
    return tmp_path


@pytest.mark.parametrize("change, match", [
    ({"--data": "missing.csv"}, r"--data .*missing.csv: no such file"),
    ({"--model": "missing.joblib"}, r"--model .*missing.joblib: no such file"),
    ({"--budget": "0"}, r"budget must be >= 1"),
    ({"--rows": "a:b"}, r"--rows must look like"),
    ({"--data": "garbage.csv"}, r"--data .*garbage.csv: not a readable CSV file|no rows|does not match"),
    ({"--background": "narrow.csv"}, r"--background .* columns do not match"),
], ids=["missing data", "missing model", "budget 0", "bad rows", "malformed data", "narrow background"])
def test_cli_fails_in_one_line(saved, capsys, change, match):
    (saved / "garbage.csv").write_bytes(b"\x00\x01\x02\xff\xfe")
    BG.iloc[:, :4].to_csv(saved / "narrow.csv", index=False)
    args = {"--model": str(saved / "model.joblib"), "--data": str(saved / "rows.csv"), "--background":
            str(saved / "bg.csv"), "--budget": "100", "--out": str(saved / "out.csv")}
    args.update({k: (v if k in ("--budget", "--rows") else str(saved / v)) for k, v in change.items()})
    rc = cli_main(["explain", *[t for kv in args.items() for t in kv], "--quiet", "--trust-model"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    import re

    assert re.search(match, err), err


@pytest.mark.parametrize("scalar", [0.5, np.float64(0.5), np.array(0.5)])
def test_a_single_number_as_x_is_refused_naming_x(scalar):
    """It raised "object of type 'float' has no len()"."""
    with pytest.raises(ValueError, match="X must be rows of features"):
        fs.explain(lambda A: A.sum(axis=1), scalar, background=np.zeros((5, 3)), progress=False)


def _two_by_two(calls: list):
    """A model whose output per row has shape (2, 2): two pairs of numbers per row."""
    def predict(A):
        A = np.asarray(A, dtype=float)
        calls.append(len(A))
        return np.stack([A[:, :2], A[:, 2:4] ** 2], axis=1)
    return predict


@pytest.mark.parametrize("door", ["explain", "ModelGame", "global_importance"])
def test_a_model_with_more_than_one_output_axis_per_row_is_refused_naming_its_shape(door):
    """Outputs of shape (2, 2) per row were flattened into four outputs named 0..3 without a word; the first batch
    of model rows (before any value is estimated; global_importance: its probe, before any coalition) is refused,
    naming the shape and how to flatten it on purpose."""
    rng = np.random.default_rng(0)
    X, calls = rng.normal(size=(60, 4)), []
    model = _two_by_two(calls)
    with pytest.raises(ValueError, match=r"outputs of shape \(2, 2\) per row .*reshape\(len\(X\), -1\)"):
        if door == "explain":
            fs.explain(model, X[:3], X[10:40], budget=100, seed=0, progress=False)
        elif door == "ModelGame":
            fs.estimate(fs.games.ModelGame(model, X[0], background=X[10:40]), budget=100, seed=0)
        else:
            fs.global_importance(model, X, X[:, :2], budget=100, seed=0)
    assert len(calls) == 1


def test_a_torch_module_with_more_than_one_output_axis_per_row_is_refused_naming_its_shape():
    torch = pytest.importorskip("torch")
    module = lambda z: torch.stack([z[:, :2], z[:, 2:4] ** 2], dim=1)          # noqa: E731
    game = fs.games.TorchGame(module, torch.ones(4), baseline=torch.zeros(4))
    with pytest.raises(ValueError, match=r"the module returned outputs of shape \(2, 2\) per row"):
        fs.estimate(game, budget=100, seed=0)


def test_outputs_flattened_in_the_model_are_explained_each_as_its_own_output():
    rng = np.random.default_rng(0)
    X, calls = rng.normal(size=(60, 4)), []
    model = _two_by_two(calls)
    flat = fs.explain(lambda A: model(A).reshape(len(A), -1), X[:3], X[10:40], seed=0, progress=False)
    assert flat.values.shape == (3, 4, 4) and flat.output_names == ["0", "1", "2", "3"]
    last = fs.explain(lambda A: model(A)[:, 1, 1], X[:3], X[10:40], seed=0, progress=False)
    np.testing.assert_allclose(flat[:, :, 3].values, last.values, rtol=1e-12, atol=1e-14)
