"""A text drawn token by token, each shaded by its value."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results.html import shade, text_values
from .common import pyplot, plain

__all__ = ["text"]


def text(expl: Any, output: Any = None, width: float = 9.0, ax: Any = None) -> Any:
    """The text drawn token by token, each on a background shaded by its value (red raises the output, blue
    lowers it), a token within two standard errors of zero outlined dotted; lines wrap at the axes' width.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("good") for t in ts], "good, bad", progress=False)
    >>> ax = text(e)
    """
    plt = pyplot()
    pieces, v, se, label = text_values(expl, output)
    if ax is None:
        lines = sum(len(p) for p in pieces) / (11 * width) + sum(p.count("\n") for p in pieces) + 1
        _, ax = plt.subplots(figsize=(width, 0.5 + 0.3 * lines))
    ax.set_axis_off()
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    scale = float(np.abs(v).max()) if v.size else 0.0
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
    ax.set_ylim(min(0.0, y - line_height), 1.0)
    base = np.asarray(expl.empty_value, dtype=float).reshape(-1)
    ax.set_title(plain(f"{expl.index} values{label}") + f", base {base[-1]:.3g}: red raises, blue lowers; dotted: |value| < 2 s.e.",
                 fontsize=9, loc="left")
    return ax
