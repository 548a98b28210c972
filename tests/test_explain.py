"""End to end: real models, pandas input, many rows, Dask, resumable cache, plots and the CLI."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairshare as fs
from fairshare.store.record_log import HEADER_BYTES

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import load_breast_cancer, load_diabetes  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.neural_network import MLPRegressor  # noqa: E402


@pytest.fixture(scope="module")
def cancer():
    d = load_breast_cancer(as_frame=True)
    model = LogisticRegression(max_iter=5000).fit(d.data, d.target)
    return model, d.data


@pytest.fixture(scope="module")
def diabetes():
    d = load_diabetes(as_frame=True)
    model = MLPRegressor(hidden_layer_sizes=(16,), max_iter=300, random_state=0).fit(d.data, d.target)
    return model, d.data


# --------------------------------------------------------------------------------------- ModelGame
def test_model_game_is_the_prediction_on_imputed_rows(diabetes):
    model, X = diabetes
    g = fs.games.ModelGame(model, X.iloc[3], background=X.iloc[:5])
    assert g.imputation == "marginal" and g.player_names == list(X.columns)
    S = np.random.default_rng(0).random((7, 10)) < 0.5
    expected = [model.predict(pd.DataFrame(np.where(s, X.iloc[3].to_numpy(), X.iloc[:5].to_numpy()),
                                            columns=X.columns)).mean() for s in S]
    np.testing.assert_allclose(g(S), expected, rtol=1e-12)
    full = g(np.ones((1, 10), bool))
    assert full[0] == pytest.approx(model.predict(X.iloc[[3]])[0])


def test_model_game_multi_output_groups_and_batches(cancer):
    model, X = cancer
    groups = [[i, i + 10, i + 20] for i in range(10)]                     # mean / error / worst of each measure
    calls = []

    def predict(frame):
        calls.append(len(frame))
        return model.predict_proba(frame)

    g = fs.games.ModelGame(predict, X.iloc[0], background=X.iloc[5], groups=groups, batch_size=40)
    assert g.n_players == 10 and g.player_names[0] == "mean radius + radius error + worst radius"
    out = g(np.random.default_rng(0).random((100, 10)) < 0.5)
    assert out.shape == (100, 2) and max(calls) <= 40
    phi = fs.exact(g, "shapley")
    assert phi.values.shape == (10, 2)
    np.testing.assert_allclose(phi.values.sum(axis=0), g(np.ones((1, 10), bool))[0] - g(np.zeros((1, 10), bool))[0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(imputation="kernel"), "imputation must be one of"),
    (dict(imputation="baseline", background="many"), "takes one background row"),
    (dict(groups=[[0, 1]]), "every feature must be in exactly one group"),
    (dict(groups=[[0], [0, 1, 2]]), "repeated"),
])
def test_model_game_rejects_bad_arguments(kwargs, match):
    x = np.zeros(3)
    bg = np.ones((4, 3)) if kwargs.pop("background", None) == "many" else np.ones(3)
    with pytest.raises(ValueError, match=match):
        fs.games.ModelGame(lambda Z: Z.sum(axis=1), x, bg, **kwargs)


def test_the_same_coalition_is_never_evaluated_twice_within_one_estimate(diabetes):
    model, X = diabetes
    seen = []

    def predict(frame):
        seen.extend(map(tuple, np.asarray(frame)))
        return model.predict(frame)

    g = fs.games.ModelGame(predict, X.iloc[0], background=X.iloc[1])
    fs.estimate(g, "shapley", method="kernelshap", budget=600, seed=0)     # with replacement: many repeats drawn
    assert len(seen) == len(set(seen))


# ----------------------------------------------------------------------------------------- explain
def test_explain_sklearn_pandas_multi_output(cancer):
    model, X = cancer
    e = fs.explain(model, X.iloc[:4], background=X.iloc[100:101], budget=400, seed=0, progress=False)
    assert e.values.shape == (4, 30, 2) and e.stderr.shape == (4, 30, 2)
    assert e.output_names == ["0", "1"] and e.player_names == list(X.columns)
    np.testing.assert_allclose(e.values.sum(axis=1)[:, 1],
                               model.predict_proba(X.iloc[:4])[:, 1] - model.predict_proba(X.iloc[100:101])[0, 1],
                               atol=1e-8)
    one = e[2]
    assert one.values.shape == (1, 30, 2)
    sub = e[["mean radius", "worst texture"]]
    assert sub.values.shape == (4, 2, 2) and sub.player_names == ["mean radius", "worst texture"]
    frame = e.to_frame()
    assert frame.shape[0] == 4 and "stderr:mean radius[1]" in frame.columns


def test_explain_is_reproducible_and_parallel_equals_serial(diabetes):
    model, X = diabetes
    a = fs.explain(model, X.iloc[:5], background=X.iloc[:20], budget=300, seed=3, progress=False)
    b = fs.explain(model, X.iloc[:5], background=X.iloc[:20], budget=300, seed=3, progress=False, n_jobs=2)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.method == "surrogate-regression" and a.info["imputation"] == "marginal"
    every = fs.explain(model, X.iloc[:5], background=X.iloc[:20], budget=300, seed=3, progress=False, n_jobs=-1)
    np.testing.assert_array_equal(every.values, a.values)              # -1: a thread per core (it was refused)


def test_explain_picks_exact_for_small_games_and_tree_models():
    X, y = load_diabetes(return_X_y=True)
    lin = LinearRegression().fit(X, y)
    e = fs.explain(lin, X[:3], background=X[:1], progress=False)
    assert e.method == "exact"
    np.testing.assert_allclose(e.values, lin.coef_ * (X[:3] - X[0]), atol=1e-9)
    xgb = pytest.importorskip("xgboost")
    model = xgb.XGBRegressor(n_estimators=20, max_depth=3).fit(X, y)
    tree = fs.explain(model, X[:5], progress=False)
    assert tree.method == "exact" and tree.info["tree_mode"] == "path-dependent"
    ref = fs.games.tree_values(model, X[:5], "shapley").values
    np.testing.assert_allclose(tree.values, ref)
    # pandas in, interventional with a background: the same values as the TreeGame
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(10)])
    inter = fs.explain(model, frame.iloc[:2], background=frame.iloc[10:20], index="banzhaf", progress=False)
    np.testing.assert_allclose(inter.values, fs.games.tree_values(model, X[:2], "banzhaf", mode="interventional",
                                                                   background=X[10:20]).values)


def test_explain_requires_a_background_for_other_models(diabetes):
    model, X = diabetes
    with pytest.raises(ValueError, match="background .* is required"):
        fs.explain(model, X.iloc[:2], progress=False)
    with pytest.raises(ValueError, match="background has 3 columns"):
        fs.explain(model, X.iloc[:2], background=np.zeros((1, 3)), progress=False)


def test_explanation_save_and_load(tmp_path, cancer):
    model, X = cancer
    e = fs.explain(model, X.iloc[:2], background=X.iloc[50:51], budget=200, seed=0, progress=False)
    back = fs.Explanation.load(e.save(tmp_path / "e.npz"))
    np.testing.assert_array_equal(back.values, e.values)
    np.testing.assert_array_equal(back.stderr, e.stderr)
    assert back.player_names == e.player_names and back.method == e.method


# ------------------------------------------------------------------------------------------- plots
@pytest.mark.parametrize("kind", ["bar", "waterfall", "beeswarm", "heatmap", "decision"])
def test_plots_render_to_png(tmp_path, cancer, kind):
    model, X = cancer
    e = fs.explain(model, X.iloc[:6], background=X.iloc[50:51], budget=200, seed=0, progress=False)
    ax = e.plot(kind)
    path = tmp_path / f"{kind}.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 5_000
    assert ax.get_yticklabels()                                       # feature labels drawn


@pytest.mark.parametrize("kind, kw", [("bar", {}), ("waterfall", {}), ("beeswarm", {}), ("heatmap", {}),
                                      ("decision", {}), ("dependence", {"feature": 0})])
def test_every_plot_draws_on_the_axes_it_is_given(cancer, kind, kw):
    import matplotlib.pyplot as plt

    model, X = cancer
    e = fs.explain(model, X.iloc[:8], background=X.iloc[50:51], budget=200, seed=0, progress=False)
    fig, given = plt.subplots()
    assert e.plot(kind, ax=given, **kw) is given and given.figure is fig
    plt.close(fig)


def test_dependence_decision_and_heatmap_draw_the_numbers(cancer):
    """Dependence: each row's feature value against its value, with the estimate's error bars, coloured by the
    strongest partner; decision: each line ends at the model's output; heatmap: the columns of the most
    important features, the rest summed."""
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(300, 4))
    tree = DecisionTreeRegressor(max_depth=6, random_state=0).fit(Xs, Xs[:, 0] * Xs[:, 2] + Xs[:, 1])
    e = fs.explain(tree, Xs[:120], progress=False)
    ax = fs.plots.dependence(e, 0)
    np.testing.assert_allclose(ax.collections[0].get_offsets(), np.column_stack([Xs[:120, 0], e.values[:, 0]]))
    assert ax.collections[0].get_label() == "coloured by x2"
    ax = fs.plots.decision(e, rows=[0, 5])
    ends = [line.get_xdata()[-1] for line in ax.lines[:2]]
    np.testing.assert_allclose(ends, tree.predict(Xs[[0, 5]]), atol=1e-9)
    image = fs.plots.heatmap(e, max_display=2).images[0].get_array()
    order = np.argsort(e.values.sum(axis=1), kind="stable")
    top = np.argsort(-np.abs(e.values).mean(axis=0), kind="stable")[:2]
    np.testing.assert_allclose(image[:, :2], e.values[order][:, top])
    np.testing.assert_allclose(image[:, 2], np.delete(e.values[order], top, axis=1).sum(axis=1))
    model, X = cancer                                   # estimated values: two-standard-error bars drawn
    est = fs.explain(model, X.iloc[:6], background=X.iloc[50:51], budget=200, seed=0, progress=False)
    bars = fs.plots.dependence(est, "mean radius", color=None).collections[0]
    assert est.stderr is not None and len(bars.get_segments()) == 6
    with pytest.raises(ValueError, match="feature 'nope' is not one of the players"):
        fs.plots.dependence(est, "nope")


def test_bar_and_beeswarm_sum_the_players_beyond_max_display_as_waterfall_does():
    """15 players, 10 shown: the other 5 are one entry, '5 other players', holding their summed values (bar: the
    sum of their mean |value|; beeswarm: each row's sum of their values), as waterfall and the HTML report do."""
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(30, 15)) * np.linspace(1, 3, 15)
    e = fs.Explanation(values=vals, stderr=None, empty_value=np.zeros(30), data=rng.random((30, 15)),
                       player_names=[f"f{i}" for i in range(15)], index="shapley")
    mean_abs = np.abs(vals).mean(axis=0)
    top = np.argsort(-mean_abs)[:10]
    rest = np.setdiff1d(np.arange(15), top)

    def ticks(ax):                                                   # tick label by its position on the y axis
        return {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}

    ax = fs.plots.bar(e)
    assert ticks(ax) == {0: "5 other players"} | {10 - k: f"f{i}" for k, i in enumerate(top)}
    widths = {ticks(ax)[round(p.get_y() + p.get_height() / 2)]: p.get_width() for p in ax.patches}
    assert widths["5 other players"] == pytest.approx(mean_abs[rest].sum())
    assert widths[f"f{top[0]}"] == pytest.approx(mean_abs[top[0]])
    ax = fs.plots.beeswarm(e)
    assert ticks(ax) == {0: "5 other players"} | {10 - k: f"f{i}" for k, i in enumerate(top)}
    rows = {round(float(np.mean(c.get_offsets()[:, 1]))): c.get_offsets()[:, 0] for c in ax.collections}
    np.testing.assert_allclose(rows[0], vals[:, rest].sum(axis=1))
    np.testing.assert_allclose(rows[10], vals[:, top[0]])
    assert "other players" not in " ".join(ticks(fs.plots.bar(e, max_display=15)).values())


