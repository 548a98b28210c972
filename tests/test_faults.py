"""Fault injection on the caches of explain (tables, texts) and value_data: kill -9 at random points, then resume
bit for bit with fewer model calls; damaged, truncated, swapped and foreign cache files (redone with a warning,
never read as values); two processes on one folder; cache keys by content (issue 44, items 3, 5, 6, 7, 9, 10)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import fairshare as fs
from fairshare.store.cache import writable_folder

pytest.importorskip("sklearn")

# the models of the runs, in a module of their own: a child process and this one import the same code, so that the
# cache keys (by content) agree. Every model call (or fit) adds a byte to the file FAULT_CALLS names.
MODELS = textwrap.dedent('''
    import os, time
    import numpy as np
    from sklearn.linear_model import Ridge

    W = np.linspace(-1.0, 1.0, 8)


    def tick():
        path, stop = os.environ["FAULT_CALLS"], int(os.environ.get("FAULT_STOP", "0"))
        if stop and os.path.exists(path) and os.path.getsize(path) + 1 >= stop:
            raise KeyboardInterrupt("stopped at model call %d" % stop)
        with open(path, "ab") as fh:
            fh.write(b".")
        time.sleep(float(os.environ.get("FAULT_SLEEP", "0")))


    def predict(Z):                                    # a comprehension and a generator: nested code objects
        tick()
        return np.tanh(Z @ W) + 0.1 * np.array([sum(v * v for v in z) for z in Z])


    def text_model(texts):
        tick()
        return np.array([[t.count("e") / (1.0 + len(t)), len(t.split()) / 10.0] for t in texts])


    class SlowRidge(Ridge):
        def fit(self, X, y, sample_weight=None):
            tick()
            return super().fit(X, y, sample_weight)


    TEXTS = ["the cat sat on the mat by the door", "free prize, click here now", "see you at the meeting on monday"]


    def run(kind, cache=None, seed=1):
        import fairshare as fs
        rng = np.random.default_rng(0)
        if kind == "tables":
            X, bg = rng.normal(size=(3, 8)), rng.normal(size=(4, 8))
            return fs.explain(predict, X, bg, budget=80, seed=seed, method="permutation", batch_size=16, cache=cache,
                              progress=False).values
        if kind == "texts":
            out = fs.explain(text_model, TEXTS, budget=60, seed=seed, batch_size=6, cache=cache, progress=False)
            return np.concatenate([e.values.ravel() for e in out])
        X = rng.normal(size=(40, 3))
        y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.3, size=40)
        return fs.value_data(SlowRidge(), X[:12], y[:12], X[12:], y[12:], budget=60, seed=seed, cache=cache,
                             progress=False).values
''')

CHILD = "import sys; sys.path.insert(0, sys.argv[1]); import faultmodels; faultmodels.run(sys.argv[2], sys.argv[3])"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faultmodels")
    (folder / "faultmodels.py").write_text(MODELS)
    sys.path.insert(0, str(folder))
    import faultmodels
    yield faultmodels, folder
    sys.path.remove(str(folder))
    sys.modules.pop("faultmodels", None)


def _calls(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _counted(monkeypatch, path: Path, run, *args, **kwargs):
    """``run(*args)`` and the model calls (or fits) it made."""
    path.unlink(missing_ok=True)
    monkeypatch.setenv("FAULT_CALLS", str(path))
    return run(*args, **kwargs), _calls(path)


def _child(models, kind: str, cache: Path, calls: Path) -> subprocess.Popen:
    env = {**os.environ, "FAULT_CALLS": str(calls), "FAULT_SLEEP": "0.03",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(models[1]), kind, str(cache)], env=env,
                            stderr=subprocess.PIPE)


# -------------------------------------------------------------------------------------- kill -9, resume
@pytest.mark.parametrize("kind, seed", [("tables", 11), ("texts", 12), ("data", 13)])
def test_kill_9_at_a_random_point_resumes_bit_for_bit_with_fewer_model_calls(models, kind, seed, tmp_path,
                                                                           monkeypatch):
    m = models[0]
    fresh, total = _counted(monkeypatch, tmp_path / "fresh", m.run, kind)
    kill_at = int(np.random.default_rng(seed).integers(2, total - 6))         # a random model call of the run
    cache, calls = tmp_path / "cache", tmp_path / "child"
    proc = _child(models, kind, cache, calls)
    deadline = time.time() + 120
    while _calls(calls) < kill_at and proc.poll() is None and time.time() < deadline:
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _calls(calls)
    assert proc.returncode == -signal.SIGKILL and kill_at <= killed_at < total, proc.stderr.read().decode()[-3000:]
    resumed, spent = _counted(monkeypatch, tmp_path / "resumed", m.run, kind, cache)
    np.testing.assert_array_equal(resumed, fresh)
    # every model call that returned before the kill was kept: at most the one in flight is made again
    assert spent <= total - (killed_at - 1) and spent < total
    again, spent = _counted(monkeypatch, tmp_path / "again", m.run, kind, cache)
    assert spent == 0 and np.array_equal(again, fresh)


# ----------------------------------------------------------------- item 5: a kill inside one game call
@pytest.mark.parametrize("kind", ["tables", "texts"])
def test_an_interrupt_inside_one_game_call_keeps_the_model_calls_that_returned(models, kind, tmp_path, monkeypatch):
    """One game call spans many model calls (ModelGame's row batches, a text game's batch_size); each is kept as it
    returns, so a run interrupted inside its first game call makes all but those again, not the whole call."""
    m = models[0]
    fresh, total = _counted(monkeypatch, tmp_path / "fresh", m.run, kind)
    monkeypatch.setenv("FAULT_STOP", "6")                  # the 6th model call raises: 5 returned
    with pytest.raises(KeyboardInterrupt):
        _counted(monkeypatch, tmp_path / "stopped", m.run, kind, tmp_path / "cache")
    monkeypatch.delenv("FAULT_STOP")
    resumed, spent = _counted(monkeypatch, tmp_path / "resumed", m.run, kind, tmp_path / "cache")
    np.testing.assert_array_equal(resumed, fresh)
    assert spent == total - 5


# ------------------------------------------------------------------ item 6: swapped and foreign files
def _swap(a: Path, b: Path) -> None:
    tmp = a.with_name("swap.tmp")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def _said(record) -> list[str]:
    """The warnings' messages, each from the cache folder on (the file it names, what is done)."""
    return [str(w.message).split("cache/", 1)[-1] for w in record]


