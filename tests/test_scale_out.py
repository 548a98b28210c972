"""Spark and Ray as ``client=`` (issue 41): the local values bit for bit at every door that takes a cluster, bad
clusters refused before any work is sent, a cache folder that lets a killed job resume, Spark DataFrames explained
where they are.

The clusters are the session's (``tests/conftest.py``: a local[2] SparkSession, ``ray.init(num_cpus=2)``). The
default run keeps one real case per backend (a table explained, with the bad-input checks); the other doors are
slow-marked (``pytest -m slow tests/test_scale_out.py``)."""

from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest

import fairshare as fs
from fairshare.backends.base import Backend, BackendError
from fairshare.backends.clients import as_backend

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("FAIRSHARE_DATASETS", ROOT.parent / "shared" / "datasets"))
PIMA = DATASETS / "diabetes_pima" / "pima-indians-diabetes.data.csv"
needs_pima = pytest.mark.skipif(not PIMA.exists(), reason="../shared/datasets is missing")
BACKENDS = ["spark", "ray"]


def _cluster(request, name: str):
    return request.getfixturevalue("spark" if name == "spark" else "ray_module")


@pytest.fixture(scope="module")
def pima():
    """An xgboost classifier on the Pima diabetes data, its rows and the local explanation of four of them."""
    pd = pytest.importorskip("pandas")
    xgboost = pytest.importorskip("xgboost")
    frame = pd.read_csv(PIMA, header=None)
    X, y = frame.iloc[:, :8].to_numpy(float), frame.iloc[:, 8].to_numpy(int)
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1).fit(X, y)
    local = fs.explain(model.predict_proba, X[:4], background=X[:10], budget=100, seed=3, progress=False)
    return model, X, y, local


class Locked:
    """A model holding a lock: it cannot be pickled to a cluster's workers."""

    def __init__(self, model) -> None:
        self.model, self.lock = model, threading.Lock()

    def predict_proba(self, X):
        return self.model.predict_proba(X)


class Counted:
    """``model.predict_proba`` with every call counted in a file (one byte per call, from any process); while the
    file ``fail`` exists, a call on a row whose first feature is ``fail_on`` raises (a job killed there)."""

    def __init__(self, model, log, fail_on: float | None = None, fail=None) -> None:
        self.model, self.log, self.fail_on, self.fail = model, str(log), fail_on, None if fail is None else str(fail)

    def predict_proba(self, X):
        if self.fail is not None and os.path.exists(self.fail) and np.any(X[:, 0] == self.fail_on):
            raise RuntimeError("the job was killed here")
        with open(self.log, "ab") as fh:
            fh.write(b".")
        return self.model.predict_proba(X)

    def calls(self) -> int:
        return os.path.getsize(self.log) if os.path.exists(self.log) else 0


def _explains_a_table_bit_for_bit(client, name: str, pima, tmp_path, monkeypatch) -> None:
    model, X, _, local = pima
    monkeypatch.chdir(tmp_path)                         # a relative cache folder: the driver's, not the workers' cwd
    remote = fs.explain(model.predict_proba, X[:4], background=X[:10], budget=100, seed=3, progress=False,
                        client=client, cache="cache")
    assert np.array_equal(remote.values, local.values) and np.array_equal(remote.stderr, local.stderr)
    assert remote.method == local.method == "surrogate-regression"    # sampled: the seeds travelled
    assert sorted(p.name for p in (tmp_path / "cache" / "rows").glob("*.npz")) == \
        [f"{i:08d}.npz" for i in range(4)]                             # each row saved by its worker
    with pytest.raises(BackendError, match=rf"client \({name}\): the model \(a Locked\) cannot be pickled to the "
                                           r"workers \(TypeError: cannot pickle '_thread.lock'"):
        fs.explain(Locked(model).predict_proba, X[:2], background=X[:10], budget=100, seed=3, progress=False,
                   client=client)
    with pytest.raises(BackendError, match=rf"client \({name}\): the workers cannot write the cache folder "
                                           r"'/nonexistent/fairshare-cache' \(No such file or directory\)"):
        as_backend(client).check_writable("/nonexistent/fairshare-cache")


