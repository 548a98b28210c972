"""A new input kind is one module, its registration and its test (issue 36): here a kind written in the test itself,
records (a list of dicts, as a JSON API sends them), explained by ``fs.explain`` with every promise of the door."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import fairshare as fs
from fairshare.inputs.frame import FrameInput
from fairshare.inputs.registry import KINDS, read_input, register


# ------------------------------------------------------------------------------ the whole new kind: one class
class RecordsInput(FrameInput):
    """Rows given as records: ``[{"age": 41, "income": 3.2}, ...]``; the keys are the features."""

    kind = "records"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return isinstance(X, list) and bool(X) and all(isinstance(r, dict) for r in X)

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        names = list(X[0])
        if any(list(r) != names for r in X):
            raise ValueError("X: every record must have the keys of the first, in its order")
        bg = pd.DataFrame(background) if isinstance(background, list) else background
        super().__init__(model, pd.DataFrame(X), bg, args)


@pytest.fixture
def records_kind():
    register(RecordsInput)                    # the registration: one line
    yield RecordsInput
    KINDS.remove(RecordsInput)


def _model(frame: pd.DataFrame) -> np.ndarray:
    return 2.0 * frame["age"].to_numpy() - frame["income"].to_numpy() * frame["age"].to_numpy()


def test_a_new_kind_is_read_and_explained_with_the_doors_promises(records_kind):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.normal(40, 10, 30), "income": rng.normal(3, 1, 30)})
    records = frame.to_dict("records")
    args = {"imputation": None, "groups": None, "batch_size": None, "feature_names": None, "model_output": None,
            "y": None, "link": "identity"}
    assert read_input(_model, records[:3], records[10:20], args).kind == "records"
    e = fs.explain(_model, records[:3], records[10:20], seed=0, progress=False)
    same = fs.explain(_model, frame.iloc[:3], frame.iloc[10:20], seed=0, progress=False)
    np.testing.assert_array_equal(e.values, same.values)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, _model(frame.iloc[:3]), atol=1e-9)
    threads = fs.explain(_model, records[:3], records[10:20], seed=0, progress=False, n_jobs=2)
    np.testing.assert_array_equal(e.values, threads.values)
    bad = [dict(r) for r in records[:3]]
    bad[1] = {"income": 1.0, "age": 2.0}
    with pytest.raises(ValueError, match="every record must have the keys"):
        fs.explain(_model, bad, records[10:20], progress=False)


def test_kinds_are_asked_in_order_and_the_catch_all_stays_last(records_kind):
    assert KINDS[-1].kind == "table" and KINDS.index(RecordsInput) < len(KINDS) - 1
    assert [k.kind for k in KINDS if k is not RecordsInput] == ["game", "texts", "images", "torch", "sequences",
                                                               "sparse", "pipeline", "frame", "table"]
