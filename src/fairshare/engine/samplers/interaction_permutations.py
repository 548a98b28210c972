"""Permutations for interaction values (permutation sampling of SII and STII): the coalitions a permutation asks
for, written once over positions and read through each permutation.

A *template* lists, over the positions ``0..n-1`` of a permutation, the coalitions to evaluate (rows), the
position sets ``P`` whose discrete derivative ``Delta_P(T) = sum_{L <= P} (-1)^{|P| - |L|} v(T + L)`` a permutation
samples, and the signs that make each derivative from the rows' values (a sparse ``(J, R)`` matrix). A permutation
``pi`` turns position ``j`` into player ``pi[j]``; every permutation of a batch is read through the same template
with one fancy index, no loop over permutations.

- **SII** (the windows of Tsai et al.'s permutation sampling, as shapiq's ``PermutationSamplingSII``): every run
  of ``s = 1..k`` consecutive positions ``i..i+s-1`` with the positions before it as ``T``. The chance that a
  subset ``S`` falls in a window with exactly ``T`` before it is ``t! s! (n-s-t)! / n!``, proportional to SII's
  weight ``t! (n-s-t)! / (n-s+1)!``: the windows a subset falls in are independent draws of SII's distribution.
- **STII** (Sundararajan et al. 2020): every ``k``-subset ``P`` of positions with the positions before its first as
  ``T``; that ``T`` is distributed as the top order of STII weighs it, so each permutation gives every ``k``-subset
  one unbiased draw. The lower orders of STII are Moebius coefficients, known exactly from the coalitions of fewer
  than ``k`` players (proposed once, with the first permutations).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from ...indices.interactions import subsets_up_to
from ..protocols import History, Sampler, doubling

__all__ = ["PermutationTemplate", "permutation_template", "InteractionPermutationBatch", "InteractionPermutations",
           "lower_coalitions"]

_BLOCK_BOOLS = 1 << 26           # most booleans of coalition rows materialized per batch (64 MB)
#: most template entries (rows of derivatives) a permutation may ask for
MAX_TEMPLATE_TERMS = 4_000_000


@dataclass(frozen=True)
class PermutationTemplate:
    """What one permutation evaluates, over positions."""

    rows: np.ndarray             # (R, n) bool: the coalitions, over positions
    positions: np.ndarray        # (J, order) positions of each sampled subset, padded with -1
    signs: sp.csr_matrix         # (J, R): Delta of subset j = signs[j] @ values of the rows

    @property
    def cost(self) -> int:
        """New evaluations one permutation can cost (the empty and the grand coalition are known)."""
        inner = self.rows.any(axis=1) & ~self.rows.all(axis=1)
        return int(inner.sum())


def template_terms(kind: str, n: int, order: int) -> int:
    """Entries of the template of ``kind`` (``"sii"`` or ``"stii"``) before it is built: the work and memory one
    permutation takes.

    Examples
    --------
    >>> template_terms("sii", 16, 2), template_terms("stii", 16, 2)
    (92, 480)
    """
    if kind == "stii":
        return math.comb(n, order) * (1 << order)
    return sum((n - s + 1) * (1 << s) for s in range(1, min(order, n) + 1))


@lru_cache(maxsize=16)
def permutation_template(kind: str, n: int, order: int) -> PermutationTemplate:
    """The template of ``kind`` (``"sii"``: windows of 1..order consecutive positions; ``"stii"``: every
    ``order``-subset of positions after the positions before its first).

    Examples
    --------
    >>> t = permutation_template("sii", 4, 2)
    >>> t.positions.shape, t.cost                        # 4 singles + 3 pairs; prefixes and prefix + next
    ((7, 2), 6)
    >>> d = t.signs.toarray()[4]                          # the pair at positions (0, 1), no one before it
    >>> t.rows[d != 0].astype(int).tolist(), d[d != 0].tolist()
    ([[0, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0]], [1.0, -1.0, -1.0, 1.0])
    """
    pos = np.arange(n)
    blocks, windows = [], []
    if kind == "sii":
        for s in range(1, min(order, n) + 1):
            starts = np.arange(n - s + 1)
            windows.append(np.pad(starts[:, None] + np.arange(s)[None, :], ((0, 0), (0, order - s)),
                                  constant_values=-1))
    else:
        windows.append(subsets_up_to(n, order, order))
    P = np.concatenate(windows)                                               # (J, order) padded
    J = P.shape[0]
    sizes = (P >= 0).sum(axis=1)
    first = P[:, 0]
    rows, signs, owners = [], [], []
    for s in np.unique(sizes):
        js = np.flatnonzero(sizes == s)
        masks = np.array(list(itertools.product((0, 1), repeat=int(s))), dtype=bool)      # (2^s, s)
        prefix = pos[None, :] < first[js, None]                                           # (j, n)
        member = np.zeros((js.size, masks.shape[0], n), dtype=bool)
        for l in range(int(s)):
            hit = pos[None, :] == P[js, l][:, None]                                       # (j, n)
            member |= hit[:, None, :] & masks[None, :, l, None]
        blocks.append((prefix[:, None, :] | member).reshape(-1, n))
        signs.append(np.tile((-1.0) ** (s - masks.sum(axis=1)), js.size))
        owners.append(np.repeat(js, masks.shape[0]))
    X = np.concatenate(blocks)
    uniq, inverse = np.unique(X, axis=0, return_inverse=True)
    D = sp.csr_matrix((np.concatenate(signs), (np.concatenate(owners), inverse.ravel())), shape=(J, uniq.shape[0]))
    return PermutationTemplate(uniq, P, D)


def lower_coalitions(n: int, order: int) -> np.ndarray:
    """Every coalition of ``1..order-1`` players (STII's lower orders), ``(count, n)`` bool.

    Examples
    --------
    >>> lower_coalitions(3, 3).sum(axis=1).tolist()
    [1, 1, 1, 2, 2, 2]
    """
    subsets = subsets_up_to(n, order - 1, 1) if order > 1 else np.zeros((0, 1), np.int64)
    out = np.zeros((subsets.shape[0], n), dtype=bool)
    r, c = np.nonzero(subsets >= 0)
    out[r, subsets[r, c]] = True
    return out


@dataclass
class InteractionPermutationBatch:
    """Permutations, the coalitions to evaluate for them (first the ``extra`` rows of STII's lower orders, then
    each permutation's template rows) and nothing else."""

    perms: np.ndarray            # (t, n)
    coalitions: np.ndarray       # (extra + t R, n)
    extra: int
    n_draws: int
    fresh: bool = False


class InteractionPermutations(Sampler):
    """Uniform permutations read through a template (and, first, the ``lower`` coalitions once).

    Examples
    --------
    >>> s = InteractionPermutations(np.random.default_rng(0), 5, permutation_template("sii", 5, 2))
    >>> b = s.propose(3 * s.unit_cost, History())
    >>> b.perms.shape, b.coalitions.shape                 # 10 template rows each, the ends among them
    ((3, 5), (30, 5))
    """

    def __init__(self, rng: np.random.Generator, n_players: int, template: PermutationTemplate,
                 lower: np.ndarray | None = None) -> None:
        super().__init__(rng, n_players)
        self.template = template
        self.unit_cost = max(template.cost, 1)
        self.lower = np.zeros((0, n_players), bool) if lower is None else lower

    def schedule(self, total: int, rounds: bool) -> list[int]:
        first = self.lower.shape[0] + 2 * self.unit_cost
        return doubling(total, max(first, total // 16)) if rounds and total > 4 * first else [total]

    def propose(self, allowance: int, history: History) -> InteractionPermutationBatch | None:
        n = self.d
        extra = self.lower.shape[0]
        t = (allowance - extra) // self.unit_cost
        t = min(t, max(1, _BLOCK_BOOLS // max(self.template.rows.size, 1)))
        if t < 1:
            return None
        perms = np.argsort(self.rng.random((t, n)), axis=1)
        ranks = np.empty_like(perms)
        ranks[np.arange(t)[:, None], perms] = np.arange(n)[None, :]
        # player p joins row r of permutation m when its position ranks[m, p] is in the row
        X = self.template.rows[:, ranks].transpose(1, 0, 2).reshape(-1, n)
        if extra:
            X = np.concatenate([self.lower, X])
            self.lower = self.lower[:0]                 # proposed once
        return InteractionPermutationBatch(perms, X, extra, t)
