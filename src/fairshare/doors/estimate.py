"""``fairshare.doors.estimate``: the semivalues of a game within a budget, by a registry method or ``auto``."""

from __future__ import annotations

from typing import Any

from .._core.arguments import Arguments, Option, SeedLike, check_progress, check_rng
from ..results.attribution import Attribution
from ..engine.choice import choose
from ..engine.engine import run
from ..engine.registry import method_names
from ..engine.stopping import StoppingRule, as_rule
from ..games.base import Game
from ..indices.hierarchy import check_partition, check_value_index, resolve_value_index
from .._core.progress import reporting
from ..indices.semivalues import Semivalue

__all__ = ["estimate", "ESTIMATE", "common_arguments"]


def _seed(value: Any) -> Any:
    check_rng(value)                            # refuses what cannot seed a generator; the seed itself is kept
    return value


def _stop(value: Any) -> Any:
    return as_rule(value)


def common_arguments() -> tuple[Option, ...]:
    """The arguments every estimating door shares, declared once (same names, same checks, same wording)."""
    return (
        Option("index", "shapley", "the semivalue: a name (shapley, banzhaf, beta-shapley, loo, beta-shapley(a,b), "
               "weighted-banzhaf(w)) or a Semivalue; or owen (with partition)", check=check_value_index),
        Option("method", "auto", "a registry method (fairshare methods) or auto",
               allowed=("auto",) + tuple(method_names())),
        Option("budget", None, "most game evaluations, all included", kind="int", minimum=1, none_ok=True),
        Option("seed", None, "same seed, same values: an int, a numpy Generator or None", check=_seed),
        Option("tol", None, "stop once the estimated relative error is at most tol", kind="float", minimum=0.0,
               none_ok=True, check=lambda v: as_rule(None, v) and v),
        Option("stop", None, "a fairshare.stopping rule (RelativeError(0.05) | MaxTime(60))", check=_stop),
    )


#: fs.estimate's arguments (besides the game and the method's own options)
ESTIMATE = Arguments("estimate", common_arguments() + (
    Option("partition", None, "index='owen': the blocks of players, e.g. [[0, 1, 2], [3, 4]] (nested lists: a "
           "hierarchy)", check=check_partition),
    Option("progress", False, "True for a bar, or progress(evaluations, cap, relative_error)", check=check_progress),
))


def estimate(game: Game, index: str | Semivalue = "shapley", method: str = "auto", budget: int | None = None,
             seed: SeedLike = None, tol: float | None = None, stop: StoppingRule | None = None,
             progress: Any = False, partition: Any = None, **options: Any) -> Attribution:
    """Estimate the semivalues of ``game`` with a registered method, within ``budget`` evaluations.

    Parameters
    ----------
    game : Game
    index : "shapley", "banzhaf", "beta-shapley", "loo", "beta-shapley(a,b)", "weighted-banzhaf(w)", a Semivalue, or
        "owen" with ``partition``
    method : str
        A registry key (see :func:`fairshare.methods`) or ``"auto"``: exact values when the game has a
        closed form or the budget covers all ``2^n`` coalitions, else the preferred estimator for the index
        that the budget affords (:mod:`fairshare.engine.choice`; the result's ``info["choice"]`` says
        which and why).
    budget : int
        Most game evaluations the method may spend, all included. Required except for exact values and
        leave-one-out.
    seed : int, numpy Generator or None
        Same seed, same result: the sampler and the error bars draw from separate streams split from it.
    tol : float, optional
        Shorthand for ``stop=fairshare.stopping.RelativeError(tol)``.
    stop : a :mod:`fairshare.stopping` rule, optional
        e.g. ``RelativeError(0.05) | MaxTime(60)``: the budget is spent in doubling rounds and the run
        stops after the first round where the rule holds (``info["stopped"]`` says when and why). A
        ``MaxEvaluations`` cap holds whatever method runs. Rounds change no draw of the walking methods
        (``permutation``, ``tmc``, ``owen-permutation``, ``owen-adaptive``, ``iq-permutation``): a rule that
        never holds gives the values of the same seed without it (to rounding). The other samplers draw a
        design for each round's evaluations (sizes taken whole, coalitions without replacement, a pilot, pairs
        spread over the players), so there a rule, even ``tol=1e-12``, gives other draws than the same seed
        without it: as accurate, not the same numbers.
    progress : bool or callable
        True shows a bar; a callable is called ``progress(evaluations, cap, relative_error)`` after every batch
        (``relative_error``: ``||stderr|| / ||values||`` of the last round, None before the first); the budget
        is then spent in rounds, as with a stopping rule (and with the same effect on the draws).
    partition : list of blocks, optional
        For ``index="owen"``: the unions of players (``[[0, 1, 2], [3, 4]]``), or nested lists for hierarchical
        Owen values. Overlapping or missing players are refused before any evaluation.
    **options
        Method options (``fairshare methods`` lists them); every value is checked before the game is evaluated.

    Returns
    -------
    Attribution

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.SOUMGame.random(12, n_terms=20, seed=0)
    >>> phi = fs.estimate(g, "shapley", method="permutation", budget=2000, seed=0)
    >>> phi.n_evaluations <= 2000
    True
    >>> owen = fs.estimate(g, "owen", partition=[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], budget=100, seed=0)
    >>> owen.method, owen.values.shape
    ('owen-adaptive', (12,))
    """
    if not isinstance(game, Game):
        raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
    args = ESTIMATE.check(dict(index=index, method=method, budget=budget, seed=seed, tol=tol, stop=stop,
                               progress=progress, partition=partition))
    sv = resolve_value_index(args["index"], game.n_players, args["partition"])
    rule = as_rule(args["stop"], args["tol"])
    choice = choose(game, sv, args["method"], args["budget"], rule, options)
    with reporting(args["progress"], "estimating", "evaluation") as report:
        return run(game, sv, choice, seed, rule, progress=report)
