"""fairshare bench engine: every registered method at one budget, timed, on the projected-SGD paper's radial game.

The estimation engine's promise: a budget means model calls and bounds the work, whatever the
method. The 14-player radial game has 16,384 coalitions, fewer than the default budget of 30,000,
so methods that draw with replacement meet repeats (which cost no evaluations); no method may
draw more than four times the budget. Reported per method: wall time, evaluations spent, what
stopped it, and its error against the exact values (16,384 coalitions: enumerated).
"""

from __future__ import annotations

import time

import numpy as np

import fairshare as fs

from .common import plot_lines, results_dir, table, write_report

SIZES = {"quick": dict(budget=3000, n=10), "default": dict(budget=30000, n=14), "full": dict(budget=30000, n=14)}


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = SIZES[size]
    n, budget = cfg["n"], cfg["budget"]
    game = fs.games.RadialGame.sample(n, seed=0)
    indices = {"shapley": fs.Semivalue.shapley(), "banzhaf": fs.Semivalue.banzhaf(),
               "leave-one-out": fs.Semivalue.leave_one_out()}
    exact = {name: fs.exact(game, sv).values for name, sv in indices.items()}
    rows = []
    for name in fs.engine.registry.method_names():
        if name == "exact":
            continue
        spec = fs.engine.registry.get_method(name)
        if spec.requires:                          # the gradient explainers (bench deep measures those)
            continue
        index = next((i for i, sv in indices.items() if spec.supports(sv)), None)
        if index is None:                          # an interaction estimator (bench interactions measures those)
            continue
        warm = max(min(budget, 400), spec.budget_needed(game, indices[index]))
        fs.estimate(game, index, method=name, budget=warm, seed=1)                         # untimed: first calls
        start = time.perf_counter()
        phi = fs.estimate(game, index, method=name, budget=budget, seed=0)
        seconds = time.perf_counter() - start
        truth = exact[index]
        err = float(np.linalg.norm(phi.values - truth) / np.linalg.norm(truth))
        rows.append([name, index, seconds, phi.n_evaluations, err, phi.info["stopped"]["reason"]])
    slowest = max(r[2] for r in rows)
    plot_lines(results_dir("engine", out) / "seconds_vs_error.png", f"every method at budget {budget} (n = {n})",
               "seconds", "relative error", {f"{r[0]} ({r[1]})": ([r[2]], [max(r[4], 1e-16)]) for r in rows})
    sections = [
        f"Run with `fairshare bench engine --size {size}`: the {n}-player radial game (projected-SGD paper), "
        f"budget {budget} ({2 ** n} coalitions exist), one run per method after an untimed one. Target: every "
        f"method under 2 s, SGD under 1 s. Slowest here: {slowest:.2f} s.",
        table(["method", "index", "seconds", "evaluations", "relative error", "stopped"], rows),
        "![seconds against error](seconds_vs_error.png)",
    ]
    write_report("engine", "fairshare bench engine", sections, out)
