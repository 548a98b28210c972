"""Data valuation: DataGame against direct fits, degenerate coalitions, KNN-Shapley against brute force,
estimators against exact data values, TMC and leave-one-out, Dask against local, the fit cache under
kills, interrupts and damage, value_data and the CLI."""

from __future__ import annotations

import itertools
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import f1_score
from sklearn.neighbors import KNeighborsClassifier

import fairshare as fs
from fairshare.cli import main as cli_main
from fairshare.games.data import DataGame
from fairshare.store.record_log import HEADER_BYTES


def _data(n_train=40, n_val=60, d=3, seed=0, flip=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_val, d))
    y = (X[:, 0] + 0.4 * rng.normal(size=len(X)) > 0).astype(int)
    flipped = np.zeros(n_train, dtype=bool)
    if flip:
        flipped[rng.choice(n_train, flip, replace=False)] = True
        y[:n_train][flipped] = 1 - y[:n_train][flipped]
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], flipped


class Counting(LogisticRegression):
    """LogisticRegression that counts its fits in a class attribute (clones share it)."""

    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight)


# --------------------------------------------------------------------------------------- DataGame
def test_datagame_equals_direct_fits_with_named_and_callable_scorers():
    Xt, yt, Xv, yv, _ = _data()
    S = np.random.default_rng(1).random((12, 40)) < 0.6
    direct = [LogisticRegression().fit(Xt[s], yt[s]).score(Xv, yv) for s in S]
    assert np.allclose(DataGame(LogisticRegression(), Xt, yt, Xv, yv)(S), direct, atol=0, rtol=0)
    f1 = [f1_score(yv, LogisticRegression().fit(Xt[s], yt[s]).predict(Xv)) for s in S]
    assert np.allclose(DataGame(LogisticRegression(), Xt, yt, Xv, yv, scoring="f1")(S), f1)
    custom = DataGame(LogisticRegression(), Xt, yt, Xv, yv, scoring=lambda m, X, y: float(m.coef_[0, 0]))
    assert np.allclose(custom(S), [LogisticRegression().fit(Xt[s], yt[s]).coef_[0, 0] for s in S])


