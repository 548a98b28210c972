"""Hostile strings in every output: HTML never runs what a name, token, index or label holds, and plots draw any
name as written (issue 44, items 1 and 11)."""

from __future__ import annotations

from html.parser import HTMLParser

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairshare as fs
from fairshare.results.html import escape, script_json, text_html, texts_page
from fairshare.results.report import report_html

HOSTILE = ['<img src=x onerror=alert(1)>', '"><script>alert(1)</script>', "' onmouseover='alert(1)",
           "</span></div><iframe src=javascript:alert(1)>", "&lt;b&gt;", "$x^$", "$\\frac{$", "a\x00b",
           "</script><script>alert(1)</script>", "</SCRIPT ><!--<script>", "line\u2028break\u2029", "\\u003c/script>"]

#: what our HTML may hold: these tags and attributes, nothing else
TAGS = {"html", "meta", "body", "h4", "hr", "div", "small", "span"}
ATTRS = {"title", "style", "charset"}


class _Reader(HTMLParser):
    """The tags, attribute names and text of an HTML document, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.text: list[str] = []
        self.titles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            self.attrs.add(name)
            if name == "title":
                self.titles.append(value)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _read(document: str) -> _Reader:
    reader = _Reader()
    reader.feed(document)
    reader.close()
    return reader


def _safe(document: str) -> _Reader:
    reader = _read(document)
    assert reader.tags <= TAGS, reader.tags - TAGS
    assert reader.attrs <= ATTRS, reader.attrs - ATTRS
    return reader


def _hostile_text_explanation(word: str) -> fs.Explanation:
    def model(texts: list[str]) -> np.ndarray:
        return np.array([[t.count("spam"), len(t)] for t in texts], dtype=float)

    e = fs.explain(model, f"spam {word} ham", progress=False, seed=0)
    e.index, e.output_names = word, [word, "length"]
    return e


@pytest.mark.parametrize("word", HOSTILE)
def test_text_html_escapes_every_user_string_also_after_save_and_load(tmp_path, word):
    e = _hostile_text_explanation(word)
    back = fs.Explanation.load(e.save(tmp_path / "e.npz"))
    for document in (e._repr_html_(), back._repr_html_(), text_html(back, output=0)):
        reader = _safe(document)
        shown = "".join(reader.text)
        assert word.split()[0] in shown or word.strip() == ""        # the hostile string is shown as text
        assert "<script" not in document and "<img" not in document and "<iframe" not in document


def test_the_html_page_of_texts_escapes_labels_and_tokens():
    expls = [_hostile_text_explanation(w) for w in HOSTILE[:4]]
    reader = _safe(texts_page(expls, HOSTILE[:4]))
    shown = "".join(reader.text)
    for word in HOSTILE[:4]:
        assert shown.count(word) >= 2                                # the label and the text's tokens


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_escape_keeps_any_string_inside_its_element_and_attribute(value):
    document = f'<div><span title="{escape(value)}">{escape(value)}</span></div>'
    reader = _read(document)
    assert reader.tags == {"div", "span"} and reader.attrs == {"title"}
    assert reader.titles == [value.replace("\r\n", "\n").replace("\r", "\n")] or "\x00" in value or "\r" in value
    if "\x00" not in value and "\r" not in value:
        assert "".join(reader.text) == value


# ------------------------------------------------------------------------------------------ the HTML report
#: what the report's own markup may hold (the plots are drawn by its script, from the data)
REPORT_TAGS = {"html", "head", "meta", "title", "style", "body", "pre", "script", "noscript", "p", "h1", "h2", "h4",
               "table", "tr", "th", "td", "details", "summary", "div", "small", "span", "code"}
REPORT_ATTRS = {"lang", "charset", "name", "content", "id", "hidden", "class", "type", "title", "style"}


class _Scripts(_Reader):
    """The text of each script element apart, as a browser's parser ends it (not in ``text``)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.inside: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        super().handle_starttag(tag, attrs)
        self.inside = tag
        if tag == "script":
            self.scripts.append("")

    def handle_data(self, data: str) -> None:
        if self.inside == "script":
            self.scripts[-1] += data
        else:
            super().handle_data(data)

    def handle_endtag(self, tag: str) -> None:
        self.inside = None


