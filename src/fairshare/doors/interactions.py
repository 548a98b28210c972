"""``fairshare.doors.interactions``: interaction values of a game (which players act together), exact or within a budget."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option, SeedLike, check_progress
from .estimate import common_arguments
from ..engine.choice import Choice, choose
from ..engine.engine import FairshareWarning, execute, infinite_stderr_note, run_parts, squeezed
from ..engine.split import plan_split
from ..engine.stopping import StoppingRule, as_rule
from ..games.base import Game
from ..indices.interactions import (INTERACTION_INDEX_NAMES, MATRIX_INDEX_NAMES, InteractionIndex,
                                    resolve_interaction_index, subsets_up_to)
from ..results.interactions import Interactions
from ..indices.moebius import SubsetIndex
from .._core.progress import reporting

__all__ = ["interactions", "run_interactions", "INTERACTIONS", "interaction_arguments"]


def _index(value: Any) -> Any:
    resolve_interaction_index(value)
    return value


def interaction_arguments() -> tuple[Option, ...]:
    """``index`` and ``order`` as every door that gives interaction values declares them."""
    return (
        Option("index", "k-sii", f"the interaction index: {', '.join(INTERACTION_INDEX_NAMES)}; pairwise layouts: "
               f"{', '.join(MATRIX_INDEX_NAMES)} (shap's matrix: 'shap'); or an InteractionIndex", check=_index),
        Option("order", None, "the largest subset size valued (default 2, or the order the index names)",
               kind="int", minimum=1, none_ok=True),
    )


#: fs.interactions' arguments (besides the game and the method's own options)
INTERACTIONS = Arguments("interactions", interaction_arguments() + tuple(
    o for o in common_arguments() if o.name not in ("index",)) + (
    Option("progress", False, "True for a bar, or progress(evaluations, cap, relative_error)", check=check_progress),
))


def interactions(game: Game, index: str | InteractionIndex = "k-sii", order: int | None = None, method: str = "auto",
                 budget: int | None = None, seed: SeedLike = None, tol: float | None = None,
                 stop: StoppingRule | None = None, progress: Any = False, **options: Any) -> Interactions:
    """Interaction values of ``game``: one value per subset of 1..``order`` players.

    Parameters
    ----------
    game : Game
    index : "k-sii" (default), "sii", "stii", "fsii", "fbii", "bii", "moebius", "sii-matrix" (alias "shap"),
        "bii-matrix", or an InteractionIndex
        See :mod:`fairshare.indices.interactions` for the definitions; order 1 gives the Shapley values (the
        Banzhaf values for fbii and bii). ``"sii-matrix"`` is shap's ``shap_interaction_values`` convention (what
        ``fs.explain(..., interactions=2)`` and ``fs.games.tree_interactions`` return): ``matrix()`` holds half
        the pair's SII in each off-diagonal cell and the rest of the Shapley value on the diagonal, each row
        summing to the Shapley values; ``"bii-matrix"`` the same with BII and the Banzhaf values. Both are
        pairwise (order 2).
    order : int, default 2
        The largest subset size valued (1..n).
    method : "auto", "exact", "iq-regression", "iq-stratified" or "iq-permutation"
        ``"exact"`` uses the game's closed form (a sum of unanimity games, a tree) or enumerates all ``2^n``
        coalitions (n <= 22 unless ``allow_large=True``). ``"auto"`` takes exact values when the budget covers
        every coalition, else ``iq-regression``; ``info["choice"]`` says which and why.
    budget : int
        Most game evaluations, all included (required unless exact), counted at the game and never exceeded. A
        budget below what the method needs is refused before any evaluation, naming the minimum:
        ``iq-regression`` and ``iq-stratified`` need the two ends plus one coalition per value
        (``2 + C(n, 1) + ... + C(n, order)``, in whole complementary pairs, at most ``2^n``); ``iq-permutation``
        one whole permutation's coalitions; ``exact`` all ``2^n`` (2 for a closed form).
    seed, tol, stop, progress, **options
        As in :func:`fairshare.doors.estimate`; options are the method's (``fairshare methods``).

    Returns
    -------
    Interactions

    Examples
    --------
    >>> import fairshare as fs
    >>> soum = fs.games.SOUMGame.random(12, n_terms=20, max_size=3, seed=0)
    >>> g = fs.games.FunctionGame(lambda S: soum(S), n_players=12)          # a black box
    >>> res = fs.interactions(g, "k-sii", order=2, budget=1000, seed=0)
    >>> res.values.shape, res.method
    ((78,), 'iq-regression')
    >>> exact = fs.interactions(soum, "k-sii", order=2, method="exact")     # its closed form
    >>> bool(np.max(np.abs(res.values - exact.values)) < 0.05)
    True
    >>> fs.interactions(g, "k-sii", order=2, budget=50)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fairshare.engine.evaluation.BudgetError: budget=50 is too small ... is 80 ('iq-regression'); ...
    """
    if not isinstance(game, Game):
        raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
    args = INTERACTIONS.check(dict(index=index, order=order, method=method, budget=budget, seed=seed, tol=tol,
                                   stop=stop, progress=progress))
    ix = resolve_interaction_index(args["index"], args["order"])
    n = game.n_players
    if ix.order > n:
        raise ValueError(f"order must be at most the number of players ({n}), got {ix.order}")
    rule = as_rule(args["stop"], args["tol"])
    choice = choose(game, ix, args["method"], args["budget"], rule, options)
    with reporting(args["progress"], "interactions", "evaluation") as report:
        return run_interactions(game, ix, choice, seed, rule, progress=report)


def run_interactions(game: Game, ix: InteractionIndex, choice: Choice, seed: SeedLike = None,
                     rule: StoppingRule | None = None, progress: Any = None) -> Interactions:
    """The values of ``ix`` on ``game`` by the method ``choice`` names (decided once, e.g. for many rows): the
    engine's run, null players' subsets set to 0, the result put together.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.SOUMGame([[True, True, False]], [2.0])
    >>> ix = fs.InteractionIndex("sii-matrix", 2)
    >>> run_interactions(g, ix, choose(g, ix, "exact")).matrix()
    array([[0., 1., 0.],
           [1., 0., 0.],
           [0., 0., 0.]])
    """
    n = game.n_players
    subsets = subsets_up_to(n, ix.order, 1)
    split = plan_split(game, ix, choice, rule, progress)
    if split is not None:                             # one part per background row (engine/split.py)
        parts = run_parts(split, ix, choice, seed, lambda active, v: _on_subsets(subsets, ix, active, v),
                          subsets.shape[0])
        return _result(game, ix, subsets, parts.method, {}, parts.info, parts.n_evaluations, parts.scalar,
                       parts.values, parts.stderr, parts.empty, parts.grand)
    done = execute(game, ix, choice, seed, rule, progress=progress)
    result = done.result
    values, stderr = result.values, result.stderr
    if done.active is not None:                       # null players: every subset holding one has value 0
        values = _on_subsets(subsets, ix, done.active, values)
        stderr = None if stderr is None else _on_subsets(subsets, ix, done.active, stderr)
    info = done.info
    if stderr is not None and not np.all(np.isfinite(stderr)):
        info["stderr"] = infinite_stderr_note(choice, ix, n if done.active is None else done.active.size,
                                              info.get("stderr"))
        warnings.warn(info["stderr"], FairshareWarning, stacklevel=3)
    return _result(game, ix, subsets, choice.method, dict(choice.options), info, done.n_evaluations, done.scalar,
                   values, stderr, result.empty_value, result.grand_value)


def _on_subsets(subsets: np.ndarray, ix: InteractionIndex, active: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Values of the game of the players ``active`` (its subsets up to the order) on the game's ``subsets``, 0 on
    every subset holding another player (a null player's)."""
    full = np.zeros((subsets.shape[0], values.shape[1]))
    if active.size:
        inner = subsets_up_to(active.size, ix.order, 1)
        full[SubsetIndex(subsets)(np.where(inner >= 0, active[np.maximum(inner, 0)], -1))] = values
    return full


def _result(game: Game, ix: InteractionIndex, subsets: np.ndarray, method: str, options: dict, info: dict,
            n_evaluations: int, scalar: bool, values: Any, stderr: Any, empty: Any, grand: Any) -> Interactions:
    """The Interactions result, arrays of one output squeezed to the game's scalar shape."""
    def out(a: np.ndarray | None) -> Any:
        return squeezed(a, scalar)

    return Interactions(values=out(values), stderr=out(stderr), subsets=subsets, index=ix.kind, order=ix.order,
                        method=method, options=options, info=info, n_evaluations=n_evaluations,
                        empty_value=out(empty), grand_value=out(grand), player_names=list(game.player_names))