def test_swapped_row_files_are_redone_with_a_warning(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    fresh, _ = _counted(monkeypatch, tmp_path / "fresh", m.run, "tables")
    _counted(monkeypatch, tmp_path / "first", m.run, "tables", cache)
    _swap(cache / "rows" / "00000000.npz", cache / "rows" / "00000001.npz")
    with pytest.warns(RuntimeWarning) as record:
        again, spent = _counted(monkeypatch, tmp_path / "again", m.run, "tables", cache)
    assert _said(record) == [f"rows/0000000{i}.npz belongs to another row or run; row {i} is computed again"
                             for i in (0, 1)]
    np.testing.assert_array_equal(again, fresh)
    assert spent == 0                                  # recomputed from the rows' own coalition logs


def test_swapped_coalition_logs_are_redone_with_a_warning(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    fresh, total = _counted(monkeypatch, tmp_path / "fresh", m.run, "tables")
    _counted(monkeypatch, tmp_path / "first", m.run, "tables", cache)
    for f in (cache / "rows").glob("*.npz"):
        f.unlink()
    logs = cache / "coalitions"
    _swap(logs / "00000000" / "values.log", logs / "00000002" / "values.log")
    with pytest.warns(RuntimeWarning) as record:
        again, spent = _counted(monkeypatch, tmp_path / "again", m.run, "tables", cache)
    assert _said(record) == [f"coalitions/0000000{i}/values.log belongs to another row, game or run; its values "
                             "are computed again" for i in (0, 2)]
    np.testing.assert_array_equal(again, fresh)
    assert 0 < spent < total                           # rows 0 and 2 again, row 1 from its log


def test_swapped_text_files_are_redone_with_a_warning(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    fresh, _ = _counted(monkeypatch, tmp_path / "fresh", m.run, "texts")
    _counted(monkeypatch, tmp_path / "first", m.run, "texts", cache)
    _swap(cache / "rows" / "00000000.npz", cache / "rows" / "00000002.npz")
    with pytest.warns(RuntimeWarning) as record:
        again, spent = _counted(monkeypatch, tmp_path / "again", m.run, "texts", cache)
    assert _said(record) == [f"rows/0000000{i}.npz belongs to another row or run; row {i} is computed again"
                             for i in (0, 2)]
    np.testing.assert_array_equal(again, fresh)
    assert spent == 0


def test_a_fit_log_from_another_run_is_redone_with_a_warning(models, tmp_path, monkeypatch):
    m = models[0]
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    other = dict(budget=40, seed=0, progress=False)
    monkeypatch.setenv("FAULT_CALLS", str(tmp_path / "calls"))
    fresh = fs.value_data(m.SlowRidge(), X[:10], y[:10], X[10:], y[10:], **other).values
    fs.value_data(m.SlowRidge(), X[:10], y[:10], X[10:], y[10:], cache=tmp_path / "mine", **other)
    fs.value_data(m.SlowRidge(), X[:10], -y[:10], X[10:], y[10:], cache=tmp_path / "theirs", **other)
    shutil.copy(tmp_path / "theirs" / "fits.log", tmp_path / "mine" / "fits.log")
    with pytest.warns(RuntimeWarning, match=r"fits.log belongs to another row, game or run"):
        again = fs.value_data(m.SlowRidge(), X[:10], y[:10], X[10:], y[10:], cache=tmp_path / "mine", **other)
    np.testing.assert_array_equal(again.values, fresh)
    assert again.reused_fits == 0


# ------------------------------------------------------------- item 10: damaged and truncated files
def _flip(path: Path, *positions: int) -> None:
    data = bytearray(path.read_bytes())
    for p in positions:
        data[p] ^= 0x5A
    path.write_bytes(bytes(data))


def _quiet(run, *args):
    """``run(*args)``, any warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return run(*args)


@pytest.fixture()
def row_logs(models, tmp_path, monkeypatch):
    """A finished tables run whose rows are kept only as coalition logs, its values and model calls."""
    m, cache = models[0], tmp_path / "cache"
    fresh, total = _counted(monkeypatch, tmp_path / "fresh", m.run, "tables")
    _counted(monkeypatch, tmp_path / "first", m.run, "tables", cache)

    def rerun():
        for f in (cache / "rows").glob("*.npz"):
            f.unlink()
        return _counted(monkeypatch, tmp_path / "again", m.run, "tables", cache)
    return cache / "coalitions" / "00000000" / "values.log", fresh, total, rerun


def test_a_damaged_log_header_is_restored_and_every_record_kept(row_logs):
    log, fresh, _, rerun = row_logs
    _flip(log, 8)                                      # the key width of the header's first copy
    with pytest.warns(RuntimeWarning, match=r"values.log: one copy of its header was damaged and is restored"):
        again, spent = rerun()
    np.testing.assert_array_equal(again, fresh)
    assert spent == 0
    again, spent = _quiet(rerun)                       # the header was rewritten: no warning the next time
    assert spent == 0


def test_a_log_header_damaged_in_both_copies_is_redone_and_later_runs_go_on(row_logs):
    log, fresh, total, rerun = row_logs
    size = log.stat().st_size
    _flip(log, 8, 48 + 12)
    with pytest.warns(RuntimeWarning, match=r"values.log is damaged \(its header"):
        again, spent = rerun()
    np.testing.assert_array_equal(again, fresh)
    assert 0 < spent < total and log.stat().st_size == size
    again, spent = _quiet(rerun)
    assert spent == 0 and np.array_equal(again, fresh)


def test_one_damaged_record_is_redone_alone_and_the_good_ones_kept(row_logs):
    log, fresh, total, rerun = row_logs
    _flip(log, log.stat().st_size - 6)                 # inside the last record's values
    with pytest.warns(RuntimeWarning, match=r"values.log: 1 damaged record\(s\) skipped"):
        again, spent = rerun()
    np.testing.assert_array_equal(again, fresh)
    assert spent == 1
    again, spent = _quiet(rerun)                       # dropped from the file: not met again
    assert spent == 0


@pytest.mark.parametrize("cut, match", [(0, "is empty"), (30, r"is damaged \(its header"), (-7, None)])
def test_truncated_logs_are_redone(row_logs, cut, match):
    log, fresh, total, rerun = row_logs
    log.write_bytes(log.read_bytes()[:cut])
    if match is None:                                  # a record torn by a kill: cut off without a word
        again, spent = _quiet(rerun)
        assert spent == 1
    else:
        with pytest.warns(RuntimeWarning, match=match):
            again, spent = rerun()
        assert 0 < spent < total
    np.testing.assert_array_equal(again, fresh)


def test_damaged_fit_log_header_keeps_every_fit(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    fresh, _ = _counted(monkeypatch, tmp_path / "fresh", m.run, "data")
    _counted(monkeypatch, tmp_path / "first", m.run, "data", cache)
    _flip(cache / "fits.log", 12)                      # the values per record
    with pytest.warns(RuntimeWarning, match=r"fits.log: one copy of its header was damaged"):
        again, spent = _counted(monkeypatch, tmp_path / "again", m.run, "data", cache)
    np.testing.assert_array_equal(again, fresh)
    assert spent == 0


def test_damaged_text_file_and_old_format_log_are_redone(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    fresh, _ = _counted(monkeypatch, tmp_path / "fresh", m.run, "texts")
    _counted(monkeypatch, tmp_path / "first", m.run, "texts", cache)
    (cache / "rows" / "00000001.npz").write_bytes(b"PK\x03\x04 not a zip")
    log = cache / "coalitions" / "00000001" / "values.log"
    old = np.array([1, 2, 0, 0], dtype="<u4").tobytes() + bytes(range(40))     # the format of fairshare 0.1
    log.write_bytes(b"fslog\x00\x01\x00" + old)
    with pytest.warns(RuntimeWarning) as record:
        again, spent = _counted(monkeypatch, tmp_path / "again", m.run, "texts", cache)
    said = " | ".join(str(w.message) for w in record)
    assert "00000001.npz is damaged; row 1 is computed again" in said
    assert "values.log was written by an older fairshare" in said
    np.testing.assert_array_equal(again, fresh)
    assert spent > 0


def test_a_cache_folder_of_the_older_format_is_refused(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    cache.mkdir()
    (cache / "manifest.json").write_text('{"fingerprint": "0123456789abcdef"}')
    with pytest.raises(ValueError, match=r"written by an older fairshare \(cache format 1, now 3\)"):
        _counted(monkeypatch, tmp_path / "calls", m.run, "tables", cache)
    assert _calls(tmp_path / "calls") == 0


# ------------------------------------------------------------------------- items 3 and 7: the keys
NESTED = "def f(Z):\n    return np.array([sum(v for v in z) for z in Z]) + (lambda a: a)(0.5)\n"


def _made(source: str, **names):
    """A function or class made afresh from ``source`` (new code objects at new addresses), in module 'userland'."""
    space = {"np": np, "__name__": "userland", **names}
    exec(source, space)
    return space[source.split()[1].split("(")[0].rstrip(":")]


def test_a_model_function_with_nested_code_resumes(tmp_path):
    """Item 7: lambdas, comprehensions and generators are keyed by content, not by their addresses."""
    X, bg = np.arange(12.0).reshape(3, 4), np.zeros((2, 4))
    args = dict(budget=20, seed=0, progress=False, cache=tmp_path)
    first = fs.explain(_made(NESTED), X, bg, **args)
    again = fs.explain(_made(NESTED), X, bg, **args)          # the same code, made again: the same run
    np.testing.assert_array_equal(again.values, first.values)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(_made(NESTED.replace("0.5", "0.25")), X, bg, **args)


SCORER = "def score(model, X, y):\n    return -float(np.mean((model.predict(X) - y) ** 2)) * SCALE\n"
CLASS = textwrap.dedent("""
    class Model(Ridge):
        def fit(self, X, y, sample_weight=None):
            return super().fit(X, y * SCALE, sample_weight)
""")


def _value(tmp_path, model, scoring=None):
    from sklearn.linear_model import Ridge  # noqa: F401
    rng = np.random.default_rng(1)
    X = rng.normal(size=(24, 2))
    y = X[:, 0] - X[:, 1]
    return fs.value_data(model, X[:8], y[:8], X[8:], y[8:], scoring=scoring, budget=30, seed=0, progress=False,
                         cache=tmp_path)


def test_value_data_keys_an_edited_scorer_by_content(tmp_path):
    """Item 3: a scorer of the same name with other code, constants or data is another run."""
    from sklearn.linear_model import Ridge
    first = _value(tmp_path, Ridge(), _made(SCORER, SCALE=1.0))
    again = _value(tmp_path, Ridge(), _made(SCORER, SCALE=1.0))
    assert again.n_fits == 0 and np.array_equal(again.values, first.values)
    for edited in (_made(SCORER, SCALE=2.0), _made(SCORER.replace("** 2", "** 4"), SCALE=1.0)):
        with pytest.raises(ValueError, match="holds a different run"):
            _value(tmp_path, Ridge(), edited)


def test_value_data_keys_a_model_class_by_content_not_by_name(tmp_path):
    """Item 3: another class of the same name and settings is another run."""
    from sklearn.linear_model import Ridge
    first = _value(tmp_path, _made(CLASS, Ridge=Ridge, SCALE=1.0)())
    again = _value(tmp_path, _made(CLASS, Ridge=Ridge, SCALE=1.0)())
    assert again.n_fits == 0 and np.array_equal(again.values, first.values)
    with pytest.raises(ValueError, match="holds a different run"):
        _value(tmp_path, _made(CLASS.replace("y * SCALE", "-y"), Ridge=Ridge, SCALE=1.0)())
    with pytest.raises(ValueError, match="holds a different run"):
        _value(tmp_path, _made(CLASS, Ridge=Ridge, SCALE=1.0)(alpha=3.0))


SCALED = textwrap.dedent("""
    class Scaled:
        scale = 2.0

        def predict(self, X):
            return X.sum(axis=1) ** 2 * self.scale * self.factor

        @functools.cached_property
        def factor(self):
            return 1.0
""")


def test_a_model_class_is_keyed_by_its_data_attributes(tmp_path):
    """A class was keyed by its methods' code only: Scaled.scale edited from 2.0 to 3.0 was served scale 2.0's
    values, and a cached_property's code was not read at all."""
    import functools
    X, bg = np.random.default_rng(0).random((3, 4)), np.zeros((1, 4))
    args = dict(progress=False, seed=0, cache=tmp_path)
    first = fs.explain(_made(SCALED, functools=functools)().predict, X, bg, **args)
    again = fs.explain(_made(SCALED, functools=functools)().predict, X, bg, **args)
    np.testing.assert_array_equal(again.values, first.values)
    for edited in (SCALED.replace("2.0", "3.0"), SCALED.replace("1.0", "5.0")):
        model = _made(edited, functools=functools)
        assert not np.allclose(fs.explain(model().predict, X, bg, progress=False, seed=0).values, first.values)
        with pytest.raises(ValueError, match="holds a different run"):
            fs.explain(model().predict, X, bg, **args)              # a fresh one: its factor not read yet


def test_a_local_module_a_model_reads_is_keyed_by_what_it_reads(tmp_path, monkeypatch):
    """A module of the user's own read by the model (cfg.SCALE, cfg.squared) was keyed by its name: SCALE edited
    from 2.0 to 3.0 (read directly, or by a function of the module) was served the 2.0 values on its folder."""
    import importlib
    (tmp_path / "fs_test_cfg.py").write_text("SCALE = 2.0\n\n\ndef squared(x):\n    return x ** 2 * SCALE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = importlib.import_module("fs_test_cfg")
    X, bg = np.random.default_rng(0).random((3, 4)), np.zeros((1, 4))
    args = dict(progress=False, seed=0, cache=tmp_path / "c")
    for f in (lambda Z: Z.sum(axis=1) ** 2 * cfg.SCALE, lambda Z: cfg.squared(Z.sum(axis=1))):
        monkeypatch.setattr(cfg, "SCALE", 2.0)
        first = fs.explain(f, X, bg, **args)
        np.testing.assert_array_equal(fs.explain(f, X, bg, **args).values, first.values)
        monkeypatch.setattr(cfg, "SCALE", 3.0)
        np.testing.assert_allclose(fs.explain(f, X, bg, progress=False, seed=0).values, 1.5 * first.values)
        with pytest.raises(ValueError, match="holds a different run"):
            fs.explain(f, X, bg, **args)
        shutil.rmtree(tmp_path / "c")


LRU = textwrap.dedent("""
    import functools

    SCALE = 2.0


    @functools.lru_cache(maxsize=None)
    def weight():
        return SCALE


    def predict(X):
        return X.sum(axis=1) ** 2 * weight()
""")


def test_a_function_behind_lru_cache_is_keyed_by_content(tmp_path, monkeypatch):
    """pickle names a functools.lru_cache wrapper by its module and name, so the key never read the function it
    wraps: with SCALE edited from 2.0 to 3.0 (a new process, the edited file) predict was served 2.0's values."""
    import importlib
    (tmp_path / "fs_test_lru.py").write_text(LRU)
    monkeypatch.syspath_prepend(str(tmp_path))
    lru = importlib.import_module("fs_test_lru")
    X, bg = np.random.default_rng(0).random((3, 4)), np.zeros((1, 4))
    args = dict(progress=False, seed=0, cache=tmp_path / "c")
    first = fs.explain(lru.predict, X, bg, **args)
    np.testing.assert_array_equal(fs.explain(lru.predict, X, bg, **args).values, first.values)
    monkeypatch.setattr(lru, "SCALE", 3.0)
    lru.weight.cache_clear()
    np.testing.assert_allclose(fs.explain(lru.predict, X, bg, progress=False, seed=0).values, 1.5 * first.values)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(lru.predict, X, bg, **args)


def test_a_torch_run_is_keyed_by_its_inputs_and_its_weights_by_content(tmp_path):
    """The key of a torch run holds its inputs (it held none: other images were given the first run's values) and
    the network's weights by their bytes (pickle names a tensor by its memory address: a copy of the network, or
    the same one in a new process, was another run)."""
    import copy
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2))
    X = torch.randn(2, 1, 4, 4)
    args = dict(budget=40, seed=0, progress=False, cache=tmp_path)
    first = fs.explain(net, X, **args)
    np.testing.assert_array_equal(fs.explain(copy.deepcopy(net), X.clone(), **args).values, first.values)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(net, X + 1, **args)
    with torch.no_grad():
        net[1].weight[0, 0] += 1.0
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(net, X, **args)


def test_a_generator_seed_is_keyed_by_its_state(tmp_path):
    """Every Generator was keyed 'Generator(PCG64)': a run seeded default_rng(1) on default_rng(0)'s folder was
    served its values (surrogate-regression at 200 of 2^12 coalitions, which another seed changes). The key holds
    the Generator's state, so a Generator in the same state resumes the run without a model call."""
    calls = []

    def f(Z):
        calls.append(len(Z))
        return Z[:, 0] * Z[:, 1] * Z[:, 2] + Z[:, 3] ** 2

    X, bg = np.random.default_rng(1).random((2, 12)), np.zeros((1, 12))
    args = dict(budget=200, progress=False, cache=tmp_path)
    first = fs.explain(f, X, bg, seed=np.random.default_rng(0), **args)
    other = fs.explain(f, X, bg, seed=np.random.default_rng(1), progress=False, budget=200)
    assert not np.array_equal(other.values, first.values)
    calls.clear()                                      # (the key reads f's closure: the same list, empty)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(f, X, bg, seed=np.random.default_rng(1), **args)
    calls.clear()
    again = fs.explain(f, X, bg, seed=np.random.default_rng(0), **args)
    assert not calls and np.array_equal(again.values, first.values)


RULE = textwrap.dedent("""
    import sys
    import numpy as np
    import fairshare as fs
    from fairshare.stopping import StoppingRule


    class Enough(StoppingRule):                          # no __repr__ of its own
        def __init__(self, n):
            self.n = n

        def __call__(self, state):
            return f"{state.n_evaluations} evaluations" if state.n_evaluations >= self.n else None


    def predict(Z):
        with open(sys.argv[2], "ab") as fh:
            fh.write(b".")
        return np.tanh(Z @ np.linspace(-1.0, 1.0, 6))


    X, bg = np.random.default_rng(0).normal(size=(2, 6)), np.zeros((1, 6))
    e = fs.explain(predict, X, bg, method="permutation", budget=400, seed=0, stop=Enough(int(sys.argv[3])),
                   cache=sys.argv[1], progress=False)
    np.save(sys.argv[4], e.values)
""")


def test_a_custom_stopping_rule_is_keyed_by_content_and_resumes_in_a_new_process(tmp_path):
    """A stopping rule of the user's without a __repr__ was keyed by repr(rule), '<__main__.Enough object at
    0x7f...>': its address, another in every process, so a new process was refused its own run's folder ('holds
    a different run') and paid every model call again in another. Keyed by content (its class's code, its
    attributes), a new process resumes with 0 model calls; another threshold is another run."""
    (tmp_path / "rule_run.py").write_text(RULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}

    def run(n: int, name: str) -> tuple[subprocess.CompletedProcess, int]:
        calls = tmp_path / f"{name}.calls"
        done = subprocess.run([sys.executable, str(tmp_path / "rule_run.py"), str(tmp_path / "cache"), str(calls),
                               str(n), str(tmp_path / f"{name}.npy")], env=env, capture_output=True, timeout=300)
        return done, _calls(calls)

    first, spent = run(100, "first")
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    assert spent > 0
    again, spent = run(100, "again")
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert spent == 0
    np.testing.assert_array_equal(np.load(tmp_path / "again.npy"), np.load(tmp_path / "first.npy"))
    other, spent = run(200, "other")
    assert other.returncode != 0 and b"holds a different run" in other.stderr and spent == 0


def test_long_arrays_in_a_run_s_settings_are_keyed_by_their_whole_contents(tmp_path):
    """Settings were written into the key by str(): a numpy array or a pandas Index of more than 1000 elements
    summarized with '...', so one name changed in the middle of 2000 gave the same key. Groups of 1200 feature
    names each with one name moved from one to the other were served the first run's values ([[16.58, -20.09]]
    where they are [[16.12, -19.63]]). Now the run is refused; each array is keyed by its every element."""
    import pandas as pd
    from fairshare.store.keys import fingerprint
    names = np.array([f"f{i}" for i in range(2000)])
    other = names.copy()
    other[1000] = "changed"
    for kind in (np.asarray, pd.Index, pd.Series):
        assert fingerprint(names=kind(names)) != fingerprint(names=kind(other))
        assert fingerprint(names=kind(names)) == fingerprint(names=kind(names.copy()))
    n = 2400
    X, bg, w = np.random.default_rng(0).normal(size=(1, n)), np.zeros((1, n)), np.linspace(-1.0, 1.0, n)
    names = np.array([f"f{i}" for i in range(n)])
    args = dict(feature_names=list(names), progress=False, seed=0)
    first = fs.explain(lambda Z: Z @ w, X, bg, groups=[names[:1200], names[1200:]], cache=tmp_path, **args)
    a, b = names[:1200].copy(), names[1200:].copy()
    a[600], b[600] = b[600], a[600]                  # one feature moved to the other group
    moved = fs.explain(lambda Z: Z @ w, X, bg, groups=[a, b], **args)
    assert np.abs(moved.values - first.values).max() > 0.1
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(lambda Z: Z @ w, X, bg, groups=[a, b], cache=tmp_path, **args)
    again = fs.explain(lambda Z: Z @ w, X, bg, groups=[names[:1200], names[1200:]], cache=tmp_path, **args)
    np.testing.assert_array_equal(again.values, first.values)


def test_long_label_groups_of_torch_inputs_are_keyed_by_their_whole_contents(tmp_path):
    """A sequence's groups given as labels of its (50, 40) cells were keyed by their repr, summarized with '...':
    one cell moved to the other group was served the first run's values ([[0.1166, 0.0967]] where they are
    [[0.1170, 0.0962]])."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2000, 1))
    X, bg = torch.randn(1, 50, 40), torch.zeros(1, 50, 40)
    labels = np.zeros((50, 40), dtype=int)
    labels[25:] = 1
    first = fs.explain(net, X, bg, groups=labels, cache=tmp_path, progress=False, seed=0)
    moved = labels.copy()
    moved[10, 20] = 1
    assert not np.allclose(fs.explain(net, X, bg, groups=moved, progress=False, seed=0).values, first.values)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(net, X, bg, groups=moved, cache=tmp_path, progress=False, seed=0)


@pytest.mark.parametrize("first, second", [
    (fs.Semivalue([1 / 4, 1 / 12, 1 / 12, 1 / 4]), fs.Semivalue([1 / 8] * 4)),        # both named 'semivalue'
    (fs.Semivalue.weighted_banzhaf(0.3), fs.Semivalue.weighted_banzhaf(0.3000001)),  # both 'weighted-banzhaf(0.3)'
])
def test_semivalues_of_one_name_and_other_weights_are_other_runs(tmp_path, first, second):
    """The key held the index's name only: Semivalue(Banzhaf's weights) on the folder of Semivalue(Shapley's
    weights) was served the Shapley values (0.00235 for x0 where its own are 0.00176)."""
    f = lambda Z: Z[:, 0] * Z[:, 1] * Z[:, 2] + Z[:, 3]                 # noqa: E731
    X, bg = np.random.default_rng(0).random((2, 4)), np.zeros((1, 4))
    args = dict(progress=False, seed=0)
    one, two = fs.explain(f, X, bg, index=first, cache=tmp_path, **args), fs.explain(f, X, bg, index=second, **args)
    assert one.method == "exact" and not np.array_equal(one.values, two.values)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(f, X, bg, index=second, cache=tmp_path, **args)
    np.testing.assert_array_equal(fs.explain(f, X, bg, index=first, cache=tmp_path, **args).values, one.values)


@pytest.mark.parametrize("imputer", [fs.games.GaussianImputer, fs.games.EmpiricalImputer])
def test_a_fitted_imputer_is_keyed_by_the_data_it_was_fitted_on(tmp_path, imputer):
    """An imputer passed fitted is used as it is, and the key held its description only ('gaussian(samples=100,
    seed=0)'): one fitted on other data was served the first one's values (x0: -1.17 where its own are -1.73)."""
    rng = np.random.default_rng(0)
    A1 = rng.normal(size=(200, 3))
    A2 = rng.normal(size=(200, 3)) @ np.array([[1.0, 0.9, 0.0], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])
    f = lambda Z: Z[:, 0] + 2 * Z[:, 1] * Z[:, 2]                       # noqa: E731
    X, bg = rng.normal(size=(2, 3)), A1[:20]
    args = dict(progress=False, seed=0)
    first = fs.explain(f, X, bg, imputation=imputer().fit(A1), cache=tmp_path, **args)
    other = fs.explain(f, X, bg, imputation=imputer().fit(A2), **args)
    assert not np.allclose(first.values, other.values, atol=0.05)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(f, X, bg, imputation=imputer().fit(A2), cache=tmp_path, **args)
    again = fs.explain(f, X, bg, imputation=imputer().fit(A1), cache=tmp_path, **args)
    np.testing.assert_array_equal(again.values, first.values)


def test_a_bfloat16_run_is_cached_and_keyed_by_its_inputs(tmp_path):
    """The key read a tensor through numpy, which has no bfloat16: explain(cache=...) of a bfloat16 module's images
    stopped on 'Got unsupported ScalarType BFloat16' (without the cache they are explained)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2)).to(torch.bfloat16)
    X = torch.randn(2, 1, 4, 4, dtype=torch.bfloat16)
    args = dict(budget=40, seed=0, progress=False)
    plain = fs.explain(net, X, **args)
    first = fs.explain(net, X, cache=tmp_path, **args)
    np.testing.assert_array_equal(first.values, plain.values)
    np.testing.assert_array_equal(fs.explain(net, X.clone(), cache=tmp_path, **args).values, first.values)
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(net, X + 1, cache=tmp_path, **args)