def test_datagame_groups_fit_on_the_union_of_their_rows():
    Xt, yt, Xv, yv, _ = _data()
    groups = [list(range(i, i + 4)) for i in range(0, 40, 4)]
    g = DataGame(LogisticRegression(), Xt, yt, Xv, yv, groups=groups)
    assert g.n_players == 10
    c = np.zeros((1, 10), dtype=bool)
    c[0, [0, 3, 7]] = True
    rows = np.r_[0:4, 12:16, 28:32]
    assert g(c)[0] == LogisticRegression().fit(Xt[rows], yt[rows]).score(Xv, yv)
    with pytest.raises(ValueError, match="groups must hold every training row exactly once"):
        DataGame(LogisticRegression(), Xt, yt, Xv, yv, groups=[[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="groups must hold training-row indices"):
        DataGame(LogisticRegression(), Xt, yt, Xv, yv, groups=[[0, 99]])


class Fragile(LogisticRegression):
    """Raises when asked to fit fewer than 10 rows (a model that cannot fit tiny coalitions)."""

    def fit(self, X, y, sample_weight=None):
        if len(y) < 10:
            raise np.linalg.LinAlgError("too few rows")
        return super().fit(X, y, sample_weight)


def test_degenerate_coalitions_get_the_constant_predictor_and_are_counted():
    Xt, yt, Xv, yv, _ = _data()
    g = DataGame(Fragile(), Xt, yt, Xv, yv)
    one_class = np.zeros(40, dtype=bool)
    one_class[np.flatnonzero(yt == 1)[:15]] = True
    small = np.zeros(40, dtype=bool)
    small[[np.flatnonzero(yt == 0)[0], np.flatnonzero(yt == 1)[0]]] = True
    v = g(np.stack([np.zeros(40, dtype=bool), one_class, small, np.ones(40, dtype=bool)]))
    majority_all = np.mean(yv == np.bincount(yt).argmax())
    assert v[0] == pytest.approx(majority_all)                     # empty: the whole set's majority class
    assert v[1] == pytest.approx(np.mean(yv == 1))                 # one class: that class
    assert v[2] == pytest.approx(np.mean(yv == 0))                 # fit failed: the coalition's majority (tie -> 0)
    assert np.all(np.isfinite(v))
    assert g.degenerate == {"empty": 1, "one class": 1, "fit failed": 1}
    fixed = DataGame(Fragile(), Xt, yt, Xv, yv, degenerate=0.0)
    assert fixed(np.zeros((1, 40), dtype=bool))[0] == 0.0
    with pytest.raises(ValueError, match="degenerate"):
        DataGame(Fragile(), Xt, yt, Xv, yv, degenerate=float("nan"))


@pytest.mark.parametrize("kwargs, match", [
    (dict(model=object()), "model must have fit"),
    (dict(scoring="no-such-scorer"), "scoring 'no-such-scorer' is not a scikit-learn scorer"),
    (dict(scoring=3), "scoring must be None"),
    (dict(X_train=np.zeros((5, 3))), "X_train has 5 rows but y_train has 40"),
    (dict(X_val=np.zeros((0, 3)), y_val=np.zeros(0)), "X_val and y_val"),
    (dict(cache="/proc/fairshare-no"), "cache '/proc/fairshare-no' cannot be created"),
])
def test_datagame_bad_input_is_named(kwargs, match):
    Xt, yt, Xv, yv, _ = _data()
    args = dict(model=LogisticRegression(), X_train=Xt, y_train=yt, X_val=Xv, y_val=yv) | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        DataGame(**args)


# ------------------------------------------------------------------------------------- KNN-Shapley
def _knn_utility(Xt, yt, Xv, yv, k, members):
    if not members:
        return 0.0
    idx = np.array(members)
    total = 0.0
    for x, label in zip(Xv, yv):
        d = ((Xt[idx] - x) ** 2).sum(axis=1)
        near = idx[np.argsort(d, kind="stable")[:k]]
        total += np.sum(yt[near] == label) / k
    return total / len(yv)


@pytest.mark.parametrize("k, seed", [(1, 0), (3, 1), (5, 2)])
def test_knn_shapley_equals_brute_force_enumeration_on_12_points(k, seed):
    rng = np.random.default_rng(seed)
    Xt, Xv = rng.normal(size=(12, 2)), rng.normal(size=(4, 2))
    yt, yv = rng.integers(0, 3, 12), rng.integers(0, 3, 4)
    n = 12
    brute = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            w = 1.0 / (n * math.comb(n - 1, size))
            for S in itertools.combinations(others, size):
                brute[i] += w * (_knn_utility(Xt, yt, Xv, yv, k, [*S, i]) - _knn_utility(Xt, yt, Xv, yv, k, list(S)))
    assert np.allclose(fs.games.knn_shapley(Xt, yt, Xv, yv, k=k), brute, atol=1e-12)
    g = fs.games.KNNGame(Xt, yt, Xv, yv, k=k)
    S = rng.random((30, n)) < 0.5
    assert np.allclose(g(S), [_knn_utility(Xt, yt, Xv, yv, k, list(np.flatnonzero(s))) for s in S])


@pytest.mark.parametrize("n, k", [(4, 7), (6, 10), (1, 3), (5, 5)])
def test_knn_shapley_with_k_above_the_training_points_equals_enumeration(n, k):
    # hunt: the farthest point's value was 1[match] / N whatever k; for k > N no vote is full (each counts 1 / k),
    # so n=4, k=7 gave values summing to 0.37 for v(N) = 0.20 (0.043 off enumeration)
    rng = np.random.default_rng(n + k)
    Xt, Xv = rng.normal(size=(n, 2)), rng.normal(size=(5, 2))
    yt, yv = rng.integers(0, 2, n), rng.integers(0, 2, 5)
    g = fs.games.KNNGame(Xt, yt, Xv, yv, k=k)
    values = fs.games.knn_shapley(Xt, yt, Xv, yv, k=k)
    assert np.allclose(values, fs.exact(g, "shapley", via="enumeration").values, atol=1e-12)
    assert values.sum() == pytest.approx(_knn_utility(Xt, yt, Xv, yv, k, list(range(n))))


def test_knn_shapley_orders_points_of_large_coordinates_by_their_true_distances():
    # hunt: |x|^2 - 2 x.v + |v|^2 at 1e8 (timestamps) lost the order of points a unit apart: values 0.062 off
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    expected = fs.games.knn_shapley(X[:10], y[:10], X[10:], y[10:], k=3)
    shifted = fs.games.knn_shapley(X[:10] + 1e8, y[:10], X[10:] + 1e8, y[10:], k=3)
    assert np.array_equal(shifted, expected)


@pytest.mark.parametrize("method, options", [("permutation", {}), ("tmc", {"truncation": 0.0, "parallel": 64}),
                                             ("leverageshap", {}), ("kernelshap", {})])
def test_estimators_approach_exact_knn_values_as_the_budget_grows(method, options):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] + 0.7 * rng.normal(size=500) > 0).astype(int)
    g = fs.games.KNNGame(X[:300], y[:300], X[300:], y[300:], k=5)
    exact = fs.exact(g, "shapley").values
    errors, covered = [], []
    for budget in (3000, 48000):
        phi = fs.estimate(g, "shapley", method=method, budget=budget, seed=0, **options)
        errors.append(np.linalg.norm(phi.values - exact) / np.linalg.norm(exact))
        covered.append(np.mean(np.abs(phi.values - exact) <= 2 * phi.stderr + 1e-12))
    assert errors[1] < 0.45 * errors[0], errors                  # 16x the budget: about 4x less error
    assert covered[1] > 0.8, covered


