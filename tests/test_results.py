"""One result base (issue 36, items 5 and 6): every result is a ``Result``; one ``.npz`` format saves and loads every
kind of result field for field, bit for bit, without pickle (and still reads the Explanation files written before
it); shap's names are read-only aliases; the tree door returns result objects whose values are the arrays it used
to return."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pytest

import fairshare as fs
from fairshare.examples import Prototypes, select_prototypes
from fairshare.games.tree import tree_explanation, tree_values_array
from fairshare.results.base import Result
from fairshare.results.interaction_rows import InteractionRows

HOSTILE = '<img src=x onerror="alert(1)">'


# ------------------------------------------------------------------------------------------------- helpers
def assert_same(a, b, where="result"):
    """``a`` and ``b`` hold the same thing: arrays of the same dtype and shape with the same bytes (object arrays:
    the same elements of the same types), dicts, lists and tuples element by element, scalars of the same type."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        if a.dtype == object:
            for k, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
                assert_same(x, y, f"{where}[{k}]")
        else:
            assert a.tobytes() == b.tobytes(), f"{where}: the bytes differ"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{k}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_round_trip(result, tmp_path, name="r.npz"):
    loaded = type(result).load(result.save(tmp_path / name))
    assert type(loaded) is type(result)
    for f in fields(result):
        if f.init:
            assert_same(getattr(loaded, f.name), getattr(result, f.name), f"{type(result).__name__}.{f.name}")
    return loaded


@pytest.fixture(scope="module")
def tree_model():
    from sklearn.ensemble import GradientBoostingRegressor

    X = np.random.default_rng(0).normal(size=(200, 4))
    return GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, X[:, 0] * X[:, 1] + X[:, 2]), X


@pytest.fixture(scope="module")
def results(tree_model):
    """One result of every kind, as the doors give them."""
    from sklearn.neighbors import KNeighborsClassifier

    model, X = tree_model
    rng = np.random.default_rng(1)
    Xd = rng.normal(size=(12, 2))
    yd = (Xd[:, 0] > 0).astype(int)
    return {
        "attribution": fs.estimate(fs.games.SOUMGame.random(6, n_terms=8, seed=0), "shapley", method="kernelshap",
                                   budget=40, seed=0),
        "explanation": fs.explain(lambda A: A @ [1.0, -2.0, 0.5] + A[:, 0] * A[:, 1], rng.normal(size=(3, 3)),
                                  rng.normal(size=(5, 3)), budget=30, seed=0, progress=False),
        "interactions": fs.interactions(fs.games.SOUMGame.random(6, n_terms=8, seed=0), "k-sii", order=2, budget=60,
                                        seed=0),
        "data values": fs.value_data(KNeighborsClassifier(1), Xd[:6], yd[:6], Xd[6:], yd[6:], progress=False),
        "prototypes": select_prototypes(rng.normal(size=(40, 3)), rng.normal(size=(10, 3)), k=3),
        "tree values": fs.games.tree_values(model, X[:3]),
        "tree interactions": fs.games.tree_interactions(model, X[:3]),
        "tree k-sii": fs.games.tree_interactions(model, X[:2], index="k-sii", order=3),
    }


# ------------------------------------------------------------------------------------------------ the base
def test_every_result_is_a_result_with_the_base_vocabulary(results):
    expected = {"attribution": fs.Attribution, "explanation": fs.Explanation, "interactions": fs.Interactions,
                "data values": fs.DataValues, "prototypes": Prototypes, "tree values": fs.Explanation,
                "tree interactions": InteractionRows, "tree k-sii": InteractionRows}
    for name, result in results.items():
        assert type(result) is expected[name] and isinstance(result, Result), name
        for field in ("values", "stderr", "empty_value", "player_names", "info", "method", "n_evaluations", "index"):
            assert hasattr(result, field), (name, field)
        np.testing.assert_array_equal(np.asarray(result), result.values)
    assert isinstance(results["data values"], fs.Attribution)
    protos = results["prototypes"]
    assert protos.values is protos.weights and protos.player_names == [str(i) for i in protos.indices]


def test_constructors_keep_their_keywords_and_refuse_what_they_cannot_place():
    phi = fs.Attribution(values=[1.0, 2.0], stderr=None, index="shapley", method="exact", n_evaluations=4,
                         empty_value=0.5, player_names=["a", "b"])
    assert phi.n_evaluations == 4 and phi.base_values == 0.5 and phi.feature_names == ["a", "b"]
    assert fs.Attribution([1.0], None, index="banzhaf", method="exact").values.tolist() == [1.0]
    with pytest.raises(TypeError, match="positional"):                # beyond values and stderr: keywords
        fs.Attribution(np.ones(2), None, "shapley", "exact")
    with pytest.raises(TypeError, match="missing required keyword argument.*'index'"):
        fs.Attribution(values=np.ones(2), stderr=None, method="exact")
    with pytest.raises(TypeError, match="'empty_value'"):
        fs.Explanation(values=np.ones((1, 2)), stderr=None, data=None, player_names=["a", "b"], index="shapley")
    with pytest.raises(ValueError, match=r"stderr shape \(3,\) differs from values shape \(2,\)"):
        fs.Interactions(values=np.ones(2), stderr=np.ones(3), subsets=[[0, -1], [1, -1]], index="sii", order=2,
                        method="exact")
    p = Prototypes(np.array([3, 1]), np.array([0.5, 0.25]), np.array([1.0, 0.5, 0.4]), "greedy")   # as before
    assert p.weights.tolist() == [0.5, 0.25] and p.method == "greedy" and p.cholesky is None
    p.weights = [0.1, 0.2]
    assert p.values.tolist() == [0.1, 0.2]