def test_a_game_explained_again_on_its_folder_resumes(tmp_path):
    """A game is keyed by its state without what it gains as it runs; a ModelGame's scratch buffer and the hook
    the cache sets on it (a TorchGame's seconds too) were not left out, so the same game explained again on its
    folder (a run interrupted and started again) was refused as 'holds a different run'."""
    args = dict(budget=100, seed=0, progress=False)
    game = fs.games.ModelGame(lambda Z: Z.sum(axis=1) ** 2, np.ones(8), np.zeros((2, 8)))
    first = fs.explain(game, cache=tmp_path / "m", **args)
    spent = game.n_evaluations
    np.testing.assert_array_equal(fs.explain(game, cache=tmp_path / "m", **args).values, first.values)
    assert game.n_evaluations == spent                               # every value read from the cache
    other = fs.games.ModelGame(lambda Z: Z.sum(axis=1) ** 2, np.full(8, 2.0), np.zeros((2, 8)))
    with pytest.raises(ValueError, match="holds a different run"):
        fs.explain(other, cache=tmp_path / "m", **args)
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = fs.games.TorchGame(torch.nn.Linear(8, 1), torch.ones(8), torch.zeros(8))
    first = fs.explain(net, cache=tmp_path / "t", **args)
    np.testing.assert_array_equal(fs.explain(net, cache=tmp_path / "t", **args).values, first.values)


