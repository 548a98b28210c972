"""``fairshare explain``: a saved model's values on rows of a CSV file, on texts, or on images (an ``.npy`` file or a
folder of pictures, for a saved torch model), written to CSV, HTML, PNG and NPY."""

from __future__ import annotations

import argparse

from pathlib import Path
from typing import Any

from ..results.base import frame_clash
from .columns import refuse_words, words_refused
from .files import aligned, check_paths, parse_partition, parse_rows, read_csv, read_texts
from .model_files import load_model

__all__ = ["add_explain", "run_explain"]


def add_explain(sub: argparse._SubParsersAction, index_help: str) -> None:
    """The ``explain`` command's flags."""
    p = sub.add_parser("explain", help="explain a saved model's predictions on rows of a CSV file, or on texts")
    p.add_argument("--model", required=True, help="the model: .json / .ubj (xgboost), .txt (lightgbm), .cbm "
                   "(catboost), .skops (scikit-learn), .pt2 (torch.export, dynamic batch), .pt (TorchScript, or a "
                   "state dict with --architecture); a .joblib / .pkl file runs code when loaded and is read only "
                   "with --trust-model")
    p.add_argument("--trust-model", action="store_true", help="read a joblib / pickle --model (it runs whatever "
                   "code its maker put in it: only for files you trust)")
    p.add_argument("--architecture", default=None, help="a torch state dict --model (.pt / .pth, read as tensors "
                   "only): the code that builds its network, MODULE:NAME or FILE.py:NAME (a class or function "
                   "called with no arguments)")
    p.add_argument("--data", default=None, help="CSV with the rows to explain (the model's feature columns)")
    p.add_argument("--texts", default=None, help="instead of --data: a file of texts, one per line (\\n for a line "
                   "break) or .jsonl; the model takes a list of strings (e.g. a scikit-learn text pipeline)")
    p.add_argument("--images", default=None, help="instead of --data: images for a torch --model (.pt / .pt2): an "
                   ".npy file (N, C, H, W), or (N, H, W, C) with --layout NHWC, or a folder of pictures (.png, .jpg, "
                   ".bmp, .tif; read as channels in [0, 1])")
    p.add_argument("--layout", default=None, choices=["NCHW", "NHWC"], help="images: the .npy file's layout")
    p.add_argument("--groups", default="patches", choices=["patches", "superpixels"],
                   help="images: the players (default patches)")
    p.add_argument("--patch-size", type=int, default=None, help="images: patches' size in pixels (default: at most "
                   "8 x 8 patches)")
    p.add_argument("--baseline", default=None, help="images: blur, mean, a number, or an .npy file of one image or a "
                   "batch of background images (default 0)")
    p.add_argument("--sigma", type=float, default=None, help="images, --baseline blur: the Gaussian's sigma in pixels")
    p.add_argument("--output", default="top", help="images: top (each image's predicted class, the default), an "
                   "index, or indices separated by commas")
    p.add_argument("--batch-size", default=None, help="images: images per forward pass, or auto (a GPU's free "
                   "memory)")
    p.add_argument("--pixels", default=None, help="images: also write the values on the pixels, (N, H, W[, k]), to "
                   "this .npy file")
    p.add_argument("--mask-token", default=None, help="texts: replace removed tokens by this (default: delete them)")
    p.add_argument("--tokenizer", default=None, help="texts: a regular expression whose matches are the tokens "
                   "(default: words and punctuation)")
    p.add_argument("--partition", default=None, help="--index owen: correlation (tables), sentences (texts) or a "
                   "JSON list of blocks, e.g. [[0,1],[2,3,4]]")
    p.add_argument("--html", default=None, help="write a self-contained HTML report (nothing fetched when opened) to "
                   "this file: the run's facts, bar and beeswarm plots, each row's waterfall and values with error bars "
                   "(images: their values over them); texts: every text, tokens shaded by value")
    p.add_argument("--rows", default=None, help="rows to explain: 10, 0:100, 5: (default all)")
    p.add_argument("--background", default=None, help="CSV of baseline rows (required except for tree models)")
    p.add_argument("--index", default="shapley", help=f"{index_help} (default shapley)")
    p.add_argument("--method", default="auto", help="a method from `fairshare methods`, or auto (default)")
    p.add_argument("--budget", type=int, default=None, help="evaluations per row (default 2n + 2048)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output CSV: one row per input row, one column per feature (texts: "
                   "one row per token: text, position, token, value, stderr)")
    p.add_argument("--plot", default=None, help="write a beeswarm (or, for one row, waterfall; texts: the first text) "
                   "plot to this PNG")
    p.add_argument("--interactions", default=None, help="also write shap's pairwise interaction matrices (half of "
                   "each pair's SII off the diagonal, the rest of each value on it; BII for Banzhaf) to this CSV: row, "
                   "feature_i, feature_j, value, stderr")
    p.add_argument("--overwrite", action="store_true", help="replace output files that exist already")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_explain)