def test_data_values_take_an_attributions_fields_without_copying_them_by_hand():
    phi = fs.exact(fs.games.AdditiveGame([1.0, -1.0, 0.5]), "banzhaf")
    dv = fs.DataValues.from_attribution(phi, n_fits=8, seconds=0.5)
    for f in fields(fs.Attribution):
        assert_same(getattr(dv, f.name), getattr(phi, f.name), f.name)
    assert (dv.n_fits, dv.seconds, dv.reused_fits) == (8, 0.5, 0)


# --------------------------------------------------------------------------------------------- save / load
@pytest.mark.parametrize("name", ["attribution", "explanation", "interactions", "data values", "prototypes",
                                  "tree values", "tree interactions", "tree k-sii"])
def test_save_and_load_give_every_field_back_bit_for_bit(results, name, tmp_path):
    loaded = assert_round_trip(results[name], tmp_path)
    assert type(Result.load(tmp_path / "r.npz")) is type(results[name])     # the file names its kind
    if name == "prototypes":
        np.testing.assert_array_equal(loaded.weights_at(2), results[name].weights_at(2))
    if name == "tree k-sii":
        assert_same(loaded[1].values, results[name][1].values)


def test_texts_sequences_and_interaction_matrices_round_trip(tree_model, tmp_path):
    model, X = tree_model
    text = fs.explain(lambda ts: [t.count("a") + 2.0 * t.count("<") for t in ts], f"a {HOSTILE} a", progress=False)
    assert text.data.dtype == object and text.is_text
    back = assert_round_trip(text, tmp_path, "text.npz")
    assert back.tokens == text.tokens and back._repr_html_() == text._repr_html_()
    seq = fs.explain(lambda A: A.sum(axis=(1, 2)), np.arange(12.0).reshape(2, 3, 2), np.zeros((1, 3, 2)),
                     groups="time", progress=False)
    back = assert_round_trip(seq, tmp_path, "seq.npz")
    assert_same(back.input_values(), seq.input_values())
    pairs = fs.explain(model, X[:2], interactions=2, progress=False)
    assert pairs.interactions is not None
    assert_round_trip(pairs, tmp_path, "pairs.npz")


def test_facts_of_every_type_come_back_as_they_were(tmp_path):
    info = {"groups": np.array([[0, 0], [1, 1]]), "shape": (3, 2), "scale": np.float32(0.1), "nan": float("nan"),
            "by_size": {1: 0.5, (2, 3): [np.int64(4), None, True]}, "tagged": {"__ndarray__": "a plain key"},
            "when": np.array(["2024-01-02T03:04:05"], dtype="datetime64[s]"), "names": np.array(["a", "b"])}
    phi = fs.Attribution(values=[1.0, -0.0], stderr=[np.inf, 0.0], index="shapley", method="exact",
                         empty_value=np.float64(0.25), grand_value=np.array([1.25]), info=info,
                         options={"paired": True, "lam": 0.5}, player_names=["a", HOSTILE])
    back = assert_round_trip(phi, tmp_path)
    assert str(back.values[1]) == "-0.0" and back.player_names[1] == HOSTILE
    phi.options["stop"] = fs.stopping.MaxEvaluations(10)              # no data: kept as what it says of itself
    assert Result.load(phi.save(tmp_path / "s.npz")).options["stop"] == str(phi.options["stop"])


def _save_as_before(e, path):
    """What ``Explanation.save`` wrote before the one result base (its code, kept here as the old format's spec)."""
    meta = dict(player_names=e.player_names, index=e.index, method=e.method, output_names=e.output_names,
                row_names=e.row_names, options=e.options, info=e.info)
    arrays = dict(values=e.values, empty_value=e.empty_value, n_evaluations=e.n_evaluations,
                  meta=np.array(json.dumps(meta, default=str)))
    if e.stderr is not None:
        arrays["stderr"] = e.stderr
    if e.grand_value is not None:
        arrays["grand_value"] = e.grand_value
    if e.data is not None:
        arrays["data"] = np.asarray(e.data, dtype=float) if np.asarray(e.data).dtype != object else \
            np.asarray(e.data).astype(str)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_explanation_load_reads_the_files_written_before(results, tmp_path):
    e = fs.Explanation(values=np.arange(6.0).reshape(2, 3), stderr=np.full((2, 3), 0.1), empty_value=[0.5, 0.25],
                       data=np.ones((2, 3)), player_names=["a", "b", "c"], index="shapley", method="exact",
                       grand_value=[1.0, 2.0], row_names=["r0", "r1"], n_evaluations=[8, 8], options={"paired": True},
                       info={"budget": 8, "choice": {"method": "exact", "why": "small"}})
    _save_as_before(e, tmp_path / "old.npz")
    old = fs.Explanation.load(tmp_path / "old.npz")
    for f in fields(e):
        if f.init:
            assert_same(getattr(old, f.name), getattr(e, f.name), f.name)
    _save_as_before(results["explanation"], tmp_path / "run.npz")
    run = fs.Explanation.load(tmp_path / "run.npz")
    for name in ("values", "stderr", "empty_value", "grand_value", "data", "n_evaluations"):
        assert_same(getattr(run, name), getattr(results["explanation"], name), name)
    assert run.info["choice"] == results["explanation"].info["choice"]
    text = fs.explain(lambda ts: [t.count("a") for t in ts], "a b a", progress=False)
    _save_as_before(text, tmp_path / "text.npz")
    old_text = fs.Explanation.load(tmp_path / "text.npz")
    assert old_text.tokens == text.tokens and np.array_equal(old_text.values, text.values)


