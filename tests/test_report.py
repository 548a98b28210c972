"""The HTML report (``result.to_html``, issue 40 item 4) opened in a real browser: headless Chromium renders every
player and every plot of a table's, a text's, images' and interaction values' reports, with no error on the console
and screenshots that are real pictures; the file fetches nothing. Chromium starts once per report, all at once
(one module fixture)."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

import fairshare as fs
from fairshare.results.report import report_html

import browser

#: names no page may run or be broken by
NAMES = ["age", "</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "income & tax", "x\u2028y",
         "city"]
SIZE = (1000, 1500)
#: the reports photographed: the plots of a table, and an image's values over it
SHOTS = ("table", "images")


def _table() -> fs.Explanation:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 6))
    e = fs.explain(lambda A: A @ np.arange(1.0, 7.0) + A[:, 0] * A[:, 1], X, X[:4] * 0, budget=40, seed=0,
                   progress=False, interactions=2, feature_names=NAMES)
    e.row_names = [f"<row {i}>" for i in range(12)]
    data = X.astype(object)
    data[:, 5] = ["<b>lyon</b>" if v > 0 else "paris" for v in X[:, 5]]         # a column of words
    e.data = data
    return e


def _text() -> fs.Explanation:
    return fs.explain(lambda ts: [t.count("good") - 2 * t.count("</script>") for t in ts],
                      "good </script><script>alert(1)</script> film & good", progress=False, seed=0)


def _images() -> fs.Explanation:
    rng = np.random.default_rng(1)
    groups = np.repeat(np.repeat(np.arange(4).reshape(2, 2), 4, axis=0), 4, axis=1)     # 2 x 2 patches of 4 x 4
    return fs.Explanation(values=rng.normal(size=(2, 4, 3)), stderr=np.abs(rng.normal(size=(2, 4, 3))) * 0.1,
                          empty_value=np.zeros((2, 3)), index="shapley", output_names=["cat", "</script>dog", "bird"],
                          player_names=[f"patch {i // 2},{i % 2}" for i in range(4)],
                          info={"images": rng.random((2, 3, 8, 8)), "input_shape": [8, 8],
                                "input_groups": groups.tolist(), "per_row": ["images"]})


def _interactions() -> fs.Interactions:
    game = fs.games.SOUMGame([[True, True, False], [False, True, True]], [2.0, -1.0], player_names=NAMES[:3])
    return fs.interactions(game, "k-sii", order=2, method="exact")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each report's result, its file and its page as Chromium rendered it (all opened at once; the table's at its
    row 2, as its address asks)."""
    folder = tmp_path_factory.mktemp("reports")
    results = {"table": (_table(), {}), "text": (_text(), {}), "images": (_images(), {"output": "</script>dog"}),
               "interactions": (_interactions(), {})}
    paths = {kind: result.to_html(folder / f"{kind}.html", **options) for kind, (result, options) in results.items()}
    shots = [folder / f"{kind}.png" if kind in SHOTS else None for kind in paths]
    addresses = [path.resolve().as_uri() + ("#row=2" if kind == "table" else "") for kind, path in paths.items()]
    pages = browser.render(addresses, shots, size=SIZE)
    return {kind: (results[kind][0], paths[kind], page) for kind, page in zip(paths, pages)}


def _rows_of_table(dom) -> list[tuple[str, float]]:
    table = dom.find_all("table", css="fs-values")
    assert len(table) == 1
    cells = [[td.content() for td in tr.find_all("td")] for tr in table[0].find_all("tr") if tr.find_all("td")]
    return [(row[0], float(row[-3])) for row in cells]


