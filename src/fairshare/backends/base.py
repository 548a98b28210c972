"""The one protocol every cluster answers to: put a value once, run a function over tasks, results by task.

A door's ``client=`` is a ``dask.distributed.Client``, a ``pyspark.sql.SparkSession`` (or ``SparkContext``) or the
``ray`` module after ``ray.init()``; :func:`as_backend` recognizes which without importing pyspark or ray unless the
object is theirs (:mod:`.clients`), and wraps it in a :class:`Backend`:

- :meth:`Backend.put`: a value (the rows, a game, the training data) sent to the cluster once;
- :meth:`Backend.run`: ``fn(*held values, *task)`` for every task, ``(position, result)`` pairs as they finish,
  at most ``window`` tasks in flight where the cluster lets us choose; :meth:`Backend.map`: the results in task
  order;
- :meth:`Backend.check` (at the door, before any work): the cluster is usable; :meth:`Backend.check_writable`:
  its workers can write a cache folder (Spark and Ray tasks save their own finished items there).

The seeds travel with the tasks (every item's stream from ``_core/seeds.py``), so a cluster gives the local values
bit for bit. Errors name the backend and say what to do: :class:`BackendError`.
"""

from __future__ import annotations

import importlib
import pickle
import traceback
import uuid
from collections import OrderedDict
from typing import Any, Callable, ClassVar, Iterable, Iterator

__all__ = ["Backend", "BackendError", "Held", "loaded", "call_task", "answer", "KINDS"]

#: what ``client=`` may be, in the words of the errors
KINDS = "a dask.distributed.Client, a pyspark SparkSession or SparkContext, or the ray module after ray.init()"
_KEEP = 16                  # values a worker process keeps unpickled (the latest held ones)
_LOADED: OrderedDict = OrderedDict()


class BackendError(ValueError):
    """A cluster that cannot take the work (stopped, not initialised, a value it cannot carry, a cache folder its
    workers cannot write); the message names the backend and what to do. Raised before any work is sent."""


class Held:
    """A value put on a cluster once: its key (workers keep it unpickled under that key) and the cluster's handle
    of its pickled bytes (a Spark broadcast, a Ray object reference)."""

    def __init__(self, key: str, handle: Any) -> None:
        self.key, self.handle = key, handle


def loaded(key: str, blob: bytes) -> Any:
    """The value pickled in ``blob``, unpickled once per worker process (kept under ``key``).

    Examples
    --------
    >>> loaded("k", pickle.dumps([1, 2])) is loaded("k", b"never read again")
    True
    """
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]
    value = pickle.loads(blob)
    _LOADED[key] = value
    while len(_LOADED) > _KEEP:
        _LOADED.popitem(last=False)
    return value


def call_task(fn: Callable, values: tuple, args_blob: bytes) -> tuple[str, Any]:
    """On a worker: ``("ok", fn(*values, *args))``, or ``("error", the exception)`` (with its traceback in a note),
    so that the driver raises the task's own error (Spark would give it back as text only)."""
    try:
        return "ok", fn(*values, *pickle.loads(args_blob))
    except Exception as exc:                              # noqa: BLE001 - raised again on the driver
        text = traceback.format_exc()
        try:
            exc.add_note(f"on the worker:\n{text}")
            pickle.dumps(exc)
            return "error", exc
        except Exception:                                 # noqa: BLE001 - an exception that does not pickle
            return "error", RuntimeError(f"{type(exc).__name__}: {exc}\non the worker:\n{text}")


def answer(outcome: tuple[str, Any]) -> Any:
    """The result of :func:`call_task`, or its error raised here."""
    status, value = outcome
    if status == "error":
        raise value
    return value


