"""Same seed, same bits whatever n_jobs, for a model whose arithmetic depends on its thread count (issue 43,
item 12): the threads that explain rows compute with the caller's thread settings."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import njit, prange

import fairshare as fs


@njit(parallel=True, cache=False)
def _parallel_sum(A: np.ndarray) -> np.ndarray:          # a reduction split over numba's threads
    out = np.empty(A.shape[0])
    for r in range(A.shape[0]):
        s = 0.0
        for j in prange(A.shape[1]):
            s += np.sin(A[r, j] * 1.37) * 1e3
        out[r] = s
    return out


_W = np.random.default_rng(0).normal(size=(8, 3000))


def _model(X) -> np.ndarray:
    return _parallel_sum(np.asarray(X, dtype=float) @ _W)


def _text_model(texts: list[str]) -> np.ndarray:
    return _model(np.array([[t.count(c) for c in "abcdefgh"] for t in texts], dtype=float))


@pytest.fixture
def one_numba_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads to differ")
def test_rows_in_threads_compute_as_the_caller_with_its_thread_count(one_numba_thread):
    rng = np.random.default_rng(1)
    X, background = rng.normal(size=(4, 8)), rng.normal(size=(6, 8))
    serial = fs.explain(_model, X, background=background, budget=120, seed=0, progress=False)
    threaded = fs.explain(_model, X, background=background, budget=120, seed=0, progress=False, n_jobs=2)
    np.testing.assert_array_equal(serial.values, threaded.values)
    texts = ["a bad cafe", "head deaf fad", "egg bag"]
    serial_t = fs.explain(_text_model, texts, budget=40, seed=0, progress=False)
    threaded_t = fs.explain(_text_model, texts, budget=40, seed=0, progress=False, n_jobs=2)
    for a, b in zip(serial_t, threaded_t):
        np.testing.assert_array_equal(a.values, b.values)
    one = _model(X)                                          # and the model really depends on the thread count
    numba.set_num_threads(2)
    assert not np.array_equal(one, _model(X))
