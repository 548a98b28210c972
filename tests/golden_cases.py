"""Golden values: every registered method on three games and every door with fixed seeds, as the public API gives
them. ``tests/golden/*.npz`` hold them as recorded; ``tests/test_golden.py`` recomputes each case and compares
bit for bit, so a change that moves code around (issue 36) proves that nothing moved.

Regenerate (only when a change is meant to move values, and say which in the commit):
``python tests/golden_cases.py --write [case ...]``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

import fairshare as fs

FOLDER = Path(__file__).resolve().parent / "golden"
DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"

#: name -> function returning a dict of arrays
CASES: dict[str, Callable[[], dict[str, np.ndarray]]] = {}


def case(fn: Callable[[], dict]) -> Callable[[], dict]:
    CASES[fn.__name__] = fn
    return fn


def _arrays(result: Any, prefix: str = "") -> dict[str, np.ndarray]:
    """The numbers of a result object (values, stderr, base values, evaluations) as arrays."""
    out = {}
    for name in ("values", "stderr", "empty_value", "grand_value", "n_evaluations", "interactions",
                 "interactions_stderr", "weights", "indices", "objective"):
        value = getattr(result, name, None)
        if value is not None and not callable(value):
            arr = np.asarray(value)
            if arr.dtype != object:
                out[prefix + name] = arr
    return out


def _prototype_arrays(protos: Any, prefix: str) -> dict[str, np.ndarray]:
    """The numbers of SBQ prototypes as recorded: their weights (since prototypes became results, also their
    ``values``: the same array, recorded once under its own name), indices and objective path."""
    return {prefix + name: np.asarray(getattr(protos, name)) for name in ("weights", "indices", "objective")}


# ------------------------------------------------------------------------------------------------ games
def _games() -> dict[str, fs.Game]:
    rng = np.random.default_rng(7)
    table = rng.normal(size=1 << 9) + np.sqrt(np.arange(1 << 9) % 7)
    weights = 1 << np.arange(9)
    return {
        "soum10": fs.games.SOUMGame.random(10, n_terms=30, max_size=4, seed=3),
        "voting11": fs.games.WeightedVotingGame([5, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1], quota=15),
        "table9": fs.games.FunctionGame(lambda S: table[S.astype(np.int64) @ weights], n_players=9),
    }


#: the semivalues a method is run on, by the index families ``fs.methods()`` lists
_FAMILY_INDICES = {"shapley": ["shapley"], "banzhaf": ["banzhaf"], "weighted-banzhaf": ["banzhaf",
                                                                                      "weighted-banzhaf(0.3)"],
                   "any semivalue": ["shapley", "banzhaf", "beta-shapley(4,1)"], "leave-one-out": ["loo"]}


@case
def registry_methods() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for game_name, game in _games().items():
        for method in fs.methods():
            if fs.engine.registry.get_method(method.name).requires:      # gradient methods: no gradients here
                continue
            indices = sorted({i for family in method.indices for i in _FAMILY_INDICES.get(family, [])})
            for index in indices:
                phi = fs.exact(game, index) if method.name == "exact" else \
                    fs.estimate(game, index, method=method.name, budget=600, seed=0)
                out.update(_arrays(phi, f"{game_name}/{method.name}/{index}/"))
                if game_name == "table9" and method.name != "exact":  # below its 512 coalitions: every method
                    phi = fs.estimate(game, index, method=method.name, budget=450, seed=0)   # samples (at 600 the
                    out.update(_arrays(phi, f"{game_name}@450/{method.name}/{index}/"))  # Monte Carlo ones are exact)
    return out


@case
def interactions_and_owen() -> dict[str, np.ndarray]:
    games = _games()
    out: dict[str, np.ndarray] = {}
    for index in ("k-sii", "stii", "fsii", "bii"):
        res = fs.interactions(games["soum10"], index, order=2, budget=600, seed=0)
        out.update(_arrays(res, f"interactions/{index}/"))
    for method in ("iq-regression", "iq-stratified", "iq-permutation"):
        index = "sii" if method == "iq-permutation" else "k-sii"
        res = fs.interactions(games["table9"], index, order=2, method=method, budget=400, seed=0)
        out.update(_arrays(res, f"interactions/{method}/"))
    out.update(_arrays(fs.interactions(games["table9"], "k-sii", order=2, method="exact"), "interactions/exact/"))
    blocks = [[0, 1, 2], [3, 4], [5, 6, 7, 8]]
    for method in ("owen-permutation", "owen-adaptive", "exact"):
        phi = fs.estimate(games["table9"], "owen", partition=blocks, method=method,
                          budget=300 if method != "exact" else 1 << 9, seed=0)
        out.update(_arrays(phi, f"owen/{method}/"))
        if method != "exact":                             # below the 96 coalitions of whole blocks: sampled
            out.update(_arrays(fs.estimate(games["table9"], "owen", partition=blocks, method=method, budget=60,
                                           seed=0), f"owen@60/{method}/"))
    return out


# ------------------------------------------------------------------------------------------------ doors
def _cancer():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    return data.data.iloc[:, :6], data.target


@case
def door_tables() -> dict[str, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    X, y = _cancer()
    model = LogisticRegression(max_iter=5000).fit(X, y)
    out = {}
    for name, kw in {"frame": {}, "banzhaf": {"index": "banzhaf"}, "beta": {"index": "beta-shapley(4,1)"},
                     "owen": {"index": "owen", "partition": [["mean radius", "mean texture"],
                                                             ["mean perimeter", "mean area"],
                                                             ["mean smoothness", "mean compactness"]]},
                     "logit": {"link": "logit"}, "groups": {"groups": [[0, 1], [2, 3, 4], [5]]}}.items():
        e = fs.explain(model, X.iloc[:3], background=X.iloc[100:120], budget=150, seed=0, progress=False, **kw)
        out.update(_arrays(e, f"{name}/"))
    e = fs.explain(model.predict_proba, X.iloc[:2].to_numpy(), background=X.iloc[100:120].to_numpy(), budget=200,
                   seed=1, progress=False, n_jobs=2)
    out.update(_arrays(e, "numpy/"))
    return out


@case
def door_sparse() -> dict[str, np.ndarray]:
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(30, 12, density=0.3, random_state=0, format="csr")
    w = rng.normal(size=12)
    e = fs.explain(lambda A: np.tanh(A @ w), X[:3], background=X[10:20], budget=200, seed=0, progress=False)
    return _arrays(e)


@case
def door_texts() -> dict[str, np.ndarray]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    corpus = ["win a free prize now", "free cash, click now", "meeting on monday", "see the attached report",
              "claim your free prize", "lunch on monday?"]
    model = make_pipeline(TfidfVectorizer(), LogisticRegression(C=10.0)).fit(corpus, [1, 1, 0, 0, 1, 0])
    texts = ["Free prize now. See you on monday, with the report!", "claim cash now"]
    out = {}
    for k, e in enumerate(fs.explain(model, texts, budget=80, seed=0, progress=False)):
        out.update(_arrays(e, f"shapley/{k}/"))
    owen = fs.explain(model, texts[0], index="owen", budget=60, seed=0, progress=False)
    out.update(_arrays(owen, "owen/"))
    masked = fs.explain(model, texts[1], mask_token="[MASK]", seed=0, progress=False)
    out.update(_arrays(masked, "mask/"))
    return out


@case
def door_sequences() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    seqs = rng.normal(size=(30, 12, 3))

    def trend(S: np.ndarray) -> np.ndarray:
        return S[:, -4:, 0].mean(axis=1) * S[:, :, 2].std(axis=1)

    out = {}
    for name, groups in {"time": "time", "window": ("time", 3), "features": "features"}.items():
        e = fs.explain(trend, seqs[:2], background=seqs[10:20], groups=groups, budget=200, seed=0, progress=False)
        out.update(_arrays(e, f"{name}/"))
    cells = fs.explain(trend, seqs[:1], background=seqs[10:15], budget=300, seed=0, progress=False)
    out.update(_arrays(cells, "cells/"))
    return out


@case
def door_torch() -> dict[str, np.ndarray]:
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(48, 2))
    images = torch.rand(2, 2, 4, 4, generator=torch.Generator().manual_seed(1))
    e = fs.explain(net, images, budget=300, seed=0, progress=False)
    return _arrays(e)


def _trees(output: str) -> dict[str, np.ndarray]:
    import lightgbm as lgb
    import xgboost as xgb

    X, y = _cancer()
    out = {}
    models = {"xgboost": xgb.XGBClassifier(n_estimators=20, max_depth=3, random_state=0).fit(X, y),
              "lightgbm": lgb.LGBMClassifier(n_estimators=20, num_leaves=7, verbose=-1, random_state=0).fit(X, y)}
    for name, model in models.items():
        kw = {"model_output": output} if output != "raw" else {}
        if output == "log_loss":
            kw["y"] = y.iloc[:3].to_numpy()
        if output == "raw":
            out.update(_arrays(fs.explain(model, X.iloc[:3], progress=False), f"{name}/path-dependent/"))
        e = fs.explain(model, X.iloc[:3], background=X.iloc[100:130], progress=False, seed=0, **kw)
        out.update(_arrays(e, f"{name}/interventional/"))
    return out


@case
def door_trees_raw() -> dict[str, np.ndarray]:
    return _trees("raw")


@case
def door_trees_probability() -> dict[str, np.ndarray]:
    return _trees("probability")


@case
def door_trees_log_loss() -> dict[str, np.ndarray]:
    return _trees("log_loss")


@case
def door_tree_interactions() -> dict[str, np.ndarray]:
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    model = GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, X[:, 0] * X[:, 1] + X[:, 2])
    e = fs.explain(model, X[:3], interactions=2, progress=False)
    out = _arrays(e, "path-dependent/")
    pairs = fs.games.tree_interactions(model, X[:3])
    out["tree_interactions"] = np.asarray(getattr(pairs, "values", pairs))
    return out


@case
def door_catboost_categories() -> dict[str, np.ndarray]:
    import catboost as cb
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=300), "job": rng.choice(["admin", "tech", "retired"], 300),
                          "b": rng.normal(size=300), "city": rng.choice(["x", "y", "z", "w"], 300)})
    target = (frame.a + (frame.job == "tech") - 0.5 * (frame.city == "w") > 0.3).astype(int)
    model = cb.CatBoostClassifier(iterations=20, depth=3, verbose=0, random_seed=0, allow_writing_files=False,
                                  cat_features=["job", "city"]).fit(frame, target)
    out = _arrays(fs.explain(model, frame.iloc[:3], progress=False), "path-dependent/")
    out.update(_arrays(fs.explain(model, frame.iloc[:3], background=frame.iloc[100:120], progress=False),
                       "interventional/"))
    return out


@case
def door_conditional_imputation() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    cov = np.array([[1.0, 0.7, 0.2, 0.0], [0.7, 1.0, 0.3, 0.1], [0.2, 0.3, 1.0, 0.5], [0.0, 0.1, 0.5, 1.0]])
    background = rng.multivariate_normal(np.zeros(4), cov, size=60)
    X = rng.multivariate_normal(np.zeros(4), cov, size=2)

    def model(A: np.ndarray) -> np.ndarray:
        return np.tanh(A @ [1.0, -2.0, 0.5, 1.5]) + A[:, 0] * A[:, 2]

    out = {}
    for imputation in ("gaussian", "copula", "empirical"):
        e = fs.explain(model, X, background, imputation=imputation, budget=100, seed=0, progress=False)
        out.update(_arrays(e, f"{imputation}/"))
    return out


@case
def door_value_data() -> dict[str, np.ndarray]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    y[:5] = 1 - y[:5]
    train, val = slice(0, 24), slice(24, 60)
    out = _arrays(fs.value_data(KNeighborsClassifier(3), X[train], y[train], X[val], y[val], progress=False), "knn/")
    for index, method in (("banzhaf", "auto"), ("banzhaf", "msr"), ("shapley", "tmc"), ("loo", "auto")):
        dv = fs.value_data(LogisticRegression(), X[train], y[train], X[val], y[val], index=index, method=method,
                           budget=None if index == "loo" else 120, seed=0, progress=False)
        out.update(_arrays(dv, f"{index}/{method}/"))
    return out


@case
def door_examples() -> dict[str, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    from fairshare.examples import (fisher_embedding, influence, rank_mislabeled, select_prototypes,
                                    self_influence)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X @ [1.0, -1.0, 0.5, 0.0] + 0.3 * rng.normal(size=120) > 0).astype(int)
    y[:6] = 1 - y[:6]
    model = LogisticRegression().fit(X, y)
    emb = fisher_embedding(model, X, y)
    out = {"fisher": np.asarray(emb), "fisher_projected": np.asarray(fisher_embedding(model, X, y, projection=3,
                                                                                       seed=0))}
    for kernel in ("linear", "fisher", "rbf"):
        protos = select_prototypes(emb[:100], emb[100:], 6, kernel=kernel)
        out.update(_prototype_arrays(protos, f"sbq/{kernel}/"))
    stochastic = select_prototypes(emb[:100], emb[100:], 6, method="stochastic", seed=0)
    out.update(_prototype_arrays(stochastic, "sbq/stochastic/"))
    out["influence"] = np.asarray(influence(model, X[:100], y[:100], X[100:], y[100:]))
    out["self_influence"] = np.asarray(self_influence(model, X[:100], y[:100]))
    order, scores = rank_mislabeled(model, X[:100], y[:100], X[100:], y[100:])
    out["rank_mislabeled/order"], out["rank_mislabeled/scores"] = np.asarray(order), np.asarray(scores)
    return out


# ------------------------------------------------------------------------------------------------ files
def environment() -> dict[str, str]:
    """The libraries whose arithmetic the golden values depend on (bits may differ across their versions)."""
    import platform

    import scipy
    import sklearn

    versions = {"python": platform.python_version(), "machine": platform.machine(), "numpy": np.__version__,
                "scipy": scipy.__version__, "sklearn": sklearn.__version__}
    for name in ("xgboost", "lightgbm", "catboost", "torch", "numba"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = "missing"
    return versions


def compute(name: str) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: np.asarray(v) for k, v in CASES[name]().items()}


def write(names: list[str]) -> None:
    FOLDER.mkdir(exist_ok=True)
    for name in names:
        arrays = compute(name)
        np.savez_compressed(FOLDER / f"{name}.npz", __environment__=np.array(json.dumps(environment())), **arrays)
        print(f"{name}: {len(arrays)} arrays")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        raise SystemExit("usage: python tests/golden_cases.py --write [case ...]")
    write(sys.argv[2:] or list(CASES))
