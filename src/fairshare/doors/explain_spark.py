"""``fs.explain`` of a Spark DataFrame: its rows explained where they lie, the values returned as a Spark DataFrame.

The driver reads one row (the columns matched to the model's features, every check, the plan chosen once),
broadcasts the model, the background and the plan once, then one job reads every row as the executors will (each
partition's rows counted; the first row a local run would refuse is refused here, naming ``X`` and its position,
before any model call; one line per partition comes back), reads the output columns from one call of the model and
returns ``frame.mapInPandas(...)``: lazy, each executor explaining its rows in Arrow batches. A row's random stream
is the one the local run gives the row at the same position (:func:`~fairshare._core.seeds.item_seed`), so the
values equal ``fs.explain`` of the same rows in a pandas frame bit for bit; the driver's memory does not grow with
the number of rows.

The result has a ``row`` column (the row's position in the DataFrame's order, from 0), then the columns of
:meth:`~fairshare.Explanation.to_frame` (``empty_value``, one per player, ``name[output]`` for several outputs, and
``stderr:`` columns, NaN where the method gives none). The positions need a DataFrame that gives its rows in the
same partitions and order each time it is computed (a table, a file; ``.localCheckpoint()`` one that does not).
A row's partition and its place in it are read from the row itself (``monotonically_increasing_id()``, a column
added before the explanation), not from the task that runs it: a result coalesced (``.coalesce(1).write...``) or
unioned keeps every row's position and seed.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from .._core.seeds import item_root, item_seed
from ..backends.base import BackendError, loaded
from ..backends.spark import SparkBackend
from ..inputs.registry import read_input
from .scheduler import run_values

__all__ = ["is_spark_frame", "explain_frame"]

#: explain's arguments that a Spark DataFrame does not take, and why
_NOT_FOR_FRAMES = {"cache": "the result is a lazy Spark DataFrame: write it (result.write.parquet(...)) to keep it",
                   "interactions": "interaction matrices are not columns: explain the rows as a pandas frame",
                   "y": "labels of a distributed DataFrame are not known to the driver: explain a pandas frame",
                   "n_jobs": "the executors run the rows; give Spark more cores instead"}
#: the column that carries each row's partition and place in it (``monotonically_increasing_id()``: the partition
#: in the bits from 33 up, the row's place in the lower 33)
_ID = "__fairshare_row_id__"
_PLACE_BITS = 33


class _Payload(NamedTuple):
    """What every executor gets once (broadcast): the model (named when it does not pickle), the background, the
    checked arguments (no client: the frame's own session runs it), the plan and the run's root seed."""

    model: Any
    background: Any
    args: dict
    plan: Any
    rule: Any
    root: int
    options: dict


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


def _refused(payload: _Payload, rows: Any) -> tuple[str, str] | None:
    """``(error type, message)`` where reading ``rows`` as ``X`` (the local door's checks, no model call) refuses
    them, else None."""
    try:
        read_input(payload.model, rows, payload.background, payload.args)
    except (ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)
    return None


def _first_refused(payload: _Payload, batch: Any) -> tuple[int, str, str] | None:
    """``(position, error type, message)`` of the first row of ``batch`` that the local door would refuse (the
    shortest refused prefix, by bisection: the checks of the rows alone only where some row is refused), else None;
    the message numbers the rows from the batch's first."""
    if _refused(payload, batch) is None:
        return None
    lo, hi = 0, len(batch) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _refused(payload, batch.iloc[:mid + 1]) is None:
            lo = mid + 1
        else:
            hi = mid
    kind, why = _refused(payload, batch.iloc[:lo + 1]) or ("ValueError", "refused")
    return lo, kind, why


def _split(ids: Any) -> tuple[np.ndarray, np.ndarray]:
    """The partitions and places of rows from their ``monotonically_increasing_id()``."""
    ids = np.asarray(ids, dtype=np.int64)
    return ids >> _PLACE_BITS, ids & ((1 << _PLACE_BITS) - 1)


def _check_partition(key: str, broadcast: Any, batches: Any) -> Any:
    """On an executor: the rows counted by partition and read as the explanation will read them; one line a
    partition: its rows, and the place of the first refused row (-1 where none), its place in its batch and why."""
    import pandas as pd

    payload = loaded(key, broadcast.value)
    lines: dict = {}
    for batch in batches:
        parts, places = _split(batch[_ID])
        for part in np.unique(parts).tolist():
            mine = parts == part
            line = lines.setdefault(part, [0, -1, -1, "", ""])
            line[0] += int(mine.sum())
            if line[1] < 0:
                rows = batch.loc[mine].drop(columns=_ID).reset_index(drop=True)
                found = _first_refused(payload, rows)
                if found is not None:
                    line[1:] = [int(places[mine][found[0]]), found[0], found[1], found[2]]
    if lines:
        yield pd.DataFrame([[part] + line for part, line in lines.items()],
                           columns=["partition", "rows", "bad", "at", "kind", "why"])


def _partition_starts(tagged: Any, key: str, broadcast: Any) -> dict:
    """Each partition's first row position (one job over every row), the first row the local door would refuse
    raised here, naming ``X`` and the row's position in the DataFrame's order."""
    lines = tagged.mapInPandas(lambda batches: _check_partition(key, broadcast, batches),
                               "partition long, rows long, bad long, at long, kind string, why string").collect()
    counts: dict = {}
    for line in lines:                  # a partition read in several tasks: a frame of local rows, read whole
        counts[line["partition"]] = counts.get(line["partition"], 0) + line["rows"]
    parts = sorted(counts)
    starts = dict(zip(parts, np.cumsum([0] + [counts[p] for p in parts])[:-1].tolist()))
    refused = [(starts[line["partition"]] + line["bad"], line) for line in lines if line["bad"] >= 0]
    if refused:
        row, line = min(refused, key=lambda r: r[0])
        why = re.sub(rf"\bat row {line['at']}\b", f"at row {row}", line["why"], count=1)
        raise (TypeError if line["kind"] == "TypeError" else ValueError)(
            f"X: row {row} of the Spark DataFrame (in its order) is refused before any model call: {why}")
    return starts


def explain_frame(model: Any, frame: Any, background: Any, args: dict, seed: Any, rule: Any, options: dict) -> Any:
    """The values of every row of the Spark DataFrame ``frame`` as a Spark DataFrame (lazy); ``fs.explain`` calls
    it for a Spark DataFrame ``X`` with its checked ``args``.

    Examples
    --------
    >>> values = fs.explain(model.predict_proba, spark_df, background=pandas_rows, seed=0)   # doctest: +SKIP
    >>> values.write.parquet("values.parquet")                                             # doctest: +SKIP
    """
    from pyspark.sql.functions import monotonically_increasing_id
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    _refuse(frame, background, args)
    backend = SparkBackend(frame.sparkSession)
    try:
        backend.check()
    except BackendError:
        raise BackendError("X: the Spark DataFrame's SparkSession is stopped; read the data again in a running "
                           "session (SparkSession.builder.getOrCreate())") from None
    if _ID in frame.columns:
        raise ValueError(f"X: the column name {_ID!r} is fairshare's own (each row's place); rename it")
    probe = frame.limit(1).toPandas()
    if len(probe) == 0:
        raise ValueError("X: the Spark DataFrame holds no rows to explain")
    data = read_input(model, probe, background, args)
    data.check(args)
    plan = data.plans(args, rule, options)[0]
    held = backend.put(_Payload(model, background, {**args, "client": None}, plan, rule, item_root(seed), options))
    tagged = frame.withColumn(_ID, monotonically_increasing_id())     # computed with the row: kept by a coalesce
    key, broadcast = held.key, held.handle
    starts = _partition_starts(tagged, key, broadcast)
    columns = _columns(data, plan)                              # the first model call: every row is read
    schema = StructType([StructField("row", LongType(), False)] + [StructField(c, DoubleType()) for c in columns])
    return tagged.mapInPandas(lambda batches: _explain_partition(key, broadcast, starts, columns, batches), schema)


def _explain_partition(key: str, broadcast: Any, starts: dict, columns: list, batches: Any) -> Any:
    """On an executor: each Arrow batch explained, each row's position read from the row (its partition's start and
    its place in the partition), not from the task: a coalesced result runs several partitions in one task."""
    payload = loaded(key, broadcast.value)
    for batch in batches:
        if len(batch):
            parts, places = _split(batch[_ID])
            positions = np.array([starts.get(p, 0) for p in parts.tolist()], dtype=np.int64) + places
            yield explain_batch(payload, batch.drop(columns=_ID), positions, columns)


def explain_batch(payload: _Payload, batch: Any, positions: np.ndarray, columns: list) -> Any:
    """The values of a pandas batch of rows at ``positions`` of the DataFrame, as a pandas frame of the result's
    columns (the same bits as the local run: each row's seed is its position's; an error names the row by its
    position)."""
    model, background, args, plan, rule, root, options = payload
    data = read_input(model, batch.set_axis(positions.tolist(), axis=0), background, args)
    plans = [plan] * data.n_items
    explained = data.closed_form(plans, args, root, options)
    if explained is None:
        data.planned, data.rule = plans, rule
        results = [run_values(data, j, item_seed(root, int(positions[j]))) for j in range(data.n_items)]
        explained = data.result(results, plans, {})
    out = explained.to_frame().reset_index(drop=True).reindex(columns=columns)
    out.insert(0, "row", positions.astype(np.int64))
    return out
