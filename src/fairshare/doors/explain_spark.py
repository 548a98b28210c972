"""``fs.explain`` of a Spark DataFrame: its rows explained where they lie, the values returned as a Spark DataFrame.

The driver reads one row (the columns matched to the model's features, every check, the plan chosen once, the
output columns), broadcasts the model, the background and the plan once, counts the rows of each partition (one
number per partition comes back) and returns ``frame.mapInPandas(...)``: lazy, each executor explaining its rows in
Arrow batches. A row's random stream is the one the local run gives the row at the same position
(:func:`~fairshare._core.seeds.item_seed`), so the values equal ``fs.explain`` of the same rows in a pandas frame bit
for bit; the driver's memory does not grow with the number of rows.

The result has a ``row`` column (the row's position in the DataFrame's order, from 0), then the columns of
:meth:`~fairshare.Explanation.to_frame` (``empty_value``, one per player, ``name[output]`` for several outputs, and
``stderr:`` columns, NaN where the method gives none). The positions need a DataFrame that gives its rows in the
same partitions and order each time it is computed (a table, a file; ``.localCheckpoint()`` one that does not).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.seeds import item_root, item_seed
from ..backends.base import loaded
from ..backends.spark import SparkBackend
from ..inputs.registry import read_input
from .scheduler import run_values

__all__ = ["is_spark_frame", "explain_frame"]

#: explain's arguments that a Spark DataFrame does not take, and why
_NOT_FOR_FRAMES = {"cache": "the result is a lazy Spark DataFrame: write it (result.write.parquet(...)) to keep it",
                   "interactions": "interaction matrices are not columns: explain the rows as a pandas frame",
                   "y": "labels of a distributed DataFrame are not known to the driver: explain a pandas frame",
                   "n_jobs": "the executors run the rows; give Spark more cores instead"}


def is_spark_frame(X: Any) -> bool:
    """Whether ``X`` is a pyspark DataFrame (without importing pyspark).

    Examples
    --------
    >>> is_spark_frame([[1.0]])
    False
    """
    return (type(X).__module__ or "").startswith("pyspark.sql") and hasattr(X, "mapInPandas")


def _refuse(frame: Any, background: Any, args: dict) -> None:
    for name, why in _NOT_FOR_FRAMES.items():
        if args.get(name) is not None:
            raise ValueError(f"{name}: not taken with a Spark DataFrame X ({why})")
    if is_spark_frame(background):
        raise TypeError("background: give a pandas frame or an array of a few rows (it goes to every executor), "
                        "e.g. spark_df.limit(100).toPandas()")
    if args.get("client") is not None and args["client"] is not frame.sparkSession and \
            args["client"] is not frame.sparkSession.sparkContext:
        raise ValueError("client: a Spark DataFrame is explained by its own session; leave client out")


def _columns(data: Any, plan: Any) -> list[str]:
    """The value columns every batch gives, from one call of the first row's game on all its players."""
    game = data.game(0)
    grand = np.asarray(game(np.ones((1, game.n_players), dtype=bool)), dtype=float)[0]
    names = list(game.player_names)
    fake = dict(values=np.zeros((len(names),) + grand.shape), stderr=np.zeros((len(names),) + grand.shape),
                empty=np.zeros(grand.shape), grand=np.zeros(grand.shape), n_evaluations=np.asarray(0), names=names,
                info={})
    return list(data.result([fake], [plan], {}).to_frame().columns)


def _count(batches: Any) -> Any:
    import pandas as pd
    from pyspark import TaskContext

    rows = sum(len(b) for b in batches)
    yield pd.DataFrame({"partition": [TaskContext.get().partitionId()], "rows": [rows]})


def explain_frame(model: Any, frame: Any, background: Any, args: dict, seed: Any, rule: Any, options: dict) -> Any:
    """The values of every row of the Spark DataFrame ``frame`` as a Spark DataFrame (lazy); ``fs.explain`` calls
    it for a Spark DataFrame ``X`` with its checked ``args``.

    Examples
    --------
    >>> values = fs.explain(model.predict_proba, spark_df, background=pandas_rows, seed=0)   # doctest: +SKIP
    >>> values.write.parquet("values.parquet")                                             # doctest: +SKIP
    """
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    _refuse(frame, background, args)
    backend = SparkBackend(frame.sparkSession)
    backend.check()
    probe = frame.limit(1).toPandas()
    if len(probe) == 0:
        raise ValueError("X: the Spark DataFrame holds no rows to explain")
    data = read_input(model, probe, background, args)
    data.check(args)
    plan = data.plans(args, rule, options)[0]
    columns = _columns(data, plan)
    held = backend.put((model, background, args, plan, rule, item_root(seed), options, columns))
    counts = sorted(tuple(r) for r in frame.mapInPandas(_count, "partition long, rows long").collect())
    starts = dict(zip([p for p, _ in counts], np.cumsum([0] + [n for _, n in counts])[:-1].tolist()))
    schema = StructType([StructField("row", LongType(), False)] + [StructField(c, DoubleType()) for c in columns])
    key, broadcast = held.key, held.handle
    return frame.mapInPandas(lambda batches: _explain_partition(key, broadcast, starts, batches), schema)


def _explain_partition(key: str, broadcast: Any, starts: dict, batches: Any) -> Any:
    """On an executor: each Arrow batch of the partition explained, rows numbered from the partition's start."""
    from pyspark import TaskContext

    payload = loaded(key, broadcast.value)
    start = int(starts.get(TaskContext.get().partitionId(), 0))
    for batch in batches:
        if len(batch):
            yield explain_batch(payload, batch, start)
            start += len(batch)


def explain_batch(payload: tuple, batch: Any, start: int) -> Any:
    """The values of a pandas batch of rows whose first is row ``start`` of the DataFrame, as a pandas frame of the
    result's columns (the same bits as the local run: each row's seed is its position's)."""
    model, background, args, plan, rule, root, options, columns = payload
    data = read_input(model, batch.reset_index(drop=True), background, args)
    plans = [plan] * data.n_items
    explained = data.closed_form(plans, args, root, options)
    if explained is None:
        data.planned, data.rule = plans, rule
        results = [run_values(data, j, item_seed(root, start + j)) for j in range(data.n_items)]
        explained = data.result(results, plans, {})
    out = explained.to_frame().reset_index(drop=True).reindex(columns=columns)
    out.insert(0, "row", np.arange(start, start + len(out), dtype=np.int64))
    return out
