"""The command line under hostile and careless use (issue 44, items 2, 4 and 11): no code runs from the current
folder or from a pickle unless asked, model files that hold no code are read, inputs are never overwritten, texts
split only at line breaks, and every mistake is one line naming its flag, found before any work."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairshare as fs
from fairshare.cli import main
from fairshare.cli.files import read_texts

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fairshare", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


class _Marker:
    """A pickle that, when loaded, writes a file (what any code in a pickle could do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path(self.path).write_text, ("ran",))


# ------------------------------------------------------------------------------------------- bench
def _bench_folder(folder: Path, marker: Path, name: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "common.py").write_text(f"open({str(marker)!r}, 'a').write('common imported\\n')\n")
    (folder / f"{name}.py").write_text(
        "from . import common\n"
        f"def main(size, seeds, out):\n    open({str(marker)!r}, 'a').write('{name} ran\\n')\n")
    return folder


def test_bench_never_imports_benchmarks_from_the_current_folder(tmp_path):
    marker = tmp_path / "marker.txt"
    _bench_folder(tmp_path / "benchmarks", marker, "evil")
    shadow = _bench_folder(tmp_path / "other" / "benchmarks", marker, "shapley")
    result = _run(["bench", "evil", "--size", "quick"], cwd=tmp_path)
    assert result.returncode == 2 and "unknown benchmark 'evil'" in result.stderr
    result = _run(["bench", "nothing"], cwd=shadow.parent)      # a 'shapley' there: still the project's list
    assert result.returncode == 2 and "unknown benchmark 'nothing'" in result.stderr
    assert not marker.exists()


def test_bench_runs_a_folder_given_explicitly(tmp_path):
    marker = tmp_path / "marker.txt"
    folder = _bench_folder(tmp_path / "mine", marker, "tiny")
    assert _run(["bench", "tiny", "--benchmarks", folder], cwd=tmp_path).returncode == 0
    assert marker.read_text().splitlines() == ["common imported", "tiny ran"]
    result = _run(["bench", "tiny", "--benchmarks", tmp_path / "nowhere"], cwd=tmp_path)
    assert result.returncode == 2 and "--benchmarks" in result.stderr and "not a benchmarks folder" in result.stderr


# ---------------------------------------------------------------------------------------- model files
@pytest.fixture(scope="module")
def table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("safe")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(120, 4)), columns=["a", "b", "c", "d"])
    y = X.a + 2 * X.b * (X.c > 0) + 0.1 * rng.normal(size=120)
    X.iloc[:5].to_csv(folder / "rows.csv", index=False)
    X.iloc[50:70].to_csv(folder / "bg.csv", index=False)
    return folder, X, y


def _direct(model, X: pd.DataFrame) -> np.ndarray:
    e = fs.explain(model, X.iloc[:5], background=X.iloc[50:70], budget=64, seed=0, progress=False)
    return e.to_frame().reset_index().drop(columns=["row"]).to_numpy()


def test_pickles_are_refused_without_trust_and_their_code_does_not_run(table, tmp_path):
    folder, _, _ = table
    marker = tmp_path / "ran.txt"
    with open(tmp_path / "evil.joblib", "wb") as fh:
        pickle.dump(_Marker(str(marker)), fh)
    code = main(["explain", "--model", str(tmp_path / "evil.joblib"), "--data", str(folder / "rows.csv"),
                 "--out", str(tmp_path / "o.csv"), "--quiet"])
    assert code == 2 and not marker.exists()
    main(["explain", "--model", str(tmp_path / "evil.joblib"), "--data", str(folder / "rows.csv"), "--out",
          str(tmp_path / "o.csv"), "--quiet", "--trust-model"])
    assert marker.read_text() == "ran"                                # asked for: it is read (and runs)


@pytest.mark.parametrize("kind", ["xgboost-json", "xgboost-ubj", "xgboost-classifier", "lightgbm", "catboost",
                                  "skops", "torchscript", "torch-export"])
