import subprocess
import sys

import numpy as np
import pytest

import fairshare as fs
from fairshare.cli import main
from fairshare.engine.registry import method_names


def test_methods_command_lists_every_method(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for name in method_names():
        assert name in out
    assert "any semivalue" in out and "allow_large=False" in out


def test_demo_prints_a_table_for_every_method(capsys):
    assert main(["demo", "--budget", "200"]) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| method")]
    listed = {(r.split("|")[1].strip(), r.split("|")[2].strip()) for r in rows}
    expected = {(m, i) for m in method_names() for i in ("shapley", "banzhaf")
                if fs.engine.registry.get_method(m).supports(fs.indices.semivalues.resolve_index(i))
                and not fs.engine.registry.get_method(m).requires}
    assert listed == expected
    for r in rows:
        cells = [c.strip() for c in r.split("|")[1:-1]]
        evaluations, error = int(cells[2]), float(cells[3])
        if cells[0] == "exact":
            assert evaluations == 1024 and error == 0.0
        else:
            need = fs.engine.registry.get_method(cells[0]).budget_needed(fs.games.AdditiveGame(np.ones(10)),
                                                                   fs.indices.semivalues.resolve_index(cells[1]))
            assert evaluations <= max(200, need) and error < 0.2


def test_errors_are_one_line_and_non_zero(capsys):
    assert main(["demo", "--budget", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fairshare: error: --budget 3 is too small") and err.count("\n") == 1


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "fairshare.cli", "methods"], capture_output=True, text=True)
    assert result.returncode == 0 and "permutation" in result.stdout


def test_explain_texts_writes_one_row_per_token_html_and_plot(tmp_path, capsys):
    import pandas as pd
    import skops.io as sio
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    corpus = ["win a free prize now", "free cash, click now", "meeting on monday", "see the attached report"]
    model = make_pipeline(TfidfVectorizer(), LogisticRegression(C=10.0)).fit(corpus, [1, 1, 0, 0])
    sio.dump(model, tmp_path / "m.skops")
    (tmp_path / "texts.txt").write_text("free prize, see you\\nmonday\n\nclaim now\n", encoding="utf-8")
    out, html, png = tmp_path / "v.csv", tmp_path / "t.html", tmp_path / "t.png"
    assert main(["explain", "--model", str(tmp_path / "m.skops"), "--texts", str(tmp_path / "texts.txt"),
                 "--out", str(out), "--html", str(html), "--plot", str(png), "--quiet", "--seed", "1"]) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["text", "position", "token", "value_0", "stderr_0", "value_1", "stderr_1"]
    assert frame.groupby("text").size().to_dict() == {0: 6, 2: 2}        # text i is line i; line 1 is empty
    assert frame.token.tolist()[:6] == ["free", "prize", ",", "see", "you", "monday"]
    with pytest.warns(fs.FairshareWarning, match=r"texts\[1\] is empty"):
        direct = fs.explain(model, ["free prize, see you\nmonday", "", "claim now"], seed=1, progress=False)
    np.testing.assert_allclose(frame.value_1.to_numpy(), np.concatenate([e.values[0, :, 1] for e in direct]))
    assert html.read_text(encoding="utf-8").count("<span") == 8 and png.stat().st_size > 1000
    assert "explained 3 texts, 8 tokens" in capsys.readouterr().out
    assert main(["explain", "--model", str(tmp_path / "m.skops"), "--texts", str(tmp_path / "texts.txt"),
                 "--out", str(out), "--index", "owen", "--partition", "[[0, 1]]", "--overwrite"]) == 2
    assert "partition" in capsys.readouterr().err


def test_explain_writes_the_html_report_of_its_rows(tmp_path, capsys):
    import json

    import pandas as pd
    import skops.io as sio
    from sklearn.linear_model import LinearRegression

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(30, 3)), columns=["a", "</script>", "c"])
    sio.dump(LinearRegression().fit(X, 2 * X["a"] - X["</script>"]), tmp_path / "m.skops")
    X.iloc[:5].to_csv(tmp_path / "rows.csv", index=False)
    X.iloc[5:15].to_csv(tmp_path / "bg.csv", index=False)
    out, report = tmp_path / "v.csv", tmp_path / "report.html"
    assert main(["explain", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "rows.csv"), "--background",
                 str(tmp_path / "bg.csv"), "--out", str(out), "--html", str(report), "--quiet", "--seed", "0"]) == 0
    assert f"report {report}" in capsys.readouterr().out
    page = report.read_text(encoding="utf-8")
    data = page.split("<script type='application/json' id='fs-data'>")[1].split("</script>")[0]
    payload = json.loads(data)
    frame = pd.read_csv(out)
    assert payload["players"] == ["a", "</script>", "c"]
    np.testing.assert_allclose(payload["values"], frame[["a", "</script>", "c"]].to_numpy(), rtol=5e-6)
    np.testing.assert_allclose(np.array(payload["values"])[:, 0], 2 * (X["a"][:5] - X["a"][5:15].mean()), rtol=5e-6)
    assert "scikit-learn " in page and "<th>seed</th><td>0</td>" in page           # the model's library, the seed


def test_bench_help_names_every_benchmark_that_takes_a_device():
    # hunt: --device's help named trees and highdim, while deep and highdim_cnn take --device cuda too
    import argparse
    import ast
    from pathlib import Path

    from fairshare.cli import build_parser

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    takes = sorted(p.stem for p in folder.glob("*.py") for node in ast.parse(p.read_text()).body
                   if isinstance(node, ast.FunctionDef) and node.name == "main"
                   and "device" in [a.arg for a in node.args.args + node.args.kwonlyargs])
    bench = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["bench"]
    said = next(a.help for a in bench._actions if "--device" in a.option_strings)
    assert {"deep", "trees", "highdim"} <= set(takes)
    assert all(name in said for name in takes), (takes, said)
