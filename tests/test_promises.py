"""The README's promises as properties, checked at every door on generated games, models, seeds and inputs.

- same seed, same values: bit for bit, whatever the batch size, the number of threads or a fresh game object;
- columns given in any order: each feature gets the same value;
- MaxEvaluations (and the budget) is never exceeded, whatever method ``auto`` picks;
- every door refuses an unknown keyword and a wrong value of each of its declared arguments before any
  model call (a counting model proves it); the bad values are generated from the doors' own tables;
- a tree model (scikit-learn, xgboost, lightgbm; alone, in a pipeline, from a file) refuses a bad argument with no
  row predicted: its reading is checked, and a probability's link found, only before the first value.

Hypothesis runs derandomized (the same examples on every run) so that CI is reproducible.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fairshare as fs
from fairshare.cli import main as cli_main
from fairshare.doors.value_data import VALUE_DATA
from fairshare.doors.estimate import ESTIMATE
from fairshare.engine.exact import all_coalitions
from fairshare.engine.registry import get_method, method_names
from fairshare.doors.exact import EXACT
from fairshare.doors.explain import EXPLAIN
from fairshare.doors.global_importance import GLOBAL_IMPORTANCE
from fairshare.games.tree import TREE_ARGUMENTS
from fairshare.games.tree_interactions import TREE_INTERACTIONS
from fairshare.indices.interactions import INTERACTION_INDEX_NAMES
from fairshare.doors.interactions import INTERACTIONS
from fairshare.stopping import MaxEvaluations, RelativeError

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

_DATA = load_breast_cancer(as_frame=True)
X6, Y = _DATA.data.iloc[:, :6], _DATA.target
LR = LogisticRegression(max_iter=5000).fit(X6, Y)
FOREST = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X6, Y)
INDICES = ["shapley", "banzhaf", "beta-shapley(4,1)", "weighted-banzhaf(0.3)"]


class CountingGame(fs.Game):
    """A random game (main effects, pairs, a square root) given by its value on every coalition (so that a
    coalition's value is the same bits whatever the batch it comes in), counting its calls."""

    def __init__(self, n: int, seed: int, batch_size: int | None = None) -> None:
        super().__init__(n, batch_size=batch_size)
        rng = np.random.default_rng(seed)
        w, pairs = rng.normal(size=n), rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.3)
        Z = all_coalitions(n).astype(float)
        self.table = Z @ w + np.einsum("mi,ij,mj->m", Z, pairs, Z) + np.sqrt(Z.sum(axis=1))
        self.codes = 1 << np.arange(n)
        self.calls = 0

    def _evaluate(self, S: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.table[S.astype(np.int64) @ self.codes]


class Counting:
    """A fitted scikit-learn model behind a counting predict_proba (and fit, for data valuation)."""

    def __init__(self, model=LR) -> None:
        self.model, self.calls = model, 0
        self.feature_names_in_, self.classes_ = model.feature_names_in_, model.classes_

    def predict_proba(self, Z):
        self.calls += 1
        return self.model.predict_proba(Z)

    def fit(self, Xf, yf):
        self.calls += 1
        return self

    def predict(self, Z):
        self.calls += 1
        return self.model.predict(Z)

    def get_params(self, deep=False):
        return {}


def _methods_for(index: str) -> list[str]:
    sv = fs.indices.semivalues.resolve_index(index)
    return ["auto"] + [m for m in method_names() if get_method(m).supports(sv) and not get_method(m).requires]


# ------------------------------------------------------------------------------ same seed, same values
@PROPERTY
@given(n=st.integers(2, 9), game_seed=st.integers(0, 10**6), seed=st.integers(0, 2**32 - 1),
       index=st.sampled_from(INDICES), data=st.data(), batch=st.integers(1, 64))
def test_estimate_same_seed_same_values_whatever_the_batch_size(n, game_seed, seed, index, data, batch):
    method = data.draw(st.sampled_from(_methods_for(index)), label="method")
    need = 2 if method == "auto" else get_method(method).budget_needed(CountingGame(n, 0),
                                                                        fs.indices.semivalues.resolve_index(index))
    budget = data.draw(st.integers(max(need, 2 * n + 4), max(need, 2 * n + 4) + 300), label="budget")
    runs = [fs.estimate(CountingGame(n, game_seed, batch_size=b), index, method=method, budget=budget, seed=seed)
            for b in (None, batch)]
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    assert runs[0].method == runs[1].method and runs[0].n_evaluations == runs[1].n_evaluations <= budget
    if runs[0].stderr is not None:
        np.testing.assert_array_equal(runs[0].stderr, runs[1].stderr)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(n=st.integers(11, 12), game_seed=st.integers(0, 10**6), seed=st.integers(0, 2**32 - 1),
       index=st.sampled_from(["beta-shapley(4,1)", "beta-shapley(16,1)", "weighted-banzhaf(0.3)"]),
       extra=st.integers(0, 200), batch=st.integers(1, 64))
def test_product_measures_with_the_even_model_same_seed_same_values_whatever_the_batch_size(n, game_seed, seed, index,
                                                                                            extra, batch):
    """``auto``'s path at 6 rows per unknown of the order-2 model (the pairs unpenalized, the nodes' slopes of the
    residual), which the smaller games above do not reach (11 and 12 players: the budget stays under half of all
    coalitions, where the rule takes it)."""
    budget = 6 * (n + n * (n - 1) // 2) + extra
    runs = [fs.estimate(CountingGame(n, game_seed, batch_size=b), index, budget=budget, seed=seed)
            for b in (None, batch)]
    assert runs[0].info["design"]["chosen"] == "unpaired, even model"
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    np.testing.assert_array_equal(runs[0].stderr, runs[1].stderr)
    assert runs[0].n_evaluations == runs[1].n_evaluations <= budget


@PROPERTY
@given(n=st.integers(3, 12), cap=st.integers(1, 400), seed=st.integers(0, 1000), index=st.sampled_from(INDICES),
       data=st.data())
def test_max_evaluations_is_never_exceeded_whatever_auto_picks(n, cap, seed, index, data):
    method = data.draw(st.sampled_from(_methods_for(index)), label="method")
    game = CountingGame(n, seed)
    if method == "exact":                         # exact values take no stopping rule: said before any call
        with pytest.raises(ValueError, match="takes no stopping rule"):
            fs.estimate(game, index, method=method, stop=MaxEvaluations(cap))
        assert game.calls == 0
        return
    try:
        phi = fs.estimate(game, index, method=method, budget=10_000, seed=seed,
                          stop=RelativeError(1e-9) | MaxEvaluations(cap))
    except fs.BudgetError as exc:                 # a cap below every method's minimum is refused before any call
        assert game.calls == 0 and "too small" in str(exc)
        return
    assert phi.n_evaluations <= cap and game.n_evaluations <= cap


@settings(max_examples=12, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000), rows=st.integers(1, 3),
       n_jobs=st.sampled_from([1, 2, -1]), index=st.sampled_from(INDICES))
def test_explain_gives_each_feature_its_value_whatever_the_column_order_and_threads(order, seed, rows, n_jobs, index):
    args = dict(index=index, budget=40, seed=seed, progress=False)         # < 2^6: sampled, not enumerated
    for model in (LR.predict_proba, LR, FOREST):
        background = X6.iloc[100:130] if model is not FOREST else None
        ref = fs.explain(model, X6.iloc[:rows], background, **args)
        got = fs.explain(model, X6[order].iloc[:rows], None if background is None else background[order],
                         n_jobs=n_jobs, **args)
        assert got.player_names == ref.player_names == list(X6.columns)        # the model's order
        np.testing.assert_array_equal(got.values, ref.values)
        assert got.method == ref.method == ("exact" if model is FOREST else "surrogate-regression")


@settings(max_examples=8, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000), rows=st.integers(1, 3),
       kind=st.sampled_from(["records", "structured", "pyarrow", "nullable"]))