def test_model_files_that_hold_no_code_are_read_and_explained_as_the_model_itself(table, tmp_path, kind):
    folder, X, y = table
    if kind.startswith("xgboost"):
        xgb = pytest.importorskip("xgboost")
        if kind == "xgboost-classifier":
            model = xgb.XGBClassifier(n_estimators=10, max_depth=3).fit(X, (y > 0).astype(int))
        else:
            model = xgb.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y)
        path = tmp_path / ("m.ubj" if kind == "xgboost-ubj" else "m.json")
        model.save_model(path)
    elif kind == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        model = lgb.LGBMRegressor(n_estimators=10, verbose=-1).fit(X, y)
        path = tmp_path / "m.txt"
        model.booster_.save_model(path)
    elif kind == "catboost":
        cb = pytest.importorskip("catboost")
        model = cb.CatBoostClassifier(iterations=10, depth=3, verbose=0, allow_writing_files=False).fit(X, y > 0)
        path = tmp_path / "m.cbm"
        model.save_model(path)
    elif kind == "skops":
        sio = pytest.importorskip("skops.io")
        from sklearn.ensemble import RandomForestRegressor

        model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
        path = tmp_path / "m.skops"
        sio.dump(model, path)
    else:
        torch = pytest.importorskip("torch")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        if kind == "torchscript":
            path = tmp_path / "m.pt"
            torch.jit.save(torch.jit.script(model), path)
        else:
            path = tmp_path / "m.pt2"
            program = torch.export.export(model, (torch.zeros(3, 4),), dynamic_shapes=({0: torch.export.Dim("rows")},))
            torch.export.save(program, path)
    out = tmp_path / "o.csv"
    code = main(["explain", "--model", str(path), "--data", str(folder / "rows.csv"), "--background",
                 str(folder / "bg.csv"), "--budget", "64", "--out", str(out), "--quiet"])
    assert code == 0
    frame = pd.read_csv(out).drop(columns=["row"]).to_numpy()
    np.testing.assert_allclose(frame, _direct(model, X), rtol=1e-6, atol=1e-6)


