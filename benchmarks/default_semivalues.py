"""The other semivalues of ``fairshare bench default``: on the pairs whose games are tables of all ``2^n`` coalitions
(n <= 20, exact values by enumeration), our default (``auto``) against the method that was the default before the
surrogate regression took its place (Kernel Banzhaf for Banzhaf values, the semivalue regression for beta-Shapley
values, MSR for weighted Banzhaf values) and against ``surrogate-regression`` named, at the same budgets, seeds and
rows as the Shapley cells. Weighted Banzhaf values are fitted under their product measure (each player in with
probability ``w``) and beta values as a quadrature of such fits over ``w``, by the semivalue regression too (so for
them ``former / ours`` is the surrogate's gain over the plain fit); below the unpaired surrogate's ``2 + n + C(n, 2)``
evaluations ``auto`` runs that plain fit.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import fairshare as fs

from .common import most_often, ratio, relative_error, within_bars

#: index label -> (semivalue, the method auto ran before the surrogate regression)
INDICES = {
    "banzhaf": (fs.Semivalue.banzhaf(), "kernel-banzhaf"),
    "beta(4,1)": (fs.Semivalue.beta_shapley(4, 1), "semivalue-regression"),
    "beta(16,1)": (fs.Semivalue.beta_shapley(16, 1), "semivalue-regression"),
    "weighted banzhaf 0.3": (fs.Semivalue.weighted_banzhaf(0.3), "msr"),
}
HEADERS = ["pair", "index", "budget", "auto's method", "ours (auto)", "former default", "former / ours",
           "surrogate-regression", "former / surrogate", "CPU ms ours", "CPU ms former", "coverage (auto)"]


def _run(game: fs.Game, sv: Any, budget: int, seed: int, method: str | None) -> tuple[Any, float]:
    start = time.process_time()
    est = fs.estimate(game, sv, budget=budget, seed=seed, **({"method": method} if method else {}))
    return est, time.process_time() - start


def _covered(est: Any, truth: np.ndarray) -> float:
    """Share of the true values inside the estimate's 95% error bars (nan for exact values: no bars to check)."""
    hits = within_bars(est.values, truth, est.stderr)
    return float(np.mean(hits)) if hits.size else float("nan")


def rows_of(name: str, games: list, budgets: tuple, seeds: int) -> list[list]:
    """The section's rows for one pair: ``games`` as ``Pair.games`` gives them (only tables are used)."""
    tables = [g for g, _, how in games if how == "enumeration"]
    if not tables:
        return []
    n, out = tables[0].n_players, []
    for label, (sv, former) in INDICES.items():
        truths = [fs.exact(g, sv).values for g in tables]
        for mult in budgets:
            errs: dict = {"auto": [], "former": [], "surrogate": []}
            cpu: dict = {"auto": [], "former": []}
            methods, covered = [], []
            for game, truth in zip(tables, truths):
                for seed in range(seeds):
                    for key, method in (("auto", None), ("former", former), ("surrogate", "surrogate-regression")):
                        try:
                            est, seconds = _run(game, sv, mult * n, seed, method)
                        except fs.BudgetError:                  # the unpaired surrogate needs 2 + n + C(n, 2)
                            errs[key].append(np.nan)
                            continue
                        errs[key].append(relative_error(est.values, truth))
                        if key in cpu:
                            cpu[key].append(seconds)
                        if key == "auto":
                            methods.append(est.method)
                            covered.append(_covered(est, truth))
            med = {k: float(np.median(v)) if not np.isnan(v).any() else float("nan") for k, v in errs.items()}
            out.append([name, label, f"{mult}n", most_often(methods), med["auto"], med["former"],
                        ratio(med["former"], med["auto"]), med["surrogate"], ratio(med["former"], med["surrogate"]),
                        1e3 * float(np.median(cpu["auto"])), 1e3 * float(np.median(cpu["former"])),
                        float(np.mean(covered)) if covered and np.isfinite(covered).all() else float("nan")])
    return out


def summary(rows: list[list]) -> str:
    """Per index: former default's error over ours, median and range; our error bars' coverage."""
    lines = []
    for label in INDICES:
        ratios = [r[6] for r in rows if r[1] == label and np.isfinite(r[6])]
        covers = [r[11] for r in rows if r[1] == label and np.isfinite(r[11])]
        if ratios:
            lines.append(f"- {label}: former default / ours median {np.median(ratios):.3g} "
                         f"({min(ratios):.3g}-{max(ratios):.3g}) over {len(ratios)} cells"
                         + (f"; 95% error bars' coverage {min(covers):.3f}-{max(covers):.3f} per cell" if covers
                            else ""))
    return "\n".join(lines)
