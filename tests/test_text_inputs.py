"""Texts that cannot be explained are refused naming their position, before any model call (issue 43, items 7-8)."""

from __future__ import annotations

import numpy as np
import pytest

import fairshare as fs
from fairshare import FairshareWarning


class Counting:
    """A text model that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.array([t.count("spam") for t in texts], dtype=float)


def test_a_tokenizer_that_finds_no_tokens_in_a_text_is_refused_naming_it():
    model = Counting()
    with pytest.raises(ValueError, match=r"tokenizer found no tokens in texts\[1\] \('no capitals here'"):
        fs.explain(model, ["SPAM Now", "no capitals here"], tokenizer=r"[A-Z]+", progress=False)
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        fs.explain(model, ["only words"], tokenizer=lambda text: [], progress=False)
    assert model.calls == 0


def test_empty_and_blank_texts_warn_with_their_position_and_the_others_are_explained():
    model = Counting()
    with pytest.warns(FairshareWarning) as caught:
        out = fs.explain(model, ["spam spam", "", "  \n ", "ham"], progress=False, seed=0)
    said = " | ".join(str(w.message) for w in caught)
    assert "texts[1] is empty" in said and "texts[2] is only whitespace" in said
    assert [e.values.shape[1] for e in out] == [2, 0, 0, 1]
    np.testing.assert_allclose(out[0].values[0], [1.0, 1.0])
    with pytest.warns(FairshareWarning, match=r"texts\[0\] is empty"):
        single = fs.explain(model, "", progress=False)
    assert single.values.shape == (1, 0) and single.method == "none"


@pytest.mark.parametrize("bad, kind", [(None, "NoneType"), ([], "list"), (3.5, "float"), (b"spam", "bytes")])
def test_a_text_that_is_not_a_string_is_refused_naming_its_position_and_type(bad, kind):
    model = Counting()
    with pytest.raises(TypeError, match=rf"X\[2\] is {kind}"):
        fs.explain(model, ["spam", "ham", bad, "eggs"], progress=False)
    assert model.calls == 0


def test_texts_for_a_model_that_takes_numbers_are_refused_up_front():
    xgb = pytest.importorskip("xgboost")
    from sklearn.linear_model import LogisticRegression

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    for model in (xgb.XGBClassifier(n_estimators=3).fit(X, y), LogisticRegression().fit(X, y)):
        with pytest.raises(TypeError, match="texts need a model that takes a list of strings"):
            fs.explain(model, ["free prize", "see you"], progress=False)


def test_a_text_pipeline_is_still_explained():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    corpus = ["win a free prize now", "free cash, click now", "meeting on monday", "see the attached report"]
    model = make_pipeline(TfidfVectorizer(), LogisticRegression(C=10.0)).fit(corpus, [1, 1, 0, 0])
    e = fs.explain(model, "free prize on monday", progress=False, seed=0)
    np.testing.assert_allclose(e.values[0].sum(axis=0), e.grand_value[0] - e.empty_value[0], atol=1e-10)


@pytest.mark.parametrize("dtype", ["str", "string", object])
def test_a_series_of_texts_is_read_as_texts_whatever_its_string_dtype(dtype):
    # hunt: pandas 3's default str dtype (df["text"]) was taken for a table ("background ... is required")
    import pandas as pd

    texts = ["win a free prize now", "see the attached report"]

    def model(ts):
        return np.array([t.count("free") + 0.5 * t.count("report") for t in ts], dtype=float)

    as_list = fs.explain(model, texts, progress=False, seed=0)
    as_series = fs.explain(model, pd.Series(texts, dtype=dtype), progress=False, seed=0)
    assert len(as_series) == 2
    for a, b in zip(as_list, as_series):
        np.testing.assert_array_equal(a.values, b.values)
        assert a.player_names == b.player_names
