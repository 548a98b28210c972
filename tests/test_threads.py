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


def test_texts_in_threads_give_the_bits_of_texts_in_turn():
    # hunt: n_jobs=2 gave a 60-word text's values 1.8e-15 apart from n_jobs=None (BLAS called from both workers)
    import re

    rng = np.random.default_rng(0)
    vocab = ["alpha", "beta", "gamma", "delta", "eps"]
    weights = dict(zip(vocab, rng.normal(size=5)))

    def model(texts):
        return np.array([sum(weights.get(t, 0) for t in re.findall(r"\w+", s)) + 0.3 * ("alpha beta" in s)
                         for s in texts])

    words = rng.choice(vocab, 60)
    texts = [". ".join(" ".join(words[i:i + 6]) for i in range(0, 60, 6)) + ".", "alpha beta gamma"]
    serial = fs.explain(model, texts, progress=False, seed=0, budget=300)
    threaded = fs.explain(model, texts, progress=False, seed=0, budget=300, n_jobs=2)
    for a, b in zip(serial, threaded):
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.stderr, b.stderr)