@pytest.mark.parametrize("game", [fs.games.AdditiveGame(np.arange(8.0)), fs.games.SOUMGame.random(8, n_terms=5, seed=0),
                                  fs.games.WeightedVotingGame([1, 2, 3, 4, 5, 6, 7, 8], 18)])
def test_a_game_with_closed_form_values_keeps_them_through_the_cache(tmp_path, game):
    """The cache hid the game's closed form, so fs.explain(game, budget=100, cache=folder) of 8 players tried to
    enumerate them: '256 more evaluations would exceed the budget of 100 (0 spent)' (exact, 2 evaluations, without
    the cache)."""
    plain = fs.explain(game, budget=100, seed=0, progress=False)
    cached = fs.explain(game, budget=100, seed=0, progress=False, cache=tmp_path)
    assert cached.method == plain.method == "exact" and cached.n_evaluations == plain.n_evaluations
    np.testing.assert_array_equal(cached.values, plain.values)


# --------------------------------------------------------------------- item 9: two processes, one folder
def _open_many(folder: str, go, failures) -> None:
    go.wait()
    failed = 0
    for _ in range(2000):
        try:
            writable_folder(folder)
        except ValueError:
            failed += 1
    failures.put(failed)


def test_processes_opening_one_folder_at_once_all_succeed(tmp_path):
    (tmp_path / ".write-test").mkdir()                 # another opener's probe, in the way of a shared name
    writable_folder(tmp_path)
    ctx = multiprocessing.get_context("fork")
    go, failures = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_open_many, args=(str(tmp_path), go, failures)) for _ in range(2)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
    assert [failures.get(timeout=10) for _ in procs] == [0, 0]


