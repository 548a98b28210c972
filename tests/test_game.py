import numpy as np
import pytest

import fairshare as fs
from fairshare.engine.exact import all_coalitions


def size_game(n=4, **kw):
    return fs.games.FunctionGame(lambda S: S.sum(axis=1).astype(float), n_players=n, **kw)


def test_call_counts_and_returns_floats():
    g = size_game()
    out = g(np.array([[1, 0, 0, 1], [0, 0, 0, 0]], dtype=bool))
    np.testing.assert_array_equal(out, [2.0, 0.0])
    assert out.dtype == float
    assert g.n_evaluations == 2
    g.reset_evaluations()
    assert g.n_evaluations == 0


def test_zero_one_integers_are_accepted():
    assert size_game()(np.array([[1, 1, 0, 0]]))[0] == 2.0


@pytest.mark.parametrize("coalitions, error, match", [
    (np.zeros((3, 5), bool), ValueError, r"coalitions must have shape \(m, 4\)"),
    (np.zeros(4, bool), ValueError, "coalitions must have shape"),
    (np.full((2, 4), 0.5), TypeError, "coalitions must be a boolean array"),
    (np.full((2, 4), 2), ValueError, "outside"),
])
def test_bad_coalitions_are_rejected(coalitions, error, match):
    with pytest.raises(error, match=match):
        size_game()(coalitions)


def test_nan_from_the_game_names_count_and_an_example():
    def fn(S):
        out = S.sum(axis=1).astype(float)
        out[S[:, 2]] = np.nan
        return out

    g = fs.games.FunctionGame(fn, n_players=3, player_names=["a", "b", "c"])
    X = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 1]], dtype=bool)
    with pytest.raises(ValueError, match=r"NaN or inf for 2 of 3 coalitions; e.g. coalition \{c\}"):
        g(X)


def test_inf_is_rejected_too():
    g = fs.games.FunctionGame(lambda S: np.full(S.shape[0], np.inf), n_players=2)
    with pytest.raises(ValueError, match="NaN or inf"):
        g(np.ones((1, 2), bool))


def test_batch_size_splits_large_requests():
    sizes = []

    def fn(S):
        sizes.append(S.shape[0])
        return S.sum(axis=1).astype(float)

    g = fs.games.FunctionGame(fn, n_players=3, batch_size=4)
    out = g(all_coalitions(3))
    assert sizes == [4, 4]
    np.testing.assert_array_equal(out, [0, 1, 1, 2, 1, 2, 2, 3])
    assert g.n_evaluations == 8


def test_multi_output_games_return_two_dimensions():
    g = fs.games.FunctionGame(lambda S: np.stack([S.sum(1), -S.sum(1)], axis=1).astype(float), n_players=3)
    out = g(np.ones((5, 3), bool))
    assert out.shape == (5, 2)
    assert g.n_outputs == 2


def test_output_shape_and_consistency_are_checked():
    wrong_len = fs.games.FunctionGame(lambda S: np.zeros(S.shape[0] + 1), n_players=2)
    with pytest.raises(ValueError, match=r"must return shape \(1,\)"):
        wrong_len(np.ones((1, 2), bool))
    calls = iter([np.zeros(1), np.zeros((1, 3))])
    flip = fs.games.FunctionGame(lambda S: next(calls), n_players=2)
    flip(np.ones((1, 2), bool))
    with pytest.raises(ValueError, match="returned 3 outputs"):
        flip(np.ones((1, 2), bool))
    strings = fs.games.FunctionGame(lambda S: np.array(["a"] * S.shape[0]), n_players=2)
    with pytest.raises(TypeError, match="must return numbers"):
        strings(np.ones((1, 2), bool))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_players=0), ValueError, "n_players must be >= 1"),
    (dict(n_players=2.5), TypeError, "n_players must be an integer"),
    (dict(n_players=2, player_names=["a"]), ValueError, "one name per player"),
    (dict(n_players=2, player_names=["a", "a"]), ValueError, "must name each one once"),
    (dict(n_players=2, batch_size=0), ValueError, "batch_size must be >= 1"),
])
def test_bad_constructor_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        fs.games.FunctionGame(lambda S: S.sum(1), **kwargs)