# ------------------------------------------------------------------------------- TMC, leave-one-out
def test_tmc_without_truncation_is_unbiased_and_truncation_saves_evaluations():
    g = fs.games.SOUMGame.random(30, n_terms=40, seed=1)
    exact = fs.exact(g, "shapley").values
    phi = fs.estimate(g, "shapley", method="tmc", budget=30000, seed=0, truncation=0.0)
    z = (phi.values - exact) / phi.stderr
    assert np.mean(np.abs(z) <= 2) > 0.85
    assert phi.info["truncated_share"] == 0.0
    # a saturating game: v(S) reaches v(N) once 5 of 30 players are in, so walks stop early
    sat = fs.games.FunctionGame(lambda S: np.minimum(S.sum(axis=1), 5) / 5.0, 30)
    cut = fs.estimate(sat, "shapley", method="tmc", budget=3000, seed=0, truncation=0.01)
    full = fs.estimate(sat, "shapley", method="tmc", budget=3000, seed=0, truncation=0.0)
    assert cut.info["truncated_share"] > 0.5
    assert cut.info["n_permutations"] > 3 * full.info["n_permutations"]
    assert np.allclose(cut.values, 1 / 30, atol=0.01)


def test_tmc_waits_for_steps_in_a_row_before_it_truncates_a_walk():
    # hunt10: where v(N) = v(empty) (a model no better than the majority class), a walk whose first point changed
    # nothing was truncated at once: every later point got 0 (7 points, coverage 0.20-0.28, bias -0.107 on 0.116).
    # Here: 1 + sum of w over S, w summing to 0; walks stopped at the first step within 1% of v(N) put 0 on most
    w = np.array([0.3, 0.3, -0.3, -0.3, 0, 0, 0, 0, 0, 0])
    g = fs.games.FunctionGame(lambda S: 1.0 + S @ w, 10)
    errors = {p: np.mean([np.abs(fs.estimate(g, "shapley", method="tmc", budget=200, seed=s, **opts).values - w).max()
                          for s in range(20)]) for p, opts in (("first", {"patience": 1}), ("default", {}))}
    assert errors["first"] > 0.2 and errors["default"] < 0.02, errors


@pytest.mark.parametrize("options, match", [({"truncation": -0.1}, "truncation must be >= 0"),
                                            ({"patience": 0}, "patience must be >= 1"),
                                            ({"parallel": 0}, "parallel must be >= 1"),
                                            ({"stride": 2.5}, "stride must be an integer")])
def test_tmc_options_are_checked_before_any_fit(options, match):
    Xt, yt, Xv, yv, _ = _data()
    Counting.fits = 0
    with pytest.raises((ValueError, TypeError), match=match):
        fs.value_data(Counting(), Xt, yt, Xv, yv, index="shapley", method="tmc", budget=100, progress=False, **options)
    assert Counting.fits == 0


def test_leave_one_out_equals_direct_fits_and_enumeration():
    Xt, yt, Xv, yv, _ = _data(n_train=9)
    dv = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, index="loo", progress=False)
    full = LogisticRegression().fit(Xt, yt).score(Xv, yv)
    direct = [full - LogisticRegression().fit(np.delete(Xt, i, 0), np.delete(yt, i)).score(Xv, yv) for i in range(9)]
    assert np.allclose(dv.values, direct) and dv.method == "loo" and dv.n_evaluations == 11
    game = DataGame(LogisticRegression(), Xt, yt, Xv, yv)
    assert np.allclose(fs.exact(game, "loo", via="enumeration").values, direct)


# ------------------------------------------------------------------------------------ value_data
def test_value_data_finds_flipped_labels_with_error_bars_and_a_plot(tmp_path):
    Xt, yt, Xv, yv, flipped = _data(n_train=60, n_val=200, flip=6, seed=4)
    dv = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=1200, seed=0, progress=False)
    # fits cost far more than the tree control variate's surrogates: auto takes it (measured on 4 seeds: AUC
    # 0.688/0.691/0.667/0.836 against plain Kernel Banzhaf's 0.685/0.691/0.617/0.840, 10% more time)
    assert dv.method == "kernel-banzhaf-cv" and dv.n_fits <= 1200 and dv.stderr.shape == (60,)
    assert "surrogate fits" in dv.info["choice"]["why"]
    assert dv.detection_auc(flipped) > 0.7                       # random: 0.5 (measured 0.73; TMC 0.85, LOO 0.60)
    frame = dv.to_frame()
    assert frame.columns.tolist() == ["value", "stderr"] and len(frame) == 60
    assert set(dv.lowest(6)) & set(np.flatnonzero(flipped))
    ax = dv.plot(flag=flipped, flag_label="flipped")
    ax.figure.savefig(tmp_path / "values.png")
    assert "AUC" in ax.get_title() and (tmp_path / "values.png").stat().st_size > 5000
    knn = fs.value_data(__import__("sklearn.neighbors").neighbors.KNeighborsClassifier(5), Xt, yt, Xv, yv,
                        index="shapley", progress=False)
    assert knn.method == "exact" and knn.n_fits == 0 and knn.detection_auc(flipped) > 0.8