def test_every_kind_of_table_gives_the_frames_values_by_name_and_refuses_bad_options_first(order, seed, rows, kind):
    """A list of records, a numpy structured array, a pyarrow Table and a frame of nullable Float64 columns (the
    table kinds this stop added) are read by their column names: the DataFrame's values bit for bit in any column
    order; an unknown option or a bad budget is refused before any model call."""
    frame = X6[order].iloc[:rows]
    if kind == "records":
        rows_given = frame.to_dict("records")
    elif kind == "structured":
        rows_given = frame.to_records(index=False)
    elif kind == "pyarrow":
        rows_given = __import__("pyarrow").Table.from_pandas(frame, preserve_index=False)
    else:
        rows_given = frame.astype("Float64")
    calls = []

    def model(Z):
        calls.append(1)
        return LR.predict_proba(Z)

    args = dict(budget=40, seed=seed, progress=False)       # the model's names order the columns (LR knows them)
    ref = fs.explain(LR.predict_proba, X6.iloc[:rows], X6.iloc[100:130], **args)
    got = fs.explain(LR.predict_proba, rows_given, X6.iloc[100:130], **args)
    assert got.player_names == ref.player_names == list(X6.columns)
    np.testing.assert_array_equal(got.values, ref.values)
    calls.clear()
    with pytest.raises(ValueError, match="unknown option.*colour"):
        fs.explain(model, rows_given, X6.iloc[100:130], colour=1, **args)
    with pytest.raises((ValueError, fs.BudgetError), match="budget"):
        fs.explain(model, rows_given, X6.iloc[100:130], budget=-3, seed=seed, progress=False)
    assert calls == []


@settings(max_examples=12, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(["float32", "float64", "ids"]), seed=st.integers(0, 1000), rows=st.integers(1, 3),
       budget=st.sampled_from([30, 60, 200]), index=st.sampled_from(INDICES))
def test_a_torch_module_of_rows_gives_the_same_values_whatever_holds_the_rows(dtype, seed, rows, budget, index):
    """Rows as a numpy array, a DataFrame or tensors (with a background of rows): the same values, bit for bit, for
    a module of either floating dtype (float64 modules were sent float32 rows, tensors stopped at the table door) and
    for token ids given to a module with an embedding (they were sent as floats)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    if dtype == "ids":                                  # each feature's decile as a token id, looked up and pooled
        table = X6.rank(pct=True).mul(9.99).astype("int64")
        net = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Flatten(), torch.nn.Linear(24, 2))
    else:
        table = X6
        net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).to(
            getattr(torch, dtype))
    X, background = table.iloc[:rows], table.iloc[100:116]
    args = dict(index=index, budget=budget, seed=seed, progress=False)
    ref = fs.explain(net.eval(), X.to_numpy(), background.to_numpy(), **args)
    for x, b in ((X, background), (torch.as_tensor(X.to_numpy()), torch.as_tensor(background.to_numpy()))):
        got = fs.explain(net, x, b, **args)
        np.testing.assert_array_equal(got.values, ref.values)
        np.testing.assert_array_equal(got.stderr, ref.stderr)
    assert np.all(np.isfinite(ref.values))


@settings(max_examples=8, deadline=None, derandomize=True)
@given(method=st.sampled_from(["gradient-shap", "integrated-gradients"]), seed=st.integers(0, 1000),
       rows=st.integers(1, 3), budget=st.sampled_from([12, 40]),
       bad=st.sampled_from([{"n_points": 1}, {"tolerance": -1.0}, {"n_pionts": 8}, {"budget": 3}]))
def test_gradient_methods_on_rows_keep_the_promises_of_the_torch_door(method, seed, rows, budget, bad):
    """Rows of a torch module with a background batch take the gradient methods (they were refused at the table
    door): the same bits for an array and a tensor and for the same seed twice, and a bad option, an unknown one or
    a budget below the method's minimum refused before any forward pass."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1)).double()
    X, background = X6.iloc[:rows].to_numpy(), X6.iloc[100:108].to_numpy()
    args = dict(method=method, budget=budget, seed=seed, progress=False)
    ref = fs.explain(net, X, background, **args)
    for x, b in ((X, background), (torch.as_tensor(X), torch.as_tensor(background))):
        got = fs.explain(net, x, b, **args)
        np.testing.assert_array_equal(got.values, ref.values)
        np.testing.assert_array_equal(got.stderr, ref.stderr)
    assert np.all(np.isfinite(ref.values)) and ref.method == method
    calls = []
    hook = net.register_forward_hook(lambda *a: calls.append(1))
    try:
        with pytest.raises((ValueError, TypeError)):
            fs.explain(net, X, background, **{**args, **bad})
    finally:
        hook.remove()
    assert not calls


@settings(max_examples=9, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000), budget=st.sampled_from([8, 14, 20]))
def test_global_importance_gives_each_feature_its_value_whatever_the_column_order(order, seed, budget):
    """Same seed, same bits, columns by name (the model was fitted on named columns), on both of auto's small-budget
    paths: each row's own permutations (8 coalitions), each row's own regression (14) and the mean game's regression
    with its surrogate (20)."""
    args = dict(loss="log_loss", budget=budget, seed=seed)
    ref = fs.global_importance(LR, X6.iloc[:20], Y.iloc[:20], background=X6.iloc[100:110], **args)
    got = fs.global_importance(LR, X6[order].iloc[:20], Y.iloc[:20], background=X6[order].iloc[100:110], **args)
    assert got.player_names == ref.player_names == list(X6.columns)            # the model's order
    assert ref.method == {8: "row-permutations", 14: "row-regressions", 20: "surrogate-regression"}[budget]
    np.testing.assert_array_equal(got.values, ref.values)
    np.testing.assert_array_equal(got.stderr, ref.stderr)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000),
       method=st.sampled_from(["auto", "permutation"]))
