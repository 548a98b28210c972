"""fairshare bench auto: what ``method="auto"`` costs and gains against plain regression, on cheap and expensive models.

``auto`` adds the tree control variate (ten surrogate fits, 0.25-1.5 s) only where a game declares a cost
per evaluation (``Game.cost()``, a fixed cost model in ``fairshare/games/cost.py``) that makes the fits at
most 30% of its evaluations. This benchmark checks that promise where users meet it:

- three cheap models (a ColumnTransformer + logistic pipeline on adult with its string columns, a torch MLP
  and the README's xgboost model through ``predict_proba``, 50 background rows each): ``auto`` must be within
  1.3x of plain regression's time;
- two expensive ones (an RBF support-vector regressor on california with 200 background rows; data valuation
  of pima-diabetes points with logistic-regression fits): ``auto`` takes the control variate; the table
  shows its time and its error (or detection AUC) against plain regression's, in the same run;
- the breast-cancer xgboost regressor of ``bench shapley`` against one baseline row, as a black box: what
  ``auto`` chooses and what the control variate would have gained there;
- the cost model's predicted seconds per evaluation next to the measured ones.
"""

from __future__ import annotations

import time

import numpy as np

import fairshare as fs
from fairshare.doors.explain import default_budget

from .common import configuration, best_of, table, write_report
from .datasets import adult_census_frame, california, pima

SIZES = {"quick": dict(rows=1, reference=2000, svr_train=400, svr_bg=20, dv_seeds=1, dv_points=30, dv_budget=300,
                       bc_seeds=2, forest_trees=20, forest_bg=20),
         "default": dict(rows=5, reference=30000, svr_train=3000, svr_bg=200, dv_seeds=5, dv_points=60,
                         dv_budget=1200, bc_seeds=10, forest_trees=500, forest_bg=400),
         "full": dict(rows=10, reference=60000, svr_train=3000, svr_bg=200, dv_seeds=10, dv_points=60,
                      dv_budget=1200, bc_seeds=20, forest_trees=500, forest_bg=400)}


# ------------------------------------------------------------------------------------------------- models
def adult_pipeline():
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame, y = adult_census_frame(3000)
    strings = list(frame.select_dtypes(exclude="number").columns)
    numbers = [c for c in frame.columns if c not in strings]
    pipe = make_pipeline(ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), strings),
                                            ("num", StandardScaler(), numbers)]), LogisticRegression(max_iter=2000))
    pipe.fit(frame.iloc[:2500], y[:2500])
    return pipe.predict_proba, frame.iloc[2500:], frame.iloc[:50], None


def breast_cancer():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    return data.data, data.target


def torch_mlp():
    import torch

    X, y = breast_cancer()
    mu, sd = X.iloc[:400].mean(), X.iloc[:400].std()
    Xs = ((X - mu) / sd).to_numpy(np.float32)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(30, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 2), torch.nn.Softmax(dim=-1))
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    target = torch.tensor(y.to_numpy()[:400])
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.nll_loss(torch.log(net(torch.tensor(Xs[:400])) + 1e-9), target).backward()
        opt.step()
    return net, Xs[400:], Xs[:50], None


def readme_xgboost():
    import xgboost as xgb

    X, y = breast_cancer()
    model = xgb.XGBClassifier(n_estimators=200, max_depth=4).fit(X.iloc[:400], y.iloc[:400])
    return model.predict_proba, X.iloc[400:], X.iloc[:50], None


def forest(cfg: dict):
    from sklearn.ensemble import RandomForestClassifier

    X, y = breast_cancer()
    model = RandomForestClassifier(n_estimators=cfg["forest_trees"], random_state=0).fit(X.iloc[:400], y.iloc[:400])
    background = X.iloc[:cfg["forest_bg"]]
    return model.predict_proba, X.iloc[400:], background, ("trees", model)


def svr(cfg: dict):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    X, y, _ = california()
    n = cfg["svr_train"]
    model = make_pipeline(StandardScaler(), SVR(C=10.0)).fit(X[:n], y[:n])
    return model.predict, X[n:n + 50], X[n + 50:n + 50 + cfg["svr_bg"]], "exact"