def test_value_data_progress_reports_fits_and_the_error(capsys):
    Xt, yt, Xv, yv, _ = _data()
    seen = []
    phi = fs.estimate(DataGame(LogisticRegression(), Xt, yt, Xv, yv), "banzhaf", method="msr", budget=400, seed=0,
                      progress=lambda spent, cap, err: seen.append((spent, cap, err)))
    spent = [s for s, _, _ in seen]
    assert spent == sorted(spent) and spent[-1] == phi.n_evaluations and seen[-1][1] == 400
    assert seen[-1][2] is not None and 0 < seen[-1][2] < 10
    fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=200, seed=0, progress=True)
    assert "relative error" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, match", [
    (dict(budget=None), "budget must be given"),
    (dict(index="median"), "index must be one of"),
    (dict(method="msr", index="shapley"), "method 'msr' supports"),
    (dict(progress="yes"), "progress must be True, False or a callable"),
    (dict(budget=0), "budget must be >= 1"),
])
def test_value_data_bad_input_costs_no_fit(kwargs, match):
    Xt, yt, Xv, yv, _ = _data()
    Counting.fits = 0
    args = dict(budget=100, progress=False) | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        fs.value_data(Counting(), Xt, yt, Xv, yv, **args)
    assert Counting.fits == 0


@pytest.mark.parametrize("model, y_train, y_val, kw, match", [
    # hunt: one class in y_train gave values all 0 from 40 constant predictors, nothing said; a regressor scored by
    # accuracy, or string y_val for integer y_train, raised scikit-learn's bare message from the constant predictor
    (Counting(), np.zeros(40, dtype=int), None, {}, r"y_train holds one class only \(0\)"),
    (KNeighborsClassifier(3), np.ones(40, dtype=int), None, {}, r"y_train holds one class only \(1\)"),
    (Ridge(), None, None, dict(scoring="accuracy"), "scoring: accuracy_score could not score the constant predictor"),
    (Counting(), None, "str", {}, "scoring: the model's score could not score the constant predictor.*Mix of label"),
    (Counting(), None, None, dict(scoring=lambda m, X, y: float(m.coef_[0, 0])),
     "scoring: <lambda> could not score the constant predictor.*degenerate=<a number>"),
])
def test_labels_or_a_scoring_no_fit_could_value_are_refused_naming_them(model, y_train, y_val, kw, match):
    Xt, yt, Xv, yv, _ = _data()
    Counting.fits = 0
    y_train = yt if y_train is None else y_train
    y_val = yv.astype(str) if y_val == "str" else yv
    with pytest.raises(ValueError, match=match):
        fs.value_data(model, Xt, y_train, Xv, y_val, budget=100, seed=0, progress=False, **kw)
    assert Counting.fits == 0


def test_integer_labels_in_an_object_array_are_valued_and_a_duplicated_index_is_refused():
    # hunt: labels of dtype object (integers out of a mixed pandas column) failed every fit and the constant
    # predictor's score ('Unknown label type'); a frame whose index repeats a label named two points alike (as_dict
    # kept one of them, dv['a'] the first) without a word
    import pandas as pd

    Xt, yt, Xv, yv, _ = _data(n_train=12)
    as_ints = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=60, seed=0, progress=False)
    as_objects = fs.value_data(LogisticRegression(), Xt, yt.astype(object), Xv, yv.astype(object), budget=60,
                               seed=0, progress=False)
    assert np.array_equal(as_objects.values, as_ints.values)
    oob = fs.value_data(LogisticRegression(), Xt, yt.astype(object), index="data-oob", budget=10, seed=0,
                        progress=False)
    assert np.array_equal(oob.values, fs.value_data(LogisticRegression(), Xt, yt, index="data-oob", budget=10,
                                                    seed=0, progress=False).values, equal_nan=True)
    Counting.fits = 0
    frame = pd.DataFrame(Xt, index=["a", "b"] * 6)
    for val in ((Xv, yv), (None, None)):
        with pytest.raises(ValueError, match="X_train's index holds 'a' more than once"):
            fs.value_data(Counting(), frame, yt, *val, index="data-oob" if val[0] is None else "banzhaf", budget=60,
                          seed=0, progress=False)
    assert Counting.fits == 0


def test_a_small_set_of_points_without_a_budget_is_told_the_budget_of_its_exact_values():
    """No budget for 3 points: the error named 10n (30 fits) where 2^3 = 8 fits give the exact values; with that
    budget auto takes them."""
    Xt, yt, Xv, yv, _ = _data()
    three = np.r_[0, 1, np.flatnonzero(yt != yt[0])[0]]            # two classes (one class alone is refused)
    Counting.fits = 0
    with pytest.raises(ValueError, match="budget=30 for 3 players; budget=8 covers every coalition: exact values"):
        fs.value_data(Counting(), Xt[three], yt[three], Xv, yv, progress=False)
    assert Counting.fits == 0
    exact = fs.value_data(LogisticRegression(), Xt[three], yt[three], Xv, yv, budget=8, progress=False)
    assert exact.method == "exact" and exact.n_evaluations == 8
    with pytest.raises(ValueError, match=r"budget=300 for 30 players\)"):           # no such hint for 30 points
        fs.value_data(Counting(), Xt[:30], yt[:30], Xv, yv, progress=False)