def test_two_processes_running_one_cached_explain_at_once_both_succeed(models, tmp_path, monkeypatch):
    m, cache = models[0], tmp_path / "cache"
    fresh, _ = _counted(monkeypatch, tmp_path / "fresh", m.run, "tables")
    procs = [_child(models, "tables", cache, tmp_path / f"child{i}") for i in range(2)]
    for p in procs:
        p.wait(120)
    assert [p.returncode for p in procs] == [0, 0], [p.stderr.read().decode()[-2000:] for p in procs]
    again, spent = _counted(monkeypatch, tmp_path / "again", m.run, "tables", cache)
    assert spent == 0 and np.array_equal(again, fresh)


def _log_writer(path: str, steps, done, hold_rewrite=None) -> None:
    """A process appending records ``first .. first + 9`` to the log at ``path`` for each ``first`` sent on
    ``steps`` (opened at the first); with ``hold_rewrite`` (two events), its repair of a torn log, once read, waits
    (at most 3 s) until the other process has written."""
    from fairshare.store.record_log import RecordLog
    if hold_rewrite is not None:
        read, written = hold_rewrite
        rewrite = RecordLog._write_whole

        def held(self, content):
            read.set()
            written.wait(3)
            rewrite(self, content)
        RecordLog._write_whole = held
    log = None
    for first in iter(steps.get, None):
        log = log or RecordLog(Path(path), "shared", key_width=2)
        ids = np.arange(first, first + 10)
        log.append(ids.astype("<u2").view(np.uint8).reshape(-1, 2), ids.astype(float)[:, None])
        done.put(first)
    if log is not None:
        log.close()


