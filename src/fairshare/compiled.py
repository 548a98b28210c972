"""How fairshare's compiled (numba) kernels are built and how many threads they get.

:data:`CACHE` says whether compiled kernels are kept on disk: numba keeps them next to the package or in
the user's cache folder; where neither is writable (a read-only install without a home), compiling once
per process beats failing. :func:`threads_for`: numba's worker threads sleep when idle, and waking them costs milliseconds (about 5 ms measured on
two cores after a pause of 20 ms), more than a small kernel's whole work. :func:`threads_for` runs
the kernels called inside it on the calling thread alone when their work is small; the setting is
the calling thread's own, so concurrent callers are unaffected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numba

__all__ = ["CACHE", "threads_for", "SMALL_WORK"]


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