class Backend:
    """A cluster the doors send work to; subclasses: ``DaskBackend``, ``SparkBackend``, ``RayBackend``.

    Examples
    --------
    >>> Backend(None).slots()
    1
    """

    #: the backend's name in errors and reports
    name: ClassVar[str] = "local"
    #: whether tasks save their own finished items to a cache folder (else the driver saves what comes back)
    workers_write: ClassVar[bool] = False
    #: the cloudpickle module the workers read
    cloudpickle_module: ClassVar[str] = "cloudpickle"

    def __init__(self, client: Any) -> None:
        self.client = client

    def check(self) -> None:
        """Raise :class:`BackendError` unless the cluster can take work now."""

    def slots(self) -> int:
        """How many tasks the cluster runs at once."""
        return 1

    def put(self, value: Any) -> Any:
        """``value`` on the cluster once, pickled here (a value that does not pickle is refused, naming it); pass
        what this returns to :meth:`run` in ``held``."""
        self.check()
        return Held(self.new_key(), self.send(self.pickled_value(value)))

    def send(self, blob: bytes) -> Any:
        """The cluster's handle of ``blob`` sent to it once (a Spark broadcast, a Ray object reference)."""
        raise NotImplementedError

    def run(self, fn: Callable, held: Iterable = (), tasks: Iterable[tuple] = (), window: int | None = None,
            timeout: float | None = None) -> Iterator[tuple[int, Any]]:
        """``(position, fn(*held values, *task))`` for every task, as they finish; at most ``window`` in flight
        (None: all); a wait for the next result is bounded by ``timeout`` seconds."""
        raise NotImplementedError

    def map(self, fn: Callable, held: Iterable = (), tasks: Iterable[tuple] = (), timeout: float | None = None) -> list:
        """``fn(*held values, *task)`` of every task, in task order."""
        tasks = list(tasks)
        out: list = [None] * len(tasks)
        for position, result in self.run(fn, held, tasks, timeout=timeout):
            out[position] = result
        return out

    def check_writable(self, folder: Any) -> None:
        """Raise :class:`BackendError` unless the workers can create a file in ``folder``."""
        ok, why = self.map(_can_write, (), [(str(folder),)])[0]
        if not ok:
            raise BackendError(f"client ({self.name}): the workers cannot write the cache folder {str(folder)!r} "
                               f"({why}); give a folder on storage every worker can write (a shared file system) "
                               "or leave cache out")

    def pickled(self, value: Any, what: str) -> bytes:
        """``value`` pickled for the workers (by value where need be), or :class:`BackendError` naming ``what``."""
        try:
            return self.cloudpickle().dumps(value)
        except Exception as exc:                          # noqa: BLE001 - whatever refuses to pickle
            raise BackendError(
                f"client ({self.name}): {what} cannot be pickled to the workers ({type(exc).__name__}: {exc}); a "
                "model holding a lock, an open file, a connection or a generator cannot travel: give one that "
                "pickles (pickle.dumps(model) must work), or leave client out to run here") from None

    def pickled_value(self, value: Any) -> bytes:
        """A value put on the cluster, pickled; where it does not pickle, the error names its model when that is
        what refuses (a door's data carry their model as ``.model``)."""
        model = getattr(value, "model", None)
        if model is not None:
            owner = getattr(model, "__self__", model)              # a bound method: its object
            self.pickled(model, f"the model (a {type(owner).__name__})")
        if hasattr(value, "predict") or hasattr(value, "fit"):                  # the model itself
            return self.pickled(value, f"the model (a {type(value).__name__})")
        return self.pickled(value, f"the {type(value).__name__} sent to the workers")

    def cloudpickle(self) -> Any:
        """The cloudpickle module the cluster's workers can read (pickles functions and classes by value): the
        one :attr:`cloudpickle_module` names (Spark and Ray ship their own)."""
        return importlib.import_module(self.cloudpickle_module)

    @staticmethod
    def new_key() -> str:
        return uuid.uuid4().hex


def _can_write(folder: str) -> tuple[bool, str]:
    import os
    import tempfile

    try:
        handle, probe = tempfile.mkstemp(prefix=".worker-write-test-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return False, exc.strerror or str(exc)
    return True, ""
