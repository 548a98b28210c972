"""Images in the report: an image's pixel values, the image in grey, a diverging colour map, and both as PNG data
URIs (written here with zlib: no imaging library, no file beside the page)."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import numpy as np

from ..html import output_position

__all__ = ["pixel_values", "grey", "diverging", "png_uri", "image_layers"]

#: the diverging map's anchors at -1, 0 and +1: blue lowers the output, red raises it (matplotlib's RdBu_r ends)
_ANCHORS = np.array([[33, 102, 172], [247, 247, 247], [178, 24, 43]], dtype=float)


def pixel_values(expl: Any, row: int, output: Any = None) -> tuple[np.ndarray, str]:
    """The values of one image's pixels ``(H, W)`` (elements' values summed over the channels) for one output, and
    the label that names the output. ``output`` is picked as for the other plots and the report's summary
    (:func:`~fairshare.results.html.output_position`: by name or position; default the positive class of a binary
    classifier, else the first).

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
    if expl.values.ndim == 3:                               # several outputs: the last axis, picked as the others are
        j = output_position(expl, output)
        values, label = values[..., j], f" (output {expl._outputs()[j]})"
    elif output is not None:
        raise ValueError(f"output: this explanation has one output, got {output!r}")
    if values.ndim == 3:                                    # elements (C, H, W): a pixel's channels summed
        values = values.sum(axis=0)
    if "classes" in expl.info:
        label = f" (class {expl.info['classes'][row]})"
    return values, label


def grey(picture: np.ndarray) -> np.ndarray:
    """An image ``(C, H, W)`` as grey levels in [0, 1] (its channels' mean, stretched to the full range).

    Examples
    --------
    >>> grey(np.array([[[1.0, 3.0]], [[1.0, 5.0]]])).tolist()
    [[0.0, 1.0]]
    """
    level = np.asarray(picture, dtype=float).mean(axis=0)
    low, high = float(level.min()), float(level.max())
    return (level - low) / (high - low) if high > low else np.zeros_like(level)


def diverging(values: np.ndarray, scale: float) -> np.ndarray:
    """RGB colours (uint8, ``values.shape + (3,)``) of ``values`` on a scale symmetric about zero: blue at
    ``-scale``, near white at 0, red at ``+scale`` (beyond the scale: its end's colour; NaN: white).

    Examples
    --------
    >>> diverging(np.array([-2.0, 0.0, 2.0]), 2.0).tolist()
    [[33, 102, 172], [247, 247, 247], [178, 24, 43]]
    """
    values = np.asarray(values, dtype=float)
    t = np.clip(np.nan_to_num(values / scale if scale > 0 else np.zeros_like(values)), -1.0, 1.0)[..., None]
    end = np.where(t >= 0, _ANCHORS[2], _ANCHORS[0])
    return np.rint(_ANCHORS[1] + (end - _ANCHORS[1]) * np.abs(t)).astype(np.uint8)


def png_uri(pixels: np.ndarray) -> str:
    """A ``data:image/png;base64,...`` URI of ``pixels``: ``(H, W)`` grey levels or ``(H, W, 3)`` RGB, uint8.

    Examples
    --------
    >>> uri = png_uri(np.zeros((2, 3), dtype=np.uint8))
    >>> uri.startswith("data:image/png;base64,iVBORw0KGgo")
    True
    """
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    height, width = pixels.shape[:2]
    colour = 0 if pixels.ndim == 2 else 2
    rows = pixels.reshape(height, -1)
    raw = np.hstack([np.zeros((height, 1), dtype=np.uint8), rows]).tobytes()      # filter 0 before each row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def image_layers(expl: Any, output: Any = None) -> list[dict]:
    """Per image of an Explanation of images: the image in grey and its pixel values coloured (PNG data URIs), the
    scale of the colours (the largest |pixel value|), the label of the output and the image's size.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=[[1.0, -1.0]], stderr=None, empty_value=[0.0], index="shapley",
    ...                    info={"images": np.ones((1, 1, 2, 2)), "input_shape": [2, 2],
    ...                          "input_groups": [[0, 0], [1, 1]]})
    >>> [(layer["scale"], layer["size"]) for layer in image_layers(e)]
    [(1.0, [2, 2])]
    """
    layers = []
    for row in range(len(expl.values)):
        values, label = pixel_values(expl, row, output)
        scale = float(np.nanmax(np.abs(values))) if values.size else 0.0
        picture = np.asarray(expl.info["images"][row], dtype=float)
        layers.append({"grey": png_uri(np.rint(255 * grey(picture)).astype(np.uint8)),
                       "heat": png_uri(diverging(values, scale)), "scale": scale, "label": label,
                       "size": [int(values.shape[0]), int(values.shape[1])]})
    return layers
