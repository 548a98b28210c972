"""A tree library is one Reader: a new library is its module, one line of registration and its test (issue 36).

The "library" here is made up in this file: a model of trees written as nested tuples, with its own predict and its
own file format. Its reader (the module) is ``NestedReader``; registering it is one line (the fixture). fs.explain
then explains it exactly, every door and fact going through the reader: path-dependent values equal enumeration of
the tree game, interventional values equal enumeration of the model's *own* predictions on hybrid rows, a frame's
columns are aligned by the names the reader gives, NaN is taken because the reader says so, and the command line
loads the library's files. Nothing outside ``trees/readers/`` switches on a library's name (checked on the source).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairshare as fs
from fairshare.engine.exact import all_coalitions
from fairshare.trees import readers
from fairshare.trees.ensemble import TreeEnsemble, assemble
from fairshare.trees.readers.base import Reader

N = 5
NAMES = ["age", "income", "height", "weight", "score"]


# ------------------------------------------------------------------------------------ the "library"
class NestedTrees:
    """A made-up library's model: a sum of trees, each an internal node ``(feature, threshold, left, right)`` or a
    leaf ``(value, count)``; a row goes left when ``x < threshold`` or ``x`` is NaN."""

    def __init__(self, trees: list, bias: float, names: list[str]) -> None:
        self.trees, self.bias, self.names = trees, bias, names

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        return np.array([self.bias + sum(_walk(t, x) for t in self.trees) for x in X])

    def save(self, path: str) -> None:
        Path(path).write_text(json.dumps({"trees": self.trees, "bias": self.bias, "names": self.names}))


def _walk(node, x) -> float:
    while len(node) == 4:
        f, thr, left, right = node
        node = left if (np.isnan(x[f]) or x[f] < thr) else right
    return node[0]


def _grow(rng: np.random.Generator, depth: int):
    if depth == 0:
        return (float(rng.normal()), int(rng.integers(1, 50)))
    return (int(rng.integers(N)), float(rng.normal()), _grow(rng, depth - 1), _grow(rng, depth - 1))


def make_model(seed: int = 0) -> NestedTrees:
    rng = np.random.default_rng(seed)
    return NestedTrees([_grow(rng, int(rng.integers(1, 4))) for _ in range(6)], 0.25, NAMES)


# ------------------------------------------------------------------------------------ its reader
def _flatten(node, arrays: dict) -> int:
    """Append ``node`` and its subtree to the node arrays (children after their parent); its index and cover."""
    i = len(arrays["feature"])
    for key in arrays:
        arrays[key].append(None)
    if len(node) == 2:
        arrays["feature"][i], arrays["threshold"][i], arrays["left"][i], arrays["right"][i] = -1, 0.0, -1, -1
        arrays["value"][i], arrays["cover"][i] = [node[0]], float(node[1])
    else:
        left, right = _flatten(node[2], arrays), _flatten(node[3], arrays)
        arrays["feature"][i], arrays["threshold"][i], arrays["left"][i], arrays["right"][i] = node[0], node[1], left, \
            right
        arrays["value"][i], arrays["cover"][i] = [0.0], arrays["cover"][left] + arrays["cover"][right]
    arrays["default_left"][i], arrays["missing"][i] = True, 0
    return i


class NestedReader(Reader):
    """The made-up library's reader: its trees as the one tree table, its raw output, names, NaN and files."""

    name = title = "nested"
    suffixes = (".nested",)
    check_missing = True

    def claims(self, cls: type) -> bool:
        return cls is NestedTrees

    def is_tree_model(self, model) -> bool:
        return True

    def read(self, model) -> TreeEnsemble:
        trees = []
        for tree in model.trees:
            arrays = {k: [] for k in ("feature", "threshold", "left", "right", "default_left", "missing", "cover",
                                      "value")}
            _flatten(tree, arrays)
            arrays["value"] = np.asarray(arrays["value"], dtype=float)
            trees.append(arrays)
        return assemble(trees, N, 1, np.array([model.bias]), strict=True, float32=False, output="sum of trees",
                        feature_names=list(model.names))

    def margin(self, model, X) -> np.ndarray:
        return model.predict(X)[:, None]

    def feature_names(self, model):
        return list(model.names), "the model's features (its names)"

    def accepts_missing(self, model) -> bool:
        return True

    def load(self, path: str) -> NestedTrees:
        spec = json.loads(Path(path).read_text())

        def tuples(node):
            return tuple(tuples(c) if isinstance(c, list) else c for c in node)

        return NestedTrees([tuples(t) for t in spec["trees"]], spec["bias"], spec["names"])


@pytest.fixture
def nested():
    reader = readers.register(NestedReader())          # the one line that registers a library
    yield reader
    readers.READERS.remove(reader)


def _frame(rows: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=NAMES)


ROWS = np.random.default_rng(1).normal(size=(30, N))


