"""``fairshare explain``: a saved model's values on rows of a CSV file, or on texts, written to CSV, HTML and PNG."""

from __future__ import annotations

import argparse

from .files import aligned, check_paths, parse_partition, parse_rows, read_csv, read_texts
from .model_files import load_model

__all__ = ["add_explain", "run_explain"]


def add_explain(sub: argparse._SubParsersAction, index_help: str) -> None:
    """The ``explain`` command's flags."""
    p = sub.add_parser("explain", help="explain a saved model's predictions on rows of a CSV file, or on texts")
    p.add_argument("--model", required=True, help="the model: .json / .ubj (xgboost), .txt (lightgbm), .cbm "
                   "(catboost), .skops (scikit-learn), .pt2 (torch.export, dynamic batch) or .pt (TorchScript); a .joblib / .pkl file runs code when "
                   "loaded and is read only with --trust-model")
    p.add_argument("--trust-model", action="store_true", help="read a joblib / pickle --model (it runs whatever "
                   "code its maker put in it: only for files you trust)")
    p.add_argument("--data", default=None, help="CSV with the rows to explain (the model's feature columns)")
    p.add_argument("--texts", default=None, help="instead of --data: a file of texts, one per line (\\n for a line "
                   "break) or .jsonl; the model takes a list of strings (e.g. a scikit-learn text pipeline)")
    p.add_argument("--mask-token", default=None, help="texts: replace removed tokens by this (default: delete them)")
    p.add_argument("--tokenizer", default=None, help="texts: a regular expression whose matches are the tokens "
                   "(default: words and punctuation)")
    p.add_argument("--partition", default=None, help="--index owen: correlation (tables), sentences (texts) or a "
                   "JSON list of blocks, e.g. [[0,1],[2,3,4]]")
    p.add_argument("--html", default=None, help="texts: write every text, tokens shaded by value, to this HTML file")
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


def run_explain(args: argparse.Namespace) -> int:
    """Run ``fairshare explain``: every path and flag checked before the model is read."""
    check_paths({"--model": args.model, "--data": args.data, "--background": args.background, "--texts": args.texts},
                {"--out": args.out, "--plot": args.plot, "--html": args.html, "--interactions": args.interactions},
                args.overwrite)
    if args.texts:
        if args.data or args.background or args.interactions:
            raise ValueError("--texts takes no --data, --background or --interactions")
    elif args.data is None:
        raise ValueError("--data (a CSV of rows) or --texts (a file of texts) is required")
    elif args.mask_token is not None or args.tokenizer is not None or args.html:
        raise ValueError("--mask-token, --tokenizer and --html are for --texts")
    partition = parse_partition(args.partition)
    if args.texts:
        texts = read_texts(args.texts)
        numbers = parse_rows(args.rows, len(texts), "texts")
        return _explain_texts(load_model(args.model, trust=args.trust_model), args, partition, texts, numbers)
    frame = read_csv(args.data, "--data")
    picked = parse_rows(args.rows, len(frame))
    background = None if args.background is None else read_csv(args.background, "--background")
    model = load_model(args.model, trust=args.trust_model)
    data = aligned(frame, model, "--data", args.data)
    if background is not None:
        background = aligned(background, model, "--background", args.background, [str(c) for c in data.columns])
    from ..doors.explain import explain

    expl = explain(model, data.iloc[picked], background, index=args.index, method=args.method, budget=args.budget,
                   seed=args.seed, progress=not args.quiet, interactions=2 if args.interactions else None,
                   partition=partition)
    expl.to_frame().reset_index().to_csv(args.out, index=False)
    if args.interactions:
        expl.interactions_frame().to_csv(args.interactions, index=False)
    if args.plot:
        from .. import plots

        ax = plots.beeswarm(expl) if len(expl) > 1 else plots.waterfall(expl)
        ax.figure.savefig(args.plot, dpi=120)
    print(f"explained {len(expl)} rows x {expl.values.shape[1]} features ({expl.method}) "
          f"-> {args.out}" + (f", plot {args.plot}" if args.plot else "")
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
    pd.concat(frames).to_csv(args.out, index=False)
    if args.html:
        from ..results.html import texts_page

        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(texts_page(expls, [f"text {n}" for n in numbers]))
    if args.plot:
        from ..plots import text

        first = next((e for e in expls if e.player_names), None)
        if first is None:
            raise ValueError("--plot: no text with tokens to draw")
        ax = text(first)
        ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"explained {len(expls)} texts, {sum(len(e.player_names) for e in expls)} tokens -> {args.out}"
          + (f", html {args.html}" if args.html else "") + (f", plot {args.plot}" if args.plot else ""))
    return 0