@needs_pima
def test_spark_explains_a_table_with_the_local_values_bit_for_bit(spark_sessions, pima, tmp_path, monkeypatch):
    session, stopped = spark_sessions
    _explains_a_table_bit_for_bit(session, "Spark", pima, tmp_path, monkeypatch)
    model, X, _, _ = pima
    with pytest.raises(BackendError, match=r"client \(Spark\): the SparkSession is stopped; start one"):
        fs.explain(model.predict_proba, X[:2], background=X[:10], budget=100, progress=False, client=stopped)
    with pytest.raises(BackendError, match="SparkSession is stopped"):
        fs.value_data(model, X[:20], np.arange(20) % 2, X[20:30], np.arange(10) % 2, budget=50, client=stopped)


@needs_pima
def test_ray_explains_a_table_with_the_local_values_bit_for_bit(ray_refused, ray_module, pima, tmp_path,
                                                               monkeypatch):
    assert ray_refused is None or isinstance(ray_refused, BackendError), ray_refused
    if ray_refused is not None:                  # this process had not started Ray before the fixture did
        assert str(ray_refused).startswith("client (Ray): Ray is not initialised; call ray.init()")
    _explains_a_table_bit_for_bit(ray_module, "Ray", pima, tmp_path, monkeypatch)


class RaisesOn:
    """``model.predict_proba``, raising on a row whose first feature is ``value``."""

    def __init__(self, model, value: float) -> None:
        self.model, self.value = model, value

    def predict_proba(self, X):
        if np.any(np.asarray(X)[:, 0] == self.value):
            raise RuntimeError("no model for this row")
        return self.model.predict_proba(X)


class StoppedFrame:
    """What explain reads of a Spark DataFrame whose session was stopped (no job can run)."""

    __module__ = "pyspark.sql.dataframe"

    def __init__(self, session) -> None:
        self.sparkSession = session

    def mapInPandas(self, *args):
        raise AssertionError("a job was started")


def test_a_spark_dataframe_keeps_its_row_positions_and_checks_every_row_before_any_model_call(spark_sessions,
                                                                                            tmp_path):
    """A row's position (and seed) came from the task running it (TaskContext.partitionId()): a result coalesced or
    unioned numbered the rows of both partitions from 0 ([0, 0, 1, 1, ...]) with values off the local run's. Only the
    first row was checked on the driver: a row holding inf (or NaN for a model that takes none) failed on the
    executors, after the other rows' model calls, named by its place in an Arrow batch ('row 2'); a model raising on
    row 5 was reported on 'row 1'; client= the frame's own session failed to pickle; an unpicklable model was 'the
    tuple'; a stopped session's frame was told to pass a session as client=."""
    pd = pytest.importorskip("pandas")
    from sklearn.linear_model import LogisticRegression

    session, stopped = spark_sessions
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    names = ["a", "b", "c"]
    model = LogisticRegression().fit(pd.DataFrame(X, columns=names), (X[:, 0] + X[:, 1] > 0).astype(int))
    rows, background = pd.DataFrame(X[:8], columns=names), pd.DataFrame(X[40:44], columns=names)
    kw = dict(background=background, budget=30, seed=2, progress=False)
    local = fs.explain(model.predict_proba, rows, **kw).to_frame().reset_index(drop=True)
    frame = session.createDataFrame(rows)
    assert frame.rdd.getNumPartitions() == 2
    out = fs.explain(model.predict_proba, frame, client=session, **kw)
    one = out.coalesce(1).toPandas()
    assert one["row"].tolist() == list(range(8)) and np.array_equal(one[local.columns].to_numpy(), local.to_numpy())
    both = out.union(out).toPandas().sort_values("row", kind="stable")
    assert both["row"].tolist() == sorted(2 * list(range(8)))
    assert np.array_equal(both[local.columns].to_numpy()[::2], local.to_numpy())
    holed = session.createDataFrame(rows.assign(a=np.where(np.arange(8) == 6, np.inf, rows["a"])))
    counted = Counted(model, tmp_path / "calls.log")
    with pytest.raises(ValueError, match=r"X: row 6 of the Spark DataFrame \(in its order\) is refused before any "
                                         r"model call: X holds inf at row 6, column 'a'"):
        fs.explain(counted.predict_proba, holed, **kw)
    assert counted.calls() == 0
    with pytest.raises(Exception, match=r"row 5: the model raised RuntimeError \(no model for this row\)"):
        fs.explain(RaisesOn(model, X[5, 0]).predict_proba, frame, **kw).collect()
    with pytest.raises(BackendError, match=r"client \(Spark\): the model \(a Locked\) cannot be pickled"):
        fs.explain(Locked(model).predict_proba, frame, **kw)
    with pytest.raises(BackendError, match=r"X: the Spark DataFrame's SparkSession is stopped"):
        fs.explain(model.predict_proba, StoppedFrame(stopped), **kw)


