"""An image's values drawn over it: each pixel shaded by its player's value (red raises the output, blue lowers
it), the image in grey beneath."""

from __future__ import annotations

from typing import Any

import numpy as np

from .common import check_row, plain, pyplot

__all__ = ["image", "pixel_values"]


def pixel_values(expl: Any, row: int, output: Any = None) -> tuple[np.ndarray, str]:
    """The values of one image's pixels ``(H, W)`` (elements' values summed over the channels) for one output, and
    the label that names the output.

    Examples
    --------
    >>> import torch, fairshare as fs
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(16, 2)).eval()
    >>> e = fs.explain(net, torch.rand(1, 1, 4, 4), groups="patches", patch_size=2, progress=False)
    >>> pixel_values(e, 0, 1)[0].shape, pixel_values(e, 0, 1)[1]
    ((4, 4), ' (output 1)')
    """
    if "images" not in expl.info:
        raise ValueError("the image plot draws explanations of images (fs.explain of a torch module on images "
                         "(N, C, H, W))")
    values = expl.input_values()[row]
    label = ""
    if expl.values.ndim == 3:                               # several outputs: the last axis
        names = expl._outputs()
        j = 0 if output is None else names.index(str(output)) if str(output) in names else output
        if not isinstance(j, (int, np.integer)) or not 0 <= j < len(names):
            raise ValueError(f"output must be one of {names} (or a position in 0..{len(names) - 1}), got {output!r}")
        values, label = values[..., j], f" (output {names[j]})"
    elif output is not None:
        raise ValueError(f"output: this explanation has one output, got {output!r}")
    if values.ndim == 3:                                    # elements (C, H, W): a pixel's channels summed
        values = values.sum(axis=0)
    if "classes" in expl.info:
        label = f" (class {expl.info['classes'][row]})"
    return values, label


def _grey(picture: np.ndarray) -> np.ndarray:
    """An image ``(C, H, W)`` as grey levels in [0, 1]."""
    grey = picture.mean(axis=0)
    low, high = float(grey.min()), float(grey.max())
    return (grey - low) / (high - low) if high > low else np.zeros_like(grey)


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
    ax.imshow(_grey(np.asarray(expl.info["images"][row], dtype=float)), cmap="gray", interpolation="nearest")
    scale = float(np.abs(values).max()) or 1.0
    shown = ax.imshow(values, cmap="RdBu_r", vmin=-scale, vmax=scale, alpha=alpha, interpolation="nearest")
    ax.figure.colorbar(shown, ax=ax, fraction=0.046, pad=0.04)
    ax.set_axis_off()
    ax.set_title(plain(f"{expl.index} values{label}, image {expl.row_names[row]}: red raises, blue lowers"),
                 fontsize=9)
    return ax