def test_continuous_labels_for_a_classifier_are_refused_naming_them_before_any_fit():
    """They reached the constant predictor's score and stopped on scikit-learn's "Classification metrics can't
    handle a mix of binary and continuous targets", naming neither argument. A scorer of the user's may score a
    classifier against numbers: there only y_train is checked (the fit needs labels)."""
    Xt, yt, Xv, yv, _ = _data()
    Counting.fits = 0
    with pytest.raises(ValueError, match=r"^y_train holds continuous values \(e\.g\. .*Counting is a classifier"):
        fs.value_data(Counting(), Xt, Xt[:, 0], Xv, yv, budget=50, progress=False)
    with pytest.raises(ValueError, match="^y_val holds continuous values"):
        fs.value_data(Counting(), Xt, yt, Xv, Xv[:, 0], budget=50, progress=False)
    assert Counting.fits == 0
    scorer = lambda model, X, y: -float(np.mean((model.predict_proba(X)[:, 1] - y) ** 2))   # noqa: E731
    got = fs.value_data(Counting(), Xt, yt.astype(float), Xv, np.clip(Xv[:, 0], 0, 1), scoring=scorer, budget=50,
                        seed=0, progress=False)
    assert np.all(np.isfinite(got.values)) and Counting.fits > 0


@pytest.mark.parametrize("groups, error, match", [
    ([[0, 1], [2.5]], TypeError, "training-row indices \\(integers\\), got 2.5"),     # it was read as row 2
    ([[0, "x"]], TypeError, "got 'x'"),                                        # int("x") stopped numpy
    ("ab", TypeError, "got the string 'ab'"),
])
def test_groups_of_training_rows_that_are_not_integers_are_refused_before_any_fit(groups, error, match):
    Xt, yt, Xv, yv, _ = _data()
    Counting.fits = 0
    with pytest.raises(error, match=match):
        fs.value_data(Counting(), Xt[:6], yt[:6], Xv, yv, groups=groups, budget=20, progress=False)
    assert Counting.fits == 0


def test_a_model_with_a_random_state_left_at_none_gives_the_same_values_for_the_same_seed():
    # hunt: each fit of a DecisionTreeClassifier(max_features=1) drew its own random state, so two runs with seed=0
    # differed by 0.089 and a coalition evaluated twice had two values
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.8 * rng.normal(size=60) > 0).astype(int)
    model = DecisionTreeClassifier(max_features=1)
    runs = [fs.value_data(model, X[:12], y[:12], X[12:], y[12:], budget=60, seed=0, progress=False) for _ in range(2)]
    assert np.array_equal(runs[0].values, runs[1].values)
    g = DataGame(model, X[:12], y[:12], X[12:], y[12:])
    S = np.random.default_rng(1).random((6, 12)) < 0.7
    assert np.array_equal(g(S), g(S))
    assert model.random_state is None                                 # the user's model is left as it was
    # a pipeline's step left at None too (review: only the model's own parameter was set; runs 0.053 apart)
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=5, max_features=1))
    runs = [fs.value_data(pipe, X[:12], y[:12], X[12:], y[12:], budget=60, seed=0, progress=False) for _ in range(2)]
    assert np.array_equal(runs[0].values, runs[1].values)
    assert pipe.steps[1][1].random_state is None


def test_same_seed_same_values_locally_and_on_a_dask_cluster():
    distributed = pytest.importorskip("distributed")
    Xt, yt, Xv, yv, _ = _data(n_train=30)
    local = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=300, seed=5, progress=False)
    tmc_local = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, index="shapley", budget=300, seed=5,
                              progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            distributed.Client(c) as client:
        remote = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=300, seed=5, client=client,
                               progress=False)
        tmc_remote = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, index="shapley", budget=300, seed=5,
                                   client=client, progress=False)
    assert np.array_equal(local.values, remote.values) and np.array_equal(local.stderr, remote.stderr)
    assert np.array_equal(tmc_local.values, tmc_remote.values)
    assert remote.n_fits == local.n_fits


# ------------------------------------------------------------------------ the fit cache: kill, resume
_SLOW = textwrap.dedent("""
    import time
    from sklearn.linear_model import LogisticRegression

    class Slow(LogisticRegression):
        calls = 0

        def fit(self, X, y, sample_weight=None):
            type(self).calls += 1
            time.sleep(0.01)
            return super().fit(X, y, sample_weight)
""")

_WORKER = textwrap.dedent("""
    import sys, numpy as np, fairshare as fs
    sys.path.insert(0, sys.argv[2])
    from slowmodel import Slow
    rng = np.random.default_rng(0); X = rng.normal(size=(100, 3)); y = (X[:, 0] > 0).astype(int)
    fs.value_data(Slow(), X[:40], y[:40], X[40:], y[40:], budget=400, seed=1, cache=sys.argv[1], progress=False)
""")


