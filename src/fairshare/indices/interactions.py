"""Interaction indices: which players act together, as linear maps of the game's Moebius transform.

Every index here gives a subset ``S`` (``|S| = s <= order``) the value

    I(S) = sum_{T superset of S} c(s, |T|) m(T),        m(T) = sum_{U subset of T} (-1)^{|T| - |U|} v(U),

with a coefficient ``c(s, t)`` that depends on the sizes only (so not on ``n``: a player outside every ``T``
with ``m(T) != 0`` changes nothing, and the values of a restricted game are those of the whole game):

=========  ==========================================================  ===================================
index      c(s, t) for t >= s                                           order 1 gives
=========  ==========================================================  ===================================
moebius    [t = s]                                                      the Moebius coefficients
sii        1 / (t - s + 1)            (Grabisch 1997)                   Shapley values
bii        2^-(t - s)                 (Grabisch & Roubens 1999)         Banzhaf values
k-sii      sum_{j=s}^{min(k,t)} C(t-s, j-s) B_{j-s} / (t-j+1)            Shapley values
           (Bordt & von Luxburg 2023; B: Bernoulli numbers, B_1 = -1/2)
stii       [t = s] for s < k; 1 / C(t, k) for s = k (Sundararajan 2020)  Shapley values
fsii       [t = s] for t <= k; (-1)^(k-s) s/(k+s) C(k,s) C(t-1,k) / C(t+k-1,k+s)   Shapley values
           for t > k (Tsai, Yeh & Ravikumar 2023, Thm. 19)
fbii       [t = s] for t <= k; (-1)^(k-s) 2^-(t-s) C(t-s-1, k-s) for t > k           Banzhaf values
=========  ==========================================================  ===================================

Two pairwise indices (order 2 only) lay a pair index out as shap's ``shap_interaction_values`` matrix:

===========  ====================================================================================
sii-matrix   ``"shap"``: a pair holds half its SII, ``c(2, t) = 1 / (2 (t - 1))``; a player holds the rest of
             its Shapley value, ``c(1, t) = 1 / t - [t >= 2] / 2`` (its Shapley value minus half its SII with
             every other player). ``matrix()`` is shap's: pairs on both off-diagonal cells, main effects on the
             diagonal, each row summing to the Shapley values.
bii-matrix   the Banzhaf analogue: a pair holds half its BII, ``c(2, t) = 2^-(t - 1)``; a player holds its
             Banzhaf value minus half its BII with every other player, ``c(1, t) = (2 - t) 2^-(t - 1)``;
             each row of ``matrix()`` sums to the Banzhaf values.
===========  ====================================================================================

Both are linear maps of SII (BII) of order 2 (:attr:`InteractionIndex.base`, :meth:`InteractionIndex.base_map`):
estimators estimate the base index and map it, so their values are exactly the map of the base's estimate.

k-SII, STII and FSII are *efficient*: their values over all subsets of sizes 0..k (the empty set holding
``v(empty)``) add up to ``v(N)``. FSII and FBII are the best order-k polynomial fits of the game under the
Shapley kernel (with ``v(empty)`` and ``v(N)`` fitted exactly) and under uniform weights.

Every index is also ``I(S) = sum_U v(U) g_s(|U|, |U & S|)`` with a weight :meth:`InteractionIndex.coalition_weights`
the estimators use: in closed form for SII, BII, STII, k-SII and the Moebius transform, and for FSII and FBII the
sum of ``c(s, t)`` over the ``T`` holding ``U`` and ``S``, in exact fractions.
"""

from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from .._core.arguments import check_int
from .._core.combinatorics import log_binom
from .semivalues import Semivalue

__all__ = ["InteractionIndex", "INTERACTION_INDEX_NAMES", "MATRIX_INDEX_NAMES", "MATRIX_BASES",
           "resolve_interaction_index", "subsets_up_to", "bernoulli_numbers"]

