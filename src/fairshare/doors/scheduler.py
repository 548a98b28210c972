"""The one row scheduler: every item of a door (rows, texts, inputs) through the engine, from the cache, on a Dask
cluster, in threads or in turn; each saved as it finishes, progress reported, every item's random stream from the
one seed policy (``_core/seeds.py``), so the values are the same bits whatever runs them.

An item is run by a *runner*, a top-level function ``runner(data, i, seed, folder, client) -> dict`` (so Dask can
ship it): :func:`run_values` for values; ``doors/pairs.py`` runs interaction matrices the same way.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from .._core.compiled import call_with, thread_settings
from .._core.progress import reporter
from .._core.seeds import item_seeds
from ..engine.engine import run
from ..games.cached import CachedGame
from ..games.distributed import DistributedGame
from ..games.model import ModelError
from ..store.cache import RunCache

__all__ = ["schedule", "run_values", "item_game", "relabelled"]


def item_game(data: Any, i: int, folder: Any, client: Any) -> Any:
    """Item ``i``'s game, answered from ``folder``'s cache and batched on ``client``'s cluster where given."""
    game = data.game(i)
    if folder is not None:
        game = CachedGame(game, folder)
    if client is not None:
        game = DistributedGame(game, client)
    return game


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
                    info={k: v for k, v in phi.info.items() if k != "choice"})

    return relabelled(data, i, one)


def schedule(data: Any, runner: Callable[..., dict], args: dict, seed: Any, key: str | None) -> list[dict]:
    """Every item of ``data`` through ``runner``: finished items read from the cache (``args["cache"]``, its run
    named by ``key``), the rest on ``args["client"]`` (one task per item; one item: its batches of coalitions on
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

    def finish(i: int, result: dict) -> None:
        results[i] = result
        if store is not None:                      # kept as it finishes: an interrupted run resumes after it
            store.save_row(i, result)
        done[0] += 1
        if report is not None:
            report(done[0], n, None)

    client, n_jobs = args["client"], args["n_jobs"]
    try:
        if client is not None and len(todo) > 1:
            _on_dask(client, data, runner, seeds, todo, finish)
        elif client is not None and todo:
            finish(todo[0], runner(data, todo[0], seeds[todo[0]], folder(todo[0]), client))
        elif n_jobs and n_jobs > 1 and len(todo) > 1:
            settings = thread_settings()                   # the workers compute as this thread would
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
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


def _on_dask(client: Any, data: Any, runner: Callable[..., dict], seeds: list, todo: list[int], finish: Any) -> None:
    """One task per item on the cluster, saved as they complete. The data live in the task graph (a worker that
    dies loses nothing) and every wait is bounded (:mod:`fairshare.backends.dask`)."""
    from ..backends.dask import Finished, hold, submit

    remote = hold(client, data)
    index_of, futures = {}, []
    for i in todo:
        fut = submit(client, runner, remote, i, seeds[i], None)
        index_of[fut.key] = i
        futures.append(fut)
    for fut, result in Finished(client, futures):
        finish(index_of[fut.key], result)
