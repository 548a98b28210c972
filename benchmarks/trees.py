"""fairshare bench trees: exact tree values against shap.TreeExplainer and shapiq's TreeExplainer.

Time per explanation (same rows, same values) on adult and nhanes xgboost models, a deep xgboost
model (300 trees of depth 8 on digits), lightgbm, HistGradientBoosting and catboost models, a
digits random forest and a CIFAR-sized (3072-feature) synthetic random forest, in path-dependent
and interventional (100 background rows) mode, reported as ratios in one run (best of up to
three calls each). fairshare is timed with all cores and with one thread (shap's interventional
code is single-threaded); the per-row loop ``fs.exact(TreeGame(model, X[i], ...))`` is timed too.
Also exact Banzhaf (ours; shapiq's Banzhaf tree path fails in this environment and is reported as
such). With ``--device cuda`` (a GPU and xgboost built with CUDA), xgboost's own GPU TreeSHAP
(``pred_contribs`` on a CUDA booster) is measured as the anchor for the xgboost models.
"""

from __future__ import annotations

import warnings

import numpy as np

import fairshare as fs

from .common import best_of, table, timed, write_report
from .datasets import adult_shap, california, nhanes

warnings.filterwarnings("ignore")

SIZES = {"quick": dict(rows=5, background=10, shapiq_rows=2, forest_rows=300, loop_rows=2, trees=0.1),
         "default": dict(rows=100, background=100, shapiq_rows=10, forest_rows=2000, loop_rows=20, trees=1.0),
         "full": dict(rows=100, background=100, shapiq_rows=100, forest_rows=5000, loop_rows=100, trees=1.0)}


def models(cfg):
    """The benchmark's models (``cfg["trees"]`` scales their numbers of trees; the quick size trains tenths)."""
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.datasets import load_digits
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier

    X, y, _ = adult_shap()
    yield "adult (xgboost, 12 features)", xgb.XGBClassifier(n_estimators=_n(cfg, 100), max_depth=6, n_jobs=2).fit(X[:20000], y[:20000]), X[20000:]
    yield "adult (lightgbm, 12 features)", lgb.LGBMClassifier(n_estimators=_n(cfg, 100), num_leaves=63, verbose=-1, n_jobs=2).fit(X[:20000], y[:20000]), X[20000:]
    try:
        import catboost as cb

        yield "adult (catboost, 12 features)", cb.CatBoostClassifier(iterations=_n(cfg, 100), depth=6, verbose=0, thread_count=2, allow_writing_files=False).fit(X[:20000], y[:20000]), X[20000:]
    except ImportError:
        pass
    X, y, _ = nhanes()
    yield "nhanes (xgboost, 79 features, NaN)", xgb.XGBRegressor(n_estimators=_n(cfg, 100), max_depth=6, n_jobs=2).fit(X[:10000], y[:10000]), X[10000:]
    X, y, _ = california()
    yield "california (HistGradientBoosting, 8 features)", HistGradientBoostingRegressor(max_iter=_n(cfg, 100), max_depth=6, random_state=0).fit(X[:15000], y[:15000]), X[15000:]
    X, y = load_digits(return_X_y=True)
    X = X.astype(float)
    yield "digits (xgboost, 300 trees of depth 8)", xgb.XGBRegressor(n_estimators=_n(cfg, 300), max_depth=8, n_jobs=2).fit(X[:1400], y[:1400]), X[1400:]
    yield "digits (random forest, 64 features, 10 classes)", RandomForestClassifier(n_estimators=_n(cfg, 100), max_depth=10, random_state=0, n_jobs=2).fit(X[:1400], y[:1400]), X[1400:]
    rng = np.random.default_rng(0)
    m = cfg["forest_rows"]
    X = rng.random((m, 3072))
    y = (X[:, :64].sum(axis=1) + 0.5 * rng.standard_normal(m) > 32).astype(int)
    yield "CIFAR-sized synthetic (random forest, 3072 features, depth 15)", RandomForestClassifier(n_estimators=_n(cfg, 100), max_depth=15, random_state=42, n_jobs=2).fit(X, y), rng.random((200, 3072))