@pytest.mark.parametrize("kind", ["table", "text", "images", "interactions"])
def test_the_report_renders_every_player_and_plot_without_a_console_error(reports, kind):
    result, path, page = reports[kind]
    assert page.console == [], page.console                            # nothing logged, nothing thrown
    dom = browser.tree(page.dom)
    root = dom.find_all("html")[0]
    assert "data-fs-rendered" in root.attrs and "data-fs-errors" not in root.attrs
    assert "hidden" in dom.find_all(id="fs-errors")[0].attrs
    assert len(dom.find_all("script")) == 3 and not dom.find_all("img") and not dom.find_all("iframe")
    plots = {svg.attrs["class"].split()[1].removeprefix("fs-"): svg for svg in dom.find_all("svg", css="fs-plot")}
    shown = _rows_of_table(dom)
    magnitudes = [abs(v) for _, v in shown]
    assert magnitudes == sorted(magnitudes, reverse=True)
    if kind == "interactions":
        expected = {" \u00d7 ".join(result.player_names[i] for i in s if i >= 0): v
                    for s, v in zip(result.subsets, result.values)}
        assert set(plots) == {"pairs"} and len(plots["pairs"].find_all("rect")) == 9 + 50    # 3 x 3 cells, legend
    else:
        at = 2 if kind == "table" else 0
        row = result.values[at] if result.values.ndim == 2 else result.values[at, :, 1]
        expected = dict(zip(result.player_names, row))
        n, rows = len(result.player_names), len(result)
        assert len(plots["bar"].find_all("rect")) == n and len(plots["waterfall"].find_all("rect")) == n
        if rows > 1:                                                   # one dot per row and player
            dots = [p.attrs["d"] for p in plots["beeswarm"].find_all("path", css="fs-dots")]
            assert sum(d.count("M") for d in dots) == rows * n
    assert dict(shown).keys() == expected.keys()                          # every player, each once, as written
    np.testing.assert_allclose([v for _, v in shown], [expected[name] for name, _ in shown], rtol=2e-5, atol=1e-12)
    if kind == "table":
        assert set(plots) == {"bar", "beeswarm", "waterfall", "pairs"}
        options = [o.content() for o in dom.find_all("option")]
        assert options == result.row_names
        waterfall = dom.find_all(id="fs-waterfall")[0].find_all("h3")[0].content()
        assert waterfall.startswith("Row <row 2>: from the base value")
        words = [td.content() for td in dom.find_all("td", css="fs-data")]
        assert "<b>lyon</b>" in words or "paris" in words
    if kind == "text":
        spans = dom.find_all(id="fs-text")[0].find_all("span")
        assert [s.content() for s in spans] == result.tokens
    if kind == "images":
        pictures = plots["image"].find_all("image")
        assert len(pictures) == 2 and all(p.attrs["href"].startswith("data:image/png;base64,") for p in pictures)
        assert "(output </script>dog)" in dom.find_all(id="fs-image")[0].find_all("h3")[0].content()


@pytest.mark.parametrize("kind", SHOTS)
def test_the_screenshot_is_a_real_picture_of_the_plots(reports, kind):
    from PIL import Image

    shot = reports[kind][2].screenshot
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    picture = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert picture.shape == (SIZE[1], SIZE[0], 3)
    inked = (picture.min(axis=2) < 235).mean()
    assert inked > 0.01, inked                                         # not a blank page
    wide = picture.astype(np.int16)
    bars = [int((np.abs(wide - colour) < 14).all(axis=2).sum()) for colour in ([214, 39, 40], [31, 119, 180])]
    assert sum(bars) > 200, bars                                       # the bars' red and blue are drawn
    packed = (wide[..., 0].astype(np.int32) << 16) | (wide[..., 1].astype(np.int32) << 8) | wide[..., 2]
    assert np.unique(packed).size > 30                                 # colours, not a flat fill


def test_a_report_fetches_nothing(reports):
    for _, path, _ in reports.values():
        text = path.read_text(encoding="utf-8")
        assert re.findall(r"https?://[^\s\"'<>]+", text) == ["http://www.w3.org/2000/svg"]   # the SVG namespace
        dom = browser.tree(text)
        assert {e.tag for e in dom.iter()}.isdisjoint({"link", "img", "iframe", "object", "embed", "base"})
        assert not any("src" in e.attrs or (e.attrs.get("href") or "#").startswith(("http", "//")) for e in dom.iter())
        code = "".join(e.content() for e in dom.find_all("script") + dom.find_all("style"))
        assert not re.search(r"@import|url\(|fetch\(|XMLHttpRequest|WebSocket|\.src\b", code)