#: the interaction indices, by name, with what they extend
INTERACTION_INDEX_NAMES = {
    "k-sii": "k-Shapley interaction values (the default; efficient; order 1: Shapley values)",
    "sii": "Shapley interaction index",
    "stii": "Shapley-Taylor interaction index (efficient)",
    "fsii": "Faithful Shapley interaction index (efficient; the Shapley-kernel least-squares fit of order k)",
    "fbii": "Faithful Banzhaf interaction index (the least-squares fit of order k)",
    "bii": "Banzhaf interaction index",
    "moebius": "the Moebius transform (Harsanyi dividends)",
}
#: the pairwise matrix layouts (order 2 only), by name, and the index each lays out (:data:`MATRIX_BASES`)
MATRIX_INDEX_NAMES = {
    "sii-matrix": "shap's interaction matrix (alias 'shap'; pairs: SII / 2; a player: its Shapley value minus half "
                  "its pairs' SII; rows of matrix() sum to the Shapley values)",
    "bii-matrix": "the Banzhaf analogue of shap's matrix (pairs: BII / 2; rows of matrix() sum to the Banzhaf values)",
}
_FAMILY = {"k-sii": "shapley", "sii": "shapley", "stii": "shapley", "fsii": "shapley", "fbii": "banzhaf",
           "bii": "banzhaf", "moebius": "moebius", "sii-matrix": "shapley", "bii-matrix": "banzhaf"}
_ALIASES = {"ksii": "k-sii", "k_sii": "k-sii", "shapley-taylor": "stii", "faithful-shapley": "fsii",
            "faithful-banzhaf": "fbii", "mobius": "moebius", "möbius": "moebius", "shap": "sii-matrix"}
#: the pairwise matrix indices and the index each lays out
MATRIX_BASES = {"sii-matrix": "sii", "bii-matrix": "bii"}


@lru_cache(maxsize=None)
def bernoulli_numbers(count: int) -> tuple[float, ...]:
    """``B_0 .. B_{count-1}`` with ``B_1 = -1/2`` (exact fractions, returned as floats).

    Examples
    --------
    >>> bernoulli_numbers(5)
    (1.0, -0.5, 0.16666666666666666, 0.0, -0.03333333333333333)
    """
    B = [Fraction(1)]
    for m in range(1, count):
        B.append(-sum(Fraction(math.comb(m + 1, j)) * B[j] for j in range(m)) / (m + 1))
    return tuple(float(b) for b in B[:count])


