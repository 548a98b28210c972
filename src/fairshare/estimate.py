"""``fairshare.estimate``: one entry point that dispatches through the method registry to the one driver."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import SeedLike, check_int, check_rng
from .attribution import Attribution
from .estimation.choice import auto_method, control_variate_choice
from .estimation.driver import run
from .estimation.evaluation import BudgetedEvaluator, BudgetError
from .estimation.registry import get_method, registered
from .estimation.spec import Estimate, Setup
from .estimation.stopping import StoppingRule, as_rule
from .game import Game
from .games.restricted import RestrictedGame
from .semivalues import Semivalue, resolve_index

__all__ = ["estimate"]


def estimate(game: Game, index: str | Semivalue = "shapley", method: str = "auto", budget: int | None = None,
             seed: SeedLike = None, tol: float | None = None, stop: StoppingRule | None = None,
             progress: Any = None, **options: Any) -> Attribution:
    """Estimate the semivalues of ``game`` with a registered method, within ``budget`` evaluations.

    Parameters
    ----------
    game : Game
    index : "shapley", "banzhaf" or Semivalue
    method : str
        A registry key (see :func:`fairshare.methods`) or ``"auto"``: exact values when
        the game has a closed form or the budget covers all ``2^n`` coalitions, else the
        registry's preferred estimator for the index.
    budget : int
        Most game evaluations the method may spend, all included. Required except
        for ``method="exact"``.
    seed : int, numpy Generator or None
        Same seed, same result: the sampler and the error bars draw from separate streams
        split from it.
    tol : float, optional
        Shorthand for ``stop=fairshare.stopping.RelativeError(tol)``.
    stop : a :mod:`fairshare.stopping` rule, optional
        e.g. ``RelativeError(0.05) | MaxTime(60)``: the budget is spent in doubling rounds and the run
        stops after the first round where the rule holds. The round and the reason are in
        ``options["stopped"]``.
    progress : callable, optional
        ``progress(evaluations, cap, relative_error)`` after every batch (``relative_error``:
        ``||stderr|| / ||values||`` of the last round, None before the first); the budget is then
        spent in rounds, as with a stopping rule (the semivalue regression of other semivalues than
        Shapley and Banzhaf keeps one round: its error comes at the end).
    **options
        Method options (``fairshare methods`` lists them); every value is checked before the game
        is evaluated.

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
    """
    if not isinstance(game, Game):
        raise TypeError(f"game must be a fairshare.Game, got {type(game).__name__}")
    sv = resolve_index(index, game.n_players)
    n = game.n_players
    if budget is None:
        if method != "exact":
            raise ValueError("budget must be given (the number of game evaluations the method may spend)")
    else:
        budget = check_int(budget, "budget", minimum=1)
    rule = as_rule(stop, tol)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable progress(evaluations, cap, relative_error), got {progress!r}")
    name = auto_method(game, sv, budget if budget is not None else 0) if method == "auto" else method
    spec = get_method(name)
    if not spec.supports(sv):
        valid = [s.name for s in registered() if s.supports(sv)]
        raise ValueError(
            f"method {name!r} supports the {', '.join(spec.indices)} index, not {sv.name!r}; "
            f"methods for {sv.name!r}: {valid}"
        )
    opts = spec.resolve(options, n, sv)
    if rule is not None and spec.exact is not None and method == "exact":
        raise ValueError("method 'exact' takes no stopping rule (tol or stop): it spends 2^n evaluations or none")
    need = spec.budget_needed(game, sv, opts)
    if budget is not None and budget < need:
        raise BudgetError(f"budget={budget} is too small for method {name!r} with {n} players; it needs at least "
                          f"{need} evaluations")
    rng = check_rng(seed)
    sampler_rng, solver_rng = rng.spawn(2)
    target, target_sv, active = game, sv, None
    nulls = game.null_players() if spec.exact is None else None
    if nulls is not None and nulls.any() and not nulls.all():
        active = np.flatnonzero(~nulls)
        target = RestrictedGame(game, active)
        target_sv = sv.reduced(n, int(nulls.sum()))
        need = spec.budget_needed(target, target_sv, opts)
        if budget is not None and budget < need:
            raise BudgetError(f"budget={budget} is too small for method {name!r} with {target.n_players} non-null "
                              f"players; it needs at least {need} evaluations")
    evaluator = BudgetedEvaluator(target, budget)
    auto_note = None
    if method == "auto" and not options and spec.exact is None and not (nulls is not None and nulls.all()):
        name, auto_note = control_variate_choice(name, evaluator, budget)
        spec = get_method(name)
        opts = spec.resolve({}, target.n_players, target_sv)
    if nulls is not None and nulls.all():
        ends = evaluator(game.empty_and_full())
        k = ends.shape[1]
        result = Estimate(values=np.zeros((n, k)), stderr=np.zeros((n, k)), empty_value=ends[0], grand_value=ends[1],
                          info={"null_players": n})
    elif spec.exact is not None:
        result = spec.exact(target, target_sv, evaluator, opts)
    else:
        device = getattr(target, "device", None) if getattr(target, "on_device", False) else None
        setup = Setup(target.n_players, target_sv, budget, opts, sampler_rng, solver_rng, game=target, device=device)
        result = run(spec, setup, evaluator, rule, progress=progress)
    if active is not None:
        values = np.zeros((n, result.values.shape[1]))
        values[active] = result.values
        stderr = None
        if result.stderr is not None:
            stderr = np.zeros_like(values)
            stderr[active] = result.stderr
        result.values, result.stderr = values, stderr
        result.info = {**result.info, "null_players": int(n - active.size)}
    squeeze = evaluator.scalar

    def out(a: np.ndarray | None) -> Any:
        if a is None:
            return None
        a = np.asarray(a, dtype=float)
        if squeeze:
            a = a[..., 0]
        return float(a) if a.ndim == 0 else a

    info = {**opts, **result.info}
    if auto_note is not None:
        info["auto"] = auto_note
    return Attribution(
        values=out(result.values), stderr=out(result.stderr), index=sv.name, method=name,
        options=info, n_evaluations=evaluator.n_spent,
        empty_value=out(result.empty_value), grand_value=out(result.grand_value),
        player_names=list(game.player_names),
    )
