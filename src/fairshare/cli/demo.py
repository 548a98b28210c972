"""``fairshare demo``: explain one breast-cancer prediction with every registered Shapley and Banzhaf method."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..doors.metrics import relative_squared_error
from ..engine.registry import get_method, method_names
from ..indices.semivalues import resolve_index

DEMO_BUDGET = 200
INDICES = ("shapley", "banzhaf")


@dataclass
class DemoRow:
    method: str
    index: str
    n_evaluations: int
    relative_error: float
    mean_stderr: float
    seconds: float
    at_minimum: bool = False


def _data(seed: int = 0):
    try:
        from sklearn.datasets import load_breast_cancer
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.model_selection import train_test_split
    except ImportError as exc:  # pragma: no cover - only without the ml extra
        raise ImportError("the demo needs scikit-learn: pip install 'fairshare[ml]'") from exc
    data = load_breast_cancer(as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(data.data, data.target, test_size=0.25,
                                                        random_state=seed, stratify=data.target)
    model = GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=seed).fit(X_train, y_train)
    groups = [[j, j + 10, j + 20] for j in range(10)]        # mean, error and worst value of measurement j
    return model, X_train, X_test, y_test, groups


def breast_cancer_game(row: int = 0, seed: int = 0):
    """The demo's game: the classifier's log-odds at one test row, with 10 players (each measurement's
    mean, standard error and worst value), absent players at the training mean.

    Examples
    --------
    >>> game, info = breast_cancer_game()        # doctest: +SKIP
    >>> game.n_players                           # doctest: +SKIP
    10
    """
    from ..games.model import ModelGame

    model, X_train, X_test, y_test, groups = _data(seed)
    game = ModelGame(model.decision_function, X_test.iloc[row], X_train.mean().to_frame().T, groups=groups)
    info = {"accuracy": float(model.score(X_test, y_test)), "row": row,
            "prediction": float(model.predict_proba(X_test.iloc[[row]])[0, 1])}
    return game, info


def run_demo(budget: int = DEMO_BUDGET, seed: int = 0) -> tuple[list[DemoRow], dict]:
    """Every registered method through ``fairshare.doors.explain`` on one row; table rows and context."""
    from ..doors.explain import explain

    model, X_train, X_test, y_test, groups = _data(seed)
    row = X_test.iloc[[0]]
    baseline = X_train.mean().to_frame().T
    common = dict(background=baseline, groups=groups, progress=False, seed=seed)
    truth = {idx: explain(model.decision_function, row, index=idx, method="exact", **common) for idx in INDICES}
    from ..games.model import ModelGame

    game = ModelGame(model.decision_function, row, baseline, groups=groups)
    plan = [(name, idx, get_method(name).budget_needed(game, resolve_index(idx)))
            for name in method_names() if name != "exact" and not get_method(name).requires
            for idx in INDICES if get_method(name).supports(resolve_index(idx))]
    smallest = min(need for _, _, need in plan)
    if budget < smallest:
        raise ValueError(f"budget={budget} is too small: the cheapest method needs {smallest} evaluations "
                         "of the demo's 10-player game")
    rows: list[DemoRow] = []
    for name, idx, need in plan:
        # a method whose minimum exceeds the budget (sgd: 50 steps of each of its chains) runs at its minimum
        start = time.perf_counter()
        e = explain(model.decision_function, row, index=idx, method=name, budget=max(budget, need), **common)
        seconds = time.perf_counter() - start
        stderr = float(np.mean(e.stderr)) if e.stderr is not None else float("nan")
        rows.append(DemoRow(name, idx, int(e.n_evaluations[0]),
                            relative_squared_error(e.values, truth[idx].values), stderr, seconds,
                            at_minimum=need > budget))
    for idx in INDICES:
        rows.insert(0 if idx == "shapley" else 1, DemoRow("exact", idx, int(truth[idx].n_evaluations[0]), 0.0, 0.0, 0.0))
    trees = explain(model, X_test.iloc[:5], progress=False)
    info = {"accuracy": float(model.score(X_test, y_test)), "row": 0,
            "prediction": float(model.predict_proba(row)[0, 1]), "truth": truth, "budget": budget, "trees": trees,
            "groups": truth["shapley"].player_names}
    return rows, info


def format_table(rows: list[DemoRow]) -> str:
    """Markdown table of demo rows."""
    lines = ["| method | index | evaluations | relative squared error | mean stderr | seconds |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.method} | {r.index} | {r.n_evaluations} | {r.relative_error:.2e} | "
                     f"{r.mean_stderr:.3g} | {r.seconds:.3f} |")
    above = [f"{r.method} ({r.index}) needs at least {r.n_evaluations}" for r in rows if r.at_minimum]
    if above:
        lines.append("\nran at their minimum, above the budget: " + "; ".join(above))
    return "\n".join(lines)


def main(budget: int = DEMO_BUDGET, seed: int = 0) -> str:
    """Run the demo and return the text it prints."""
    start = time.perf_counter()
    rows, info = run_demo(budget, seed)
    shap = info["truth"]["shapley"]
    top = np.argsort(-np.abs(shap.values[0]))[:5]
    trees = info["trees"]
    tree_top = np.argsort(-np.abs(trees.values[0]))[:3]
    out = [
        "fairshare demo: why did a gradient-boosted model call this breast-cancer tumour benign?",
        f"model: GradientBoostingClassifier, test accuracy {info['accuracy']:.3f}; explained test row "
        f"{info['row']} (P(benign) = {info['prediction']:.3f})",
        "",
        f"1. fs.explain(model, X_test[:5]): exact tree values of 30 features for 5 rows ({trees.method}: {trees.info['via']}); "
        "row 0: " + ", ".join(f"{trees.player_names[i]} {trees.values[0, i]:+.3f}" for i in tree_top),
        "",
        "2. fs.explain(model.decision_function, row, background=training mean, groups=10 measurements, method=...):",
        f"   v(empty) = {float(shap.empty_value[0]):.3f}; largest exact Shapley values: "
        + ", ".join(f"{shap.player_names[i].split(' + ')[0]} {shap.values[0, i]:+.3f}" for i in top),
        "",
        f"every registered method at a budget of {info['budget']} evaluations (exact: all 2^10), "
        "error against exact values:",
        format_table(rows),
        "",
        f"total time {time.perf_counter() - start:.1f} s",
    ]
    return "\n".join(out)
