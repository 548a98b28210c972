"""``fairshare explain-generation``: which spans of a prompt a local language model's answer comes from.

The model is a local Hugging Face folder (``config.json``, weights, tokenizer files; read with
``local_files_only``, never running the folder's own code); the prompt a UTF-8 text file; the answer the ``--target``
text, or the model's greedy continuation. One CSV row per span (its tokens, text, value and standard error, per
answer token with ``--per-token``), an HTML page of the prompt shaded by value, a PNG of the text plot.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .files import check_paths

__all__ = ["add_explain_generation", "run_explain_generation", "load_language_model"]

_WEIGHTS = ("*.safetensors", "pytorch_model*.bin")
_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def add_explain_generation(sub: argparse._SubParsersAction, index_help: str) -> None:
    """The ``explain-generation`` command's flags."""
    p = sub.add_parser("explain-generation", help="which spans of a prompt a local language model's answer comes "
                       "from (a Hugging Face model folder)")
    p.add_argument("--model", required=True, help="a local Hugging Face causal LM folder: config.json, weights "
                   "(.safetensors or pytorch_model.bin) and its tokenizer files")
    p.add_argument("--prompt", required=True, help="a UTF-8 text file holding the prompt (all of it)")
    p.add_argument("--target", default=None, help="the answer to explain (default: the model's greedy continuation "
                   "of the prompt, --max-new-tokens at most)")
    p.add_argument("--max-new-tokens", type=int, default=20, help="the longest greedy continuation (default 20)")
    p.add_argument("--spans", default="tokens", choices=["tokens", "words", "sentences", "paragraphs"],
                   help="the players (default tokens; long prompts get Owen values over paragraphs > sentences > "
                   "words)")
    p.add_argument("--removal", default="drop", help="drop (cut removed spans out, the default) or a token id that "
                   "replaces each removed token under attention mask 0")
    p.add_argument("--per-token", action="store_true", help="one value per answer token (CSV columns value_j)")
    p.add_argument("--index", default="shapley", help=f"{index_help}, or owen (default shapley; Owen values over the "
                   "spans' hierarchy for prompts of more than 64 spans)")
    p.add_argument("--method", default="auto", help="a method from `fairshare methods`, or auto (default)")
    p.add_argument("--budget", type=int, default=None, help="coalitions scored, one forward pass each (default "
                   "2n + 2048)")
    p.add_argument("--batch-size", type=int, default=None, help="most sequences per forward call (default: by length)")
    p.add_argument("--device", default="cpu", help="where the model runs: cpu (default), cuda, cuda:1, ...")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output CSV: one row per span (position, start, end, text, value, "
                   "stderr)")
    p.add_argument("--html", default=None, help="write the prompt, spans shaded by value, to this HTML file")
    p.add_argument("--plot", default=None, help="write the text plot to this PNG")
    p.add_argument("--overwrite", action="store_true", help="replace output files that exist already")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_explain_generation)


def check_device(device: str) -> None:
    """``--device``: a torch device this machine has, checked before the model is read.

    Examples
    --------
    >>> check_device("cpu")
    >>> check_device("gpu")
    Traceback (most recent call last):
    ...
    ValueError: --device gpu is not a torch device (cpu, cuda, cuda:1, mps, ...)
    """
    import torch

    try:
        where = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"--device {device} is not a torch device (cpu, cuda, cuda:1, mps, ...)") from None
    if where.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"--device {device}: this torch ({torch.__version__}) sees no CUDA device")
        if where.index is not None and where.index >= count:
            raise ValueError(f"--device {device}: this machine has {count} CUDA device(s) (cuda:0..cuda:{count - 1})")
    if where.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"--device {device}: this torch sees no MPS device")


def load_language_model(folder: str, device: str = "cpu", quiet: bool = False):
    """The causal LM and tokenizer of a local Hugging Face folder, checked before anything is read (only local
    files, no code from the folder); ``quiet``: without transformers' bar of loaded weights."""
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"--model {folder}: not a folder (a Hugging Face model folder holds config.json, weights and "
                         "tokenizer files)")
    missing = [what for what, found in (("config.json", (path / "config.json").is_file()),
                                        ("weights", any(any(path.glob(g)) for g in _WEIGHTS)),
                                        ("tokenizer files", any((path / f).is_file() for f in _TOKENIZER)))
               if not found]
    if missing:
        raise ValueError(f"--model {folder}: no {', no '.join(missing)} in the folder")
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ImportError("explain-generation needs transformers: pip install 'fairshare[lm]'") from exc
    if quiet:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
    model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
    return model.to(device).eval(), tokenizer


def _removal(text: str) -> str | int:
    if text == "drop":
        return text
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--removal must be drop or a token id, got {text!r}") from None


def run_explain_generation(args: argparse.Namespace) -> int:
    """Run ``fairshare explain-generation``: every path and flag checked before the model is read."""
    check_paths({"--model": args.model, "--prompt": args.prompt},
                {"--out": args.out, "--html": args.html, "--plot": args.plot}, args.overwrite)
    removal = _removal(args.removal)
    for flag, value in (("--max-new-tokens", args.max_new_tokens), ("--budget", args.budget),
                        ("--batch-size", args.batch_size)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    try:
        prompt = Path(args.prompt).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--prompt {args.prompt}: cannot be read as UTF-8 text ({exc})") from None
    if not prompt.strip():
        raise ValueError(f"--prompt {args.prompt} is empty")
    if args.target is not None and not args.target:
        raise ValueError("--target is empty (leave it out for the model's own continuation)")
    check_device(args.device)
    from ..doors.explain import explain
    from ..games.generation import GenerationGame

    model, tokenizer = load_language_model(args.model, args.device, quiet=args.quiet)
    game = GenerationGame(model, prompt, target=args.target, tokenizer=tokenizer, spans=args.spans, removal=removal,
                          per_token=args.per_token, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
    e = explain(game, index=args.index, method=args.method, budget=args.budget, seed=args.seed,
                progress=not args.quiet)
    _write(e, game, args)
    print(f"explained {game.n_players} spans of a {game.prompt.size}-token prompt for the answer "
          f"{game.answer_text()!r} ({e.method}, {e.info['forward_passes']} forward passes) -> {args.out}"
          + (f", html {args.html}" if args.html else "") + (f", plot {args.plot}" if args.plot else ""))
    return 0


def _write(e, game, args: argparse.Namespace) -> None:
    """The CSV (one row per span), and the HTML and PNG where asked."""
    import pandas as pd

    frame = pd.DataFrame({"position": range(game.n_players), "start": [a for a, _ in game.ranges],
                          "end": [b for _, b in game.ranges], "text": [t.strip() for t in game.own_texts()]})
    names = e.output_names or [None]
    for j, name in enumerate(names):
        suffix = "" if name is None else f"_{j}"
        frame["value" + suffix] = e.values[0] if name is None else e.values[0, :, j]
        se = e.stderr
        frame["stderr" + suffix] = float("nan") if se is None else se[0] if name is None else se[0, :, j]
    frame.to_csv(args.out, index=False)
    if args.html:
        from ..results.html import texts_page

        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(texts_page([e], ["answer: " + game.answer_text()]))
    if args.plot:
        from ..plots import text

        drawn = text(e)
        figure = drawn[0].figure if hasattr(drawn, "__len__") else drawn.figure
        figure.savefig(args.plot, dpi=120, bbox_inches="tight")
