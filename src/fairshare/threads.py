"""How many of numba's threads a compiled kernel gets: all of them for real work, one for a little.

numba's worker threads sleep when idle, and waking them costs milliseconds (about 5 ms measured on
two cores after a pause of 20 ms), more than a small kernel's whole work. :func:`threads_for` runs
the kernels called inside it on the calling thread alone when their work is small; the setting is
the calling thread's own, so concurrent callers are unaffected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba

__all__ = ["threads_for"]

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
