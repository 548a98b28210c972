"""``fairshare bench``: run the project's own benchmarks (or those of a folder named explicitly)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["add_bench", "run_bench", "benchmarks_folder", "load_benchmarks"]

#: the name the benchmark package is loaded under: never ``benchmarks``, so no folder of that name on the path
#: (the current directory's, say) can stand in for the project's
_PACKAGE = "_fairshare_benchmarks"


def add_bench(sub: argparse._SubParsersAction) -> None:
    """The ``bench`` command's flags."""
    p = sub.add_parser("bench", help="run a benchmark (markdown tables and PNG plots, peers side by side)")
    p.add_argument("name", help="benchmark name (a module in benchmarks/), or 'all'")
    p.add_argument("--size", choices=["quick", "default", "full"], default="default",
                   help="quick: seconds (used by the tests); default: minutes; full: the papers' settings")
    p.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results/NAME)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: also measure the GPU paths (benchmarks that have them: trees, highdim, highdim_cnn, "
                   "deep)")
    p.add_argument("--benchmarks", default=None, help="a benchmarks folder to run instead of the project's own "
                   "(its code runs: only a folder you trust); the current directory is never searched")
    p.set_defaults(func=run_bench)


def benchmarks_folder(given: str | None = None) -> Path:
    """The folder of benchmarks to run: ``given`` (the ``--benchmarks`` flag), else the project's own
    ``benchmarks/`` beside the installed source; never a folder found in the current directory.

    Examples
    --------
    >>> benchmarks_folder().name
    'benchmarks'
    """
    path = Path(given) if given is not None else Path(__file__).resolve().parents[3] / "benchmarks"
    if not (path / "common.py").is_file() or not (path / "__init__.py").is_file():
        if given is not None:
            raise OSError(f"--benchmarks {given}: not a benchmarks folder (no __init__.py and common.py)")
        raise OSError("the project's benchmarks/ folder is not installed beside this fairshare (it comes with a "
                      "checkout of the repository); give one with --benchmarks FOLDER")
    return path


def load_benchmarks(path: Path) -> ModuleType:
    """``path`` loaded as the package ``_fairshare_benchmarks`` (replacing one loaded from elsewhere)."""
    for name in [m for m in sys.modules if m == _PACKAGE or m.startswith(_PACKAGE + ".")]:
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location(_PACKAGE, path / "__init__.py",
                                                  submodule_search_locations=[str(path)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[_PACKAGE] = package
    spec.loader.exec_module(package)
    return package


def run_bench(args: argparse.Namespace) -> int:
    """Run ``fairshare bench NAME``."""
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(f"--out {args.out} is a file; give the folder the reports go to")
    path = benchmarks_folder(args.benchmarks)
    # helpers: common, datasets and private modules (a leading underscore)
    available = sorted(p.stem for p in path.glob("*.py") if p.stem not in ("common", "datasets")
                       and not p.stem.startswith("_"))
    names = available if args.name == "all" else [args.name]
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; available: {available + ['all']}")
    load_benchmarks(path)
    for name in names:
        module = importlib.import_module(f"{_PACKAGE}.{name}")
        kwargs = dict(size=args.size, seeds=args.seeds, out=args.out)
        if args.device != "cpu":
            if "device" not in inspect.signature(module.main).parameters:
                raise ValueError(f"benchmark {name!r} runs on the CPU only; --device {args.device} is not supported")
            kwargs["device"] = args.device
        module.main(**kwargs)
    return 0
