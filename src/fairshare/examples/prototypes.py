"""Prototype selection by Sequential Bayesian Quadrature (Algorithm 1 of the Fisher-kernel paper).

Select training points ``S`` whose kernel quadrature best reproduces the test distribution:
minimize ``v(S) = mu - z_S^T K_SS^-1 z_S`` (Eq. 6), where ``z_i`` is the mean kernel between
training point ``i`` and the test points and ``mu`` the mean kernel among test points. The BQ
weights are ``w = K_SS^-1 z_S``.

Greedy selection keeps a Cholesky factor of ``K_SS`` and, for every candidate, its residual
variance ``d_i = k_ii - ||e_i||^2`` and residual ``r_i = z_i - e_i . beta``; adding ``i`` raises
``z^T K^-1 z`` by ``r_i^2 / d_i``, and one kernel column updates everything, so a step costs
``O(t |S|)`` (no inverse per candidate). Stochastic greedy scores a random subset of
``(t / k) log(1 / delta)`` candidates per step; distributed greedy (GreeDi) runs greedy on parts of
the candidates (on a Dask cluster when given one) and again on the union of their selections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.linalg

from .._core.arguments import check_int, check_positive_float, check_rng
from ..results.base import Result
from .kernels import LinearKernel, RBFKernel, as_kernel
from .rows import check_embeddings

__all__ = ["Prototypes", "select_prototypes", "greedy_on_embeddings"]

METHODS = ("greedy", "stochastic", "distributed")


@dataclass(eq=False, kw_only=True, init=False)
class Prototypes(Result):
    """Selected prototypes: a :class:`~fairshare.results.base.Result` whose players are the selected training
    points (named by their index) and whose values are their BQ weights.

    Attributes
    ----------
    indices : training indices, in selection order
    weights : BQ weights ``K_SS^-1 z_S`` (the quadrature of the test mean); ``values`` is the same array (the
        base's name; ``weights`` is the prototypes' own, and assigning either sets both)
    objective : ``v(S)`` of Eq. 6 before any selection and after each step (length ``len(indices) + 1``)
    method : "greedy", "stochastic" or "distributed"
    cholesky, beta : the Cholesky factor of ``K_SS`` in selection order and the residuals it solves (for
        :meth:`weights_at`); None for prototypes not made by :func:`select_prototypes`

    Examples
    --------
    >>> p = Prototypes(indices=np.array([4, 1]), weights=np.array([0.7, 0.2]), objective=np.array([1.0, 0.4, 0.3]),
    ...                method="greedy")
    >>> p.values is p.weights, p.player_names
    (True, ['4', '1'])
    """

    indices: np.ndarray
    objective: np.ndarray
    cholesky: np.ndarray | None = None
    beta: np.ndarray | None = None

    _plot_family: ClassVar[str] = "prototypes"

    def __init__(self, indices: np.ndarray, weights: np.ndarray | None = None, objective: np.ndarray | None = None,
                 method: str = "greedy", cholesky: np.ndarray | None = None, beta: np.ndarray | None = None,
                 **shared: Any) -> None:
        if (weights is None) == ("values" not in shared):
            raise TypeError("Prototypes() takes the BQ weights as weights= (or values=, the same array), once")
        if objective is None:
            raise TypeError("Prototypes() missing required argument: 'objective'")
        self.indices, self.objective, self.cholesky, self.beta = indices, objective, cholesky, beta
        values = shared.pop("values", weights)
        Result.__init__(self, values, shared.pop("stderr", None), method=method, **shared)

    @property
    def weights(self) -> np.ndarray:
        """The BQ weights (the same array as ``values``)."""
        return self.values

    @weights.setter
    def weights(self, value: np.ndarray) -> None:
        self.values = np.asarray(value, dtype=float)

    def _count_players(self) -> int:
        return int(np.size(self.indices))

    def __post_init__(self) -> None:
        if not self.player_names:
            self.player_names = [str(int(i)) for i in np.ravel(self.indices)]
        super().__post_init__()

    def weights_at(self, m: int) -> np.ndarray:
        """BQ weights of the first ``m`` prototypes alone (``K_SS^-1 z_S`` for ``S`` = the first ``m``).

        Greedy selection keeps the Cholesky factor of ``K_SS`` in selection order, so every prefix's
        weights come from one triangular solve.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> p = select_prototypes(rng.normal(size=(100, 4)), rng.normal(size=(20, 4)), k=4)
        >>> bool(np.allclose(p.weights_at(4), p.weights))
        True
        """
        m = check_int(m, "m", minimum=1)
        if self.cholesky is None or self.beta is None:
            raise ValueError("these prototypes keep no Cholesky factor (they were not made by select_prototypes)")
        if m > self.indices.size:
            raise ValueError(f"m = {m} is more than the {self.indices.size} prototypes selected")
        return scipy.linalg.solve_triangular(self.cholesky[:m, :m].T, self.beta[:m], lower=False)

    def sample_weight(self, m: int | None = None) -> np.ndarray:
        """Weights for refitting a model on the first ``m`` prototypes (default: all): the BQ weights,
        negative ones set to 0, scaled to average 1 (so a model's regularization sees as many rows as
        there are prototypes).

        A summary chosen by a kernel on Fisher embeddings over-represents the examples with large
        gradients (hard or misclassified ones); the quadrature weights undo that, so a model refitted on
        the summary should use them (``fairshare bench examples`` measures both).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> p = select_prototypes(rng.normal(size=(100, 4)), rng.normal(size=(20, 4)), k=6, kernel="rbf")
        >>> w = p.sample_weight(); w.shape, bool(np.isclose(w.mean(), 1.0)), bool(np.all(w >= 0))
        ((6,), True, True)
        """
        m = self.indices.size if m is None else m
        w = np.clip(self.weights_at(m), 0.0, None)
        total = float(w.sum())
        return w * (w.size / total) if total > 0 else np.ones(w.size)


def _weights(L: np.ndarray, beta: np.ndarray) -> np.ndarray:
    return scipy.linalg.solve_triangular(L.T, beta, lower=False) if beta.size else np.zeros(0)


def greedy_on_embeddings(G: np.ndarray, z: np.ndarray, mu: float, k: int, column: Any = None,
                         diag: np.ndarray | None = None, nugget: float = 0.0,
                         gain: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy SBQ over the rows of ``G`` (kernel = inner products of rows) or any ``column(i)`` oracle;
    ``nugget`` is added to the kernel's diagonal on the training points (full rank: selection can go on
    past the rank of ``G``). ``gain(r, d)`` scores the candidates from their residuals ``r`` and residual
    variances ``d`` (default: SBQ's ``r**2 / d``, the drop in ``v(S)``; ``fairshare bench examples``
    measures signed variants with it).

    Returns ``(selected positions, weights, objective after each step)``.

    Examples
    --------
    >>> G = np.eye(3); z = np.array([0.9, 0.1, 0.5])
    >>> greedy_on_embeddings(G, z, mu=1.0, k=2)[0]
    array([0, 2])
    """
    sel, L, beta, objective = _greedy(G, z, mu, k, column, diag, nugget, gain)
    return sel, _weights(L, beta), objective


