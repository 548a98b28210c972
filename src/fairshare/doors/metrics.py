"""Accuracy metrics comparing estimated attributions with exact ones (Kernel Banzhaf paper, section 4
and App. E, H; unified framework App. H.3)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["relative_squared_error", "top_features", "cayley_distance", "spearman", "objective_error",
           "insertion_auc", "deletion_auc"]


def _as_values(x: Any) -> np.ndarray:
    return np.asarray(getattr(x, "values", x), dtype=float)


def relative_squared_error(estimate: Any, truth: Any) -> float:
    """``||estimate - truth||^2 / ||truth||^2`` (the papers' relative squared l2 error).

    Accepts arrays or :class:`~fairshare.Attribution` objects; multi-output values
    are compared over all entries.

    Examples
    --------
    >>> relative_squared_error([1.0, 2.0], [1.0, 1.0])
    0.5
    """
    est, tru = _as_values(estimate), _as_values(truth)
    if est.shape != tru.shape:
        raise ValueError(f"estimate has shape {est.shape} but truth has shape {tru.shape}")
    denom = float(np.sum(tru**2))
    if denom == 0.0:
        raise ValueError("truth is all zeros; the relative error is undefined")
    return float(np.sum((est - tru) ** 2) / denom)


def _importance(values: np.ndarray) -> np.ndarray:
    return np.abs(values) if values.ndim == 1 else np.abs(values).sum(axis=1)


def top_features(values: Any, fraction: float = 0.2, small: int = 20, small_k: int = 7) -> np.ndarray:
    """Indices of the most important players (largest ``|value|``, summed over outputs), most important first:
    the top ``fraction`` (at least 1), or the top ``small_k`` when there are at most ``small`` players
    (the Kernel Banzhaf paper's rule, App. H).

    Examples
    --------
    >>> top_features(np.arange(30.0) - 10, fraction=0.1)
    array([29, 28, 27])
    """
    v = _as_values(values)
    n = v.shape[0]
    k = min(n, small_k) if n <= small else max(1, int(round(fraction * n)))
    return np.argsort(-_importance(v), kind="stable")[:k]


def cayley_distance(estimate: Any, truth: Any, fraction: float = 0.2) -> int:
    """Cayley distance (fewest transpositions) between the true order of the true top players and their
    estimated order; true top players missing from the estimated top go to the end (App. H).

    Examples
    --------
    >>> cayley_distance([3.0, 2.0, 1.0, 0.5], [3.0, 2.0, 1.0, 0.5])
    0
    >>> cayley_distance([2.0, 3.0, 1.0, 0.5], [3.0, 2.0, 1.0, 0.5])
    1
    """
    est, tru = _as_values(estimate), _as_values(truth)
    top_true = top_features(tru, fraction)
    k = top_true.size
    top_est = top_features(est, fraction)
    in_true = set(top_true.tolist())
    order = [i for i in top_est if i in in_true]
    order += [i for i in top_true if i not in set(order)]
    position = {p: r for r, p in enumerate(top_true)}
    perm = np.array([position[i] for i in order[:k]])
    # Cayley distance = k - number of cycles of the permutation
    seen, cycles = np.zeros(k, bool), 0
    for start in range(k):
        if not seen[start]:
            cycles += 1
            j = start
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return int(k - cycles)


def spearman(estimate: Any, truth: Any, fraction: float | None = None) -> float:
    """Spearman rank correlation of the players' importance (``|value|``, summed over outputs); with
    ``fraction``, over the true top players only (as in Figure 9 of the Kernel Banzhaf paper).

    Examples
    --------
    >>> spearman([1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
    1.0
    """
    from scipy.stats import spearmanr

    est, tru = _importance(_as_values(estimate)), _importance(_as_values(truth))
    if fraction is not None:
        idx = top_features(_as_values(truth), fraction)
        est, tru = est[idx], tru[idx]
    if est.size < 2 or np.all(est == est[0]) or np.all(tru == tru[0]):
        return float("nan")
    return float(spearmanr(est, tru).statistic)


def objective_error(estimate: Any, game: Any, index: Any = "banzhaf") -> float:
    """Relative regression objective error ``(||A phi_hat - b|| - ||A phi - b||) / ||A phi - b||`` over all
    ``2^n`` coalitions (App. E of the Kernel Banzhaf paper; Banzhaf design ``A = z - 1/2``). For games
    small enough to enumerate.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.SOUMGame.random(6, n_terms=10, seed=0)
    >>> objective_error(fs.exact(g, "banzhaf"), g)
    0.0
    """
    from ..engine.exact import MAX_ENUMERATION_PLAYERS, all_coalitions
    from .exact import exact

    n = game.n_players
    if n > MAX_ENUMERATION_PLAYERS:
        raise ValueError(f"objective_error enumerates all coalitions; {n} players is too many")
    phi_hat = _as_values(estimate)
    phi = np.asarray(exact(game, index).values, dtype=float)
    X = all_coalitions(n)
    b = np.asarray(game(X), dtype=float)
    A = X - 0.5
    best = float(np.linalg.norm(A @ phi - b))
    got = float(np.linalg.norm(A @ phi_hat - b))
    return 0.0 if best == 0.0 and got == 0.0 else (got - best) / best


def _curve(game: Any, order: np.ndarray, start_full: bool, max_features: int | None,
           output: int | None = None) -> np.ndarray:
    n = game.n_players
    K = n if max_features is None else min(n, int(max_features))
    S = np.zeros((K + 1, n), dtype=bool) if not start_full else np.ones((K + 1, n), dtype=bool)
    for step in range(1, K + 1):
        S[step:, order[step - 1]] = not start_full
    values = np.asarray(game(S), dtype=float)
    if values.ndim == 1:
        return values
    if output is not None:
        if not -values.shape[1] <= output < values.shape[1]:
            raise ValueError(f"output must index one of the game's {values.shape[1]} outputs, got {output}")
        return values[:, output]
    return values.mean(axis=1)


def insertion_auc(game: Any, values: Any, max_features: int | None = 100, output: int | None = None) -> float:
    """Area under the insertion curve (unified framework, App. H.3): players are added to the empty
    coalition in order of estimated importance and the game is evaluated after each; the area is the
    mean of the curve (higher is better). ``game`` supplies ``v(S)`` (a baseline-imputed model). For a
    multi-output game the curve follows ``output`` (e.g. the predicted class's probability), or the
    mean over outputs when it is ``None``; players are ranked by ``|values|`` summed over outputs.

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdditiveGame([3.0, 1.0, 2.0])
    >>> insertion_auc(g, [3.0, 1.0, 2.0]) > insertion_auc(g, [1.0, 3.0, 2.0])
    True
    """
    order = np.argsort(-_as_values(values) if _as_values(values).ndim == 1 else -_importance(_as_values(values)),
                       kind="stable")
    return float(np.mean(_curve(game, order, False, max_features, output)))


def deletion_auc(game: Any, values: Any, max_features: int | None = 100, output: int | None = None) -> float:
    """Area under the deletion curve: players are removed from the grand coalition in order of
    estimated importance (lower is better).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.AdditiveGame([3.0, 1.0, 2.0])
    >>> deletion_auc(g, [3.0, 1.0, 2.0]) < deletion_auc(g, [1.0, 3.0, 2.0])
    True
    """
    order = np.argsort(-_as_values(values) if _as_values(values).ndim == 1 else -_importance(_as_values(values)),
                       kind="stable")
    return float(np.mean(_curve(game, order, True, max_features, output)))
