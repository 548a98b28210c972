"""Dask tasks that outlive a lost worker: data kept in the task graph, retried tasks, waits that end.

Every door that runs on a ``dask.distributed.Client`` (``explain``'s rows and texts, ``value_data``'s
fits, :class:`~fairshare.games.DistributedGame`'s batches, distributed SBQ) goes through these helpers:

- :func:`hold` puts an object (rows, a game, training data) on the cluster as the result of a task
  whose input lives in the scheduler's graph. If the worker holding it dies, the scheduler computes
  it again on another worker. (Scattered data would be lost with its worker, and a broadcast scatter
  waits on every worker the scheduler still lists, dead ones included.)
- :func:`submit`: a task with ``pure=False`` and :data:`RETRIES` retries. A task whose worker dies
  while running it is rescheduled by the scheduler itself (up to
  ``distributed.scheduler.allowed-failures`` times); ``retries`` also reruns a task that raised.
  Tasks are deterministic in their inputs and seeds, so a rerun returns the same bits.
- :class:`Finished` and :func:`gather`: waits that end. When the cluster has had no worker for
  ``min(timeout, NO_WORKER_WAIT)`` seconds, or no task has finished for ``timeout`` seconds, they
  cancel what is left and raise :class:`WorkersLostError`, naming the workers the scheduler removed.

``timeout`` is an argument where a class takes it, else the Dask setting ``fairshare.timeout``
(seconds; ``with dask.config.set({"fairshare.timeout": 600}): fs.explain(...)``), else
:data:`DEFAULT_TIMEOUT`.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Iterable, Iterator

from .base import Backend

__all__ = ["WorkersLostError", "DaskBackend", "hold", "submit", "Finished", "gather", "workers", "wait_seconds",
           "DEFAULT_TIMEOUT", "NO_WORKER_WAIT", "RETRIES"]

#: seconds a run waits for the next task to finish before it gives up (the longest legitimate task,
#: e.g. one text explained through a large language model, must fit in it)
DEFAULT_TIMEOUT = 1800.0
#: most seconds a run waits on a cluster with no worker (a nanny restarts a killed one in a few seconds)
NO_WORKER_WAIT = 30.0
#: times a task that raised is run again
RETRIES = 2
_POLL = 0.01                # seconds between looks at finished tasks
_CHECK_EVERY = 1.0          # seconds between looks at the cluster's workers while nothing finishes
_RPC_TIMEOUT = 10.0         # seconds a question to the scheduler may take


class WorkersLostError(RuntimeError):
    """The Dask cluster lost its workers, or nothing finished within the timeout; the message names
    the workers the scheduler removed."""


def wait_seconds(timeout: float | None = None) -> float:
    """The wait bound in seconds: ``timeout``, else the Dask setting ``fairshare.timeout``, else
    :data:`DEFAULT_TIMEOUT`.

    Examples
    --------
    >>> wait_seconds(5), wait_seconds() == DEFAULT_TIMEOUT
    (5.0, True)
    """
    if timeout is None:
        try:
            import dask

            timeout = dask.config.get("fairshare.timeout", DEFAULT_TIMEOUT)
        except ImportError:                               # pragma: no cover - dask is what calls this
            timeout = DEFAULT_TIMEOUT
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        raise ValueError(f"timeout must be a number of seconds, got {timeout!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    return value


def _same(value: Any) -> Any:
    return value


def hold(client: Any, value: Any) -> Any:
    """A future of ``value`` that no single worker's death can lose: ``value`` travels in the task
    graph once and the scheduler recomputes it elsewhere if its worker dies. Pass the future to
    :func:`submit` in place of ``value``.

    Examples
    --------
    >>> rows = hold(client, rows)                                   # doctest: +SKIP
    >>> futures = [submit(client, explain_row, rows, i) for i in range(10)]   # doctest: +SKIP
    """
    with warnings.catch_warnings():          # a large value belongs in the graph here: held once, not per task
        warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
        return client.submit(_same, value, pure=False, retries=RETRIES)


def submit(client: Any, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``client.submit(fn, *args, **kwargs)`` as a fresh task (``pure=False``) with :data:`RETRIES` retries.

    Examples
    --------
    >>> fut = submit(client, sum, [1, 2, 3])                        # doctest: +SKIP
    """
    return client.submit(fn, *args, pure=False, retries=RETRIES, **kwargs)


def gather(client: Any, futures: list, timeout: float | None = None) -> list:
    """The futures' results in their order, each wait bounded (:class:`Finished`).

    Examples
    --------
    >>> gather(client, [submit(client, abs, -2), submit(client, abs, 3)])     # doctest: +SKIP
    [2, 3]
    """
    position = {fut.key: i for i, fut in enumerate(futures)}
    out: list = [None] * len(futures)
    for fut, result in Finished(client, futures, timeout):
        out[position[fut.key]] = result
    return out


