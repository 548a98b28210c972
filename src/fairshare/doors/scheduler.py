"""The one row scheduler: every item of a door (rows, texts, inputs) through the engine, from the cache, on a
cluster (Dask, Spark, Ray: :mod:`fairshare.backends`), in threads or in turn; each saved as it finishes, progress
reported, every item's random stream from the one seed policy (``_core/seeds.py``), so the values are the same bits
whatever runs them.

An item is run by a *runner*, a top-level function ``runner(data, i, seed, folder, client) -> dict`` (so a cluster
can ship it): :func:`run_values` for values; ``doors/pairs.py`` runs interaction matrices the same way. On a cluster
the items go in blocks of consecutive items (:func:`blocks`: a task's fixed cost spread over its items); on Dask the
driver saves what comes back, on Spark and Ray each task saves its finished items to the cache folder itself (a
Spark job's results come back only when it ends), so a killed job resumes after them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from .._core.compiled import call_with, thread_settings
from ..engine.ridge_path import one_thread
from .._core.progress import reporter
from .._core.seeds import item_seeds
from ..backends.clients import as_backend
from ..engine.engine import run
from ..games.cached import CachedGame
from ..games.distributed import DistributedGame
from ..games.model import ModelError
from ..store.cache import RunCache

__all__ = ["schedule", "run_values", "item_game", "relabelled", "blocks", "ROWS_PER_TASK"]

#: most items in one cluster task (at least 4 tasks per slot where there are enough items)
ROWS_PER_TASK = 64


def item_game(data: Any, i: int, folder: Any, client: Any) -> Any:
    """Item ``i``'s game, batched on ``client``'s cluster where given and answered from ``folder``'s cache on the
    driver: coalitions it holds are not sent, the values that come back are logged here (a worker, in its own
    working folder or on another machine, may not see the folder: a Dask worker's copy of the cache failed to
    write 'cache/coalitions/.../values.log'; and the workers of one game would share one log)."""
    game = data.game(i)
    if client is not None:
        game = DistributedGame(game, as_backend(client))
    return game if folder is None else CachedGame(game, folder)


def relabelled(data: Any, i: int, run_item: Callable[[], dict]) -> dict:
    """``run_item()``, a model's failure reported with the item it failed on (and the coalition)."""
    name = f"{data.noun} {data.item_names[i]}"
    try:
        return run_item()
    except ModelError as exc:
        raise ModelError(f"{name}: {exc}") from exc.__cause__
    except ValueError as exc:
        if str(exc).startswith(("the game returned NaN", "predict returned")):
            raise ValueError(f"{name}: {str(exc).replace('the game returned', 'the model returned')}") from exc
        raise


def run_values(data: Any, i: int, seed: Any, folder: Any = None, client: Any = None) -> dict:
    """Item ``i``'s values under its plan (``data.planned[i]``): values, stderr, the ends, evaluations, player
    names and the run's facts."""
    plan = data.planned[i]
    if plan is None:
        return data.empty_item(i)

    def one() -> dict:
        game = item_game(data, i, folder, client)
        phi = run(game, plan.sv, plan.choice, seed, data.rule)
        return dict(values=np.asarray(phi.values, dtype=float),
                    stderr=None if phi.stderr is None else np.asarray(phi.stderr, dtype=float),
                    empty=np.asarray(phi.empty_value, dtype=float), grand=np.asarray(phi.grand_value, dtype=float),
                    n_evaluations=np.asarray(phi.n_evaluations), names=list(game.player_names),
                    info={k: v for k, v in phi.info.items() if k != "choice" or "split" in phi.info})

    return relabelled(data, i, one)


