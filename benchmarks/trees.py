"""fairshare bench trees: exact tree values against shap.TreeExplainer and shapiq's TreeExplainer.

Time per explanation (same rows, same values) on adult and nhanes xgboost models, a digits
random forest and a CIFAR-sized (3072-feature) synthetic random forest, in path-dependent and
interventional (100 background rows) mode, reported as ratios in one run (best of up to three calls each). Also exact Banzhaf
(ours; shapiq's Banzhaf tree path fails in this environment and is reported as such).
"""

from __future__ import annotations

import warnings

import numpy as np

import fairshare as fs

from .common import best_of, table, timed, write_report
from .datasets import adult_shap, nhanes

warnings.filterwarnings("ignore")

SIZES = {"quick": dict(rows=5, background=10, shapiq_rows=2, forest_rows=300),
         "default": dict(rows=100, background=100, shapiq_rows=10, forest_rows=2000),
         "full": dict(rows=100, background=100, shapiq_rows=100, forest_rows=5000)}


def models(cfg):
    import xgboost as xgb
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier

    X, y, _ = adult_shap()
    yield "adult (xgboost, 12 features)", xgb.XGBClassifier(n_estimators=100, max_depth=6, n_jobs=2).fit(X[:20000], y[:20000]), X[20000:]
    X, y, _ = nhanes()
    yield "nhanes (xgboost, 79 features, NaN)", xgb.XGBRegressor(n_estimators=100, max_depth=6, n_jobs=2).fit(X[:10000], y[:10000]), X[10000:]
    X, y = load_digits(return_X_y=True)
    yield "digits (random forest, 64 features, 10 classes)", RandomForestClassifier(n_estimators=100, max_depth=10, random_state=0, n_jobs=2).fit(X[:1400], y[:1400]), X[1400:].astype(float)
    rng = np.random.default_rng(0)
    m = cfg["forest_rows"]
    X = rng.random((m, 3072))
    y = (X[:, :64].sum(axis=1) + 0.5 * rng.standard_normal(m) > 32).astype(int)
    yield "CIFAR-sized synthetic (random forest, 3072 features, depth 15)", RandomForestClassifier(n_estimators=100, max_depth=15, random_state=42, n_jobs=2).fit(X, y), rng.random((200, 3072))


def _shap_values(model, rows, background):
    import shap

    if background is None:
        explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    else:
        explainer = shap.TreeExplainer(model, data=background, feature_perturbation="interventional", model_output="raw")
    values = np.asarray(explainer.shap_values(rows, check_additivity=False))
    return values


def _shapiq(model, rows, index):
    import shapiq

    explainer = shapiq.TreeExplainer(model, index=index, max_order=1)
    return [explainer.explain(r).get_n_order_values(1) for r in rows]


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = SIZES[size]
    rows_out, banzhaf_3072, first_call = [], None, None
    for name, model, X in models(cfg):
        rows = X[: cfg["rows"]]
        background = X[-cfg["background"]:]
        for mode in ("path-dependent", "interventional"):
            bg = background if mode == "interventional" else None
            # one untimed call each (ours: the first one in the process loads the compiled kernels)
            _, t_warm = timed(lambda: fs.games.tree_values(model, rows[:2], "shapley", mode=mode, background=bg))
            first_call = t_warm if first_call is None else first_call
            ours, t_ours = best_of(lambda: fs.games.tree_values(model, rows, "shapley", mode=mode, background=bg))
            _, t_banzhaf = best_of(lambda: fs.games.tree_values(model, rows, "banzhaf", mode=mode, background=bg))
            try:
                _shap_values(model, rows[:2], bg)
                theirs, t_shap = best_of(lambda: _shap_values(model, rows, bg))
                if theirs.shape != ours.shape:
                    theirs = np.moveaxis(theirs, 0, -1)
                agree = float(np.abs(theirs - ours).max())
            except Exception as exc:  # noqa: BLE001
                t_shap, agree = float("nan"), f"shap failed: {type(exc).__name__}"
            shapiq_time = shapiq_bv = "-"
            if mode == "path-dependent":
                k = cfg["shapiq_rows"]
                try:
                    _, t = timed(lambda: _shapiq(model, rows[:k], "SV"))
                    shapiq_time = f"{1000 * t / k:.1f} ({(t / k) / (t_ours / len(rows)):.1f}x ours)"
                except Exception as exc:  # noqa: BLE001
                    shapiq_time = f"failed: {type(exc).__name__}"
                try:
                    timed(lambda: _shapiq(model, rows[:1], "BV"))
                    shapiq_bv = "ran"
                except Exception as exc:  # noqa: BLE001
                    shapiq_bv = f"failed: {type(exc).__name__}"
            per = 1000.0 / len(rows)
            rows_out.append([name, mode, len(rows), t_ours * per, t_banzhaf * per, t_shap * per,
                             t_shap / t_ours, t_banzhaf / t_ours, agree, shapiq_time, shapiq_bv])
            if name.startswith("CIFAR") and mode == "path-dependent":
                _, banzhaf_3072 = timed(lambda: fs.games.tree_values(model, rows[:1], "banzhaf"))
    sections = [
        f"Run with `fairshare bench trees --size {size}`. Times are milliseconds per explained row "
        f"({cfg['rows']} rows explained in one call each; interventional mode with {cfg['background']} background rows), "
        "fastest of up to three calls after one untimed call, for fairshare and shap alike; each call includes reading "
        "the model (fairshare) or building the explainer (shap). fairshare runs on one core; for xgboost path-dependent values shap calls xgboost's own `pred_contribs`, which uses the model's threads (2 here). "
        "`shap / ours` above 1 means fairshare is faster; `agreement` is the largest absolute difference between "
        "fairshare's and shap's Shapley values.",
        table(["model", "mode", "rows", "fairshare Shapley ms", "fairshare Banzhaf ms", "shap ms", "shap / ours",
               "Banzhaf / Shapley (ours)", "agreement", "shapiq SV ms", "shapiq BV"], rows_out),
        f"Exact Banzhaf values of one row of the 3072-feature forest (path-dependent): {banzhaf_3072:.2f} s "
        "(target: under 20 s).",
        f"The first call in this process took {first_call:.2f} s: it loads fairshare's compiled tree kernels from "
        "numba's cache (compiling them, a few seconds, happens once after installation).",
    ]
    write_report("trees", "fairshare bench trees", sections, out)
