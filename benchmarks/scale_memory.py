"""fairshare bench scale_memory: the driver's memory when explaining a Spark DataFrame of N rows (issue 41).

A Spark DataFrame of N rows is generated on the executors (``spark.range``, 6 features that are functions of the
row's id: nothing is built on the driver), explained with a cheap model (``tanh`` of a linear score; 64 coalitions,
the exact values of 6 players) and the values written to a parquet folder, never collected. While the job runs, a
thread samples every 50 ms the driver's Python process (its resident memory, ``psutil``) and the driver's JVM (the
heap in use, ``Runtime.totalMemory() - freeMemory()``; in ``local[2]`` that JVM is also the executor, so its heap
holds the Arrow batches in flight too). After the job: the JVM heap in use after a full GC (what it keeps).

Growth per row: the least-squares slope of each figure over N; a driver whose memory does not depend on N has a
slope near 0 bytes per row (a batch of rows in flight is a constant, a per-row object kept would show as tens of
bytes per row or more).

Sizes: quick (200 and 400 rows: checks that it runs), default (2,000, 8,000 and 32,000 rows), full (up to 128,000).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any

import numpy as np

import fairshare as fs

from .common import configuration, plot_lines, results_dir, table, write_report

SIZES = {
    "quick": dict(rows=[200, 400]),
    "default": dict(rows=[2_000, 8_000, 32_000]),
    "full": dict(rows=[2_000, 8_000, 32_000, 128_000]),
}
FEATURES = 6
_EVERY = 0.05               # seconds between samples
_WEIGHTS = np.array([0.8, -1.1, 0.5, 0.3, -0.7, 1.3])


def cheap_model() -> Any:
    """The cheap model: ``tanh`` of a linear score of the 6 features (a closure: it travels by value, the workers
    cannot import the benchmarks)."""
    weights = _WEIGHTS.copy()

    def model(A: np.ndarray) -> np.ndarray:
        return np.tanh(A @ weights)

    return model


def _session() -> Any:
    from pyspark.sql import SparkSession

    from fairshare.backends.spark import java_home

    java_home()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("fairshare-bench-scale-memory")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def _frame(session: Any, rows: int) -> Any:
    """``rows`` rows made on the executors: feature j of row i is ``sin(0.37 (j + 1) i)``."""
    from pyspark.sql import functions as F

    ids = session.range(0, rows, numPartitions=2)
    return ids.select(*[F.sin(F.col("id") * (0.37 * (j + 1))).alias(f"x{j}") for j in range(FEATURES)])


def _background() -> Any:
    import pandas as pd

    ids = np.arange(5, dtype=float)
    return pd.DataFrame({f"x{j}": np.sin(ids * 0.37 * (j + 1)) for j in range(FEATURES)})


class Sampler:
    """The peaks of the driver's Python resident memory and JVM heap in use, sampled in a thread."""

    def __init__(self, session: Any) -> None:
        import psutil

        self.process, self.runtime = psutil.Process(), session.sparkContext._jvm.java.lang.Runtime.getRuntime()
        self.python, self.jvm, self.samples = 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def heap(self) -> int:
        return int(self.runtime.totalMemory()) - int(self.runtime.freeMemory())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.python = max(self.python, self.process.memory_info().rss)
            self.jvm = max(self.jvm, self.heap())
            self.samples += 1
            self._stop.wait(_EVERY)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _gc_heap(session: Any) -> int:
    """The JVM heap in use after a full garbage collection."""
    jvm = session.sparkContext._jvm
    jvm.java.lang.System.gc()
    runtime = jvm.java.lang.Runtime.getRuntime()
    return int(runtime.totalMemory()) - int(runtime.freeMemory())


def measure(session: Any, rows: int, folder: str) -> dict:
    """Explain ``rows`` generated rows, write the values to parquet under ``folder``: peaks and time."""
    import gc

    gc.collect()
    base_heap = _gc_heap(session)
    frame, out = _frame(session, rows), os.path.join(folder, f"values-{rows}.parquet")
    began = time.perf_counter()
    with Sampler(session) as sampled:
        values = fs.explain(cheap_model(), frame, background=_background(), budget=64, seed=0, progress=False)
        values.write.mode("overwrite").parquet(out)
    wall = time.perf_counter() - began
    written = session.read.parquet(out).count()
    return dict(rows=rows, wall=wall, python=sampled.python, jvm=sampled.jvm, base_heap=base_heap,
                kept_heap=_gc_heap(session), samples=sampled.samples, written=written)


def slope(xs: list, ys: list) -> float:
    """Least-squares growth of ``ys`` per unit of ``xs``.

    Examples
    --------
    >>> slope([1, 2, 3], [5, 7, 9])
    2.0
    """
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, None)
    began = time.perf_counter()
    session, folder = _session(), tempfile.mkdtemp(prefix="fairshare-scale-memory-")
    try:
        measure(session, cfg["rows"][0], folder)                     # the workers start, fairshare is imported
        measured = [measure(session, n, folder) for n in cfg["rows"]]
    finally:
        session.stop()
        shutil.rmtree(folder, ignore_errors=True)
    mb = 1e6
    rows = [[m["rows"], m["written"], m["wall"], 1e3 * m["wall"] / m["rows"], m["python"] / mb, m["jvm"] / mb,
             m["base_heap"] / mb, m["kept_heap"] / mb, m["samples"]] for m in measured]
    ns = [m["rows"] for m in measured]
    growth = {k: slope(ns, [m[k] for m in measured]) for k in ("python", "jvm", "kept_heap")}
    for key, value in growth.items():
        print(f"driver {key}: {value:+.1f} bytes per row")
    plot_lines(results_dir("scale_memory", out) / "memory.png", "driver memory while explaining a Spark DataFrame",
               "rows", "MB", {"Python RSS peak": (ns, [m["python"] / mb for m in measured]),
                              "JVM heap in use, peak": (ns, [m["jvm"] / mb for m in measured]),
                              "JVM heap kept after GC": (ns, [m["kept_heap"] / mb for m in measured])})
    sections = [
        f"Size `{size}`: a Spark `local[2]` DataFrame of N generated rows ({FEATURES} features), `tanh` of a linear "
        "score, 64 coalitions per row (the exact values), 5 background rows; the values written to parquet, never "
        f"collected. The driver sampled every {1000 * _EVERY:.0f} ms while the job ran. Total "
        f"{time.perf_counter() - began:.0f} s (one warm-up job first).",
        "## Driver memory against rows\n\n"
        + table(["rows", "rows written", "wall s", "ms / row", "Python RSS peak MB", "JVM heap peak MB",
                 "JVM heap before (after GC) MB", "JVM heap after (after GC) MB", "samples"], rows)
        + "\n\nGrowth per row (least-squares slope over N): "
        + ", ".join(f"{name} {growth[key]:+.1f} bytes" for key, name in
                    (("python", "Python RSS peak"), ("jvm", "JVM heap peak"), ("kept_heap", "JVM heap kept"))) + ".",
    ]
    write_report("scale_memory", "fairshare bench scale_memory: the driver's memory against a Spark DataFrame's rows",
                 sections, out)