def test_load_reads_no_pickle_and_refuses_other_files(results, tmp_path):
    import io
    import zipfile

    results["attribution"].save(tmp_path / "phi.npz")
    owner = io.BytesIO()
    np.lib.format.write_array(owner, np.array("run 1 row 0"), allow_pickle=False)
    with zipfile.ZipFile(tmp_path / "phi.npz", "a") as z:            # what a cache keeps beside a result: left there
        z.writestr("owner.npy", owner.getvalue())
    assert_same(fs.Attribution.load(tmp_path / "phi.npz").values, results["attribution"].values)
    with pytest.raises(TypeError, match="holds a result of kind Attribution, not Explanation"):
        fs.Explanation.load(tmp_path / "phi.npz")
    np.savez(tmp_path / "plain.npz", values=np.ones(3))
    with pytest.raises(ValueError, match="not a fairshare result file"):
        Result.load(tmp_path / "plain.npz")
    np.savez(tmp_path / "pickled.npz", meta=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="pickle"):                       # np.load refuses: nothing is unpickled
        Result.load(tmp_path / "pickled.npz")
    forged = {"format": "fairshare-result", "version": 1, "kind": "os.system", "fields": {}}
    np.savez(tmp_path / "forged.npz", meta=np.array(json.dumps(forged)), values=np.ones(2))
    with pytest.raises(ValueError, match="holds a os.system result, which is not loaded"):
        Result.load(tmp_path / "forged.npz")