def test_convergence_plot_renders(tmp_path):
    opaque = fs.games.FunctionGame(fs.games.SOUMGame.random(12, seed=0), n_players=12)   # no closed form
    ax = fs.plots.convergence(opaque, budgets=[50, 100, 200])
    errors = ax.lines[0].get_ydata()
    assert errors[0] > errors[-1]                                      # the estimated error falls with budget
    ax.figure.savefig(tmp_path / "c.png")


# -------------------------------------------------------------------------------------------- dask
def test_dask_cluster_gives_the_local_result(diabetes):
    distributed = pytest.importorskip("dask.distributed")
    model, X = diabetes
    local = fs.explain(model, X.iloc[:4], background=X.iloc[:10], budget=200, seed=7, progress=False)
    one_local = fs.explain(model, X.iloc[:1], background=X.iloc[:10], budget=200, seed=7, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = fs.explain(model, X.iloc[:4], background=X.iloc[:10], budget=200, seed=7, progress=False,
                            client=client)
        one_remote = fs.explain(model, X.iloc[:1], background=X.iloc[:10], budget=200, seed=7, progress=False,
                                client=client)
    np.testing.assert_array_equal(remote.values, local.values)
    np.testing.assert_array_equal(one_remote.values, one_local.values)   # one row: its coalitions on the cluster


# ------------------------------------------------------------------------------------------- cache
RUNNER = textwrap.dedent("""
    import os, sys, numpy as np
    from sklearn.datasets import load_diabetes
    from sklearn.neural_network import MLPRegressor
    import fairshare as fs
    X, y = load_diabetes(return_X_y=True)
    model = MLPRegressor(hidden_layer_sizes=(8,), max_iter=200, random_state=0).fit(X, y)
    calls = {"n": 0}
    def predict(Z):                           # the cache key holds the globals it reads: the limit is read inside
        calls["n"] += 1
        limit = int(os.environ.get("KILL_AFTER", "0"))
        if limit and calls["n"] > limit:
            os._exit(17)                      # killed mid-run: no cleanup, no exception handling
        return model.predict(Z)
    e = fs.explain(predict, X[:6], background=X[:3], budget=300, seed=1, cache=sys.argv[1], progress=False,
                   method="regression")
    np.save(sys.argv[2], e.values)
    print("calls", calls["n"])
""")


def test_an_interrupted_run_resumes_without_reevaluating(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(RUNNER)
    cache = tmp_path / "cache"
    env = {**os.environ, "KILL_AFTER": "10"}
    killed = subprocess.run([sys.executable, str(script), str(cache), str(tmp_path / "a.npy")], env=env,
                            capture_output=True, text=True)
    assert killed.returncode == 17, killed.stderr
    finished_rows = len(list((cache / "rows").glob("*.npz")))
    partial_chunks = [f for f in (cache / "coalitions").rglob("values.log") if f.stat().st_size > HEADER_BYTES]
    assert finished_rows >= 1 and partial_chunks                         # some rows done, one row half done
    resumed = subprocess.run([sys.executable, str(script), str(cache), str(tmp_path / "b.npy")],
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    fresh = subprocess.run([sys.executable, str(script), str(tmp_path / "fresh"), str(tmp_path / "c.npy")],
                           capture_output=True, text=True)
    calls_resumed = int(resumed.stdout.split()[-1])
    calls_fresh = int(fresh.stdout.split()[-1])
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), np.load(tmp_path / "c.npy"))
    assert calls_resumed == calls_fresh - 10      # the 10 calls made before the kill are not made again
    again = subprocess.run([sys.executable, str(script), str(cache), str(tmp_path / "d.npy")],
                           capture_output=True, text=True)
    assert int(again.stdout.split()[-1]) == 0                            # a finished run costs no model call


def test_cache_refuses_a_different_run(tmp_path, diabetes):
    model, X = diabetes
    fs.explain(model, X.iloc[:2], background=X.iloc[:2], budget=100, seed=0, cache=tmp_path, progress=False)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(model, X.iloc[:2], background=X.iloc[:2], budget=100, seed=1, cache=tmp_path, progress=False)


# --------------------------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    sio = pytest.importorskip("skops.io")
    joblib = pytest.importorskip("joblib")
    d = load_breast_cancer(as_frame=True)
    folder = tmp_path_factory.mktemp("cli")
    model = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(d.data, d.target)
    sio.dump(model, folder / "forest.skops")
    lin = LogisticRegression(max_iter=5000).fit(d.data, d.target)
    sio.dump(lin, folder / "logistic.skops")
    joblib.dump(lin, folder / "logistic.joblib")
    d.data.iloc[:30].to_csv(folder / "rows.csv", index=False)
    d.data.iloc[200:201].to_csv(folder / "bg.csv", index=False)
    d.data.iloc[:5].drop(columns=["mean radius"]).to_csv(folder / "missing.csv", index=False)
    d.data.iloc[:5].assign(extra=1.0).to_csv(folder / "extra.csv", index=False)
    (folder / "garbage.csv").write_bytes(b"\x00\x01\x02 not,a\n\"csv")
    (folder / "garbage.skops").write_bytes(b"PK\x03\x04 not a zip")
    return folder, d.data


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "fairshare.cli", *map(str, args)], capture_output=True, text=True)


