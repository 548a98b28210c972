"""Influence functions (Koh and Liang 2017) for the models of :func:`fisher_embedding`.

Up-weighting training point ``z`` changes the loss at ``z_test`` by
``I(z, z_test) = -grad L(z_test)^T H^-1 grad L(z)`` with ``H`` the Hessian of the training
objective at the fitted parameters; ``grad L = -f`` (the Fisher embedding, since the loss is the
negative log-likelihood). Self-influence ``grad L(z)^T H^-1 grad L(z)`` flags unusual (often
mislabeled) training points.

Hessians: ``"exact"`` (closed form for logistic and linear models with the L2 part of their own penalty,
:mod:`fairshare.examples.linear`; a multinomial model's flat directions weighed as its pseudo-inverse does;
``torch.func`` for small torch models), ``"cg"`` / ``"lissa"`` (Hessian-vector products only, torch), ``"fisher"`` (the empirical
Fisher ``F^T F / N``, which equals the Hessian in expectation at the optimum of a well-specified
likelihood, Proposition 3 of the Fisher-kernel paper) and ``"identity"``.

Damping: a number added to the Hessian's diagonal, or ``"auto"``: :data:`AUTO_DAMPING` times the mean eigenvalue
of the undamped matrix (its trace over its dimension), the rule of Grosse et al. 2023 (Kronfluence's when no
damping is given). It follows the matrix's scale, which an absolute number does not: the eigenvalues of a
network's projected ``k x k`` Fisher scale with its gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from .._core.arguments import check_int
from .fisher import fisher_embedding
from .gradients import as_inputs, chosen_parameters, evaluating
from .linear import linear_hessian, linear_rows, softmax_gauge
from .rows import check_rows, host_array, resolve_seed

__all__ = ["influence", "self_influence", "hessian_matrix", "rank_mislabeled", "AUTO_DAMPING"]

HESSIANS = ("exact", "fisher", "identity", "cg", "lissa")
#: ``damping="auto"`` adds this share of the undamped matrix's mean eigenvalue to its diagonal
AUTO_DAMPING = 0.1
#: LiSSA's scale: its series converges where the damped Hessian's eigenvalues lie in ``(0, scale)``
_LISSA_SCALE = 10.0


def _is_torch(model: Any) -> bool:
    return type(model).__module__.startswith("torch") or (hasattr(model, "parameters") and hasattr(model, "forward"))


def hessian_matrix(model: Any, X: Any, y: Any, layers: Any = None) -> np.ndarray:
    """Hessian of the mean training loss (plus the model's L2 penalty) in the embedding's parameter order (a torch
    module's: of the parameters ``layers`` names, or of every one that requires a gradient).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.default_rng(0).normal(size=(80, 2)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> hessian_matrix(LogisticRegression().fit(X, y), X, y).shape
    (3, 3)
    """
    if _is_torch(model):                                  # its inputs as they are (token ids stay integers)
        check_rows(X, y, "X", "y")
        return _torch_hessian(model, np.asarray(getattr(X, "values", X)), host_array(y), layers)
    X_arr, _ = linear_rows(model, X, y)
    return linear_hessian(model, X_arr)


def _check_sets(model: Any, *sets: tuple[Any, Any, str]) -> None:
    """Every ``(X, y, name)`` set refused before any model call where its rows or labels are wrong, naming
    ``X_<name>`` or ``y_<name>``."""
    for X, y, name in sets:
        if _is_torch(model):
            check_rows(X, y, f"X_{name}", f"y_{name}")
        else:
            linear_rows(model, X, y, f"X_{name}", f"y_{name}")


def _embedder(hessian: str, projection: int | None, kind: str, layers: Any, seed: Any, damping: Any = 0.0,
              iterations: int = 100) -> Any:
    """The embedding every argument of one call shares (the same projection matrix for every set: a Generator or
    None seed drawn once); a Hessian of parameter space is refused with a projection, naming ``hessian``; a damping
    that is neither a number >= 0 nor ``"auto"`` (for a Hessian held as a matrix) is refused, naming ``damping``;
    ``iterations`` below 1 are refused."""
    check_int(iterations, "iterations", minimum=1)
    seed = resolve_seed(seed)
    if hessian not in HESSIANS:
        raise ValueError(f"hessian must be one of {HESSIANS}, got {hessian!r}")
    if isinstance(damping, str):
        if damping != "auto" or hessian in ("cg", "lissa"):
            raise ValueError(f"damping must be a number >= 0 or 'auto' (for hessian 'exact', 'fisher' or 'identity',"
                             f" whose mean eigenvalue is known), got {damping!r} with hessian={hessian!r}")
    elif isinstance(damping, bool) or not isinstance(damping, (int, float, np.integer, np.floating)) \
            or not np.isfinite(damping) or damping < 0:
        raise ValueError(f"damping must be a finite number >= 0 or 'auto', got {damping!r}")
    if projection is not None and hessian not in ("fisher", "identity"):
        raise ValueError(f"hessian={hessian!r} works in parameter space; with projection={projection} use "
                         "hessian='fisher' (formed and damped in the projection's dimensions) or 'identity'")
    return lambda model, X, y: fisher_embedding(model, X, y, projection=projection, projection_kind=kind,
                                                layers=layers, seed=seed)


def _default_damping(damping: Any, projection: int | None) -> Any:
    """``damping=None``: ``"auto"`` with a projection (projected gradients have no fixed scale), else 0 (the
    classical influence function)."""
    if damping is None:
        return "auto" if projection is not None else 0.0
    return damping


def _damped(H: np.ndarray, damping: Any) -> np.ndarray:
    """``H`` plus the damping on its diagonal (``"auto"``: :data:`AUTO_DAMPING` times its mean eigenvalue)."""
    lam = AUTO_DAMPING * float(np.trace(H)) / H.shape[0] if isinstance(damping, str) else float(damping)
    return H + lam * np.eye(H.shape[0])


def _solver(model: Any, X_train: Any, y_train: Any, F: np.ndarray, hessian: str, damping: Any,
            iterations: int, layers: Any = None) -> Any:
    """A function solving ``H x = B`` for a block of right-hand sides ``B`` (p, m)."""
    if hessian == "identity":
        scale = 1.0 + (AUTO_DAMPING if isinstance(damping, str) else damping)
        return lambda B: B / scale
    if hessian == "fisher":
        H = _damped(F.T @ F / F.shape[0], damping)
    elif hessian == "exact":
        H = _damped(hessian_matrix(model, X_train, y_train, layers), damping)
        U = None if _is_torch(model) else softmax_gauge(model, H.shape[0])
        if U is not None:                                 # flat, and every gradient is orthogonal to it: H's pinv
            H = H + max(float(np.trace(H)) / H.shape[0], 1e-12) * (U @ U.T)
    else:
        if not _is_torch(model):
            raise ValueError(f"hessian={hessian!r} uses Hessian-vector products of torch models; use 'exact'")
        hvp = _torch_hvp(model, np.asarray(getattr(X_train, "values", X_train)),
                         np.asarray(getattr(y_train, "values", y_train)), damping, layers)
        solve_one = (lambda b: _conjugate_gradient(hvp, b, iterations)) if hessian == "cg" else \
            (lambda b: _lissa(hvp, b, iterations))

        def solve(B: np.ndarray) -> np.ndarray:
            try:
                X = np.column_stack([solve_one(B[:, j]) for j in range(B.shape[1])])
            except _NegativeCurvature as bent:
                raise _not_positive(hessian, damping, bent.curvature, bound=True) from None
            if not np.all(np.isfinite(X)) and hessian == "lissa":
                raise ValueError(f"hessian='lissa' diverged (damping={damping!r}): its series converges where the "
                                 f"damped Hessian's eigenvalues lie in (0, {_LISSA_SCALE:g}); give a larger damping "
                                 "or hessian='cg'")
            if not np.all(np.isfinite(X)):
                raise _not_positive(hessian, damping, None)
            return X
        return solve
    try:
        factor = scipy.linalg.cho_factor(H, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise _not_positive(hessian, damping, float(np.linalg.eigvalsh(H)[0])) from None
    return lambda B: scipy.linalg.cho_solve(factor, B, check_finite=False)


class _NegativeCurvature(Exception):
    """Conjugate gradients met a direction of curvature ``<= 0``: the damped Hessian is not positive definite."""

    def __init__(self, curvature: float) -> None:
        super().__init__(curvature)
        self.curvature = curvature


def _not_positive(hessian: str, damping: Any, smallest: float | None, bound: bool = False) -> ValueError:
    """The refusal of a damped Hessian that is not positive definite, naming ``damping`` and what would serve
    (``smallest``: the damped matrix's smallest eigenvalue, or with ``bound`` conjugate gradients' curvature along
    a direction, an upper bound of it; None where only the results showed it).

    Examples
    --------
    >>> print(_not_positive("exact", 0.1, -0.25))                          # doctest: +NORMALIZE_WHITESPACE
    hessian='exact' with damping=0.1: the damped Hessian is not positive definite (smallest eigenvalue -0.25), so it
    has no inverse to weigh the gradients with (a network's Hessian away from a minimum, or fewer training points
    than parameters); give a damping above 0.35, or hessian='fisher' with a damping above 0
    """
    auto = isinstance(damping, str)
    given = "'auto'" if auto else f"{float(damping):g}"
    known = smallest is not None and np.isfinite(smallest)
    what = f" ({'a direction of curvature' if bound else 'smallest eigenvalue'} {smallest:.3g})" if known else ""
    hint = f"a damping above {float(damping) - smallest:.3g}" if known and not auto else "a larger damping"
    if not auto:
        hint += " (or damping='auto')" if not known else ""
    return ValueError(f"hessian={hessian!r} with damping={given}: the damped Hessian is not positive definite{what}, "
                      f"so it has no inverse to weigh the gradients with (a network's Hessian away from a minimum, "
                      f"or fewer training points than parameters); give {hint}, or hessian='fisher' with a damping "
                      f"above 0")


def influence(model: Any, X_train: Any, y_train: Any, X_test: Any, y_test: Any, *, hessian: str = "exact",
              damping: float | str | None = None, iterations: int = 100, projection: int | None = None,
              projection_kind: str = "gaussian", layers: Any = None, seed: int = 0) -> np.ndarray:
    """Influence of up-weighting each training point on each test loss: ``(n_test, n_train)``.

    Negative values mean the training point helps the test prediction (its up-weighting lowers the
    test loss). With ``projection=k`` (and ``projection_kind``, ``layers``, ``seed`` of :func:`fisher_embedding`)
    every embedding is projected by the same seeded matrix and the ``"fisher"`` (or ``"identity"``) Hessian is
    formed and damped in those ``k`` dimensions: a deep net's influence without its ``P x P`` Hessian nor its
    gradient matrix. ``damping``: a number added to the Hessian's diagonal or ``"auto"``, a tenth of its mean
    eigenvalue (:data:`AUTO_DAMPING`), which follows the scale of projected gradients: on the digits CNN of
    ``fairshare bench attribution`` (k = 512, one model) it raises the linear datamodeling score from 0.04 undamped
    to 0.18 (TRAK: 0.04). None (the default): ``"auto"`` with a projection, 0 without (Koh and Liang's influence
    function).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.default_rng(0).normal(size=(60, 2)); y = (X[:, 0] > 0).astype(int)
    >>> model = LogisticRegression().fit(X, y)
    >>> influence(model, X, y, X[:2], y[:2]).shape, influence(model, X, y, X[:2], y[:2], damping="auto").shape
    ((2, 60), (2, 60))
    """
    damping = _default_damping(damping, projection)
    embed = _embedder(hessian, projection, projection_kind, layers, seed, damping, iterations)
    _check_sets(model, (X_train, y_train, "train"), (X_test, y_test, "test"))
    F_train = embed(model, X_train, y_train)
    F_test = embed(model, X_test, y_test)
    solve = _solver(model, X_train, y_train, F_train, hessian, damping, iterations, layers)
    # grad L = -f, so I = -(-f_test)^T H^-1 (-f_train) = -f_test^T H^-1 f_train
    return -(solve(F_test.T).T @ F_train.T)


def self_influence(model: Any, X_train: Any, y_train: Any, *, hessian: str = "exact",
                   damping: float | str | None = None,
                   iterations: int = 100, projection: int | None = None, projection_kind: str = "gaussian",
                   layers: Any = None, seed: int = 0) -> np.ndarray:
    """``grad L(z)^T H^-1 grad L(z)`` for every training point (large: unusual or mislabeled); ``projection``
    and the rest as :func:`influence`.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.default_rng(0).normal(size=(60, 2)); y = (X[:, 0] > 0).astype(int)
    >>> bool(np.all(self_influence(LogisticRegression().fit(X, y), X, y) >= 0))
    True
    """
    damping = _default_damping(damping, projection)
    embed = _embedder(hessian, projection, projection_kind, layers, seed, damping, iterations)
    _check_sets(model, (X_train, y_train, "train"))
    F = embed(model, X_train, y_train)
    solve = _solver(model, X_train, y_train, F, hessian, damping, iterations, layers)
    out = np.empty(F.shape[0])
    for start in range(0, F.shape[0], 512):
        block = F[start:start + 512]
        out[start:start + 512] = np.einsum("ij,ji->i", block, solve(block.T))
    return out


def rank_mislabeled(model: Any, X_train: Any, y_train: Any, X_clean: Any = None, y_clean: Any = None, *,
                    hessian: str = "fisher", damping: float | str = 1e-2, iterations: int = 100,
                    **projected: Any) -> tuple[np.ndarray, np.ndarray]:
    """Training points in the order to check their labels, most suspect first: ``(order, scores)``.

    With a small correctly labeled set (``X_clean``, ``y_clean``), a point's score is its influence on
    the clean set's mean loss, ``-mean_j f_j^T H^-1 f_i`` (the Fisher kernel between the point and the
    clean set, negated: the affinity ``z`` of SBQ, Eq. 4, whose sign says whether up-weighting the
    point raises or lowers the clean loss); points that hurt the clean set most come first. Without one,
    the score is the self-influence ``f_i^T H^-1 f_i`` (Koh and Liang). On enron1 with 20% flipped
    labels and 500 clean points (``fairshare bench examples``, 5 seeds), checking the first 10% of the
    data in this order fixes 0.49 of the flips (0.50 is the most possible), self-influence 0.39 and
    SBQ's greedy selection order 0.10, as random.

    Parameters
    ----------
    model : a fitted model :func:`fisher_embedding` supports
    X_train, y_train : the training data with the labels the model was fitted on
    X_clean, y_clean : optional correctly labeled points (they may be part of the training data)
    hessian, damping, iterations : as :func:`influence` (default: the regularized empirical Fisher,
        the full Fisher kernel, which ranked best in the benchmark)
    **projected : ``projection``, ``projection_kind``, ``layers``, ``seed`` as :func:`influence`

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(300, 3)); y = (X[:, 0] > 0).astype(int)
    >>> noisy = y.copy(); noisy[:15] = 1 - noisy[:15]                     # the first 15 labels flipped
    >>> model = LogisticRegression().fit(X, noisy)
    >>> order, scores = rank_mislabeled(model, X, noisy, X[250:], y[250:])
    >>> int(np.sum(order[:30] < 15)) >= 12
    True
    """
    unknown = sorted(set(projected) - {"projection", "projection_kind", "layers", "seed"})
    if unknown:
        raise TypeError(f"rank_mislabeled got unexpected keyword argument(s) {unknown}")
    embed = _embedder(hessian, projected.get("projection"), projected.get("projection_kind", "gaussian"),
                      projected.get("layers"), projected.get("seed", 0), damping, iterations)
    if (X_clean is None) != (y_clean is None):
        raise ValueError("X_clean and y_clean go together: give both or neither")
    _check_sets(model, (X_train, y_train, "train"), *(() if X_clean is None else ((X_clean, y_clean, "clean"),)))
    if X_clean is None:
        scores = self_influence(model, X_train, y_train, hessian=hessian, damping=damping, iterations=iterations,
                                **projected)
    else:
        F_train = embed(model, X_train, y_train)
        F_clean = embed(model, X_clean, y_clean)
        solve = _solver(model, X_train, y_train, F_train, hessian, damping, iterations, projected.get("layers"))
        h = solve(F_clean.mean(axis=0)[:, None])[:, 0]
        scores = -(F_train @ h)
    return np.argsort(-scores, kind="stable"), scores


# ------------------------------------------------------------------------------------- torch
def _flat_params(model: Any, layers: Any = None):
    """The parameters differentiated (:func:`~fairshare.examples.gradients.chosen_parameters`: those ``layers``
    names, or every one that requires a gradient) as one vector, and the map of a vector to every parameter (the
    others held fixed)."""
    import torch

    params, fixed = chosen_parameters(model, layers)
    names = [n for n, _ in model.named_parameters() if n in params]
    shapes = [params[n].shape for n in names]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = torch.cat([params[n].reshape(-1) for n in names])

    def unflatten(vec):
        out, start = dict(fixed), 0
        for n, s, k in zip(names, shapes, sizes):
            out[n] = vec[start:start + k].reshape(s)
            start += k
        return out

    return flat, unflatten


def _torch_loss(model: Any, X: np.ndarray, y: np.ndarray, layers: Any = None):
    import torch
    from torch.func import functional_call

    flat, unflatten = _flat_params(model, layers)
    xb = as_inputs(X, flat)                               # on the model's device; token ids stay integers
    yb = torch.as_tensor(y, device=flat.device)

    def loss(vec):
        with evaluating(model):                           # the Hessian of the model as it predicts, as the gradients
            out = functional_call(model, unflatten(vec), (xb,))
        if out.ndim > 1 and out.shape[-1] > 1:
            return torch.nn.functional.cross_entropy(out, yb.long())
        return 0.5 * torch.mean((out.reshape(-1) - yb.to(out.dtype)) ** 2)

    return flat, loss


def _torch_hessian(model: Any, X: np.ndarray, y: np.ndarray, layers: Any = None) -> np.ndarray:
    from torch.func import hessian

    flat, loss = _torch_loss(model, X, y, layers)
    if flat.numel() > 5000:
        raise ValueError(f"the model has {flat.numel()} parameters; use hessian='cg' or 'lissa'")
    return hessian(loss)(flat).double().cpu().numpy()


def _torch_hvp(model: Any, X: np.ndarray, y: np.ndarray, damping: float, layers: Any = None):
    import torch
    from torch.func import grad, jvp

    flat, loss = _torch_loss(model, X, y, layers)
    g = grad(loss)

    def hvp(v: np.ndarray) -> np.ndarray:
        vt = torch.as_tensor(v, dtype=flat.dtype, device=flat.device)
        return jvp(g, (flat,), (vt,))[1].double().cpu().numpy() + damping * v

    return hvp


def _conjugate_gradient(hvp: Any, b: np.ndarray, iterations: int, tol: float = 1e-10) -> np.ndarray:
    """``H^-1 b`` by conjugate gradients on products ``hvp(v) = H v``; :class:`_NegativeCurvature` where a direction
    of curvature ``<= 0`` shows that ``H`` is not positive definite.

    Examples
    --------
    >>> H = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> _conjugate_gradient(lambda v: H @ v, np.array([1.0, 2.0]), 10).round(12).tolist()
    [0.0, 2.0]
    >>> _conjugate_gradient(lambda v: H @ v, np.zeros(2), 10).tolist()        # a zero gradient: zero, no refusal
    [0.0, 0.0]
    """
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rs = float(r @ r)
    for _ in range(iterations):
        if np.sqrt(rs) <= tol * max(np.linalg.norm(b), 1e-300):
            break                                      # solved (a zero right-hand side at once)
        Ap = hvp(p)
        curvature = float(p @ Ap)
        if not curvature > 0.0:
            raise _NegativeCurvature(curvature / max(float(p @ p), 1e-300))
        alpha = rs / curvature
        x += alpha * p
        r -= alpha * Ap
        new = float(r @ r)
        p = r + (new / rs) * p
        rs = new
    return x


def _lissa(hvp: Any, b: np.ndarray, iterations: int, scale: float = _LISSA_SCALE) -> np.ndarray:
    """LiSSA: ``x <- b + (I - H / scale) x``, converging to ``scale H^-1 b`` when ``||H|| < scale``."""
    x = b.copy()
    for _ in range(iterations):
        x = b + x - hvp(x) / scale
    return x / scale
