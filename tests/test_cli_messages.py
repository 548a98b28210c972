"""The command line speaks of what the user gave it: rows and lines numbered as in the file (not in the ``--rows``
selection), flags as typed (not the Python arguments of the library), every flag once and spelled out, columns
named and read as written; and a mistake is refused before anything is written."""

from __future__ import annotations

import argparse
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


# ------------------------------------------------------------------------------------------ columns of words
_ENCODE_IT = ("write it in the CSV as numbers, or give --model a scikit-learn Pipeline (saved as .skops) whose "
              "ColumnTransformer encodes it (OneHotEncoder, OrdinalEncoder)")


@pytest.fixture(scope="module")
def words(files) -> Path:
    """rows.csv with its column 'b' as words, and models fitted on it: one encoding 'b', one passing it through."""
    import skops.io as sio
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    W = pd.read_csv(files / "rows.csv").assign(b=["lo", "hi"] * 5)
    W.to_csv(files / "words.csv", index=False)
    encoded = make_column_transformer((OneHotEncoder(), ["b"]), remainder="passthrough")
    sio.dump(make_pipeline(encoded, LinearRegression()).fit(W, W.a + (W.b == "hi")), files / "encoded.skops")
    numbers = pd.read_csv(files / "rows.csv")
    passed = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["c"]), remainder="passthrough")
    sio.dump(make_pipeline(passed, LinearRegression()).fit(numbers.round(), numbers.a), files / "passed.skops")
    return files / "words.csv"


@pytest.mark.parametrize("where", ["--data", "--background"])
def test_words_for_a_model_of_numbers_are_refused_naming_the_column_before_any_model_call(files, words, tmp_path,
                                                                                          capsys, monkeypatch, where):
    """A column of words for a LinearRegression ended in "ModelError: row 0: the model raised ValueError (could not
    convert string to float: 'lo') on the rows of 8 coalition(s)": no flag, no column, nothing to do about it."""
    from sklearn.linear_model import LinearRegression

    calls = []
    predict = LinearRegression.predict
    monkeypatch.setattr(LinearRegression, "predict", lambda self, X: calls.append(len(X)) or predict(self, X))
    paths = {"--data": files / "rows.csv", "--background": files / "rows.csv", where: words}
    assert main(_explain(tmp_path, "--model", files / "lin.skops", *[t for kv in paths.items() for t in kv])) == 2
    err = capsys.readouterr().err
    assert err == f"fairshare: error: {where} {words} column 'b' holds words ('lo', 'hi'), but the model " \
                  f"(LinearRegression) takes it as numbers only: {_ENCODE_IT}\n", err
    assert calls == [] and not (tmp_path / "o.csv").exists()


def test_words_a_pipeline_passes_through_are_named_when_the_model_refuses_them(files, words, tmp_path, capsys):
    """Where scikit-learn cannot say (a passthrough column), the model's own refusal is named by column."""
    assert main(_explain(tmp_path, "--model", files / "passed.skops", "--data", words, "--background",
                         files / "rows.csv")) == 2
    err = capsys.readouterr().err
    assert err == f"fairshare: error: --data {words} column 'b' holds words ('lo', 'hi'), which the model did not " \
                  f"take (could not convert string to float: 'lo'): {_ENCODE_IT}\n", err


def test_words_a_pipeline_encodes_are_explained(files, words, tmp_path):
    assert main(_explain(tmp_path, "--model", files / "encoded.skops", "--data", words, "--background", words)) == 0
    values = pd.read_csv(tmp_path / "o.csv")
    np.testing.assert_allclose(values.b, np.where(values.row % 2, 0.5, -0.5), atol=1e-9)    # 'hi' adds 1