def test_cli_explain_writes_values_and_a_plot(cli_files):
    folder, X = cli_files
    out, plot = folder / "values.csv", folder / "bee.png"
    r = _cli("explain", "--model", folder / "logistic.skops", "--data", folder / "rows.csv", "--rows", "0:4",
             "--background", folder / "bg.csv", "--index", "banzhaf", "--budget", "300", "--seed", "0",
             "--out", out, "--plot", plot, "--quiet")
    assert r.returncode == 0, r.stderr
    frame = pd.read_csv(out)
    assert list(frame["row"]) == [0, 1, 2, 3]
    assert "mean radius[1]" in frame.columns and "stderr:mean radius[1]" in frame.columns
    assert plot.stat().st_size > 5_000
    tree = _cli("explain", "--model", folder / "forest.skops", "--data", folder / "rows.csv", "--out",
                folder / "tree.csv", "--quiet")
    assert tree.returncode == 0 and "(exact)" in tree.stdout
    assert len(pd.read_csv(folder / "tree.csv")) == 30


@pytest.mark.parametrize("args, message", [
    (["--model", "{f}/nope.skops", "--data", "{f}/rows.csv", "--out", "{f}/o.csv"], "no such file"),
    (["--model", "{f}/rows.csv", "--data", "{f}/rows.csv", "--out", "{f}/o.csv"], "unknown model format '.csv'"),
    (["--model", "{f}/garbage.skops", "--data", "{f}/rows.csv", "--out", "{f}/o.csv"], "not a readable model file"),
    (["--model", "{f}/logistic.joblib", "--data", "{f}/rows.csv", "--out", "{f}/o.csv"], "--trust-model"),
    (["--model", "{f}/forest.skops", "--data", "{f}/missing.csv", "--out", "{f}/o.csv"], "missing ['mean radius']"),
    (["--model", "{f}/forest.skops", "--data", "{f}/extra.csv", "--out", "{f}/o.csv"], "unexpected ['extra']"),
    (["--model", "{f}/forest.skops", "--data", "{f}/garbage.csv", "--out", "{f}/o.csv"], "--data"),
    (["--model", "{f}/forest.skops", "--data", "{f}/rows.csv", "--out", "{f}/o.csv", "--rows", "x:y"], "--rows"),
    (["--model", "{f}/logistic.skops", "--data", "{f}/rows.csv", "--out", "{f}/o.csv"], "background"),
    (["--model", "{f}/forest.skops", "--data", "{f}/rows.csv", "--out", "{f}/o.csv", "--colour", "red"],
     "unrecognized arguments"),
    (["--model", "{f}/forest.skops", "--data", "{f}/rows.csv", "--out", "{f}/o.csv", "--method", "nope"],
     "--method must be one of"),
])
def test_cli_failures_are_one_line(cli_files, args, message):
    folder, _ = cli_files
    r = _cli("explain", *[a.format(f=folder) for a in args])
    assert r.returncode != 0
    assert r.stderr.startswith("fairshare: error:") and r.stderr.count("\n") == 1, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_explain_a_torch_module():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    X = np.random.default_rng(0).normal(size=(3, 5))
    bg = np.zeros(5)
    e = fs.explain(net, X, background=bg, seed=0, progress=False)
    assert e.method == "exact" and e.values.shape == (3, 5)                # 2^5 fits the default budget
    with torch.no_grad():
        f = net(torch.as_tensor(np.vstack([X, bg]), dtype=torch.float32)).numpy()[:, 0]
    np.testing.assert_allclose(e.values.sum(axis=1), f[:3] - f[3], atol=1e-5)   # efficiency on the net's output
    # a purely linear net: Shapley values are w_i (x_i - b_i)
    lin = torch.nn.Linear(5, 1)
    e = fs.explain(lin, X, background=bg, seed=0, progress=False)
    w = lin.weight.detach().numpy()[0]
    np.testing.assert_allclose(e.values, w * (X - bg), atol=1e-5)


