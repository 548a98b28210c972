"""Golden values (``tests/golden_cases.py``): every registered method on three games and every door with fixed
seeds give the values recorded in ``tests/golden/``, bit for bit where the libraries that do the arithmetic are
the recorded versions (else to 1e-9: a newer numpy may round a sum differently, never move a value)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import golden_cases

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("name", sorted(golden_cases.CASES))
def test_golden_values_are_unchanged(name):
    path = golden_cases.FOLDER / f"{name}.npz"
    assert path.exists(), f"no golden file for {name}: python tests/golden_cases.py --write {name}"
    with np.load(path, allow_pickle=False) as stored:
        recorded = {k: stored[k] for k in stored.files}
    same_libraries = json.loads(str(recorded.pop("__environment__"))) == golden_cases.environment()
    got = golden_cases.compute(name)
    assert sorted(got) == sorted(recorded), set(got) ^ set(recorded)
    for key, value in recorded.items():
        if same_libraries:
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            np.testing.assert_allclose(got[key], value, rtol=1e-9, atol=1e-12, err_msg=key)
