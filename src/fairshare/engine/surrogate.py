"""A cross-fitted tree surrogate as control variate for the regression estimators.

Paired Kernel Banzhaf (and paired Shapley regression) err only through the odd (antisymmetric)
non-additive part of the game: the additive part is fitted exactly and complementary pairs cancel
every even part. A game whose players interact strongly (a model explained against one baseline
row, say) has a large odd part and the least-squares fit pays for it.

The control variate: split the complementary pairs into ``folds``; for each fold fit gradient-
boosted trees ``f_k`` to the game values of the other folds (coalitions as 0/1 features), compute
the exact values ``phi_k`` of ``f_k`` (Banzhaf, Shapley, any semivalue) with the tree code, and
keep ``g_k(S) = f_k(S) - f_k(empty) - sum_(i in S) phi_k,i``, whose values are exactly zero (a
semivalue of an additive game is its coefficients, of a constant zero; ``g_k`` vanishes at the empty
and the full coalition). Each sampled coalition gets ``g`` from the surrogate that did not see it,
and the regression runs on ``v - beta g``: the same target values, with a smaller odd part when
the surrogate captured the game's interactions. ``beta`` minimizes the odd non-additive residual
over the pairs, so a surrogate that only learned noise gets ``beta`` near zero and the estimate
falls back to the plain regression.
Draws must be independent across folds (with replacement): without replacement a fold's coalitions
are, by construction, the ones the other folds' surrogates never saw, which biases the estimate.

No game evaluations are spent on the surrogate; it costs ``folds`` tree fits (one per fold, all
outputs at once).
"""

from __future__ import annotations

import numpy as np

from .._core.arguments import check_int
from .._core.seeds import integer_seed
from ..indices.semivalues import Semivalue

__all__ = ["tree_control_variate", "predicted_fit_seconds", "predicted_walsh_seconds", "CONTROL_MIN_ROWS_PER_PLAYER"]

CONTROL_MIN_ROWS_PER_PLAYER = 4     # below 4n evaluations the estimators skip the surrogate and sample as usual


def predicted_fit_seconds(rows: int, n_players: int, folds: int = 10) -> float:
    """Predicted seconds of the cross-fitted surrogates on ``rows`` coalitions of ``n_players``: per fold 20 ms
    (100 boosting rounds on a few rows) and a share growing with the square root of the cells. A fixed cost
    model measured on the 2-core benchmark machine (0.25 s at 120 x 30, 0.61 s at 2000 x 30, 1.5 s at
    8000 x 64), not a timing: the method choice must not change between runs.

    Examples
    --------
    >>> round(predicted_fit_seconds(2000, 30), 2)
    0.64
    """
    return folds * (0.02 + 1.8e-4 * float(np.sqrt(float(rows) * n_players)))


def predicted_walsh_seconds(rows: int, n_players: int) -> float:
    """Predicted seconds that ``surrogate-regression``'s Walsh surrogate adds to the plain regression on ``rows``
    coalitions of ``n_players``: 50 ms of candidates' fits (their work is capped) and a share growing with
    ``rows x n`` (the design's decomposition, the products' columns and the error bars' maps). A fixed cost model
    measured on one core of the 2-core benchmark machine (0.04-0.07 s at 20-30 players and 100n, 0.12 s at 8,192
    x 64, 0.78 s at 100,000 x 64, 0.34 s at 16,000 x 196), not a timing.

    Examples
    --------
    >>> round(predicted_walsh_seconds(3000, 30), 3), round(predicted_walsh_seconds(100_000, 64), 2)
    (0.06, 0.75)
    """
    return 0.05 + 1.1e-7 * float(rows) * n_players