def test_model_game_bounds_the_rows_per_call_for_wide_inputs():
    n = 4096
    sizes = []

    def predict(X):
        sizes.append(X.shape)
        return X[:, :5].sum(axis=1)

    g = fs.games.ModelGame(predict, np.ones(n), background=np.zeros(n))
    out = g(np.random.default_rng(0).random((10000, n)) < 0.5)
    assert out.shape == (10000,) and sum(s[0] for s in sizes) == 10000
    assert max(s[0] for s in sizes) == (1 << 24) // n                       # 4096 rows: 128 MB of float64


@pytest.mark.parametrize("as_frame", [True, False])
def test_a_float_background_of_integer_columns_is_not_truncated_to_the_rows_types(as_frame):
    """The model's frames mix the row's and the background's values: an integer column with a float background (a
    mean row) stays float, so the base value is the model at the background and the values are exact."""
    X = pd.DataFrame({"age": [20, 30, 40, 50, 61], "kids": [0, 1, 2, 3, 1]})
    model = LinearRegression().fit(X, 1.0 * X["age"] + 10 * X["kids"])
    background = X.mean().to_frame().T if as_frame else X.mean().to_numpy()[None, :]
    e = fs.explain(model, X.iloc[:2], background=background, progress=False)
    np.testing.assert_allclose(e.base_values, model.predict(pd.DataFrame(background, columns=X.columns))[0])
    exact = (X.iloc[:2].to_numpy() - np.asarray(background, dtype=float)) * model.coef_
    np.testing.assert_allclose(e.values, exact, atol=1e-9)


