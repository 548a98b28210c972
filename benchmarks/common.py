"""Shared helpers for benchmarks: environment capture, timing, markdown reports, plots."""

from __future__ import annotations

import warnings

import datetime
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import fairshare as fs

ROOT = Path(__file__).resolve().parents[1]


def results_dir(name: str, out: str | None = None) -> Path:
    path = Path(out) if out else ROOT / "benchmarks" / "results" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def environment() -> str:
    """Markdown lines: date, machine, library versions (for every report)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = []
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("fairshare", "numpy", "scipy", "scikit-learn", "xgboost", "lightgbm", "shap", "shapiq", "torch",
                 "captum", "dask"):
        try:
            versions.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            versions.append(f"{dist} (not installed)")
    return "\n".join([
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}",
        f"- libraries: {', '.join(versions)}",
    ])


def table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if np.isfinite(v) else "-"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def configuration(sizes: dict, size: str, seeds: int | None, key: str = "seeds", quiet: bool = False) -> dict:
    """The configuration ``sizes[size]`` (a copy), with ``seeds`` in ``key`` when given; ``quiet`` silences the
    peers' warnings."""
    cfg = dict(sizes[size])
    if seeds:
        cfg[key] = seeds
    if quiet:
        warnings.simplefilter("ignore")
    return cfg


def write_report(name: str, title: str, sections: list[str], out: str | None = None, quiet: bool = False) -> Path:
    path = results_dir(name, out) / "README.md"
    text = f"# {title}\n\n{environment()}\n\n" + "\n\n".join(sections) + "\n"
    path.write_text(text)
    if not quiet:
        print(text)
    return path


class TimedGame(fs.Game):
    """Wraps a game and records the wall time spent inside it (to separate estimator overhead)."""

    def __init__(self, game: fs.Game) -> None:
        super().__init__(game.n_players, player_names=game.player_names)
        self.game = game
        self.seconds = 0.0

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        out = self.game(coalitions)
        self.seconds += time.perf_counter() - start
        return out


class TimedFunction:
    """A model function that records calls, rows and time (for peers that call models directly)."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray]) -> None:
        self.fn, self.seconds, self.rows = fn, 0.0, 0

    def __call__(self, X: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        out = self.fn(X)
        self.seconds += time.perf_counter() - start
        self.rows += len(X)
        return out


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``(fn(), seconds it took)``."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def best_of(fn: Callable[[], Any], repeats: int = 3, budget_s: float = 3.0) -> tuple[Any, float]:
    """``(fn(), fastest of up to repeats runs)``; fewer runs when one takes over ``budget_s / repeats``."""
    out, best = timed(fn)
    spent = best
    for _ in range(repeats - 1):
        if spent + best > budget_s:
            break
        _, t = timed(fn)
        spent += t
        best = min(best, t)
    return out, best


def relative_error(phi: Any, truth: Any) -> float:
    """``||phi - truth||^2 / ||truth||^2`` over every value (any shapes of the same size)."""
    return fs.metrics.relative_squared_error(np.asarray(phi, float).reshape(-1), np.asarray(truth, float).reshape(-1))


def within_bars(values: Any, truth: Any, stderr: Any, z: float = 1.96) -> np.ndarray:
    """Whether each true value lies inside the estimate's ``z``-standard-error bars (give or take rounding, 1e-12 of
    the largest true value), for the values that have bars (a standard error of 0, an exact value, has none).

    Examples
    --------
    >>> within_bars([1.0, 2.0, 3.0], [1.1, 2.5, 3.0], [0.1, 0.1, 0.0]).tolist()
    [True, False]
    """
    values, truth, stderr = (np.asarray(a, float).reshape(-1) for a in (values, truth, stderr))
    has = stderr > 0
    rounding = 1e-12 * max(1.0, float(np.max(np.abs(truth), initial=0.0)))    # no bar is asked to beat rounding
    return np.abs(values - truth)[has] <= z * stderr[has] + rounding


def ratio(a: float, b: float) -> float:
    """``a / b``, 1 where both are below 1e-20 (both exact to rounding), inf where only ``b`` is, nan where one is
    not finite."""
    if not (np.isfinite(a) and np.isfinite(b)):
        return float("nan")
    if max(a, b) < 1e-20:
        return 1.0
    return float("inf") if b < 1e-20 else a / b


def most_often(labels: list[str]) -> str:
    """The label seen most often; among equals the first seen (not ``max(set(...))``'s: a set's order changes with
    the process's string hashing, so a tie gave another label each run).

    Examples
    --------
    >>> most_often(["b", "a", "a", "b", "c"])
    'b'
    """
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return max(counts, key=counts.__getitem__)


def quantiles(values: list[float]) -> tuple[float, float, float]:
    a = np.asarray(values, dtype=float)
    return float(np.quantile(a, 0.25)), float(np.median(a)), float(np.quantile(a, 0.75))


def plot_lines(path: Path, title: str, xlabel: str, ylabel: str, series: dict[str, tuple[list, list]],
               logx: bool = True, logy: bool = True) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (x, y) in series.items():
        ax.plot(x, y, marker="o", ms=3, label=label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def measured(fn: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """``(fn(), wall seconds, CPU seconds of this process, peak resident-memory growth in MB)``.

    CPU seconds are what a single-threaded computation costs whatever else the machine runs (wall seconds grow
    with the load of other processes).

    The growth is the process's peak resident set (Linux ``VmHWM``, reset to the current size by writing 5 to
    ``/proc/self/clear_refs``) minus its resident set just before the call, after a garbage collection and
    ``malloc_trim`` (so memory freed by an earlier measurement is handed back and counted again if reused). Where
    ``/proc`` cannot be reset, ``resource.getrusage`` maxrss deltas (which see only new process-wide peaks)."""
    import ctypes
    import gc
    import resource

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        before, peak = _status_kb("VmRSS"), lambda: _status_kb("VmHWM")
    except OSError:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss                 # noqa: E731
    cpu = time.process_time()
    out, seconds = timed(fn)
    return out, seconds, time.process_time() - cpu, max(0.0, (peak() - before) / 1024.0)