def test_a_torch_state_dict_is_refused_with_the_way_out(table, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    folder, _, _ = table
    torch.save(torch.nn.Linear(4, 1).state_dict(), tmp_path / "w.pt")
    assert main(["explain", "--model", str(tmp_path / "w.pt"), "--data", str(folder / "rows.csv"), "--out",
                 str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "state dict" in err and "--architecture" in err


_NET = """
import torch


class Net(torch.nn.Sequential):
    def __init__(self):
        super().__init__(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def wide():
    return torch.nn.Sequential(torch.nn.Linear(4, 9), torch.nn.Tanh(), torch.nn.Linear(9, 1))
"""


@pytest.mark.parametrize("spec", ["file", "module"])
def test_a_state_dict_is_read_into_the_architecture_named(table, tmp_path, monkeypatch, spec):
    torch = pytest.importorskip("torch")
    folder, X, _ = table
    (tmp_path / "fs_cli_net.py").write_text(_NET)
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    torch.save(model.state_dict(), tmp_path / "w.pt")
    if spec == "module":
        monkeypatch.syspath_prepend(str(tmp_path))
    architecture = f"{tmp_path / 'fs_cli_net.py'}:Net" if spec == "file" else "fs_cli_net:Net"
    out = tmp_path / "o.csv"
    assert main(["explain", "--model", str(tmp_path / "w.pt"), "--architecture", architecture, "--data",
                 str(folder / "rows.csv"), "--background", str(folder / "bg.csv"), "--budget", "64", "--out",
                 str(out), "--quiet"]) == 0
    values = pd.read_csv(out).drop(columns=["row"]).to_numpy()
    np.testing.assert_allclose(values, _direct(model.eval(), X), rtol=1e-6, atol=1e-6)
    assert np.abs(values).max() > 1e-3                                 # the trained weights, not fresh ones


@pytest.mark.parametrize("case, what", [
    ("weights of another network", "does not fit --architecture"),
    ("a pickled module", "not a state dict of tensors"),
    ("no such name", "has no class or function 'Nope'"),
    ("not a network", "not a torch.nn.Module"),
    ("no colon", "must be MODULE:NAME or FILE.py:NAME"),
])
def test_a_state_dict_that_does_not_fit_is_one_line_naming_the_flag(table, tmp_path, capsys, case, what):
    torch = pytest.importorskip("torch")
    folder, _, _ = table
    net = tmp_path / "net.py"
    net.write_text(_NET + "\n\ndef number():\n    return 3\n")
    marker = tmp_path / "ran.txt"
    weights, name = tmp_path / "w.pt", "Net"
    torch.save(torch.nn.Linear(4, 1).state_dict(), weights)
    if case == "weights of another network":
        name = "wide"
        torch.save(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).state_dict(),
                   weights)
    elif case == "a pickled module":
        torch.save({"w": _Marker(str(marker))}, weights)
    elif case == "no such name":
        name = "Nope"
    elif case == "not a network":
        name = "number"
    spec = f"{net}" if case == "no colon" else f"{net}:{name}"
    out = tmp_path / "o.csv"
    assert main(["explain", "--model", str(weights), "--architecture", spec, "--data", str(folder / "rows.csv"),
                 "--background", str(folder / "bg.csv"), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert what in err and len(err.splitlines()) == 1 and not out.exists() and not marker.exists()


# ------------------------------------------------------------------------------------- files and paths
def _saved_linear(folder: Path) -> Path:
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LinearRegression

    X = pd.read_csv(folder / "rows.csv")
    path = folder / "lin.skops"
    if not path.exists():
        sio.dump(LinearRegression().fit(X, X.to_numpy() @ [1.0, 2.0, 0.0, -1.0]), path)
    return path


@pytest.mark.parametrize("out_is", ["--data", "--background", "--model"])
def test_the_output_never_overwrites_an_input(table, capsys, out_is):
    folder, _, _ = table
    model = _saved_linear(folder)
    paths = {"--model": model, "--data": folder / "rows.csv", "--background": folder / "bg.csv"}
    before = paths[out_is].read_bytes()
    assert main(["explain", "--model", str(model), "--data", str(paths["--data"]), "--background",
                 str(paths["--background"]), "--out", str(paths[out_is]), "--overwrite", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"is the {out_is} file" in err
    assert paths[out_is].read_bytes() == before


def test_an_existing_output_is_kept_unless_overwrite_is_given(table, tmp_path, capsys):
    folder, _, _ = table
    model = _saved_linear(folder)
    out = tmp_path / "values.csv"
    out.write_text("precious\n")
    args = ["explain", "--model", str(model), "--data", str(folder / "rows.csv"), "--background",
            str(folder / "bg.csv"), "--out", str(out), "--quiet"]
    assert main(args) == 2 and "exists already; pass --overwrite" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    assert main(args + ["--overwrite"]) == 0 and len(pd.read_csv(out)) == 5


def test_texts_split_only_at_line_breaks(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("one\fpage\r\ntwo\u2028lines\nthree\x0bfour\nlast".encode())
    assert read_texts(str(path)) == ["one\fpage", "two\u2028lines", "three\x0bfour", "last"]


@pytest.mark.parametrize("case, message", [
    ("rows past the end", "--rows 99 is past the end: there are 5 rows (0..4)"),
    ("slice past the end", "--rows 2:9 is past the end"),
    ("string cell", "--data"),
    ("out in a missing folder", "--out"),
    ("plot in a missing folder", "--plot"),
    ("plot without an image suffix", "--plot"),
    ("plot in a format matplotlib cannot write", "--plot"),
    ("a row with one field more than the header", "line 2 has 5 fields where the header has 4"),
    ("a row with one field fewer", "line 4 has 3 fields where the header has 4"),
])
def test_mistakes_are_one_line_naming_the_flag_and_found_before_the_model_is_read(table, tmp_path, capsys, case,
                                                                                    message):
    folder, X, _ = table
    marker = tmp_path / "model-read.txt"
    with open(tmp_path / "m.joblib", "wb") as fh:                  # reading the model leaves a mark
        pickle.dump(_Marker(str(marker)), fh)
    args = {"--model": tmp_path / "m.joblib", "--data": folder / "rows.csv", "--background": folder / "bg.csv",
            "--out": tmp_path / "o.csv"}
    extra: list = []
    if case == "rows past the end":
        extra = ["--rows", "99"]
    elif case == "slice past the end":
        extra = ["--rows", "2:9"]
    elif case == "string cell":
        bad = X.iloc[:5].astype(object)
        bad.iloc[3, 1] = "oops"
        bad.to_csv(tmp_path / "bad.csv", index=False)
        args["--data"] = tmp_path / "bad.csv"
        message = "--data"
    elif case == "out in a missing folder":
        args["--out"] = tmp_path / "nowhere" / "o.csv"
    elif case == "plot in a missing folder":
        extra = ["--plot", str(tmp_path / "nowhere" / "p.png")]
    elif case.startswith("plot"):                                # savefig would add .png, or fail after the CSV
        extra = ["--plot", str(tmp_path / ("p" if "suffix" in case else "p.xyz"))]
    elif case.startswith("a row with"):                         # R's write.table with row names: one field more
        lines = (folder / "rows.csv").read_text().splitlines()
        if "more" in case:                                      # every row named, as R writes them
            lines = lines[:1] + [f"r{i},{line}" for i, line in enumerate(lines[1:])]
        else:
            lines[3] = lines[3].rsplit(",", 1)[0]
        (tmp_path / "ragged.csv").write_text("\n".join(lines) + "\n")
        args["--data"] = tmp_path / "ragged.csv"
    code = main(["explain", *[str(t) for kv in args.items() for t in kv], "--quiet", "--trust-model", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err
    if case == "string cell":
        assert "column 'b' holds 'oops' in row 3" in err
    assert not marker.exists() and not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("where", ["--data", "--background"])
def test_a_column_of_words_for_a_tree_model_is_refused_naming_the_file(table, tmp_path, capsys, where):
    """A tree model reads its rows itself (categorical splits take words): a column of words it cannot read was
    refused as "x column 'b' ..." (the name of one row's game), with no flag; at the Python door it names X."""
    xgboost = pytest.importorskip("xgboost")
    folder, X, y = table
    model = tmp_path / "m.json"
    xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(X, y).save_model(model)
    words = X.iloc[:5].assign(b="high")
    words.to_csv(tmp_path / "words.csv", index=False)
    files = {"--data": folder / "rows.csv", "--background": folder / "bg.csv", where: tmp_path / "words.csv"}
    code = main(["explain", "--model", str(model), *[str(t) for kv in files.items() for t in kv], "--out",
                 str(tmp_path / "o.csv"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    said = "column 'b' holds str values that are not numbers" if where == "--data" else \
        "holds 'high' at row 0, column 'b', where X holds numbers"              # words under X's numbers: refused first
    assert f"{where} {tmp_path / 'words.csv'} {said}" in err, err
    loaded = xgboost.XGBRegressor()
    loaded.load_model(model)
    with pytest.raises(ValueError, match="^X column 'b' holds str values"):
        fs.explain(loaded, words, progress=False)


def test_a_warning_is_one_line_naming_the_file_and_line(tmp_path, capsys):
    """An empty line of --texts was warned about as "texts[2] is empty" under the source line of the call, Python's
    own display of a warning."""
    pytest.importorskip("skops")
    import skops.io as sio
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(["good", "bad", "good film", "bad film"],
                                                                     [1, 0, 1, 0])
    sio.dump(model, tmp_path / "m.skops")
    (tmp_path / "t.txt").write_text("a good film\n\nbad\n")
    assert main(["explain", "--model", str(tmp_path / "m.skops"), "--texts", str(tmp_path / "t.txt"), "--out",
                 str(tmp_path / "o.csv"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == f"fairshare: warning: --texts {tmp_path / 't.txt'} line 2 is empty: it has no tokens, its " \
                  "explanation has no players\n", err


def test_a_library_message_that_opens_with_a_line_break_is_shown_by_its_first_line():
    from fairshare.cli import one_line

    assert one_line(ValueError("\nx^\n ^\nParseSyntaxException")) == "x^"
    assert one_line(RuntimeError("")) == "RuntimeError"


def test_the_pixels_file_is_the_npy_named_and_the_baseline_file_is_an_input(tmp_path, capsys):
    """np.save appends .npy: --pixels out/copy wrote out/copy.npy, which could be the --images file itself."""
    images = tmp_path / "imgs.npy"
    np.save(images, np.zeros((2, 3, 8, 8), dtype=np.float32))
    args = ["explain", "--model", str(tmp_path / "net.pt"), "--images", str(images), "--out", str(tmp_path / "o.csv"),
            "--quiet"]
    assert main(args + ["--pixels", str(tmp_path / "imgs")]) == 2
    assert "--pixels" in capsys.readouterr().err and np.load(images).shape == (2, 3, 8, 8)
    baseline = tmp_path / "base.npy"
    np.save(baseline, np.zeros((3, 8, 8), dtype=np.float32))
    assert main(args + ["--baseline", str(baseline), "--pixels", str(baseline), "--overwrite"]) == 2
    assert "is the --baseline file" in capsys.readouterr().err


def test_a_byte_order_mark_in_a_texts_file_is_no_token(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufefffree prize now\nsee you monday\n".encode())
    assert read_texts(str(path)) == ["free prize now", "see you monday"]


@pytest.mark.parametrize("args, message", [
    (["demo", "--seed", "-1"], "--seed must be an integer in 0..4294967295, got -1"),
    (["bench", "engine", "--size", "quick", "--seeds", "0"], "--seeds must be >= 1, got 0"),
])
def test_the_seeds_of_demo_and_bench_are_checked_before_any_work(capsys, args, message):
    assert main(args) == 2 and message in capsys.readouterr().err


def test_bench_out_that_is_a_file_is_refused_before_the_benchmark_runs(tmp_path, capsys):
    out = tmp_path / "reports"
    out.write_text("x\n")
    assert main(["bench", "engine", "--size", "quick", "--out", str(out)]) == 2
    assert "is a file; give the folder the reports go to" in capsys.readouterr().err


@pytest.mark.parametrize("name, content", [("bad.json", "garbage\n"), ("bad.pt2", "garbage\n")])
def test_a_corrupt_model_file_is_one_line_saying_so(table, tmp_path, capsys, name, content):
    if name.endswith(".pt2"):
        pytest.importorskip("torch")
    folder, _, _ = table
    (tmp_path / name).write_text(content)
    code = main(["explain", "--model", str(tmp_path / name), "--data", str(folder / "rows.csv"), "--out",
                 str(tmp_path / "o.csv"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not a readable model file" in err, err


def test_value_data_refuses_a_fitted_booster_file_it_cannot_refit(tmp_path, capsys):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    frame = X.assign(label=(X.a > 0).astype(int))
    frame.iloc[:30].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[30:].to_csv(tmp_path / "val.csv", index=False)
    lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, frame.label).booster_.save_model(str(tmp_path / "m.txt"))
    code = main(["value-data", "--model", str(tmp_path / "m.txt"), "--train", str(tmp_path / "train.csv"), "--val",
                 str(tmp_path / "val.csv"), "--target", "label", "--budget", "20", "--out", str(tmp_path / "v.csv"),
                 "--quiet"])
    assert code == 2 and "holds a fitted Booster, which cannot be refitted" in capsys.readouterr().err
