"""The ``fairshare`` command line: ``fairshare methods``, ``fairshare demo``, ``fairshare bench``."""

from __future__ import annotations

import argparse
import sys

from .registry import methods


def _cmd_methods(args: argparse.Namespace) -> int:
    rows = methods()
    width = max(len(m.name) for m in rows)
    iwidth = max(len(", ".join(m.indices)) for m in rows)
    print(f"{'method':<{width}}  {'indices':<{iwidth}}  description")
    for m in rows:
        print(f"{m.name:<{width}}  {', '.join(m.indices):<{iwidth}}  {m.description}")
        if m.options:
            opts = ", ".join(f"{k}={v!r}" for k, v in m.options.items())
            print(f"{'':<{width}}  {'':<{iwidth}}  options: {opts}")
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
        module.main(size=args.size, seeds=args.seeds, out=args.out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fairshare`` command."""
    parser = argparse.ArgumentParser(prog="fairshare", description="Shapley, Banzhaf and semivalue attributions.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("methods", help="list the registered methods, the indices they support, their options")
    p.set_defaults(func=_cmd_methods)
    p = sub.add_parser("demo", help="explain one breast-cancer prediction with every method")
    p.add_argument("--budget", type=int, default=200, help="evaluations per estimator (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("bench", help="run a benchmark (markdown tables and PNG plots, peers side by side)")
    p.add_argument("name", help="benchmark name (a module in benchmarks/), or 'all'")
    p.add_argument("--size", choices=["quick", "default", "full"], default="default",
                   help="quick: seconds (used by the tests); default: minutes; full: the papers' settings")
    p.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results/NAME)")
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fairshare`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, ImportError, OSError) as exc:
        print(f"fairshare: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