class InteractionIndex:
    """An interaction index of a given order (see the module docstring for the definitions).

    Parameters
    ----------
    name : one of :data:`INTERACTION_INDEX_NAMES`
    order : the largest subset size valued, ``>= 1``

    Examples
    --------
    >>> ix = InteractionIndex("k-sii", 2)
    >>> np.round(ix.coefficients(4)[1:], 4)       # rows s = 1, 2; columns t = 0..4
    array([[ 0.    ,  1.    ,  0.    , -0.1667, -0.25  ],
           [ 0.    ,  0.    ,  1.    ,  0.5   ,  0.3333]])
    """

    def __init__(self, name: str, order: int) -> None:
        if name not in INTERACTION_INDEX_NAMES and name not in MATRIX_INDEX_NAMES:
            raise ValueError(f"index must be one of {list(INTERACTION_INDEX_NAMES) + list(MATRIX_INDEX_NAMES)}, "
                             f"got {name!r}")
        self.kind = name
        self.order = check_int(order, "order", minimum=1)
        if name in MATRIX_BASES and self.order != 2:
            raise ValueError(f"index {name!r} is pairwise (a matrix): order must be 2, got {self.order}")

    # ---------------------------------------------------------------------------------------- facts
    @property
    def name(self) -> str:
        """``"k-sii"``, ... with the order: ``"k-sii(2)"``."""
        return f"{self.kind}({self.order})"

    @property
    def family(self) -> str:
        """``"shapley"``, ``"banzhaf"`` or ``"moebius"``: the kernel its estimators weight coalitions with."""
        return _FAMILY[self.kind]

    @property
    def efficient(self) -> bool:
        """Whether the values of all subsets of sizes 1..order add up to ``v(N) - v(empty)``."""
        return self.kind in ("k-sii", "stii", "fsii") or (self.kind in ("sii",) and self.order == 1)

    @property
    def is_shapley(self) -> bool:
        return False

    @property
    def is_banzhaf(self) -> bool:
        return False

    @property
    def base(self) -> InteractionIndex:
        """The index this one is a linear map of (SII or BII of order 2 for the matrix indices), else itself."""
        return InteractionIndex(MATRIX_BASES[self.kind], 2) if self.kind in MATRIX_BASES else self

    def base_map(self, subsets: np.ndarray) -> sp.csr_matrix:
        """The ``(p, p)`` map from the :attr:`base` index's values of ``subsets`` (:func:`subsets_up_to` ``(n, 2)``)
        to this index's: a pair gets half its base value, a player its own minus half of each of its pairs'.

        Examples
        --------
        >>> InteractionIndex("sii-matrix", 2).base_map(subsets_up_to(3, 2)).toarray()[0].tolist()
        [1.0, 0.0, 0.0, -0.5, -0.5, 0.0]
        """
        p = subsets.shape[0]
        if self.kind not in MATRIX_BASES:
            return sp.identity(p, format="csr")
        pairs = np.flatnonzero((subsets >= 0).sum(axis=1) == 2)
        singles = np.flatnonzero((subsets >= 0).sum(axis=1) == 1)
        player_row = np.full(int(subsets.max(initial=-1)) + 1, -1)
        player_row[subsets[singles, 0]] = singles
        rows = np.concatenate([singles, pairs, player_row[subsets[pairs, 0]], player_row[subsets[pairs, 1]]])
        cols = np.concatenate([singles, pairs, pairs, pairs])
        vals = np.concatenate([np.ones(singles.size), np.full(pairs.size, 0.5), np.full(2 * pairs.size, -0.5)])
        return sp.csr_matrix((vals, (rows, cols)), shape=(p, p))

    def reduced(self, n: int, removed: int, active: np.ndarray | None = None) -> InteractionIndex:
        """The same index on a game with ``removed`` null players set aside (its coefficients do not depend on n)."""
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InteractionIndex) and (self.kind, self.order) == (other.kind, other.order)

    def __hash__(self) -> int:
        return hash((self.kind, self.order))

    def __repr__(self) -> str:
        return f"InteractionIndex({self.kind!r}, order={self.order})"

    # ---------------------------------------------------------------------------------------- weights
    def coefficients(self, t_max: int) -> np.ndarray:
        """``c[s, t]`` for ``s = 0..order`` and ``t = 0..t_max``: the weight of ``m(T)`` in ``I(S)`` when ``T``
        contains ``S`` (0 for ``t < s``)."""
        k = self.order
        s = np.arange(k + 1)[:, None]
        t = np.arange(t_max + 1)[None, :]
        above = t >= s
        d = np.where(above, t - s, 0)
        kind = self.kind
        if kind == "moebius":
            c = (t == s).astype(float)
        elif kind == "sii":
            c = np.where(above, 1.0 / (d + 1.0), 0.0)
        elif kind == "bii":
            c = np.where(above, 0.5 ** d, 0.0)
        elif kind == "stii":
            top = np.where(t >= k, np.exp(-log_binom(np.maximum(t, k), k)), 0.0)
            c = np.where(s < k, (t == s).astype(float), top)
        elif kind == "k-sii":
            B = bernoulli_numbers(k + 1)
            c = np.zeros((k + 1, t_max + 1))
            for ss in range(k + 1):
                for j in range(ss, k + 1):
                    tt = np.arange(j, t_max + 1)
                    c[ss, tt] += np.exp(log_binom(tt - ss, j - ss)) * B[j - ss] / (tt - j + 1.0)
        elif kind == "sii-matrix":                     # s = 1: 1/t - [t >= 2]/2; s = 2: 1 / (2 (t - 1))
            c = np.where(s == 1, 1.0 / np.maximum(t, 1) - 0.5 * (t >= 2), 0.5 / np.maximum(t - 1, 1))
            c = np.where(s == 0, (t == 0).astype(float), c)
        elif kind == "bii-matrix":                     # s = 1: (2 - t) 2^-(t-1); s = 2: 2^-(t-1)
            c = np.where(s == 1, (2.0 - t) * 0.5 ** np.maximum(t - 1, 0), 0.5 ** np.maximum(t - 1, 0))
            c = np.where(s == 0, (t == 0).astype(float), c)
        elif kind == "fsii":
            with np.errstate(divide="ignore", invalid="ignore"):
                tail = ((-1.0) ** (k - s) * s / (k + s) * np.exp(log_binom(k, s) + log_binom(np.maximum(t - 1, k), k)
                                                                 - log_binom(t + k - 1, k + s)))
            c = np.where(t <= k, (t == s).astype(float), np.where(above, tail, 0.0))
        else:                                                                   # fbii
            tail = (-1.0) ** (k - s) * 0.5 ** d * np.exp(log_binom(np.maximum(d - 1, 0), k - s))
            c = np.where(t <= k, (t == s).astype(float), np.where(above & (t > k), tail, 0.0))
        return np.where(above, c, 0.0)

    def coalition_weights(self, n: int) -> np.ndarray:
        """``g[s, u, j]``: the weight of ``v(U)`` in ``I(S)`` for ``|S| = s``, ``|U| = u``, ``|U & S| = j``
        so that ``I(S) = sum_U v(U) g[s, |U|, |U & S|]``.

        Examples
        --------
        >>> g = InteractionIndex("sii", 1).coalition_weights(3)      # Shapley: +-|U'|! (n-|U'|-1)! / n!
        >>> np.round(g[1, :, 1] * 6, 6), np.round(g[1, :, 0] * 6, 6)
        (array([0., 2., 1., 2.]), array([-2., -1., -2.,  0.]))
        >>> g = InteractionIndex("fbii", 1).coalition_weights(3)     # order 1: Banzhaf, +-1/4
        >>> g[1, :, 1] * 4, g[1, :, 0] * 4
        (array([0., 1., 1., 1.]), array([-1., -1., -1.,  0.]))
        """
        if self.kind in ("fsii", "fbii"):
            return _weights_from_coefficients(self.kind, self.order, n).copy()
        if self.kind in MATRIX_BASES:
            # a pair: half the base's weight; a player: its own minus half of its n - 1 pairs', of which u - j hold
            # one more member of U than the player does
            g = self.base.coalition_weights(n)
            u = np.arange(n + 1)[:, None]
            j = np.arange(2)[None, :]
            out = np.zeros_like(g)
            out[2] = g[2] / 2.0
            out[1, :, :2] = g[1, :, :2] - 0.5 * (np.clip(u - j, 0, None) * g[2, :, 1:3]
                                                 + np.clip(n - 1 - u + j, 0, None) * g[2, :, 0:2])
            out[0] = g[0]
            return out
        k = self.order
        g = np.zeros((k + 1, n + 1, k + 1))
        u = np.arange(n + 1)[:, None]
        for s in range(k + 1):
            j = np.arange(s + 1)[None, :]
            t = u - j                                   # players of U outside S
            ok = (t >= 0) & (t <= n - s)
            sign = (-1.0) ** (s - j)
            g[s, :, : s + 1] = np.where(ok, sign * self._cardinal_p(n, s, np.where(ok, t, 0)), 0.0)
        return g

    def _cardinal_p(self, n: int, s: int, t: np.ndarray) -> np.ndarray:
        """``p_s(t)``: the weight of ``Delta_S v(T)`` (``|T| = t``, ``T`` outside ``S``) in ``I(S)``."""
        kind, k = self.kind, self.order
        if kind == "sii":
            return _sii_p(n, s, t)
        if kind == "bii":
            return np.full(t.shape, 0.5 ** (n - s))
        if kind == "moebius" or (kind == "stii" and s < k):
            return (t == 0).astype(float)
        if kind == "stii":
            return s / n * np.exp(-log_binom(n - 1, t))
        # k-SII(S) = sum_{R outside S, |R| <= k - s} B_|R| SII(S + R): Delta_{S+R} v(T') expands over R's members
        # in T; collect, for |T| = t, the weight of Delta_S v(T) from every R = (R & T) + (R - T)
        B = bernoulli_numbers(k + 1)
        out = np.zeros(t.shape)
        for r in range(0, k - s + 1):
            for a in range(0, r + 1):                   # a members of R inside T, r - a outside T
                # Delta_{S+R} v(T - R_in) = sum_{L subset R} (-1)^(r-|L|) Delta_S v(T - R_in + L); its term with
                # L & R_out empty and L & R_in = R_in is Delta_S v(T) with sign (-1)^(r - a)
                # count of R: C(t, a) C(n - s - t, r - a)
                with np.errstate(invalid="ignore"):
                    count = np.exp(log_binom(t, a) + log_binom(n - s - t, r - a))
                count = np.where((t >= a) & (n - s - t >= r - a), count, 0.0)
                out += B[r] * (-1.0) ** (r - a) * count * _sii_p(n, s + r, np.maximum(t - a, 0)) * (t >= a)
        return out