# ------------------------------------------------------------------------------------ tests
def test_the_reader_answers_for_its_library_and_reproduces_its_model(nested):
    model = make_model()
    assert readers.reader_for(model) is nested and readers.is_tree_model(model)
    ens = readers.read_ensemble(model)                 # checked against model.predict on probe rows (NaN too)
    rows = ROWS.copy()
    rows[::4, 2] = np.nan
    np.testing.assert_allclose(ens.predict(rows)[:, 0], model.predict(rows), atol=1e-12)
    assert readers.reader_for(object()) is None and not readers.is_tree_model(object())


@pytest.mark.parametrize("index", ["shapley", "banzhaf"])
def test_explain_without_a_background_equals_enumeration_of_the_tree_game(nested, index):
    model = make_model()
    X = _frame(ROWS[:4])
    e = fs.explain(model, X, index=index, progress=False)
    assert e.method == "exact" and e.player_names == NAMES
    for r in range(4):
        game = fs.games.TreeGame(model, X.iloc[[r]])
        truth = fs.exact(game, index, via="enumeration").values
        np.testing.assert_allclose(e.values[r], truth, atol=1e-12)
    if index == "shapley":
        np.testing.assert_allclose(e.values.sum(axis=1) + e.empty_value, model.predict(X), atol=1e-12)


def test_explain_with_a_background_equals_enumeration_of_the_models_own_predictions(nested):
    model = make_model(3)
    x, background = ROWS[[7]].copy(), ROWS[10:16].copy()
    x[0, 1] = np.nan                                   # the reader says the model takes NaN: no refusal
    e = fs.explain(model, _frame(x), _frame(background), progress=False)
    assert e.method == "exact"
    S = all_coalitions(N)
    values = np.mean([model.predict(np.where(S, x, b)) for b in background], axis=0)
    brute = fs.games.FunctionGame(lambda C: values[C @ (1 << np.arange(N))], n_players=N)
    np.testing.assert_allclose(e.values[0], fs.exact(brute, "shapley").values, atol=1e-12)


def test_columns_are_aligned_by_the_names_the_reader_gives(nested):
    model = make_model()
    X = _frame(ROWS[:3])
    shuffled = X[["score", "age", "weight", "height", "income"]]
    np.testing.assert_allclose(fs.games.tree_values(model, shuffled), fs.games.tree_values(model, X))
    with pytest.raises(ValueError, match=r"missing \['score'\]"):
        fs.explain(model, X.rename(columns={"score": "points"}), progress=False)


def test_the_command_line_loads_the_librarys_own_files(nested, tmp_path):
    from fairshare.cli.model_files import load_model

    model = make_model()
    path = tmp_path / "model.nested"
    model.save(str(path))
    loaded = load_model(str(path))
    assert isinstance(loaded, NestedTrees)
    np.testing.assert_array_equal(loaded.predict(ROWS), model.predict(ROWS))


def test_without_its_reader_the_model_is_no_tree_model():
    model = make_model()
    assert not readers.is_tree_model(model)
    with pytest.raises(TypeError, match="model must be an xgboost, lightgbm, catboost or scikit-learn tree model"):
        readers.read_ensemble(model)
    with pytest.raises(ValueError, match="background .* required to explain a non-tree model"):
        fs.explain(model, _frame(ROWS[:2]), progress=False)


# ------------------------------------------------------------------------------------ no switch elsewhere
LIBRARIES = ("xgboost", "lightgbm", "catboost")
PACKAGE = Path(fs.__file__).resolve().parent
# the regression surrogates use xgboost as their own learner (not a model being explained)
OWN_LEARNER = {"engine/surrogate.py", "engine/choice.py"}


def _library_switches(path: Path, root: Path = PACKAGE) -> list[str]:
    """Comparisons with a library's name (``==``, ``in``, ``startswith``) and imports of a library's reader module."""
    found = []
    where = path.relative_to(root).as_posix()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        texts: list = []
        if isinstance(node, ast.Compare):
            texts = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith"):
            texts = list(node.args)
        elif isinstance(node, ast.ImportFrom):
            module, names = node.module or "", {a.name for a in node.names}
            if any(f"readers.{lib}" in module or (module.endswith("readers") and lib in names) for lib in LIBRARIES):
                found.append(f"{where}:{node.lineno} imports a library's reader")
        for text in texts:
            for leaf in ast.walk(text):
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str) and \
                        leaf.value.split(".")[0] in LIBRARIES:
                    found.append(f"{where}:{node.lineno} compares with {leaf.value!r}")
    return found


def test_no_library_switch_outside_the_readers():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("trees/readers/") or relative in OWN_LEARNER:
            continue
        found += _library_switches(path)
    assert not found, "\n".join(found)


def test_the_switch_finder_finds_a_switch(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('def f(model, lib):\n    return type(model).__module__.startswith(("xgboost", "x")) or '
                       'lib == "catboost"\nfrom .readers.lightgbm import read_lightgbm\n')
    assert len(_library_switches(planted, tmp_path)) == 3
