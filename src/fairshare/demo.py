"""``fairshare demo``: explain one breast-cancer prediction with every registered method."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .estimate import estimate
from .exact import exact
from .games.function import FunctionGame
from .metrics import relative_squared_error
from .registry import get_method, method_names
from .semivalues import resolve_index

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


def breast_cancer_game(row: int = 0, seed: int = 0):
    """A gradient-boosted classifier on scikit-learn's breast-cancer data, as a 10-player game.

    The 30 columns are 10 measurements (radius, texture, ...) each given as mean,
    standard error and worst value; each measurement (3 columns) is one player.
    Absent players take the training mean (a single baseline row); the game's
    value is the model's log-odds of a benign tumour.

    Returns ``(game, info)`` where ``info`` describes the model and the explained row.

    Examples
    --------
    >>> game, info = breast_cancer_game()        # doctest: +SKIP
    >>> game.n_players                           # doctest: +SKIP
    10
    """
    try:
        from sklearn.datasets import load_breast_cancer
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.model_selection import train_test_split
    except ImportError as exc:  # pragma: no cover - only without the ml extra
        raise ImportError("the demo needs scikit-learn: pip install 'fairshare[ml]'") from exc
    data = load_breast_cancer()
    X_train, X_test, y_train, y_test = train_test_split(data.data, data.target, test_size=0.25,
                                                        random_state=seed, stratify=data.target)
    model = GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=seed).fit(X_train, y_train)
    names = [str(f).removeprefix("mean ") for f in data.feature_names[:10]]
    groups = np.array([[j, j + 10, j + 20] for j in range(10)])   # mean, error, worst of measurement j
    x = X_test[row]
    baseline = X_train.mean(axis=0)
    column_player = np.empty(30, dtype=int)
    for player, cols in enumerate(groups):
        column_player[cols] = player

    def value(S: np.ndarray) -> np.ndarray:
        rows = np.where(S[:, column_player], x[None, :], baseline[None, :])
        return model.decision_function(rows)

    game = FunctionGame(value, n_players=10, player_names=names)
    info = {"accuracy": float(model.score(X_test, y_test)), "row": row,
            "prediction": float(model.predict_proba(x[None, :])[0, 1])}
    return game, info


def run_demo(budget: int = DEMO_BUDGET, seed: int = 0) -> tuple[list[DemoRow], dict]:
    """Run every registered method on the demo game; return the table rows and context."""
    game, info = breast_cancer_game()
    truth = {idx: exact(game, idx) for idx in INDICES}
    rows: list[DemoRow] = []
    for name in method_names():
        spec = get_method(name)
        for idx in INDICES:
            sv = resolve_index(idx)
            if not spec.supports(sv):
                continue
            spend = max(budget, spec.min_budget(game, sv)) if name == "exact" else budget
            start = time.perf_counter()
            phi = estimate(game, idx, method=spec.name, budget=spend, seed=seed)
            seconds = time.perf_counter() - start
            stderr = float(np.mean(phi.stderr)) if phi.stderr is not None else float("nan")
            rows.append(DemoRow(spec.name, idx, phi.n_evaluations,
                                relative_squared_error(phi, truth[idx]), stderr, seconds))
    info["truth"] = truth
    info["budget"] = budget
    return rows, info


def format_table(rows: list[DemoRow]) -> str:
    """Markdown table of demo rows."""
    lines = ["| method | index | evaluations | relative squared error | mean stderr | seconds |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.method} | {r.index} | {r.n_evaluations} | {r.relative_error:.2e} | "
                     f"{r.mean_stderr:.3g} | {r.seconds:.3f} |")
    return "\n".join(lines)


def main(budget: int = DEMO_BUDGET, seed: int = 0) -> str:
    """Run the demo and return the text it prints."""
    start = time.perf_counter()
    rows, info = run_demo(budget, seed)
    shap = info["truth"]["shapley"]
    top = np.argsort(-np.abs(shap.values))[:5]
    out = [
        "fairshare demo: why did a gradient-boosted model call this breast-cancer tumour benign?",
        f"model: GradientBoostingClassifier, test accuracy {info['accuracy']:.3f}; explained test row "
        f"{info['row']} (P(benign) = {info['prediction']:.3f})",
        "players: 10 measurements (mean, standard error and worst value of each); absent ones take the "
        "training mean; value: log-odds",
        f"v(empty) = {shap.empty_value:.3f}, v(all) = {shap.grand_value:.3f}",
        "",
        "largest exact Shapley values: " + ", ".join(f"{shap.player_names[i]} {shap.values[i]:+.3f}" for i in top),
        "",
        f"every registered method at a budget of {info['budget']} evaluations (exact: all 2^10), "
        "error against exact values:",
        format_table(rows),
        "",
        f"total time {time.perf_counter() - start:.1f} s",
    ]
    return "\n".join(out)
