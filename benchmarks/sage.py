"""``fairshare bench sage``: SAGE global importance (``fs.global_importance``) against the ``sage-importance``
package (``import sage``: ``PermutationEstimator`` with ``MarginalImputer``) at equal model calls.

Both estimate the same quantity: the SAGE values of a gradient-boosting model on the same ``rows`` explained rows
and the same ``background`` rows, marginal imputation, MSE (regression) or cross entropy (classification). The
reference is the exact value of that game, by enumeration of all ``2^d`` coalitions (``fs.global_importance``
with a budget of ``2^d``); in the default size the peer at 20 times the largest budget is shown against it too,
as a check that both aim at the same numbers. Model calls are counted as rows sent to the model by a counting
wrapper: ours spends ``rows x background`` model rows per coalition, the peer ``(d + 1) x background`` per
sampled (row, permutation); the peer's permutations are set to match our rows (rounded down to its batch of 16).
Error: ``||phi - exact|| / ||exact||``, median over seeds. The peer is skipped (and the report says so) when
``sage`` cannot be imported.
"""

from __future__ import annotations

import warnings

import numpy as np

import fairshare as fs

from . import datasets
from .common import TimedFunction, configuration, plot_lines, results_dir, table, write_report

SIZES = {
    "quick": dict(data=["california", "pima"], rows=48, background=8, budgets=(12, 40), seeds=1, check=False,
                  close=(0.0, 0)),
    "default": dict(data=["california", "pima", "diabetes"], rows=256, background=32, budgets=(12, 24, 48, 96),
                    seeds=5, check=True, close=(3.5, 300)),
    "full": dict(data=["california", "pima", "diabetes"], rows=512, background=64, budgets=(12, 24, 48, 96, 192),
                 seeds=10, check=True, close=(3.5, 300)),
}
#: ``close``: cells whose ratio is below the first number are measured again over the second number of seeds (a
#: median over a few seeds moves by 10% or more), with a bootstrap interval of the ratio
#: the datasets: loader, task
DATA = {"california": (datasets.california, "regression"), "pima": (datasets.pima, "classification"),
        "diabetes": (datasets.diabetes_sklearn, "regression")}


def _peer_available() -> bool:
    try:
        import sage  # noqa: F401
    except ImportError:
        return False
    return hasattr(sage, "PermutationEstimator") and hasattr(sage, "MarginalImputer")


def _peer_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sage-importance")
    except PackageNotFoundError:
        return "unknown"


def _setup(name: str, rows: int, background: int):
    """The fitted model's prediction function, the explained rows, their targets, the background, the loss."""
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

    load, task = DATA[name]
    X, y, _ = load()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    explained, bg_rows = order[:rows], order[rows:rows + background]
    train = order[rows + background:rows + background + 4000]
    if task == "regression":
        model = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(X[train], y[train])
        predict, loss, peer_loss = model.predict, "mse", "mse"
    else:
        model = GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0)
        model.fit(X[train], y[train].astype(int))
        predict, loss, peer_loss = model.predict_proba, "log_loss", "cross entropy"
    target = y[explained] if task == "regression" else y[explained].astype(int)
    return predict, X[explained], target, X[bg_rows], loss, peer_loss


def _ours(predict, X, y, bg, loss, budget: int, seed: int) -> tuple[np.ndarray, int, str]:
    counted = TimedFunction(predict)
    with warnings.catch_warnings():                     # infinite standard errors at the smallest budgets
        warnings.simplefilter("ignore", fs.FairshareWarning)
        e = fs.global_importance(counted, X, y, loss=loss, background=bg, budget=budget, seed=seed, folds=0)
    return e.values, counted.rows, e.method


