"""A text drawn token by token, each shaded by its value; a generated answer's prompt once per answer token."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results.html import TOTAL, answer_outputs, base_value, shade, shade_scale, text_values
from .common import pyplot, plain

__all__ = ["text"]


def text(expl: Any, output: Any = None, width: float = 9.0, ax: Any = None) -> Any:
    """The text drawn token by token, each on a background shaded by its value (red raises the output, blue
    lowers it), a token within two standard errors of zero outlined dotted; lines wrap at the axes' width.

    A generated answer explained token by token (``GenerationGame(..., per_token=True)``) is drawn once per answer
    token, one panel each, which spans drive which token (returns their axes); ``output`` picks one answer token
    (its position or name) or ``"total"`` (the whole answer, the sum of its tokens' values), as does ``ax=``.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("good") for t in ts], "good, bad", progress=False)
    >>> ax = text(e)
    """
    plt = pyplot()
    answer = answer_outputs(expl)
    if answer and output is None and ax is None:
        pieces = [str(p) for p in expl.data[0]]
        lines = _lines(pieces, width)
        fig, axes = plt.subplots(len(answer), 1, figsize=(width, len(answer) * (0.6 + 0.3 * lines)), squeeze=False)
        for j, a in enumerate(axes[:, 0]):
            text(expl, j, width, a)
        fig.tight_layout()
        return axes[:, 0]
    if answer and output is None:
        output = TOTAL
    pieces, v, se, label = text_values(expl, output)
    if ax is None:
        _, ax = plt.subplots(figsize=(width, 0.5 + 0.3 * _lines(pieces, width)))
    _draw(ax, pieces, v, se)
    ax.set_title(plain(f"{expl.index} values{label}") + f", base {base_value(expl, output):.3g}: red raises, blue "
                 "lowers; dotted: |value| < 2 s.e.", fontsize=9, loc="left")
    return ax


def _lines(pieces: list[str], width: float) -> float:
    return sum(len(p) for p in pieces) / (11 * width) + sum(p.count("\n") for p in pieces) + 1


def _draw(ax: Any, pieces: list[str], v: np.ndarray, se: np.ndarray) -> None:
    """The pieces on ``ax``, wrapped at its width, each shaded by its value."""
    ax.set_axis_off()
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    scale = shade_scale(v)
    x, y, line_height = 0.0, 1.0, None
    space = None
    for piece, value, err in zip(pieces, v, se):
        core = piece.strip()
        t = ax.text(x, y, plain(core), transform=ax.transAxes, va="top", ha="left", fontsize=10, family="DejaVu Sans",
                    bbox=dict(boxstyle="round,pad=0.15", fc=shade(value, scale),
                              ec="#555555" if abs(value) <= 2 * err else "none", ls=":", lw=0.8))
        extent = t.get_window_extent(renderer)
        w = extent.width / box.width
        line_height = line_height or 1.6 * extent.height / box.height
        if space is None:
            probe = ax.text(0, 0, "a a", fontsize=10, transform=ax.transAxes)
            one = ax.text(0, 0, "aa", fontsize=10, transform=ax.transAxes)
            space = (probe.get_window_extent(renderer).width - one.get_window_extent(renderer).width) / box.width
            probe.remove()
            one.remove()
        if x > 0 and x + w > 1.0:                                       # wrap before this token
            x, y = 0.0, y - line_height
            t.set_position((x, y))
        x += w + (space if piece != piece.rstrip() else 0.15 * space)
        if "\n" in piece[len(piece.rstrip()):]:
            x, y = 0.0, y - line_height
    ax.set_ylim(min(0.0, y - (line_height or 0.0)), 1.0)
