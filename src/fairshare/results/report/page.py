"""The report page: one HTML document holding its style, its data (JSON, escaped for a script element) and its
script, nothing fetched. The facts and a text's highlights are written here, every user string through
:func:`~fairshare.results.html.escape`; the plots and tables are drawn by the page's script (``report.js``) from the
data, so a thousand rows are one table of numbers, not a thousand drawings."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from ..._core.arguments import check_int
from ..html import escape, script_json, text_html
from .facts import facts
from .payload import explanation_payload, interactions_payload

__all__ = ["report_html", "write_html"]

#: first script of the page: what goes wrong later (an exception, a rejected promise, console.error) is written
#: into the page (``#fs-errors``, ``data-fs-errors`` on the root element), where a reader and a test see it
_GUARD = """window.fsErrors = [];
function fsReport(message) {
  window.fsErrors.push(String(message));
  document.documentElement.setAttribute("data-fs-errors", String(window.fsErrors.length));
  var box = document.getElementById("fs-errors");
  if (box) { box.hidden = false; box.textContent = "The page's script failed: " + window.fsErrors.join("\\n"); }
}
window.addEventListener("error", function (e) { fsReport("error: " + e.message + " (line " + e.lineno + ")"); });
window.addEventListener("unhandledrejection", function (e) { fsReport("unhandled rejection: " + e.reason); });
(function () {
  var original = console.error;
  console.error = function () {
    fsReport("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
})();"""


def _asset(name: str) -> str:
    """A file of the page kept beside this module (``report.js``, ``report.css``), read at run time."""
    text = files(__package__).joinpath(name).read_text(encoding="utf-8")
    if "</script" in text.lower():                      # it would end its element early
        raise RuntimeError(f"{name} holds '</script': it cannot be inlined")
    return text


def _table(rows: list[tuple[str, str]], css: str = "fs-facts") -> str:
    return f"<table class='{css}'>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows) \
        + "</table>"


def _document(title: str, lead: str, sections: list[str], payload: dict) -> str:
    """The page: style, title, the sections, the data and the scripts."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{_asset('report.css')}</style></head><body>"
            "<pre id='fs-errors' hidden></pre>"
            f"<script>{_GUARD}</script>"
            "<noscript><p>The plots and tables are drawn by this page's script: allow scripts to see them.</p>"
            "</noscript>"
            f"<h1>{escape(title)}</h1><p class='fs-lead'>{escape(lead)}</p>" + "".join(sections) +
            f"<script type='application/json' id='fs-data'>{script_json(payload)}</script>"
            f"<script>{_asset('report.js')}</script></body></html>")


def _explanation_sections(expl: Any, payload: dict, lead: list, rest: list, output: Any) -> list[str]:
    sections = ["<h2>How they were computed</h2>", _table(lead),
                "<h2>Summary</h2><div id='fs-bar'></div><div id='fs-beeswarm'></div>"]
    if getattr(expl, "is_text", False):
        sections.append(f"<h2>The text</h2><div id='fs-text'>{text_html(expl, output)}</div>")
    sections.append("<h2>One row</h2><div id='fs-controls'></div><div id='fs-image'></div>"
                    "<div id='fs-waterfall'></div><div id='fs-table'></div>")
    if payload["pairs"] is not None:
        sections.append("<h2>Interactions</h2><div id='fs-pairs'></div><p class='fs-note'>Each row's matrices: "
                        "<code>interactions_frame()</code>.</p>")
    if rest:
        sections.append("<details><summary>Every other fact of the run</summary>" + _table(rest) + "</details>")
    return sections


def report_html(result: Any, *, title: str | None = None, model: Any = None, output: Any = None,
                max_display: int = 20) -> str:
    """The report of ``result`` (an Explanation, an Attribution or DataValues, or Interactions) as one HTML
    document: the facts of the run, the summary plots (bar of mean |value|, one row's signed values; beeswarm), each
    row's waterfall and table of values with error bars, a text's highlights, an image's values over it, pairwise
    interactions.

    ``output`` picks one output of a result with several (its name or position; default: the positive class of a
    binary classifier, else the first); ``model`` names the model's library among the versions shown;
    ``max_display`` players are drawn in the plots (the rest summed in one bar; the tables list every player).

    Examples
    --------
    >>> import fairshare as fs
    >>> phi = fs.exact(fs.games.AdditiveGame([1.0, -2.0]), "shapley")
    >>> page = report_html(phi, title="<two players>")
    >>> page.startswith("<!DOCTYPE html>"), "<h1>&lt;two players&gt;</h1>" in page
    (True, True)
    """
    max_display = check_int(max_display, "max_display", minimum=1)
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a string or None, got {type(title).__name__}")
    kind = getattr(result, "_report", None)
    if kind == "subsets":
        payload = interactions_payload(result, output)
        shape = f"{len(payload['subsets'])} subsets of {result.n_players} players (order {result.order})"
        lead, rest = facts(result, shape, model)
        sections = ["<h2>How they were computed</h2>", _table(lead), "<h2>Values</h2><div id='fs-subsets'></div>",
                    "<div id='fs-pairs'></div>"]
        if rest:
            sections.append("<details><summary>Every other fact of the run</summary>" + _table(rest) + "</details>")
    elif kind in ("rows", "game"):
        expl = result if kind == "rows" else result.to_explanation()
        payload = explanation_payload(expl, output, max_display)
        shape = f"{len(expl)} row{'s' if len(expl) != 1 else ''} x {len(expl.player_names)} players" + payload["label"]
        lead, rest = facts(result, shape, model)
        sections = _explanation_sections(expl, payload, lead, rest, output)
    else:
        raise TypeError(f"to_html writes reports of an Explanation, an Attribution (DataValues) or Interactions, not "
                        f"of {type(result).__name__}" + (" (rows[r] is the Interactions of row r)"
                                                         if type(result).__name__ == "InteractionRows" else ""))
    title = title if title is not None else f"fairshare: {result.index} values{payload['label']}"
    return _document(title, dict(lead)["values"], sections, payload)


def write_html(result: Any, path: str | Path, **options: Any) -> Path:
    """Write :func:`report_html` of ``result`` to ``path`` (UTF-8; its folder must exist); returns the path.

    Examples
    --------
    >>> import fairshare as fs, os, tempfile
    >>> phi = fs.exact(fs.games.AdditiveGame([1.0, -2.0]), "shapley")
    >>> write_html(phi, os.path.join(tempfile.mkdtemp(), "phi.html")).suffix
    '.html'
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a file name (str or Path), got {type(path).__name__}")
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"path {str(target)!r} is a folder: give a file name")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"path {str(target)!r}: the folder {str(target.parent)!r} does not exist")
    document = report_html(result, **options)
    target.write_text(document, encoding="utf-8")
    return target
