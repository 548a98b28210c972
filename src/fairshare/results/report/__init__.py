"""The HTML report of a result (``result.to_html(path)``): one self-contained file, its style, data and script
inline, nothing fetched; the facts of the run, summary plots, each row's waterfall and table of values with error
bars, texts' highlights and images' values over them."""

from .page import report_html, write_html

__all__ = ["report_html", "write_html"]
