"""Samplers: what each estimator evaluates next. Pure array code on their own random streams; they never
call the game (an adaptive sampler reads the values seen so far)."""

from .adaptive import NeymanSizes
from .coalitions import CoalitionDesign
from .importance import LipschitzSizes, StepBatch, lipschitz_size_probabilities
from .marginals import IndependentCoalitions, MarginalBatch, MarginalPairs, WeightedCoalitions
from .permutations import (PermutationBatch, PermutationSampler, TruncatedPermutations, WalkBatch, Walks,
                           draw_permutations)

__all__ = ["CoalitionDesign", "NeymanSizes", "PermutationSampler",
           "PermutationBatch", "draw_permutations", "TruncatedPermutations", "WalkBatch", "Walks", "MarginalPairs", "MarginalBatch", "IndependentCoalitions",
           "WeightedCoalitions", "LipschitzSizes", "StepBatch", "lipschitz_size_probabilities"]