def test_a_killed_run_resumes_without_refitting(tmp_path, monkeypatch):
    (tmp_path / "slowmodel.py").write_text(_SLOW)
    monkeypatch.syspath_prepend(str(tmp_path))
    from slowmodel import Slow

    cache = tmp_path / "fits"
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(cache), str(tmp_path)], stderr=subprocess.PIPE)
    log = cache / "fits.log"
    deadline = time.time() + 120
    while time.time() < deadline and (not log.exists() or log.stat().st_size < HEADER_BYTES + 120 * 25):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert log.exists(), proc.stderr.read().decode()[-2000:]
    with open(log, "ab") as fh:                        # a record torn mid-write
        fh.write(b"\x01\x02\x03")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    Slow.calls = 0
    resumed = fs.value_data(Slow(), X[:40], y[:40], X[40:], y[40:], budget=400, seed=1, cache=cache, progress=False)
    fresh = fs.value_data(LogisticRegression(), X[:40], y[:40], X[40:], y[40:], budget=400, seed=1, progress=False)
    assert resumed.reused_fits >= 100 and resumed.n_fits + resumed.reused_fits == fresh.n_fits
    assert 0 < Slow.calls <= resumed.n_fits < fresh.n_fits    # killed mid-run; degenerate coalitions need no fit
    assert np.allclose(resumed.values, fresh.values, atol=1e-12)
    Slow.calls = 0
    again = fs.value_data(Slow(), X[:40], y[:40], X[40:], y[40:], budget=400, seed=1, cache=cache, progress=False)
    assert again.n_fits == 0 and Slow.calls == 0 and np.array_equal(again.values, resumed.values)


class Interrupting(LogisticRegression):
    """Interrupted at the fit FS_TEST_STOP_AT names (50): out of the cache's key, which reads the class's data
    (calls is 0 whenever a run starts)."""

    calls = 0

    def fit(self, X, y, sample_weight=None):
        type(self).calls += 1
        if type(self).calls == int(os.environ.get("FS_TEST_STOP_AT", "50")):
            raise KeyboardInterrupt
        return super().fit(X, y, sample_weight)


def test_keyboard_interrupt_keeps_every_finished_fit(tmp_path, monkeypatch):
    Xt, yt, Xv, yv, _ = _data()
    Interrupting.calls = 0
    with pytest.raises(KeyboardInterrupt):
        fs.value_data(Interrupting(), Xt, yt, Xv, yv, budget=300, seed=2, cache=tmp_path, progress=False)
    Interrupting.calls = 0
    monkeypatch.setenv("FS_TEST_STOP_AT", "-1")
    resumed = fs.value_data(Interrupting(), Xt, yt, Xv, yv, budget=300, seed=2, cache=tmp_path, progress=False)
    fresh = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=300, seed=2, progress=False)
    assert resumed.reused_fits >= 49 and np.allclose(resumed.values, fresh.values)


def test_damaged_cache_records_are_refitted_and_other_runs_refused(tmp_path):
    Xt, yt, Xv, yv, _ = _data()
    fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=100, seed=0, cache=tmp_path, progress=False)
    log = tmp_path / "fits.log"
    data = bytearray(log.read_bytes())
    data[HEADER_BYTES + 3] ^= 0xFF                     # one bit pattern changed in the first record
    log.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="1 damaged record"):
        again = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, budget=100, seed=0, cache=tmp_path,
                              progress=False)
    assert again.n_fits == 1
    with pytest.raises(ValueError, match="holds a different run"):
        fs.value_data(Ridge(), Xt, yt, Xv, yv, budget=100, seed=0, cache=tmp_path, progress=False)


# ------------------------------------------------------------------------------------------- CLI
def _csvs(tmp_path: Path):
    import pandas as pd

    Xt, yt, Xv, yv, flipped = _data(n_train=50, n_val=100, flip=5, seed=6)
    pd.DataFrame({"a": Xt[:, 0], "b": Xt[:, 1], "c": Xt[:, 2], "label": yt, "flipped": flipped.astype(int)}).to_csv(
        tmp_path / "train.csv", index=False)
    pd.DataFrame({"a": Xv[:, 0], "b": Xv[:, 1], "c": Xv[:, 2], "label": yv}).to_csv(tmp_path / "val.csv", index=False)
    return tmp_path / "train.csv", tmp_path / "val.csv"


def test_cli_value_data_writes_values_and_a_plot(tmp_path, capsys):
    import pandas as pd

    train, val = _csvs(tmp_path)
    rc = cli_main(["value-data", "--model", "logistic", "--train", str(train), "--val", str(val), "--target",
                   "label", "--flag", "flipped", "--budget", "500", "--out", str(tmp_path / "v.csv"), "--plot",
                   str(tmp_path / "v.png"), "--quiet"])
    assert rc == 0
    out = pd.read_csv(tmp_path / "v.csv")
    assert out.columns.tolist() == ["row", "value", "stderr", "flipped"] and len(out) == 50
    assert "AUC" in capsys.readouterr().out and (tmp_path / "v.png").exists()


