"""Gradient explainers: integrated gradients and expected gradients (``gradient-shap``), for games that give the
gradients of a differentiable model (:meth:`fairshare.games.TorchGame.gradient`).

Both integrate the gradient of the game's continuous extension ``F(m) = f(b + m (x - b))`` (each player's elements
scaled by its ``m_j``; 0 the baseline, 1 the input) along the straight path from the baseline to the input: player
``j``'s value is ``int_0^1 dF/dm_j(t 1) dt``, the Aumann-Shapley value of ``F``, and the values add up to
``F(1) - F(0) = f(x) - f(baseline)`` (completeness) for any model, whatever its activations. The integral is
sampled, never assumed:

- ``integrated-gradients``: one point in each of ``p`` equal strata of ``t`` (stratified sampling, unbiased); with a
  background batch, each point's gradient is that of the mean output over the batch (the game's own ``F``);
- ``gradient-shap``: expected gradients, one background input drawn per point with the stratified ``t``: unbiased
  for the mean over the background of each input's integrated gradients.

Standard errors come from the sampled points (strata collapsed in pairs: conservative). The completeness gap (the
sum of the values minus ``F(1) - F(0)``) is in ``info["completeness"]`` with the standard error of the sum; a gap
above ``tolerance`` of ``|F(1) - F(0)|`` is a warning that names it.

Each point costs one evaluation of the budget (a forward and a backward pass; with a background batch, of every
background input), the two ends two more; the points default to what the budget leaves. One player's value is the
whole integral, ``F(1) - F(0)``, read from the ends alone.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core.arguments import Option
from .._core.errors import FairshareWarning
from .spec import Estimate, MethodSpec

__all__ = ["SPECS", "integrated_gradients", "gradient_shap", "collapsed_stderr", "completeness"]

#: the capability the gradient explainers need of a game
GRADIENT = "gradient"


def collapsed_stderr(points: np.ndarray) -> np.ndarray:
    """Standard errors of the mean of per-point attributions ``(p, ...)`` drawn one per stratum, in stratum order:
    adjacent strata collapsed in pairs (each pair's squared difference estimates both strata's variances, plus the
    square of their means' difference: conservative).

    Examples
    --------
    >>> collapsed_stderr(np.array([[1.0], [3.0], [2.0], [2.0]]))     # sqrt(((1-3)^2 + 0) / 4^2)
    array([0.5])
    """
    p = points.shape[0]
    pairs = p // 2
    if pairs == 0:
        return np.full(points.shape[1:], np.inf)
    d = points[0:2 * pairs:2] - points[1:2 * pairs:2]
    return np.sqrt((d ** 2).sum(axis=0) * (p / (2 * pairs))) / p


def completeness(values: np.ndarray, stderr_sum: np.ndarray, empty: np.ndarray, grand: np.ndarray,
                 tolerance: float) -> dict:
    """The completeness gap of values ``(n, k)``: their sum minus ``grand - empty``, absolute and relative to
    ``|grand - empty|``, with the standard error of the sum and the tolerance.

    Examples
    --------
    >>> completeness(np.array([[1.0], [0.5]]), np.array([0.1]), np.array([0.0]), np.array([1.6]), 0.05)["gap"]
    [-0.10000000000000009]
    """
    change = grand - empty
    gap = values.sum(axis=0) - change
    scale = np.maximum(np.abs(change), 1e-6 * np.maximum(1.0, np.maximum(np.abs(grand), np.abs(empty))))
    return {"gap": gap.tolist(), "relative_gap": (np.abs(gap) / scale).tolist(), "f(x) - f(baseline)": change.tolist(),
            "stderr_of_sum": stderr_sum.tolist(), "tolerance": tolerance}


def _gradient_game(game: Any) -> Any:
    """The game itself, or the one a wrapper (a cache, a cluster) holds, that gives gradients."""
    inner = game
    while inner is not None and not callable(getattr(inner, GRADIENT, None)):
        inner = getattr(inner, "game", None)
    if inner is None:
        raise ValueError(f"the game gives no gradients ({type(game).__name__}); gradient methods need a TorchGame")
    x = getattr(inner, "x", None)
    if x is not None and hasattr(x, "is_floating_point") and not x.is_floating_point():
        raise ValueError("gradient methods need inputs of real numbers; these are token ids (integers), which have no "
                         "path between them: use a sampling method such as 'regression'")
    return inner


def _run(name: str, game: Any, evaluator: Any, options: dict, rng: np.random.Generator, draw: bool) -> Estimate:
    """The shared run: the ends, ``p`` stratified points along the path (a background input drawn for each where
    ``draw``), the values, their standard errors and the completeness gap."""
    source = _gradient_game(game)
    ends = np.asarray(evaluator(game.empty_and_full()), dtype=float)
    empty, grand = ends[0], ends[1]
    if game.n_players == 1:       # the one path integral is F(1) - F(0) (completeness): no point to sample
        values = (grand - empty)[None, :]
        info = {"n_points": 0, "path": "one player: f(x) - f(baseline), exactly"}
        info["completeness"] = completeness(values, np.zeros_like(grand), empty, grand, options["tolerance"])
        return Estimate(values=values, stderr=np.zeros_like(values), empty_value=empty, grand_value=grand, info=info)
    p = options["n_points"] if options["n_points"] is not None else int(evaluator.remaining)
    if p < 2:
        raise ValueError(f"{name} needs at least 2 points along the path: raise the budget (it has {p} after the "
                         "two ends)")
    evaluator.charge(p)
    t = (np.arange(p) + rng.random(p)) / p
    picks = rng.integers(source.n_background, size=p) if draw and source.n_background > 1 else None
    points = np.repeat(t[:, None], game.n_players, axis=1)
    _, grads = source.gradient(points, background=picks)               # (p, n, k)
    grads = np.asarray(grads, dtype=float)
    _check_finite(name, grads, t, game.player_names)
    values = grads.mean(axis=0)
    stderr = collapsed_stderr(grads)
    info = {"n_points": p, "path": "straight, stratified t"}
    if picks is not None:
        info["background_draws"] = p
    info["completeness"] = completeness(values, collapsed_stderr(grads.sum(axis=1)), empty, grand,
                                        options["tolerance"])
    worst = int(np.argmax(info["completeness"]["relative_gap"]))
    relative = info["completeness"]["relative_gap"][worst]
    if relative > options["tolerance"]:
        gap, se = info["completeness"]["gap"][worst], info["completeness"]["stderr_of_sum"][worst]
        change = info["completeness"]["f(x) - f(baseline)"][worst]
        warnings.warn(f"{name}: the completeness gap (the sum of the values minus f(x) - f(baseline) = {change:.4g}) "
                      f"is {gap:.4g}, {relative:.1%} of it, above the tolerance {options['tolerance']:.1%}; the sum's "
                      f"standard error from the sampled points is {se:.3g}: more points (n_points or the budget) "
                      "shrink a sampling gap, a larger one means the model is not differentiable along the path",
                      FairshareWarning, stacklevel=4)
    return Estimate(values=values, stderr=stderr, empty_value=empty, grand_value=grand, info=info)


def _check_finite(name: str, grads: np.ndarray, t: np.ndarray, players: list) -> None:
    """Refuse gradients ``(p, n, k)`` that are NaN or inf at a point of the path, naming the first (its ``t`` and
    player): their mean would be NaN values with NaN error bars and no warning (a ``torch.where`` whose other branch
    takes the square root of a negative number has a NaN gradient where its value is finite)."""
    bad = ~np.isfinite(grads).reshape(grads.shape[0], grads.shape[1], -1).all(axis=2)
    if not bad.any():
        return
    point, player = (int(i[0]) for i in np.nonzero(bad))
    raise ValueError(f"{name}: the model's gradient is NaN or inf at {int(bad.any(axis=1).sum())} of {bad.shape[0]} "
                     f"points along the path (first at t = {t[point]:.4g}, player {players[player]!r}), where its "
                     "values are finite: the model is not differentiable there (a torch.where over a NaN branch, a "
                     "sqrt or log at 0); use a sampling method such as 'regression'")


def integrated_gradients(game: Any, index: Any, evaluator: Any, options: dict, rng: np.random.Generator) -> Estimate:
    """Integrated gradients from the game's baseline (with a background batch: of the mean output over it).

    Examples
    --------
    >>> import torch, fairshare as fs
    >>> g = fs.games.TorchGame(torch.nn.Linear(4, 1), torch.ones(4))
    >>> phi = fs.estimate(g, method="integrated-gradients", budget=10, seed=0)
    >>> np.allclose(phi.values, g.module.weight.detach().numpy()[0]), phi.info["completeness"]["relative_gap"][0] < 1e-6
    (True, True)
    """
    return _run("integrated-gradients", game, evaluator, options, rng, draw=False)


def gradient_shap(game: Any, index: Any, evaluator: Any, options: dict, rng: np.random.Generator) -> Estimate:
    """Expected gradients: a background input drawn for each point along the path.

    Examples
    --------
    >>> import torch, fairshare as fs
    >>> g = fs.games.TorchGame(torch.nn.Linear(4, 1), torch.ones(4), baseline=torch.zeros(5, 4))
    >>> fs.estimate(g, method="gradient-shap", budget=10, seed=0).info["background_draws"]
    8
    """
    return _run("gradient-shap", game, evaluator, options, rng, draw=True)


def _options(what: str) -> tuple[Option, ...]:
    return (Option("n_points", None, f"points along the path ({what}); None: what the budget leaves after the two "
                   "ends", kind="int", minimum=2, none_ok=True),
            Option("tolerance", 0.05, "the completeness gap, relative to |f(x) - f(baseline)|, above which a warning "
                   "names it", kind="float", minimum=0.0))


def _min_budget(n: int, sv: Any, options: dict) -> int:
    return 2 + (options.get("n_points") or 2)


SPECS = [
    MethodSpec("integrated-gradients", ("shapley",), "integrated gradients: the Aumann-Shapley values of the model "
               "on the straight path from the baseline (equal to Shapley values for additive models only), "
               "stratified points; needs gradients (torch modules)", sampler=None,
               solver=None, options=_options("one per stratum"), min_budget=_min_budget, requires=(GRADIENT,),
               direct=integrated_gradients),
    MethodSpec("gradient-shap", ("shapley",), "expected gradients: integrated gradients averaged over background "
               "inputs drawn per point (captum's GradientShap without noise); needs gradients (torch modules)",
               sampler=None, solver=None,
               options=_options("each with a background input drawn"), min_budget=_min_budget,
               requires=(GRADIENT,), direct=gradient_shap),
]
