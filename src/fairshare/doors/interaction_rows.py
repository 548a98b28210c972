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

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..games.cached import CachedGame
from ..store.cache import RunCache, fingerprint, model_key
from ..engine.choice import Choice
from ..store.coalitions import CoalitionStore, coalition_keys
from ..engine.stopping import RunState, StoppingRule
from ..games.base import Game, GameWrapper
from ..games.distributed import DistributedGame
from ..games.imputers import Imputer
from ..games.model import ModelError
from ..indices.interactions import MATRIX_BASES, InteractionIndex
from .interactions import run_interactions
from .._core.progress import reporter

__all__ = ["RunMemory", "pair_row", "pair_rows", "how_pairs_are_computed"]


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


def _fresh(seed: np.random.SeedSequence) -> np.random.SeedSequence:
    """The same seed again (a SeedSequence that spawned children would give other ones)."""
    return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)


def pair_row(rows: Any, i: int, kind: str, choice: Choice, rule: StoppingRule | None, seed: np.random.SeedSequence,
             folder: Any = None, client: Any = None) -> dict:
    """Row ``i``'s values, standard errors and interaction matrix of ``kind`` (``"sii-matrix"``, ``"bii-matrix"``)
    from one run of ``choice`` (a top-level function so Dask can ship it)."""
    try:
        game = rows.game(i)
        if folder is not None:
            game = CachedGame(game, folder)
        if client is not None:
            game = DistributedGame(game, client)
        memory = RunMemory(game)
        base = run_interactions(memory, InteractionIndex(MATRIX_BASES[kind], 2), choice, _fresh(seed), rule)
        memory.replaying = True
        stopped = base.info.get("stopped")
        again = rule if rule is None or stopped is None else _SameRounds(rule, int(stopped["round"]))
        laid = run_interactions(memory, InteractionIndex(kind, 2), choice, _fresh(seed), again)
    except ModelError as exc:
        raise ModelError(f"row {rows.row_names[i]}: {exc}") from exc.__cause__
    except ValueError as exc:
        if str(exc).startswith(("the game returned NaN", "predict returned")):
            raise ValueError(f"row {rows.row_names[i]}: {str(exc).replace('the game returned', 'the model returned')}"
                             ) from exc
        raise
    n = game.n_players
    values = np.asarray(base.values, dtype=float)[:n]                       # the singletons come first
    matrix = laid.matrix()
    diagonal = np.arange(n)
    matrix[diagonal, diagonal] = 0.0
    matrix[diagonal, diagonal] = values - matrix.sum(axis=1)                 # rows add up to the values exactly
    errors = laid.matrix(stderr=True) if laid.stderr is not None else np.full(matrix.shape, np.nan)
    return dict(values=values, stderr=None if base.stderr is None else np.asarray(base.stderr, dtype=float)[:n],
                empty=np.asarray(base.empty_value, dtype=float), grand=np.asarray(base.grand_value, dtype=float),
                n_evaluations=np.asarray(base.n_evaluations), names=list(game.player_names),
                info={k: v for k, v in base.info.items() if k != "choice"}, matrix=matrix, matrix_stderr=errors)


def _key(rows: Any, model: Any, kind: str, choice: Choice, rule: Any, seed: Any, args: dict) -> str:
    imputation = getattr(rows, "imputation", None)
    return fingerprint(getattr(rows, "rows", None), getattr(rows, "bg_rows", None), interactions=kind,
                       method=choice.method, options=repr(sorted(choice.options.items())), budget=choice.budget,
                       stop=repr(rule), seed=str(seed), model=model_key(model), groups=args["groups"],
                       imputation=imputation.describe() if isinstance(imputation, Imputer) else imputation,
                       names=getattr(rows, "feature_names", None), model_output=str(args["model_output"]),
                       labels=repr(getattr(rows, "labels", None)), link=args["link"])


def pair_rows(rows: Any, model: Any, kind: str, choice: Choice, rule: StoppingRule | None, seed: Any,
              args: dict) -> list[dict]:
    """:func:`pair_row` for every row: in turn, in ``n_jobs`` threads or one Dask task per row; with ``cache``, the
    evaluated coalitions are kept per row (an interrupted run resumes without calling the model again)."""
    n_rows = rows.n_rows
    seeds = np.random.SeedSequence(seed if not isinstance(seed, np.random.Generator)
                                   else seed.integers(2**63)).spawn(n_rows)
    store = None if args["cache"] is None else RunCache(args["cache"], _key(rows, model, kind, choice, rule, seed,
                                                                            args))
    folders = [None if store is None else store.coalition_folder(i) for i in range(n_rows)]
    results: list[Any] = [None] * n_rows
    report = reporter(args["progress"] if n_rows > 1 else False, "explaining rows", "row")
    done = [0]

    def finish(i: int, result: dict) -> None:
        results[i] = result
        done[0] += 1
        if report is not None:
            report(done[0], n_rows, None)

    client, n_jobs = args["client"], args["n_jobs"]
    try:
        if client is not None and n_rows > 1:
            from dask.distributed import as_completed

            remote = client.scatter(rows, broadcast=True)
            futures = {client.submit(pair_row, remote, i, kind, choice, rule, seeds[i], folders[i], pure=False): i
                       for i in range(n_rows)}
            for fut in as_completed(list(futures)):
                finish(futures[fut], fut.result())
        elif client is not None:
            finish(0, pair_row(rows, 0, kind, choice, rule, seeds[0], folders[0], client))
        elif n_jobs and n_jobs > 1 and n_rows > 1:
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                futures = {i: pool.submit(pair_row, rows, i, kind, choice, rule, seeds[i], folders[i])
                           for i in range(n_rows)}
                for i, fut in futures.items():
                    finish(i, fut.result())
        else:
            for i in range(n_rows):
                finish(i, pair_row(rows, i, kind, choice, rule, seeds[i], folders[i]))
    finally:
        if report is not None:
            report.close()
    return results


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
