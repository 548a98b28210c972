"""shap interop (issue 40, item 3): our results through shap's plots, shap's results through ours, shapes that do
not fit refused naming the argument."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import fairshare as fs  # noqa: E402

shap = pytest.importorskip("shap")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + 2 * X[:, 1] * (X[:, 2] > 0)
    return xgb.XGBRegressor(n_estimators=20, max_depth=3).fit(X, y), X


def test_our_explanation_goes_through_shaps_plots(model):
    m, X = model
    e = fs.explain(m, X[:30], X[200:240], progress=False)
    s = e.to_shap()
    assert np.array_equal(s.values, e.values) and np.array_equal(s.base_values, e.base_values)
    assert np.array_equal(s.error_std, e.stderr) and s.feature_names == e.player_names
    reference = shap.TreeExplainer(m, X[200:240], feature_perturbation="interventional")(X[:30])
    np.testing.assert_allclose(s.values, reference.values, atol=1e-5)
    for plot in (shap.plots.beeswarm, shap.plots.bar):
        plot(s, show=False)
        assert plt.gcf().axes and plt.gcf().axes[0].get_yticklabels()
        plt.close("all")
    shap.plots.waterfall(s[0], show=False)
    plt.close("all")


def test_shaps_explanation_comes_back_with_its_numbers_and_plots(model):
    m, X = model
    s = shap.TreeExplainer(m)(X[:25])
    e = fs.Explanation.from_shap(s)
    assert np.array_equal(e.values, s.values) and np.array_equal(e.base_values, s.base_values)
    assert np.array_equal(e.data, s.data) and e.method == "shap" and e.stderr is None
    for kind in ("bar", "beeswarm", "waterfall"):
        assert e.plot(kind) is not None
        plt.close("all")
    back = fs.Explanation.from_shap(fs.explain(m, X[:5], X[200:240], progress=False).to_shap())
    assert back.stderr is not None and back.values.shape == (5, 4)


def test_multi_output_results_round_trip():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    clf = LogisticRegression().fit(X, y)
    e = fs.explain(clf.predict_proba, X[:6], X[100:120], budget=64, seed=0, progress=False)
    assert e.values.shape == (6, 3, 3)
    s = e.to_shap()
    shap.plots.beeswarm(s[:, :, 1], show=False)
    plt.close("all")
    back = fs.Explanation.from_shap(s)
    assert np.array_equal(back.values, e.values) and np.array_equal(back.empty_value, e.empty_value)
    assert np.array_equal(back.stderr, e.stderr)


def test_one_row_of_a_multi_output_shap_explanation_comes_back_as_one_row_of_each_output():
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(4, 3)), columns=list("abc"), index=["ann", "bob", "cid", "dan"])
    e = fs.explain(lambda A: np.c_[A @ [1, 2, 3.], A @ [-1, 0, 1.] + 5], X, background=X.iloc[:1], progress=False,
                   seed=0)
    x0 = np.asarray(X)[0]
    assert e.values.shape == (4, 3, 2)
    np.testing.assert_allclose(e.empty_value[0], [x0 @ [1, 2, 3.], x0 @ [-1, 0, 1.] + 5])    # two base values
    row = e.to_shap()[1]                                         # what shap gives: (players, outputs), (outputs,)
    assert row.values.shape == (3, 2) and np.shape(row.base_values) == (2,) and row.data.shape == (3,)
    back = fs.Explanation.from_shap(row)
    assert back.values.shape == (1, 3, 2)
    np.testing.assert_array_equal(back.values, e.values[1:2])
    np.testing.assert_array_equal(back.base_values, e.base_values[1:2])
    np.testing.assert_array_equal(back.data, np.asarray(X)[1:2])
    assert back.player_names == ["a", "b", "c"] and back.row_names == ["bob"]
    bare = fs.Explanation.from_shap(shap.Explanation(values=np.arange(6.0).reshape(3, 2), base_values=[0.5, -0.5]))
    assert bare.values[0, :, 1].tolist() == [1.0, 3.0, 5.0] and bare.base_values.tolist() == [[0.5, -0.5]]


def test_row_names_go_to_shap_and_come_back():
    import pandas as pd

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(4, 3)), columns=list("abc"),
                     index=["ann", "bob", "cid", "dan"])
    e = fs.explain(lambda A: A @ [1, 2, 3.], X, background=X.iloc[:1], progress=False, seed=0)
    s = e.to_shap()
    assert list(s.instance_names) == ["ann", "bob", "cid", "dan"]
    back = fs.Explanation.from_shap(s)
    assert back.row_names == ["ann", "bob", "cid", "dan"]
    np.testing.assert_array_equal(back.values, e.values)
    assert fs.Explanation.from_shap(s[2]).row_names == ["cid"]
    assert fs.Explanation.from_shap(shap.Explanation(np.ones((2, 3)))).row_names == ["0", "1"]   # none: numbers
    with pytest.raises(ValueError, match="shap_explanation: 3 instance names for 2"):
        fs.Explanation.from_shap(shap.Explanation(np.ones((2, 3)), instance_names=["a", "b", "c"]))


@pytest.mark.parametrize("fault, match", [
    (dict(base_values=np.zeros(4)), "base_values of shape"),
    (dict(base_values=np.zeros(3), data=np.zeros((2, 3))), "base_values of shape"),   # data: two rows
    (dict(data=np.zeros((2, 5))), "data of shape"),
    (dict(feature_names=["a", "b"]), "2 feature names for 3"),
    (dict(values=np.zeros((2, 3, 4, 5))), "values must be"),
])
def test_a_shap_explanation_that_does_not_fit_is_refused(fault, match):
    args = dict(values=np.ones((2, 3)), base_values=np.zeros(2)) | fault
    with pytest.raises(ValueError, match=f"shap_explanation: {match}"):
        fs.Explanation.from_shap(shap.Explanation(**args))
    with pytest.raises(TypeError, match="shap_explanation must be a shap.Explanation"):
        fs.Explanation.from_shap(np.ones((2, 3)))


def test_shaps_slice_of_one_feature_comes_back_as_an_explanation_of_that_feature():
    # shap_explanation[:, "b"] (values (rows,) or (rows, outputs), feature_names "b") was refused: its values were
    # read as one row of 5 players, "base_values of shape (5,) do not fit values of shape (1, 5)"
    rng = np.random.default_rng(0)
    data = rng.normal(size=(5, 3))
    s = shap.Explanation(rng.normal(size=(5, 3)), base_values=np.arange(5.0), data=data, feature_names=["a", "b", "c"])
    column = fs.Explanation.from_shap(s[:, "b"])
    assert column.player_names == ["b"] and column.values.shape == (5, 1)
    np.testing.assert_array_equal(column.values[:, 0], s.values[:, 1])
    np.testing.assert_array_equal(column.data[:, 0], data[:, 1])
    np.testing.assert_array_equal(column.base_values, np.arange(5.0))
    several = shap.Explanation(rng.normal(size=(5, 3, 2)), base_values=np.ones((5, 2)), data=data,
                               feature_names=["a", "b", "c"], output_names=["p", "q"])
    column = fs.Explanation.from_shap(several[:, "c"])
    assert column.values.shape == (5, 1, 2) and column.output_names == ["p", "q"]
    np.testing.assert_array_equal(column.values[:, 0], several.values[:, 2])
    cell = fs.Explanation.from_shap(s[3, "a"])
    assert cell.values.tolist() == [[s.values[3, 0]]] and cell.base_values.tolist() == [3.0]


def test_a_converted_result_shares_no_array_with_its_source():
    # to_shap gave shap our data array itself and from_shap kept shap's values and data: s.data[0, 0] = 999 changed
    # e.data, and sh.values[0, 0] = 777 changed the values of the Explanation read from it
    rng = np.random.default_rng(0)
    data = rng.normal(size=(3, 2))
    e = fs.Explanation(values=rng.normal(size=(3, 2)), stderr=np.full((3, 2), 0.1), empty_value=np.zeros(3),
                       index="shapley", data=data.copy())
    values = e.values.copy()
    s = e.to_shap()
    s.data[0, 0], s.values[0, 0], s.error_std[0, 0] = 999.0, 555.0, 9.0
    assert e.data.tolist() == data.tolist() and np.array_equal(e.values, values) and e.stderr[0, 0] == 0.1
    sh = shap.Explanation(values.copy(), base_values=np.zeros(3), data=data.copy(), error_std=np.full((3, 2), 0.2))
    back = fs.Explanation.from_shap(sh)
    sh.values[0, 0], sh.data[0, 0], sh.error_std[0, 0] = 777.0, 111.0, 7.0
    assert np.array_equal(back.values, values) and back.data.tolist() == data.tolist() and back.stderr[0, 0] == 0.2


def test_a_text_sent_to_shap_and_back_is_a_text_again():
    """``Explanation.from_shap(e.to_shap())`` of a text lost info['text'], so plot("text") refused it ("takes the
    Explanation of one text") and the tokens were gone; shap's Explanation holds the pieces (data) named by their
    tokens, which is all a text needs: it is drawn again with the same values. A table row of words is no text."""
    e = fs.explain(lambda ts: [t.count("good") - t.count("bad") for t in ts], "good food, bad  service",
                   progress=False)
    back = fs.Explanation.from_shap(e.to_shap())
    assert back.is_text and back.info["text"] == "good food, bad  service"
    assert back.tokens == ["good", "food", ",", "bad", "service"]
    np.testing.assert_allclose(back.values, e.values)
    assert back.plot("text") is not None
    assert back._repr_html_().count("<span") == e._repr_html_().count("<span") == 5
    shaps = shap.Explanation(values=np.array([0.5, -1.0]), base_values=0.0, data=np.array(["nice ", "day"]),
                             feature_names=["nice ", "day"])                # shap's own: one text, names = tokens
    assert fs.Explanation.from_shap(shaps).info["text"] == "nice day"
    table = shap.Explanation(values=np.array([[0.5, -1.0]]), base_values=np.zeros(1),
                             data=np.array([["paris", "red"]], dtype=object), feature_names=["city", "colour"])
    with pytest.raises(ValueError, match="holds no text .*string pieces named by their tokens"):
        fs.Explanation.from_shap(table).plot("text")


def _smooth_model():
    """A black box (a function of rows) with interactions, seven features, and shap's masker's background."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 7))
    w = rng.normal(size=(7, 5))

    def f(A):
        h = np.tanh(np.asarray(A) @ w)
        return h[:, 0] * h[:, 1] + h[:, 2] - 0.5 * h[:, 3] * h[:, 4]
    return f, X


def test_exact_values_equal_shaps_exact_explainer_on_the_same_masker():
    """The interventional game is shap's Independent masker's: at every coalition our values are its values."""
    f, X = _smooth_model()
    bg = X[:20]
    theirs = shap.explainers.Exact(f, shap.maskers.Independent(bg, max_samples=20))(X[20:24])
    ours = fs.explain(f, X[20:24], background=bg, budget=2 ** 7, seed=0, progress=False)
    assert ours.method == "exact"
    np.testing.assert_allclose(ours.values, theirs.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.base_values, theirs.base_values, rtol=0, atol=1e-12)


def test_owen_values_of_shaps_clustering_equal_its_partition_explainer():
    """shap's Partition explainer computes Owen values of its masker's binary clustering: ours of the same
    hierarchy (the linkage read as nested lists) are the same numbers."""
    f, X = _smooth_model()
    bg = X[:20]
    linkage = shap.utils.hclust(X[:100], metric="correlation")
    nodes: dict = {i: i for i in range(7)}
    for k, (a, b) in enumerate(linkage[:, :2].astype(int)):
        nodes[7 + k] = [nodes[a], nodes[b]]
    hierarchy = nodes[7 + len(linkage) - 1]
    masker = shap.maskers.Partition(bg, max_samples=20, clustering=linkage)
    theirs = shap.explainers.Partition(f, masker)(X[20:24], max_evals=500)
    ours = fs.explain(f, X[20:24], background=bg, index="owen", partition=hierarchy, budget=2 ** 7, seed=0,
                      progress=False)
    assert ours.method == "exact"
    np.testing.assert_allclose(ours.values, theirs.values, rtol=0, atol=1e-12)
    assert np.abs(ours.values - fs.explain(f, X[20:24], background=bg, budget=2 ** 7, progress=False).values).max() \
        > 1e-3                                               # the hierarchy changes the values: not Shapley's
