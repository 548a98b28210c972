"""Stopping rules for estimates (``fs.stopping``): ``RelativeError``, ``StandardError``, ``MaxEvaluations``,
``MaxTime`` and ``RankStable``, composed with ``|`` (either) and ``&`` (both). The rules live in the engine
(:mod:`fairshare.estimation.stopping`); this is their public name.

>>> import fairshare as fs
>>> rule = fs.stopping.RelativeError(0.05) | fs.stopping.MaxTime(60)
>>> rule
(RelativeError(0.05) | MaxTime(60))
"""

from .estimation.stopping import (MaxEvaluations, MaxTime, RankStable, RelativeError, StandardError,
                                  StoppingRule)

__all__ = ["MaxEvaluations", "MaxTime", "RankStable", "RelativeError", "StandardError", "StoppingRule"]
