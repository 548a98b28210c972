"""Row-stratified antithetic permutations: Shapley values of a game that is the mean of one game per row (SAGE's
loss game), at budgets of a few permutations.

A mean of row games ``v(S) = mean_i v_i(S)`` has Shapley values ``mean_i phi(v_i)``, and one coalition of ``v``
costs as much as one coalition of every ``v_i``. One permutation of ``v`` (``n + 1`` coalitions) estimates all
rows with the same ordering of the players, so its error is that of a single permutation. The same model rows
spent on (coalition, row) pairs buy ``~N`` permutations instead: each row gets its own (the rows are strata, so,
unlike drawing rows at random, no row's weight is left to chance), and a row's second permutation is the
reverse of its first (antithetic: the players early in one come late in the other). Every row's values add up to
``v_i(all)`` exactly, so the values add up to ``v(all)``.

The rows beyond one permutation each go where the error is: a row's permutation error grows with how far its
loss moves, which is known before any sampling (its loss with no feature and with all of them), so the extra
permutations are spread over the rows in proportion to the larger of the two (systematic sampling of the counts:
every row keeps at least one; the counts do not depend on the permutations, so each row's estimate stays
unbiased).

Rows whose games are alike are paired, and a row's first permutation is the reverse of its partner's: what one
row's ordering gets wrong by putting a player early, the other's gets wrong the other way, and their errors cancel as
far as the two games agree (antithetic across rows). Alike: near in the standardized features and in the two
losses above (mutual nearest neighbours, round by round; every row's ordering stays uniformly random, so its
estimate stays unbiased).

The game must offer ``n_rows``, ``pair_falls(coalitions (P, n), rows (P,)) -> (P,)`` (the row games' values) and
``row_weights`` ``(N, k)`` (how each of its ``k`` outputs averages the rows); ``empty_losses() -> (N,)`` and the rows
``X`` ``(N, d)`` where it has them (else the spreads are read from ``|v_i(all)|`` alone and the rows are paired by
it). Measured on the SAGE benchmark's games (gradient boosting, 256 rows, 12 coalitions; median relative error over
300 seeds against exact): 0.018 / 0.052 / 0.065 on california / pima / diabetes; spread alone 0.020 / 0.057 /
0.070; one permutation per row then a random row's second 0.021 / 0.066 / 0.083; one permutation of the mean game
0.100 / 0.168 / 0.393.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.model_rows import number_columns

__all__ = ["row_permutations", "row_permutations_need", "alike_pairs", "row_estimates"]


def row_permutations_need(n_players: int) -> int:
    """The least budget (coalitions) that gives every row one permutation: the full coalition, then ``n - 1``
    pairs per row.

    Examples
    --------
    >>> row_permutations_need(10)
    10
    """
    return n_players


def _counts(rng: np.random.Generator, spread: np.ndarray, P: int) -> np.ndarray:
    """Permutations per row ``(N,)``: one each, the ``P - N`` others in proportion to ``spread`` (systematic
    sampling: a row's count is the floor or the ceiling of its share; uniform where no row spreads)."""
    N = spread.size
    share = spread / spread.sum() if spread.sum() > 0 and np.all(np.isfinite(spread)) else np.full(N, 1.0 / N)
    cumulative = np.cumsum(share)
    cumulative[-1] = 1.0                                 # so the counts add up to P exactly
    edges = np.floor(np.concatenate([[0.0], cumulative * (P - N)]) + rng.random())
    return 1 + np.diff(edges).astype(np.int64)


def alike_pairs(profile: np.ndarray) -> np.ndarray:
    """``(m, 2)`` disjoint pairs of rows near each other in ``profile`` ``(N, f)``: mutual nearest neighbours among
    the rows still free, round by round (in any leftover that has none, consecutive rows); one row is left out when
    ``N`` is odd.

    Examples
    --------
    >>> alike_pairs(np.array([[0.0], [10.0], [0.1], [10.2]])).tolist()
    [[0, 2], [1, 3]]
    """
    from scipy.spatial import cKDTree

    free, pairs = np.arange(profile.shape[0]), []
    while free.size >= 2:
        near = cKDTree(profile[free]).query(profile[free], k=2)[1]
        own = np.arange(free.size)
        partner = np.where(near[:, 0] == own, near[:, 1], near[:, 0])        # equal rows: either may come first
        first = (partner[partner] == own) & (own < partner)
        if not first.any():                                                   # no mutual pair left (ties in a ring)
            pairs.append(free[:free.size // 2 * 2].reshape(-1, 2))
            break
        pairs.append(np.column_stack([free[first], free[partner[first]]]))
        taken = np.zeros(free.size, dtype=bool)
        taken[first], taken[partner[first]] = True, True
        free = free[~taken]
    return np.concatenate(pairs) if pairs else np.empty((0, 2), dtype=np.int64)


def _orders(rng: np.random.Generator, counts: np.ndarray, n: int, pairs: np.ndarray) -> tuple[np.ndarray,
                                                                                             np.ndarray]:
    """The rows ``(P,)`` and orderings ``(P, n)`` of the permutations: each row ``counts`` of them; the first of the
    second row of each pair the reverse of its partner's first; every row's even-numbered ones (second, fourth,
    ...) the reverse of the one before."""
    rows = np.repeat(np.arange(counts.size), counts)
    starts = np.cumsum(counts) - counts
    k = np.arange(rows.size) - np.repeat(starts, counts)                                 # each row's 0, 1, 2, ...
    orders = np.argsort(rng.random((rows.size, n)), axis=1)
    orders[starts[pairs[:, 1]]] = orders[starts[pairs[:, 0]], ::-1]
    odd = np.flatnonzero(k % 2 == 1)
    orders[odd] = orders[odd - 1, ::-1]
    return rows, orders


def _known(game: Any, full: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What is known of each row before sampling: how far its loss moves (the larger of its losses with no feature
    and with all; ``|v_i(all)|`` where the game has no losses) and its profile (the standardized rows and losses)."""
    losses = [full]
    spread = np.abs(full)
    if hasattr(game, "empty_losses"):
        empty = np.asarray(game.empty_losses(), dtype=float)
        losses = [empty, empty - full]
        spread = np.maximum(np.abs(empty), np.abs(empty - full))
    columns = [c for c in losses if np.all(np.isfinite(c))]
    if getattr(game, "X", None) is not None:
        columns.append(np.asarray(game.X[:, number_columns(game.X)], dtype=float))    # (words left out)
    profile = np.column_stack(columns) if columns else np.zeros((full.size, 1))
    profile = (profile - profile.mean(axis=0)) / np.where(profile.std(axis=0) > 0, profile.std(axis=0), 1.0)
    return spread, profile


def row_estimates(game: Any, rows: np.ndarray, orders: np.ndarray, full: np.ndarray) -> np.ndarray:
    """Each row's values ``(N, n)``: the mean over its permutations (``rows`` ``(P,)``, ``orders`` ``(P, n)``) of the
    marginal contributions along the order, from ``v_i(empty) = 0`` to ``v_i(all) = full[i]``.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> X = np.random.default_rng(0).normal(size=(4, 2)); g = fs.games.LossGame(lambda R: R[:, 0], X, X[:, 0], X)
    >>> full = g.pair_falls(np.ones((4, 2), dtype=bool), np.arange(4))
    >>> bool(np.allclose(row_estimates(g, np.arange(4), np.tile([0, 1], (4, 1)), full).sum(axis=1), full))
    True
    """
    N, n = game.n_rows, game.n_players
    per_row = np.zeros((N, n))
    step = max(1, (1 << 20) // (n * n))
    for start in range(0, rows.size, step):              # chunks of permutations: memory only, same values
        r, o = rows[start:start + step], orders[start:start + step]
        ranks = np.argsort(o, axis=1)
        prefix = ranks[:, None, :] <= np.arange(n - 1)[None, :, None]                   # (p, n - 1, n)
        inner = game.pair_falls(prefix.reshape(-1, n), np.repeat(r, n - 1)).reshape(-1, n - 1)
        walk = np.column_stack([np.zeros(r.size), inner, full[r]])                       # v_i along the order
        np.add.at(per_row, (r[:, None], o), np.diff(walk, axis=1))
    return per_row / np.maximum(np.bincount(rows, minlength=N), 1)[:, None]


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
    >>> used, bool(np.isclose(values[:, 0].sum(), grand[0])), np.round(values[:, 0], 2)   # exact: 5.09, 0.84, 0
    (4, True, array([5.17, 0.75, 0.  ]))
    """
    N, n = game.n_rows, game.n_players
    if budget < row_permutations_need(n):
        raise ValueError(f"budget={budget} is below the {row_permutations_need(n)} coalitions that give every row "
                         "one permutation")
    P = (budget - 1) * N // (n - 1)
    full = game.pair_falls(np.ones((N, n), dtype=bool), np.arange(N))                    # v_i(all), (N,)
    spread, profile = _known(game, full)
    counts = _counts(rng, spread, P)
    rows, orders = _orders(rng, counts, n, alike_pairs(profile))
    per_row = row_estimates(game, rows, orders, full)
    weights = game.row_weights
    values = per_row.T @ weights
    spread = ((per_row.T[:, :, None] - values[:, None, :]) ** 2 * weights[None]).sum(axis=1)
    count = (weights > 0).sum(axis=0)
    stderr = np.sqrt(spread * count / np.maximum(count - 1, 1) / count)
    used = 1 + -(-P * (n - 1) // N)
    info = {"permutations": int(P), "per_row": float(P / N), "stderr": "the spread of the rows' own estimates over "
            "sqrt(rows): an upper bound of the estimator's error (it also holds how the rows differ)"}
    return values, stderr, full @ weights, int(used), info
