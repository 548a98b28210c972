"""What the image door reads, checked before any model call: images ``(N, C, H, W)`` (a tensor, an array, a list of
equal-sized images; ``layout="NHWC"`` for channels last), their players (patches, SLIC superpixels, integer labels
of pixels per image or shared, labels of every element, or every element), their baseline (a Gaussian blur of each
image, its mean colour, a number, one image, or a background batch) and the outputs explained."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.arrays import to_numpy
from .cells import check_finite_inputs

__all__ = ["read_images", "check_channels", "check_output", "ImagePlayers", "image_players", "image_baseline",
           "blurred", "SLIC_PARAMETERS"]

#: the scikit-image SLIC parameters ``slic=`` may set (``start_label`` and ``channel_axis`` are fixed)
SLIC_PARAMETERS = ("n_segments", "compactness", "max_num_iter", "sigma", "spacing", "convert2lab",
                   "enforce_connectivity", "min_size_factor", "max_size_factor", "slic_zero")


def _tensor(a: Any, dtype: Any = None) -> Any:
    """``a`` as a tensor of ``dtype`` (float32 where None)."""
    import torch

    dtype = torch.float32 if dtype is None else dtype
    if torch.is_tensor(a):
        if a.is_complex():                                  # torch's cast would drop the imaginary parts
            raise TypeError(f"must hold real numbers, got a tensor of {a.dtype}")
        return a.detach().to(dtype)
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"must hold numbers, got an array of {arr.dtype}")
    return torch.as_tensor(arr).to(dtype)


def read_images(X: Any, layout: str | None, dtype: Any = None) -> Any:
    """The images as one tensor ``(N, C, H, W)`` of ``dtype`` (the model's; float32 where None), where they were (a
    GPU tensor stays there); ``layout`` ``"NHWC"`` reads channels last; a list of images of different sizes is
    refused naming ``X``.

    Examples
    --------
    >>> import torch
    >>> tuple(read_images(np.zeros((2, 8, 6, 3)), "NHWC").shape), read_images(np.zeros((1, 1, 2, 2)), None).dtype
    ((2, 3, 8, 6), torch.float32)
    """
    import torch

    if isinstance(X, (list, tuple)):
        shapes = [tuple(getattr(x, "shape", ())) for x in X]
        if len(set(shapes)) > 1:
            other = next(i for i, s in enumerate(shapes) if s != shapes[0])
            raise ValueError(f"X holds images of different sizes: image 0 is {shapes[0]}, image {other} is "
                             f"{shapes[other]}; resize them to one size")
        try:
            X = torch.stack([_tensor(x, dtype) for x in X]) if X else torch.zeros((0, 1, 1, 1), dtype=dtype)
        except TypeError as exc:
            raise TypeError(f"X {exc}") from None
    else:
        try:
            X = _tensor(X, dtype)
        except TypeError as exc:
            raise TypeError(f"X {exc}") from None
    if X.ndim != 4:
        raise ValueError(f"X must hold images (N, C, H, W), got shape {tuple(X.shape)}")
    return X.permute(0, 3, 1, 2).contiguous() if layout == "NHWC" else X


def _first_layer(model: Any) -> Any:
    """The module's first layer with weights (in the order its layers are declared), or None."""
    for layer in model.modules() if hasattr(model, "modules") else ():
        if not any(True for _ in layer.children()) and any(True for _ in layer.parameters(recurse=False)):
            return layer
    return None


def first_sees_input(model: Any) -> bool:
    """Whether the model's first layer with weights certainly sees its input as given: the model is that layer, or
    a chain of ``torch.nn.Sequential`` whose first elements lead to it (a module with a forward of its own may
    reshape its input first).

    Examples
    --------
    >>> import torch
    >>> first_sees_input(torch.nn.Sequential(torch.nn.Sequential(torch.nn.Conv1d(1, 2, 3)), torch.nn.ReLU()))
    True
    >>> first_sees_input(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 1)))
    False
    """
    import torch

    layer = model
    while isinstance(layer, torch.nn.Sequential) and len(layer) > 0:
        layer = layer[0]
    return layer is not None and layer is _first_layer(model)


