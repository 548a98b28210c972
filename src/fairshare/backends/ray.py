"""Ray as a backend: the ``ray`` module, after ``ray.init()``, given as ``client=``.

- :meth:`RayBackend.put`: the value pickled once (cloudpickle, by value where need be) and ``ray.put``; each worker
  process unpickles it once (:func:`~fairshare.backends.base.loaded`).
- :meth:`RayBackend.run`: one ``ray.remote`` task per task (:data:`~fairshare.backends.dask.RETRIES` retries of a
  task whose worker died), at most ``window`` in flight, results as they finish (``ray.wait``); a task's own error
  comes back as itself. When no task finished for ``timeout`` seconds (default
  :data:`~fairshare.backends.dask.DEFAULT_TIMEOUT`) the tasks left are cancelled and
  :class:`~fairshare.backends.dask.WorkersLostError` is raised.
- Tasks save their own finished items to a cache folder (``workers_write``), as on Spark.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Iterator

from .base import Backend, BackendError, answer, call_task, loaded
from .dask import DEFAULT_TIMEOUT, RETRIES, WorkersLostError

__all__ = ["RayBackend"]

_REMOTE: dict = {}


def _task(fn_key: str, fn_blob: bytes, keys: tuple, args_blob: bytes, *blobs: bytes) -> tuple[str, Any]:
    values = tuple(loaded(k, b) for k, b in zip(keys, blobs))
    return call_task(loaded(fn_key, fn_blob), values, args_blob)


class RayBackend(Backend):
    """The ``ray`` module (after ``ray.init``) as a :class:`~fairshare.backends.base.Backend`.

    Examples
    --------
    >>> import ray; _ = ray.init(num_cpus=2)                                      # doctest: +SKIP
    >>> RayBackend(ray).map(abs, (), [(-2,), (3,)])                               # doctest: +SKIP
    [2, 3]
    """

    name = "Ray"
    workers_write = True
    cloudpickle_module = "ray.cloudpickle"

    def check(self) -> None:
        if not self.client.is_initialized():
            raise BackendError("client (Ray): Ray is not initialised; call ray.init() (ray.init(address='auto') "
                               "joins a running cluster) before passing the ray module as client=")

    def slots(self) -> int:
        return max(1, int(self.client.cluster_resources().get("CPU", 1)))

    def send(self, blob: bytes) -> Any:
        return self.client.put(blob)

    def _remote(self) -> Any:
        if "task" not in _REMOTE:
            _REMOTE["task"] = self.client.remote(max_retries=RETRIES)(_task)
        return _REMOTE["task"]

    def run(self, fn: Callable, held: Iterable = (), tasks: Iterable[tuple] = (), window: int | None = None,
            timeout: float | None = None) -> Iterator[tuple[int, Any]]:
        self.check()
        ray, held, todo = self.client, list(held), iter(enumerate(tasks))
        limit = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        fn_blob = self.pickled(fn, "the function run on the workers")
        fn_key = hashlib.sha256(fn_blob).hexdigest()          # one function, one key: held values stay loaded
        fn_ref = ray.put(fn_blob)
        keys, refs = tuple(h.key for h in held), [h.handle for h in held]
        remote, position = self._remote(), {}

        def submit_next() -> bool:
            item = next(todo, None)
            if item is None:
                return False
            ref = remote.remote(fn_key, fn_ref, keys, self.pickled(item[1], "a task's arguments"), *refs)
            position[ref] = item[0]
            return True

        while (window is None or len(position) < window) and submit_next():
            pass
        try:
            while position:
                ready, _ = ray.wait(list(position), num_returns=1, timeout=limit)
                if not ready:
                    raise WorkersLostError(f"Ray run stopped: no task finished in {limit:g} s (the timeout)")
                for ref in ready:
                    where = position.pop(ref)
                    yield where, answer(ray.get(ref))
                    submit_next()
        finally:                                  # an error, a KeyboardInterrupt or a consumer that stopped
            for ref in position:
                ray.cancel(ref)