def test_groups_named_by_features_follow_them_whatever_the_column_order(order, seed, method):
    """groups= by feature names at the tree door (one grouped walk; a method named: the grouped tree game
    estimated) and at global_importance's: same players, same bits, in any column order."""
    groups = {"first": list(X6.columns[:2]), "middle": list(X6.columns[2:5]), "last": [X6.columns[5]]}
    args = dict(groups=groups, seed=seed, progress=False) | ({} if method == "auto" else {"method": method,
                                                                                         "budget": 40})
    ref = fs.explain(FOREST, X6.iloc[:3], X6.iloc[100:110], **args)
    got = fs.explain(FOREST, X6[order].iloc[:3], X6[order].iloc[100:110], **args)
    assert got.player_names == ref.player_names == list(groups)
    np.testing.assert_array_equal(got.values, ref.values)
    sage = dict(groups=groups, loss="log_loss", budget=6, seed=seed)
    a = fs.global_importance(LR, X6.iloc[:20], Y.iloc[:20], background=X6.iloc[100:110], **sage)
    b = fs.global_importance(LR, X6[order].iloc[:20], Y.iloc[:20], background=X6[order].iloc[100:110], **sage)
    assert a.player_names == b.player_names == list(groups)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.stderr, b.stderr)


def _word_pipeline():
    """X6 with a column of words (the band of its first feature) that a pipeline one-hot encodes."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    words = X6.assign(band=np.where(X6.iloc[:, 0] > X6.iloc[:, 0].median(), "wide", "narrow"))
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["band"]), remainder=StandardScaler()),
                         LogisticRegression(max_iter=5000)).fit(words, Y)
    return pipe, words


WORDS_PIPE, X_WORDS = _word_pipeline()


@settings(max_examples=6, deadline=None, derandomize=True)
@given(order=st.permutations(list(X_WORDS.columns)), seed=st.integers(0, 1000), budget=st.sampled_from([10, 20, 40]))
def test_global_importance_of_a_pipeline_of_words_follows_the_features_by_name(order, seed, budget):
    """A column of words the pipeline encodes, on each of auto's paths (each row's permutations at 10 coalitions,
    each row's regression at 20, the mean game's surrogate at 40): same seed, same bits in any column order."""
    args = dict(loss="log_loss", budget=budget, seed=seed)
    ref = fs.global_importance(WORDS_PIPE, X_WORDS.iloc[:20], Y.iloc[:20], background=X_WORDS.iloc[100:110], **args)
    got = fs.global_importance(WORDS_PIPE, X_WORDS[order].iloc[:20], Y.iloc[:20],
                               background=X_WORDS[order].iloc[100:110], **args)
    assert got.player_names == ref.player_names == list(X_WORDS.columns)
    assert ref.method == {10: "row-permutations", 20: "row-regressions", 40: "surrogate-regression"}[budget]
    np.testing.assert_array_equal(got.values, ref.values)
    np.testing.assert_array_equal(got.stderr, ref.stderr)


# ------------------------------------------------------------------------------ bad input, before any call
_CHECKED_BY = {        # bad values for the arguments declared with a check of their own
    "index": ["owen", 3], "seed": ["abc", -1, 2.5], "stop": ["soon", 3], "progress": ["yes", 3],
    "client": [3, "tcp://nowhere"], "cache": [3], "feature_names": ["abc", 5], "tol": [-0.1, "x", float("nan")],
    "partition": ["blocks", 3, [[0, 0]]], "tokenizer": [3, "(unclosed"], "mask_token": [0],
    "batch_size": ["x", 0, 2.5, True], "n_jobs": ["x", 0, -2, 2.5, True], "groups": ["bogus", [[0.5]]],
    "baseline": ["sky", float("nan"), [1, 2]],
    "output": ["bottom", -1, 2.5, [], [1, 1]], "patch_size": ["x", 0, 2.5, (2, 0)],
    "sigma": ["x", 0, -1.0, float("nan")], "slic": ["many", {"colour": 3}],
    "loss": ["hinge", 3], "background": [np.full((3, 6), np.nan), "rows"],
}


def _bad_values(option) -> list:
    if option.name in _CHECKED_BY:
        return _CHECKED_BY[option.name]
    if option.allowed is not None:
        return ["not-one-of-them", 1.5]
    if option.kind == "int":
        return ["x", 2.5, True] + ([option.minimum - 1] if option.minimum is not None else [])
    if option.kind == "float":
        return ["x", float("nan")] + ([option.minimum - 1] if option.minimum is not None else [])
    if option.kind == "bool":
        return ["yes", 1]
    return []


def _cases(table) -> list:
    return [(o.name, v) for o in table.options for v in _bad_values(o)]


def _explain(model, **kw):
    return fs.explain(model, X6.iloc[:2], X6.iloc[100:110], **({"budget": 50, "progress": False} | kw))


class _CountingForest(RandomForestClassifier):
    """A forest whose predictions are counted in ``counter.calls`` (the Counting model a door is given)."""

    counter = None

    def predict_proba(self, Z):
        if self.counter is not None:
            self.counter.calls += 1
        return super().predict_proba(Z)


_PIPELINE = make_pipeline(ColumnTransformer([("scale", StandardScaler(), list(X6.columns[:3]))],
                                            remainder="passthrough"),
                          _CountingForest(n_estimators=3, max_depth=3, random_state=0)).fit(X6, Y)


def _pipeline(m, **kw):
    """explain's path through a scikit-learn pipeline (raw columns, the grouped tree walk), counted into ``m``."""
    _PIPELINE.steps[-1][1].counter = m
    return fs.explain(_PIPELINE, X6.iloc[:2], X6.iloc[100:110], **({"budget": 50, "progress": False} | kw))


_TREE = _CountingForest(n_estimators=3, max_depth=3, random_state=0).fit(X6, Y)


def _tree(m, **kw):
    """explain's tree door (a tree model's own walks; groups= its grouped walk), counted into ``m``."""
    _TREE.counter = m
    return fs.explain(_TREE, X6.iloc[:2], X6.iloc[100:110], **({"budget": 50, "progress": False} | kw))


def _texts(m, **kw):
    def f(texts):
        m.calls += 1
        return np.array([[len(t), t.count("a")] for t in texts], dtype=float)

    return fs.explain(f, ["a b c, d", "", "e a"], **({"budget": 50, "progress": False} | kw))


def _sequences(m, **kw):
    def f(A):
        m.calls += 1
        return A.sum(axis=(1, 2))

    cells = np.arange(24.0).reshape(2, 4, 3)
    return fs.explain(f, cells, cells[:1] * 0, **({"budget": 50, "progress": False} | kw))


