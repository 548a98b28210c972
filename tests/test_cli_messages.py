"""The command line speaks of what the user gave it: rows and lines numbered as in the file (not in the ``--rows``
selection), flags as typed (not the Python arguments of the library), every flag once and spelled out, columns
named and read as written; and a mistake is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairshare.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    sio = pytest.importorskip("skops.io")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline

    folder = tmp_path_factory.mktemp("cli_messages")
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(10, 3)), columns=["a", "b", "c"])
    sio.dump(LinearRegression().fit(X, X.a - X.b), folder / "lin.skops")
    X.to_csv(folder / "rows.csv", index=False)
    texts = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(["good", "bad", "good film", "bad film"],
                                                                        [1, 0, 1, 0])
    sio.dump(texts, folder / "texts.skops")
    (folder / "t.txt").write_text("a good film\nbad\nok\n\nbad film\n", encoding="utf-8")
    return folder


def _explain(folder: Path, *args: object) -> list[str]:
    return ["explain", "--out", str(folder / "o.csv"), "--quiet", "--overwrite", *map(str, args)]


# ---------------------------------------------------------------------------- rows and lines of the file
@pytest.mark.parametrize("value, said", [(np.inf, "holds inf at row 7, column 'b'"),
                                         (np.nan, "holds NaN at row 7, column 'b'")])
def test_a_bad_value_is_named_by_its_row_in_the_file_not_in_the_rows_picked(files, tmp_path, capsys, value, said):
    """With --rows 5:10 the value in the file's row 7 was reported "at row 2" (its place among the rows picked)."""
    bad = pd.read_csv(files / "rows.csv")
    bad.iloc[7, 1] = value
    bad.to_csv(tmp_path / "bad.csv", index=False)
    assert main(_explain(tmp_path, "--model", files / "lin.skops", "--data", tmp_path / "bad.csv", "--background",
                         files / "rows.csv", "--rows", "5:10")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fairshare: error: --data {tmp_path / 'bad.csv'} {said}"), err


def test_an_empty_text_is_named_by_its_line_in_the_file_not_in_the_rows_picked(files, tmp_path, capsys):
    """Line 4 of the file is empty; with --rows 2:5 it was warned about as line 2 (the second text picked)."""
    assert main(_explain(tmp_path, "--model", files / "texts.skops", "--texts", files / "t.txt", "--rows",
                         "2:5")) == 0
    err = capsys.readouterr().err
    assert err == f"fairshare: warning: --texts {files / 't.txt'} line 4 is empty: it has no tokens, its " \
                  "explanation has no players\n", err
    assert pd.read_csv(tmp_path / "o.csv").text.unique().tolist() == [2, 4]       # the CSV: the file's texts too


def test_a_text_without_tokens_is_named_by_its_line_in_the_file(files, tmp_path, capsys):
    """The tokenizer found no token in line 3 ("ok"), picked first by --rows 2:5: it was "texts[0]"."""
    assert main(_explain(tmp_path, "--model", files / "texts.skops", "--texts", files / "t.txt", "--rows", "2:5",
                         "--tokenizer", "x+")) == 2
    err = capsys.readouterr().err
    assert err == f"fairshare: error: --tokenizer found no tokens in --texts {files / 't.txt'} line 3 ('ok'); " \
                  "give a tokenizer whose matches cover the text's words\n", err


def test_a_model_that_fails_on_a_text_is_named_by_its_line_in_the_file(files, tmp_path, capsys, monkeypatch):
    """The model's NaN on the first text picked by --rows 2:5 (line 3) was reported on "text 0"."""
    import fairshare.cli.explain as cli_explain

    def words(texts):                                       # NaN where a text has lost every word
        return np.array([1.0 / len(t.split()) if t.split() else np.nan for t in texts])

    monkeypatch.setattr(cli_explain, "_model", lambda args: words)
    assert main(_explain(tmp_path, "--model", files / "texts.skops", "--texts", files / "t.txt", "--rows",
                         "2:5")) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"fairshare: error: --texts {files / 't.txt'} line 3: the model returned NaN or " \
                                   "inf for 1 of 2 coalitions; e.g. coalition {} gave nan", err


# ------------------------------------------------------------------------------------ checked before any work
def test_a_plot_of_texts_without_tokens_is_refused_before_the_model_is_read_and_anything_written(files, tmp_path,
                                                                                                 capsys):
    """--rows 3:4 picks only the empty line 4: the texts were explained and the CSV and HTML written before
    "--plot: no text with tokens to draw" ended the run (what every other --plot mistake is refused before)."""
    import pickle

    outputs = [tmp_path / "o.csv", tmp_path / "t.html", tmp_path / "t.png"]
    args = ["--texts", str(files / "t.txt"), "--rows", "3:4", "--out", str(outputs[0]), "--html", str(outputs[1]),
            "--plot", str(outputs[2]), "--quiet"]
    assert main(["explain", "--model", str(files / "texts.skops"), *args]) == 2
    err = capsys.readouterr().err
    assert err == f"fairshare: error: --plot {outputs[2]}: --rows 3:4 picks only blank lines of --texts " \
                  f"{files / 't.txt'}, no tokens to draw; pick lines with text, or leave out --plot\n", err
    assert not any(path.exists() for path in outputs)
    marker = tmp_path / "model-read.txt"
    with open(tmp_path / "m.joblib", "wb") as fh:                   # reading the model leaves a mark
        pickle.dump(_Marked(str(marker)), fh)
    assert main(["explain", "--model", str(tmp_path / "m.joblib"), "--trust-model", *args]) == 2
    assert "no tokens to draw" in capsys.readouterr().err and not marker.exists()


class _Marked:
    """A pickle that, when loaded, writes a file (so a test sees whether the model was read)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path(self.path).write_text, ("read",))