def test_data_oob_on_a_cluster_names_a_model_that_does_not_pickle(spark):
    """Data-OOB sent the model in every task's arguments: a model that does not pickle was 'a task's arguments'
    (and a model that does was pickled once per task); now it is put on the cluster once, named."""
    from sklearn.linear_model import LogisticRegression

    class LockedLogistic(LogisticRegression):
        def fit(self, X, y):
            self.lock = threading.Lock()
            return super().fit(X, y)

    X = np.random.default_rng(1).normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    model = LockedLogistic().fit(X, y)
    with pytest.raises(BackendError, match=r"client \(Spark\): the model \(a LockedLogistic\) cannot be pickled"):
        fs.value_data(model, X, y, index="data-oob", budget=4, seed=0, progress=False, client=spark)


def test_a_client_of_no_known_kind_is_refused_naming_the_kinds():
    with pytest.raises(TypeError, match=r"client must be a dask.distributed.Client, a pyspark SparkSession or "
                                        r"SparkContext, or the ray module after ray.init\(\), or None; got str"):
        fs.explain(lambda A: A.sum(axis=1), np.ones((2, 3)), background=np.zeros((1, 3)), client="tcp://nowhere")


class InProcess(Backend):
    """A cluster in this process that keeps the tasks it is sent; the driver saves what comes back, as on Dask."""

    name = "in-process"

    def __init__(self) -> None:
        super().__init__(None)
        self.tasks: list = []

    def slots(self) -> int:
        return 2

    def put(self, value):
        return pickle.loads(self.pickled_value(value))

    def run(self, fn, held=(), tasks=(), window=None, timeout=None):
        for k, task in enumerate(tasks):
            self.tasks.append(task)
            yield k, fn(*held, *task)


def test_a_driver_saving_cluster_gets_blocks_of_rows_with_the_local_values_bit_for_bit(tmp_path):
    """Dask's path (the driver saves what comes back) sent one task per row: 20 rows of a few ms each were 20 tasks,
    each paying the cluster's fixed cost; blocks of consecutive rows keep every row's own seed."""
    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(30, 10)), rng.normal(size=10)

    def f(A):
        return np.tanh(A @ w) + 0.1 * A[:, 0] * A[:, 1]

    local = fs.explain(f, X[:20], background=X[20:], budget=40, seed=4, progress=False)
    backend = InProcess()
    remote = fs.explain(f, X[:20], background=X[20:], budget=40, seed=4, progress=False, client=backend,
                        cache=tmp_path / "cache")
    assert np.array_equal(remote.values, local.values) and np.array_equal(remote.stderr, local.stderr)
    assert remote.method == local.method == "surrogate-regression"
    assert len(backend.tasks) == 8                                                       # not one per row
    assert [list(task[1]) for task in backend.tasks] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11], [12, 13],
                                                         [14, 15], [16, 17], [18, 19]]   # 4 blocks per slot
    assert len(list((tmp_path / "cache").rglob("rows/*.npz"))) == 20                     # every row saved


# ------------------------------------------------------------------------------------- further doors (slow)
def _spam_model():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts = ["win a free prize now", "free cash click here", "meeting at noon", "see the attached report",
             "claim your free prize", "lunch with the team"]
    return make_pipeline(TfidfVectorizer(), LogisticRegression(C=10.0)).fit(texts, [1, 1, 0, 0, 1, 0])