def test_the_data_in_the_page_is_the_result_to_six_digits(reports):
    result, path, _ = reports["table"]
    dom = browser.tree(path.read_text(encoding="utf-8"))
    payload = json.loads(dom.find_all(id="fs-data")[0].content())
    assert payload["players"] == NAMES and payload["rows"] == result.row_names
    np.testing.assert_allclose(payload["values"], result.values, rtol=5e-6)
    np.testing.assert_allclose(payload["stderr"], result.stderr, rtol=5e-6)
    mean_abs = np.abs(result.values).mean(axis=0)
    np.testing.assert_allclose(payload["mean_abs"], mean_abs, rtol=5e-6)
    assert payload["data"][0][5] in ("<b>lyon</b>", "paris") and payload["low"][5] is None


def test_attributions_and_data_values_have_reports_too():
    phi = fs.estimate(fs.games.AdditiveGame([1.0, -2.0, 0.5]), "shapley", method="permutation", budget=60, seed=0)
    page = report_html(phi, title="additive")
    payload = json.loads(browser.tree(page).find_all(id="fs-data")[0].content())
    np.testing.assert_allclose(payload["values"], [[1.0, -2.0, 0.5]])
    assert "<th>model calls</th><td>" + f"{phi.n_evaluations:,} game evaluations" in page
    values = fs.DataValues.from_attribution(phi, n_fits=4, reused_fits=2)
    assert "<th>model fits</th><td>4 fitted, 2 from the cache" in report_html(values)
    with pytest.raises(TypeError, match="to_html writes reports of"):
        report_html(object())
    with pytest.raises(ValueError, match="max_display"):
        report_html(phi, max_display=0)


def test_without_chromium_the_browser_tests_fail_saying_make_browser(monkeypatch):
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="make browser"):
        browser.chromium()


def test_to_html_refuses_bad_arguments_naming_them(tmp_path):
    e = fs.Explanation(values=np.ones((2, 3, 2)), stderr=None, empty_value=np.zeros((2, 2)), index="shapley",
                       output_names=["no", "yes"])
    for kwargs, error, name in [({"path": tmp_path / "missing" / "r.html"}, FileNotFoundError, "path"),
                                ({"path": tmp_path}, ValueError, "path"),
                                ({"path": 3}, TypeError, "path"),
                                ({"path": tmp_path / "r.html", "output": "maybe"}, ValueError, "output"),
                                ({"path": tmp_path / "r.html", "title": 3}, TypeError, "title"),
                                ({"path": tmp_path / "r.html", "max_display": 0}, ValueError, "max_display")]:
        with pytest.raises(error, match=name):
            e.to_html(**kwargs)
    assert not (tmp_path / "r.html").exists()                          # nothing written before the checks pass
    page = e.to_html(tmp_path / "r.html", output="no").read_text(encoding="utf-8")
    assert "(output no)" in page and '"label": " (output no)"' in page