DOORS = {
    "explain": (EXPLAIN, lambda m, **kw: _explain(m, **kw)),
    "explain pipeline": (EXPLAIN, _pipeline),
    "explain tree": (EXPLAIN, _tree),
    "explain texts": (EXPLAIN, _texts),
    "explain sequences": (EXPLAIN, _sequences),
    "explain game": (EXPLAIN, lambda m, **kw: fs.explain(m.game, **({"budget": 50, "progress": False} | kw))),
    "estimate": (ESTIMATE, lambda m, **kw: fs.estimate(m.game, **({"budget": 50} | kw))),
    "exact": (EXACT, lambda m, **kw: fs.exact(m.game, **kw)),
    "value_data": (VALUE_DATA, lambda m, **kw: fs.value_data(m, X6.iloc[:30], Y.iloc[:30], X6.iloc[30:60],
                                                              Y.iloc[30:60], **({"budget": 50, "progress": False}
                                                                                | kw))),
    "value_data data-oob": (VALUE_DATA, lambda m, **kw: fs.value_data(
        m, X6.iloc[:30], Y.iloc[:30], **({"index": "data-oob", "budget": 20, "progress": False} | kw))),
    "tree_values": (TREE_ARGUMENTS, lambda m, **kw: fs.games.tree_values(FOREST, X6.iloc[:2], **kw)),
    "TreeGame": (TREE_ARGUMENTS, lambda m, **kw: fs.games.TreeGame(
        FOREST, X6.iloc[0], **{k: v for k, v in kw.items() if k != "index"})),
    "interactions": (INTERACTIONS, lambda m, **kw: fs.interactions(m.game, **({"budget": 50} | kw))),
    "tree_interactions": (TREE_INTERACTIONS, lambda m, **kw: fs.games.tree_interactions(FOREST, X6.iloc[:2], **kw)),
    "global_importance": (GLOBAL_IMPORTANCE, lambda m, **kw: fs.global_importance(
        m, X6.iloc[:20], Y.iloc[:20], **({"budget": 20, "loss": "log_loss"} | kw))),
}
BAD = [(door, name, value) for door, (table, _) in DOORS.items() for name, value in _cases(table)]


@pytest.mark.parametrize("door, name, value", BAD, ids=[f"{d}-{n}-{v!r}" for d, n, v in BAD])
def test_every_door_refuses_a_wrong_value_before_any_model_call(door, name, value):
    if door == "TreeGame" and name == "index":
        return
    if door == "explain texts" and (name, value) == ("index", "owen"):
        return                          # a text's Owen values need no partition: its sentences, phrases and words
    model = Counting()
    model.game = CountingGame(5, 0)
    call = DOORS[door][1]
    with pytest.raises((ValueError, TypeError)) as info:
        call(model, **{name: value})
    assert name in str(info.value) or name.replace("_", " ") in str(info.value), str(info.value)
    assert model.calls == 0 and model.game.calls == 0


_LABEL_DOORS = {
    "value_data y_train": ("y_train", lambda m, y: fs.value_data(m, X6.iloc[:30], y, X6.iloc[30:60], Y.iloc[30:60],
                                                                 budget=50, progress=False)),
    "value_data y_val": ("y_val", lambda m, y: fs.value_data(m, X6.iloc[:30], Y.iloc[:30], X6.iloc[30:60], y,
                                                             budget=50, progress=False)),
    "value_data data-oob": ("y_train", lambda m, y: fs.value_data(m, X6.iloc[:30], y, index="data-oob", budget=20,
                                                                  progress=False)),
    "global_importance mse": ("y", lambda m, y: fs.global_importance(m, X6.iloc[:30], y, budget=20, loss="mse")),
    "global_importance log_loss": ("y", lambda m, y: fs.global_importance(m, X6.iloc[:30], y, budget=20,
                                                                           loss="log_loss")),
}


@pytest.mark.parametrize("bad", [np.nan, np.inf, None])
@pytest.mark.parametrize("door", list(_LABEL_DOORS))
def test_every_door_refuses_a_missing_or_infinite_label_before_any_model_call(door, bad):
    name, call = _LABEL_DOORS[door]
    labels = Y.iloc[:30].astype(object if bad is None else float).copy()
    labels.iloc[3] = bad
    model = Counting()
    with pytest.raises((ValueError, TypeError), match=rf"^{name}\b"):         # the message begins with its name
        call(model, labels)
    assert model.calls == 0


def _method_door(method: str):
    """How a method is called: the first index it serves of Shapley, Banzhaf, leave-one-out, Owen and k-SII values,
    on a 5-player game."""
    spec = get_method(method)
    if spec.supports(fs.InteractionIndex("k-sii", 2)):
        return lambda m, **kw: fs.interactions(m.game, "k-sii", order=2, method=method, budget=200, **kw)
    if spec.supports(fs.indices.hierarchy.OwenIndex(fs.indices.hierarchy.Hierarchy([[0, 1], [2, 3, 4]], 5))):
        return lambda m, **kw: fs.estimate(m.game, "owen", partition=[[0, 1], [2, 3, 4]], method=method, budget=200,
                                           **kw)
    index = next(i for i in ("shapley", "banzhaf", "loo") if spec.supports(fs.indices.semivalues.resolve_index(i)))
    return lambda m, **kw: fs.estimate(m.game, index, method=method, budget=200, **kw)


METHOD_OPTIONS = [(m, o.name, v) for m in method_names() for o in get_method(m).options for v in _bad_values(o)]


@pytest.mark.parametrize("method, name, value", METHOD_OPTIONS, ids=[f"{m}-{n}-{v!r}" for m, n, v in METHOD_OPTIONS])
def test_every_method_refuses_a_wrong_option_value_before_any_evaluation(method, name, value):
    model = Counting()
    model.game = CountingGame(5, 0)
    with pytest.raises((ValueError, TypeError)) as info:
        _method_door(method)(model, **{name: value})
    assert name in str(info.value) or name.replace("_", " ") in str(info.value), str(info.value)
    assert model.game.calls == 0


@pytest.mark.parametrize("door", ["explain", "explain pipeline", "explain texts", "explain sequences", "explain game", "estimate",
                                  "exact", "value_data", "value_data data-oob", "tree_values", "interactions",
                                  "tree_interactions", "global_importance"])
def test_every_door_refuses_an_unknown_keyword_before_any_model_call(door):
    model = Counting()
    model.game = CountingGame(5, 0)
    with pytest.raises((ValueError, TypeError), match="colour"):
        DOORS[door][1](model, colour="red")
    assert model.calls == 0 and model.game.calls == 0


@PROPERTY
@given(flag=st.sampled_from([("--budget", "0"), ("--budget", "x"), ("--index", "owen"), ("--method", "nope"),
                             ("--seed", "-1"), ("--rows", "a:b")]))
def test_the_cli_refuses_a_wrong_flag_in_one_line_before_any_model_call(flag, tmp_path_factory):
    joblib = pytest.importorskip("joblib")
    folder = tmp_path_factory.mktemp("cli")
    joblib.dump(LR, folder / "m.joblib")
    X6.iloc[:5].to_csv(folder / "rows.csv", index=False)
    X6.iloc[100:110].to_csv(folder / "bg.csv", index=False)
    try:
        code = cli_main(["explain", "--model", str(folder / "m.joblib"), "--data", str(folder / "rows.csv"),
                         "--background", str(folder / "bg.csv"), "--out", str(folder / "o.csv"), "--quiet", "--trust-model", *flag])
    except SystemExit as exc:                    # argparse's own type errors (an int flag given "x")
        code = exc.code
    assert code == 2 and not (folder / "o.csv").exists()