def _model(args: argparse.Namespace) -> Any:
    """The --model file, read as its flags say (--trust-model, --architecture)."""
    return load_model(args.model, trust=args.trust_model, architecture=args.architecture)


def run_explain(args: argparse.Namespace) -> int:
    """Run ``fairshare explain``: every path and flag checked before the model is read."""
    baseline_file = args.baseline if args.baseline is not None and args.baseline.lower().endswith(".npy") else None
    check_paths({"--model": args.model, "--data": args.data, "--background": args.background, "--texts": args.texts,
                 "--images": args.images, "--baseline": baseline_file},
                {"--out": args.out, "--plot": args.plot, "--html": args.html, "--interactions": args.interactions,
                 "--pixels": args.pixels}, args.overwrite)
    if args.images:
        if args.data or args.texts or args.background or args.interactions:
            raise ValueError("--images takes no --data, --texts, --background (use --baseline) or --interactions")
        return _explain_images(args)
    if args.pixels or args.layout or args.baseline is not None or args.sigma is not None or args.patch_size:
        raise ValueError("--layout, --baseline, --sigma, --patch-size and --pixels are for --images")
    if args.texts:
        if args.data or args.background or args.interactions:
            raise ValueError("--texts takes no --data, --background or --interactions")
    elif args.data is None:
        raise ValueError("--data (a CSV of rows), --texts (a file of texts) or --images is required")
    elif args.mask_token is not None or args.tokenizer is not None:
        raise ValueError("--mask-token and --tokenizer are for --texts")
    partition = parse_partition(args.partition)
    if args.texts:
        texts = read_texts(args.texts)
        numbers = parse_rows(args.rows, len(texts), "texts")
        args.picked = numbers                   # the door numbers the texts it is given; messages, the file's lines
        if args.plot and not any(texts[i].strip() for i in numbers):   # a text that is not blank has tokens or fails
            raise ValueError(f"--plot {args.plot}: --rows {args.rows} picks only blank lines of --texts {args.texts}, "
                             "no tokens to draw; pick lines with text, or leave out --plot")
        return _explain_texts(_model(args), args, partition, texts, numbers)
    frame = read_csv(args.data, "--data")
    picked = args.picked = parse_rows(args.rows, len(frame))     # messages number X's rows as the file's
    background = None if args.background is None else read_csv(args.background, "--background")
    model = _model(args)
    data = aligned(frame, model, "--data", args.data)
    clash = frame_clash([str(c) for c in data.columns], index="row")
    if clash is not None:                       # --out's columns would be ambiguous (or its row column not written)
        raise ValueError(f"--data {args.data}: {clash} of --out {args.out}; rename the column (and the model's feature)")
    if background is not None:
        background = aligned(background, model, "--background", args.background, [str(c) for c in data.columns])
    from ..doors.explain import explain
    from ..games.model import ModelError
    from ..trees.readers import is_tree_model

    rows = {f"--data {args.data}": data.iloc[picked], f"--background {args.background}": background}
    for where, frame in rows.items():           # a tree model reads words itself (its categories), or names them
        if frame is not None and not is_tree_model(model):
            refuse_words(frame, model, where)
    try:
        expl = explain(model, data.iloc[picked], background, index=args.index, method=args.method,
                       budget=args.budget, seed=args.seed, progress=not args.quiet,
                       interactions=2 if args.interactions else None, partition=partition)
    except ModelError as exc:                   # a model fairshare cannot describe, failing on the words
        raise words_refused(exc, rows) or exc
    expl.to_frame().reset_index().to_csv(args.out, index=False)
    if args.interactions:
        expl.interactions_frame().to_csv(args.interactions, index=False)
    if args.html:
        expl.to_html(args.html, model=model)
    if args.plot:
        from .. import plots

        ax = plots.beeswarm(expl) if len(expl) > 1 else plots.waterfall(expl)
        ax.figure.savefig(args.plot, dpi=120)
    rows = f"{len(expl)} row{'s' if len(expl) != 1 else ''}"
    print(f"explained {rows} x {expl.values.shape[1]} features ({expl.method}) "
          f"-> {args.out}" + (f", report {args.html}" if args.html else "") + (f", plot {args.plot}" if args.plot else "")
          + (f", pairwise interactions {args.interactions}" if args.interactions else ""))
    return 0