def check_channels(model: Any, images: Any, layout: str | None = None, given_hwc: bool = False) -> None:
    """Refuse inputs ``(N, ...)`` that the model's first layer, where it is a convolution, cannot take: it takes
    ``(N, C, *spatial)``, its channels ``C`` and as many spatial axes as its kernel has (checked before any model
    call, by the image door and the torch door).

    Examples
    --------
    >>> import torch
    >>> check_channels(torch.nn.Conv2d(3, 4, 3), torch.zeros(1, 1, 8, 8), None, False)
    Traceback (most recent call last):
    ...
    ValueError: X has 1 channels per image (N, C, H, W), the model's first layer (Conv2d) takes 3
    >>> check_channels(torch.nn.Conv2d(1, 4, 3), torch.zeros(2, 8, 8))
    Traceback (most recent call last):
    ...
    ValueError: X holds inputs shaped (8, 8) (X is (2, 8, 8)), the model's first layer (Conv2d) takes (N, 1, H, W); no channel axis? pass X[:, None], shaped (2, 1, 8, 8)
    """
    layer = _first_layer(model)
    wanted, kernel = getattr(layer, "in_channels", None), getattr(layer, "kernel_size", None)
    if not isinstance(wanted, int):
        return
    shape = tuple(int(d) for d in images.shape[1:])
    axes = len(kernel) if isinstance(kernel, tuple) else len(shape) - 1
    spatial = {1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"]}.get(axes, [f"S{k}" for k in range(axes)])
    form, name = f"(N, C, {', '.join(spatial)})", type(layer).__name__
    if len(shape) != axes + 1:
        hint = ""
        if len(shape) == axes and wanted == 1:
            hint = f"; no channel axis? pass X[:, None], shaped {(int(images.shape[0]), 1, *shape)}"
        elif len(shape) == axes and int(images.shape[0]) == wanted:
            hint = f"; one input? pass X[None], shaped {(1, *(int(d) for d in images.shape))}"
        raise ValueError(f"X holds inputs shaped {shape} (X is {tuple(int(d) for d in images.shape)}), the model's "
                         f"first layer ({name}) takes {form.replace('C', str(wanted), 1)}{hint}")
    if shape[0] == wanted:
        return
    hint = ""
    if layout != "NHWC" and given_hwc and images.shape[-1] == wanted:
        hint = "; channels last (N, H, W, C)? pass layout='NHWC'"
    raise ValueError(f"X has {shape[0]} channels per {'image' if axes == 2 else 'input'} {form}, the model's first "
                     f"layer ({name}) takes {wanted}{hint}")


def check_output(output: Any, model: Any, images: Any = None) -> Any:
    """``output`` (an index, a list of them, "top" or None) against the number of outputs the model gives for one of
    ``images``: counted by a forward pass on meta tensors (shapes only, no model call); where the module does not run
    so, the outputs of the last layer of a ``Sequential`` where it is a linear layer (else the first forward pass
    checks it: another module's last declared linear layer need not be its output, as an auxiliary head).

    Examples
    --------
    >>> import torch
    >>> check_output([0, 5], torch.nn.Linear(3, 4), torch.zeros(1, 3))
    Traceback (most recent call last):
    ...
    ValueError: output 5 is out of range: the model gives 4 outputs per image (0..3)
    """
    if output is None or output == "top":
        return output
    from ..games.cost import meta_outputs

    k = None if images is None else meta_outputs(model, tuple(images.shape[1:]), images.dtype)
    what = "the model gives"
    if k is None:
        last = _last_layer(model)
        k = getattr(last, "out_features", None)
        what = f"the model's last layer ({type(last).__name__}) gives"
    if isinstance(k, int):
        for j in [output] if isinstance(output, int) else output:
            if j >= k:
                raise ValueError(f"output {j} is out of range: {what} {k} outputs per image (0..{k - 1})")
    return output


def _last_layer(model: Any) -> Any:
    """The last layer with weights of a chain of ``torch.nn.Sequential`` (layers without weights after it, such as a
    softmax, skipped), or None: in any other module the order its layers are declared in need not be their order."""
    import torch

    layer = model
    while isinstance(layer, torch.nn.Sequential):
        weighted = [m for m in layer if any(True for _ in m.parameters())]
        if not weighted:
            return None
        layer = weighted[-1]
    return layer if layer is not model or not any(True for _ in layer.children()) else None


@dataclass
class ImagePlayers:
    """The players of every image: ``labels`` None (every element), ``(H, W)`` labels shared by every image,
    ``(N, H, W)`` one set per image, ``(C, H, W)`` labels of elements, or lists of flat element positions
    (``lists``); their names per image."""

    labels: Any
    names: list[list[str]]
    pixels: bool                    # labels of pixels (every channel of a pixel is its player's)
    per_image: bool                 # a set of players per image (their number may differ)
    lists: Any = None

    def groups(self, i: int, shape: tuple[int, ...]) -> Any:
        """The TorchGame ``groups`` of image ``i`` (one image's ``shape`` is (C, H, W))."""
        if self.lists is not None:
            return self.lists
        if self.labels is None:
            return None
        labels = self.labels[i] if self.per_image else self.labels
        return np.broadcast_to(labels[None], shape) if self.pixels else labels

    def label_map(self) -> Any:
        """What ``Explanation.input_values`` reads: labels of pixels ``(H, W)`` / ``(N, H, W)``, of elements, or
        None."""
        return None if self.labels is None else self.labels.tolist()


def _labels(given: Any, images: Any, feature_names: Any, per_image: bool = False) -> ImagePlayers:
    """Integer labels: (H, W) shared, (N, H, W) per image (``per_image``: given as a list of (H, W) arrays), (C, H, W)
    of elements; refused naming ``groups``."""
    n, c, h, w = (int(d) for d in images.shape)
    labels = np.asarray(given.detach().cpu() if hasattr(given, "detach") else given)
    shapes = {"(H, W)": (h, w), "(N, H, W)": (n, h, w), "(C, H, W)": (c, h, w)}
    fits = [name for name, s in shapes.items() if labels.shape == s and (not per_image or name == "(N, H, W)")]
    if labels.dtype.kind not in "iu" or not fits:
        raise ValueError(f"groups of images (N, C, H, W) = {(n, c, h, w)} must be 'patches', 'superpixels' or "
                         f"integer labels shaped (H, W) {(h, w)}, (N, H, W) {(n, h, w)} or (C, H, W) {(c, h, w)}; "
                         f"got an array of shape {labels.shape} and dtype {labels.dtype}")
    if len(fits) > 1:
        raise ValueError(f"groups of shape {labels.shape} reads both as labels per image (N, H, W) and as labels of "
                         f"every element (C, H, W) of these {n} images of {c} channels: pass labels per image as a "
                         "list of (H, W) arrays")
    if labels.size and labels.min() < 0:
        raise ValueError(f"groups must hold labels >= 0, got {int(labels.min())}")
    if fits[0] == "(N, H, W)":
        relabelled = [np.unique(lab, return_inverse=True)[1].reshape(h, w) for lab in labels]
        return ImagePlayers(np.stack(relabelled).astype(np.int64),
                            [[f"segment {j}" for j in range(int(r.max()) + 1)] for r in relabelled], True, True)
    uniq, inverse = np.unique(labels, return_inverse=True)
    names = [f"g{u}" for u in uniq.tolist()]
    if feature_names is not None:
        if len(feature_names) != len(names):
            raise ValueError(f"feature_names must name the {len(names)} players of groups, got {len(feature_names)}")
        names = list(feature_names)
    return ImagePlayers(inverse.reshape(labels.shape).astype(np.int64), [names] * n, fits[0] == "(H, W)", False)


def _patches(images: Any, patch_size: Any) -> ImagePlayers:
    n, _, h, w = (int(d) for d in images.shape)
    if patch_size is None:
        ph, pw = -(-h // 8), -(-w // 8)                      # at most 8 x 8 patches
    else:
        ph, pw = (patch_size, patch_size) if isinstance(patch_size, int) else patch_size
    if ph > h or pw > w:
        raise ValueError(f"patch_size {(ph, pw)} is larger than the images' {(h, w)} pixels")
    rows, cols = -(-h // ph), -(-w // pw)
    labels = (np.arange(h)[:, None] // ph) * cols + np.arange(w)[None, :] // pw
    names = [f"patch {r},{c}" for r in range(rows) for c in range(cols)]
    return ImagePlayers(labels.astype(np.int64), [names] * n, True, False)


def _superpixels(images: Any, slic: dict | None) -> ImagePlayers:
    try:
        from skimage.segmentation import slic as segment
    except ImportError as exc:
        raise ImportError("groups='superpixels' needs scikit-image: pip install 'fairshare[image]'") from exc
    params = {"n_segments": 50, "compactness": 10.0, **(slic or {})}
    arrays = to_numpy(images).transpose(0, 2, 3, 1).astype(np.float64)     # bfloat16, which numpy lacks: float
    labels, names = [], []
    for image in arrays:                               # once per image, before any model call
        lab = segment(image, start_label=0, channel_axis=-1, **params)
        lab = np.unique(lab, return_inverse=True)[1].reshape(lab.shape)
        labels.append(lab)
        names.append([f"segment {j}" for j in range(int(lab.max()) + 1)])
    return ImagePlayers(np.stack(labels).astype(np.int64), names, True, True)


def image_players(groups: Any, images: Any, patch_size: Any, slic: Any, feature_names: Any) -> ImagePlayers:
    """The players of every image from ``groups`` (None, "patches", "superpixels", integer labels or lists of flat
    element positions).

    Examples
    --------
    >>> p = image_players("patches", np.zeros((2, 3, 4, 6)), 2, None, None)
    >>> p.labels.tolist()[0], p.names[0][:2]
    ([0, 0, 1, 1, 2, 2], ['patch 0,0', 'patch 0,1'])
    """
    n, c, h, w = (int(d) for d in images.shape)
    if feature_names is not None and (groups is None or groups == "superpixels"):
        raise ValueError("feature_names name shared players (patches, label arrays); "
                         f"{'every element' if groups is None else 'superpixels differ between images'}: leave it None")
    if isinstance(groups, str):
        misplaced = "slic" if groups == "patches" and slic is not None else \
            "patch_size" if groups == "superpixels" and patch_size is not None else None
        if misplaced:
            raise ValueError(f"{misplaced} is for groups={'superpixels' if misplaced == 'slic' else 'patches'!r}; "
                             f"groups is {groups!r}: leave {misplaced} out")
        if groups == "patches":
            players = _patches(images, patch_size)
            if feature_names is not None:
                if len(feature_names) != len(players.names[0]):
                    raise ValueError(f"feature_names must name the {len(players.names[0])} patches, got "
                                     f"{len(feature_names)}")
                players.names = [list(feature_names)] * n
            return players
        if groups == "superpixels":
            return _superpixels(images, slic)
        raise ValueError(f"groups of images must be 'patches', 'superpixels', integer labels or lists of element "
                         f"positions, got {groups!r}")
    if patch_size is not None or slic is not None:
        raise ValueError("patch_size is for groups='patches' and slic for groups='superpixels'; groups is "
                         f"{'None' if groups is None else type(groups).__name__}")
    if groups is None:
        from .cells import cell_names

        return ImagePlayers(None, [cell_names((c, h, w))] * n, False, False)
    if hasattr(groups, "shape"):
        return _labels(groups, images, feature_names)
    lists = list(groups)
    if lists and all(np.ndim(g) == 2 for g in lists):                  # labels per image, one (H, W) array each
        if len({np.shape(g) for g in lists}) > 1:
            raise ValueError("groups given as a list of label arrays must hold one (H, W) array per image")
        return _labels(np.stack([np.asarray(g.detach().cpu() if hasattr(g, "detach") else g) for g in lists]),
                       images, feature_names, per_image=True)
    return ImagePlayers(None, [[f"x{j}" for j in range(len(lists))]] * n, False, False, lists=lists)


def blurred(images: Any, sigma: float) -> Any:
    """Each image blurred by a Gaussian of ``sigma`` pixels (separable, edges replicated), where the images are and in
    their dtype (a float64 module's images stay float64).

    Examples
    --------
    >>> import torch
    >>> round(float(blurred(torch.ones(1, 2, 5, 5), 1.0).mean()), 6), blurred(torch.ones(1, 1, 3, 3).double(), 1.0).dtype
    (1.0, torch.float64)
    """
    import torch

    radius = max(1, int(3.0 * sigma + 0.5))
    t = torch.arange(-radius, radius + 1, dtype=images.dtype, device=images.device)
    kernel = torch.exp(-0.5 * (t / sigma) ** 2)
    kernel = kernel / kernel.sum()
    c = images.shape[1]
    pad = torch.nn.functional.pad
    out = pad(images, (radius, radius, 0, 0), mode="replicate")
    out = torch.nn.functional.conv2d(out, kernel.view(1, 1, 1, -1).repeat(c, 1, 1, 1), groups=c)
    out = pad(out, (0, 0, radius, radius), mode="replicate")
    return torch.nn.functional.conv2d(out, kernel.view(1, 1, -1, 1).repeat(c, 1, 1, 1), groups=c)


def image_baseline(baseline: Any, name: str, images: Any, layout: str | None,
                   sigma: float | None) -> tuple[Any, bool, str]:
    """What absent pixels take, whether it is one per image, and its description: per image ``(N, C, H, W)``
    ("blur", "mean"), else shared (a number, one image ``(C, H, W)``) or a background batch ``(B, C, H, W)``;
    ``name`` is the argument it came from.

    Examples
    --------
    >>> import torch
    >>> image_baseline("mean", "baseline", torch.arange(8.0).reshape(1, 2, 2, 2), None, None)[0][0, :, 0, 0].tolist()
    [1.5, 5.5]
    """
    _, c, h, w = (int(d) for d in images.shape)
    if sigma is not None and baseline != "blur":
        raise ValueError(f"sigma is the blur of baseline='blur'; {name} is {baseline!r}")
    if baseline is None:
        return 0.0, False, "baseline 0"
    if isinstance(baseline, str):
        if baseline == "blur":
            s = float(sigma) if sigma is not None else max(1.0, min(h, w) / 16)
            return blurred(images, s), True, f"baseline: each image blurred (Gaussian, sigma {s:g} pixels)"
        if baseline == "mean":
            return images.mean(dim=(2, 3), keepdim=True).expand_as(images), True, "baseline: each image's mean colour"
        raise ValueError(f"{name} must be 'blur', 'mean', a number, one image or a batch of images, got {baseline!r}")
    if np.ndim(baseline) == 0 and not hasattr(baseline, "shape"):
        if isinstance(baseline, bool) or not isinstance(baseline, (int, float, np.number)) or \
                not np.isfinite(baseline):
            raise ValueError(f"{name} must be 'blur', 'mean', a finite number, one image or a batch of images, got "
                             f"{baseline!r}")
        return float(baseline), False, f"baseline {float(baseline):g}"
    try:
        base = _tensor(baseline, images.dtype).to(images.device)
    except TypeError as exc:
        raise TypeError(f"{name} {exc}") from None
    if base.ndim == 0:
        return float(base), False, f"baseline {float(base):g}"
    if layout == "NHWC" and base.ndim in (3, 4):
        base = base.permute(2, 0, 1) if base.ndim == 3 else base.permute(0, 3, 1, 2)
    if base.ndim == 4 and base.shape[0] == 1:
        base = base[0]
    if tuple(base.shape) != (c, h, w) and not (base.ndim == 4 and tuple(base.shape[1:]) == (c, h, w)
                                               and base.shape[0] > 0):
        raise ValueError(f"{name} must be 'blur', 'mean', a number, one image {(c, h, w)} or a batch of images "
                         f"(B, {c}, {h}, {w}) in the layout of X, got shape {tuple(base.shape)}")
    check_finite_inputs(base[None] if base.ndim == 3 else base, name)
    if base.ndim == 4:
        return base.contiguous(), False, f"marginal (the mean over {base.shape[0]} background images)"
    return base.contiguous(), False, "baseline: one image"