def test_background_categories_the_rows_dtype_lacks_are_kept():
    f = lambda D: (D["city"] == "c").to_numpy() * 10.0 + D["x"].to_numpy()  # noqa: E731
    X = pd.DataFrame({"x": [1.0, 2.0], "city": pd.Categorical(["a", "b"])})
    background = pd.DataFrame({"x": [0.0, 0.0], "city": pd.Categorical(["c", "c"])})
    e = fs.explain(f, X, background=background, progress=False)
    np.testing.assert_allclose(e.base_values, [10.0, 10.0])
    np.testing.assert_allclose(e.values, [[1.0, -10.0], [2.0, -10.0]])


def test_a_frames_integer_column_labels_reach_the_model_as_they_are():
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(20, 3)))
    f = lambda D: D[0].to_numpy() + 2 * D[1].to_numpy()  # noqa: E731
    e = fs.explain(f, X.iloc[:2], background=X.iloc[10:15], progress=False)
    exact = np.stack([X.iloc[:2, 0] - X.iloc[10:15, 0].mean(), 2 * (X.iloc[:2, 1] - X.iloc[10:15, 1].mean()),
                      np.zeros(2)], axis=1)
    np.testing.assert_allclose(e.values, exact, atol=1e-12)
    assert e.feature_names == ["0", "1", "2"]