@needs_pima
@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_one_row_texts_and_interactions_give_the_local_values(request, name, pima, tmp_path):
    client = _cluster(request, name)
    model, X, _, _ = pima
    one = dict(background=X[:10], budget=100, seed=4, progress=False)
    local = fs.explain(model.predict_proba, X[5:6], **one)
    remote = fs.explain(model.predict_proba, X[5:6], client=client, cache=tmp_path / "one", **one)  # its coalitions
    again = fs.explain(model.predict_proba, X[5:6], client=client, cache=tmp_path / "one", **one)   # from the cache
    assert np.array_equal(local.values, remote.values) and np.array_equal(local.values, again.values)
    pairs = dict(background=X[:10], budget=300, seed=2, progress=False, interactions=2)
    local = fs.explain(model.predict_proba, X[:3], **pairs)
    remote = fs.explain(model.predict_proba, X[:3], client=client, **pairs)
    assert np.array_equal(local.values, remote.values) and np.array_equal(local.interactions, remote.interactions)
    spam = _spam_model()
    texts = ["win a free prize now, click here", "see the report", "free cash today or see the agenda"]
    local = fs.explain(spam, texts, budget=200, seed=5, progress=False)
    remote = fs.explain(spam, texts, budget=200, seed=5, progress=False, client=client)
    for a, b in zip(local, remote):
        assert a.tokens == b.tokens and np.array_equal(a.values, b.values) and np.array_equal(a.stderr, b.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_images_and_sequences_give_the_local_values(request, name):
    """A torch CNN on images (patches, mean baseline) and a function of sequences (rows, time, features): the
    model travels to the workers, each row's own seed with its block."""
    torch = pytest.importorskip("torch")
    client = _cluster(request, name)
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)).eval()
    images = torch.rand(3, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    one = dict(groups="patches", patch_size=8, baseline="mean", budget=64, seed=3, progress=False)
    local, remote = fs.explain(cnn, images, **one), fs.explain(cnn, images, client=client, **one)
    assert local.values.shape == (3, 4, 5)
    assert np.array_equal(local.values, remote.values) and np.array_equal(local.stderr, remote.stderr)
    assert np.array_equal(local.input_values(), remote.input_values())
    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(10, 6, 3)), rng.normal(size=(6, 3))

    def f(A):
        return np.tanh((A * w).sum(axis=(1, 2))) + A[:, 2, 0] * A[:, 3, 1]

    seq = dict(background=X[5:], budget=300, seed=4, progress=False)
    local, remote = fs.explain(f, X[:4], **seq), fs.explain(f, X[:4], client=client, **seq)
    assert local.values.shape == (4, 18)
    assert np.array_equal(local.values, remote.values) and np.array_equal(local.stderr, remote.stderr)


@needs_pima
@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_value_data_data_oob_and_distributed_sbq_give_the_local_values(request, name, pima):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    from fairshare.examples.prototypes import select_prototypes

    client = _cluster(request, name)
    _, X, y, _ = pima
    Xt, yt, Xv, yv = X[:30, :4], y[:30], X[100:160, :4], y[100:160]
    for index in ("banzhaf", "shapley"):
        local = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, index=index, budget=200, seed=5, progress=False)
        remote = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, index=index, budget=200, seed=5, progress=False,
                               client=client)
        assert np.array_equal(local.values, remote.values) and np.array_equal(local.stderr, remote.stderr)
        assert remote.n_fits == local.n_fits
    oob = dict(index="data-oob", budget=20, seed=1, progress=False)
    local = fs.value_data(KNeighborsClassifier(3), X[:60], y[:60], **oob)
    remote = fs.value_data(KNeighborsClassifier(3), X[:60], y[:60], client=client, **oob)
    assert np.array_equal(local.values, remote.values) and np.array_equal(local.stderr, remote.stderr)
    rng = np.random.default_rng(7)
    train, test = rng.normal(size=(600, 6)), rng.normal(size=(40, 6)) + 0.4
    for kernel in ("linear", "rbf"):
        local = select_prototypes(train, test, k=6, kernel=kernel, method="distributed", n_parts=3, seed=1)
        remote = select_prototypes(train, test, k=6, kernel=kernel, method="distributed", n_parts=3, seed=1,
                                   client=client)
        assert np.array_equal(local.indices, remote.indices) and np.array_equal(local.weights, remote.weights)


