"""How fairshare's compiled (numba) kernels are built and how many threads they get.

:data:`CACHE` says whether compiled kernels are kept on disk: numba keeps them next to the package or in
the user's cache folder; where neither is writable (a read-only install without a home), compiling once
per process beats failing. :func:`threads_for`: numba's worker threads sleep when idle, and waking them costs milliseconds (about 5 ms measured on
two cores after a pause of 20 ms), more than a small kernel's whole work. :func:`threads_for` runs
the kernels called inside it on the calling thread alone when their work is small; the setting is
the calling thread's own, so concurrent callers are unaffected. :func:`thread_settings` and :func:`same_threads`
carry the caller's thread counts (numba's is per thread, torch's per process) to the threads and processes that
explain rows for it, so a model whose arithmetic depends on them gives the same bits whatever ``n_jobs``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numba

__all__ = ["CACHE", "threads_for", "SMALL_WORK", "thread_settings", "same_threads", "call_with"]


def _can_cache() -> bool:
    places = (os.environ.get("NUMBA_CACHE_DIR"), os.path.dirname(os.path.abspath(__file__)),
              os.path.join(os.path.expanduser("~"), ".cache"))
    return any(p and os.path.isdir(p) and os.access(p, os.W_OK) for p in places)


#: whether numba keeps the compiled kernels on disk (``njit(cache=CACHE)``)
CACHE = _can_cache()

SMALL_WORK = 1 << 18            # elementary steps under which one thread finishes before the others wake


@contextmanager
def threads_for(work: int) -> Iterator[None]:
    """Run numba kernels on one thread while inside, when ``work`` (their elementary steps) is small.

    Examples
    --------
    >>> import numba
    >>> with threads_for(10):
    ...     numba.get_num_threads()
    1
    """
    if work >= SMALL_WORK or numba.get_num_threads() == 1:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def thread_settings() -> dict:
    """The calling thread's thread counts that a model's arithmetic may depend on: numba's (per thread) and, when
    torch is in use, torch's intra-op threads (per process).

    Examples
    --------
    >>> sorted(thread_settings())
    ['numba', 'torch']
    """
    torch = sys.modules.get("torch")
    return {"numba": numba.get_num_threads(), "torch": torch.get_num_threads() if torch is not None else None}


@contextmanager
def same_threads(settings: dict) -> Iterator[None]:
    """Run the code inside with the thread counts of ``settings`` (:func:`thread_settings` of the caller), restored
    after: a worker thread or process then computes as the caller would have.

    Examples
    --------
    >>> with same_threads({"numba": 1, "torch": None}):
    ...     numba.get_num_threads()
    1
    """
    before = numba.get_num_threads()
    torch = sys.modules.get("torch") if settings.get("torch") is not None else None
    torch_before = torch.get_num_threads() if torch is not None else None
    numba.set_num_threads(min(int(settings["numba"]), numba.config.NUMBA_NUM_THREADS))
    if torch is not None and torch_before != settings["torch"]:
        torch.set_num_threads(int(settings["torch"]))
    try:
        yield
    finally:
        numba.set_num_threads(before)
        if torch is not None and torch.get_num_threads() != torch_before:
            torch.set_num_threads(torch_before)


def call_with(settings: dict, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` run with the thread counts of ``settings`` (what a worker thread or task runs).

    Examples
    --------
    >>> call_with(thread_settings(), max, 2, 3)
    3
    """
    with same_threads(settings):
        return fn(*args)
