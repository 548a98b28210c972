"""``explain(..., interactions=2)``: each row's values and pairwise interaction matrices from one run.

One run per row estimates the pair index that extends the values (SII of order 2 for Shapley values, BII for
Banzhaf values) with the method chosen once for every row (the rules of :func:`fairshare.doors.interactions`: exact
when the budget covers every coalition or the game has a closed form, else ``iq-regression``). Its singletons
are the row's values (SII and BII of one player are its Shapley and Banzhaf value) and its pairs the
interactions, laid out as shap's ``shap_interaction_values`` (the matrix indices of
:mod:`fairshare.indices.interactions`): half of each pair's SII (BII) in both off-diagonal cells and the rest of
each player's value on the diagonal, so each row of a matrix sums to the values. The matrices' standard errors
are those of the matrix index read from the same coalitions (the run's values are remembered, the model is not
called again). The values and the interactions together spend at most ``budget`` coalitions per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.seeds import fresh
from ..engine.choice import Choice, choose
from ..engine.interaction_fit import shared_fits
from ..engine.registry import get_method
from ..engine.stopping import RunState, StoppingRule
from ..games.base import Game, GameWrapper
from ..indices.hierarchy import OwenIndex
from ..indices.interactions import MATRIX_BASES, InteractionIndex
from ..inputs.base import Plan, default_budget
from ..results.explanation import Explanation
from ..store.coalitions import CoalitionStore, coalition_keys
from .interactions import run_interactions
from .scheduler import item_game, relabelled

__all__ = ["RunMemory", "pair_row", "pair_index", "explain_pairs", "how_pairs_are_computed"]


class RunMemory(GameWrapper):
    """A game whose coalitions are each evaluated once and remembered; with ``replaying`` set, only what was
    evaluated is answered (a second index read from the same run's coalitions calls nothing).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = RunMemory(fs.games.AdditiveGame([1.0, 2.0]))
    >>> S = np.array([[True, False], [True, True]])
    >>> g(S).tolist(), g(S).tolist(), g.game.n_evaluations
    ([1.0, 3.0], [1.0, 3.0], 2)
    >>> g.replaying = True
    >>> g(np.array([[False, True]]))
    Traceback (most recent call last):
    ...
    RuntimeError: the second reading of a run asked for 1 coalitions the run did not evaluate
    """

    def __init__(self, game: Game) -> None:
        super().__init__(game.n_players, player_names=game.player_names)
        self.game = game
        self.replaying = False
        self._store = CoalitionStore()

    def null_players(self) -> np.ndarray | None:
        return self.game.null_players()

    def knows_exact_interactions(self, index: Any) -> bool:
        return self.game.knows_exact_interactions(index)

    def exact_interactions(self, index: Any, subsets: np.ndarray) -> np.ndarray | None:
        return self.game.exact_interactions(index, subsets)

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        keys = coalition_keys(coalitions)
        pos = self._store.find(keys)
        new = np.flatnonzero(pos < 0)
        if new.size:
            if self.replaying:
                raise RuntimeError(f"the second reading of a run asked for {new.size} coalitions the run did not "
                                   "evaluate")
            values = np.asarray(self.game(coalitions[new]), dtype=float)
            pos[new] = self._store.add(keys[new], values.reshape(new.size, -1))
        out = self._store.values[pos]
        return out[:, 0] if not self.game.n_outputs else out


class _SameRounds(StoppingRule):
    """The first run's rule as its second reading sees it: the same rounds and cap, stopping where it stopped."""

    def __init__(self, rule: StoppingRule, rounds: int) -> None:
        self.rule, self.rounds = rule, rounds
        self.needs_rounds, self.needs_stderr = rule.needs_rounds, rule.needs_stderr

    def evaluation_cap(self) -> int | None:
        return self.rule.evaluation_cap()

    def __call__(self, state: RunState) -> str | None:
        return "the run stopped here" if state.round >= self.rounds else None


def pair_row(data: Any, i: int, seed: np.random.SeedSequence, folder: Any = None, client: Any = None) -> dict:
    """Item ``i``'s values, standard errors and interaction matrix of ``data.pair_kind`` (``"sii-matrix"``,
    ``"bii-matrix"``) from one run of its plan (a scheduler runner: top-level, so Dask can ship it)."""
    kind, choice, rule = data.pair_kind, data.planned[i].choice, data.rule

    def one() -> dict:
        game = item_game(data, i, folder, client)
        memory = RunMemory(game)
        with shared_fits():                            # the two runs read one sample: the second takes the first's fit
            base = run_interactions(memory, InteractionIndex(MATRIX_BASES[kind], 2), choice, fresh(seed), rule)
            memory.replaying = True
            stopped = base.info.get("stopped")
            again = rule if rule is None or stopped is None else _SameRounds(rule, int(stopped["round"]))
            laid = run_interactions(memory, InteractionIndex(kind, 2), choice, fresh(seed), again)
        n = game.n_players
        values = np.asarray(base.values, dtype=float)[:n]                   # the singletons come first
        matrix = laid.matrix()
        diagonal = np.arange(n)
        matrix[diagonal, diagonal] = 0.0
        matrix[diagonal, diagonal] = values - matrix.sum(axis=1)             # rows add up to the values exactly
        errors = laid.matrix(stderr=True) if laid.stderr is not None else np.full(matrix.shape, np.nan)
        return dict(values=values, stderr=None if base.stderr is None else np.asarray(base.stderr, dtype=float)[:n],
                    empty=np.asarray(base.empty_value, dtype=float), grand=np.asarray(base.grand_value, dtype=float),
                    n_evaluations=np.asarray(base.n_evaluations), names=list(game.player_names),
                    info={k: v for k, v in base.info.items() if k != "choice"}, matrix=matrix, matrix_stderr=errors)

    return relabelled(data, i, one)


def how_pairs_are_computed(kind: str, choice: Choice) -> dict:
    """``e.info["interactions"]``: the index, its convention and how the run gave it.

    Examples
    --------
    >>> how_pairs_are_computed("sii-matrix", Choice("exact"))["index"]
    'sii-matrix'
    """
    pair, value = ("SII", "Shapley") if kind == "sii-matrix" else ("BII", "Banzhaf")
    return {"index": kind, "order": 2, "choice": choice.as_info(), "n_evaluations": 0,
            "convention": f"shap's shap_interaction_values: half of each pair's {pair} in both off-diagonal cells, "
                          f"the rest of each {value} value on the diagonal; each row sums to the values",
            "run": f"one run per row of {pair.lower()}(2) by {choice.method!r}: its singletons are the values, its "
                   f"pairs the interactions; the matrices and their standard errors are read from the same "
                   f"coalitions (no model call of their own), so values and interactions together stay within "
                   f"the budget per row"}


def pair_index(sv: Any, order: int | None) -> str | None:
    """The interaction matrix that extends ``sv`` (checked before any model call): shap's layout of SII for Shapley
    values (``"sii-matrix"``), of BII for Banzhaf values (``"bii-matrix"``); None without interactions.

    Examples
    --------
    >>> import fairshare as fs
    >>> pair_index(fs.Semivalue.banzhaf(), 2), pair_index(fs.Semivalue.shapley(), None)
    ('bii-matrix', None)
    """
    if order is None:
        return None
    if isinstance(sv, OwenIndex):
        raise ValueError("interactions=2 extends Shapley (SII) or Banzhaf (BII) values, not Owen values")
    if sv.is_shapley:
        return "sii-matrix"
    if sv.is_banzhaf:
        return "bii-matrix"
    raise ValueError(f"interactions=2 extends Shapley (SII) or Banzhaf (BII) values, not index {sv.name!r}")


def explain_pairs(data: Any, sv: Any, kind: str, args: dict, rule: Any, seed: Any, options: dict,
                  schedule_rows: Any) -> Explanation:
    """Values and shap's interaction matrices of every item, both from one run per item of the pair index (SII or
    BII of order 2: its singletons are the values), so together they spend at most the budget per item; exact from
    the trees for tree models. ``schedule_rows(data, runner)`` runs the items (the door's scheduler)."""
    first = data.game(0)
    base = InteractionIndex(MATRIX_BASES[kind], 2)
    budget = args["budget"]
    if budget is None:                              # enough for the pairs: twice their minimum when more
        need = get_method("iq-regression").budget_needed(first, base)
        budget = max(default_budget(first.n_players), min(2 * need, 1 << min(first.n_players, 62)))
    try:
        choice = choose(first, base, args["method"], budget, rule, options)
    except ValueError as exc:
        if str(exc).startswith("method "):
            raise ValueError(f"{exc} (interactions=2: the values and the interactions come from one run of an "
                             "interaction method)") from None
        raise
    info = {"choice": choice.as_info(), **data.info(), "budget": budget, "seed": str(seed),
            "interactions": how_pairs_are_computed(kind, choice)}
    plans = [Plan(sv, choice, budget)] * data.n_items
    exact = data.closed_form(plans, args, seed, options) if choice.method == "exact" else None
    if exact is not None:                           # tree models: exact, every row at once, no model call
        exact.info = {**info, "via": exact.info["via"]}
        matrices = data.exact_pairs(kind)
        diagonal = np.arange(len(exact.player_names))
        matrices[:, diagonal, diagonal] = 0.0
        matrices[:, diagonal, diagonal] = exact.values - matrices.sum(axis=2)
        exact.interactions, exact.interactions_stderr = matrices, np.zeros_like(matrices)
        return exact
    data.planned, data.rule, data.pair_kind = plans, rule, kind
    results = schedule_rows(data, pair_row)
    expl = data.result(results, plans, info)
    expl.interactions = np.stack([r["matrix"] for r in results])
    expl.interactions_stderr = np.stack([r["matrix_stderr"] for r in results])
    return expl