# ------------------------------------------------------------------------------------------------ measures
def _time(fn) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def model_rows(label: str, make, cfg: dict, budget: int | None) -> tuple[list, list]:
    """auto against plain regression on the rows of one model: seconds, the choice, error against a reference."""
    predict, X, background, truth_by = make()
    games = [fs.games.ModelGame(predict, X.iloc[[i]] if hasattr(X, "iloc") else X[i], background)
             for i in range(cfg["rows"])]
    n = games[0].n_players
    b = default_budget(n) if budget is None else budget
    for method in ("auto", "regression"):                        # warm the model and the engine at this budget
        fs.estimate(games[0], "shapley", method=method, budget=b, seed=99)
    truths = []
    for i, g in enumerate(games):
        if truth_by == "exact":
            truths.append(fs.exact(g, "shapley").values)
        elif isinstance(truth_by, tuple):                       # a tree model: its own exact interventional values
            tree = fs.games.TreeGame(truth_by[1], X.iloc[[i]], mode="interventional", background=background)
            truths.append(fs.exact(tree, "shapley").values)
        else:
            truths.append(fs.estimate(g, "shapley", method="regression", budget=cfg["reference"], seed=1000 + i)
                          .values)
    out = {}
    for method in ("auto", "regression"):
        phis, seconds = best_of(lambda: [fs.estimate(g, "shapley", method=method, budget=b, seed=i)
                                         for i, g in enumerate(games)], repeats=5, budget_s=30.0)
        errs = [fs.metrics.relative_squared_error(phi.values, t) for phi, t in zip(phis, truths)]
        out[method] = (seconds / len(games), float(np.median(errs)), phis[0].info["choice"])
    calls = fs.games.ModelGame(predict, X.iloc[[0]] if hasattr(X, "iloc") else X[0], background)
    S = np.random.default_rng(0).random((min(b, 1000), n)) < 0.5
    _, measured = _time(lambda: calls(S))
    auto, plain = out["auto"], out["regression"]
    row = [label, n, b, auto[2]["method"], auto[0], plain[0], auto[0] / plain[0], auto[1], plain[1],
           plain[1] / auto[1] if auto[1] > 0 else float("nan")]
    cost = [label, background.shape[0], games[0].cost() * 1e3, measured / S.shape[0] * 1e3,
            games[0].cost() / (measured / S.shape[0])]
    print(f"   {label}: auto {auto[2]['method']} {auto[0]:.3f} s vs regression {plain[0]:.3f} s", flush=True)
    return row, cost, auto[2]["why"]