def _greedy(G: np.ndarray, z: np.ndarray, mu: float, k: int, column: Any = None, diag: np.ndarray | None = None,
            nugget: float = 0.0, gain: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Greedy SBQ: ``(selected positions, Cholesky factor of K_SS in selection order, beta, objective)``."""
    column = column if column is not None else (lambda i: G @ G[i])
    diag = np.einsum("ij,ij->i", G, G) if diag is None else np.asarray(diag, dtype=float)
    t = z.size
    k = min(k, t)
    E = np.zeros((t, k))
    d = diag.astype(float).copy() + nugget
    r = z.astype(float).copy()
    floor = 1e-12 * max(float(np.max(np.abs(diag))), 1e-300)
    available = np.ones(t, dtype=bool)
    selected, beta, objective = [], [], [mu]
    for j in range(k):
        safe = np.where(d > floor, d, 1.0)
        score = np.where(available & (d > floor), r**2 / safe if gain is None else gain(r, safe), -np.inf)
        i = int(np.argmax(score))
        if not np.isfinite(score[i]):
            break                                           # every remaining candidate is in the span already
        root = np.sqrt(d[i])
        col = column(i)
        if nugget:
            col = col.copy()
            col[i] += nugget
        e = (col - E[:, :j] @ E[i, :j]) / root
        b = r[i] / root
        E[:, j] = e
        d -= e**2
        r -= e * b
        available[i] = False
        selected.append(i)
        beta.append(b)
        objective.append(mu - float(np.sum(np.square(beta))))
    sel = np.array(selected, dtype=np.int64)
    return sel, E[sel][:, : sel.size], np.array(beta), np.array(objective)


def _stochastic(G: np.ndarray, z: np.ndarray, mu: float, k: int, rng: np.random.Generator, delta: float,
                diag: np.ndarray, cross: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stochastic greedy: each step scores ``ceil(t / k * log(1 / delta))`` random candidates, brought up to
    date against the current Cholesky factor (only those rows are computed)."""
    t = z.size
    k = min(k, t)
    sample_size = min(t, int(np.ceil(t / k * np.log(1.0 / delta))))
    L = np.zeros((k, k))
    available = np.ones(t, dtype=bool)
    selected, beta, objective = [], [], [mu]
    floor = 1e-12 * max(float(np.max(np.abs(diag))), 1e-300)
    for _ in range(k):
        pool = np.flatnonzero(available)
        if pool.size == 0:
            break
        j = len(selected)                                               # rows of L filled so far
        R = rng.choice(pool, size=min(sample_size, pool.size), replace=False)
        if j:
            K_RS = cross(R, np.array(selected))                         # (|R|, j)
            E_R = scipy.linalg.solve_triangular(L[:j, :j], K_RS.T, lower=True).T
        else:
            E_R = np.zeros((R.size, 0))
        d_R = diag[R] - np.sum(E_R**2, axis=1)
        r_R = z[R] - E_R @ np.array(beta)
        gain = np.where(d_R > floor, r_R**2 / np.where(d_R > floor, d_R, 1.0), -np.inf)
        best = int(np.argmax(gain))
        if not np.isfinite(gain[best]):
            available[R] = False
            continue
        root = np.sqrt(d_R[best])
        L[j, :j] = E_R[best]
        L[j, j] = root
        beta.append(r_R[best] / root)
        selected.append(int(R[best]))
        available[R[best]] = False
        objective.append(mu - float(np.sum(np.square(beta))))
    m = len(selected)
    return np.array(selected, dtype=np.int64), L[:m, :m], np.array(beta), np.array(objective)


def _objective(G_or_cross: Any, z: np.ndarray, mu: float, sel: np.ndarray) -> float:
    if sel.size == 0:
        return mu
    K = G_or_cross(sel, sel)
    return mu - float(z[sel] @ np.linalg.solve(K + 1e-12 * np.eye(sel.size) * max(np.trace(K), 1e-300), z[sel]))


def _part_greedy(G: np.ndarray, z: np.ndarray, mu: float, k: int) -> np.ndarray:
    return greedy_on_embeddings(G, z, mu, k)[0]


def _part_greedy_kernel(items: Any, z: np.ndarray, diag: np.ndarray, mu: float, k: int, kfun: Any) -> np.ndarray:
    """Greedy on one part for a kernel given as a function of two sets of items (a Dask task)."""
    pick = (lambda i: [items[i]]) if isinstance(items, list) else (lambda i: items[[i]])
    return _greedy(np.zeros((z.size, 0)), z, mu, k, column=lambda i: kfun(items, pick(i))[:, 0], diag=diag)[0]


def select_prototypes(train: Any, test: Any, k: int, kernel: Any = "linear", method: str = "greedy", *,
                      reg: float = 1e-3, delta: float = 0.01, n_parts: int | None = None, client: Any = None,
                      seed: Any = None, jitter: float = 0.0) -> Prototypes:
    """Choose ``k`` training points that best explain ``test`` under a kernel (SBQ, Eq. 4-6).

    Parameters
    ----------
    train, test : embeddings (arrays: rows are examples) or anything a callable kernel accepts
    k : number of prototypes
    kernel : "linear" (the practical Fisher kernel on embeddings), "fisher" (full Fisher kernel with the
        empirical Fisher information of ``train`` plus ``reg``), "rbf" (a Gaussian kernel on the
        Fisher-whitened embeddings, :class:`~fairshare.examples.RBFKernel`: full rank, matches the whole
        distribution; the kernel that makes summaries beat random subsets in ``fairshare bench
        examples``), a kernel object, or ``fn(A, B)``
    method : "greedy" (Algorithm 1), "stochastic" (``delta`` sets the sample size) or "distributed"
        (``n_parts`` parts, on ``client``'s cluster when given: a Dask client, a SparkSession or the ray module)
    reg : ridge added to the Fisher information (``kernel="fisher"``)
    jitter : share of the mean kernel diagonal added to the diagonal on the training points (a nugget;
        greedy only). A linear or Fisher kernel on ``d``-dimensional embeddings has rank ``d``, so
        without it at most ``d`` prototypes are selected (a warning says so); ``jitter=1e-3`` makes
        the kernel full rank and selection goes on past ``d``

    Returns
    -------
    Prototypes (indices in selection order, BQ weights, v(S) after each step). Selection stops
    early when every remaining candidate lies in the span of the selected ones (then the test
    mean is already reproduced as well as the kernel allows).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> train, test = rng.normal(size=(200, 5)), rng.normal(size=(30, 5)) + 1.0
    >>> p = select_prototypes(train, test, k=5)
    >>> len(p.indices), bool(np.all(np.diff(p.objective) <= 1e-12))
    (5, True)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if client is not None:
        from ..backends.clients import check_client

        check_client(client)
    k = check_int(k, "k", minimum=1)
    rng = check_rng(seed)
    jitter = check_positive_float(jitter, "jitter", allow_zero=True)
    if jitter and method != "greedy":
        raise ValueError(f"jitter is supported by method='greedy', not {method!r}")
    if method == "stochastic" and not 0.0 < check_positive_float(delta, "delta") < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    if n_parts is not None:
        check_int(n_parts, "n_parts", minimum=1)
    if (test.shape[0] if hasattr(test, "shape") else len(test)) == 0:
        raise ValueError("test holds no points: the prototypes explain the test points, give at least one")
    if reg is not None or kernel == "fisher":
        check_positive_float(reg, "reg")
    if isinstance(kernel, (str, LinearKernel, RBFKernel)):              # kernels of embeddings
        check_embeddings(train, test)
    kern = as_kernel(kernel, train, reg=reg)
    terms = _kernel_terms(kern, train, test, k, jitter)
    if k > terms.z.size:
        raise ValueError(f"k = {k} is larger than the {terms.z.size} training points")
    sel, L, beta, objective = _select(terms, method, k, rng, delta, n_parts, client, jitter)
    return Prototypes(indices=sel, weights=_weights(L, beta), objective=objective, method=method, cholesky=L,
                      beta=beta)


@dataclass
class _Terms:
    """What selection reads of the kernel: the embeddings ``G`` (None for a kernel given as a function of items),
    the mean kernel ``z`` between each training point and the test points, ``mu`` among test points, the kernel's
    diagonal on the training points, ``cross(a, b)`` (its block between training positions), ``column(i)``
    (None: from ``G``), and the items and kernel function that Dask tasks carry when ``G`` is None."""

    G: np.ndarray | None
    z: np.ndarray
    mu: float
    diag: np.ndarray
    cross: Any
    column: Any = None
    items: Any = None
    kfun: Any = None


def _kernel_terms(kern: Any, train: Any, test: Any, k: int, jitter: float) -> _Terms:
    """The kernel's terms: from the embeddings' means for a linear kernel, else in blocks of kernel rows."""
    embedded = hasattr(kern, "transform") and hasattr(kern, "gram") and hasattr(kern, "diagonal")
    if not embedded:
        return _block_terms(train, test, kern, None)
    G, H = _embeddings(kern, train, test)
    if not kern.linear:                                                # a kernel on transformed rows (rbf)
        return _block_terms(G, H, kern.gram, kern)
    if k > G.shape[1] and G.shape[1] < G.shape[0] and not jitter:
        import warnings

        warnings.warn(f"k = {k} prototypes asked of a linear kernel of rank at most {G.shape[1]} (the embedding "
                      f"width): selection stops once the selected points span it; jitter=1e-3 (a nugget on "
                      "the kernel's diagonal) selects past it, kernel='rbf' has full rank", UserWarning,
                      stacklevel=3)
    h = H.mean(axis=0)
    return _Terms(G, G @ h, float(h @ h), kern.diagonal(G), lambda a, b: G[a] @ G[b].T)


def _embeddings(kern: Any, train: Any, test: Any) -> tuple[np.ndarray, np.ndarray]:
    """``train`` and ``test`` through the kernel's transform (checked by :func:`~.rows.check_embeddings`)."""
    return kern.transform(np.asarray(train, dtype=float)), kern.transform(np.asarray(test, dtype=float))


def _block_terms(items: Any, other: Any, kfun: Any, embedded: Any) -> _Terms:
    """The terms of a kernel function ``kfun`` of two sets of items, in blocks of rows (the diagonal read from
    ``embedded``, the kernel object, when the items are its embeddings)."""
    take = lambda idx: [items[i] for i in idx] if isinstance(items, list) else items[idx]   # noqa: E731
    n_train = len(items)
    z = np.concatenate([kfun(take(np.arange(s, min(s + 512, n_train))), other).mean(axis=1)
                        for s in range(0, n_train, 512)]) if n_train else np.zeros(0)
    mu = float(np.mean(kfun(other, other)))
    if embedded is not None:
        diag = embedded.diagonal(items)
    else:                                                              # a function kernel: blocks of rows
        diag = np.concatenate([np.diag(kfun(take(np.arange(s, min(s + 256, n_train))),
                                             take(np.arange(s, min(s + 256, n_train)))))
                               for s in range(0, n_train, 256)]) if n_train else np.zeros(0)
    return _Terms(None, z, mu, diag, lambda a, b: kfun(take(a), take(b)),
                  column=lambda i: kfun(items, take(np.array([i])))[:, 0], items=items, kfun=kfun)


def _select(terms: _Terms, method: str, k: int, rng: np.random.Generator, delta: float, n_parts: int | None,
            client: Any, jitter: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(selected, Cholesky factor, beta, objective)`` by ``method``."""
    G, z, mu, diag = terms.G, terms.z, terms.mu, terms.diag
    if method == "greedy":
        return _greedy(G if G is not None else np.zeros((z.size, 0)), z, mu, k, column=terms.column,
                       diag=diag, nugget=jitter * float(np.mean(diag)) if diag.size else 0.0)
    if method == "stochastic":
        return _stochastic(G, z, mu, k, rng, delta, diag, terms.cross)
    return _distributed(G, z, mu, k, rng, n_parts, client, terms.column, diag, terms.cross, items=terms.items,
                        kfun=terms.kfun)


def _distributed(G, z, mu, k, rng, n_parts, client, column, diag, cross, items=None, kfun=None):
    """GreeDi: greedy on each part, greedy on the union of the parts' selections, keep the better."""
    t = z.size
    parts = n_parts if n_parts is not None else max(2, int(np.ceil(np.sqrt(t / max(k, 1)))))
    perm = rng.permutation(t)
    chunks = [np.sort(c) for c in np.array_split(perm, parts) if c.size]
    if G is None and client is not None:                 # each part's items travel with its task
        part = (lambda c: [items[i] for i in c]) if isinstance(items, list) else (lambda c: items[c])
        local = _on_cluster(client, _part_greedy_kernel, chunks,
                         [(part(c), z[c], diag[c], mu, k, kfun) for c in chunks])
    elif G is None:
        local = [c[greedy_on_embeddings(np.zeros((c.size, 0)), z[c], mu, k,
                                        column=lambda i, c=c: cross(c, c[[i]])[:, 0], diag=diag[c])[0]]
                 for c in chunks]
    elif client is not None:
        local = _on_cluster(client, _part_greedy, chunks, [(G[c], z[c], mu, k) for c in chunks])
    else:
        local = [c[_part_greedy(G[c], z[c], mu, k)] for c in chunks]
    union = np.unique(np.concatenate(local))
    if G is not None:
        merged, _, _ = greedy_on_embeddings(G[union], z[union], mu, k)
    else:
        merged, _, _ = greedy_on_embeddings(np.zeros((union.size, 0)), z[union], mu, k,
                                            column=lambda i: cross(union, union[[i]])[:, 0], diag=diag[union])
    candidates = [union[merged]] + local
    best = min(candidates, key=lambda s: _objective(cross, z, mu, s))
    # report the chosen set in greedy order with its weights and objective path
    if G is not None:
        order, L, beta, objective = _greedy(G[best], z[best], mu, best.size)
    else:
        order, L, beta, objective = _greedy(np.zeros((best.size, 0)), z[best], mu, best.size,
                                            column=lambda i: cross(best, best[[i]])[:, 0], diag=diag[best])
    return best[order], L, beta, objective


def _on_cluster(client: Any, part_greedy: Any, chunks: list, args: list) -> list:
    """Each part's greedy selection as one task on ``client``'s cluster (Dask, Spark, Ray: :mod:`fairshare.backends`;
    on Dask its data in the task graph: a worker that dies loses nothing, the wait is bounded), mapped back to
    training indices."""
    from ..backends.clients import as_backend

    return [c[s] for c, s in zip(chunks, as_backend(client).map(part_greedy, (), args))]