def _exact_coefficient(kind: str, k: int, s: int, t: int) -> Fraction:
    """``c(s, t)`` of the faithful indices as an exact fraction (the table of :meth:`InteractionIndex.coefficients`)."""
    if t < s:
        return Fraction(0)
    if t <= k:
        return Fraction(int(t == s))
    if kind == "fsii":
        return (-1) ** (k - s) * Fraction(s * math.comb(k, s) * math.comb(t - 1, k), (k + s) * math.comb(t + k - 1, k + s))
    return (-1) ** (k - s) * Fraction(math.comb(t - s - 1, k - s), 2 ** (t - s))


@lru_cache(maxsize=32)
def _weights_from_coefficients(kind: str, k: int, n: int) -> np.ndarray:
    """``g[s][u][j] = sum_{t >= w} C(n - w, t - w) c(s, t) (-1)^(t - u)``, ``w = u + s - j = |U + S|``: the weight of
    ``v(U)`` in ``I(S) = sum_{T >= S} c(s, |T|) m(T)`` (every ``T`` holding ``U`` and ``S``), summed in exact
    fractions (the terms alternate and cancel by many orders of magnitude)."""
    c = [[_exact_coefficient(kind, k, s, t) for t in range(n + 1)] for s in range(k + 1)]
    out = np.zeros((k + 1, n + 1, k + 1))
    for s in range(k + 1):
        for u in range(n + 1):
            for j in range(max(0, u + s - n), min(s, u) + 1):
                w = u + s - j
                total = sum((math.comb(n - w, t - w) * c[s][t] * (-1) ** ((t - u) % 2) for t in range(w, n + 1)),
                            Fraction(0))
                out[s, u, j] = float(total)
    return out


