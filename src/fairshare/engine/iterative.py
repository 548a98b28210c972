"""The regression solved in ``O(m n)`` a pass: conjugate gradients on the implicitly weighted design.

Under kernel or leverage sampling the constrained Shapley regression is well conditioned (its
normal matrix is close to a multiple of ``I - 11^T / n``), and so are Kernel Banzhaf's and the
semivalue regressions: conjugate gradients with a Jacobi preconditioner reach the dense solution
in a few passes over the packed coalition matrix (:class:`~fairshare.engine.packed.PackedRows`),
each ``O(m n / 8)``, where forming the Gram matrix costs ``O(m n^2)``. The iterations stop once the
solver's error is a twentieth of the statistical error: the normal equations' residual against the
size the sampling noise gives it, ``sqrt(sum_j w_j^2 e_j^2 |a_j|^2)`` with ``e`` the regression residual
(read once the residual is below 1e-3); its share of the mean squared error is then 0.25%. A game the
regression fits exactly has no noise and is solved to a relative residual of 1e-8.

Standard errors use the same replicate groups as the dense path: each group's share of the
normal equations' right-hand side is one grouped product ``Z^T u``, and the map from a perturbed
right-hand side to the solution is the preconditioner's inverse (a diagonal plus a rank-one part,
read off the normal matrix's diagonal and ``M 1``; projected for Shapley), which is what the
normal matrix is close to; no solve per group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .packed import PackedRows

__all__ = ["PackedDesign", "solve_regression_iterative", "use_iterative"]

_TOL = 1e-8                     # relative residual floor (what a noise-free fit is solved to)
_NOISE_SHARE = 5e-2             # solver error as a share of the statistical error (0.25% of its variance)
_NOISE_CHECK = 1e-3             # relative residual at which the statistical error is read
_MAX_ITER = 300


def use_iterative(m: int, d: int, k: int) -> bool:
    """Whether the iterative solver is cheaper than the dense Gram matrix for ``m`` rows, ``d`` players, ``k`` outputs.

    Dense: the Gram matrix, ``m d^2`` multiply-adds in BLAS (about 1e10 a second here). Iterative: conjugate
    gradients converge like ``rho^i`` with ``rho ~ sqrt(d / m)`` (the random design's spread around its
    expected normal matrix), each pass ``m d / 8`` table lookups per output (about 1e9 a second); with few
    rows per player it would take too many passes.

    Examples
    --------
    >>> use_iterative(1000, 20, 1), use_iterative(100_000, 3072, 10), use_iterative(2000, 1500, 1)
    (False, True, False)
    """
    rho = np.sqrt(d / max(m, 1))
    if d < 128 or rho >= 0.6:
        return False
    passes = np.log(1e-8) / np.log(rho) + 8
    dense = m * d * d / 1e10 + d**3 / 3e10
    iterative = passes * k * m * d / 8 / 1e9
    return bool(iterative < dense)


@dataclass
class PackedDesign:
    """Weighted design rows ``a_j = s_j z_j - t_j 1 - center`` on packed coalitions (the dense
    :class:`~fairshare.engine.solve.Design`'s interface, in ``O(m n / 8)`` products)."""

    Z: PackedRows
    s: np.ndarray
    t: np.ndarray
    w: np.ndarray
    y: np.ndarray
    fpc: np.ndarray
    unit: np.ndarray
    stratum: np.ndarray
    center: np.ndarray | None = None

    @classmethod
    def from_design(cls, design) -> PackedDesign:
        return cls(PackedRows(design.Z), design.s, design.t, design.w, design.y, design.fpc, design.unit,
                   design.stratum, design.center)

    @property
    def n_players(self) -> int:
        return self.Z.d

    def matvec(self, V: np.ndarray) -> np.ndarray:
        """``A V``: ``(m, k)``."""
        out = self.s[:, None] * self.Z.matvec(V) - np.outer(self.t, V.sum(axis=0))
        if self.center is not None:
            out -= (self.center @ V)[None, :]
        return out

    def weighted_sum(self, U: np.ndarray) -> np.ndarray:
        """``A^T U = sum_j U_j a_j``: ``(d, k)``."""
        return self._constant_parts(self.Z.rmatvec(self.s[:, None] * U), U)

    def _constant_parts(self, zsu: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``A^T U`` from ``Z^T (s U)``: minus the ``t_j 1`` and ``center`` parts of the rows."""
        out = zsu - (self.t @ U)[None, :]
        if self.center is not None:
            out -= np.outer(self.center, U.sum(axis=0))
        return out

    def normal(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A^T W A V`` (``(d, k)``) and the image ``A V`` (``(m, k)``) it passes through."""
        image = self.matvec(V)
        return self.weighted_sum(self.w[:, None] * image), image

    def group_sums(self, U: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
        """``sum_{j in g} U_j a_j`` for every group: ``(G, d, k)``."""
        out = self.Z.rmatvec(self.s[:, None] * U, group, n_groups)
        by_group = np.zeros((n_groups, U.shape[1]))
        np.add.at(by_group, group, self.t[:, None] * U)
        out -= by_group[:, None, :]
        if self.center is not None:
            totals = np.zeros((n_groups, U.shape[1]))
            np.add.at(totals, group, U)
            out -= self.center[None, :, None] * totals[:, None, :]
        return out

    def first_products(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``A^T W y``, ``diag(A^T W A)`` and ``A^T W A 1`` in one pass over the packed rows."""
        s, t, w = self.s, self.t, self.w
        k = self.y.shape[1]
        ones = s * self.Z.sizes - t * self.n_players - (self.center.sum() if self.center is not None else 0.0)
        U = np.concatenate([w[:, None] * self.y, (w * ones)[:, None]], axis=1)         # A^T of these: A^T W y, M 1
        columns = [s[:, None] * U, (w * (s * s - 2.0 * s * t))[:, None]]
        if self.center is not None:
            columns.append((w * s)[:, None])
        raw = self.Z.rmatvec(np.concatenate(columns, axis=1))
        sums = self._constant_parts(raw[:, : k + 1], U)
        diag = raw[:, k + 1] + float(w @ (t * t))
        if self.center is not None:
            zc = raw[:, k + 2] - float(w @ t)                                    # sum_j w_j a_j (without center)
            diag += -2.0 * self.center * zc + float(w.sum()) * self.center**2
        return sums[:, :k], diag, sums[:, k]

    def centered(self) -> PackedDesign:
        """The same rows with a free intercept (see :meth:`fairshare.engine.solve.Design.centered`)."""
        total = self.w.sum()
        mean_row = self.weighted_sum(self.w[:, None])[:, 0] / total
        y = self.y - (self.w[:, None] * self.y).sum(axis=0) / total
        return PackedDesign(self.Z, self.s, self.t, self.w, y, self.fpc, self.unit, self.stratum, mean_row)


def _projected(c: np.ndarray) -> np.ndarray:
    return c - c.mean(axis=0, keepdims=True)


def _noise_norm(design: PackedDesign, e: np.ndarray, sizes: np.ndarray,
                constrained: bool) -> tuple[np.ndarray, np.ndarray]:
    """``sqrt(sum_j w_j^2 e_j^2 |a_j|^2)`` per output (``|P a_j|`` when constrained): the size sampling noise gives
    the normal equations' right-hand side, with ``e = y - A x`` the regression residual; and ``sum_j w_j e_j^2``,
    the residual's weighted size."""
    d = design.n_players
    s, t = design.s, design.t
    if constrained:                    # P a = s (z - |S| / d 1)
        norm2 = s**2 * (sizes - sizes**2 / d)
    else:
        norm2 = s**2 * sizes - 2.0 * s * t * sizes + t**2 * d
        if design.center is not None:
            c = design.center
            zc = design.Z.matvec(c[:, None])[:, 0]
            norm2 += -2.0 * (s * zc - t * c.sum()) + float(c @ c)
    return (np.sqrt(((design.w**2 * np.maximum(norm2, 0.0))[:, None] * e**2).sum(axis=0)),
            (design.w[:, None] * e**2).sum(axis=0))


def solve_regression_iterative(design: PackedDesign, constrained: bool):
    """Weighted least squares ``min_x sum_j w_j (a_j^T x - y_j)^2`` (``x ⊥ 1`` when ``constrained``) by
    preconditioned conjugate gradients, one column per output; returns a
    :class:`~fairshare.engine.solve.Linearized`.

    Examples
    --------
    >>> from fairshare.engine.solve import Design
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.random((400, 130)) < 0.5
    >>> x = rng.normal(size=130)
    >>> design = Design(Z, np.ones(400), np.zeros(400), np.ones(400), (Z @ x)[:, None], np.ones(400),
    ...                 np.arange(400), np.zeros(400, int))
    >>> lin = solve_regression_iterative(PackedDesign.from_design(design), constrained=False)
    >>> bool(np.abs(lin.x[:, 0] - x).max() < 1e-6)
    True
    """
    from .solve import Linearized

    project: Callable = _projected if constrained else (lambda v: v)
    near = _NearInverse(design, constrained, project)
    x, fitted, iterations = _conjugate_gradients(design, constrained, project, near)
    x = project(x)
    residual = design.y - fitted
    leverage = _leverage(design, constrained, near)
    lin = Linearized(x=x, contrib=design.w[:, None] * residual, solve=near, leverage=leverage)
    lin.iterations = iterations
    return lin


class _NearInverse:
    """``(D + beta 11^T)^-1``, the inverse of the matrix the normal matrix ``M`` is close to (``D`` diagonal).

    Shapley's and Banzhaf's designs are near multiples of I (of I - 11^T/d for Shapley), a semivalue's of
    I + b_n 11^T (Lemma 3.4). That structure, read off M's diagonal and M 1 in one pass (with ``A^T W y``, kept as
    ``c``), is the preconditioner and the inverse the error bars use (calling the object applies it, projected for
    the constrained problem)."""

    def __init__(self, design: PackedDesign, constrained: bool, project: Callable) -> None:
        d = design.n_players
        self.c, diag, m1 = design.first_products()
        if constrained:
            # the diagonal of P M P (what the constrained problem sees): M_ii - 2 (M 1)_i / d + 1^T M 1 / d^2
            diag = np.maximum(diag - 2.0 * m1 / d + m1.sum() / d**2, 1e-300)
            self.beta = 0.0
        else:
            self.beta = float((m1.sum() - diag.sum()) / (d * (d - 1))) if d > 1 else 0.0
            diag = np.maximum(diag - self.beta, 1e-300)
        self.inv_d = 1.0 / diag
        self.denominator = 1.0 + self.beta * self.inv_d.sum()
        self.project = project

    def __call__(self, R: np.ndarray) -> np.ndarray:
        """``(D + beta 11^T)^-1 R`` by Sherman-Morrison (projected for the constrained problem)."""
        out = self.inv_d[:, None] * R
        if self.beta != 0.0:
            out -= self.inv_d[:, None] * (self.beta * out.sum(axis=0, keepdims=True) / self.denominator)
        return self.project(out)


def _conjugate_gradients(design: PackedDesign, constrained: bool, project: Callable,
                         precondition: _NearInverse) -> tuple[np.ndarray, np.ndarray, int]:
    """The iterates ``x`` (not yet projected), the fitted values ``A x`` kept alongside them, and the iterations
    taken: until the residual is below ``_TOL`` of the right-hand side, or a twentieth of the statistical error
    once that is read (see the module docstring)."""

    def normal(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``P M P V`` and ``A P V`` (the iterates stay in the projected space: ``A x`` is kept alongside ``x``)."""
        out, image = design.normal(project(V))
        return project(out), image

    b = project(precondition.c)
    x = np.zeros_like(b)
    fitted = np.zeros_like(design.y)                  # A x, updated with each step (no product to read the residual)
    r = b.copy()
    z = precondition(r)
    p = z.copy()
    rz = (r * z).sum(axis=0)
    scale = np.maximum(np.linalg.norm(b, axis=0), 1e-300)
    threshold = _TOL * scale
    sizes = design.Z.sizes
    check = _NOISE_CHECK                     # relative residual at which the noise is read (again)
    noise_known = np.zeros(b.shape[1], dtype=bool)
    iterations = 0
    for iterations in range(1, _MAX_ITER + 1):
        Ap, image = normal(p)
        pAp = (p * Ap).sum(axis=0)
        alpha = rz / np.where(pAp == 0.0, 1.0, pAp)
        x += alpha * p
        fitted += alpha * image
        r -= alpha * Ap
        norm_r = np.linalg.norm(r, axis=0)
        z = precondition(r)
        rz_new = (r * z).sum(axis=0)
        if not noise_known.all() and check > _TOL and np.all(norm_r <= check * scale):
            # the residual y - A x holds the noise and the solver's own error, whose weighted size is about
            # r^T M^-1 r ~ r^T z: the noise is read off where it dominates, else later at a smaller residual
            noise, spread = _noise_norm(design, design.y - fitted, sizes, constrained)
            read = ~noise_known & (spread > 100.0 * np.abs(rz_new))
            threshold[read] = np.maximum(threshold[read], _NOISE_SHARE * noise[read])
            noise_known |= read
            check *= _NOISE_CHECK
        if np.all(norm_r <= threshold):
            break
        p = z + (rz_new / np.where(rz == 0.0, 1.0, rz)) * p
        rz = rz_new
    return x, fitted, iterations


def _leverage(design: PackedDesign, constrained: bool, near: _NearInverse) -> np.ndarray:
    """The leverage of each row, ``h_j = w_j a_j^T M^-1 a_j``, under the same approximation of ``M``; capped at
    1/2 (a small-sample correction of at most 2x on rows this path sees; exactly determined fits, where it must
    be infinite, are small and solved densely)."""
    d = design.n_players
    inv_d = near.inv_d
    sizes = design.Z.sizes
    with_center = not constrained and design.center is not None
    probes = np.stack([inv_d, design.center * inv_d] if with_center else [inv_d], axis=1)
    z_probes = design.Z.matvec(probes)                                    # z^T D^-1 1 (and z^T D^-1 center)
    zd = z_probes[:, 0]
    if constrained:
        # P a = s (z - |S|/d 1): (P a)^T D^-1 (P a) = s^2 (z^T D^-1 z - 2 |S|/d z^T D^-1 1 + |S|^2/d^2 1^T D^-1 1)
        quad = design.s**2 * (zd - 2.0 * sizes / d * zd + (sizes / d) ** 2 * inv_d.sum())
    else:
        a_d_a = design.s**2 * zd - 2.0 * design.s * design.t * zd + design.t**2 * inv_d.sum()
        a_d_1 = design.s * zd - design.t * inv_d.sum()
        if with_center:
            c_d = probes[:, 1]
            zc = z_probes[:, 1]
            a_d_a += -2.0 * (design.s * zc - design.t * c_d.sum()) + float(design.center @ c_d)
            a_d_1 -= c_d.sum()
        quad = a_d_a - near.beta * a_d_1**2 / near.denominator
    return np.minimum(design.w * quad, 0.5)
