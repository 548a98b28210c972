import numpy as np
import pandas as pd
import pytest

import fairshare as fs


def test_to_frame_and_lookup():
    g = fs.games.AdditiveGame([0.5, -1.0, 2.0], player_names=["a", "b", "c"])
    phi = fs.estimate(g, "shapley", method="permutation", budget=50, seed=0)
    frame = phi.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert frame.index.tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(frame["value"], [0.5, -1.0, 2.0])
    assert frame.attrs["method"] == "permutation"
    assert phi["c"] == pytest.approx(2.0) and phi[1] == pytest.approx(-1.0)
    assert phi.to_dict() == pytest.approx({"a": 0.5, "b": -1.0, "c": 2.0})


def test_multi_output_frame_and_repr():
    g = fs.games.AdditiveGame(np.array([[1.0, -3.0], [2.0, 0.5]]))
    phi = fs.exact(g, "banzhaf")
    frame = phi.to_frame()
    assert frame.columns.tolist() == ["value_0", "value_1", "stderr_0", "stderr_1"]
    text = repr(phi)
    assert "n_outputs=2" in text and "[output 1]" in text


def test_repr_is_readable_and_sorted_by_magnitude():
    g = fs.games.AdditiveGame(np.arange(15.0) - 7)
    text = repr(fs.exact(g, "shapley"))
    lines = text.splitlines()
    assert lines[0].startswith("Attribution(index='shapley', method='exact', n_players=15")
    assert lines[2].split()[0] == "x0"                      # |-7| is the largest
    assert "5 more players" in lines[-1]


def test_unknown_stderr_is_none_in_frame_as_nan():
    phi = fs.Attribution(values=[1.0, 2.0], stderr=None, index="shapley", method="demo")
    assert phi.to_frame()["stderr"].isna().all()
    with pytest.raises(ValueError, match="stderr shape"):
        fs.Attribution(values=[1.0, 2.0], stderr=[1.0], index="shapley", method="demo")