def _explain_texts(model, args: argparse.Namespace, partition, texts: list[str], numbers: list[int]) -> int:
    """``fairshare explain --texts``: a long CSV (text, position, token, value and stderr per output)."""
    import pandas as pd

    from ..doors.explain import explain

    expls = explain(model, [texts[i] for i in numbers], index=args.index, method=args.method, budget=args.budget,
                    seed=args.seed, progress=not args.quiet, partition=partition, mask_token=args.mask_token,
                    tokenizer=args.tokenizer)
    frames = []
    for number, e in zip(numbers, expls):
        frame = pd.DataFrame({"text": number, "position": range(len(e.player_names)),
                              "token": [str(p).strip() for p in e.data[0]]})
        outputs = e.output_names or [None]
        for j, name in enumerate(outputs):
            suffix = "" if name is None else f"_{name}"
            frame["value" + suffix] = e.values[0] if name is None else e.values[0, :, j]
            frame["stderr" + suffix] = (e.stderr[0] if name is None else e.stderr[0, :, j]) if e.stderr is not None \
                else float("nan")
        frames.append(frame)
    drawn = next((e for e in expls if e.player_names), None)
    if args.plot and drawn is None:             # checked before the model is read; never after an output is written
        raise ValueError(f"--plot {args.plot}: no text with tokens to draw")
    pd.concat(frames).to_csv(args.out, index=False)
    if args.html:
        from ..results.html import texts_page

        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(texts_page(expls, [f"text {n}" for n in numbers]))
    if args.plot:
        from ..plots import text

        ax = text(drawn)
        ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"explained {len(expls)} text{'s' if len(expls) != 1 else ''}, {sum(len(e.player_names) for e in expls)} "
          f"tokens -> {args.out}"
          + (f", html {args.html}" if args.html else "") + (f", plot {args.plot}" if args.plot else ""))
    return 0


_PICTURES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


def read_images(path: str) -> tuple[Any, list[str]]:
    """The images of ``--images``: an ``.npy`` array, or every picture of a folder (sorted by name) as channels
    ``(N, H, W, C)`` in [0, 1]; and their names. Pictures of different sizes are refused, naming two.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy"); np.save(path, np.zeros((2, 3, 4, 4)))
    >>> read_images(path)[0].shape, read_images(path)[1]
    ((2, 3, 4, 4), ['0', '1'])
    """
    import numpy as np

    folder = Path(path)
    if not folder.is_dir():
        if folder.suffix.lower() != ".npy":
            raise ValueError(f"--images {path}: give an .npy file or a folder of pictures")
        arr = np.load(folder, allow_pickle=False)
        if arr.ndim != 4:
            raise ValueError(f"--images {path}: the array must be (N, C, H, W) or (N, H, W, C), got {arr.shape}")
        return arr, [str(i) for i in range(arr.shape[0])]
    from PIL import Image

    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in _PICTURES)
    if not files:
        raise ValueError(f"--images {path}: no pictures ({', '.join(_PICTURES)}) in the folder")
    pictures = []
    for f in files:
        with Image.open(f) as picture:
            picture = picture.convert("L" if picture.mode in ("1", "L", "I", "I;16", "F") else "RGB")
            a = np.asarray(picture, dtype=np.float32) / 255.0
        pictures.append(a[..., None] if a.ndim == 2 else a)
        if pictures[-1].shape != pictures[0].shape:
            raise ValueError(f"--images {path}: the pictures differ in size ({files[0].name} is "
                             f"{pictures[0].shape[:2]}, {f.name} is {pictures[-1].shape[:2]}); resize them to one")
    return np.stack(pictures), [f.name for f in files]