def test_the_tables_declare_what_the_doors_take():
    """Each table lists exactly its door's keyword arguments (the tables are what the tests above draw from)."""
    import inspect

    for table, fn, skip in ((EXPLAIN, fs.explain, {"model", "X", "background", "options"}),
                            (ESTIMATE, fs.estimate, {"game", "options"}),
                            (EXACT, fs.exact, {"game"}),
                            (VALUE_DATA, fs.value_data, {"model", "X_train", "y_train", "X_val", "y_val", "options"}),
                            (INTERACTIONS, fs.interactions, {"game", "options"}),
                            (TREE_INTERACTIONS, fs.games.tree_interactions, {"model", "X", "background"}),
                            (GLOBAL_IMPORTANCE, fs.global_importance, {"model", "X", "y", "options"})):
        params = set(inspect.signature(fn).parameters) - skip
        assert params == set(table.names()), (table.door, params ^ set(table.names()))
    assert pd.api.types.is_list_like(BAD) and len(BAD) > 60


_SMALL = [(m, i, n) for m in method_names() for i in INDICES + ["loo"] for n in (2, 3, 5, 7)
          if get_method(m).supports(fs.indices.semivalues.resolve_index(i)) and not get_method(m).requires]


@pytest.mark.parametrize("method, index, n", _SMALL, ids=[f"{m}-{i}-{n}" for m, i, n in _SMALL])
def test_every_method_runs_at_any_budget_covering_every_coalition(method, index, n):
    """At a budget of 2^n every registry method runs, or gives the exact values instead and says so; never more
    evaluations than the budget."""
    game = CountingGame(n, n)
    phi = fs.estimate(game, index, method=method, budget=1 << n, seed=0)
    assert phi.n_evaluations <= 1 << n and np.all(np.isfinite(phi.values))
    if phi.method != method:
        assert phi.method == "exact" and "exact values instead" in phi.info["choice"]["why"]
        np.testing.assert_allclose(phi.values, fs.exact(game, index).values, atol=1e-12)


# ------------------------------------------------------------------------------ interaction values: the same promises
_IQ_METHODS = ["auto", "exact"] + [m for m in method_names() if get_method(m).supports(fs.InteractionIndex("sii", 2))]


@PROPERTY
@given(n=st.integers(2, 8), game_seed=st.integers(0, 10**6), seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 64),
       index=st.sampled_from(list(INTERACTION_INDEX_NAMES)), data=st.data())
def test_interactions_same_seed_same_values_whatever_the_batch_size(n, game_seed, seed, batch, index, data):
    order = data.draw(st.integers(1, min(n, 3)), label="order")
    ix = fs.InteractionIndex(index, order)
    methods = [m for m in _IQ_METHODS if m in ("auto", "exact") or get_method(m).supports(ix)]
    method = data.draw(st.sampled_from(methods), label="method")
    need = get_method("iq-regression" if method == "auto" else method).budget_needed(CountingGame(n, 0), ix) \
        if method != "exact" else 2
    budget = None if method == "exact" else data.draw(st.integers(max(need, 4), max(need, 4) + 200), label="budget")
    runs = [fs.interactions(CountingGame(n, game_seed, batch_size=b), ix, method=method, budget=budget, seed=seed)
            for b in (None, batch)]
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    np.testing.assert_array_equal(runs[0].stderr, runs[1].stderr)
    assert runs[0].method == runs[1].method and runs[0].n_evaluations == runs[1].n_evaluations
    assert budget is None or runs[0].n_evaluations <= budget


@PROPERTY
@given(n=st.integers(3, 10), cap=st.integers(1, 300), seed=st.integers(0, 1000),
       index=st.sampled_from(list(INTERACTION_INDEX_NAMES)))
def test_interactions_never_exceed_max_evaluations(n, cap, seed, index):
    game = CountingGame(n, seed)
    try:
        res = fs.interactions(game, index, order=2, budget=10_000, seed=seed, stop=RelativeError(1e-9) | MaxEvaluations(cap))
    except fs.BudgetError as exc:                 # a cap below the method's minimum: refused before any call
        assert game.calls == 0 and "too small" in str(exc)
        return
    assert res.n_evaluations <= cap and game.n_evaluations <= cap


@settings(max_examples=4, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000))
def test_value_data_reads_the_validation_columns_by_name(order, seed):
    """Same seed, same bits, with X_val's columns in any order (matched to X_train's by name, as at every door)."""
    model = LogisticRegression(max_iter=5000)
    args = dict(budget=40, seed=seed, progress=False)
    ref = fs.value_data(model, X6.iloc[:30], Y.iloc[:30], X6.iloc[30:60], Y.iloc[30:60], **args)
    got = fs.value_data(model, X6.iloc[:30], Y.iloc[:30], X6[order].iloc[30:60], Y.iloc[30:60], **args)
    np.testing.assert_array_equal(got.values, ref.values)
    np.testing.assert_array_equal(got.stderr, ref.stderr)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000))
def test_explain_interactions_follow_the_features_by_name(order, seed):
    args = dict(budget=40, seed=seed, progress=False, interactions=2)
    for model in (LR.predict_proba, FOREST):
        background = X6.iloc[100:130] if model is not FOREST else None
        ref = fs.explain(model, X6.iloc[:2], background, **args)
        got = fs.explain(model, X6[order].iloc[:2], None if background is None else background[order], **args)
        np.testing.assert_array_equal(got.interactions, ref.interactions)
        np.testing.assert_array_equal(got.interactions_stderr, ref.interactions_stderr)


_SMALL_IQ = [(m, i, n) for m in _IQ_METHODS[2:] for i in INTERACTION_INDEX_NAMES for n in (2, 3, 5)
             if get_method(m).supports(fs.InteractionIndex(i, 2))]


@pytest.mark.parametrize("method, index, n", _SMALL_IQ, ids=[f"{m}-{i}-{n}" for m, i, n in _SMALL_IQ])
def test_every_interaction_method_is_exact_at_a_budget_covering_every_coalition(method, index, n):
    """The designs of distinct coalitions take every coalition and are exact; permutation sampling draws
    permutations (not coalitions), runs within the budget and gives finite values, or says it needs more."""
    game = CountingGame(n, 3)
    try:
        res = fs.interactions(game, index, order=2, method=method, budget=1 << n, seed=0)
    except fs.BudgetError as exc:
        assert method == "iq-permutation" and "too small" in str(exc) and game.calls == 0
        return
    assert res.n_evaluations <= 1 << n
    if method == "iq-permutation":
        assert np.all(np.isfinite(res.values))
        return
    exact = fs.interactions(CountingGame(n, 3), index, order=2, method="exact")
    np.testing.assert_allclose(res.values, exact.values, atol=1e-9)


# ------------------------------------------------------------------------------ conditional imputation: the same promises
@settings(max_examples=10, deadline=None, derandomize=True)
@given(imputation=st.sampled_from(["gaussian", "copula", "empirical"]), seed=st.integers(0, 1000),
       batch=st.integers(1, 500), jobs=st.integers(1, 3), order=st.permutations(list(X6.columns)))
