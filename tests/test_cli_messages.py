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
