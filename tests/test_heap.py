"""The heap settling of :mod:`fairshare._core.heap`: large temporaries come from the heap after fairshare's first
computation (glibc), and the user's own allocator settings win. Each case runs in a fresh interpreter: the setting
is once a process."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")

_FAULTS = """
import resource, numpy as np, fairshare as fs
fs.estimate(fs.games.AdditiveGame([1.0, 2.0, 3.0, 4.0, 5.0]), "shapley", budget=20, seed=0)
from fairshare._core.heap import settle_heap
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):                                   # arrays of 9 MB made and freed, as an estimator's blocks are
    a = np.ones((2000, 555)); b = 2.0 * a; del a, b
print(settle_heap(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _run(env_extra: dict) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "FAIRSHARE_SETTLE_HEAP"}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", _FAULTS], capture_output=True, text=True, env=env, check=True)
    settled, faults = out.stdout.split()
    return settled, int(faults)


def test_after_a_computation_large_arrays_are_served_from_the_heap_without_page_faults():
    settled, faults = _run({})
    pages = 2000 * 555 * 8 // 4096                    # one array's pages: 2,168
    assert settled == "True"
    assert faults < 2 * pages                         # not 60 arrays' worth of fresh pages


@pytest.mark.parametrize("setting", [{"FAIRSHARE_SETTLE_HEAP": "0"}, {"MALLOC_MMAP_THRESHOLD_": "131072"},
                                     {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}])
def test_the_users_own_allocator_settings_are_left_alone(setting):
    assert _run(setting)[0] == "False"
