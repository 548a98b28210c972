"""``fairshare value-data``: what each training point of a CSV is worth to a model (data valuation)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from .columns import refuse_words
from .files import check_paths, read_csv
from .model_files import load_model

__all__ = ["add_value_data", "run_value_data", "NAMED_MODELS"]

NAMED_MODELS = ("logistic", "knn", "gbm")
#: the columns of --out besides the --flag column
OUT_COLUMNS = ("row", "value", "stderr")


def add_value_data(sub: argparse._SubParsersAction, index_help: str) -> None:
    """The ``value-data`` command's flags."""
    p = sub.add_parser("value-data", help="value training points by what they add to a model (data valuation)")
    p.add_argument("--model", required=True, help=f"one of {', '.join(NAMED_MODELS)}, or a model file (cloned for "
                   "every fit): .json / .ubj (xgboost), .cbm (catboost), .skops (scikit-learn); "
                   ".joblib / .pkl only with --trust-model")
    p.add_argument("--trust-model", action="store_true", help="read a joblib / pickle --model (it runs whatever "
                   "code its maker put in it: only for files you trust)")
    p.add_argument("--train", required=True, help="CSV of training rows (features and the target column)")
    p.add_argument("--val", default=None, help="CSV of validation rows (same columns); not used by --index data-oob")
    p.add_argument("--target", required=True, help="name of the label column")
    p.add_argument("--flag", default=None, help="a 0/1 column of --train to check the values against (not a feature)")
    p.add_argument("--index", default=None, help=f"{index_help}, or data-oob (out-of-bag scores of --budget "
                   "bootstrap fits, default 200; no --val) (default: shapley for --model knn, its closed form with no "
                   "fits; banzhaf otherwise)")
    p.add_argument("--method", default="auto", help="a method from `fairshare methods`, or auto (default)")
    p.add_argument("--budget", type=int, default=None, help="most model fits (not needed for --index loo, nor for "
                   "--model knn with the Shapley index: exact values)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default=None, help="folder keeping every finished fit (an interrupted run resumes)")
    p.add_argument("--out", required=True, help="output CSV: row, value, stderr per training point")
    p.add_argument("--plot", default=None, help="write the values (against --flag) to this PNG")
    p.add_argument("--overwrite", action="store_true", help="replace output files that exist already")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=run_value_data)


def _model(spec: str, trust: bool) -> Any:
    """One of the named scikit-learn models, or a model file."""
    if spec == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    if spec == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        return KNeighborsClassifier(5)
    if spec == "gbm":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=30, max_depth=3)
    try:
        model = load_model(spec, trust=trust)
    except OSError:
        raise OSError(f"--model {spec}: no such file (or use one of {list(NAMED_MODELS)})") from None
    if not (hasattr(model, "fit") and (hasattr(model, "predict") or hasattr(model, "score"))):
        raise ValueError(f"--model {spec} holds a fitted {type(model).__name__}, which cannot be refitted on every "
                         "coalition of training points: save the estimator itself (an LGBMClassifier as .joblib, "
                         f"with --trust-model), or use one of {list(NAMED_MODELS)}")
    return model


def run_value_data(args: argparse.Namespace) -> int:
    """Run ``fairshare value-data``: every path and column checked before the first fit."""
    import numpy as np

    from ..doors.value_data import _is_oob, value_data

    model_file = None if args.model in NAMED_MODELS else args.model
    check_paths({"--model": model_file, "--train": args.train, "--val": args.val, "--cache": args.cache},
                {"--out": args.out, "--plot": args.plot}, args.overwrite)
    oob = _is_oob(args.index)                          # the library's spellings: data-oob, dataoob, oob
    if args.val is None and not oob:
        raise ValueError("--val (a CSV of validation rows) is required; only --index data-oob values points without")
    train = read_csv(args.train, "--train")
    val = None if args.val is None else read_csv(args.val, "--val")
    for frame, flag_name, path in ((train, "--train", args.train), (val, "--val", args.val)):
        if frame is None:
            continue
        if args.target not in frame.columns:
            raise ValueError(f"--target {args.target!r} is not a column of {flag_name} {path}; columns: "
                             f"{[str(c) for c in frame.columns][:20]}")
    flag = None
    if args.flag is not None:
        if args.flag not in train.columns:
            raise ValueError(f"--flag {args.flag!r} is not a column of --train {args.train}")
        if args.flag in OUT_COLUMNS or re.fullmatch(r"(value|stderr)_\d+", args.flag):
            raise ValueError(f"--flag {args.flag!r} has the name of a column of --out {args.out} ({', '.join(OUT_COLUMNS)}"
                             "), which it would replace; rename the column in --train")
        column = train[args.flag]
        zero_one = column.isin([0, 1]) & column.notna()
        if not zero_one.all():
            row = int(np.flatnonzero(~zero_one.to_numpy())[0])
            raise ValueError(f"--flag {args.flag!r} of --train {args.train} holds {column.iloc[row]!r} in row {row}: "
                             "a flag column holds 0 or 1 (or True / False)")
        flag = column.to_numpy().astype(bool)
    features = [c for c in train.columns if c not in (args.target, args.flag)]
    missing = [] if val is None else [c for c in features if c not in val.columns]
    if missing:
        raise ValueError(f"--val {args.val} lacks the training feature column(s) {missing[:10]}")
    model = _model(args.model, args.trust_model)
    for where, frame in ((f"--train {args.train}", train), (f"--val {args.val}", val)):
        if frame is not None:                   # every fit would fail on them
            refuse_words(frame[features], model, where)
    held = (None, None) if val is None else (val[features], val[args.target])
    dv = value_data(model, train[features], train[args.target], *held, index=args.index,
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
