"""Samplers: what each estimator evaluates next. Pure array code on their own random streams; they never
call the game (an adaptive sampler reads the values seen so far).

- coalition designs: :mod:`.sizes` (size distributions, counts per size), :mod:`.subsets` and :mod:`.floyd`
  (uniform subsets of given sizes), :mod:`.with_replacement`, :mod:`.without_replacement` (the draws, as a
  :class:`.sample.CoalitionSample`), :mod:`.coalitions` and :mod:`.adaptive` (the samplers over them);
- :mod:`.permutations`, :mod:`.interaction_permutations` (orders and walks), :mod:`.marginals` (pairs
  ``(S, S + i)`` and independent coalitions), :mod:`.importance` (sizes for projected SGD).
"""

from .adaptive import NeymanSizes
from .coalitions import CoalitionDesign
from .importance import LipschitzSizes, StepBatch, lipschitz_size_probabilities
from .marginals import IndependentCoalitions, MarginalBatch, MarginalPairs, WeightedCoalitions
from .permutations import (PermutationBatch, PermutationSampler, TruncatedPermutations, WalkBatch, Walks,
                           draw_permutations)
from .sample import CoalitionSample
from .sizes import DISTRIBUTIONS, shapley_size_log_mass
from .subsets import distinct_subsets, random_subsets
from .with_replacement import sample_with_replacement
from .without_replacement import sample_without_replacement

__all__ = ["CoalitionDesign", "NeymanSizes", "PermutationSampler",
           "PermutationBatch", "draw_permutations", "TruncatedPermutations", "WalkBatch", "Walks", "MarginalPairs",
           "MarginalBatch", "IndependentCoalitions", "WeightedCoalitions", "LipschitzSizes", "StepBatch",
           "lipschitz_size_probabilities", "CoalitionSample", "DISTRIBUTIONS", "shapley_size_log_mass",
           "distinct_subsets", "random_subsets", "sample_with_replacement", "sample_without_replacement"]