@pytest.mark.parametrize("word", HOSTILE)
def test_script_json_keeps_any_string_inside_its_script_element(word):
    encoded = script_json({"name": word, "names": [word, word * 2]})
    assert not set(encoded) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(encoded) == {"name": word, "names": [word, word * 2]}
    reader = _Scripts()
    reader.feed(f"<script type='application/json'>{encoded}</script><p>after</p>")
    assert reader.scripts == [encoded] and reader.tags == {"script", "p"}


@pytest.mark.parametrize("word", HOSTILE)
def test_the_html_report_escapes_every_user_string(word):
    values, stderr = np.array([[1.0, -2.0, 0.5]]), np.array([[0.1, 0.2, 0.3]])
    e = fs.Explanation(values=np.stack([values, -values], axis=-1), stderr=np.stack([stderr, stderr], axis=-1),
                       empty_value=[[0.0, 1.0]], index=word, player_names=[word, word + "2", "c"], row_names=[word],
                       output_names=[word, "other"], data=np.array([[word, 3.0, "x"]], dtype=object), method=word,
                       info={"model_output": word, "choice": {"method": word, "why": word}, "note": [word]})
    page = report_html(e, title=word, output=word)
    reader = _Scripts()
    reader.feed(page)
    reader.close()
    assert reader.tags <= REPORT_TAGS, reader.tags - REPORT_TAGS
    assert reader.attrs <= REPORT_ATTRS, reader.attrs - REPORT_ATTRS
    assert len(reader.scripts) == 3                                   # the guard, the data, the drawing: no other
    payload = json.loads(reader.scripts[1])
    assert payload["players"] == [word, word + "2", "c"] and payload["rows"] == [word] and payload["index"] == word
    assert payload["label"] == f" (output {word})" and payload["data"][0][0] == word
    assert "".join(reader.text).count(word) >= 4                      # shown as text: title, heading, lead, facts


# ---------------------------------------------------------------------------------------------------- plots
def _hostile_table(names: list[str]) -> fs.Explanation:
    rng = np.random.default_rng(0)
    n = len(names)
    data = rng.random((30, n))
    return fs.Explanation(values=rng.normal(size=(30, n)), stderr=np.full((30, n), 0.1), empty_value=np.zeros(30),
                          data=data, player_names=names, index="$shapley^$", row_names=[f"$r{i}^$" for i in range(30)],
                          interactions=rng.normal(size=(30, n, n)), interactions_stderr=np.zeros((30, n, n)))


@pytest.mark.parametrize("kind", ["bar", "waterfall", "beeswarm", "heatmap", "decision"])
def test_every_plot_draws_names_that_are_bad_mathtext_as_written(kind):
    names = ["$x^$", "cost in $", "$\\frac{$", "plain"]
    ax = _hostile_table(names).plot(kind)
    ax.figure.canvas.draw()                                           # mathtext would fail here
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels()]
    drawn = " ".join(labels)
    assert "\\$x^\\$" in drawn


def test_dependence_and_interaction_plots_draw_bad_mathtext_names():
    from fairshare import plots

    e = _hostile_table(["$x^$", "$y_$", "z"])
    for ax in (plots.dependence(e, "$x^$"), plots.interaction_dependence(e, "$x^$", "$y_$"),
               plots.interaction_heatmap(e), plots.interaction_network(e)):
        ax.figure.canvas.draw()


def test_the_text_plot_draws_tokens_that_are_bad_mathtext():
    e = fs.explain(lambda ts: [t.count("$") for t in ts], "pay $x^$ now $", progress=False, seed=0,
                   tokenizer=r"\S+")
    ax = e.plot("text")
    ax.figure.canvas.draw()
    assert any("\\$x^\\$" in t.get_text() for t in ax.texts)


def test_data_values_plot_draws_a_bad_mathtext_flag_label():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 2))
    y = (X[:, 0] > 0).astype(int)
    from sklearn.neighbors import KNeighborsClassifier

    dv = fs.value_data(KNeighborsClassifier(3), X[:16], y[:16], X[16:], y[16:], progress=False)
    ax = dv.plot(flag=np.arange(16) < 3, flag_label="$flip^$")
    ax.figure.canvas.draw()