@pytest.mark.parametrize("race", ["a torn log opened while another process writes it",
                                  "two processes opening one torn log at once"])
def test_two_processes_appending_to_one_log_lose_no_record(tmp_path, race):
    """Two live processes on one log: the one that repaired a torn log (read, rewritten, renamed over it) left the
    other's open handle on the file renamed away, so the other's later records went nowhere: 10 of 30 records lost
    (a torn tail a killed writer left), 20 of 30 (both opening the torn log at once: the second's rewrite of what it
    had read dropped the first's records too). Their values were right; a resume paid those model calls again."""
    from fairshare.store.record_log import RecordLog
    path = tmp_path / "values.log"
    ids = np.arange(30, 40)                            # an earlier run's records
    RecordLog(path, "shared", key_width=2).append(ids.astype("<u2").view(np.uint8).reshape(-1, 2), ids[:, None])
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Queue()
    a_steps, b_steps = ctx.Queue(), ctx.Queue()
    hold = (ctx.Event(), ctx.Event()) if race.startswith("two") else None
    a = ctx.Process(target=_log_writer, args=(str(path), a_steps, done))
    b = ctx.Process(target=_log_writer, args=(str(path), b_steps, done, hold))
    a.start(), b.start()
    try:
        if hold is None:                               # a holds the log open; a killed writer tears its tail
            a_steps.put(0)
            assert done.get(timeout=120) == 0
            with open(path, "ab") as fh:
                fh.write(b"\x07" * 7)
            b_steps.put(10)                           # b opens the torn log, repairs it, appends
            assert done.get(timeout=120) == 10
        else:
            with open(path, "ab") as fh:
                fh.write(b"\x07" * 7)
            b_steps.put(10)                           # b has read the torn log and is about to rewrite it ...
            assert hold[0].wait(120)
            a_steps.put(0)                            # ... when a opens it too and appends (the lock: after b)
            first = done.get(timeout=120)
            hold[1].set()
            assert {first, done.get(timeout=120)} == {0, 10}
        a_steps.put(20)                               # a appends again, through the handle it holds
        assert done.get(timeout=120) == 20
    finally:
        a_steps.put(None), b_steps.put(None)
        a.join(60), b.join(60)
    log = RecordLog(path, "shared", key_width=2)
    kept = sorted(log.keys.copy().view("<u2").ravel().tolist())
    assert kept == list(range(40)), f"{40 - len(kept)} of the 30 records the two processes wrote lost"
    np.testing.assert_array_equal(np.sort(log.values[:, 0]), np.arange(40.0))


