"""Budgets are counted at the model (issue 43.5): whatever ``explain`` picks for tables, interaction values, texts and
sequences, the model sees at most ``budget`` coalitions per explained row (the rows it is called on divided by the
background rows each coalition is imputed over), the values and the interaction values together; a budget no
method can work with is refused before any model call."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import fairshare as fs

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


class Counted:
    """A model (a function of rows) that counts the rows it is called on."""

    def __init__(self, fn) -> None:
        self.fn, self.rows, self.calls = fn, 0, 0

    def __call__(self, X):
        self.rows += len(X)
        self.calls += 1
        return self.fn(X)


def table_model(n: int, outputs: int | None) -> Counted:
    w = np.linspace(-1.0, 1.5, n)

    def f(X):
        X = np.asarray(X, dtype=float)
        y = np.tanh(X @ w) + X[:, 0] * X[:, -1]
        return y if outputs is None else np.stack([y, 1.0 - y], axis=1)

    return Counted(f)


class Expensive(Counted):
    """The same, declaring itself costly (nearest neighbours over a million rows, by the cost model): auto's tree
    control variates pay for themselves there."""

    n_samples_fit_ = 10**6
    n_neighbors = 5


def explained(model: Counted, *args, **kwargs):
    """``fs.explain`` quietly; None where the budget is refused (then the model was not called)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fs.FairshareWarning)
            return fs.explain(model, *args, progress=False, **kwargs)
    except fs.BudgetError as exc:
        assert model.calls == 0, exc
        assert "too small" in str(exc)
        return None


def test_values_and_interactions_together_stay_within_the_budget():
    """The issue: explain(..., interactions=2, budget=150) called the model on 196-258 coalitions per row (the
    values' 150, then the interactions' own). Both now come from one run of at most 150 coalitions per row."""
    rng = np.random.default_rng(0)
    X, bg = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    model = table_model(8, None)
    e = fs.explain(model, X, background=bg, interactions=2, budget=150, seed=0, progress=False)
    assert model.rows / 5 <= 150 * 3, model.rows / 5
    assert np.all(e.n_evaluations <= 150)
    assert e.info["interactions"]["n_evaluations"] == 0          # read from the values' run: no call of its own


BUDGETS = st.one_of(st.integers(1, 60), st.integers(60, 700), st.integers(700, 5000))


@PROPERTY
@given(n=st.integers(2, 13), rows=st.integers(1, 2), bg=st.integers(1, 4), outputs=st.sampled_from([None, 2]),
       index=st.sampled_from(["shapley", "banzhaf", "beta-shapley", "owen"]), pairs=st.sampled_from([None, 2]),
       budget=BUDGETS, seed=st.integers(0, 1000))