class Finished:
    """``(future, result)`` pairs as the futures finish; :meth:`add` more while iterating.

    The wait ends: no worker for ``min(timeout, NO_WORKER_WAIT)`` seconds, or no task finished for
    ``timeout`` seconds, raises :class:`WorkersLostError` naming the lost workers; a task that died with
    its workers (``KilledWorker``) or was cancelled raises it too; a task's own error is raised as is.
    Whatever way the iteration ends early, the futures still pending are cancelled.

    Examples
    --------
    >>> for fut, value in Finished(client, [submit(client, abs, -2)], timeout=60):   # doctest: +SKIP
    ...     print(value)
    2
    """

    def __init__(self, client: Any, futures: Iterable = (), timeout: float | None = None) -> None:
        from distributed import as_completed

        self.client, self.timeout = client, wait_seconds(timeout)
        self.started = time.time()
        self._pending = as_completed(list(futures), loop=client.loop, with_results=True)

    def add(self, future: Any) -> None:
        """Wait for ``future`` too."""
        self._pending.add(future)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        try:
            yield from self._run()
        finally:                                  # an error, a KeyboardInterrupt or a consumer that stopped
            left = list(self._pending.futures)
            if left:
                self.client.cancel(left)

    def _run(self) -> Iterator[tuple[Any, Any]]:
        last = checked = time.monotonic()
        no_worker_since = None
        while not self._pending.is_empty():
            batch = self._pending.next_batch(block=False)
            now = time.monotonic()
            if batch:
                last = now
                for fut, result in batch:
                    yield fut, self._result(fut, result)
                continue
            if now - last > self.timeout:
                left = "" if workers(self.client) else "the cluster has no worker left and "
                raise self._lost(f"{left}no task finished in {self.timeout:g} s (the timeout; set it with "
                                 "dask.config.set({'fairshare.timeout': seconds}))")
            if now - checked >= _CHECK_EVERY:
                checked = now
                if workers(self.client):
                    no_worker_since = None
                else:
                    no_worker_since = now if no_worker_since is None else no_worker_since
                    if now - no_worker_since >= min(self.timeout, NO_WORKER_WAIT):
                        raise self._lost(f"the cluster has had no worker for {now - no_worker_since:.0f} s")
            time.sleep(_POLL)

    def _result(self, fut: Any, result: Any) -> Any:
        from distributed import KilledWorker

        if fut.status == "error":
            _, exc, tb = result
            if isinstance(exc, KilledWorker):
                raise self._lost(f"a task died with every worker that ran it ({exc})") from exc
            raise exc.with_traceback(tb)
        if fut.status == "cancelled":
            raise self._lost(f"the cluster cancelled task {fut.key!r}")
        return result

    def _lost(self, what: str) -> WorkersLostError:
        now = time.time()
        removed = _removed_workers(self.client)
        during = [f"{w} ({now - t:.1f} s ago)" for t, w in removed if t >= self.started]
        before = [f"{w} ({now - t:.1f} s ago)" for t, w in removed[-5:] if t < self.started]
        up = sorted(workers(self.client))
        return WorkersLostError(
            f"Dask run stopped: {what}. Workers lost during the run: {', '.join(during) or 'none'}; "
            f"lost before it: {', '.join(before) or 'none'}; workers now: {', '.join(up) or 'none'}")


def workers(client: Any) -> dict:
    """The cluster's workers now, ``{address: threads}``; empty when the scheduler does not answer in 10 s.

    Examples
    --------
    >>> sum(workers(client).values())                              # doctest: +SKIP
    2
    """
    try:
        return dict(client.nthreads(callback_timeout=_RPC_TIMEOUT))
    except Exception:                             # noqa: BLE001 - a scheduler that does not answer has no worker for us
        return {}


def _removed_workers(client: Any) -> list[tuple[float, str]]:
    """``(time, address)`` of every worker the scheduler removed without being asked to, oldest first."""
    try:
        events = client.sync(client.scheduler.events, topic="all", callback_timeout=_RPC_TIMEOUT)
    except Exception:                             # noqa: BLE001 - the error is raised anyway, with fewer names
        return []
    return [(float(t), str(msg["worker"])) for t, msg in events
            if isinstance(msg, dict) and msg.get("action") == "remove-worker" and not msg.get("expected")]


class DaskBackend(Backend):
    """A ``dask.distributed.Client`` as a :class:`~fairshare.backends.base.Backend`: :func:`hold`, :func:`submit`
    and :class:`Finished` (the data in the task graph, retried tasks, waits that end); the driver saves what comes
    back.

    Examples
    --------
    >>> backend = DaskBackend(client)                                   # doctest: +SKIP
    >>> backend.map(abs, (), [(-2,), (3,)])                             # doctest: +SKIP
    [2, 3]
    """

    name = "Dask"
    workers_write = False

    def check(self) -> None:
        """A Dask client is taken as it is: a lost cluster is found by the bounded waits."""

    def slots(self) -> int:
        return sum(workers(self.client).values()) or 1

    def put(self, value: Any) -> Any:
        try:
            return hold(self.client, value)
        except Exception:                 # dask names its own graph; say which object did not pickle, and why
            self.pickled_value(value)
            raise

    def run(self, fn: Callable, held: Iterable = (), tasks: Iterable[tuple] = (), window: int | None = None,
            timeout: float | None = None) -> Iterator[tuple[int, Any]]:
        held, todo = list(held), iter(enumerate(tasks))
        position: dict = {}

        def submit_next() -> Any:
            item = next(todo, None)
            if item is None:
                return None
            fut = submit(self.client, fn, *held, *item[1])
            position[fut.key] = item[0]
            return fut

        first = []
        while window is None or len(first) < window:
            fut = submit_next()
            if fut is None:
                break
            first.append(fut)
        pending = Finished(self.client, first, timeout)
        for fut, result in pending:          # pending cancels what is left if the run stops
            yield position.pop(fut.key), result
            nxt = submit_next()
            if nxt is not None:
                pending.add(nxt)

    def map(self, fn: Callable, held: Iterable = (), tasks: Iterable[tuple] = (), timeout: float | None = None) -> list:
        return gather(self.client, [submit(self.client, fn, *list(held), *task) for task in tasks], timeout)

    def check_writable(self, folder: Any) -> None:
        """Dask's workers write no cache folder of their own: the driver saves what comes back."""