def test_an_interrupt_inside_a_torch_game_call_keeps_the_forward_passes_that_returned(tmp_path):
    """A TorchGame runs one game call as several forward passes (batch_size inputs each); each is kept as it
    returns."""
    torch = pytest.importorskip("torch")
    from fairshare.games.cached import CachedGame

    class Stopping(torch.nn.Module):
        def __init__(self, stop_at: int | None) -> None:
            super().__init__()
            self.linear, self.passes, self.stop_at = torch.nn.Linear(6, 1), 0, stop_at

        def forward(self, x):
            self.passes += 1
            if self.passes == self.stop_at:
                raise KeyboardInterrupt
            return self.linear(x)

    torch.manual_seed(0)
    coalitions = np.random.default_rng(0).random((10, 6)) < 0.5
    stopping = Stopping(stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        CachedGame(fs.games.TorchGame(stopping, torch.ones(6), batch_size=2), tmp_path)(coalitions)
    resumed = Stopping(stop_at=None)
    resumed.linear.load_state_dict(stopping.linear.state_dict())
    values = CachedGame(fs.games.TorchGame(resumed, torch.ones(6), batch_size=2), tmp_path)(coalitions)
    assert resumed.passes == 2                           # 3 passes of 2 inputs were kept: 4 coalitions are left
    fresh = fs.games.TorchGame(resumed, torch.ones(6))(coalitions)
    np.testing.assert_allclose(values, fresh, atol=1e-12)