def test_tables_never_call_the_model_past_the_budget(n, rows, bg, outputs, index, pairs, budget, seed):
    rng = np.random.default_rng(seed)
    X, background = rng.normal(size=(rows, n)), rng.normal(size=(bg, n))
    model = table_model(n, outputs)
    if index in ("beta-shapley", "owen"):
        pairs = None                                  # interaction values extend Shapley and Banzhaf values
    partition = [list(range(n // 2)), list(range(n // 2, n))] if index == "owen" and n > 2 else None
    if index == "owen" and partition is None:
        index = "shapley"
    e = explained(model, X, background=background, index=index, partition=partition, interactions=pairs,
                  budget=budget, seed=seed)
    if e is not None:
        assert model.rows / bg <= budget * rows, (model.rows / bg, budget, e.method, e.info["choice"])
        assert np.all(e.n_evaluations <= budget)
        event(f"{e.method}{' + interactions' if pairs else ''}")
    else:
        event("refused")


@PROPERTY
@given(words=st.lists(st.integers(1, 16), min_size=1, max_size=2), index=st.sampled_from(["shapley", "banzhaf",
                                                                                          "owen"]),
       budget=BUDGETS, seed=st.integers(0, 1000))
def test_texts_never_call_the_model_past_the_budget(words, index, budget, seed):
    vocabulary = ["good", "bad", "not", "very", "film", "plot", "dull", "fine", ".", ","]
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(vocabulary, size=w)) for w in words]
    model = Counted(lambda ts: np.array([t.count("good") - 2.0 * t.count("bad") + 0.5 * ("not" in t) for t in ts]))
    e = explained(model, texts, index=index, budget=budget, seed=seed)
    if e is not None:
        assert model.rows <= budget * len(texts), (model.rows, budget, [x.method for x in e])
        for x in e:
            event(x.method)


@PROPERTY
@given(steps=st.integers(2, 6), features=st.integers(1, 2), rows=st.integers(1, 2), bg=st.integers(1, 3),
       pairs=st.sampled_from([None, 2]), budget=BUDGETS, seed=st.integers(0, 1000))
def test_sequences_never_call_the_model_past_the_budget(steps, features, rows, bg, pairs, budget, seed):
    rng = np.random.default_rng(seed)
    X, background = rng.normal(size=(rows, steps, features)), rng.normal(size=(bg, steps, features))
    w = rng.normal(size=(steps, features))
    model = Counted(lambda Z: np.tanh(np.einsum("mtf,tf->m", np.asarray(Z), w)) + np.asarray(Z)[:, 0, 0] ** 2)
    e = explained(model, X, background=background, interactions=pairs, budget=budget, seed=seed)
    if e is not None:
        assert model.rows / bg <= budget * rows, (model.rows / bg, budget, e.method)
        event(f"{e.method}{' + interactions' if pairs else ''}")


@pytest.mark.parametrize("budget", [10, 37, 38, 200])
def test_interaction_budgets_below_the_minimum_are_refused_before_any_call(budget):
    """8 features: SII of pairs needs the two ends and 8 + 28 coalitions (38); below, explain refuses, naming it."""
    rng = np.random.default_rng(1)
    model = table_model(8, None)
    if budget < 38:
        with pytest.raises(fs.BudgetError, match="accept is 38 "):
            fs.explain(model, rng.normal(size=(2, 8)), background=rng.normal(size=(3, 8)), interactions=2,
                       budget=budget, progress=False)
        assert model.calls == 0
    else:
        e = fs.explain(model, rng.normal(size=(2, 8)), background=rng.normal(size=(3, 8)), interactions=2,
                       budget=budget, seed=0, progress=False)
        assert model.rows / 3 <= 2 * budget and e.interactions.shape == (2, 8, 8)


_BLOCKS = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
#: (what, features, budget, explain's arguments, the method auto picks): every method auto picks for tables,
#: sequences (flattened: the same game) and interaction values
_TABLES = [
    ("exact", 6, 64, {}, "exact"), ("permutation", 12, 20, {}, "permutation"),
    ("surrogate-regression", 12, 300, {}, "surrogate-regression"),
    ("regression-cv", 12, 300, {"expensive": True}, "regression-cv"),
    ("banzhaf", 12, 20, {"index": "banzhaf"}, "surrogate-regression"),
    ("kernel-banzhaf-cv", 12, 300, {"index": "banzhaf", "expensive": True}, "kernel-banzhaf-cv"),
    ("beta", 12, 300, {"index": "beta-shapley"}, "surrogate-regression"),
    ("semivalue-regression", 12, 60, {"index": "beta-shapley"}, "semivalue-regression"),   # below 2 + n + C(n, 2)
    ("owen-adaptive", 12, 100, {"index": "owen", "partition": _BLOCKS}, "owen-adaptive"),
    ("owen exact", 12, 300, {"index": "owen", "partition": _BLOCKS}, "exact"),
    ("pairs exact", 6, 64, {"interactions": 2}, "exact"), ("pairs", 12, 150, {"interactions": 2}, "iq-regression"),
    ("banzhaf pairs", 12, 150, {"index": "banzhaf", "interactions": 2}, "iq-regression"),
    ("pairs of an expensive model", 12, 300, {"interactions": 2, "expensive": True}, "iq-regression"),
    ("pairs, default budget", 13, None, {"interactions": 2}, "iq-regression"),
]


@pytest.mark.parametrize("what, n, budget, kwargs, method", _TABLES, ids=[c[0] for c in _TABLES])
def test_every_method_auto_picks_for_tables_stays_within_the_budget(what, n, budget, kwargs, method):
    rng = np.random.default_rng(3)
    kwargs = dict(kwargs)
    model = table_model(n, 2)
    if kwargs.pop("expensive", False):
        model = Expensive(model.fn)
    e = fs.explain(model, rng.normal(size=(2, n)), background=rng.normal(size=(3, n)), budget=budget, seed=0,
                   progress=False, **kwargs)
    assert e.method == method, e.info["choice"]
    budget = e.info["budget"]
    assert model.rows / 3 <= 2 * budget and np.all(e.n_evaluations <= budget), (model.rows / 3, budget)


_SEQUENCES = [("exact", 3, None, "exact"), ("permutation", 6, 20, "permutation"),
              ("surrogate-regression", 6, 200, "surrogate-regression"), ("pairs", 6, 200, "iq-regression")]


@pytest.mark.parametrize("what, steps, budget, method", _SEQUENCES, ids=[c[0] for c in _SEQUENCES])
def test_every_method_auto_picks_for_sequences_stays_within_the_budget(what, steps, budget, method):
    rng = np.random.default_rng(4)
    X, background = rng.normal(size=(2, steps, 2)), rng.normal(size=(3, steps, 2))
    model = Counted(lambda Z: np.tanh(np.asarray(Z).sum(axis=(1, 2))) + np.asarray(Z)[:, 0, 0] * np.asarray(Z)[:, -1, 1])
    e = fs.explain(model, X, background=background, budget=budget, seed=0, progress=False,
                   interactions=2 if what == "pairs" else None)
    assert e.method == method, e.info["choice"]
    assert model.rows / 3 <= 2 * e.info["budget"]


_TEXTS = [("exact", 4, 32, {}, "exact"), ("permutation", 14, 20, {}, "permutation"),
          ("surrogate-regression", 14, 300, {}, "surrogate-regression"),
          ("banzhaf", 14, 300, {"index": "banzhaf"}, "surrogate-regression"),
          ("owen-adaptive", 14, 60, {"index": "owen"}, "owen-adaptive")]


@pytest.mark.parametrize("what, words, budget, kwargs, method", _TEXTS, ids=[c[0] for c in _TEXTS])
def test_every_method_auto_picks_for_texts_stays_within_the_budget(what, words, budget, kwargs, method):
    vocabulary = ["good", "bad", "not", "very", "film", "plot", "dull", "fine", "and", "but"]
    rng = np.random.default_rng(5)
    text = " ".join(rng.choice(vocabulary, size=words // 2)) + ". " + " ".join(rng.choice(vocabulary, size=words // 2))
    model = Counted(lambda ts: np.array([t.count("good") - 2.0 * t.count("bad") + 0.5 * ("not" in t) for t in ts]))
    e = fs.explain(model, [text, text.upper()], budget=budget, seed=0, progress=False, **kwargs)
    assert [x.method for x in e] == [method, method], e[0].info["choice"]
    assert model.rows <= 2 * budget