@pytest.mark.parametrize("model, name", [("logistic", "LogisticRegression"), ("knn", "KNeighborsClassifier")])
def test_value_data_refuses_words_for_a_model_of_numbers_before_the_first_fit(files, tmp_path, capsys, model, name):
    """Every fit raised on the words: 'fitting it on X_train raises ValueError: could not convert string to float',
    after the fits, naming no flag or column (the KNN closed form: '--train holds values that are not numbers')."""
    X = pd.read_csv(files / "rows.csv").assign(color=["red", "blue"] * 5, label=[0, 1] * 5)
    X.iloc[:6].to_csv(tmp_path / "train.csv", index=False)
    X.iloc[6:].to_csv(tmp_path / "val.csv", index=False)
    assert main(["value-data", "--model", model, "--train", str(tmp_path / "train.csv"), "--val",
                 str(tmp_path / "val.csv"), "--target", "label", "--budget", "64", "--out", str(tmp_path / "v.csv"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"fairshare: error: --train {tmp_path / 'train.csv'} column 'color' holds words ('red', 'blue'), " \
                  f"but the model ({name}) takes it as numbers only: {_ENCODE_IT}\n", err


# ------------------------------------------------------------------------------ flags, not Python arguments
@pytest.mark.parametrize("extra, said", [
    (["--index", "owen"], "--index owen needs --partition: the blocks of players (e.g. [[0, 1, 2], [3, 4]]), nested "
                          "lists for a hierarchy"),
    (["--partition", "correlation"], "--partition is given but index is 'shapley': a partition defines Owen values; "
                                     "use --index owen"),
    (["--index", "owen", "--partition", "correlation", "--interactions", "i.csv"],
     "--interactions extends Shapley (SII) or Banzhaf (BII) values, not Owen values"),
    # hunt15: the family's words alone ("w must lie strictly between 0 and 1, got 1.5"), naming no flag
    (["--index", "weighted-banzhaf(1.5)"], "--index weighted-banzhaf(1.5): w must lie strictly between 0 and 1, got 1.5"),
    (["--index", "beta-shapley(0,1)"], "--index beta-shapley(0,1): alpha must be finite and > 0, got 0.0"),
])
def test_a_table_mistake_names_the_flags_not_the_python_arguments(files, tmp_path, capsys, extra, said):
    """They said "--index 'owen' needs partition=:", "use index='owen'" and "--interactions 2 extends ..."
    (interactions=2 is the door's argument; the flag names a file)."""
    extra = [str(tmp_path / e) if e.endswith(".csv") else e for e in extra]
    assert main(_explain(tmp_path, "--model", files / "lin.skops", "--data", files / "rows.csv", "--background",
                         files / "rows.csv", *extra)) == 2
    assert capsys.readouterr().err == f"fairshare: error: {said}\n"


def test_a_texts_mistake_names_the_flag_not_the_python_argument(files, tmp_path, capsys):
    assert main(_explain(tmp_path, "--model", files / "texts.skops", "--texts", files / "t.txt", "--index", "owen",
                         "--partition", "[[0, 1]]")) == 2
    assert capsys.readouterr().err == "fairshare: error: --partition: a list of blocks fits one text; for many texts " \
                                      "use --partition sentences (sentences -> phrases -> tokens of each text)\n"


def test_images_that_look_channels_last_name_the_layout_flag(tmp_path, capsys):
    """It said "pass layout='NHWC'"; the library still says so to its users."""
    torch = pytest.importorskip("torch")
    import fairshare as fs

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(4, 2))
    torch.jit.save(torch.jit.script(net), tmp_path / "conv.pt")
    images = np.random.default_rng(0).random((2, 16, 16, 3)).astype(np.float32)
    np.save(tmp_path / "hwc.npy", images)
    assert main(_explain(tmp_path, "--model", tmp_path / "conv.pt", "--images", tmp_path / "hwc.npy")) == 2
    err = capsys.readouterr().err
    assert err.endswith("; channels last (N, H, W, C)? pass --layout NHWC\n") and "layout=" not in err, err
    with pytest.raises(ValueError, match=r"pass layout='NHWC'$"):
        fs.explain(net, images, progress=False)


# --------------------------------------------------------------------------- every flag spelled out, once
def _refused(argv: list, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in argv])
    assert stop.value.code == 2
    return capsys.readouterr().err


def test_an_abbreviated_flag_is_refused_not_read_as_the_flag_it_begins(files, tmp_path, capsys):
    """--see 3 was read as --seed 3 (argparse's allow_abbrev): a typo of another flag could be taken silently."""
    err = _refused(_explain(tmp_path, "--model", files / "lin.skops", "--data", files / "rows.csv", "--background",
                            files / "rows.csv", "--rows", "0", "--see", "3"), capsys)
    assert err == "fairshare: error: unrecognized arguments: --see 3\n", err
    assert not (tmp_path / "o.csv").exists()


def test_every_parser_of_the_command_line_takes_whole_flags_only():
    from fairshare.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == {"methods", "demo", "explain", "explain-generation", "value-data", "bench"}
    assert not parser.allow_abbrev and not any(p.allow_abbrev for p in commands.values())


@pytest.mark.parametrize("twice, said", [
    (["--rows", "1", "--rows", "2"], "--rows is given 2 times (--rows 1, --rows 2)"),
    (["--seed=1", "--seed", "2"], "--seed is given 2 times (--seed=1, --seed 2)"),
    (["--overwrite"], "--overwrite is given 2 times (--overwrite, --overwrite)"),
])
def test_a_flag_given_twice_is_refused_naming_it(files, tmp_path, capsys, twice, said):
    """The last --rows silently replaced the first: the run explained other rows than the user had read first."""
    err = _refused(_explain(tmp_path, "--model", files / "lin.skops", "--data", files / "rows.csv", "--background",
                            files / "rows.csv", *twice), capsys)
    assert err == f"fairshare: error: {said}; give it once\n", err
    assert not (tmp_path / "o.csv").exists()


def test_a_flag_of_value_data_given_twice_is_refused_naming_it(tmp_path, capsys):
    err = _refused(["value-data", "--model", "knn", "--train", tmp_path / "t.csv", "--val", tmp_path / "v.csv",
                    "--target", "label", "--target", "y", "--out", tmp_path / "o.csv"], capsys)
    assert err == "fairshare: error: --target is given 2 times (--target label, --target y); give it once\n", err


# ------------------------------------------------------------------------------------- columns as written
@pytest.mark.parametrize("flag", ["--data", "--background"])
def test_a_column_named_twice_is_refused_naming_it_and_the_file(files, tmp_path, capsys, flag):
    """pandas read the header a,b,a as a, b, a.1: the model then missed 'c' and met 'a.1' (or, fitted on an 'a.1',
    took the second 'a' for it silently)."""
    (tmp_path / "dup.csv").write_text("a,b,a\n1,2,3\n4,5,6\n")
    paths = {"--data": files / "rows.csv", "--background": files / "rows.csv", flag: tmp_path / "dup.csv"}
    assert main(_explain(tmp_path, "--model", files / "lin.skops", *[t for kv in paths.items() for t in kv])) == 2
    assert capsys.readouterr().err == f"fairshare: error: {flag} {tmp_path / 'dup.csv'}: the header names column " \
                                      "'a' 2 times (fields 1 and 3); give each column its own name\n"


def test_value_data_refuses_a_column_named_twice(files, tmp_path, capsys):
    (tmp_path / "train.csv").write_text("a,b,label,b\n" + "".join(f"{i},{i % 3},{i % 2},{i}\n" for i in range(8)))
    assert main(["value-data", "--model", "knn", "--train", str(tmp_path / "train.csv"), "--val",
                 str(tmp_path / "train.csv"), "--target", "label", "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    assert capsys.readouterr().err == f"fairshare: error: --train {tmp_path / 'train.csv'}: the header names column " \
                                      "'b' 2 times (fields 2 and 4); give each column its own name\n"


@pytest.mark.parametrize("name, said", [("row", "the rows' index column"),
                                        ("empty_value", "the empty coalition's value column")])
def test_a_feature_named_as_a_column_of_out_is_refused_before_any_model_call(tmp_path, capsys, monkeypatch, name,
                                                                             said):
    """hunt15: a feature 'row' failed after every row was explained ('cannot insert row, already exists', nothing
    written); a feature 'empty_value' was written over the empty coalition's value (3.92 lost from --out)."""
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LinearRegression

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(10, 2)), columns=[name, "b"])
    sio.dump(LinearRegression().fit(X, 2 * X[name] + 5), tmp_path / "m.skops")
    X.to_csv(tmp_path / "rows.csv", index=False)
    calls = []
    monkeypatch.setattr(LinearRegression, "predict", lambda self, rows: calls.append(1) or np.zeros(len(rows)))
    out = tmp_path / "o.csv"
    assert main(["explain", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "rows.csv"), "--background",
                 str(tmp_path / "rows.csv"), "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == f"fairshare: error: --data {tmp_path / 'rows.csv'}: the player {name!r} has the " \
                                      f"name of {said} of --out {out}; rename the column (and the model's feature)\n"
    assert not calls and not out.exists()


@pytest.mark.parametrize("flag", ["value", "row", "stderr"])
def test_value_data_refuses_a_flag_named_as_a_column_of_out(tmp_path, capsys, flag):
    """hunt15: --flag value wrote the 0/1 flag over the values column of --out (every value lost: True, True, ...)."""
    rng = np.random.default_rng(0)
    train = pd.DataFrame(rng.normal(size=(12, 2)), columns=["a", "b"])
    train["label"] = (train.a > 0).astype(int)
    train[flag] = np.arange(12) % 2
    train.to_csv(tmp_path / "train.csv", index=False)
    out = tmp_path / "o.csv"
    assert main(["value-data", "--model", "knn", "--train", str(tmp_path / "train.csv"), "--val",
                 str(tmp_path / "train.csv"), "--target", "label", "--flag", flag, "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == f"fairshare: error: --flag {flag!r} has the name of a column of --out {out} " \
                                      "(row, value, stderr), which it would replace; rename the column in --train\n"
    assert not out.exists()
