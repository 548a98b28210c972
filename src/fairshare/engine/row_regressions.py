"""Each row its own regression: the values of a game that is the mean of one game per row (SAGE's loss game), from
budgets that afford the regression.

A mean of row games ``v(S) = mean_i v_i(S)`` has semivalues ``mean_i phi(v_i)`` (a semivalue is linear in the
game), and one coalition of ``v`` costs as much as one coalition of every ``v_i``. The regression on ``v`` spends a
budget of ``m`` coalitions on ``m`` coalitions of the mean: its error is that of one regression, whatever the
number of rows. The same model rows spent as each row's own regression of ``m`` coalitions (each row its own
seed, from the one seed policy) give ``N`` independent estimates, whose errors average out over the rows; the
row games are no rougher than their mean where the rows are alike, and their regressions fit each row's values
exactly at the empty and full coalitions, so the values still add up to ``v(all)``.

Standard errors are exact in form: the rows' estimates are independent, so the error of their weighted mean is
``sqrt(sum_i w_i^2 stderr_i^2)`` from each row's own standard error (unlike the permutations at smaller budgets,
whose spread over the rows also holds how the rows differ).

Measured on the SAGE benchmark's games (gradient boosting, 256 rows, 32 background rows; median relative error
against exact over 8-20 seeds), each row's regression against the regression (with its surrogate) on the mean:
diabetes 0.038 / 0.016 / 0.008 against 0.046 / 0.031 / 0.011 at 24 / 48 / 96 coalitions, california 0.0056 / 0.0026
/ 0.0012 against 0.0102 / 0.0053 / 0.0010, pima 0.018 / 0.012 / 0.0034 against 0.023 / 0.011 / 0.0030; checked after the
choice on two games left out of it, adult (12 features) 0.020 / 0.009 / 0.004 against 0.023 / 0.015 / 0.006 and
bank (16 features, 128 rows) 0.068 / 0.055 / 0.032 against 0.072 / 0.061 / 0.035, at 1.1, 2.2 and 4.4 times
``2d + 2`` coalitions.
Not where the budget covers a large share of all coalitions: there the mean game's regression, drawn without
replacement, nears exact values faster than the rougher row games (6 features at 16-45 coalitions: 1.2-1.9x
lower error on the mean game), so ``global_importance``'s ``auto`` runs rows only under a quarter of them. The
cost: one engine run per row, about 3.5 ms of CPU each (0.9 s for 256 rows, beside 0.05-0.13 s for the mean
game's regression), the same model rows in more, smaller calls.

The game must offer ``n_rows``, ``row_game(i)`` (row ``i``'s game, a :class:`~fairshare.games.base.Game`) and
``row_weights`` ``(N, k)`` (how each of its ``k`` outputs averages the rows).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core.seeds import SeedLike, item_root, item_seed
from .._core.errors import FairshareWarning
from .choice import Choice
from .engine import infinite_stderr_note, run

__all__ = ["row_regressions"]


def row_regressions(game: Any, sv: Any, choice: Choice, seed: SeedLike,
                    progress: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, dict]:
    """``(values (n, k), stderr (n, k), grand (k,), evaluations, info)``: every row's game run with ``choice`` (the
    method and the budget of one row) and its own seed, the rows' values averaged by ``game.row_weights``;
    ``progress(rows done, rows)`` hears after each row.

    ``evaluations`` counts coalitions of the mean game: the rows' coalitions over the rows.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from fairshare.engine.choice import choose
    >>> X = np.random.default_rng(0).normal(size=(30, 6)); f = lambda R: R[:, 0] * R[:, 1] + R[:, 2]
    >>> g = fs.games.LossGame(f, X, f(X), background=X[:8])
    >>> sv = fs.Semivalue.shapley()
    >>> values, stderr, grand, used, info = row_regressions(g, sv, choose(g.row_game(0), sv, "regression", 48), 0)
    >>> used, values.shape, bool(np.isclose(values[:, 0].sum(), grand[0])), bool(np.all(np.isfinite(stderr)))
    (48, (6, 1), True, True)
    """
    N = game.n_rows
    root = item_root(seed)
    per_row, errors, full = np.zeros((N, game.n_players)), np.zeros((N, game.n_players)), np.zeros(N)
    spent = 0
    with warnings.catch_warnings():                       # a row's infinite standard error: said once, below
        warnings.simplefilter("ignore", FairshareWarning)
        for i in range(N):                                # one row's game per run, as explain runs its rows
            e = run(game.row_game(i), sv, choice, item_seed(root, i))
            per_row[i], full[i], spent = e.values, e.grand_value - e.empty_value, spent + e.n_evaluations
            errors[i] = e.stderr if e.stderr is not None else 0.0
            if progress is not None:
                progress(i + 1, N)
    weights = game.row_weights
    values = per_row.T @ weights
    with np.errstate(invalid="ignore"):                  # an infinite error of a row an output leaves out: 0
        terms = errors.T[:, :, None] ** 2 * weights[None] ** 2                               # (n, N, k)
    stderr = np.sqrt(np.where(weights[None] > 0, terms, 0.0).sum(axis=1))
    if not np.all(np.isfinite(stderr)):
        warnings.warn(infinite_stderr_note(choice, sv, game.n_players, None), FairshareWarning, stacklevel=3)
    info = {"rows": int(N), "row_method": choice.method,
            "stderr": "from each row's own standard error (the rows' estimates are independent)"}
    return values, stderr, full @ weights, int(-(-spent // N)), info