@pytest.mark.parametrize("change, match", [
    ({"--train": "missing.csv"}, "--train .*missing.csv: no such file"),
    ({"--target": "nope"}, "--target 'nope' is not a column"),
    ({"--budget": "0"}, "--budget must be >= 1"),
    ({"--model": "no-model.joblib"}, "--model no-model.joblib: no such file"),
    ({"--flag": "zzz"}, "--flag 'zzz' is not a column"),
    ({"--target": "a"}, "--target a of --train .*train.csv holds continuous values .* is a classifier"),
    ({"--flag": "a"}, "--flag 'a' of --train .*train.csv holds .* in row 0: a flag column holds 0 or 1"),
])
def test_cli_value_data_fails_in_one_line(tmp_path, capsys, change, match):
    train, val = _csvs(tmp_path)
    args = {"--model": "logistic", "--train": str(train), "--val": str(val), "--target": "label", "--budget": "100",
            "--flag": "flipped", "--out": str(tmp_path / "v.csv")}
    args.update({k: (str(tmp_path / v) if k == "--train" else v) for k, v in change.items()})
    rc = cli_main(["value-data", *itertools.chain.from_iterable(args.items()), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    import re

    assert re.search(match, err), err


def _small_sets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X[:, 0] > 0).astype(int)
    return X[:20], y[:20], X[20:], y[20:]


class _CountingLogistic(LogisticRegression):
    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize("change, match", [
    ({"X_val": lambda X: X[:, :2]}, "X_val has 2 columns but X_train has 3"),
    ({"X_val": lambda X: np.where(X > 1.5, np.inf, X)}, "X_val holds inf at row"),
    ({"X_train": lambda X: np.where(X > 1.5, np.nan, X)}, "X_train holds NaN at row .* does not take missing values"),
    ({"X_train": lambda X: X[:, 0]}, "X_train must be a table of rows x features"),
    ({"y_train": lambda y: np.stack([y, y], axis=1)}, "y_train must hold one label a row"),
])
def test_data_no_fit_could_use_is_refused_before_any_fit(change, match):
    """A fit that raises is scored as a degenerate coalition: such data were valued silently (39 of 40 fits
    failed and the values were the constant predictor's noise)."""
    X_train, y_train, X_val, y_val = _small_sets()
    data = {"X_train": X_train, "y_train": y_train, "X_val": X_val, "y_val": y_val}
    for key, how in change.items():
        data[key] = how(data[key])
    _CountingLogistic.fits = 0
    with pytest.raises(ValueError, match=match):
        fs.value_data(_CountingLogistic(), data["X_train"], data["y_train"], data["X_val"], data["y_val"], budget=40,
                      seed=0, progress=False)
    assert _CountingLogistic.fits == 0


def test_plain_lists_are_valued_as_arrays():
    X_train, y_train, X_val, y_val = _small_sets()
    arrays = fs.value_data(LogisticRegression(), X_train, y_train, X_val, y_val, budget=40, seed=0, progress=False)
    lists = fs.value_data(LogisticRegression(), X_train.tolist(), y_train.tolist(), X_val.tolist(), y_val.tolist(),
                          budget=40, seed=0, progress=False)
    np.testing.assert_array_equal(lists.values, arrays.values)


def test_values_from_fits_that_mostly_raised_are_refused_with_the_models_error():
    import pandas as pd

    X_train, y_train, X_val, y_val = _small_sets()
    words = pd.DataFrame(X_train, columns=list("abc")).assign(color=["red", "blue"] * 10)
    val = pd.DataFrame(X_val, columns=list("abc")).assign(color=["red", "blue"] * 15)
    with pytest.raises(ValueError, match="fits failed.*could not convert string to float"):
        fs.value_data(LogisticRegression(), words, y_train, val, y_val, budget=40, seed=0, progress=False)


def test_values_from_fits_whose_predictions_are_nan_are_refused_saying_so():
    # hunt: "39 of 40 fits raised" where every fit worked and its predictions on the validation data were NaN
    class NanPredictions(LogisticRegression):
        def predict(self, X):
            return np.full(len(X), np.nan)

        def predict_proba(self, X):
            return np.full((len(X), 2), np.nan)

    X_train, y_train, X_val, y_val = _small_sets()
    with pytest.raises(ValueError, match=r"fits failed.*the fit on all of X_train works: the subsets' fits raised, "
                                         r"or their scores on the validation data raised or were not finite"):
        fs.value_data(NanPredictions(), X_train, y_train, X_val, y_val, budget=40, seed=0, progress=False)


def test_a_knn_model_of_another_metric_or_weights_is_valued_by_its_fits_not_the_euclidean_closed_form():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = (X.sum(axis=1) > 0).astype(int)
    euclidean = fs.value_data(KNeighborsClassifier(3), X[:8], y[:8], X[8:], y[8:], budget=256, progress=False)
    for model in (KNeighborsClassifier(3, metric="chebyshev"), KNeighborsClassifier(3, weights="distance", p=1)):
        other = fs.value_data(model, X[:8], y[:8], X[8:], y[8:], budget=256, progress=False)
        assert other.n_fits == 256 and not np.array_equal(other.values, euclidean.values)


@pytest.mark.parametrize("change, match", [
    ({"y_train": lambda y: y + 0.5}, "y_train holds continuous values"),
    ({"X_train": lambda X: np.array([["a", "b"]] * len(X))}, "X_train holds values that are not numbers"),
])
def test_the_knn_closed_form_checks_its_data_as_the_fits_do(change, match):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = (X.sum(axis=1) > 0).astype(int)
    data = {"X_train": X[:8], "y_train": y[:8]}
    for key, how in change.items():
        data[key] = how(data[key])
    with pytest.raises(ValueError, match=match):
        fs.value_data(KNeighborsClassifier(3), data["X_train"], data["y_train"], X[8:], y[8:], progress=False)


@pytest.mark.parametrize("where, bad", [("y_train", np.nan), ("y_train", np.inf), ("y_val", np.nan),
                                        ("y_train", None)])
def test_a_missing_or_infinite_label_is_refused_before_any_fit_naming_it(where, bad):
    # hunt: NaN in y_train ran 39 fits before "20 of 40 fits failed"; a regressor's NaN or inf and y_val's NaN
    # surfaced as scikit-learn's "Input y contains NaN", naming no argument
    X_train, y_train, X_val, y_val = _small_sets()
    sets = {"y_train": y_train.astype(object if bad is None else float),
            "y_val": y_val.astype(float)}
    sets[where][3 if where == "y_train" else 0] = bad
    fits = []

    class Counted(LogisticRegression):
        def fit(self, X, y, **kw):
            fits.append(1)
            return super().fit(X, y, **kw)

    row = 3 if where == "y_train" else 0
    with pytest.raises(ValueError, match=rf"{where} holds {bad} at row {row}: every fit needs a finite label"):
        fs.value_data(Counted(), X_train, sets["y_train"], X_val, sets["y_val"], budget=40, seed=0, progress=False)
    assert fits == []


def test_a_flag_of_positions_and_nan_values_are_refused_not_read_as_a_mask_or_an_auc_of_nan():
    """flag=[0, 2, 3, 1] (the positions of the flipped points) was read as the mask [F, T, T, T] and gave an AUC of
    0.0; a NaN value gave the AUC nan silently. Positions are refused naming flag and how to pass them; NaN values
    are refused naming the points, and the plot writes the AUC as n/a."""
    from fairshare.results.data_values import DataValues, detection_auc

    values = [-1.0, 0.5, 0.2, 0.9]
    with pytest.raises(ValueError, match=r"flag must be one boolean \(or 0/1\) per point, got the values \[2, 3\]"):
        detection_auc(values, [0, 2, 3, 1])
    assert detection_auc(values, [1, 0, 0, 0]) == detection_auc(values, np.isin(np.arange(4), [0])) == 1.0
    assert detection_auc([-np.inf, 0.5, 0.2, 0.9], [True, False, False, False]) == 1.0
    with pytest.raises(ValueError, match=r"values: the points \[1\] have NaN values"):
        detection_auc([-1.0, np.nan, 0.2, 0.9], [True, False, False, False])
    dv = DataValues(values=np.array([0.3, -0.1, 0.2, 0.5]), stderr=np.full(4, 0.05), index="banzhaf",
                    method="exact", player_names=list("abcd"))
    with pytest.raises(ValueError, match="flag must be one boolean"):
        dv.plot(flag=[1, 3, 0, 0])
    assert dv.plot(flag=[0, 1, 0, 0]).get_title().endswith("from the lowest: 1.000")
    dv.values[2] = np.nan
    assert dv.plot(flag=[0, 1, 0, 0]).get_title().endswith("from the lowest: n/a (NaN values)")


class _Fragile(LogisticRegression):
    """Fails to fit fewer than 12 rows."""

    def fit(self, X, y, sample_weight=None):
        if len(X) < 12:
            raise RuntimeError("too few rows")
        return super().fit(X, y, sample_weight)


def test_fits_read_from_the_cache_count_as_the_run_s_own(tmp_path):
    """A run whose fits mostly failed was refused, and the same call again, every fit read from its cache, returned
    the constant predictor's noise (degenerate all 0, 0 fits: 54 of 60 failed fits were not counted)."""
    rng = np.random.default_rng(0)
    Xt, Xv = rng.normal(size=(14, 3)), rng.normal(size=(30, 3))
    yt, yv = (Xt[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    for _ in range(2):
        with pytest.raises(ValueError, match="54 of 60 fits failed"):
            fs.value_data(_Fragile(), Xt, yt, Xv, yv, budget=60, seed=0, cache=tmp_path / "f", progress=False)
    run = dict(budget=200, seed=1, progress=False)
    fresh = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, **run)
    fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, cache=tmp_path / "g", **run)
    again = fs.value_data(LogisticRegression(), Xt, yt, Xv, yv, cache=tmp_path / "g", **run)
    assert again.n_fits == 0 and again.reused_fits == fresh.n_fits
    assert again.degenerate == fresh.degenerate and fresh.degenerate["one class"] > 0