@needs_pima
@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_a_killed_job_resumes_from_the_cache_without_calling_the_model_for_its_finished_rows(request, name, pima,
                                                                                             tmp_path):
    client = _cluster(request, name)
    model, X, _, _ = pima
    rows = X[:6].copy()
    rows[5, 0] = 99.0                                      # no background row has it: row 5's calls are known
    kw = dict(background=X[:10], budget=100, seed=3, progress=False)
    one, six = Counted(model, tmp_path / "one.log"), Counted(model, tmp_path / "six.log")
    fs.explain(one.predict_proba, rows[:1], **kw)
    local = fs.explain(six.predict_proba, rows, **kw)
    per_row = (six.calls() - one.calls()) // 5             # the model calls of one row's estimate
    at_driver = one.calls() - per_row                      # the door's own calls (reading the model's outputs)
    assert per_row > 0 and six.calls() == at_driver + 6 * per_row
    fail = tmp_path / "fail"
    fail.touch()
    counted = Counted(model, tmp_path / "calls.log", fail_on=99.0, fail=fail)
    with pytest.raises(Exception, match="the job was killed here"):
        fs.explain(counted.predict_proba, rows, client=client, cache=tmp_path / "cache", **kw)
    finished = sorted(int(p.stem) for p in (tmp_path / "cache" / "rows").glob("*.npz"))
    assert finished and 5 not in finished
    fail.unlink()
    before = counted.calls()
    resumed = fs.explain(counted.predict_proba, rows, client=client, cache=tmp_path / "cache", **kw)
    assert counted.calls() - before == at_driver + per_row * (6 - len(finished))    # none for the finished rows
    assert np.array_equal(resumed.values, local.values) and np.array_equal(resumed.stderr, local.stderr)


@needs_pima
@pytest.mark.slow
def test_a_spark_dataframe_is_explained_on_the_executors_with_the_local_values(spark, pima, tmp_path):
    pd = pytest.importorskip("pandas")
    model, X, _, _ = pima
    names = ["pregnancies", "glucose", "pressure", "skin", "insulin", "bmi", "pedigree", "age"]
    rows, background = pd.DataFrame(X[:9], columns=names), pd.DataFrame(X[100:110], columns=names)
    kw = dict(background=background, budget=100, seed=6, progress=False)
    local = fs.explain(model.predict_proba, rows, **kw).to_frame().reset_index(drop=True)
    counted = Counted(model, tmp_path / "calls.log")
    frame = spark.createDataFrame(rows).repartition(3)            # rows spread over partitions, out of order
    ordered = spark.createDataFrame(rows)
    out = fs.explain(counted.predict_proba, ordered, **kw)
    at_driver = counted.calls()
    assert at_driver <= 2 and type(out).__name__ == "DataFrame"    # lazy: the rows are explained on collect
    assert out.columns == ["row"] + list(local.columns)
    got = out.toPandas().sort_values("row")
    assert counted.calls() > at_driver + 9 and got["row"].tolist() == list(range(9))
    assert np.array_equal(got[local.columns].to_numpy(), local.to_numpy())
    shuffled = fs.explain(model.predict_proba, frame, **kw).toPandas().sort_values("row")
    again = fs.explain(model.predict_proba, frame.toPandas(), **kw).to_frame().reset_index(drop=True)
    assert np.array_equal(shuffled[local.columns].to_numpy(), again.to_numpy())   # positions: the frame's order
    with pytest.raises(ValueError, match="cache: not taken with a Spark DataFrame"):
        fs.explain(model.predict_proba, ordered, cache=tmp_path / "c", **kw)
    with pytest.raises(TypeError, match="background: give a pandas frame or an array"):
        fs.explain(model.predict_proba, ordered, background=ordered, progress=False)


def _sleepy(S):
    import time

    time.sleep(6.0)
    return S.sum(axis=1).astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_a_wait_with_no_task_finishing_ends_at_the_timeout_naming_the_backend(request, name):
    from fairshare.backends.dask import WorkersLostError

    client = _cluster(request, name)
    game = fs.games.DistributedGame(fs.games.FunctionGame(_sleepy, n_players=3), client, timeout=2)
    with pytest.raises(WorkersLostError, match=rf"{name.capitalize()} run stopped: no task finished in 2 s"):
        game(np.ones((2, 3), dtype=bool))
    quick = fs.games.DistributedGame(fs.games.AdditiveGame([1.0, 2.0, 3.0]), client, timeout=30)
    assert quick(np.array([[True, False, True]])).tolist() == [4.0]       # the cluster still takes work after it
