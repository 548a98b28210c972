"""The ``fairshare`` command line: ``methods``, ``demo``, ``explain``, ``value-data``, ``bench``."""

from __future__ import annotations

import argparse
import sys

from .estimation.registry import methods
from .semivalues import INDEX_NAMES


def _cmd_methods(args: argparse.Namespace) -> int:
    from .estimation.registry import methods_markdown

    if args.markdown:
        print(methods_markdown())
        return 0
    rows = methods()
    width = max(len(m.name) for m in rows)
    iwidth = max(len(", ".join(m.indices)) for m in rows)
    print(f"{'method':<{width}}  {'indices':<{iwidth}}  description")
    for m in rows:
        print(f"{m.name:<{width}}  {', '.join(m.indices):<{iwidth}}  {m.description}")
        for doc in m.option_docs.values():
            print(f"{'':<{width}}  {'':<{iwidth}}    {doc}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    print(demo_main(budget=args.budget, seed=args.seed))
    return 0


def _benchmarks_dir():
    import os
    from pathlib import Path

    env = os.environ.get("FAIRSHARE_BENCHMARKS")
    candidates = [Path(env)] if env else []
    candidates += [Path.cwd() / "benchmarks", Path(__file__).resolve().parents[2] / "benchmarks"]
    for path in candidates:
        if (path / "common.py").is_file():
            return path
    raise OSError("benchmarks/ not found: run from a checkout of the fairshare repository "
                  "(or set FAIRSHARE_BENCHMARKS)")


def _cmd_bench(args: argparse.Namespace) -> int:
    import importlib
    import sys as _sys

    path = _benchmarks_dir()
    if str(path.parent) not in _sys.path:
        _sys.path.insert(0, str(path.parent))
    available = sorted(p.stem for p in path.glob("*.py") if p.stem not in ("__init__", "common", "datasets"))
    names = available if args.name == "all" else [args.name]
    for name in names:
        if name not in available:
            raise ValueError(f"unknown benchmark {name!r}; available: {available + ['all']}")
        module = importlib.import_module(f"{path.name}.{name}")
        kwargs = dict(size=args.size, seeds=args.seeds, out=args.out)
        if args.device != "cpu":
            import inspect

            if "device" not in inspect.signature(module.main).parameters:
                raise ValueError(f"benchmark {name!r} runs on the CPU only; --device {args.device} is not supported")
            kwargs["device"] = args.device
        module.main(**kwargs)
    return 0


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line on stderr and exit status 2 (no usage dump, no traceback)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"fairshare: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parse_rows(text: str | None, total: int) -> slice | list[int]:
    if text is None:
        return slice(0, total)
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            return slice(int(a) if a else 0, int(b) if b else total)
        return [int(text)]
    except ValueError:
        raise ValueError(f"--rows must look like 10, 0:100 or 5: (got {text!r})") from None


def _aligned(frame, model, flag: str, path: str, reference: list[str] | None = None):
    """``frame``'s columns matched by name to the model's features (or to ``reference``), naming the flag."""
    from .tables import aligned, model_columns

    names, source = (reference, "the columns of --data") if reference is not None else model_columns(model)
    if names is None:
        n = getattr(model, "n_features_in_", None)
        if n is not None and frame.shape[1] != n:
            raise ValueError(f"{flag} {path} has {frame.shape[1]} columns but the model takes {n} features")
        return frame
    return aligned(frame, names, f"{flag} {path}", source)


def _cmd_explain(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    try:
        import joblib
    except ImportError as exc:  # pragma: no cover - only without the ml extra
        raise ImportError("fairshare explain needs joblib: pip install 'fairshare[ml]'") from exc
    from .explain import explain

    try:
        model = joblib.load(args.model)
    except FileNotFoundError:
        raise OSError(f"--model {args.model}: no such file") from None
    except Exception as exc:  # noqa: BLE001 - any unpickling problem is a bad model file
        raise ValueError(f"--model {args.model}: not a model saved with joblib ({type(exc).__name__})") from None
    partition = _parse_partition(args.partition)
    if args.texts:
        return _explain_texts(model, args, partition)
    if args.data is None:
        raise ValueError("--data (a CSV of rows) or --texts (a file of texts) is required")
    if args.mask_token is not None or args.tokenizer is not None or args.html:
        raise ValueError("--mask-token, --tokenizer and --html are for --texts")
    data = _aligned(_read_csv(args.data, "--data"), model, "--data", args.data)
    rows = data.iloc[_parse_rows(args.rows, len(data))]
    if len(rows) == 0:
        raise ValueError(f"--rows {args.rows} selects no rows of {args.data} ({len(data)} rows)")
    background = None
    if args.background:
        background = _aligned(_read_csv(args.background, "--background"), model, "--background", args.background,
                              [str(c) for c in data.columns])
    expl = explain(model, rows, background, index=args.index, method=args.method, budget=args.budget, seed=args.seed,
                   progress=not args.quiet, interactions=2 if args.interactions else None, partition=partition)
    expl.to_frame().reset_index().to_csv(args.out, index=False)
    if args.interactions:
        expl.interactions_frame().to_csv(args.interactions, index=False)
    if args.plot:
        from . import plots

        ax = plots.beeswarm(expl) if len(expl) > 1 else plots.waterfall(expl)
        ax.figure.savefig(args.plot, dpi=120)
    print(f"explained {len(expl)} rows x {expl.values.shape[1]} features ({expl.method}) "
          f"-> {args.out}" + (f", plot {args.plot}" if args.plot else "")
          + (f", pairwise interactions {args.interactions}" if args.interactions else ""))
    return 0


def _parse_partition(text: str | None):
    """``--partition``: correlation, sentences, or a JSON list of blocks."""
    import json

    if text is None or text in ("correlation", "sentences"):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"--partition must be correlation, sentences or a JSON list of blocks such as "
                         f"[[0,1],[2,3]], got {text!r}") from None


def read_texts(path: str) -> list[str]:
    r"""The texts of a file: a ``.jsonl`` file holds one JSON string (or object with a ``text`` field) per line;
    any other file one text per line (``\n`` in a line stands for a line break).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
    ...     _ = fh.write("free prize\\nnow\nsee you\n")
    >>> read_texts(fh.name)
    ['free prize\nnow', 'see you']
    >>> os.remove(fh.name)
    """
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        raise OSError(f"--texts {path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"--texts {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.endswith(".jsonl"):
        texts = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                raise ValueError(f"--texts {path}: line {number} is not JSON") from None
            item = item.get("text") if isinstance(item, dict) else item
            if not isinstance(item, str):
                raise ValueError(f"--texts {path}: line {number} holds no text (a JSON string or {{\"text\": ...}})")
            texts.append(item)
    else:
        texts = [line.replace("\\n", "\n") for line in lines if line.strip()]
    if not texts:
        raise ValueError(f"--texts {path}: no texts in the file")
    return texts


def _explain_texts(model, args: argparse.Namespace, partition) -> int:
    """``fairshare explain --texts``: a long CSV (text, position, token, value and stderr per output)."""
    import pandas as pd

    from .explain import explain

    if args.data or args.background or args.interactions:
        raise ValueError("--texts takes no --data, --background or --interactions")
    texts = read_texts(args.texts)
    picked = _parse_rows(args.rows, len(texts))
    chosen = texts[picked] if isinstance(picked, slice) else [texts[i] for i in picked]
    numbers = list(range(len(texts)))[picked] if isinstance(picked, slice) else list(picked)
    if not chosen:
        raise ValueError(f"--rows {args.rows} selects no texts of {args.texts} ({len(texts)} texts)")
    expls = explain(model, chosen, index=args.index, method=args.method, budget=args.budget, seed=args.seed,
                    progress=not args.quiet, partition=partition, mask_token=args.mask_token, tokenizer=args.tokenizer)
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
        from .html_output import texts_page

        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(texts_page(expls, [f"text {n}" for n in numbers]))
    if args.plot:
        from .plots import text

        first = next((e for e in expls if e.player_names), None)
        if first is None:
            raise ValueError("--plot: no text with tokens to draw")
        ax = text(first)
        ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"explained {len(expls)} texts, {sum(len(e.player_names) for e in expls)} tokens -> {args.out}"
          + (f", html {args.html}" if args.html else "") + (f", plot {args.plot}" if args.plot else ""))
    return 0


_NAMED_MODELS = ("logistic", "knn", "gbm")


def _load_model(spec: str):
    """A joblib file, or one of the named scikit-learn models."""
    if spec in _NAMED_MODELS:
        if spec == "logistic":
            from sklearn.linear_model import LogisticRegression

            return LogisticRegression(max_iter=1000)
        if spec == "knn":
            from sklearn.neighbors import KNeighborsClassifier

            return KNeighborsClassifier(5)
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=30, max_depth=3)
    import joblib

    try:
        return joblib.load(spec)
    except FileNotFoundError:
        raise OSError(f"--model {spec}: no such file (or use one of {list(_NAMED_MODELS)})") from None
    except Exception as exc:  # noqa: BLE001 - any unpickling problem is a bad model file
        raise ValueError(f"--model {spec}: not a model saved with joblib ({type(exc).__name__})") from None


def _cmd_value_data(args: argparse.Namespace) -> int:
    import numpy as np

    from .datavalues import value_data

    model = _load_model(args.model)
    train = _read_csv(args.train, "--train")
    val = _read_csv(args.val, "--val")
    for frame, flag_name, path in ((train, "--train", args.train), (val, "--val", args.val)):
        if args.target not in frame.columns:
            raise ValueError(f"--target {args.target!r} is not a column of {flag_name} {path}; columns: "
                             f"{[str(c) for c in frame.columns][:20]}")
    flag = None
    if args.flag is not None:
        if args.flag not in train.columns:
            raise ValueError(f"--flag {args.flag!r} is not a column of --train {args.train}")
        flag = train[args.flag].to_numpy().astype(bool)
    features = [c for c in train.columns if c not in (args.target, args.flag)]
    missing = [c for c in features if c not in val.columns]
    if missing:
        raise ValueError(f"--val {args.val} lacks the training feature column(s) {missing[:10]}")
    dv = value_data(model, train[features], train[args.target], val[features], val[args.target], index=args.index,
                    method=args.method, budget=args.budget, seed=args.seed, cache=args.cache,
                    progress=not args.quiet)
    frame = dv.to_frame().reset_index(drop=True)
    frame.insert(0, "row", np.asarray(train.index))
    if flag is not None:
        frame[args.flag] = flag
    frame.to_csv(args.out, index=False)
    note = ""
    if flag is not None and 0 < flag.sum() < flag.size:
        note = f"; AUC of finding {args.flag!r} from the lowest values: {dv.detection_auc(flag):.3f}"
    if args.plot:
        dv.plot(flag=flag, flag_label=args.flag or "flagged").figure.savefig(args.plot, dpi=120)
    print(f"valued {dv.n_players} training points ({dv.method}, {dv.n_fits} fits, {dv.reused_fits} from the cache)"
          f" -> {args.out}" + (f", plot {args.plot}" if args.plot else "") + note)
    return 0


def _read_csv(path: str, flag: str):
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise OSError(f"{flag} {path}: no such file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{flag} {path}: not a readable CSV file ({str(exc).splitlines()[0]})") from None
    if frame.empty:
        raise ValueError(f"{flag} {path}: no rows")
    return frame


_INDEX_HELP = f"one of {', '.join(INDEX_NAMES)}, beta-shapley(a,b) or weighted-banzhaf(w)"
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fairshare`` command."""
    parser = _OneLineParser(prog="fairshare", description="Shapley, Banzhaf and semivalue attributions.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    p = sub.add_parser("methods", help="list the registered methods, the indices they support, their options")
    p.add_argument("--markdown", action="store_true", help="print the README's methods table")
    p.set_defaults(func=_cmd_methods)
    p = sub.add_parser("demo", help="explain one breast-cancer prediction with every method")
    p.add_argument("--budget", type=int, default=200, help="evaluations per estimator (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("explain", help="explain a saved model's predictions on rows of a CSV file, or on texts")
    p.add_argument("--model", required=True, help="model saved with joblib")
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
    p.add_argument("--index", default="shapley", help=f"{_INDEX_HELP} (default shapley)")
    p.add_argument("--method", default="auto", help="a method from `fairshare methods`, or auto (default)")
    p.add_argument("--budget", type=int, default=None, help="evaluations per row (default 2n + 2048)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output CSV: one row per input row, one column per feature (texts: "
                   "one row per token: text, position, token, value, stderr)")
    p.add_argument("--plot", default=None, help="write a beeswarm (or, for one row, waterfall; texts: the first text) plot "
                   "to this PNG")
    p.add_argument("--interactions", default=None, help="also write pairwise interaction values (k-SII for Shapley, "
                   "BII for Banzhaf) to this CSV: row, feature_i, feature_j, value, stderr")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_explain)
    p = sub.add_parser("value-data", help="value training points by what they add to a model (data valuation)")
    p.add_argument("--model", required=True, help=f"a model saved with joblib (cloned for every fit) or one of "
                   f"{', '.join(_NAMED_MODELS)}")
    p.add_argument("--train", required=True, help="CSV of training rows (features and the target column)")
    p.add_argument("--val", required=True, help="CSV of validation rows (same columns)")
    p.add_argument("--target", required=True, help="name of the label column")
    p.add_argument("--flag", default=None, help="a 0/1 column of --train to check the values against (not a feature)")
    p.add_argument("--index", default=None, help=f"{_INDEX_HELP} (default: shapley for --model knn, its closed "
                   "form with no fits; banzhaf otherwise)")
    p.add_argument("--method", default="auto", help="a method from `fairshare methods`, or auto (default)")
    p.add_argument("--budget", type=int, default=None, help="most model fits (not needed for --index loo, nor for "
                   "--model knn with the Shapley index: exact values)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default=None, help="folder keeping every finished fit (an interrupted run resumes)")
    p.add_argument("--out", required=True, help="output CSV: row, value, stderr per training point")
    p.add_argument("--plot", default=None, help="write the values (against --flag) to this PNG")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=_cmd_value_data)
    p = sub.add_parser("bench", help="run a benchmark (markdown tables and PNG plots, peers side by side)")
    p.add_argument("name", help="benchmark name (a module in benchmarks/), or 'all'")
    p.add_argument("--size", choices=["quick", "default", "full"], default="default",
                   help="quick: seconds (used by the tests); default: minutes; full: the papers' settings")
    p.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results/NAME)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: also measure the GPU paths (benchmarks that have them: trees, highdim)")
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fairshare`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, ImportError, OSError, KeyError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        flags = set(vars(args)) - {"func", "command"}
        first = message.split(" ", 1)[0]
        if first in flags:                      # the door names its argument; the command line calls it a flag
            message = f"--{first.replace('_', '-')}{message[len(first):]}"
        print(f"fairshare: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