def _odd_residual(coalitions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Antisymmetric part over the pairs (rows 2i, 2i+1) minus its least-squares additive fit."""
    d = 0.5 * (values[0::2] - values[1::2])
    Z = coalitions[0::2].astype(float) - 0.5
    q, _ = np.linalg.qr(Z)
    return d - q @ (q.T @ d)


def tree_control_variate(coalitions: np.ndarray, values: np.ndarray, rng: np.random.Generator,
                         index: str | Semivalue = "banzhaf", folds: int = 10, trees: int = 100, depth: int = 4,
                         learning_rate: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted control values ``beta g`` for each row and output, and ``beta`` per output.

    Parameters
    ----------
    coalitions : (m, n) bool, complementary pairs in rows ``2i, 2i + 1``
    values : (m,) or (m, k) game values
    rng : generator (fold assignment and the surrogates' seeds)
    index : the semivalue being estimated (``g`` has exactly zero values for it)
    folds, trees, depth, learning_rate : cross-fitting folds; size and step of each xgboost surrogate

    Returns
    -------
    control : like ``values``; subtract it from the values before the regression
    beta : (k,) coefficient per output (0 where the surrogate did not help or the sample is too small)

    Examples
    --------
    >>> import fairshare as fs
    >>> game = fs.games.SOUMGame.random(10, n_terms=30, max_size=3, seed=0)
    >>> rng = np.random.default_rng(0)
    >>> S = rng.random((200, 10)) < 0.5
    >>> S = np.repeat(S, 2, axis=0); S[1::2] = ~S[1::2]
    >>> control, beta = tree_control_variate(S, game(S), rng, "shapley")
    >>> control.shape, beta.shape
    ((400,), (1,))
    """
    try:
        import xgboost as xgb
    except ImportError as exc:  # pragma: no cover - the ml extra is installed in tests
        raise ImportError("the tree control variate needs xgboost: pip install 'fairshare[ml]'") from exc
    from ..games.tree import tree_values_array
    from ..trees import read_ensemble

    coalitions = np.asarray(coalitions, dtype=bool)
    V = np.asarray(values, dtype=float)
    squeeze = V.ndim == 1
    V = V[:, None] if squeeze else V
    m, n = coalitions.shape
    if m % 2 or not np.array_equal(coalitions[0::2], ~coalitions[1::2]):
        raise ValueError("coalitions must come in complementary pairs (rows 2i and 2i + 1)")
    pairs = m // 2
    control = np.zeros_like(V)
    beta = np.zeros(V.shape[1])
    folds = min(check_int(folds, "folds", minimum=2), pairs // 2)
    if folds < 2 or pairs <= n + 1:
        return (control[:, 0] if squeeze else control), beta
    fold_of_pair = rng.permutation(pairs) % folds
    fold = np.repeat(fold_of_pair, 2)
    X = coalitions.astype(np.float32)
    ones, zeros = np.ones((1, n)), np.zeros((1, n))
    seed = integer_seed(rng, 2**31 - 1)                 # the surrogates' random_state, from the solver's stream
    G = np.zeros_like(V)
    for f in range(folds):
        test = fold == f
        train = ~test
        # one fit for all outputs (a tree per output and round); float64 sums of the leaves as in its exact values
        model = xgb.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=learning_rate, n_jobs=1,
                                 random_state=seed + f).fit(X[train], V[train] if V.shape[1] > 1 else V[train, 0])
        ens = read_ensemble(model, check=False)          # our own surrogate: no need to check it against itself
        phi = tree_values_array(ens, ones, index, mode="interventional", background=zeros)[0].reshape(n, -1)   # (n, k)
        G[test] = ens.predict(X[test]) - ens.predict(zeros)[0] - X[test] @ phi
    for j in range(V.shape[1]):
        rv, rg = _odd_residual(coalitions, V[:, j]), _odd_residual(coalitions, G[:, j])
        denominator = float(rg @ rg)
        beta[j] = float(np.clip(rv @ rg / denominator, 0.0, 1.0)) if denominator > 0 else 0.0
        control[:, j] = beta[j] * G[:, j]
    return (control[:, 0] if squeeze else control), beta