def _n(cfg, trees: int) -> int:
    return max(5, int(round(trees * cfg["trees"])))


def _one_thread(fn):
    """Run ``fn`` with numba on one thread (shap's interventional code runs on one)."""
    import numba

    def run():
        before = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return fn()
        finally:
            numba.set_num_threads(before)

    return run


def _per_row_loop(model, rows, bg, mode):
    """The natural loop a user writes: one TreeGame and one exact call per row."""
    return [fs.exact(fs.games.TreeGame(model, rows[i], mode=mode, background=bg), "shapley").values
            for i in range(len(rows))]


def _gpu_anchor(model, rows):
    """xgboost's own GPU TreeSHAP (path-dependent) on a CUDA copy of the booster: ms per row, or a reason."""
    import xgboost as xgb

    try:
        booster = model.get_booster().copy()
        booster.set_param({"device": "cuda"})
        dm = xgb.DMatrix(rows)
        booster.predict(dm, pred_contribs=True)                       # warm-up: moves the model to the GPU
        _, t = best_of(lambda: booster.predict(xgb.DMatrix(rows), pred_contribs=True))
        return 1000.0 * t / len(rows)
    except Exception as exc:  # noqa: BLE001
        return f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"


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


def _drop_cache(model):
    """Forget the parsed model, so a timed call reads it again (as shap builds its explainer every call)."""
    from fairshare.trees import forget

    forget(model)


