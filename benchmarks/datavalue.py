"""fairshare bench datavalue: data valuation against pyDVL at equal numbers of model fits.

(a) Noisy-label detection: 10% of the training labels of adult, bank marketing, german credit and Pima
    diabetes flipped (subsampled training sets), logistic regression and a small gradient-boosted
    model; the AUC of finding the flipped points from the lowest values up, and the F1 of flagging the
    lowest 10%. Ours: Kernel Banzhaf, MSR, TMC, beta-Shapley (16, 1), KNN-Shapley (closed form),
    leave-one-out, Data-OOB (bootstrap fits, no validation set); pyDVL's MSR Banzhaf, TMC-Shapley, Beta Shapley and KNN-Shapley, each stopped when
    the model has been fitted as often as ours (a fit counter shared by the clones).
(b) Point removal: test accuracy after removing the highest-valued training points first.
(c) The enron1 mislabel task of ``fairshare bench examples`` (section 6.2 of the Fisher-kernel paper):
    the share of flipped labels found when checking the lowest-valued points first, next to SBQ
    prototypes and self-influence.
(d) Fits per second: fairshare's DataGame on a Dask LocalCluster (2 workers) against pyDVL's joblib
    backend (2 processes), same model, same data, same number of fits.
(e) Scale: 2000 training points x many logistic-regression fits on Dask LocalCluster with a cache; the
    run is killed part way (SIGKILL) and resumed: the fits after the resume must be exactly the ones
    the killed run had not finished.

pyDVL is optional (``make pydvl``: it pins numpy < 2 and is installed without its dependencies);
without it the peer columns are left out and the report says so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

import fairshare as fs

from .common import configuration, plot_lines, results_dir, table, write_report
from .datasets import adult_shap, bank, german_credit, pima

warnings.filterwarnings("ignore")

SIZES = {
    "quick": dict(datasets=("pima",), models=("logistic",), n_train=60, n_val=100, n_test=200, fits=150, seeds=1,
                  removal=(0.0, 0.2), enron_docs=800, enron_fits=1100, dask_points=200, dask_fits=600,
                  scale_points=100, scale_fits=600, peers=False, dask=False),
    "default": dict(datasets=("adult", "bank", "german", "pima"), models=("logistic", "gbm"), n_train=500,
                    n_val=500, n_test=1000, fits=1200, seeds=1, removal=(0.0, 0.1, 0.2, 0.3, 0.4),
                    enron_docs=1500, enron_fits=3000, dask_points=500, dask_fits=2000, scale_points=2000,
                    scale_fits=20000, peers=True, dask=True),
    "full": dict(datasets=("adult", "bank", "german", "pima"), models=("logistic", "gbm"), n_train=2000,
                 n_val=1000, n_test=2000, fits=4000, seeds=3, removal=(0.0, 0.1, 0.2, 0.3, 0.4), enron_docs=None,
                 enron_fits=8000, dask_points=2000, dask_fits=5000, scale_points=2000, scale_fits=20000, peers=True,
                 dask=True),
}

_LOADERS = {"adult": adult_shap, "bank": bank, "german": german_credit, "pima": pima}


# ------------------------------------------------------------------------------------------ models
class _Counter:
    fits = 0


def _model(name: str):
    """A fresh model whose fits (and its clones') are counted in ``_Counter.fits``."""
    return CountingLogistic(max_iter=1000) if name == "logistic" else CountingGBM(n_estimators=10, max_depth=2)


def _counting(base):
    class Counting(base):
        def fit(self, X, y, sample_weight=None):
            _Counter.fits += 1
            return super().fit(X, y, sample_weight=sample_weight)

    Counting.__name__ = Counting.__qualname__ = f"Counting{base.__name__}"
    return Counting


def _bases():
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    return _counting(LogisticRegression), _counting(GradientBoostingClassifier)


CountingLogistic, CountingGBM = _bases()


# ------------------------------------------------------------------------------------------- tasks
def _task(name: str, cfg: dict, seed: int):
    from sklearn.preprocessing import StandardScaler

    X, y, _ = _LOADERS[name]()
    X = np.nan_to_num(np.asarray(X, dtype=float))
    y = np.asarray(y).astype(int)
    rng = np.random.default_rng(seed)
    # a small dataset (german credit: 1000 rows, Pima: 768) keeps half its rows for training and a quarter each
    # for validation and test
    n_train = min(cfg["n_train"], len(y) // 2)
    n_val = min(cfg["n_val"], (len(y) - n_train) // 2)
    n_test = min(cfg["n_test"], len(y) - n_train - n_val)
    idx = rng.permutation(len(y))[: n_train + n_val + n_test]
    X, y = X[idx], y[idx]
    a, b = n_train, n_train + n_val
    scaler = StandardScaler().fit(X[:a])
    X = scaler.transform(X)
    y_train = y[:a].copy()
    flipped = np.zeros(a, dtype=bool)
    flipped[rng.choice(a, a // 10, replace=False)] = True
    y_train[flipped] = 1 - y_train[flipped]
    return X[:a], y_train, X[a:b], y[a:b], X[b:], y[b:], flipped


def _f1_lowest(values, flipped):
    k = int(flipped.sum())
    flagged = np.zeros(flipped.size, dtype=bool)
    flagged[np.argsort(values, kind="stable")[:k]] = True
    tp = (flagged & flipped).sum()
    return 0.0 if tp == 0 else 2 * tp / (flagged.sum() + flipped.sum())


def _ours(model_name, task, fits, seed):
    from sklearn.neighbors import KNeighborsClassifier

    Xt, yt, Xv, yv = task[:4]
    runs = {}
    plans = [("Kernel Banzhaf", dict(index="banzhaf", method="kernel-banzhaf", budget=fits)),
             ("MSR (Banzhaf)", dict(index="banzhaf", method="msr", budget=fits)),
             ("TMC-Shapley", dict(index="shapley", method="tmc", budget=fits)),
             ("beta-Shapley(16,1)", dict(index=fs.Semivalue.beta_shapley(16, 1), method="semivalue-regression",
                                         budget=fits)),
             ("leave-one-out", dict(index="loo")),
             ("Data-OOB", dict(index="data-oob", budget=fits))]
    for label, kw in plans:
        _Counter.fits = 0
        start = time.perf_counter()
        val = (None, None) if kw["index"] == "data-oob" else (Xv, yv)      # data-oob takes no validation set
        dv = fs.value_data(_model(model_name), Xt, yt, *val, seed=seed, progress=False, **kw)
        runs[label] = (dv.values, _Counter.fits, time.perf_counter() - start)
    start = time.perf_counter()
    dv = fs.value_data(KNeighborsClassifier(5), Xt, yt, Xv, yv, index="shapley", progress=False)
    runs["KNN-Shapley (exact)"] = (dv.values, 0, time.perf_counter() - start)
    return runs


def _ours_half(model_name, task, fits, seed):
    Xt, yt, Xv, yv = task[:4]
    out = {}
    for label, kw in (("Kernel Banzhaf", dict(index="banzhaf", method="kernel-banzhaf")),
                      ("TMC-Shapley", dict(index="shapley", method="tmc"))):
        _Counter.fits = 0
        dv = fs.value_data(_model(model_name), Xt, yt, Xv, yv, seed=seed, progress=False, budget=fits // 2, **kw)
        out[f"{label}, half the fits"] = (dv.values, _Counter.fits, 0.0)
    return out


def _pydvl_available() -> bool:
    try:
        import pydvl.valuation  # noqa: F401
    except Exception:                             # noqa: BLE001 - absent or broken: no peer columns
        return False
    return True


def _pydvl(model_name, task, fits, seed):
    import joblib
    from pydvl.valuation import (BetaShapleyValuation, Dataset, KNNShapleyValuation, ModelUtility,
                                 MSRBanzhafValuation, PermutationSampler, RelativeTruncation, SupervisedScorer,
                                 TMCShapleyValuation)
    from pydvl.valuation.result import Status
    from pydvl.valuation.stopping import StoppingCriterion
    from sklearn.neighbors import KNeighborsClassifier

    class Fits(StoppingCriterion):
        """Stop once the model has been fitted ``n`` times (the counter shared by its clones)."""

        def __init__(self, n):
            super().__init__()
            self.n = n

        def _check(self, result):
            if _Counter.fits >= self.n:
                self._converged = np.full_like(result.indices, True, dtype=bool)
                return Status.Converged
            return Status.Pending

        def completion(self):
            return min(1.0, _Counter.fits / self.n)

        def __str__(self):
            return f"Fits({self.n})"

    Xt, yt, Xv, yv = task[:4]
    train, val = Dataset(Xt, yt), Dataset(Xv, yv)
    runs = {}

    def utility():
        return ModelUtility(_model(model_name), SupervisedScorer("accuracy", val, default=0.0), catch_errors=True,
                            show_warnings=False)

    plans = [("pyDVL MSR Banzhaf", None),
             ("pyDVL TMC-Shapley", lambda: TMCShapleyValuation(utility(), RelativeTruncation(rtol=0.01), Fits(fits),
                                                               seed=seed)),
             ("pyDVL Beta Shapley(16,1)", lambda: BetaShapleyValuation(utility(), PermutationSampler(seed=seed),
                                                                       Fits(fits), alpha=16, beta=1))]
    # MSR: one sample is one fit, so pyDVL's own sample count stops it and it runs on its parallel backend
    # (2 processes: its per-sample overhead makes it 5x slower in process); the others run in process, where the
    # fit counter is exact
    from pydvl.valuation.stopping import MaxSamples

    _Counter.fits = 0
    start = time.perf_counter()
    msr = MSRBanzhafValuation(utility(), Fits(fits), batch_size=16, seed=seed)
    msr.is_done = MaxSamples(msr.sampler, fits)
    with joblib.parallel_config(backend="loky", n_jobs=2):
        result = msr.fit(train).result
    runs["pyDVL MSR Banzhaf"] = (_in_order(result, len(yt)), int(msr.sampler.n_samples), time.perf_counter() - start)
    for label, make in plans[1:]:
        _Counter.fits = 0
        start = time.perf_counter()
        with joblib.parallel_config(backend="threading", n_jobs=1):       # in-process: the fit counter is exact
            result = make().fit(train).result
        runs[label] = (_in_order(result, len(yt)), _Counter.fits, time.perf_counter() - start)
    start = time.perf_counter()
    result = KNNShapleyValuation(KNeighborsClassifier(5), val, progress=False).fit(train).result
    runs["pyDVL KNN-Shapley"] = (_in_order(result, len(yt)), 0, time.perf_counter() - start)
    return runs


def _in_order(result, n):
    values = np.zeros(n)
    values[np.asarray(result.indices, dtype=int)] = np.nan_to_num(np.asarray(result.values, dtype=float))
    return values


def detection(cfg):
    """(a) and (b): AUC / F1 per dataset and model; accuracy after removing the highest-valued points."""
    peers = cfg["peers"] and _pydvl_available()
    rows, removal, timing = [], {}, {}
    for name in cfg["datasets"]:
        for model_name in cfg["models"]:
            for seed in range(cfg["seeds"]):
                task = _task(name, cfg, seed)
                flipped = task[6]
                runs = _ours(model_name, task, cfg["fits"], seed)
                runs.update(_ours_half(model_name, task, cfg["fits"], seed))
                if peers:
                    runs.update(_pydvl(model_name, task, cfg["fits"], seed))
                for label, (values, fits, seconds) in runs.items():
                    auc = fs.doors.value_data.detection_auc(values, flipped)
                    rows.append([name, model_name, seed, label, fits, auc, _f1_lowest(values, flipped), seconds])
                    print(f"{name} {model_name} {label}: {fits} fits, AUC {auc:.3f}, {seconds:.1f} s", flush=True)
                    if model_name == "logistic" and "half" not in label:
                        removal.setdefault(label, []).append(_removal(task, values, cfg["removal"]))
                    timing.setdefault(label, []).append((seconds, fits))
    return rows, removal, timing, peers


def _removal(task, values, fractions):
    from sklearn.linear_model import LogisticRegression

    Xt, yt, _, _, Xs, ys, _ = task
    order = np.argsort(-values, kind="stable")
    out = []
    for f in fractions:
        keep = order[int(f * len(order)):]
        if np.unique(yt[keep]).size < 2:
            out.append(float("nan"))
            continue
        out.append(float(LogisticRegression(max_iter=1000).fit(Xt[keep], yt[keep]).score(Xs, ys)))
    return out


# ------------------------------------------------------------------------------------------- enron1
def enron(cfg):
    """(c): the share of flipped labels found, checking the lowest-valued points first."""
    from .examples import VALUE_METHODS, checking_orders, data_value_orders, enron_task, fix_rate

    task = enron_task(cfg["enron_docs"])
    X_tr, y_tr, y_noisy, flipped, curated, rest, X_te, y_te, rng = task
    fractions = (0.05, 0.1, 0.2, 0.3)
    orders = checking_orders(X_tr, y_tr, y_noisy, curated, rest, int(max(fractions) * rest.size), rng)
    values, seconds = data_value_orders(task, cfg["enron_fits"], methods=VALUE_METHODS[:1])   # KNN, Kernel Banzhaf
    orders.update(values)
    rows = []
    for label, order in orders.items():
        rows.append([label] + fix_rate(order, flipped, rest, fractions))
    return rows, fractions, (X_tr.shape, len(rest), len(curated), seconds["KNN"], seconds["Kernel Banzhaf"],
                             cfg["enron_fits"])


# ------------------------------------------------------------------------------------------- Dask
def _dask_task(points, seed=0):
    cfg = dict(n_train=points, n_val=1000, n_test=0)
    return _task("adult", cfg, seed)


def fits_per_second(cfg):
    """(d): the same MSR fits on a 2-worker LocalCluster (ours) and through pyDVL's joblib backend (2 processes)."""
    from distributed import Client, LocalCluster
    from sklearn.linear_model import LogisticRegression

    Xt, yt, Xv, yv = _dask_task(cfg["dask_points"])[:4]
    fits = cfg["dask_fits"]
    out = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        start = time.perf_counter()
        dv = fs.value_data(LogisticRegression(max_iter=1000), Xt, yt, Xv, yv, method="msr", budget=fits, seed=0,
                           client=client, progress=False)
        out["fairshare, Dask LocalCluster (2 workers)"] = (dv.n_fits, time.perf_counter() - start)
    start = time.perf_counter()
    dv = fs.value_data(LogisticRegression(max_iter=1000), Xt, yt, Xv, yv, method="msr", budget=fits, seed=0,
                       progress=False)
    out["fairshare, local (1 process)"] = (dv.n_fits, time.perf_counter() - start)
    if cfg["peers"] and _pydvl_available():
        import joblib
        from pydvl.valuation import Dataset, ModelUtility, MSRBanzhafValuation, SupervisedScorer
        from pydvl.valuation.samplers import MSRSampler
        from pydvl.valuation.stopping import MaxSamples

        train, val = Dataset(Xt, yt), Dataset(Xv, yv)
        utility = ModelUtility(LogisticRegression(max_iter=1000), SupervisedScorer("accuracy", val, default=0.0),
                               catch_errors=True, show_warnings=False)
        for label, backend in (("pyDVL, joblib loky (2 processes)", "loky"), ("pyDVL, in-process (1 thread)",
                                                                              "threading")):
            n_jobs = 2 if backend == "loky" else 1
            valuation = MSRBanzhafValuation(utility, MaxSamples(MSRSampler(), fits), batch_size=16, seed=0)
            valuation.is_done = MaxSamples(valuation.sampler, fits)
            start = time.perf_counter()
            with joblib.parallel_config(backend=backend, n_jobs=n_jobs):
                valuation.fit(train)
            out[label] = (int(valuation.sampler.n_samples), time.perf_counter() - start)
    return out


_SCALE_RUN = textwrap.dedent("""
    import sys, numpy as np, fairshare as fs
    from distributed import Client, LocalCluster
    from sklearn.linear_model import LogisticRegression
    d = np.load(sys.argv[1])
    if __name__ == "__main__":
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \\
                Client(c) as client:
            fs.value_data(LogisticRegression(max_iter=1000), d["Xt"], d["yt"], d["Xv"], d["yv"], method="msr",
                          budget=int(sys.argv[3]), seed=0, client=client, cache=sys.argv[2], progress=False)
""")


def scale(cfg):
    """(e): kill a Dask run with a cache part way, resume it, count what was fitted again."""
    from distributed import Client, LocalCluster
    from sklearn.linear_model import LogisticRegression

    Xt, yt, Xv, yv = _dask_task(cfg["scale_points"])[:4]
    fits = cfg["scale_fits"]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.npz"
        np.savez(data, Xt=Xt, yt=yt, Xv=Xv, yv=yv)
        cache = Path(tmp) / "cache"
        script = Path(tmp) / "run.py"
        script.write_text(_SCALE_RUN)
        record = 24 + (cfg["scale_points"] + 7) // 8 + 16 + 4
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, str(script), str(data), str(cache), str(fits)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        log = cache / "fits.log"
        while proc.poll() is None and (not log.exists() or log.stat().st_size < 24 + record * int(0.4 * fits)):
            time.sleep(0.1)
        killed_after = time.perf_counter() - start
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if not log.exists():
            raise RuntimeError("the scale run wrote no cache: " + proc.stderr.read().decode()[-1500:])
        done_before = (log.stat().st_size - 24) // (record - 24)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            start = time.perf_counter()
            dv = fs.value_data(LogisticRegression(max_iter=1000), Xt, yt, Xv, yv, method="msr", budget=fits, seed=0,
                               client=client, cache=cache, progress=False)
            resumed = time.perf_counter() - start
    return dict(points=cfg["scale_points"], fits=fits, killed=killed, killed_after=killed_after, done_before=int(done_before),
                reused=dv.reused_fits, fitted_after=dv.n_fits, total=dv.n_evaluations, resumed_seconds=resumed)


# -------------------------------------------------------------------------------------------- main
def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, seeds)
    started = time.perf_counter()
    rows, removal, timing, peers = detection(cfg)
    enron_rows, fractions, enron_facts = enron(cfg)
    speed = fits_per_second(cfg) if cfg["dask"] else {}
    big = scale(cfg) if cfg["dask"] else None
    labels = list(dict.fromkeys(r[3] for r in rows))
    mean = {lab: (np.mean([r[5] for r in rows if r[3] == lab]), np.mean([r[6] for r in rows if r[3] == lab]),
                  np.mean([r[4] for r in rows if r[3] == lab])) for lab in labels}
    summary = [[lab, f"{mean[lab][2]:.0f}", mean[lab][0], mean[lab][1]] for lab in labels]
    detail = [[r[0], r[1], r[3], r[4], r[5], r[6], r[7]] for r in rows]
    ours = [lab for lab in labels if not lab.startswith("pyDVL")]
    theirs = [lab for lab in labels if lab.startswith("pyDVL")]
    verdict = []
    for name in cfg["datasets"]:
        for model_name in cfg["models"]:
            sub = [r for r in rows if r[0] == name and r[1] == model_name]
            best_ours = max((r for r in sub if r[3] in ours and "half" not in r[3] and "exact" not in r[3]
                             and r[3] != "leave-one-out"), key=lambda r: r[5])
            half = max((r for r in sub if "half" in r[3]), key=lambda r: r[5])
            best_theirs = max((r for r in sub if r[3] in theirs and "KNN" not in r[3]), key=lambda r: r[5],
                              default=None)
            verdict.append([name, model_name, f"{best_ours[3]} {best_ours[5]:.3f}", f"{half[3]} {half[5]:.3f}",
                            "-" if best_theirs is None else f"{best_theirs[3]} {best_theirs[5]:.3f}",
                            "-" if best_theirs is None else ("yes" if best_ours[5] >= best_theirs[5] else "no"),
                            "-" if best_theirs is None else ("yes" if half[5] >= best_theirs[5] else "no")])
    removal_rows = [[lab] + list(np.nanmean(np.array(v), axis=0)) for lab, v in removal.items()]
    plot_lines(results_dir("datavalue", out) / "point_removal.png", "test accuracy after removing the highest-valued",
               "share of training points removed", "test accuracy (logistic regression)",
               {r[0]: (list(cfg["removal"]), list(r[1:])) for r in removal_rows}, logx=False, logy=False)
    speed_rows = [[lab, n, s, n / s] for lab, (n, s) in speed.items()]
    base = speed.get("pyDVL, joblib loky (2 processes)")
    if base is not None:
        ours_d = speed["fairshare, Dask LocalCluster (2 workers)"]
        speed_note = (f"fairshare on Dask: {ours_d[0] / ours_d[1] / (base[0] / base[1]):.2f}x pyDVL's fits per second "
                      "with 2 processes each.")
    else:
        speed_note = "No pyDVL rows (not installed, or size quick)."
    per_fit = [[lab, f"{1000 * np.sum([s for s, _ in v]) / max(1, np.sum([f for _, f in v])):.1f}"]
               for lab, v in timing.items() if np.sum([f for _, f in v]) > 0]
    sections = [
        f"Size `{size}`: datasets {', '.join(cfg['datasets'])}; models {', '.join(cfg['models'])} (logistic "
        f"regression; gradient boosting, 10 trees of depth 2); {cfg['n_train']} training points (10% of the labels "
        f"flipped), {cfg['n_val']} validation, {cfg['n_test']} test points (german credit and Pima, 1000 and 768 "
        f"rows: half, a quarter, a quarter); {cfg['fits']} model fits per method "
        f"(ours and pyDVL's alike, counted by the model itself); {cfg['seeds']} seed(s). Total "
        f"{time.perf_counter() - started:.0f} s." + ("" if peers else " **No pyDVL rows** (" + (
            "not installed: `make pydvl`" if cfg["peers"] else "size quick runs no peers") + ")."),
        "## (a) Noisy-label detection, mean over datasets and models\n\nAUC: finding the flipped points from the "
        "lowest values up (0.5 is chance). F1: flagging the lowest 10%.\n\n"
        + table(["method", "fits", "AUC", "F1 (lowest 10%)"], summary),
        "### Targets per dataset and model\n\nOur best sampling estimator at the full fits, our best at half the "
        "fits, pyDVL's best sampling estimator (KNN-Shapley is exact for both and left out here):\n\n"
        + table(["dataset", "model", "ours (best)", "ours at half the fits", "pyDVL (best)", "ours >= pyDVL",
                 "half >= pyDVL"], verdict),
        "### Every run\n\n" + table(["dataset", "model", "method", "fits", "AUC", "F1", "seconds"], detail),
        "### Milliseconds per fit, model included (single process)\n\n" + table(["method", "ms per fit"], per_fit),
        "## (b) Point removal (logistic regression, mean over datasets)\n\nTest accuracy after removing the "
        "highest-valued share of the training points first (a good valuation makes it fall fastest).\n\n"
        + table(["method"] + [f"{int(100 * f)}% removed" for f in cfg["removal"]], removal_rows),
        f"## (c) enron1 mislabels\n\n{enron_facts[0][0]} training e-mails x {enron_facts[0][1]} word counts; "
        f"{enron_facts[1]} points valued, the {enron_facts[2]} curated (clean) points are the validation set; 20% of "
        f"the labels flipped. KNN-Shapley {enron_facts[3]:.1f} s; Kernel Banzhaf {enron_facts[5]} fits of a "
        f"liblinear logistic regression, {enron_facts[4]:.0f} s. Share of the flips found when the first share of "
        "the points is checked:\n\n" + table(["order"] + [f"{int(100 * f)}% checked" for f in fractions],
                                               enron_rows),
        f"## (d) Fits per second\n\nMSR, {cfg['dask_points']} training points of adult, logistic regression, "
        f"{cfg['dask_fits']} fits.\n\n" + (table(["how", "fits", "seconds", "fits / s"], speed_rows) + "\n\n"
                                           + speed_note if speed else "Skipped at size quick (Dask is tested in "
                                           "tests/test_datavalues.py)."),
        "## (e) Scale: kill and resume\n\n" + (_scale_text(big) if big else "Skipped at size quick."),
    ]
    write_report("datavalue", "fairshare bench datavalue: data valuation against pyDVL at equal numbers of fits",
                 sections, out)


def _scale_text(big: dict) -> str:
    return (f"{big['points']} training points of adult x {big['fits']} MSR fits of logistic regression on a 2-worker "
            f"LocalCluster with a cache. "
            + (f"Killed (SIGKILL) after {big['killed_after']:.0f} s" if big["killed"] else
               f"**The run ended before the kill** ({big['killed_after']:.0f} s)")
            + f" with {big['done_before']} fits in the cache; the resumed run reused {big['reused']} and fitted "
            f"{big['fitted_after']} ({big['reused'] + big['fitted_after']} = {big['total']} evaluations, each "
            f"coalition fitted once) in {big['resumed_seconds']:.0f} s. "
            + ("No fit was done twice." if big["reused"] == big["done_before"] else
               "**Some cached fits were not reused.**"))