def _sage() -> fs.Attribution:
    """SAGE values of a model that leans on noise: x2 adds loss (-1.063), as in test_sage's bar plot."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    return fs.global_importance(lambda R: 2 * R[:, 0] + 1.5 * R[:, 2], X, 2 * X[:, 0], budget=8, seed=0)


def test_a_sage_report_counts_the_model_rows_behind_its_game_evaluations():
    """'model calls' said '8 game evaluations' for a SAGE run that sent 11,280 rows to the model
    (info['model_rows']: each evaluation costs every row's imputed rows, and the probe's rows)."""
    sage = _sage()
    assert (sage.n_evaluations, sage.info["model_rows"]) == (8, 11280)
    assert "<th>model calls</th><td>11,280 model rows (8 game evaluations)</td>" in report_html(sage)


def test_the_bar_chart_of_one_row_draws_its_signed_values_as_the_bar_plot_does(tmp_path):
    """The report's bar chart drew |value| of one row (SAGE's x2 at +1.063 under '|shapley value|') while the
    matplotlib bar plot draws the signed -1.063 (976c4e9); several rows keep their mean |value|."""
    sage = _sage()
    payload = json.loads(browser.tree(report_html(sage)).find_all(id="fs-data")[0].content())
    np.testing.assert_allclose(payload["bar"], [4.43958, 0.0, -1.06309], atol=1e-5)
    assert payload["bar_signed"] is True
    table = json.loads(browser.tree(report_html(_table())).find_all(id="fs-data")[0].content())
    assert table["bar_signed"] is False and table["bar"] == table["mean_abs"]
    page = browser.render([sage.to_html(tmp_path / "sage.html").resolve().as_uri()], [None], size=(900, 1200))[0]
    assert page.console == [], page.console
    bar = browser.tree(page.dom).find_all("svg", css="fs-bar")[0]
    rects = bar.find_all("rect")
    assert [r.attrs["fill"] for r in rects] == ["#d62728", "#1f77b4", "#d62728"]      # x0 +, x2 -, x1 0
    (x0, x2), zero = [float(r.attrs["x"]) for r in rects[:2]], float(rects[2].attrs["x"])
    assert x0 == zero and x2 + float(rects[1].attrs["width"]) == pytest.approx(zero)    # x2 left of zero
    assert [t.content() for t in bar.find_all("text", css="fs-value")][1].startswith("-1.06")
    title = browser.tree(page.dom).find_all(id="fs-bar")[0].find_all("h3")[0].content()
    assert title.startswith("Shapley value of 1 row") and "|" not in title


def test_the_report_of_one_output_sliced_from_several_names_it():
    """e[:, :, 1] keeps one output (info['output'] = 'yes'): its report's title said 'shapley values', as if the
    explanation had a single output; it names the output as the report of e with output='yes' does."""
    e = fs.Explanation(values=np.arange(12.0).reshape(2, 3, 2), stderr=None, empty_value=np.zeros((2, 2)),
                       index="shapley", output_names=["no", "yes"])
    whole, one = report_html(e, output="yes"), report_html(e[:, :, 1])
    for page in (whole, one):
        assert "<title>fairshare: shapley values (output yes)</title>" in page
        assert "<th>values</th><td>shapley values of 2 rows x 3 players (output yes)</td>" in page
    assert "<title>fairshare: shapley values (output no)</title>" in report_html(e[:, :, "no"])


def test_the_image_of_a_binary_classifiers_report_shows_the_output_its_summary_shows():
    """Two outputs, no output= given: the report's summary, waterfall and table drew the positive class ('dog') and
    its image the first output ('cat': pixel scale 0.91 where dog's values reach 13.0), under the label 'output cat'
    on a page titled 'output dog'. The image now picks its output as the rest of the page does."""
    from fairshare.results.report.payload import explanation_payload

    rng = np.random.default_rng(1)
    groups = np.repeat(np.repeat(np.arange(4).reshape(2, 2), 4, axis=0), 4, axis=1)
    values = rng.normal(size=(1, 4, 2)) * [1.0, 10.0]
    e = fs.Explanation(values=values, stderr=None, empty_value=np.zeros((1, 2)), index="shapley",
                       output_names=["cat", "dog"], player_names=[f"patch {i}" for i in range(4)],
                       info={"images": rng.random((1, 3, 8, 8)), "input_shape": [8, 8],
                             "input_groups": groups.tolist(), "per_row": ["images"]})
    payload = explanation_payload(e)
    assert payload["label"] == payload["images"][0]["label"] == " (output dog)"
    assert payload["images"][0]["scale"] == pytest.approx(np.abs(values[0, :, 1]).max())
    assert e.plot("image", output="cat").get_title() == e.plot("image", output=0).get_title()
    with pytest.raises(ValueError, match="output must be"):
        e.plot("image", output=2)
