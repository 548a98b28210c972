"""auto on a model's game over a background: split into one part per background row (engine/split.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fairshare as fs
from fairshare.engine.split import SPLIT_SHARE, water_fill


class Rows:
    """A model that counts the rows it is given (a tanh of a linear score plus a three-way product)."""

    def __init__(self, w: np.ndarray) -> None:
        self.w, self.rows = w, 0

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        self.rows += X.shape[0]
        return np.tanh(X @ self.w / 3) + 0.3 * X[:, 0] * X[:, 1] * X[:, 2]


def _table(n: int = 12, levels: int = 3, seed: int = 0) -> tuple[Rows, np.ndarray]:
    rng = np.random.default_rng(seed)
    return Rows(rng.normal(size=n)), rng.integers(0, levels, size=(40, n)).astype(float)


def _error(phi: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sum((phi - truth) ** 2) / np.sum(truth ** 2))


def test_parts_average_to_the_game():
    model, X = _table()
    game = fs.games.ModelGame(model, X[0], X[1:17])
    parts = game.parts()
    assert len(parts) == 16
    S = np.random.default_rng(1).random((50, 12)) < 0.5
    np.testing.assert_allclose(np.mean([p(S) for p in parts], axis=0), game(S), rtol=0, atol=1e-14)
    for p, b in zip(parts, X[1:17]):
        np.testing.assert_array_equal(p.null_players(), X[0] == b)
    assert game.background.shape == (16, 12)                           # the game itself is left as it was


def test_no_parts_where_the_mean_is_not_one():
    model, X = _table()
    assert fs.games.ModelGame(model, X[0], X[1:2]).parts() is None                          # one row
    assert fs.games.ModelGame(model, X[0], X[1:17], imputation="gaussian").parts() is None  # drawn rows
    prob = fs.games.ModelGame(lambda A: 1 / (1 + np.exp(-A.sum(axis=1) / 10)), X[0], X[1:17], link="logit")
    assert prob.parts() is None                                        # the log-odds of a mean: no mean of parts


def test_water_fill_gives_what_covered_parts_leave_to_the_others():
    assert water_fill(np.array([4, 100, 100]), 90).tolist() == [4, 43, 43]
    assert water_fill(np.array([8, 16]), 100).tolist() == [8, 16]
    assert water_fill(np.array([1 << 20, 1 << 20]), 300).tolist() == [150, 150]


def test_exact_where_every_part_is_covered_though_the_game_is_not():
    model, X = _table()
    game = fs.games.ModelGame(model, X[0], X[1:17])
    d = [int((~p.null_players()).sum()) for p in game.parts()]
    budget = -(-sum(1 << k for k in d) // 16)                         # the parts' coalitions, in the game's evaluations
    assert budget < 1 << 12
    e = fs.estimate(game, "shapley", budget=budget, seed=0)
    np.testing.assert_allclose(e.values, fs.exact(game, "shapley").values, rtol=0, atol=1e-12)
    assert e.info["split"]["exact_parts"] == 16 and e.method == "exact"
    assert e.n_evaluations <= budget


def _games(rows: int) -> tuple[Rows, list]:
    """The 14-feature model and ``rows`` of its games over 16 background rows, with their exact values."""
    model, X = _table(n=14)
    games = [fs.games.ModelGame(model, X[row], X[20:36]) for row in range(rows)]
    return model, [(g, fs.exact(g, "shapley").values) for g in games]


def test_split_is_more_accurate_for_the_same_model_rows():
    model, games = _games(3)
    ratios = []
    for game, truth in games:
        for seed in range(3):
            model.rows = 0
            ours = fs.estimate(game, "shapley", budget=140, seed=seed)
            assert model.rows <= 140 * 16 and ours.info["split"]["model_rows"] == model.rows
            assert (ours.method == "exact") == (ours.info["split"]["exact_parts"] == 16)   # "exact": every part
            whole = fs.estimate(game, "shapley", method="surrogate-regression", budget=140, seed=seed)
            ratios.append(_error(whole.values, truth) / _error(ours.values, truth))
    assert np.median(ratios) > 3                 # measured: 0.7-5.9x lower error in the 9 runs, median 3.9


def test_same_seed_same_values_and_efficiency():
    model, X = _table()
    game = fs.games.ModelGame(model, X[0], X[1:17])
    a = fs.estimate(game, "shapley", budget=60, seed=7)
    b = fs.estimate(fs.games.ModelGame(model, X[0], X[1:17]), "shapley", budget=60, seed=7)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.stderr, b.stderr)
    assert not np.array_equal(a.values, fs.estimate(game, "shapley", budget=60, seed=8).values)
    assert a.values.sum() == pytest.approx(a.grand_value - a.empty_value, abs=1e-12)
    assert a.empty_value == pytest.approx(model(X[1:17]).mean(), abs=1e-14)


def test_error_bars_cover_the_truth():
    hits = []
    for game, truth in _games(4)[1]:
        for seed in range(5):
            e = fs.estimate(game, "shapley", budget=280, seed=seed)
            assert np.all(np.isfinite(e.stderr))
            hits.extend(np.abs(e.values - truth) <= 1.96 * e.stderr + 1e-12)
    assert np.mean(hits) >= 0.9                  # measured: 0.95


@pytest.mark.parametrize("index", ["banzhaf", "beta-shapley(4,1)", "weighted-banzhaf(0.3)"])
def test_other_semivalues_split_too(index):
    model, X = _table()
    game = fs.games.ModelGame(model, X[0], X[1:17])
    budget = -(-sum(1 << int((~p.null_players()).sum()) for p in game.parts()) // 16)
    e = fs.estimate(game, index, budget=budget, seed=0)
    assert "split" in e.info
    np.testing.assert_allclose(e.values, fs.exact(game, index).values, rtol=0, atol=1e-12)


def test_whole_where_parts_keep_nearly_every_player_or_a_method_is_named():
    model, X = _table()
    cont = np.random.default_rng(3).normal(size=(20, 12))
    game = fs.games.ModelGame(model, cont[0], cont[1:17])                 # continuous: no feature equals
    assert np.mean([(~p.null_players()).sum() for p in game.parts()]) > SPLIT_SHARE * 12
    assert "split" not in fs.estimate(game, "shapley", budget=120, seed=0).info
    cat = fs.games.ModelGame(model, X[0], X[1:17])
    for kw in (dict(method="regression"), dict(tol=0.5), dict(progress=lambda *a: None)):
        assert "split" not in fs.estimate(cat, "shapley", budget=120, seed=0, **kw).info
    assert "split" not in fs.estimate(cat, "owen", partition=[list(range(6)), list(range(6, 12))], budget=120,
                                      seed=0).info


def test_explain_splits_with_a_frame_a_cache_and_many_outputs(tmp_path):
    pd = pytest.importorskip("pandas")
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.integers(0, 3, size=(120, 10)), columns=[f"c{i}" for i in range(10)])
    y = (frame.c0 + frame.c1 * frame.c2 > 3).astype(int)
    model = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(frame, y)
    f = model.predict_proba                                         # a black box with two outputs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = fs.explain(f, frame.iloc[:3], frame.iloc[20:36], budget=60, seed=0, progress=False)
        cached = fs.explain(f, frame.iloc[:3], frame.iloc[20:36], budget=60, seed=0, progress=False,
                            cache=tmp_path / "c")
        again = fs.explain(f, frame.iloc[:3], frame.iloc[20:36], budget=60, seed=0, progress=False,
                           cache=tmp_path / "c")
    assert plain.values.shape == (3, 10, 2)
    np.testing.assert_array_equal(plain.values, cached.values)
    np.testing.assert_array_equal(plain.values, again.values)
    for i in range(3):
        game = fs.games.ModelGame(f, frame.iloc[[i]], frame.iloc[20:36])
        truth = fs.exact(game, "shapley").values
        assert _error(plain.values[i], truth) < 1e-3


def test_many_background_rows_of_a_cheap_model_stay_whole():
    model, X = _table(n=8)
    rows = np.random.default_rng(5).integers(0, 3, size=(200, 8)).astype(float)
    game = fs.games.ModelGame(model, X[0], rows)        # 200 parts' fits (~0.6 s) against ~0.01 s of model calls
    assert "split" not in fs.estimate(game, "shapley", budget=60, seed=0).info
    # a model object's calls cost ~5 ms each whatever their rows: 20 parts' calls would add ~0.2 s, a function's none
    assert "split" not in fs.estimate(fs.games.ModelGame(model, X[0], rows[:20]), "shapley", budget=60, seed=0).info
    assert "split" in fs.estimate(fs.games.ModelGame(lambda A: model(A), X[0], rows[:20]), "shapley", budget=60,
                                  seed=0).info


@given(n=st.integers(3, 9), rows=st.integers(2, 12), levels=st.integers(2, 4), budget=st.integers(8, 400),
       seed=st.integers(0, 2 ** 16))
@settings(max_examples=25, deadline=None, derandomize=True)
def test_split_keeps_the_promises(n, rows, levels, budget, seed):
    """Any table, background and budget: same seed same bits, model rows within budget x rows, values that add up,
    exact values where the budget covers every coalition."""
    rng = np.random.default_rng(seed)
    model = Rows(rng.normal(size=n))
    X = rng.integers(0, levels, size=(rows + 1, n)).astype(float)
    game = fs.games.ModelGame(model, X[0], X[1:])
    budget = max(budget, 2 * n + 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.rows = 0
        a = fs.estimate(game, "shapley", budget=budget, seed=seed)
        spent = model.rows
        b = fs.estimate(fs.games.ModelGame(model, X[0], X[1:]), "shapley", budget=budget, seed=seed)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.n_evaluations <= budget and spent <= budget * rows
    assert a.values.sum() == pytest.approx(a.grand_value - a.empty_value, abs=1e-9)
    if budget >= 1 << n or a.method == "exact":
        np.testing.assert_allclose(a.values, fs.exact(game, "shapley").values, rtol=0, atol=1e-9)


def test_a_cached_split_resumes_without_a_model_call(tmp_path):
    from fairshare.games.cached import CachedGame

    model, X = _table()
    first = fs.estimate(CachedGame(fs.games.ModelGame(model, X[0], X[1:17]), tmp_path), "shapley", budget=60, seed=3)
    assert "split" in first.info and len(list(tmp_path.glob("part-*/values.log"))) == 16
    model.rows = 0
    again = fs.estimate(CachedGame(fs.games.ModelGame(model, X[0], X[1:17]), tmp_path), "shapley", budget=60, seed=3)
    assert model.rows == 0
    np.testing.assert_array_equal(again.values, first.values)
    np.testing.assert_array_equal(first.values, fs.estimate(fs.games.ModelGame(model, X[0], X[1:17]), "shapley",
                                                            budget=60, seed=3).values)


def test_a_split_on_a_dask_cluster_gives_the_local_bits():
    distributed = pytest.importorskip("distributed")
    model, X = _table(n=10)
    local = fs.explain(model, X[:2], X[20:36], budget=60, seed=0, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        one = fs.explain(model, X[:1], X[20:36], budget=60, seed=0, progress=False, client=client)   # parts' batches
        two = fs.explain(model, X[:2], X[20:36], budget=60, seed=0, progress=False, client=client)   # rows as tasks
    assert one.info["choice"]["split_rows"] == 1
    np.testing.assert_array_equal(one.values[0], fs.explain(model, X[:1], X[20:36], budget=60, seed=0,
                                                            progress=False).values[0])
    np.testing.assert_array_equal(two.values, local.values)


@pytest.mark.parametrize("kind", ["k-sii", "sii", "fsii", "stii"])
def test_interactions_split_too(kind):
    model, X = _table(n=10)
    game = fs.games.ModelGame(model, X[0], X[20:36])
    exact = fs.interactions(game, kind, order=2, method="exact").values
    budget = -(-sum(1 << int((~p.null_players()).sum()) for p in game.parts()) // 16)
    covered = fs.interactions(game, kind, order=2, budget=budget, seed=0)
    assert covered.method == "exact" and covered.info["split"]["exact_parts"] == 16 and budget < 1 << 10
    np.testing.assert_allclose(covered.values, exact, rtol=0, atol=1e-12)
    ours = fs.interactions(game, kind, order=2, budget=100, seed=0)
    again = fs.interactions(fs.games.ModelGame(model, X[0], X[20:36]), kind, order=2, budget=100, seed=0)
    np.testing.assert_array_equal(ours.values, again.values)
    whole = fs.interactions(game, kind, order=2, budget=100, seed=0, method="iq-regression")
    assert ours.n_evaluations <= 100 and "split" in ours.info and "split" not in whole.info
    assert _error(whole.values, exact) > 10 * _error(ours.values, exact)    # measured: 46-117x
