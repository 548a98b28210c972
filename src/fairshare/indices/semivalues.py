"""Semivalues (probabilistic values) defined by their size weights, in log space.

A semivalue assigns player ``i`` the value

    phi_i = sum over S subset of N \\ {i} of p_{|S|} * (v(S + i) - v(S)),

with weights ``p_0 .. p_{n-1}`` satisfying ``sum_l C(n-1, l) p_l = 1``. Shapley,
Banzhaf, beta-Shapley and weighted Banzhaf are families that give weights for any
``n``; a user semivalue is given by explicit weights for one ``n``. Weights are kept
as logarithms so that ``n = 3072`` (where ``C(n-1, n/2)`` is about 1e922) works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import betaln

from .._core.combinatorics import log_binom, logsumexp

__all__ = ["Semivalue", "resolve_index", "INDEX_NAMES"]

_NORMALIZATION_RTOL = 1e-8


class Semivalue:
    """A semivalue given by its size weights ``p_0 .. p_{n-1}``.

    Build one from explicit weights (for one number of players) or use a
    constructor for a family that works for any number of players:
    :meth:`shapley`, :meth:`banzhaf`, :meth:`beta_shapley`, :meth:`weighted_banzhaf`.

    Parameters
    ----------
    weights : array-like of shape (n,)
        Weight ``p_l`` of a coalition of size ``l`` (not containing the player).
        Must be non-negative and satisfy ``sum_l C(n-1, l) p_l = 1``.
    name : str, default "semivalue"
        Label used in results and tables.

    Examples
    --------
    >>> import fairshare as fs
    >>> sv = fs.Semivalue([0.5, 0.5])          # n = 2 Shapley weights
    >>> sv.n_players
    2
    >>> np.allclose(fs.Semivalue.shapley().weights(2), [0.5, 0.5])
    True
    """

    def __init__(self, weights: Any = None, *, name: str = "semivalue", _log_fn: Callable | None = None,
                 _params: dict | None = None, _measure: tuple | None = None) -> None:
        self.name = str(name)
        self.params: dict = dict(_params or {})
        # the probabilistic value's measure on the inclusion probability u, when known:
        # ("beta", a, b) for density u^(a-1) (1-u)^(b-1) / B(a, b), ("point", w) for a point mass
        self.measure = _measure
        if _log_fn is not None:
            self._log_fn = _log_fn
            self._fixed: np.ndarray | None = None
            return
        if weights is None:
            raise ValueError("weights must be given (or use Semivalue.shapley(), .banzhaf(), ...)")
        w = np.asarray(weights, dtype=float)
        if w.ndim != 1 or w.size < 1:
            raise ValueError(f"weights must be a 1-D array with one weight per coalition size, got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and non-negative")
        with np.errstate(divide="ignore"):
            log_w = np.log(w)
        _check_normalized(log_w, "weights")
        self._fixed = log_w
        self._log_fn = None

    # ----------------------------------------------------------------- families
    @classmethod
    def shapley(cls) -> Semivalue:
        """The Shapley value: ``p_l = l! (n-1-l)! / n!``.

        Examples
        --------
        >>> np.allclose(Semivalue.shapley().weights(3), [1/3, 1/6, 1/3])
        True
        """
        return cls(name="shapley", _log_fn=lambda n: -np.log(n) - log_binom(n - 1, np.arange(n)),
                   _measure=("beta", 1.0, 1.0))

    @classmethod
    def banzhaf(cls) -> Semivalue:
        """The Banzhaf value: ``p_l = 2^-(n-1)``.

        Examples
        --------
        >>> np.allclose(Semivalue.banzhaf().weights(3), [0.25, 0.25, 0.25])
        True
        """
        return cls(name="banzhaf", _log_fn=lambda n: np.full(n, -(n - 1) * np.log(2.0)), _measure=("point", 0.5))

    @classmethod
    def beta_shapley(cls, alpha: float, beta: float) -> Semivalue:
        """Beta(alpha, beta)-Shapley (Kwon and Zou 2022): ``p_l = B(l + beta, n-1-l + alpha) / B(alpha, beta)``.

        ``alpha = beta = 1`` is the Shapley value; ``alpha > beta`` puts more
        weight on small coalitions (the same convention as pyDVL).

        Examples
        --------
        >>> np.allclose(Semivalue.beta_shapley(1, 1).weights(4), Semivalue.shapley().weights(4))
        True
        """
        for label, val in (("alpha", alpha), ("beta", beta)):
            if not np.isfinite(val) or val <= 0:
                raise ValueError(f"{label} must be finite and > 0, got {val}")
        a, b = float(alpha), float(beta)

        def log_fn(n: int) -> np.ndarray:
            ell = np.arange(n)
            return betaln(ell + b, n - 1 - ell + a) - betaln(a, b)

        return cls(name=f"beta-shapley({a:g},{b:g})", _log_fn=log_fn, _params={"alpha": a, "beta": b},
                   _measure=("beta", b, a))

    @classmethod
    def weighted_banzhaf(cls, w: float) -> Semivalue:
        """Weighted Banzhaf value: each other player joins independently with probability ``w``.

        ``p_l = w^l (1-w)^(n-1-l)``; ``w = 0.5`` is the Banzhaf value.

        Examples
        --------
        >>> np.allclose(Semivalue.weighted_banzhaf(0.5).weights(3), Semivalue.banzhaf().weights(3))
        True
        """
        if not np.isfinite(w) or not 0.0 < w < 1.0:
            raise ValueError(f"w must lie strictly between 0 and 1, got {w}")
        w = float(w)

        def log_fn(n: int) -> np.ndarray:
            ell = np.arange(n)
            return ell * np.log(w) + (n - 1 - ell) * np.log1p(-w)

        return cls(name=f"weighted-banzhaf({w:g})", _log_fn=log_fn, _params={"w": w}, _measure=("point", w))

    @classmethod
    def leave_one_out(cls) -> Semivalue:
        """Leave-one-out: ``phi_i = v(N) - v(N \\ {i})``, all weight on the coalitions of size ``n - 1``.

        Examples
        --------
        >>> Semivalue.leave_one_out().weights(3).tolist()
        [0.0, 0.0, 1.0]
        """
        def log_fn(n: int) -> np.ndarray:
            out = np.full(n, -np.inf)
            out[-1] = 0.0
            return out

        return cls(name="leave-one-out", _log_fn=log_fn, _measure=("point", 1.0))

    # ------------------------------------------------------------------ weights
    @property
    def n_players(self) -> int | None:
        """Number of players the weights are fixed for, or None for a family."""
        return None if self._fixed is None else int(self._fixed.size)

    def log_weights(self, n: int) -> np.ndarray:
        """``log p_l`` for ``l = 0..n-1`` (``-inf`` for a zero weight).

        Examples
        --------
        >>> Semivalue.shapley().log_weights(3072).shape
        (3072,)
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"n_players must be >= 1, got {n}")
        if self._fixed is not None:
            if n != self._fixed.size:
                raise ValueError(
                    f"this Semivalue has weights for {self._fixed.size} players but the game has {n} players"
                )
            return self._fixed.copy()
        return np.asarray(self._log_fn(n), dtype=float)

    def weights(self, n: int) -> np.ndarray:
        """``p_l`` for ``l = 0..n-1`` (may underflow to 0 for very large n; use :meth:`log_weights`).

        Examples
        --------
        >>> Semivalue.banzhaf().weights(2)
        array([0.5, 0.5])
        """
        return np.exp(self.log_weights(n))

    def log_size_probabilities(self, n: int) -> np.ndarray:
        """``log(C(n-1, l) p_l)``: the probability that the semivalue's random coalition has size ``l``.

        Examples
        --------
        >>> np.allclose(np.exp(Semivalue.shapley().log_size_probabilities(4)), 0.25)
        True
        """
        return self.log_weights(n) + log_binom(n - 1, np.arange(n))

    def quadrature(self, degree: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Nodes ``u`` in [0, 1] and weights integrating polynomials of degree <= ``degree`` exactly
        against the semivalue's measure (``p_l = E[u^l (1-u)^(n-1-l)]``), or None when the measure is
        unknown (user weights).

        Examples
        --------
        >>> u, w = Semivalue.shapley().quadrature(3)
        >>> round(float(np.dot(w, u ** 3)), 12)        # int_0^1 u^3 du
        0.25
        """
        from scipy.special import roots_jacobi

        if self.measure is None:
            return None
        if self.measure[0] == "point":
            return np.array([float(self.measure[1])]), np.array([1.0])
        _, a, b = self.measure
        count = max(1, (int(degree) + 2) // 2)
        x, w = roots_jacobi(count, b - 1.0, a - 1.0)       # weight (1 - x)^(b-1) (1 + x)^(a-1) on [-1, 1]
        return (x + 1.0) / 2.0, w / w.sum()

    def reduced(self, n: int, removed: int, active: np.ndarray | None = None) -> Semivalue:
        """The semivalue of the game without ``removed`` null players (``n - removed`` players).

        Families (Shapley, Banzhaf, beta-Shapley, weighted Banzhaf) keep their form; fixed weights
        become ``p_t + p_(t+1)`` once per removed player.

        Examples
        --------
        >>> sv = Semivalue(Semivalue.shapley().weights(4))
        >>> np.allclose(sv.reduced(4, 1).weights(3), Semivalue.shapley().weights(3))
        True
        """
        if self._fixed is None or removed == 0:
            return self
        p = np.exp(self.log_weights(n))
        for _ in range(removed):
            p = p[:-1] + p[1:]
        return Semivalue(p, name=self.name)

    # ------------------------------------------------------------- identities
    @property
    def is_shapley(self) -> bool:
        """True when this is the Shapley value (by name or by its weights)."""
        return self.name == "shapley" or self._matches(Semivalue.shapley())

    @property
    def is_banzhaf(self) -> bool:
        """True when this is the Banzhaf value (by name or by its weights)."""
        return self.name == "banzhaf" or self._matches(Semivalue.banzhaf())

    def _matches(self, other: Semivalue) -> bool:
        if self._fixed is None:
            # families are identified by their parameters
            if self.name.startswith("beta-shapley") and other.name == "shapley":
                return self.params == {"alpha": 1.0, "beta": 1.0}
            if self.name.startswith("weighted-banzhaf") and other.name == "banzhaf":
                return self.params == {"w": 0.5}
            return False
        n = self._fixed.size
        mine, theirs = np.exp(self._fixed), other.weights(n)
        return bool(np.allclose(mine, theirs, rtol=1e-9, atol=0.0))

    @property
    def identity(self) -> str:
        """What tells this semivalue from every other (a cache's key): its name, with its parameters where it has
        any (a name writes them to 6 digits) and its weights where they are fixed (every ``Semivalue(weights)`` is
        named 'semivalue' unless named).

        Examples
        --------
        >>> Semivalue.shapley().identity
        'shapley'
        >>> Semivalue([0.5, 0.5]).identity == Semivalue([0.25, 0.75]).identity
        False
        """
        if self._fixed is not None:
            return f"{self.name} log-weights {self._fixed.tolist()!r}"
        return f"{self.name} {sorted(self.params.items())!r}" if self.params else self.name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semivalue):
            return NotImplemented
        if self._fixed is not None and other._fixed is not None:
            return self._fixed.shape == other._fixed.shape and bool(np.allclose(self._fixed, other._fixed))
        return self.name == other.name and self.params == other.params and self._fixed is None and other._fixed is None

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))

    def __repr__(self) -> str:
        if self._fixed is not None:
            return f"Semivalue(name={self.name!r}, n_players={self._fixed.size})"
        return f"Semivalue.{self.name}" if not self.params else f"Semivalue({self.name})"


def _check_normalized(log_w: np.ndarray, name: str) -> None:
    n = log_w.size
    total = float(np.exp(logsumexp(log_w + log_binom(n - 1, np.arange(n)))))
    if not abs(total - 1.0) <= _NORMALIZATION_RTOL:
        raise ValueError(
            f"{name} must satisfy sum_l C(n-1, l) * p_l = 1 (a semivalue's weights form a probability "
            f"distribution over coalitions); got {total:.12g} for n = {n}"
        )


#: the index names every door accepts (``INDEX_NAMES``), with the Semivalue each stands for; ``beta-shapley``
#: is Beta(16, 1), Kwon and Zou's recommendation (it weighs small coalitions, where a noisy point shows);
#: ``beta-shapley(a,b)`` and ``weighted-banzhaf(w)`` name any member of those families
_NAMED = {"shapley": Semivalue.shapley, "banzhaf": Semivalue.banzhaf,
          "beta-shapley": lambda: Semivalue.beta_shapley(16, 1), "leave-one-out": Semivalue.leave_one_out,
          "loo": Semivalue.leave_one_out}
INDEX_NAMES = tuple(_NAMED)
_FAMILIES = {"beta-shapley": (Semivalue.beta_shapley, 2), "weighted-banzhaf": (Semivalue.weighted_banzhaf, 1)}


def _parse(text: str) -> Semivalue | None:
    """``"beta-shapley(4,1)"`` or ``"weighted-banzhaf(0.3)"`` -> the Semivalue (None when ``text`` is no such name);
    parameters the family refuses are refused naming ``index``.

    Examples
    --------
    >>> _parse("weighted-banzhaf(1.5)")
    Traceback (most recent call last):
    ...
    ValueError: index='weighted-banzhaf(1.5)': w must lie strictly between 0 and 1, got 1.5
    """
    head, paren, rest = text.partition("(")
    family = _FAMILIES.get(head.strip())
    if family is None or not paren or not rest.endswith(")"):
        return None
    make, arity = family
    try:
        args = [float(a) for a in rest[:-1].split(",")]
    except ValueError:
        return None
    if len(args) != arity:
        return None
    try:
        return make(*args)
    except ValueError as exc:                       # the family's own words, under the argument's name
        raise ValueError(f"index={text!r}: {exc}") from None


def resolve_index(index: str | Semivalue, n_players: int | None = None) -> Semivalue:
    """Turn ``index`` into a Semivalue: one of :data:`INDEX_NAMES` (``"shapley"``, ``"banzhaf"``,
    ``"beta-shapley"``, ``"leave-one-out"`` / ``"loo"``), a family member such as ``"beta-shapley(4,1)"`` or
    ``"weighted-banzhaf(0.3)"``, or a :class:`Semivalue`. The same names at every door.

    When ``n_players`` is given, a Semivalue with fixed weights is checked to match it.

    Examples
    --------
    >>> resolve_index("Shapley").name
    'shapley'
    >>> resolve_index("beta-shapley").name, resolve_index("weighted-banzhaf(0.3)").name
    ('beta-shapley(16,1)', 'weighted-banzhaf(0.3)')
    """
    key = index.strip().lower().replace(" ", "") if isinstance(index, str) else None
    if isinstance(index, Semivalue):
        sv = index
    elif key in _NAMED:
        sv = _NAMED[key]()
    elif key is not None and _parse(key) is not None:
        sv = _parse(key)
    else:
        raise ValueError(f"index must be one of {list(INDEX_NAMES)}, 'beta-shapley(a,b)', 'weighted-banzhaf(w)' or "
                         f"a fairshare.Semivalue, got {index!r}")
    if n_players is not None and sv.n_players is not None and sv.n_players != n_players:
        raise ValueError(
            f"index has weights for {sv.n_players} players but the game has {n_players} players"
        )
    return sv
