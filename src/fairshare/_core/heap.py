"""Large temporary arrays served from the heap (glibc's allocator), as glibc itself serves them once a process has
freed a large array.

An estimator makes many short-lived arrays of megabytes (feature blocks, projections, Gram matrices). glibc's
``malloc`` maps every array above its *mmap threshold* from the kernel and unmaps it when freed, so each one is
faulted in page by page, and zeroed, again and again. The threshold starts at 128 KiB; glibc raises it by itself
(and the *trim threshold*, the freed memory the heap keeps, to twice it) each time the process frees a mapped
array, up to 32 MiB (64 MiB kept), but an array as large as the largest freed is mapped again. On ``bench
default``'s german credit / MLP (beta(4, 1) values at 100n) that was 4,300 page faults an estimate, 15% of its time.

:func:`settle_heap` puts glibc where its own rule ends: arrays below 32 MiB come from the heap, and up to 64 MiB of
freed memory is kept for the next ones, for the rest of the process: 10x fewer page faults, the same peak memory on
that benchmark (and other code in the process, a peer library's estimator timed beside ours among it, gets the same
state it reaches by itself after freeing a 32 MiB array).

Nothing changes where the allocator is not glibc's (macOS, Windows, musl), where the user tuned it
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_``, or ``malloc``
tunables in ``GLIBC_TUNABLES``), or with ``FAIRSHARE_SETTLE_HEAP=0``.
"""

from __future__ import annotations

import ctypes
import os
import platform
from functools import lru_cache

__all__ = ["settle_heap"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20          # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit machines: the most its rule sets
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


@lru_cache(maxsize=1)
def settle_heap() -> bool:
    """Set glibc's mmap and trim thresholds where its own rule ends (the module docstring), once a process; whether
    they were set.

    Examples
    --------
    >>> settle_heap() in (True, False)                   # False off glibc, or where the user tuned the allocator
    True
    """
    if os.environ.get("FAIRSHARE_SETTLE_HEAP", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in _USER_SETTINGS) or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