def test_conditional_imputation_same_seed_same_values_whatever_the_batch_threads_and_column_order(
        imputation, seed, batch, jobs, order):
    """Common random numbers: the same values in any batch size, with threads, and with the columns reordered
    (aligned by name); the imputation is recorded."""
    args = dict(budget=60, seed=seed, progress=False, imputation=imputation)
    ref = fs.explain(LR.predict_proba, X6.iloc[:2], X6.iloc[100:300], **args)
    got = fs.explain(LR.predict_proba, X6.iloc[:2], X6.iloc[100:300], batch_size=batch, n_jobs=jobs, **args)
    np.testing.assert_array_equal(got.values, ref.values)
    shuffled = fs.explain(LR.predict_proba, X6[order].iloc[:2], X6[order].iloc[100:300], **args)
    assert ref.info["imputation"].startswith(imputation) and shuffled.info["imputation"] == ref.info["imputation"]
    np.testing.assert_array_equal(shuffled[:, list(X6.columns)].values, ref.values)


# ------------------------------------------------------------------------------------- Owen values, new inputs
def _hierarchy(draw, n):
    """A random nested partition of range(n) (up to 3 levels)."""
    players = draw(st.permutations(list(range(n))))

    def split(items, depth):
        if depth == 0 or len(items) == 1:
            return list(items)
        cuts = sorted(set(draw(st.lists(st.integers(1, len(items) - 1), max_size=3))))
        parts = [items[a:b] for a, b in zip([0] + cuts, cuts + [len(items)])]
        return [split(p, depth - 1) for p in parts]

    return split(players, draw(st.integers(1, 3)))


_OWEN_METHODS = [m for m in method_names() if "owen" in get_method(m).indices and m != "exact"]


@PROPERTY
@given(n=st.integers(2, 9), game_seed=st.integers(0, 10**6), seed=st.integers(0, 2**32 - 1), data=st.data(),
       batch=st.integers(1, 64), cap=st.integers(1, 300))
def test_owen_same_seed_same_values_whatever_the_batch_size_block_order_and_cap(n, game_seed, seed, data, batch,
                                                                                 cap):
    partition = _hierarchy(data.draw, n)
    shuffled = data.draw(st.permutations(partition), label="blocks in another order")
    method = data.draw(st.sampled_from(_OWEN_METHODS), label="method")
    budget = data.draw(st.integers(n + 2, 4 * n + 40), label="budget")        # discovery and whole orders alike
    runs = [fs.estimate(CountingGame(n, game_seed, batch_size=b), "owen", partition=partition,
                        method=method, budget=budget, seed=seed) for b in (None, batch)]
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    np.testing.assert_array_equal(runs[0].stderr, runs[1].stderr)
    exact = fs.exact(CountingGame(n, game_seed), "owen", partition=partition).values
    np.testing.assert_allclose(fs.exact(CountingGame(n, game_seed), "owen", partition=shuffled).values, exact,
                               atol=1e-12)
    game = CountingGame(n, game_seed)
    try:
        capped = fs.estimate(game, "owen", partition=partition, budget=10_000, seed=seed,
                             stop=RelativeError(1e-9) | MaxEvaluations(cap))
    except fs.BudgetError:
        assert game.calls == 0
        return
    assert capped.n_evaluations <= cap and game.n_evaluations <= cap


@settings(max_examples=8, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns)), seed=st.integers(0, 1000), method=st.sampled_from(_OWEN_METHODS))
def test_explain_owen_follows_the_features_by_name(order, seed, method):
    partition = [["mean radius", "mean perimeter", "mean area"], ["mean texture"],
                 ["mean smoothness", "mean compactness"]]
    args = dict(index="owen", partition=partition, budget=20, seed=seed, progress=False)   # below the exact cost
    ref = fs.explain(LR.predict_proba, X6.iloc[:2], X6.iloc[100:120], method=method, **args)
    got = fs.explain(LR.predict_proba, X6[order].iloc[:2], X6[order].iloc[100:120], method=method, **args)
    assert got.player_names == ref.player_names == list(X6.columns)
    np.testing.assert_array_equal(got.values, ref.values)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 1000), batch=st.integers(1, 50), n_jobs=st.sampled_from([1, 2, -1]),
       groups=st.sampled_from([None, "time", ("time", 2), "features"]))
def test_shaped_inputs_same_seed_same_values_whatever_the_batch_and_threads(seed, batch, n_jobs, groups):
    rng = np.random.default_rng(0)
    cells = rng.normal(size=(12, 5, 3))
    f = lambda A: np.tanh(A[:, :, 0] @ np.arange(5.0)) * A[:, 2, 1] + A.sum(axis=(1, 2))   # noqa: E731
    args = dict(groups=groups, budget=60, seed=seed, progress=False)
    ref = fs.explain(f, cells[:3], cells[6:], **args)
    got = fs.explain(f, cells[:3], cells[6:], batch_size=batch, n_jobs=n_jobs, **args)
    np.testing.assert_array_equal(got.values, ref.values)
    assert got.input_values().shape == (3, 5, 3)


def _catboost_frame():
    """X6 with two categorical columns as catboost takes them: strings (one-hot splits) and integers (CTRs)."""
    frame = X6.copy()
    frame["band"] = np.array(["low", "mid", "high"])[np.digitize(X6.iloc[:, 0], X6.iloc[:, 0].quantile([0.33, 0.66]))]
    frame["decile"] = np.digitize(X6.iloc[:, 1], X6.iloc[:, 1].quantile(np.linspace(0.1, 0.9, 9)))
    return frame


@settings(max_examples=8, deadline=None, derandomize=True)
@given(order=st.permutations(list(X6.columns) + ["band", "decile"]), seed=st.integers(0, 1000),
       batch=st.sampled_from([None, 1, 7]), n_jobs=st.sampled_from([1, 2, -1]),
       output=st.sampled_from(["raw", "probability", "log_loss"]), budget=st.sampled_from([60, 256]))
def test_tree_outputs_and_catboost_categories_follow_features_by_name_whatever_batch_and_threads(
        order, seed, batch, n_jobs, output, budget):
    """Probabilities and losses from a table of every coalition, categories read through catboost's hash: the same
    bits whatever the column order, the batch size and the threads, sampled (60) or exact (256 = 2^8)."""
    cb = pytest.importorskip("catboost")
    frame = _catboost_frame()
    model = _catboost_model(cb, frame)
    rows, bg = frame.iloc[:2], frame.iloc[100:120]
    y = Y.iloc[:2].to_numpy() if output == "log_loss" else None
    method = "regression" if budget == 60 and output != "raw" else "auto"     # the sampled path, not the table
    args = dict(budget=budget, seed=seed, model_output=output, y=y, method=method, progress=False)
    ref = fs.explain(model, rows, bg, **args)
    got = fs.explain(model, rows[order], bg[order], batch_size=batch, n_jobs=n_jobs, **args)
    assert got.player_names == ref.player_names == list(frame.columns)
    np.testing.assert_array_equal(got.values, ref.values)
    assert ref.method == ("exact" if budget == 256 or output == "raw" else "regression")


_CATBOOST = {}