def data_valuation_rows(cfg: dict) -> tuple[list, list]:
    """Kernel Banzhaf data values of pima-diabetes points (10% labels flipped): auto (which takes the control
    variate: fits are expensive) against plain Kernel Banzhaf, same fits, detection AUC of the flipped labels."""
    from sklearn.linear_model import LogisticRegression

    X, y, _ = pima()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    n = cfg["dv_points"]
    res = {"auto": ([], 0.0, None), "kernel-banzhaf": ([], 0.0, None)}
    for seed in range(cfg["dv_seeds"]):
        rng = np.random.default_rng(seed)
        idx = rng.permutation(len(X))
        train, val = idx[:n], idx[n:n + 200]
        yt = y[train].copy()
        flipped = np.zeros(n, dtype=bool)
        flipped[rng.choice(n, n // 10, replace=False)] = True
        yt[flipped] = 1 - yt[flipped]
        for method in res:
            dv, t = _time(lambda: fs.value_data(LogisticRegression(), X[train], yt, X[val], y[val], index="banzhaf",
                                                method=method, budget=cfg["dv_budget"], seed=seed, progress=False))
            aucs, seconds, _ = res[method]
            res[method] = (aucs + [dv.detection_auc(flipped)], seconds + t, dv.info["choice"])
    (a_auc, a_s, a_choice), (p_auc, p_s, _) = res["auto"], res["kernel-banzhaf"]
    k = cfg["dv_seeds"]
    row = ["data valuation: pima, logistic fits (Banzhaf)", n, cfg["dv_budget"], a_choice["method"], a_s / k,
           p_s / k, a_s / p_s, f"AUC {np.median(a_auc):.3f}", f"AUC {np.median(p_auc):.3f}", "-"]
    print(f"   data valuation: auto {a_choice['method']} {a_s / k:.2f} s vs {p_s / k:.2f} s", flush=True)
    return row, a_choice["why"]


def breast_cancer_black_box(cfg: dict) -> list:
    """The bench-shapley breast-cancer game (XGBRegressor depth 10, one baseline row) as a black box: auto's choice,
    and regression against regression-cv at 4n + 2, 10n and 30n."""
    import xgboost as xgb

    X, y = breast_cancer()
    X = X.to_numpy(float)
    split = int(0.8 * len(X))
    model = xgb.XGBRegressor(n_estimators=100, max_depth=10, random_state=0, n_jobs=2).fit(X[:split],
                                                                                          y.to_numpy(float)[:split])
    x, base = X[split], X[0]
    truth = fs.exact(fs.games.TreeGame(model, x, mode="interventional", background=base), "shapley").values
    game = fs.games.ModelGame(model.predict, x, base)
    rows = []
    for budget in (4 * 30 + 2, 300, 900):
        out = {}
        for label, method, b in (("auto", "auto", budget), ("regression", "regression", budget),
                                 ("cv", "regression-cv", budget), ("10x", "regression", 10 * budget)):
            errs, seconds = [], 0.0
            for s in range(cfg["bc_seeds"]):
                phi, t = _time(lambda: fs.estimate(game, "shapley", method=method, budget=b, seed=s))
                errs.append(fs.metrics.relative_squared_error(phi.values, truth))
                seconds += t
            out[label] = (float(np.median(errs)), seconds / cfg["bc_seeds"], phi.method)
        rows.append([budget, out["auto"][2], out["auto"][0], out["regression"][0], out["cv"][0],
                     out["regression"][0] / out["cv"][0], out["10x"][0], out["auto"][1], out["cv"][1],
                     out["10x"][1]])
    return rows


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, seeds, key="rows", quiet=True)
    start = time.perf_counter()
    rows, costs, whys = [], [], []
    for label, make, budget in (("cheap: adult pipeline (strings, 12 features)", adult_pipeline, None),
                                ("cheap: torch MLP (breast cancer)", torch_mlp, 200),
                                ("cheap: torch MLP (breast cancer)", torch_mlp, 1000),
                                ("cheap: README xgboost, predict_proba", readme_xgboost, 1000),
                                ("expensive: random forest, 500 trees, predict_proba", lambda: forest(cfg), 1000),
                                ("expensive: RBF SVR (california)", lambda: svr(cfg), 200)):
        row, cost, why = model_rows(label, make, cfg, budget)
        rows.append(row)
        if cost[0] not in [c[0] for c in costs]:
            costs.append(cost)
        whys.append(f"- {label} at {row[2]}: `{row[3]}`: {why}")
    row, why = data_valuation_rows(cfg)
    rows.append(row)
    whys.append(f"- {row[0]}: `{row[3]}`: {why}")
    bc = breast_cancer_black_box(cfg)
    sections = [
        f"Run with `fairshare bench auto --size {size}` in {time.perf_counter() - start:.0f} s: {cfg['rows']} rows per "
        f"model, seconds per explanation (model calls included), error = median relative squared error against "
        f"a reference: the forest's exact values from the tree code, the SVR game's by enumeration (8 features), "
        f"the others a regression of {cfg['reference']} evaluations. Targets: on cheap models auto within 1.3x of "
        "plain regression's time; on expensive ones auto takes the control variate, except where the budget covers "
        "over 1/8 of all coalitions (the 8-feature SVR at 200 evaluations: 78%).",
        "## auto against plain regression (same run)\n\n" + table(
            ["model", "n", "budget", "auto chose", "auto s", "regression s", "time auto / regression",
             "auto error", "regression error", "error regression / auto"], rows),
        "## What auto said\n\n" + "\n".join(whys),
        "## The cost model: predicted against measured seconds per evaluation\n\n" + table(
            ["model", "background rows", "predicted ms / evaluation", "measured ms / evaluation",
             "predicted / measured"], costs),
        "## The breast-cancer xgboost game of `bench shapley` as a black box (one baseline row)\n\n"
        "A single-baseline game of a deep tree model: the control variate's best case. The model's calls cost "
        "microseconds, so auto does not pay ten surrogate fits for them (below, its choice); naming "
        f"`method='regression-cv'` buys the accuracy per model call ({cfg['bc_seeds']} seeds, median errors against "
        "the exact tree values). Plain regression with ten times the evaluations shows what the same accuracy costs "
        "without the surrogates.\n\n" + table(
            ["budget", "auto chose", "auto error", "regression error", "regression-cv error", "error regression / cv",
             "regression at 10x budget: error", "auto s", "regression-cv s", "regression at 10x s"], bc),
    ]
    write_report("auto", "fairshare bench auto", sections, out)