def test_function_game_needs_a_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        fs.games.FunctionGame(3, n_players=2)


def test_a_game_without_evaluate_says_so():
    with pytest.raises(NotImplementedError, match="must implement _evaluate"):
        fs.Game(2)(np.ones((1, 2), bool))


@pytest.mark.parametrize("collide", [False, True])
@pytest.mark.parametrize("d", [3, 13, 64, 100])
def test_budgeted_evaluator_evaluates_each_coalition_once(monkeypatch, d, collide):
    """Repeats within a call and across calls are answered from memory; with every hash colliding (forced), the
    keys themselves still tell coalitions apart."""
    from fairshare.engine import evaluation
    from fairshare.store import coalitions

    if collide:
        for module in (evaluation, coalitions):        # every hash collides: keys compared on equal hashes
            monkeypatch.setattr(module, "key_hashes", lambda keys: np.zeros(keys.size, dtype=np.uint64))
    rng = np.random.default_rng(d)
    g = fs.games.AdditiveGame(rng.normal(size=d))
    ev = evaluation.BudgetedEvaluator(g, budget=None)
    seen = set()
    for _ in range(4):
        X = rng.random((40, d)) < 0.5
        X = np.concatenate([X, X[::3], X[:2]])[rng.permutation(40 + 14 + 2)]
        seen |= {r.tobytes() for r in X}
        np.testing.assert_allclose(ev(X)[:, 0], X @ g.weights)
        assert ev.n_spent == len(seen)
    assert g.n_evaluations == len(seen)


@pytest.mark.parametrize("collide", [False, True])
def test_coalition_store_finds_what_was_added_between_lookups(monkeypatch, collide):
    """Adds one at a time and in blocks, lookups between them (the hashes merged late): every key finds its own
    value, absent keys find nothing, also with every hash colliding."""
    from fairshare.engine import evaluation
    from fairshare.store import coalitions

    if collide:
        for module in (evaluation, coalitions):        # every hash collides: keys compared on equal hashes
            monkeypatch.setattr(module, "key_hashes", lambda keys: np.zeros(keys.size, dtype=np.uint64))
    rng = np.random.default_rng(7)
    X = np.unique(rng.random((300, 21)) < 0.5, axis=0)
    keys = evaluation.coalition_keys(X)
    store, held = evaluation.CoalitionStore(), {}
    for start in range(0, 200, 25):
        for i in (range(start, start + 25) if start % 50 else [range(start, start + 25)]):
            idx = np.atleast_1d(np.arange(X.shape[0])[i])
            store.add(keys[idx], idx[:, None].astype(float))
            held.update({int(j): float(j) for j in idx})
        pos = store.find(keys)
        found = pos >= 0
        assert set(np.flatnonzero(found)) == set(held)
        np.testing.assert_array_equal(store.values[pos[found], 0], np.flatnonzero(found))


def test_a_game_or_model_with_no_output_per_row_is_refused_by_name():
    # hunt19: a game or model returning shape (m, 0) (predict_proba(X)[:, 2:] of a binary classifier) stopped on a
    # bare 'IndexError: index 0 is out of bounds for axis 1 with size 0' in estimate, exact and explain
    empty = fs.games.FunctionGame(lambda S: np.zeros((S.shape[0], 0)), n_players=4)
    with pytest.raises(ValueError, match=r"k >= 1, got \(2, 0\)"):
        fs.estimate(empty, "shapley", method="permutation", budget=12, seed=0)
    with pytest.raises(ValueError, match=r"k >= 1, got \(16, 0\)"):
        fs.exact(empty)
    X = np.random.default_rng(0).normal(size=(5, 3))
    with pytest.raises(ValueError, match=r"the model returned no output per row \(an array of shape \(\d+, 0\)\)"):
        fs.explain(lambda A: np.zeros((len(A), 0)), X[:2], background=X, budget=20, seed=0, progress=False)