def _probability_rows(cfg) -> list[list]:
    """Class probabilities (``model_output="probability"``) against the margin, per explained row, on adult's
    classifiers: fairshare's exact values (a table of every coalition), its margin path, the model's
    ``predict_proba`` explained as a black box, and shap's probability output (its error against exact values)."""
    import shap

    out = []
    for name, model, X in models(cfg):
        if not name.startswith("adult"):
            continue
        rows, bg = X[: cfg["loop_rows"]], X[-cfg["background"]:]

        def ours(output="raw", rows=rows):
            return fs.explain(model, rows, bg, model_output=output, budget=1 << X.shape[1], progress=False)

        ours("probability", rows[:1])
        exact, t_prob = best_of(lambda: ours("probability"))
        _, t_margin = best_of(ours)
        _per_row_loop(model, rows[:1], bg, "interventional")
        _, t_loop = best_of(lambda: _per_row_loop(model, rows, bg, "interventional"))
        few = rows[: max(1, cfg["loop_rows"] // 10)]
        black, t_black = best_of(lambda: fs.explain(model.predict_proba, few, bg, budget=1 << X.shape[1],
                                                    progress=False), repeats=1)
        gap_black = float(np.abs(black.values - exact.values[: len(few)]).max())
        try:
            explainer = shap.TreeExplainer(model, data=bg, feature_perturbation="interventional",
                                           model_output="probability")
            theirs, t_shap = best_of(lambda: np.asarray(explainer.shap_values(rows)))
            theirs = theirs if theirs.ndim == 2 else theirs[..., 1] if theirs.shape[-1] == 2 else theirs[1]
            shap_gap = f"{float(np.abs(theirs - exact.values[..., 1]).max()):.2g}"
            shap_ms = f"{1000 * t_shap / len(rows):.2f}"
        except Exception as exc:  # noqa: BLE001
            shap_gap, shap_ms = f"failed: {type(exc).__name__}", "-"
        per = 1000.0 / len(rows)
        out.append([name, exact.method, t_margin * per, t_loop * per, t_prob * per, t_prob / t_margin, t_prob / t_loop,
                    1000.0 * t_black / len(few),
                    t_black / len(few) / (t_prob / len(rows)), f"{gap_black:.1g}", shap_ms, shap_gap])
    return out


def _group_rows(cfg) -> list[list]:
    """Groups of features (``fs.explain(model, X, background, groups=...)``, consecutive pairs of features): the
    grouped tree walk against the same call without groups, and against the groups' game explained through the
    model's raw output as a black box (``auto`` at its default budget: exact where it covers every coalition of the
    groups, else estimated; its largest difference from the tree values)."""
    out = []
    for name, model, X in models(cfg):
        if name.startswith("CIFAR") or name.startswith("digits (random"):
            continue
        d = X.shape[1]
        groups = [list(range(j, min(j + 2, d))) for j in range(0, d, 2)]
        rows, bg = X[: cfg["loop_rows"]], X[-cfg["background"]:]
        fs.explain(model, rows[:1], bg, groups=groups, progress=False)
        grouped, t_grouped = best_of(lambda: fs.explain(model, rows, bg, groups=groups, progress=False))
        _, t_plain = best_of(lambda: fs.explain(model, rows, bg, progress=False))
        raw = fs.trees.readers.raw_output(model)
        few = rows[: max(1, cfg["loop_rows"] // 10)]
        box, t_box = best_of(lambda: fs.explain(raw, few, bg, groups=groups, seed=0, progress=False), repeats=1)
        gap = float(np.abs(np.asarray(box.values).reshape(np.shape(grouped.values[: len(few)]))
                           - grouped.values[: len(few)]).max())
        per = 1000.0 / len(rows)
        out.append([name, len(groups), grouped.method, t_grouped * per, t_plain * per, box.method,
                    1000.0 * t_box / len(few), t_box / len(few) / (t_grouped / len(rows)), f"{gap:.2g}"])
    return out


def main(size: str = "default", seeds: int | None = None, out: str | None = None, device: str = "cpu") -> None:
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

            def ours_fn(index="shapley"):
                _drop_cache(model)
                return fs.games.tree_values(model, rows, index, mode=mode, background=bg)

            ours, t_ours = best_of(ours_fn)
            _, t_one = best_of(_one_thread(ours_fn))
            _, t_banzhaf = best_of(lambda: ours_fn("banzhaf"))
            loop_rows = rows[: cfg["loop_rows"]]
            _per_row_loop(model, loop_rows[:1], bg, mode)
            _, t_loop = best_of(lambda: _per_row_loop(model, loop_rows, bg, mode))
            try:
                _shap_values(model, rows[:2], bg)
                theirs, t_shap = best_of(lambda: _shap_values(model, rows, bg))
                if theirs.shape != ours.shape:
                    theirs = np.moveaxis(theirs, 0, -1)
                agree = float(np.abs(theirs - ours).max())
            except Exception as exc:  # noqa: BLE001
                t_shap, agree = float("nan"), f"shap failed: {type(exc).__name__}"
            shapiq_time = "-"
            if mode == "path-dependent":
                k = cfg["shapiq_rows"]
                try:
                    _, t = timed(lambda: _shapiq(model, rows[:k], "SV"))
                    shapiq_time = f"{1000 * t / k:.1f} ({(t / k) / (t_ours / len(rows)):.1f}x ours)"
                except Exception as exc:  # noqa: BLE001
                    shapiq_time = f"failed: {type(exc).__name__}"
            gpu = "-"
            if device == "cuda" and mode == "path-dependent" and type(model).__module__.startswith("xgboost"):
                gpu = _gpu_anchor(model, rows)
            per = 1000.0 / len(rows)
            rows_out.append([name, mode, len(rows), t_ours * per, t_one * per, t_banzhaf * per, t_shap * per,
                             t_shap / t_ours, t_shap / t_one, 1000.0 * t_loop / len(loop_rows), agree, shapiq_time,
                             gpu])
            if name.startswith("CIFAR") and mode == "path-dependent":
                _, banzhaf_3072 = timed(lambda: fs.games.tree_values(model, rows[:1], "banzhaf"))
    import numba

    sections = [
        f"Run with `fairshare bench trees --size {size}` (device: {device}). Times are milliseconds per explained row "
        f"({cfg['rows']} rows explained in one call each; interventional mode with {cfg['background']} background "
        "rows), fastest of up to three calls after one untimed call, for fairshare and shap alike; each call includes "
        "reading the model (fairshare: its parse cache is cleared before every timed call) or building the explainer "
        f"(shap). fairshare runs its compiled walks on all {numba.get_num_threads()} cores (`ours`) and on one thread "
        "(`ours, 1 thread`); shap's interventional code runs on one thread, and for xgboost path-dependent values shap "
        "calls xgboost's own `pred_contribs`, which uses the model's threads (2 here). `shap / ours` above 1 means "
        "fairshare is faster. `per-row loop` is the natural loop `fs.exact(fs.games.TreeGame(model, X[i], ...))` over "
        f"{cfg['loop_rows']} rows (the model read once, from the parse cache), in ms per row. `agreement` is the "
        "largest absolute difference between fairshare's and shap's Shapley values. `xgboost GPU` is xgboost's own "
        "GPU TreeSHAP (`pred_contribs` on a CUDA booster), measured only with `--device cuda`.",
        table(["model", "mode", "rows", "ours ms", "ours ms, 1 thread", "ours Banzhaf ms", "shap ms", "shap / ours",
               "shap / ours, 1 thread", "per-row loop ms", "agreement", "shapiq SV ms", "xgboost GPU ms"], rows_out),
        f"Exact Banzhaf values of one row of the 3072-feature forest (path-dependent): {banzhaf_3072:.2f} s "
        "(target: under 20 s).",
        "**Class probabilities** (`fs.explain(model, X, background, model_output=\"probability\", budget=2**12)`: "
        "exact values, interventional, "
        f"{cfg['background']} background rows, {cfg['loop_rows']} rows in ms per row, fastest of up to three calls). "
        "A probability is no sum over trees, so exact values need the game on all 2^12 coalitions: fairshare walks "
        "each (background row, tree) once and gets every coalition's margin from one subset-sum transform "
        "(`fairshare.trees.tabulate`), then the link. `margin ms` is explain's margin path, which runs all rows in "
        "one compiled call; `margin, per-row loop` is one `fs.exact(fs.games.TreeGame(...))` per row, as the "
        "probability runs. `black box` explains `model.predict_proba` by enumerating the "
        "same game through the model (its largest difference from the tree values in the next column). shap's "
        "probability output (`TreeExplainer(model_output=\"probability\")`) and its largest difference from the "
        "exact values of the positive class's probability:",
        table(["model", "method", "margin ms", "margin, per-row loop ms", "probability ms", "probability / margin",
               "probability / per-row loop", "black box ms",
               "black box / ours", "black box gap", "shap ms", "shap gap"], _probability_rows(cfg)),
        "**Groups of features** (`fs.explain(model, X, background, groups=...)`, consecutive pairs of features as "
        f"players; interventional, {cfg['background']} background rows, {cfg['loop_rows']} rows, ms per row): one "
        "tree walk with every split's feature replaced by its group, exact, on the trees' margin as without groups. "
        "`black box` explains the same groups' game through the model's raw output (`auto` at its default budget: "
        "exact where the budget covers every coalition of the groups, else estimated), on a tenth of the rows; "
        "`gap` is its largest difference from the tree values:",
        table(["model", "groups", "method", "grouped ms", "without groups ms", "black box method", "black box ms",
               "black box / grouped", "gap"], _group_rows(cfg)),
        f"The first call in this process took {first_call:.2f} s: it loads fairshare's compiled tree kernels from "
        "numba's cache (compiling them, a few seconds, happens once after installation).",
    ]
    write_report("trees", "fairshare bench trees", sections, out)