def test_link_logit_refuses_a_regressor_before_any_call_and_outputs_that_are_no_probabilities():
    """Outputs outside [0, 1] were clipped to 1e-15: values of -69 for every row, base values 34.5."""
    X = pd.DataFrame({"a": np.linspace(-1, 1, 20), "b": np.linspace(0, 1, 20)})
    regressor = LinearRegression().fit(X, 10 * X["a"] + 5)
    with pytest.raises(ValueError, match="link='logit' explains probabilities, and LinearRegression is a regressor"):
        fs.explain(regressor, X.iloc[:3], background=X.iloc[5:15], link="logit", progress=False)
    with pytest.raises(ValueError, match="link='logit' explains probabilities, but the model returned"):
        fs.explain(lambda D: 10 * D["a"].to_numpy() + 5, X.iloc[:3], background=X.iloc[5:15], link="logit",
                   progress=False)


def test_a_seed_sequence_seeds_every_row_as_an_int_does():
    """SeedLike takes a SeedSequence; the rows' seeds were spawned from SeedSequence(seed), which raised."""
    X = np.random.default_rng(0).normal(size=(20, 12))
    f = lambda A: np.tanh(A.sum(axis=1)) * A[:, 0]  # noqa: E731
    runs = [fs.explain(f, X[:2], background=X[5:10], seed=np.random.SeedSequence(s), budget=60, progress=False).values
            for s in (5, 5, 6)]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_one_row_as_a_series_with_a_word_column_is_a_row_not_texts():
    """A frame's row with a string column (df.iloc[0]) was read as a list of texts and refused."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    df = pd.DataFrame({"city": ["Paris", "Lyon", "Nice", "Paris"], "age": [30.0, 40.0, 50.0, 60.0]})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["city"]), remainder="passthrough"),
                         LinearRegression()).fit(df, [1.0, 2.0, 3.0, 4.0])
    frame = fs.explain(pipe, df.iloc[[0]], background=df, progress=False)
    series = fs.explain(pipe, df.iloc[0], background=df, progress=False)
    np.testing.assert_allclose(series.values, frame.values)
    with pytest.raises(TypeError, match=r"X holds texts, but X\[1\] is NoneType"):
        fs.explain(lambda texts: np.zeros(len(texts)), ["a text", None], progress=False)


def test_a_tables_partition_given_as_a_word_other_than_correlation_is_refused():
    X = np.random.default_rng(0).normal(size=(20, 4))
    with pytest.raises(ValueError, match="partition of a table must be 'correlation'.*got 'sentences'"):
        fs.explain(lambda A: A.sum(axis=1), X[:2], background=X[5:10], index="owen", partition="sentences",
                   budget=40, progress=False)


def test_a_nullable_integer_column_holding_na_is_explained_as_its_float_twin():
    # hunt: <NA> in an Int64 column crashed the null-player check ("boolean value of NA is ambiguous")
    frame = pd.DataFrame({"i": pd.array([1, None, 3, 4], dtype="Int64"), "f": [0.1, 0.2, 0.3, 0.4],
                          "na": pd.array([None] * 4, dtype="Int64")})
    calls = []

    def model(d):
        calls.append(len(d))
        return d["f"].to_numpy(float) + d["i"].fillna(0).to_numpy(float)

    e = fs.explain(model, frame, background=frame.iloc[:2], progress=False, seed=0)
    # additive model, interventional imputation: value = own - mean over the background, <NA> read as 0
    np.testing.assert_allclose(e.values, [[0.5, -0.05, 0], [-0.5, 0.05, 0], [2.5, 0.15, 0], [3.5, 0.25, 0]], atol=1e-12)
    floats = frame.astype({"i": float, "na": float})
    twin = fs.explain(model, floats, background=floats.iloc[:2], progress=False, seed=0)
    assert np.array_equal(e.values, twin.values) and calls


class _CountedLinear(LinearRegression):
    """A linear regression (which refuses NaN) that counts its predict calls."""

    calls = 0

    def predict(self, X):
        type(self).calls += 1
        return super().predict(X)


def test_na_in_a_nullable_float_column_is_refused_before_any_model_call():
    # hunt15: pd.NA in a Float64 column reached the model as an object (check_finite saw no number there): row 0 was
    # explained with 2 model calls, then row 1 failed inside LinearRegression with "Input X contains NaN"
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    model = _CountedLinear().fit(X, X.to_numpy() @ [1.0, 2.0, 3.0])
    rows, background = X.iloc[:3].astype("Float64"), X.iloc[10:20].astype("Float64")
    rows.iloc[1, 1] = pd.NA
    _CountedLinear.calls = 0
    with pytest.raises(ValueError, match=r"X holds NaN at row 1, column 'b', and the model does not take missing"):
        fs.explain(model.predict, rows, background=X.iloc[10:20], progress=False)
    background.iloc[4, 2] = pd.NA
    with pytest.raises(ValueError, match=r"background holds NaN at row 4, column 'c'"):
        fs.explain(model.predict, X.iloc[:3], background=background, progress=False)
    assert _CountedLinear.calls == 0
    # without <NA>, the nullable frame gives the plain frame's values
    same = fs.explain(model.predict, X.iloc[:3].astype("Float64"), background=X.iloc[10:20], progress=False)
    plain = fs.explain(model.predict, X.iloc[:3], background=X.iloc[10:20], progress=False)
    np.testing.assert_allclose(same.values, plain.values, atol=1e-12)


def test_a_nullable_integer_column_with_a_float_background_is_explained_not_cast_back():
    # hunt15: the model's frames took x's Int64 dtype for a column whose background holds 0.5: every call failed
    # with "cannot safely cast non-equivalent object to int64" (a numpy int64 column with it was promoted to float)
    X = pd.DataFrame({"i": pd.array([1, 2, 3], dtype="Int64"), "f": [0.1, 0.2, 0.3]})
    background = pd.DataFrame({"i": [0.5, 1.5], "f": [0.0, 1.0]})
    seen = []

    def model(d):
        seen.append(str(d["i"].dtype))
        return d["i"].to_numpy(float) * 2.0 + d["f"].to_numpy(float)

    e = fs.explain(model, X, background=background, progress=False)
    # additive: 2 (i - mean 1.0) and f - mean 0.5, the background's 0.5 and 1.5 kept as they are
    np.testing.assert_allclose(e.values, [[0.0, -0.4], [2.0, -0.3], [4.0, -0.2]], atol=1e-12)
    assert set(seen) == {"Float64"}
    plain = fs.explain(model, X.astype({"i": "int64"}), background=background, progress=False)
    np.testing.assert_allclose(plain.values, e.values, atol=1e-12)


def test_a_structured_array_is_rows_of_its_fields_not_one_row_of_records():
    # hunt15: 2 records of 3 fields were explained as 1 row of 2 players 'x0', 'x1' (each player a whole record),
    # values of shape (1, 2) returned without a word
    fields = [("a", float), ("b", float), ("c", float)]
    X = np.array([(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)], dtype=fields)
    background = np.array([(0.0, 0.0, 0.0), (1.0, 1.0, 1.0)], dtype=fields)

    def model(rows):
        rows = np.asarray(rows, dtype=float)
        return rows[:, 0] + 2.0 * rows[:, 1] * rows[:, 2]

    e = fs.explain(model, X, background=background, progress=False)
    plain = fs.explain(model, pd.DataFrame(X), background=pd.DataFrame(background), progress=False)
    assert e.values.shape == (2, 3) and e.player_names == ["a", "b", "c"]
    np.testing.assert_allclose(e.values, plain.values, atol=1e-12)
    np.testing.assert_allclose(e.values.sum(axis=1), model(pd.DataFrame(X)) - np.mean(model(pd.DataFrame(background))))
    with pytest.raises(ValueError, match=r"x is a numpy structured array \(fields \['a', 'b', 'c'\]\)"):
        fs.games.ModelGame(model, X[:1], background)


@pytest.mark.parametrize("where, rows", [("X", [[1.0, 2.0, 3.0], [1.0, 2.0]]), ("background", [[0.0, 0.0, 0.0], [1.0, 2.0]]),
                                         ("background", [[0.0, 0.0, 0.0], [1.0, [2.0], 3.0]])])
def test_ragged_rows_are_refused_naming_the_argument(where, rows):
    # hunt15: numpy's 'setting an array element with a sequence ... inhomogeneous shape' came out, naming neither
    # X nor background
    calls = []
    args = {"X": np.zeros((2, 3)), "background": np.zeros((1, 3)), where: rows}
    with pytest.raises(ValueError, match=f"^{where} must be rows of one value per feature: its rows are not all of "
                                         "one length, or a cell holds a sequence$"):
        fs.explain(lambda A: calls.append(1) or np.asarray(A).sum(axis=1), args["X"], background=args["background"],
                   progress=False)
    assert not calls


def test_a_pyarrow_table_is_explained_as_its_pandas_frame():
    # hunt15: a pyarrow Table (as a polars DataFrame) was read through its .columns, the ChunkedArrays' printouts:
    # "background columns do not match the columns of X: missing ['[\n  [\n    0.1257...'"
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(6, 3)), columns=["a", "b", "c"])
    table = pa.Table.from_pandas(frame)

    def model(rows):
        return np.asarray(rows, dtype=float) @ [1.0, 2.0, 3.0]

    e = fs.explain(model, table.slice(0, 2), background=table.slice(2, 4), progress=False)
    plain = fs.explain(model, frame.iloc[:2], background=frame.iloc[2:], progress=False)
    assert e.player_names == ["a", "b", "c"]
    np.testing.assert_allclose(e.values, plain.values, atol=1e-12)
    np.testing.assert_allclose(e.values, (frame.iloc[:2] - frame.iloc[2:].mean()).to_numpy() * [1.0, 2.0, 3.0])


@pytest.mark.parametrize("X", [np.zeros((2, 0)), pd.DataFrame(index=[0, 1])])
def test_rows_without_columns_are_refused_naming_x(X):
    # hunt15: 'n_players must be >= 1, got 0' named neither X nor what was wrong with it
    with pytest.raises(ValueError, match=r"^X has 2 rows but no columns: no features to explain$"):
        fs.explain(lambda A: np.zeros(len(A)), X, background=np.zeros((1, 0)), progress=False)


def test_a_list_of_records_is_rows_of_their_keys_not_one_player_holding_each_dict():
    # hunt15: [{'a': 1., 'b': 2.}, ...] was explained as rows of ONE player 'x0' whose value is the whole dict (the
    # model was called with an object array of dicts), without a word
    calls = []

    def model(rows):
        calls.append(type(rows).__name__)
        return rows["a"].to_numpy(float) * 2.0 + rows["b"].to_numpy(float)

    e = fs.explain(model, [{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 1.0}], background=[{"a": 0.0, "b": 0.5}],
                   progress=False)
    assert e.player_names == ["a", "b"] and set(calls) == {"DataFrame"}
    np.testing.assert_allclose(e.values, [[2.0, 1.5], [6.0, 0.5]], atol=1e-12)