def test_foreign_empty_and_damaged_files_are_refused_as_no_result_file(results, tmp_path):
    # hunt: an .npy file, a text file, an empty file and a meta without kind or fields raised TypeError, EOFError,
    # KeyError, or numpy's advice to load the file with pickle
    path = results["attribution"].save(tmp_path / "phi.npz")
    whole = path.read_bytes()
    np.save(tmp_path / "array.npy", np.ones(3))
    (tmp_path / "text.npz").write_text("hello")
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "cut.npz").write_bytes(whole[:len(whole) // 2])
    meta = {"format": "fairshare-result", "version": 1, "kind": "Attribution"}
    np.savez(tmp_path / "no_fields.npz", meta=np.array(json.dumps(meta)))
    np.savez(tmp_path / "no_kind.npz", meta=np.array(json.dumps({**meta, "kind": None, "fields": {}})))
    bad_field = {"__ndarray__": "AAAAAAAAAAA=", "dtype": "<f8", "shape": [5]}           # one float for five
    np.savez(tmp_path / "bad_field.npz", meta=np.array(json.dumps({**meta, "fields": {"values": bad_field}})))
    expected = {"array.npy": "it holds one array", "text.npz": "not an .npz archive", "empty.npz": "an empty file",
                "cut.npz": "not an .npz archive", "no_fields.npz": "its meta names no kind or no fields",
                "no_kind.npz": "its meta names no kind or no fields", "bad_field.npz": "a field does not decode"}
    for name, why in expected.items():
        with pytest.raises(ValueError, match=f"is not a fairshare result file \\({why}") as caught:
            Result.load(tmp_path / name)
        assert "allow_pickle" not in str(caught.value)


def test_names_read_back_from_a_file_are_escaped_in_html(tmp_path):
    e = fs.explain(lambda ts: [t.count("x") for t in ts], f"x {HOSTILE}", progress=False)
    e.index = HOSTILE                                                  # a field written by anyone, read back
    back = fs.Explanation.load(e.save(tmp_path / "e.npz"))
    html = back._repr_html_()
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


# ------------------------------------------------------------------------------------------ shap's aliases
@pytest.mark.parametrize("name", ["attribution", "explanation", "interactions", "data values", "prototypes",
                                  "tree values", "tree interactions", "tree k-sii"])
def test_shaps_names_are_the_fields_and_refuse_assignment(results, name):
    result = results[name]
    assert result.feature_names == result.player_names
    if isinstance(result, (fs.Explanation, InteractionRows)):             # one base value per row, as shap's
        outputs = result.values.shape[2:] if isinstance(result, fs.Explanation) else result.values.shape[3:]
        assert result.base_values.shape == (len(result),) + outputs
        np.testing.assert_array_equal(result.base_values, result.empty_value)
    else:
        np.testing.assert_array_equal(result.base_values, result.empty_value)
    with pytest.raises(AttributeError, match="base_values is a read-only alias of empty_value"):
        result.base_values = 0.0
    with pytest.raises(AttributeError, match="feature_names is a read-only alias of player_names"):
        result.feature_names = ["z"]
    with pytest.raises(AttributeError, match="alias of empty_value"):
        del result.base_values


def test_nothing_written_through_shaps_names_changes_the_fields():
    # the aliases gave the fields themselves: phi.base_values[0] = 99 turned a two-output game's empty value
    # [1, -2] into [99, -2], and e.feature_names[0] = "zz" renamed the first player
    game = fs.games.FunctionGame(lambda S: np.stack([S @ np.arange(1.0, 4.0) + 1.0, S.sum(axis=1) - 2.0], axis=1),
                                 n_players=3)
    phi = fs.exact(game, "shapley")
    with pytest.raises(ValueError, match="read-only"):
        phi.base_values[0] = 99.0
    names = phi.feature_names
    names[0] = "zz"
    names.append("extra")
    np.testing.assert_array_equal(phi.empty_value, [1.0, -2.0])
    assert phi.player_names == ["x0", "x1", "x2"] and phi.feature_names == ["x0", "x1", "x2"]
    np.testing.assert_allclose(phi.values.sum(axis=0) + phi.base_values, phi.grand_value)


def test_base_values_broadcast_one_base_value_to_every_row():
    e = fs.Explanation(values=np.zeros((3, 2, 2)), stderr=None, empty_value=[0.25, 0.75], data=None,
                       player_names=["a", "b"], index="shapley")
    np.testing.assert_array_equal(e.base_values, [[0.25, 0.75]] * 3)
    assert not e.base_values.flags.writeable


def test_shap_style_code_runs(results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e = fs.explain(lambda A: A[:, 0] * A[:, 1] + A[:, 2], np.random.default_rng(0).normal(size=(30, 3)),
                   np.zeros((1, 3)), progress=False)
    np.testing.assert_allclose(e.values.sum(axis=1) + e.base_values, e.grand_value)
    assert e.feature_names == ["x0", "x1", "x2"] and e.data.shape == (30, 3)
    _, (left, right) = plt.subplots(1, 2)
    assert e.plot("scatter", "x0", ax=left) is left
    e.plot("dependence", "x0", ax=right)
    np.testing.assert_array_equal(left.collections[0].get_offsets(), right.collections[0].get_offsets())
    assert left.get_ylabel() == right.get_ylabel() == "shapley value of x0"
    tree = results["tree values"]                                     # the tree door's result plots the same way
    ax = tree.plot("scatter", "x2")
    np.testing.assert_array_equal(ax.collections[0].get_offsets()[:, 1], tree.values[:, 2])
    bar = results["attribution"].plot("bar")                          # one game: a row of an Explanation
    assert len(bar.patches) == results["attribution"].n_players
    assert results["interactions"].plot("heatmap").get_title() == "k-sii (order 2)"
    with pytest.raises(ValueError, match=r"kind must be one of \['heatmap', 'network'\]"):
        results["interactions"].plot("scatter")
    plt.close("all")


# --------------------------------------------------------------------------------------------- tree door
def test_tree_values_are_an_explanation_of_the_arrays_it_returned(tree_model):
    import pandas as pd
    from sklearn.ensemble import GradientBoostingClassifier

    model, X = tree_model
    e = fs.games.tree_values(model, X[:5], "banzhaf", mode="interventional", background=X[50:60])
    old = tree_explanation(model, X[:5], "banzhaf", "interventional", X[50:60])     # what tree_values' body was
    assert_same(e.values, old["values"])
    assert_same(tree_values_array(model, X[:5], "banzhaf", "interventional", X[50:60]), old["values"])
    assert e.method == "exact" and e.index == "banzhaf" and e.info["mode"] == "interventional"
    assert_same(e.grand_value, old["grand_value"])
    np.testing.assert_allclose(e.grand_value, model.predict(X[:5]), atol=1e-12)
    np.testing.assert_array_equal(e.empty_value, np.full(5, old["empty_value"]))
    np.testing.assert_array_equal(e.stderr, 0.0)
    frame = pd.DataFrame(X[:40], columns=["a", "b", "c", "d"], index=range(100, 140))
    clf = GradientBoostingClassifier(n_estimators=5, max_depth=2).fit(frame, frame.a > 0)
    e = fs.games.tree_values(clf, frame.iloc[:3])
    assert e.player_names == ["a", "b", "c", "d"] and e.row_names == ["100", "101", "102"]
    np.testing.assert_allclose(e.values.sum(axis=1) + e.base_values, clf.decision_function(frame.iloc[:3]))


def test_tree_interactions_are_results_whose_rows_are_the_interactions_they_were(tree_model):
    model, X = tree_model
    rows = fs.games.tree_interactions(model, X[:4])
    assert rows.values.shape == (4, 4, 4) and rows.index == "sii-matrix" and len(rows) == 4
    np.testing.assert_allclose(rows.values.sum(axis=2), fs.games.tree_values(model, X[:4]).values, atol=1e-12)
    for r, row in enumerate(rows):                                    # each row: its matrix, bit for bit
        assert isinstance(row, fs.Interactions) and row.index == "sii-matrix"
        assert_same(row.matrix(), rows.values[r])
        assert row.empty_value == rows.empty_value[r] and row.grand_value == pytest.approx(model.predict(X[r:r + 1])[0])
    ksii = fs.games.tree_interactions(model, X[:2], index="k-sii", order=3, mode="interventional", background=X[9:14])
    assert ksii.values.shape == (2, ksii.subsets.shape[0]) and ksii.order == 3
    for r in range(2):
        game = fs.games.TreeGame(model, X[r], mode="interventional", background=X[9:14])
        want = fs.interactions(game, "k-sii", order=3, method="exact")
        assert_same(ksii[r].subsets, want.subsets)
        np.testing.assert_allclose(ksii[r].values, want.values, atol=1e-12)
        assert ksii[r].info == {"via": "tree", "mode": "interventional"} and ksii[r].n_evaluations == 0
    assert [type(x) for x in ksii] == [fs.Interactions, fs.Interactions]
    with pytest.raises(TypeError, match="rows are taken by position"):
        ksii[0, 1]
    with pytest.raises(IndexError):
        ksii[2]


def test_slicing_an_explanation_keeps_the_interactions_and_each_rows_report():
    """Rows and players taken from an explanation with interaction values keep those of the rows and players taken
    (they were dropped), and the rows' own reports follow the rows (row 2's slice reported row 0's run)."""
    rng = np.random.default_rng(0)
    inter = rng.normal(size=(3, 3, 3))
    inter = inter + inter.transpose(0, 2, 1)
    e = fs.Explanation(values=inter.sum(axis=2), stderr=np.ones((3, 3)), empty_value=np.zeros(3), data=None,
                       player_names=["a", "b", "c"], index="shapley", interactions=inter,
                       interactions_stderr=np.abs(inter), info={"rows": [{"row": 0}, {"row": 1}, {"row": 2}]})
    np.testing.assert_array_equal(e[2].interactions, inter[[2]])
    np.testing.assert_array_equal(e[:, ["a", "c"]].interactions, inter[:, [0, 2]][:, :, [0, 2]])
    np.testing.assert_array_equal(e[[0, 1]].interactions_stderr, np.abs(inter[[0, 1]]))
    assert e[2].info["rows"] == [{"row": 2}] and e[1:].info["rows"] == [{"row": 1}, {"row": 2}]


@pytest.fixture(scope="module")
def three_classes():
    from sklearn.datasets import load_wine
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.iloc[:, :6]
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y), X


@pytest.mark.parametrize("method, budget", [("exact", None), ("permutation", 60)])
def test_one_output_of_a_multi_output_explanation_is_that_outputs_explanation_shaps_way(three_classes, method,
                                                                                          budget):
    """``e[:, :, 1]`` (rows, features, output), as shap's Explanation takes it, raised 'too many values to unpack';
    it is the single-output explanation of that class: the values, error bars, base values and grand values fs.explain
    gives for that class's probability alone (the same coalitions with the same seed), to rounding."""
    model, X = three_classes
    args = dict(background=X.iloc[100:140], method=method, budget=budget, seed=0, progress=False)
    e = fs.explain(model.predict_proba, X.iloc[:4], **args)
    assert e.values.shape == (4, 6, 3) and e.output_names == ["0", "1", "2"]
    for o in range(3):
        one = fs.explain(lambda A, o=o: model.predict_proba(A)[:, o], X.iloc[:4], **args)
        got = e[:, :, o]
        assert got.values.shape == (4, 6) and got.output_names is None and got.info["output"] == str(o)
        for name in ("values", "stderr", "base_values", "grand_value"):
            np.testing.assert_allclose(getattr(got, name), getattr(one, name), rtol=1e-12, atol=1e-14, err_msg=name)
        assert got.player_names == one.player_names and got.info["rows"] == one.info["rows"]
        np.testing.assert_array_equal(e[..., str(o)].values, got.values)             # by name, with an ellipsis
    part = e[1:3, ["alcohol", "ash"], 2]                                              # rows, players and an output
    np.testing.assert_array_equal(part.values, e.values[1:3][:, [0, 2], 2])
    np.testing.assert_array_equal(part.data, e.data[1:3][:, [0, 2]])
    assert part.row_names == ["1", "2"] and len(part.info["rows"]) == 2
    two = e[:, :, [0, 2]]                                                             # a list keeps the axis
    assert two.values.shape == (4, 6, 2) and two.output_names == ["0", "2"] and two.base_values.shape == (4, 2)
    np.testing.assert_array_equal(e[:, 0].values, e.values[:, [0]])                  # a player by position
    with pytest.raises(IndexError, match="not one of the 3 outputs"):
        e[:, :, 3]
    with pytest.raises(IndexError, match="one output"):
        e[:, :, 0][:, :, 0]


def test_one_outputs_interactions_are_those_of_that_output(three_classes):
    model, X = three_classes
    args = dict(background=X.iloc[100:140], interactions=2, seed=0, progress=False)
    e = fs.explain(model.predict_proba, X.iloc[:2], **args)
    one = fs.explain(lambda A: model.predict_proba(A)[:, 1], X.iloc[:2], **args)
    assert e.method == one.method == "exact" and e.interactions.shape == (2, 6, 6, 3)
    np.testing.assert_allclose(e[:, :, 1].interactions, one.interactions, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(e[:, :, 1].interactions_stderr, one.interactions_stderr, atol=1e-14)
    np.testing.assert_array_equal(e[:, ["ash"], "1"].interactions, e[:, :, 1].interactions[:, [2]][:, :, [2]])


def test_the_dependence_plots_colour_is_the_partner_of_the_output_drawn():
    rng = np.random.default_rng(0)
    inter = np.zeros((30, 3, 3, 2))
    inter[:, 0, 1, 0] = inter[:, 1, 0, 0] = 5.0                 # output "no": a interacts with b
    inter[:, 0, 2, 1] = inter[:, 2, 0, 1] = 5.0                 # output "yes": a interacts with c
    e = fs.Explanation(values=inter.sum(axis=2), stderr=None, empty_value=np.zeros((30, 2)),
                       data=rng.normal(size=(30, 3)), player_names=["a", "b", "c"], index="shapley",
                       output_names=["no", "yes"], interactions=inter)
    assert e.plot("dependence", "a", output="no").collections[-1].get_label() == "coloured by b"
    assert e.plot("dependence", "a", output="yes").collections[-1].get_label() == "coloured by c"


def test_players_are_picked_by_an_array_or_index_of_names_and_by_a_tuple_of_positions():
    """``e[:, X.columns[:2]]`` (a pandas Index), an array of names and a tuple of positions, as numpy and shap take
    them: were 'The truth value of an array ... is ambiguous' and 'too many indices for array'."""
    import pandas as pd

    e = fs.Explanation(values=np.arange(12.0).reshape(2, 3, 2), stderr=np.arange(12.0).reshape(2, 3, 2) / 10,
                       empty_value=np.ones((2, 2)), player_names=["a", "b", "c"], index="shapley",
                       output_names=["no", "yes"])
    for key in (pd.Index(["c", "a"]), np.array(["c", "a"]), (2, 0), np.array([2, 0])):
        picked = e[:, key]
        assert picked.player_names == ["c", "a"]
        np.testing.assert_array_equal(picked.values, e.values[:, [2, 0]])
        np.testing.assert_array_equal(picked.stderr, e.stderr[:, [2, 0]])
    np.testing.assert_array_equal(e[pd.Index(["b"])].values, e.values[:, [1]])
    np.testing.assert_array_equal(e[..., np.array(["a", "b"]), "yes"].values, [[1.0, 3.0], [7.0, 9.0]])


def test_a_base_value_shared_by_every_row_is_each_rows_in_slices_plots_and_the_report():
    # empty_value=[0.25, 0.75] (one per output, shared by the rows, as base_values reads it) was read by row: the
    # waterfall of row 1, output 0 started at 0.75, the decision plot's rows at 0.25 and 0.75 for either output,
    # the report's base of output 0 was [0.25, 0.75], and a shared number (empty_value=0.5) crashed them all
    from fairshare.results.report.payload import explanation_payload

    rng = np.random.default_rng(0)
    e = fs.Explanation(values=rng.normal(size=(2, 3, 2)), stderr=None, empty_value=[0.25, 0.75], index="shapley")
    assert e.plot("waterfall", row=1, output=0).get_xlabel().startswith("base value 0.25 ->")
    assert [line.get_xdata()[0] for line in e.plot("decision", output=1).lines[:2]] == [0.75, 0.75]
    assert explanation_payload(e, 0)["base"] == [0.25, 0.25] and explanation_payload(e, 1)["base"] == [0.75, 0.75]
    assert e[1].base_values.tolist() == [[0.25, 0.75]] and e[:, :, 1].base_values.tolist() == [0.75, 0.75]
    assert e.empty_value.tolist() == [[0.25, 0.75], [0.25, 0.75]]
    one = fs.Explanation(values=[[1.0, -2.0], [3.0, 0.5], [0.0, 0.0]], stderr=None, empty_value=0.5, index="shapley")
    assert one.plot("waterfall", row=1).get_xlabel() == "base value 0.5 -> 4"
    assert explanation_payload(one)["base"] == [0.5, 0.5, 0.5] and one[2].base_values.tolist() == [0.5]


@pytest.mark.parametrize("names, clash", [(["empty_value", "b"], "'empty_value' has the name of the empty coalition's"),
                                          (["a", "stderr:a"], "'stderr:a' has the name of the standard errors of 'a'")])
def test_to_frame_refuses_a_player_named_as_another_column_instead_of_writing_over_it(names, clash):
    # hunt15: a feature 'empty_value' replaced the empty coalition's value (3.92) in to_frame() and the CLI's --out
    e = fs.Explanation(values=[[1.0, 2.0]], stderr=[[0.1, 0.2]], empty_value=[3.92], data=None, player_names=names,
                       index="shapley")
    with pytest.raises(ValueError, match=f"to_frame: the player {clash}"):
        e.to_frame()
    e.player_names = ["x", "y"]
    assert e.to_frame().to_numpy().tolist() == [[3.92, 1.0, 2.0, 0.1, 0.2]]
    assert e.to_frame(stderr=False).columns.tolist() == ["empty_value", "x", "y"]


# ------------------------------------------------------------------------------------------------- non-finite values
def _with_a_nan_row():
    values = np.array([[1.0, -2.0, 0.5], [np.nan, 1.0, 4.0], [3.0, 1.0, -0.5]])
    return fs.Explanation(values=values, stderr=np.full((3, 3), 0.1), empty_value=np.full(3, 2.0),
                          data=np.arange(9.0).reshape(3, 3), player_names=["a", "b", "c"], index="shapley")


@pytest.mark.parametrize("kind", ["bar", "beeswarm", "decision", "scatter", "heatmap"])
def test_plots_of_many_rows_leave_out_rows_with_nan_values_and_name_them(kind):
    e = _with_a_nan_row()
    with pytest.warns(UserWarning, match=r"row\(s\) \['1'\] hold NaN values and are left out"):
        ax = e.plot(kind, **({"feature": "a"} if kind == "scatter" else {}))
    ax.figure.canvas.draw()
    assert "1 of 3 rows left out: NaN values" in ax.get_title()
    if kind == "bar":            # mean |value| of rows 0 and 2 only
        widths = sorted(p.get_width() for p in ax.patches)
        assert widths == pytest.approx(sorted([2.0, 1.5, 0.5]))
    if kind == "heatmap":
        assert np.asarray(ax.images[0].get_array()).tolist() == [[1.0, -2.0, 0.5], [3.0, 1.0, -0.5]]
    if kind == "decision":       # the two finite rows end at their outputs
        assert [float(line.get_xdata()[-1]) for line in ax.lines[:2]] == [1.5, 5.5]


def test_waterfall_of_a_row_with_a_nan_value_draws_the_finite_values_and_names_the_rest():
    e = _with_a_nan_row()
    e.stderr[1, 2] = np.nan
    with pytest.warns(UserWarning, match=r"player\(s\) \['a'\] have NaN values"):
        ax = e.plot("waterfall", row=1)
    ax.figure.canvas.draw()
    assert "left out: ['a'] (NaN values)" in ax.get_title()
    assert ax.get_xlabel().startswith("base value 2 -> 7")             # 2 + 1 + 4, without the NaN
    assert any(t.get_text() == "+4 ± n/a" for t in ax.texts)
    a = fs.Attribution(values=np.array([np.nan, np.inf]), stderr=None, index="shapley", method="given",
                       player_names=["a", "b"])
    with pytest.raises(ValueError, match="NaN or infinite: the waterfall plot has no finite value"):
        a.plot("waterfall")


# ------------------------------------------------------------------------------------------------- keys
def test_a_bool_is_not_a_position_of_rows_players_or_outputs():
    """``e[:, True]`` picked player 1 (values [[2, 3]] of player b), ``e[True]`` row 1, ``e[:, :, True]`` output 1,
    ``e[:, [0, True]]`` players a and b, and ``a[True]`` / ``a[1.7]`` player 1's value 3.0: a bool (and a float)
    taken as an int. numpy would take a lone True as a new axis; a mask as long as the axis stays a mask."""
    e = fs.Explanation(values=np.arange(12.0).reshape(2, 3, 2), stderr=None, empty_value=np.zeros((2, 2)),
                       player_names=list("abc"), index="shapley")
    for key, axis in (((slice(None), True), "players"), (True, "rows"), (np.True_, "rows"),
                      ((slice(None), slice(None), True), "outputs"), ((slice(None), [0, True]), "players"),
                      ((slice(None), 1.0), "players"), ((slice(None), [True, False]), "players")):
        with pytest.raises(IndexError, match=f"^{axis}: "):
            e[key]
    assert e[:, [True, False, True]].player_names == ["a", "c"]
    assert e[np.array([False, True])].values[0, :, 0].tolist() == [6.0, 8.0, 10.0]
    assert e[:, :, [False, True]].values[0, :, 0].tolist() == [1.0, 3.0, 5.0]
    assert e[:, -1].player_names == ["c"] and e[:, np.int64(1)].player_names == ["b"]
    with pytest.raises(IndexError, match="rows: position 5 is out of range for 2 rows"):
        e[5]
    a = fs.exact(fs.games.AdditiveGame([1.0, 3.0, 5.0]), "shapley")
    assert a[-1] == pytest.approx(5.0) and a["x1"] == pytest.approx(3.0)
    for bad in (True, 1.7):
        with pytest.raises(IndexError, match="players: "):
            a[bad]
    with pytest.raises(KeyError, match="unknown player name 'zz'"):
        a["zz"]


@pytest.mark.parametrize("kind", ["bar", "waterfall", "beeswarm", "heatmap", "decision"])
def test_max_display_below_one_is_refused_by_name_as_the_report_refuses_it(kind):
    """max_display=-1 drew 3 of 4 players and '1 other players' (bar, beeswarm, waterfall: numpy's order[:-1]), and
    decision drew all 4 features for max_display=0 (order[-0:]); the report refused both ('max_display must be
    >= 1'). One is the least: the largest player, then the rest summed."""
    e = fs.Explanation(values=np.array([[4.0, -3.0, 2.0, 1.0], [4.0, 3.0, -2.0, 1.0]]), stderr=None,
                       empty_value=np.zeros(2), player_names=list("abcd"), index="shapley")
    for bad in (0, -1):
        with pytest.raises(ValueError, match=f"max_display must be >= 1, got {bad}"):
            e.plot(kind, max_display=bad)
    ax = e.plot(kind, max_display=1)
    ticks = [t.get_text() for t in (ax.get_xticklabels() if kind == "heatmap" else ax.get_yticklabels())]
    assert "a" in ticks and ("3 other players" in ticks or "3 other features" in ticks)
    pairs = fs.interactions(fs.games.SOUMGame([[True, True, False]], [1.0]), "sii", method="exact")
    with pytest.raises(ValueError, match="max_display must be >= 1, got 0"):
        pairs.plot("network" if kind == "bar" else "heatmap", max_display=0)


def test_one_outputs_plots_name_it_and_refuse_another_output_as_the_image_plot_does():
    """e[:, :, 1].plot("bar") was labelled 'mean |shapley value|' while the report of the same slice says
    '(output yes)'; a one-output Explanation drew its values for output=5 or output='yes' as if asked (the image
    plot refused: 'this explanation has one output'); e[..., np.array(['yes'])] was refused while players take
    arrays of names."""
    rng = np.random.default_rng(0)
    e = fs.Explanation(values=rng.normal(size=(6, 3, 2)), stderr=None, empty_value=np.zeros((6, 2)),
                       player_names=list("abc"), index="shapley", output_names=["no", "yes"])
    one = e[:, :, 1]
    assert one.plot("bar").get_xlabel() == "mean |shapley value| (output yes)"
    assert one.plot("bar", output="yes").get_xlabel() == e.plot("bar", output="yes").get_xlabel()
    np.testing.assert_allclose(e[..., np.array(["yes"])].values[..., 0], one.values)
    plain = fs.Explanation(values=rng.normal(size=(6, 3)), stderr=None, empty_value=np.zeros(6),
                           player_names=list("abc"), index="shapley")
    for kind in ("bar", "waterfall", "beeswarm", "heatmap", "decision"):
        with pytest.raises(ValueError, match=r"^output: this explanation has one output, got 5"):
            plain.plot(kind, output=5)
        with pytest.raises(ValueError, match=r"^output: this explanation has one output \(yes\), got 'no'"):
            one.plot(kind, output="no")


def test_decision_lines_of_an_unknown_empty_value_start_at_zero_and_say_so():
    """An Attribution without an empty value (an estimate's) drew an empty decision plot (every line NaN, x limits
    -0.055..0.055), and a row of the Explanation whose base was NaN vanished silently; now such a line starts at 0,
    as the waterfall does, and the axis says so."""
    a = fs.Attribution(values=np.array([1.0, 2.0, -1.0]), stderr=None, index="shapley", method="given",
                       player_names=list("abc"))
    ax = a.plot("decision")
    line = ax.lines[0].get_xdata()
    assert line[0] == 0.0 and line[-1] == pytest.approx(2.0)
    assert ax.get_xlabel() == "the values' sum (all rows start at 0: the empty coalition's value is not known)"
    e = fs.Explanation(values=np.ones((3, 2)), stderr=None, empty_value=np.array([0.0, np.nan, 1.0]),
                       player_names=["a", "b"], index="shapley")
    ax = e.plot("decision")
    assert [float(l.get_xdata()[-1]) for l in ax.lines[:3]] == [2.0, 2.0, 3.0]
    assert "1 of 3 rows start at 0" in ax.get_xlabel()


def test_input_values_of_sliced_players_stay_in_their_own_cells():
    """Players t0, t1, t2 (a sequence's time steps, values 10, 32, 54): e[:, [2, 1, 0]].input_values() put t2's 54
    at time 0, and e[:, [1, 2]] stopped on a bare IndexError; cells of one sequence explained cell by cell, reversed,
    were laid out backwards. Each value now stays in its own cell, cells of players sliced away NaN."""
    X = np.arange(12.0).reshape(2, 3, 2)
    model = lambda A: (A * np.array([1.0, 10.0])).sum(axis=(1, 2))                # noqa: E731
    e = fs.explain(model, X, background=np.zeros((1, 3, 2)), groups="time", progress=False)
    whole = e.input_values()
    assert whole[0, :, 0].tolist() == pytest.approx([10.0, 32.0, 54.0])
    np.testing.assert_allclose(e[:, [2, 1, 0]].input_values(), whole)
    two = e[:, [1, 2]].input_values()
    assert np.isnan(two[:, 0]).all()
    np.testing.assert_allclose(two[:, 1:], whole[:, 1:])
    cells = fs.explain(model, X, background=np.zeros((1, 3, 2)), progress=False)
    np.testing.assert_allclose(cells[:, ::-1].input_values(), cells.input_values(), atol=1e-9)
    np.testing.assert_allclose(cells[1, ["t1:f1"]].input_values()[0, 1, 1], cells.input_values()[1, 1, 1])


def test_the_interactions_frame_of_interactions_without_errors_has_nan_errors():
    """An Explanation given interactions but no interactions_stderr (built by hand, or a file of one) stopped
    interactions_frame() on "'NoneType' object is not subscriptable"; its stderr column is now NaN."""
    pairs = np.array([[[1.0, 0.5], [0.5, 2.0]], [[0.0, -1.0], [-1.0, 3.0]]])
    e = fs.Explanation(values=pairs.sum(axis=2), stderr=None, empty_value=np.zeros(2), interactions=pairs,
                       index="shapley", player_names=["a", "b"])
    frame = e.interactions_frame()
    assert frame["value"].tolist() == [1.0, 0.5, 2.0, 0.0, -1.0, 3.0] and frame["stderr"].isna().all()


def test_a_bar_whose_error_is_not_finite_says_so():
    """Values with infinite standard errors (a budget too small for them) were drawn as bars without any error bar,
    as if exact (the waterfall writes '± inf', the report '∞'); a NaN error the same. Such a bar is now labelled."""
    a = fs.Attribution(values=np.array([1.0, -2.0, 0.5]), stderr=np.array([np.inf, 0.1, np.nan]), index="shapley",
                       method="given", player_names=["a", "b", "c"], empty_value=0.0)
    ax = a.plot("bar")
    ax.figure.canvas.draw()
    assert sorted(t.get_text() for t in ax.texts) == ["± inf", "± n/a"]
    assert np.isfinite(ax.get_xlim()).all()
    assert [t.get_text() for t in fs.exact(fs.games.AdditiveGame([1.0, 2.0]), "shapley").plot("bar").texts] == []


@pytest.mark.parametrize("field, value, match", [
    ("empty_value", np.zeros(5), r"empty_value must be one per row, \(2,\) for values \(2, 3\), got shape \(5,\)"),
    ("grand_value", np.zeros(7), r"grand_value must be one per row"),
    ("data", np.ones((5, 3)), r"data must have one row per explained row \(2\), got shape \(5, 3\)"),
    ("interactions", np.ones((2, 4, 4)), r"interactions must be \(rows, players, players\[, outputs\]\), \(2, 3, 3\)"),
    ("output_names", ["a"], r"output_names must have one name per output \(none: values of one output\), got 1"),
])
def test_fields_that_do_not_fit_the_values_are_refused_by_name(field, value, match):
    """An Explanation of 2 rows took 5 base values, 7 grand values, 5 rows of data, 4x4 interaction matrices for 3
    players and output names for values of one output without a word; slices and plots then read the wrong ones
    (e[1]'s base value was the 2nd of 5). Each is refused naming the field and the shape it must have."""
    kwargs = dict(values=np.ones((2, 3)), stderr=None, empty_value=np.zeros(2), index="shapley")
    with pytest.raises(ValueError, match=match):
        fs.Explanation(**{**kwargs, field: value})
    e = fs.Explanation(values=np.ones((2, 3, 2)), stderr=None, empty_value=0.5, grand_value=[1.0, 2.0],
                       output_names=["no", "yes"], index="shapley")            # shared ones are given to each row
    assert e.empty_value.shape == (2, 2) and e.grand_value.tolist() == [[1.0, 2.0], [1.0, 2.0]]