def _image_flags(args: argparse.Namespace) -> dict:
    """The image flags as ``explain``'s arguments (checked there, before the model is called)."""
    import numpy as np

    output: Any = args.output
    if output != "top":
        try:
            parts = [int(p) for p in output.split(",")]
        except ValueError:
            raise ValueError(f"--output must be top, an index or indices separated by commas, got {output!r}") from None
        output = parts[0] if len(parts) == 1 else parts
    baseline: Any = args.baseline
    if baseline is not None and baseline not in ("blur", "mean"):
        if baseline.lower().endswith(".npy"):
            try:
                baseline = np.load(baseline, allow_pickle=False)
            except (OSError, ValueError) as error:
                raise ValueError(f"--baseline {baseline}: " + ("no such file" if isinstance(error, FileNotFoundError)
                                                               else f"not a readable .npy file ({error})")) from None
        else:
            try:
                baseline = float(baseline)
            except ValueError:
                raise ValueError(f"--baseline must be blur, mean, a number or an .npy file, got {baseline!r}") from None
    batch = args.batch_size
    if batch is not None and batch != "auto":
        if not batch.isdigit():
            raise ValueError(f"--batch-size must be a positive integer or auto, got {batch!r}")
        batch = int(batch)
    return dict(groups=args.groups, patch_size=args.patch_size, baseline=baseline, sigma=args.sigma, output=output,
                batch_size=batch)


def _refused_images(path: str, shape: tuple, layout: str | None, exc: BaseException) -> str:
    """The message of a model that refused the images, with the layout to try where they look channels-last.

    Examples
    --------
    >>> print(_refused_images("x.npy", (2, 16, 16, 3), None, AssertionError("Guard failed: input.size()[1] == 3")))
    ... # doctest: +NORMALIZE_WHITESPACE
    --images x.npy: the model refused images of shape (2, 16, 16, 3) (Guard failed: input.size()[1] == 3); they
    look channels-last: pass --layout NHWC
    """
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    last = len(shape) == 4 and layout != "NHWC" and shape[-1] in (1, 3, 4) and shape[1] not in (1, 3, 4)
    return (f"--images {path}: the model refused images of shape {tuple(shape)} ({first})"
            + ("; they look channels-last: pass --layout NHWC" if last else ""))


def _explain_images(args: argparse.Namespace) -> int:
    """``fairshare explain --images``: a long CSV (image, player, value and stderr per output)."""
    import numpy as np
    import pandas as pd

    from ..doors.explain import explain

    flags = _image_flags(args)
    images, names = read_images(args.images)
    layout = args.layout or ("NHWC" if Path(args.images).is_dir() else None)
    numbers = args.picked = parse_rows(args.rows, len(images), "images")
    model = _model(args)
    try:
        e = explain(model, images[numbers], layout=layout, index=args.index, method=args.method, budget=args.budget,
                    seed=args.seed, progress=not args.quiet, **flags)
    except (AssertionError, RuntimeError) as exc:   # the model's own refusal of the images' shape
        raise ValueError(_refused_images(args.images, images.shape, layout, exc)) from None
    frame = pd.DataFrame({"image": np.repeat([names[i] for i in numbers], len(e.player_names)),
                          "player": np.tile(e.player_names, len(e))})
    outputs = e.output_names if e.values.ndim == 3 else [None]
    for j, name in enumerate(outputs):
        suffix = "" if name is None else f"_{name}"
        values = e.values if name is None else e.values[..., j]
        frame["value" + suffix] = values.reshape(-1)
        stderr = None if e.stderr is None else e.stderr if name is None else e.stderr[..., j]
        frame["stderr" + suffix] = float("nan") if stderr is None else stderr.reshape(-1)
    if "classes" in e.info:
        frame.insert(1, "class", np.repeat(e.info["classes"], len(e.player_names)))
    frame.to_csv(args.out, index=False)
    if args.pixels:
        np.save(args.pixels, e.input_values())
    if args.html:
        e.row_names = [names[i] for i in numbers]
        e.to_html(args.html, model=model)
    if args.plot:
        ax = e.plot("image", row=0)
        ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"explained {len(e)} images x {e.values.shape[1]} players ({e.method}) -> {args.out}"
          + (f", pixels {args.pixels}" if args.pixels else "") + (f", report {args.html}" if args.html else "")
          + (f", plot {args.plot}" if args.plot else ""))
    return 0
