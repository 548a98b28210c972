"""fairshare bench sgd: the projected-SGD paper's experiments (section 5).

Hastie et al.'s classification game (reward 1 when the imputed row keeps the explicand's class under
the chi-squared-median rule) and radial regression game (product of Gaussian bumps), each on random
(explicand, reference) pairs: d = 16 against exact values, d = 300 (classification) against a long
permutation run (the radial game's closed form is used where it exists). Mean relative squared error
against the number of game evaluations for classic Monte Carlo, the optimized walk, antithetic and
stratified permutations, projected SGD with each step schedule, and the regression estimators.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import fairshare as fs

from .common import plot_lines, results_dir, table, write_report

warnings.filterwarnings("ignore")

SIZES = {"quick": dict(pairs=2, d_big=40, big_reference=20_000, budgets_per_d=(10, 40)),
         "default": dict(pairs=20, d_big=300, big_reference=300_000, budgets_per_d=(10, 30, 100, 300)),
         "full": dict(pairs=50, d_big=300, big_reference=1_000_000, budgets_per_d=(10, 30, 100, 300, 1000))}

METHODS = {
    "classic Monte Carlo": dict(method="permutation", reuse=False),
    "optimized Monte Carlo (Alg. 1)": dict(method="permutation"),
    "optimized MC, antithetic": dict(method="permutation", antithetic=True),
    "optimized MC, stratified": dict(method="permutation", stratified=True),
    "SGD constant step": dict(method="sgd", schedule="constant", step=0.1),
    "SGD 1/t (weighted average)": dict(method="sgd", schedule="1/t"),
    "SGD 1/sqrt(t) (running average)": dict(method="sgd", schedule="1/sqrt(t)"),
    "KernelSHAP (ours)": dict(method="kernelshap"),
    "LeverageSHAP (ours)": dict(method="leverageshap"),
    "fairshare regression (default)": dict(method="regression"),
}


def games(kind: str, d: int, pairs: int):
    make = fs.games.HastieClassificationGame if kind == "classification" else fs.games.RadialGame
    return [make.sample(d, seed=1000 + p) for p in range(pairs)]


def reference(game: fs.Game, budget: int) -> np.ndarray:
    if game.knows_exact_values(fs.Semivalue.shapley()) or game.n_players <= 16:
        return np.asarray(fs.exact(game, "shapley").values, dtype=float)
    return fs.estimate(game, "shapley", method="permutation", budget=budget, seed=123, antithetic=True).values


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = SIZES[size]
    pairs = seeds or cfg["pairs"]
    start = time.perf_counter()
    rows, sections = [], []
    for kind, d in (("classification", 16), ("radial", 16), ("classification", cfg["d_big"])):
        gs = games(kind, d, pairs)
        truths = [reference(g, cfg["big_reference"]) for g in gs]
        budgets = [f * d for f in cfg["budgets_per_d"]]
        series = {}
        for label, kw in METHODS.items():
            means = []
            for B in budgets:
                errs = []
                for i, (g, t) in enumerate(zip(gs, truths)):
                    if not np.any(t):
                        continue
                    try:
                        errs.append(fs.metrics.relative_squared_error(
                            fs.estimate(g, "shapley", budget=B, seed=i, **kw), t))
                    except fs.BudgetError:
                        errs.append(float("nan"))
                means.append(float(np.nanmean(errs)) if errs else float("nan"))
            series[label] = (budgets, means)
            rows.append([f"{kind} d={d}", label] + means)
        plot_lines(results_dir("sgd", out) / f"{kind}_{d}.png", f"Hastie {kind}, d = {d} ({pairs} pairs)",
                   "game evaluations", "mean relative squared error", series)
        sections.append(f"### {kind}, d = {d}\n\n" + table(["game", "method"] + [f"{b} evals" for b in budgets],
                                                             [r for r in rows if r[0] == f"{kind} d={d}"]))
    intro = (f"Run with `fairshare bench sgd --size {size}` ({pairs} (explicand, reference) pairs) in "
             f"{time.perf_counter() - start:.0f} s. Error: mean over pairs of the relative squared error; d = 16 "
             f"against exact values, d = {cfg['d_big']} against a {cfg['big_reference']:,}-evaluation antithetic "
             "permutation run. Classic Monte Carlo is charged 2d evaluations per permutation, the optimized walk "
             "d - 1. Plots: `classification_16.png`, `radial_16.png`, "
             f"`classification_{cfg['d_big']}.png`.")
    write_report("sgd", "fairshare bench sgd", [intro] + sections, out)