def _catboost_model(cb, frame):
    if "model" not in _CATBOOST:                        # one-hot for band (3 values), a CTR for decile (10 values)
        _CATBOOST["model"] = cb.CatBoostClassifier(iterations=30, depth=4, max_ctr_complexity=1, one_hot_max_size=4,
                                                   verbose=0, random_seed=0, thread_count=1,
                                                   allow_writing_files=False).fit(frame, Y,
                                                                                  cat_features=["band", "decile"])
    return _CATBOOST["model"]


# ------------------------------------------------------------------------------------ tree models: no call refused
# A tree model is planned on its trees as read, without a model call; the reading is checked against the model's
# own predictions (48 rows), an xgboost or lightgbm base found (1 row) and a probability's link found (up to 20
# rows) only before the first value. A refused argument used to cost those rows first.

def _tree_models() -> dict:
    xgb, lgb = pytest.importorskip("xgboost"), pytest.importorskip("lightgbm")
    return {"forest": RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X6, Y),
            "xgboost": xgb.XGBClassifier(n_estimators=5, max_depth=3, base_score=0.3).fit(X6, Y),
            "lightgbm": lgb.LGBMClassifier(n_estimators=5, num_leaves=7, verbose=-1).fit(X6, Y)}


@pytest.fixture(scope="module")
def tree_models() -> dict:
    return _tree_models()


def _counted(model, monkeypatch) -> list:
    """The rows ``model`` (and its booster) predicts from now on, counted in ``rows[0]``; its reading forgotten."""
    from fairshare.trees.prepared import forget

    forget()
    rows = [0]
    for owner in (model, getattr(model, "_Booster", None)):
        for name in ("predict", "predict_proba", "decision_function"):
            method = getattr(owner, name, None) if owner is not None else None
            if method is None:
                continue

            def counting(Z, *args, _method=method, **kwargs):
                rows[0] += Z.num_row() if hasattr(Z, "num_row") else len(Z)
                return _method(Z, *args, **kwargs)

            monkeypatch.setattr(owner, name, counting)
    return rows


_BG = X6.iloc[100:110]
_COLS = list(X6.columns)
_INTERVENTIONAL = dict(mode="interventional", background=_BG)
BAD_TREE_CALLS = {
    "explain budget": lambda m: fs.explain(m, X6.iloc[:2], _BG, method="kernelshap", budget=3, progress=False),
    "explain path-dependent budget": lambda m: fs.explain(m, X6.iloc[:2], method="kernelshap", budget=3,
                                                          progress=False),
    "explain probability budget": lambda m: fs.explain(m, X6.iloc[:2], _BG, model_output="probability",
                                                       method="kernelshap", budget=3, progress=False),
    "explain log_loss budget": lambda m: fs.explain(m, X6.iloc[:2], _BG, model_output="log_loss", y=Y.iloc[:2],
                                                    method="kernelshap", budget=3, progress=False),
    "explain option": lambda m: fs.explain(m, X6.iloc[:2], _BG, method="regression", distribution="nope",
                                           budget=100, progress=False),
    "explain interactions budget": lambda m: fs.explain(m, X6.iloc[:2], _BG, interactions=2, method="iq-regression",
                                                        budget=3, progress=False),
    "explain owen budget": lambda m: fs.explain(m, X6.iloc[:2], _BG, index="owen", partition=[_COLS[:2], _COLS[2:]],
                                                method="owen-permutation", budget=3, progress=False),
    "explain owen partition": lambda m: fs.explain(m, X6.iloc[:2], _BG, index="owen",
                                                   partition=[[_COLS[0], "nope"]], progress=False),
    "explain X columns": lambda m: fs.explain(m, X6.iloc[:2, :5].to_numpy(), _BG.to_numpy(), progress=False),
    "TreeGame budget": lambda m: fs.estimate(fs.games.TreeGame(m, X6.iloc[0], **_INTERVENTIONAL),
                                             method="kernelshap", budget=3),
    "TreeGame probability budget": lambda m: fs.estimate(fs.games.TreeGame(
        m, X6.iloc[0], model_output="probability", **_INTERVENTIONAL), method="kernelshap", budget=3),
    "TreeGame log_loss label": lambda m: fs.games.TreeGame(m, X6.iloc[0], model_output="log_loss", y=5,
                                                           **_INTERVENTIONAL),
    "TreeGame interactions budget": lambda m: fs.interactions(fs.games.TreeGame(m, X6.iloc[0], **_INTERVENTIONAL),
                                                              "k-sii", order=2, method="iq-regression", budget=3),
    "tree_values mode": lambda m: fs.games.tree_values(m, X6.iloc[:2], mode="interventional"),
    "tree_interactions order": lambda m: fs.games.tree_interactions(m, X6.iloc[:2], index="k-sii", order=9),
    "tree_interactions shap order": lambda m: fs.games.tree_interactions(m, X6.iloc[:2], order=3),
}
_TREE_CASES = [(lib, case) for lib in ("forest", "xgboost", "lightgbm") for case in BAD_TREE_CALLS]


@pytest.mark.parametrize("lib, case", _TREE_CASES, ids=[f"{lib}-{case}" for lib, case in _TREE_CASES])
def test_a_tree_model_refuses_a_bad_argument_before_any_model_call(tree_models, lib, case, monkeypatch):
    model = tree_models[lib]
    rows = _counted(model, monkeypatch)
    with pytest.raises(ValueError):
        BAD_TREE_CALLS[case](model)
    assert rows[0] == 0, f"{rows[0]} rows predicted before the refusal"


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("output", [None, "probability"])
def test_a_pipeline_of_a_tree_model_refuses_a_bad_budget_before_any_model_call(tree_models, lib, output,
                                                                                monkeypatch):
    """The pipeline's door planned on the unchecked reading already, but reading xgboost's and lightgbm's trees
    predicted one row (their base), now found with the check."""
    from sklearn.base import clone

    pipe = make_pipeline(ColumnTransformer([("scale", StandardScaler(), _COLS[:3])], remainder="passthrough"),
                         clone(tree_models[lib])).fit(X6, Y)
    final = pipe.steps[-1][1]
    rows = _counted(final, monkeypatch)
    with pytest.raises(fs.BudgetError):
        fs.explain(pipe, X6.iloc[:2], _BG, model_output=output, method="kernelshap", budget=3, progress=False)
    assert rows[0] == 0
    e = fs.explain(pipe, X6.iloc[:2], _BG, model_output=output, progress=False)
    assert rows[0] >= 49 and e.info["pipeline"]["exact"]                         # checked (and settled) first
    bare = fs.explain(final, pipe[:-1].transform(X6.iloc[:2]), pipe[:-1].transform(_BG),
                      model_output=output, progress=False)                      # the same trees on scaled columns
    np.testing.assert_allclose(e.values, bare.values, atol=1e-12)


