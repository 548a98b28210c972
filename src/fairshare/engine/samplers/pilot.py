"""A paired design that looks at a share of its own pairs before it decides how to spend the rest of the budget.

Paired regression sees only the odd part of a game; an unpaired design with an even model of the products of two
players (kADDSHAP's design) lets every evaluation inform the odd part, at the price of the even part beyond order two
in its residual. Which one is more accurate depends on the game, and a pair shows both parts of the game at once
(``v(S) - v(N \\ S)`` and ``v(S) + v(N \\ S)``). So :class:`PilotDesign` draws the paired design for the whole
allowance, evaluates a random share of its pairs first (the *pilot*; the solver skips it), and asks ``decide`` (the
method's rule, given the pilot and its values) whether to go on:

- *paired*: the rest of the same design is evaluated (the pilot's values come back from the evaluator's memory), so
  the sample is the paired design's, bit for bit, as if there had been no pilot;
- *unpaired*: the rest of the budget goes to unpaired draws that continue the pilot's sample as one design without
  replacement: the unpaired design's count of coalitions of each size for the whole allowance (at least the pilot's
  own), the pilot's coalitions of that size and distinct new ones drawn uniformly from the others. Marginally the
  coalitions of a size are then a uniform sample of that count, each weighted by its level's size over the count
  (whole levels, such as the coalitions of one player, stay whole: weight 1).

No evaluation is spent on the look: the pilot's pairs are part of either sample. A design drawn in rounds (a stopping
rule or a progress callback), on a device, or that takes every coalition or whole size levels, runs without a pilot.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...store.coalitions import coalition_keys
from ..protocols import History
from .coalitions import CoalitionDesign
from .sample import CoalitionSample
from .sizes import size_log_counts
from .subsets import distinct_subsets, random_subsets
from .without_replacement import _counts_per_size, _inclusion_log_probabilities, _units

__all__ = ["PilotDesign", "subsample_units", "continue_unpaired"]

#: levels of at most this many coalitions are enumerated to draw new coalitions outside the pilot
_ENUMERATE = 50_000


def subsample_units(sample: CoalitionSample, keep: np.ndarray) -> CoalitionSample:
    """The units ``keep`` (a simple random sample of ``sample``'s units, drawn by the caller) as a sample of their own:
    each unit's inclusion probability times ``len(keep) / units``, so its weight over that and its finite-population
    factor ``1 - pi``.

    Examples
    --------
    >>> S = np.eye(4, dtype=bool)
    >>> s = CoalitionSample(S, np.zeros(4), np.array([0, 0, 1, 1]), np.zeros(4, int), np.zeros(4), 2, paired=True)
    >>> sub = subsample_units(s, np.array([1]))
    >>> sub.coalitions.shape, sub.weight.tolist(), sub.fpc.tolist()
    ((2, 4), [2.0, 2.0], [0.5, 0.5])
    """
    units = np.unique(sample.unit)
    share = keep.size / units.size
    rows = np.flatnonzero(np.isin(sample.unit, keep))
    fpc = 1.0 - (1.0 - sample.fpc[rows]) * share
    return CoalitionSample(sample.coalitions[rows], sample.log_weight[rows] - np.log(share), sample.unit[rows],
                           sample.stratum[rows], fpc, int(keep.size), sample.paired, "random")


def _size_counts(rng: np.random.Generator, d: int, log_q: np.ndarray, rows: int, counts: str) -> np.ndarray:
    """Coalitions of each size ``0..d`` that the unpaired design without replacement takes for ``rows`` rows."""
    log_c = size_log_counts(d, log_q)
    h, log_units, log_mass = _units(d, log_q, log_c, False)
    log_pi = _inclusion_log_probabilities(log_units, log_mass, np.zeros(h.size, dtype=bool), float(rows))
    n_h, _ = _counts_per_size(rng, log_pi, log_units, rows, counts)
    out = np.zeros(d + 1, dtype=np.int64)
    out[h] = n_h
    return out


def _new_of_size(rng: np.random.Generator, d: int, h: int, count: int, taken: np.ndarray) -> np.ndarray:
    """``count`` distinct uniform coalitions of size ``h`` outside ``taken`` (their keys): a small level enumerated and
    chosen from, a large one drawn at random with repeats and taken ones drawn again."""
    if count == 0:
        return np.zeros((0, d), dtype=bool)
    if math.comb(d, h) <= _ENUMERATE:
        level = distinct_subsets(rng, d, h, math.comb(d, h))
        free = level[~np.isin(coalition_keys(level), taken)]
        return free[np.sort(rng.choice(free.shape[0], size=count, replace=False))]
    out = np.zeros((0, d), dtype=bool)
    while out.shape[0] < count:
        more = np.concatenate([out, random_subsets(rng, d, np.full(count - out.shape[0], h))])
        keys = coalition_keys(more)
        _, first = np.unique(keys, return_index=True)
        first = np.sort(first)
        out = more[first[~np.isin(keys[first], taken)]]
    return out


def continue_unpaired(rng: np.random.Generator, d: int, log_q: np.ndarray, pilot: CoalitionSample,
                      rest: int, counts: str = "systematic") -> CoalitionSample:
    """The pilot's pairs and at most ``rest`` new coalitions as one unpaired design without replacement (module
    docstring): per size, the unpaired design's count for all the rows (at least the pilot's), the new ones
    distinct from the pilot's and uniform among the others; every row weighted by its level's size over the count.

    Examples
    --------
    >>> from fairshare.engine.samplers.sizes import shapley_size_log_mass
    >>> from fairshare.engine.samplers.without_replacement import sample_without_replacement
    >>> q = shapley_size_log_mass(8, "leverage")
    >>> pilot = sample_without_replacement(np.random.default_rng(0), 8, q, 20)
    >>> s = continue_unpaired(np.random.default_rng(1), 8, q, pilot, 80)
    >>> s.n_rows, s.paired, len({r.tobytes() for r in s.coalitions})
    (120, False, 120)
    """
    a_h = np.bincount(pilot.sizes, minlength=d + 1)
    c_h = np.maximum(_size_counts(rng, d, log_q, pilot.n_rows + rest, counts), a_h)
    b_h = c_h - a_h
    while b_h.sum() > rest:                                 # a pilot above the design's count somewhere: trim the rest
        b_h[int(np.argmax(b_h))] -= 1
    c_h = a_h + b_h
    taken = coalition_keys(pilot.coalitions)
    new = np.concatenate([_new_of_size(rng, d, h, int(b_h[h]), taken) for h in range(d + 1)])
    S = np.concatenate([pilot.coalitions, new])
    sizes = S.sum(axis=1)
    log_level = size_log_counts(d, log_q)[sizes]
    log_c = np.log(c_h[sizes].astype(float))
    _, pilot_unit = np.unique(pilot.unit, return_inverse=True)
    unit = np.concatenate([pilot_unit, pilot_unit.max(initial=-1) + 1 + np.arange(new.shape[0])])
    fpc = np.clip(-np.expm1(log_c - log_level), 0.0, 1.0)
    coverage = "all" if np.all(fpc == 0.0) else "random"
    return CoalitionSample(S, log_level - log_c, unit, sizes, fpc, int(S.shape[0]), False, coverage)


class PilotDesign(CoalitionDesign):
    """The paired design of :class:`CoalitionDesign` with a pilot of ``pilot_share`` of its pairs and a switch to
    unpaired draws where ``decide(pilot, values, history, rest) -> bool`` says so (``rest``: the evaluations the
    paired design has left) (see the module docstring).

    Examples
    --------
    >>> from fairshare.engine.samplers.sizes import shapley_size_log_mass
    >>> q = shapley_size_log_mass(8, "leverage")
    >>> s = PilotDesign(np.random.default_rng(0), 8, q, decide=lambda *a: True, pilot_share=0.5)
    >>> h = History()
    >>> first = s.propose(120, h)
    >>> first.pilot, first.n_rows
    (True, 60)
    """

    def __init__(self, rng: np.random.Generator, n_players: int, log_q: np.ndarray, *,
                 decide: Callable[[CoalitionSample, np.ndarray, History, int], bool], pilot_share: float,
                 counts: str = "systematic", complete: bool | str = False) -> None:
        super().__init__(rng, n_players, log_q, replacement=False, paired=True, counts=counts, complete=complete)
        self.decide, self.share = decide, float(pilot_share)
        self.stage, self.full, self.pilot = "start", None, None

    def schedule(self, total: int, rounds: bool) -> list[int]:
        if rounds:
            self.stage = "plain"                   # rounds pool as a mixture anyway: the paired design throughout
        return super().schedule(total, rounds)

    def propose(self, allowance: int, history: History) -> CoalitionSample | None:
        if self.stage == "plain":
            return super().propose(allowance, history)
        if self.stage == "start":
            full = super().propose(allowance, history)
            units = np.unique(full.unit) if full is not None else np.zeros(0)
            if full is None or full.coverage != "random" or units.size < 4:
                self.stage = "plain"
                return full
            self.full, self.stage = full, "pilot"
            keep = np.sort(self.rng.choice(units, size=max(2, int(round(self.share * units.size))), replace=False))
            self.pilot = subsample_units(full, keep)
            self.pilot.pilot = True
            return self.pilot
        if self.stage == "pilot":
            values = np.asarray(history.values[-1], dtype=float)
            rest = self.full.n_rows - self.pilot.n_rows
            self.stage = "done"
            if not self.decide(self.pilot, values, history, rest):
                return self.full                   # the rest of the design; the pilot's values are remembered
            self.paired, self.unit_cost = False, 1
            return continue_unpaired(self.rng, self.d, self.log_q, self.pilot, rest, self.counts)
        return None

    @property
    def switched(self) -> bool:
        """Whether the rest of the budget went to unpaired draws."""
        return not self.paired