def _sii_p(n: int, s: int, t: np.ndarray) -> np.ndarray:
    """SII's weight ``(n - t - s)! t! / (n - s + 1)!`` of a derivative at ``|T| = t``: the Shapley weight of ``t``
    in a game of ``n - s + 1`` players (``S`` acting as one)."""
    t = np.asarray(t)
    ok = (t >= 0) & (t <= n - s)
    return np.where(ok, Semivalue.shapley().weights(n - s + 1)[np.where(ok, t, 0)], 0.0)


_NAME = re.compile(r"^\s*([a-z\-_öm]+)\s*(?:\(\s*(\d+)\s*\))?\s*$")


def resolve_interaction_index(index: str | InteractionIndex, order: int | None = None) -> InteractionIndex:
    """An :class:`InteractionIndex` from a name (``"k-sii"``, ``"fsii"``, ...; ``"k-sii(3)"`` carries its order)
    and ``order``.

    Examples
    --------
    >>> resolve_interaction_index("STII", 3).name
    'stii(3)'
    """
    if isinstance(index, InteractionIndex):
        if order is not None and order != index.order:
            raise ValueError(f"order={order!r} differs from the order of index {index.name!r}")
        return index
    if not isinstance(index, str):
        raise TypeError(f"index must be a name ({list(INTERACTION_INDEX_NAMES)}) or an InteractionIndex, "
                        f"got {type(index).__name__}")
    match = _NAME.match(index.lower())
    kind = None if match is None else _ALIASES.get(match.group(1), match.group(1))
    if kind not in INTERACTION_INDEX_NAMES and kind not in MATRIX_INDEX_NAMES:
        raise ValueError(f"index must be one of {list(INTERACTION_INDEX_NAMES) + list(MATRIX_INDEX_NAMES)}, "
                         f"got {index!r}")
    named = None if match.group(2) is None else int(match.group(2))
    if named is not None and order is not None and named != order:
        raise ValueError(f"order={order!r} differs from the order in index {index!r}")
    return InteractionIndex(kind, named if named is not None else (2 if order is None else order))


def subsets_up_to(n: int, order: int, min_order: int = 1) -> np.ndarray:
    """Every subset of ``range(n)`` with ``min_order..order`` members, by size then lexicographically, as rows of
    players padded with ``-1`` (shape ``(count, order)``).

    Examples
    --------
    >>> subsets_up_to(3, 2)
    array([[ 0, -1],
           [ 1, -1],
           [ 2, -1],
           [ 0,  1],
           [ 0,  2],
           [ 1,  2]])
    """
    blocks = []
    for s in range(min_order, min(order, n) + 1):
        combos = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), s)), dtype=np.int64,
                             count=math.comb(n, s) * s).reshape(-1, s) if s else np.zeros((1, 0), np.int64)
        blocks.append(np.pad(combos, ((0, 0), (0, order - s)), constant_values=-1))
    return np.concatenate(blocks) if blocks else np.zeros((0, order), np.int64)