@pytest.mark.parametrize("lib", ["forest", "xgboost", "lightgbm"])
def test_a_good_call_after_a_refused_one_checks_the_reading_once_and_gives_the_eager_readings_values(
        tree_models, lib, monkeypatch):
    """After a refusal that cost nothing, the first value checks the reading (48 rows, and xgboost's and lightgbm's
    base: 1 row), once per model, and the values are those of the trees read and checked up front."""
    from fairshare.trees import read_ensemble

    model = tree_models[lib]
    eager = read_ensemble(model)                                      # read, settled and checked at once
    rows = _counted(model, monkeypatch)
    with pytest.raises(fs.BudgetError):
        BAD_TREE_CALLS["explain budget"](model)
    assert rows[0] == 0
    e = fs.explain(model, X6.iloc[:3], _BG, progress=False)
    check = rows[0]
    assert check == 48 + (lib != "forest")
    ref = fs.explain(eager, X6.iloc[:3].to_numpy(), _BG.to_numpy(), progress=False)
    np.testing.assert_array_equal(e.values, ref.values)
    np.testing.assert_array_equal(e.empty_value, ref.empty_value)
    np.testing.assert_array_equal(fs.games.tree_values(model, X6.iloc[:3]).values,
                                  fs.games.tree_values(eager, X6.iloc[:3].to_numpy()).values)
    game = fs.games.TreeGame(model, X6.iloc[0], model_output="probability", **_INTERVENTIONAL)
    assert rows[0] == check                                            # checked once: no row until the link is asked
    phi = fs.exact(game)
    assert game.link == {"forest": "identity"}.get(lib, "logistic") and rows[0] > check     # found on the rows

    def mean_proba(S):                                                 # the model's own predict_proba, averaged
        hybrid = np.where(S[:, None, :], X6.iloc[0].to_numpy()[None, None, :], _BG.to_numpy()[None, :, :])
        p = model.predict_proba(pd.DataFrame(hybrid.reshape(-1, 6), columns=_COLS))
        return p.reshape(S.shape[0], len(_BG), -1).mean(axis=1)

    np.testing.assert_allclose(phi.values, fs.exact(fs.games.FunctionGame(mean_proba, n_players=6)).values,
                               atol=1e-6)                             # (xgboost's predict_proba: float32)


def test_a_misread_tree_model_is_refused_at_the_first_value_after_every_argument(monkeypatch):
    """The check still guards the values: a reading that does not reproduce the model is refused before any value,
    but only once the arguments are accepted (a bad budget is said first, with no model call)."""
    from fairshare.trees.readers.sklearn import SklearnReader

    model = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=1).fit(X6, Y)
    read = SklearnReader.read

    def misread(self, m):
        ens = read(self, m)
        ens.value = ens.value * 1.5                                    # leaves off by half their value
        return ens

    monkeypatch.setattr(SklearnReader, "read", misread)
    rows = _counted(model, monkeypatch)
    with pytest.raises(fs.BudgetError, match="budget=3 is too small"):
        fs.explain(model, X6.iloc[:2], _BG, method="kernelshap", budget=3, progress=False)
    assert rows[0] == 0
    for call in (lambda: fs.explain(model, X6.iloc[:2], _BG, progress=False),
                 lambda: fs.exact(fs.games.TreeGame(model, X6.iloc[0], **_INTERVENTIONAL)),
                 lambda: fs.games.tree_values(model, X6.iloc[:2]),
                 lambda: fs.games.tree_interactions(model, X6.iloc[:2])):
        with pytest.raises(ValueError, match="does not reproduce its predictions"):
            call()
    assert rows[0] == 4 * 48                                           # a failed check is not remembered


@pytest.mark.parametrize("lib", ["forest", "xgboost", "lightgbm"])
def test_the_cli_refuses_a_bad_budget_for_a_saved_tree_model_before_any_model_call(tree_models, lib,
                                                                                   tmp_path, monkeypatch):
    import joblib

    model = tree_models[lib]
    path = tmp_path / {"forest": "m.joblib", "xgboost": "m.json", "lightgbm": "m.txt"}[lib]
    if lib == "forest":
        joblib.dump(model, path)
    else:
        (model.get_booster() if lib == "xgboost" else model.booster_).save_model(str(path))
    owner = {"forest": RandomForestClassifier, "xgboost": pytest.importorskip("xgboost").Booster,
             "lightgbm": pytest.importorskip("lightgbm").Booster}[lib]
    rows = [0]
    for name in ("predict", "predict_proba"):
        method = getattr(owner, name, None)
        if method is not None:
            monkeypatch.setattr(owner, name, lambda self, Z, *a, _m=method, **k: rows.__setitem__(
                0, rows[0] + (Z.num_row() if hasattr(Z, "num_row") else len(Z))) or _m(self, Z, *a, **k))
    X6.iloc[:3].to_csv(tmp_path / "rows.csv", index=False)
    _BG.to_csv(tmp_path / "bg.csv", index=False)
    base = ["explain", "--model", str(path), "--data", str(tmp_path / "rows.csv"), "--background",
            str(tmp_path / "bg.csv"), "--out", str(tmp_path / "o.csv"), "--quiet", "--trust-model"]
    assert cli_main(base + ["--method", "kernelshap", "--budget", "3"]) == 2 and rows[0] == 0
    assert not (tmp_path / "o.csv").exists()
    assert cli_main(base) == 0 and rows[0] >= 48                       # a good call checks the reading


_LEVELS = pd.DataFrame(np.random.default_rng(7).integers(0, 3, size=(160, 7)), columns=[f"c{i}" for i in range(7)])
_LEVELS_LR = LogisticRegression(max_iter=2000).fit(_LEVELS, (_LEVELS.c0 * _LEVELS.c1 + _LEVELS.c2 > 3).astype(int))


@settings(max_examples=10, deadline=None, derandomize=True)
@given(order=st.permutations(list(_LEVELS.columns)), seed=st.integers(0, 1000), rows=st.integers(1, 3),
       n_jobs=st.sampled_from([1, 2]), index=st.sampled_from(INDICES), budget=st.sampled_from([20, 40, 80]))
def test_a_split_row_gives_each_feature_its_value_in_any_column_order(order, seed, rows, n_jobs, index, budget):
    """Rows of levels over 16 background rows: auto splits each row into one part per background row
    (engine/split.py); same seed, same bits in any column order and thread count, within the budget; an unknown
    option and a bad budget refused before any model call."""
    model = Counting(_LEVELS_LR)
    bg = _LEVELS.iloc[100:116]
    args = dict(index=index, budget=budget, seed=seed, progress=False)
    ref = fs.explain(model, _LEVELS.iloc[:rows], bg, **args)
    got = fs.explain(model, _LEVELS[order].iloc[:rows], bg[order], n_jobs=n_jobs, **args)
    assert ref.info["choice"]["split_rows"] == rows
    assert got.player_names == ref.player_names == list(_LEVELS.columns)
    np.testing.assert_array_equal(got.values, ref.values)
    assert np.all(ref.n_evaluations <= budget)
    model.calls = 0
    with pytest.raises(ValueError, match="unknown option.*colour"):
        fs.explain(model, _LEVELS[order].iloc[:rows], bg[order], colour=1, **args)
    with pytest.raises((ValueError, fs.BudgetError), match="budget"):
        fs.explain(model, _LEVELS[order].iloc[:rows], bg[order], budget=0, seed=seed, progress=False)
    assert model.calls == 0
