"""fairshare: Shapley, Banzhaf and semivalue attributions with provably efficient estimators.

The package is a set of concept folders, each importing only those below it (``CONTRIBUTING.md``):
``_core`` < ``backends`` < ``indices`` < ``results`` < ``store`` < ``trees`` < ``games`` < ``engine`` <
``inputs`` < ``examples`` < ``doors`` < ``plots`` < ``cli``. This module is the public API.

>>> import fairshare as fs
>>> g = fs.games.SOUMGame.random(10, n_terms=20, seed=0)
>>> exact = fs.exact(g, "shapley")
>>> approx = fs.estimate(g, "shapley", method="permutation", budget=500, seed=0)
>>> approx.n_evaluations <= 500
True
"""

import sys as _sys

from . import games, plots
from ._core.errors import FairshareWarning
from .doors import metrics
from .doors.estimate import estimate
from .doors.exact import exact
from .doors.explain import explain
from .doors.global_importance import global_importance
from .doors.interactions import interactions
from .doors.value_data import DataValues, value_data
from .engine import stopping
from .engine.evaluation import BudgetError
from .engine.registry import methods
from .games.base import Game
from .indices.interactions import InteractionIndex
from .indices.semivalues import Semivalue
from .results.attribution import Attribution
from .results.explanation import Explanation
from .results.base import Result
from .results.interactions import Interactions

__version__ = "0.1.0"

# ``import fairshare.stopping`` and ``import fairshare.metrics`` keep working: the public modules' names
_sys.modules[__name__ + ".stopping"] = stopping
_sys.modules[__name__ + ".metrics"] = metrics


def __getattr__(name: str):
    """``fs.examples`` (Fisher kernels, prototypes, influence) is imported on first use, like ``fs.games``."""
    if name == "examples":
        import importlib

        return importlib.import_module(".examples", __name__)
    raise AttributeError(f"module 'fairshare' has no attribute {name!r}")


__all__ = ["Attribution", "BudgetError", "DataValues", "Explanation", "FairshareWarning", "Game", "InteractionIndex",
           "Interactions", "Result", "Semivalue", "estimate", "exact", "explain", "games", "global_importance", "interactions", "methods", "metrics",
           "plots", "stopping", "value_data"]