def _peer(predict, X, y, bg, peer_loss, model_rows: int, seed: int) -> tuple[np.ndarray, int]:
    import sage

    d = X.shape[1]
    permutations = max(16, model_rows // ((d + 1) * bg.shape[0]) // 16 * 16)
    counted = TimedFunction(predict)
    estimator = sage.PermutationEstimator(sage.MarginalImputer(counted, bg), peer_loss, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = estimator(X, y, batch_size=16, n_permutations=permutations, detect_convergence=False, bar=False)
    return np.asarray(result.values, dtype=float), counted.rows


def _error(values: np.ndarray, exact: np.ndarray) -> float:
    return float(np.linalg.norm(values - exact) / np.linalg.norm(exact))


def _game(name: str, cfg: dict) -> tuple:
    """``(predict, X, y, background, loss, peer loss, exact values)`` of one dataset's game."""
    predict, X, y, bg, loss, peer_loss = _setup(name, cfg["rows"], cfg["background"])
    exact = fs.global_importance(predict, X, y, loss=loss, background=bg, budget=2 ** X.shape[1], folds=0).values
    return predict, X, y, bg, loss, peer_loss, exact


def _dataset(name: str, game: tuple, cfg: dict, peer: bool) -> tuple[list[list], dict, list[list]]:
    """Rows of the table, the plot's series and the check rows of one dataset."""
    predict, X, y, bg, loss, peer_loss, exact = game
    d = X.shape[1]
    rows, series, checks = [], {"fairshare": ([], []), "sage-importance": ([], [])}, []
    for budget in cfg["budgets"]:
        ours = [_ours(predict, X, y, bg, loss, budget, seed) for seed in range(cfg["seeds"])]
        our_rows = int(np.median([r for _, r, _ in ours]))
        our_err = float(np.median([_error(v, exact) for v, _, _ in ours]))
        series["fairshare"][0].append(our_rows)
        series["fairshare"][1].append(our_err)
        if peer:
            theirs = [_peer(predict, X, y, bg, peer_loss, our_rows, seed) for seed in range(cfg["seeds"])]
            peer_rows = int(np.median([r for _, r in theirs]))
            peer_err = float(np.median([_error(v, exact) for v, _ in theirs]))
            series["sage-importance"][0].append(peer_rows)
            series["sage-importance"][1].append(peer_err)
        else:
            peer_rows, peer_err = "-", float("nan")
        ratio = peer_err / our_err if peer and our_err > 0 else float("nan")
        rows.append([name, d, budget, ours[0][2], our_rows, our_err, peer_rows, peer_err, ratio])
    if peer and cfg["check"]:
        big = 20 * int(series["fairshare"][0][-1])
        values, used = _peer(predict, X, y, bg, peer_loss, big, 0)
        checks.append([name, used, _error(values, exact)])
    return rows, series, checks


def _close(name: str, game: tuple, budget: int, cfg: dict) -> list:
    """One cell again over many seeds: medians, their ratio, its 90% bootstrap interval (seeds resampled)."""
    predict, X, y, bg, loss, peer_loss, exact = game
    seeds = cfg["close"][1]
    ours, theirs = np.empty(seeds), np.empty(seeds)
    for seed in range(seeds):
        values, rows, _ = _ours(predict, X, y, bg, loss, budget, seed)
        ours[seed] = _error(values, exact)
        theirs[seed] = _error(_peer(predict, X, y, bg, peer_loss, rows, seed)[0], exact)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, seeds, size=(2000, 2, seeds))
    boot = np.median(theirs[draws[:, 1]], axis=1) / np.median(ours[draws[:, 0]], axis=1)
    return [name, budget, seeds, float(np.median(ours)), float(np.median(theirs)),
            float(np.median(theirs) / np.median(ours)), f"{np.quantile(boot, 0.05):.2f} - {np.quantile(boot, 0.95):.2f}"]


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, seeds)
    peer = _peer_available()
    rows, checks, games = [], [], {}
    folder = results_dir("sage", out)
    for name in cfg["data"]:
        games[name] = _game(name, cfg)
        got, series, check = _dataset(name, games[name], cfg, peer)
        rows += got
        checks += check
        plot_lines(folder / f"error_{name}.png", f"SAGE on {name}: error against exact at equal model rows",
                   "model rows", "relative error", {k: v for k, v in series.items() if v[0]})
    sections = [
        f"Run with `fairshare bench sage --size {size}`: {cfg['rows']} explained rows, a background of "
        f"{cfg['background']} rows, marginal imputation, {cfg['seeds']} seed(s); a gradient-boosting model (30 "
        "trees of depth 3, fitted on up to 4000 other rows) per dataset (MSE for california and diabetes, cross "
        "entropy for pima). Budget: coalitions of `fs.global_importance` (auto method); the peer gets the same "
        "model rows. Error: relative to the exact "
        "SAGE values of the same game (all 2^d coalitions), median over seeds; ratio = peer's error / ours. Below the "
        "regression's 2d + 2 coalitions `auto` spends the budget as row-stratified antithetic permutations (each "
        "explained row its own orderings, more of them to the rows whose loss moves most, a row's second the reverse "
        "of its first and alike rows' first orderings reversed; `row-permutations`); from there on each row's own "
        "regression (`row-regressions`) while the budget covers under a quarter of all coalitions, and above that the "
        "mean game's regression with its interaction surrogate (`surrogate-regression`).",
        "The peer (`sage-importance`) " + (f"ran: version {_peer_version()}." if peer else "is not importable "
                                         "here: its columns are empty (`pip install sage-importance` to compare)."),
        table(["dataset", "d", "budget (coalitions)", "method (auto)", "model rows (fairshare)", "error (fairshare)",
               "model rows (sage-importance)", "error (sage-importance)", "ratio"], rows),
    ]
    below, many = cfg["close"]
    close = [_close(r[0], games[r[0]], r[2], cfg) for r in rows if peer and r[8] < below and many > 0]
    if close:
        sections.append(f"Cells whose ratio is under {below:g}, measured again over {many} seeds (the median of a few "
                        "seeds moves by 10% or more); the interval is a 90% bootstrap of the ratio of medians, seeds "
                        "resampled.\n\n" + table(["dataset", "budget", "seeds", "error (fairshare)",
                                                    "error (sage-importance)", "ratio", "90% interval"], close))
    if checks:
        sections.append("Check that both aim at the same values: the peer at 20 times the largest budget against "
                        "the exact values.\n\n" + table(["dataset", "model rows", "error (sage-importance)"], checks))
    sections += [f"![{n}](error_{n}.png)" for n in cfg["data"]]
    write_report("sage", "fairshare bench sage", sections, out)
