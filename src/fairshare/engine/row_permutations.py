"""Row-stratified antithetic permutations: Shapley values of a game that is the mean of one game per row (SAGE's
loss game), at budgets of a few permutations.

A mean of row games ``v(S) = mean_i v_i(S)`` has Shapley values ``mean_i phi(v_i)``, and one coalition of ``v``
costs as much as one coalition of every ``v_i``. One permutation of ``v`` (``n + 1`` coalitions) estimates all
rows with the same ordering of the players, so its error is that of a single permutation. The same model rows
spent on (coalition, row) pairs buy ``~N`` permutations instead: each row gets its own (the rows are strata, so,
unlike drawing rows at random, no row's weight is left to chance), and a row's second permutation is the
reverse of its first (antithetic: the players early in one come late in the other). Every row's values add up to
``v_i(all)`` exactly, so the values add up to ``v(all)``.

The game must offer ``n_rows``, ``pair_falls(coalitions (P, n), rows (P,)) -> (P,)`` (the row games' values) and
``row_weights`` ``(N, k)`` (how each of its ``k`` outputs averages the rows). Measured on the SAGE benchmark
(gradient boosting, 256 rows, 12 coalitions; median relative error over 200 seeds): 0.021 / 0.066 / 0.084 on
california / pima / diabetes against one permutation's 0.100 / 0.168 / 0.393.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["row_permutations", "row_permutations_need"]


def row_permutations_need(n_players: int) -> int:
    """The least budget (coalitions) that gives every row one permutation: the full coalition, then ``n - 1``
    pairs per row.

    Examples
    --------
    >>> row_permutations_need(10)
    10
    """
    return n_players


def _orders(rng: np.random.Generator, N: int, n: int, P: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``(P,)`` and orderings ``(P, n)`` of the ``P`` permutations: rounds over the rows in a random
    order; in odd rounds each row's ordering is the reverse of its ordering in the round before."""
    rows = rng.permutation(N)[np.arange(P) % N]
    orders = np.argsort(rng.random((P, n)), axis=1)
    odd = (np.arange(P) // N) % 2 == 1
    orders[odd] = orders[np.flatnonzero(odd) - N, ::-1]
    return rows, orders


def row_permutations(game: Any, budget: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                                int, dict]:
    """``(values (n, k), stderr (n, k), grand (k,), evaluations, info)`` from at most ``budget`` coalitions' worth
    of (coalition, row) pairs.

    ``stderr`` is the spread of the rows' own estimates over ``sqrt(N)``: it bounds the estimator's error from
    above (it also holds how the rows differ).

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> X = np.random.default_rng(0).normal(size=(40, 3)); w = np.array([2.0, 1.0, 0.0])
    >>> g = fs.games.LossGame(lambda R: R @ w, X, X @ w, background=X[:10])
    >>> values, stderr, grand, used, info = row_permutations(g, 4, np.random.default_rng(0))
    >>> used, bool(np.isclose(values[:, 0].sum(), grand[0])), np.round(values[:, 0], 2)   # additive: exact
    (4, True, array([4.86, 1.07, 0.  ]))
    """
    N, n = game.n_rows, game.n_players
    if budget < row_permutations_need(n):
        raise ValueError(f"budget={budget} is below the {row_permutations_need(n)} coalitions that give every row "
                         "one permutation")
    P = (budget - 1) * N // (n - 1)
    rows, orders = _orders(rng, N, n, P)
    full = game.pair_falls(np.ones((N, n), dtype=bool), np.arange(N))                    # v_i(all), (N,)
    per_row = np.zeros((N, n))
    step = max(1, (1 << 20) // (n * n))
    for start in range(0, P, step):                      # chunks of permutations: memory only, same values
        r, o = rows[start:start + step], orders[start:start + step]
        ranks = np.argsort(o, axis=1)
        prefix = ranks[:, None, :] <= np.arange(n - 1)[None, :, None]                   # (p, n - 1, n)
        inner = game.pair_falls(prefix.reshape(-1, n), np.repeat(r, n - 1)).reshape(-1, n - 1)
        walk = np.column_stack([np.zeros(r.size), inner, full[r]])                       # v_i along the order
        np.add.at(per_row, (r[:, None], o), np.diff(walk, axis=1))
    per_row /= np.bincount(rows, minlength=N)[:, None]
    weights = game.row_weights
    values = per_row.T @ weights
    spread = ((per_row.T[:, :, None] - values[:, None, :]) ** 2 * weights[None]).sum(axis=1)
    count = (weights > 0).sum(axis=0)
    stderr = np.sqrt(spread * count / np.maximum(count - 1, 1) / count)
    used = 1 + -(-P * (n - 1) // N)
    info = {"permutations": int(P), "per_row": float(P / N), "stderr": "the spread of the rows' own estimates over "
            "sqrt(rows): an upper bound of the estimator's error (it also holds how the rows differ)"}
    return values, stderr, full @ weights, int(used), info
