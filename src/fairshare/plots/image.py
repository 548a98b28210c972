"""An image's values drawn over it: each pixel shaded by its player's value (red raises the output, blue lowers
it), the image in grey beneath."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results.report.pictures import grey, pixel_values
from .common import check_row, plain, pyplot

__all__ = ["image", "pixel_values"]


def image(expl: Any, row: int = 0, output: Any = None, alpha: float = 0.6, ax: Any = None) -> Any:
    """One image's values over the image: the image in grey, each pixel shaded by its player's value on a scale
    symmetric about zero (red raises the output, blue lowers it), a colour bar of the values.

    Parameters
    ----------
    expl : an Explanation of images (``fs.explain`` of a torch module on images)
    row : which image
    output : which output (its name or position) where several were explained
    alpha : opacity of the values over the image
    ax : axes to draw on

    Examples
    --------
    >>> import torch, fairshare as fs
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(32, 3)).eval()
    >>> e = fs.explain(net, torch.rand(2, 3, 4, 4), groups="patches", patch_size=2, output="top", progress=False)
    >>> ax = image(e, row=1)
    """
    plt = pyplot()
    row = check_row(expl, row)
    values, label = pixel_values(expl, row, output)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.0))
    ax.imshow(grey(np.asarray(expl.info["images"][row], dtype=float)), cmap="gray", interpolation="nearest")
    scale = float(np.abs(values).max()) or 1.0
    shown = ax.imshow(values, cmap="RdBu_r", vmin=-scale, vmax=scale, alpha=alpha, interpolation="nearest")
    ax.figure.colorbar(shown, ax=ax, fraction=0.046, pad=0.04)
    ax.set_axis_off()
    ax.set_title(plain(f"{expl.index} values{label}, image {expl.row_names[row]}: red raises, blue lowers"),
                 fontsize=9)
    return ax