def schedule(data: Any, runner: Callable[..., dict], args: dict, seed: Any, key: str | None) -> list[dict]:
    """Every item of ``data`` through ``runner``: finished items read from the cache (``args["cache"]``, its run
    named by ``key``), the rest on ``args["client"]`` (blocks of items; one item: its batches of coalitions on
    the cluster), in ``args["n_jobs"]`` threads or in turn; each saved as it finishes."""
    n = data.n_items
    seeds = item_seeds(seed, n)
    store = None if args["cache"] is None else RunCache(args["cache"], key, item=data.item_data)
    results: list[dict | None] = [None if store is None else store.row(i) for i in range(n)]
    todo = [i for i in range(n) if results[i] is None]
    report = reporter(args["progress"] if n > 1 else False, f"explaining {data.noun}s", data.noun)
    done = [n - len(todo)]

    def folder(i: int) -> Any:
        return None if store is None else store.coalition_folder(i)

    def finish(i: int, result: dict, saved: bool = False) -> None:
        results[i] = result
        if store is not None and not saved:        # kept as it finishes: an interrupted run resumes after it
            store.save_row(i, result)
        done[0] += 1
        if report is not None:
            report(done[0], n, None)

    client, n_jobs = as_backend(args["client"]), args["n_jobs"]
    try:
        if client is not None and len(todo) > 1:
            _on_cluster(client, data, runner, seeds, todo, finish, store)
        elif client is not None and todo:
            finish(todo[0], runner(data, todo[0], seeds[todo[0]], folder(todo[0]), client))
        elif n_jobs and n_jobs > 1 and len(todo) > 1:
            # the workers compute as this thread would, BLAS on one thread (called from both workers at once it
            # gave texts' values 2e-15 apart from the rows in turn)
            settings = thread_settings()
            with one_thread(), ThreadPoolExecutor(max_workers=n_jobs) as pool:
                futures = {i: pool.submit(call_with, settings, runner, data, i, seeds[i], folder(i)) for i in todo}
                for i, fut in futures.items():
                    finish(i, fut.result())
        else:
            for i in todo:
                finish(i, runner(data, i, seeds[i], folder(i)))
    finally:
        if report is not None:
            report.close()
    return results  # type: ignore[return-value]


def blocks(todo: list[int], slots: int) -> list[list[int]]:
    """Consecutive items in blocks for cluster tasks: at least ``4 * slots`` blocks where there are enough
    items, at most :data:`ROWS_PER_TASK` items in one.

    Examples
    --------
    >>> blocks([0, 1, 2, 3, 5], 1)
    [[0, 1], [2], [3], [5]]
    """
    n_tasks = min(len(todo), max(4 * slots, -(-len(todo) // ROWS_PER_TASK)))
    return [b.tolist() for b in np.array_split(np.asarray(todo, dtype=np.int64), n_tasks)]


def run_block(data: Any, runner: Callable[..., dict], items: list[int], seeds: list, saver: Any) -> list[dict]:
    """A cluster task: ``runner`` on each item of a block, each saved to the cache folder (``saver``: its path and
    run key, on Spark and Ray) as it finishes."""
    store = None if saver is None else RunCache(saver[0], saver[1], item=data.item_data)
    out = []
    for i, seed in zip(items, seeds):
        out.append(runner(data, i, seed, None))
        if store is not None:
            store.save_row(i, out[-1])
    return out


def _on_cluster(backend: Any, data: Any, runner: Callable[..., dict], seeds: list, todo: list[int], finish: Any,
                store: Any) -> None:
    """The items on the cluster in blocks of consecutive items (:func:`blocks`), saved as they complete; the data
    put on the cluster once. Dask: the data in the task graph (a worker that dies loses nothing), every wait bounded
    (:mod:`fairshare.backends.dask`), the driver saving what comes back. Spark, Ray: each task saves its own items
    to the cache folder (checked writable by the workers first). Each item keeps its own seed, so the blocks give
    the values of one task per item bit for bit."""
    where = None if store is None or not backend.workers_write else store.path.resolve()   # workers' folders differ
    if where is not None:
        backend.check_writable(where)
    parts = blocks(todo, backend.slots())
    saver = None if where is None else (str(where), store.key)
    remote = backend.put(data)
    tasks = [(runner, part, [seeds[i] for i in part], saver) for part in parts]
    for k, results in backend.run(run_block, [remote], tasks):
        for i, result in zip(parts[k], results):
            finish(i, result, saved=saver is not None)
