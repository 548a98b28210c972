"""fairshare: Shapley, Banzhaf and semivalue attributions with provably efficient estimators.

>>> import fairshare as fs
>>> g = fs.games.SOUMGame.random(10, n_terms=20, seed=0)
>>> exact = fs.exact(g, "shapley")
>>> approx = fs.estimate(g, "shapley", method="permutation", budget=500, seed=0)
>>> approx.n_evaluations <= 500
True
"""

from . import estimation, games, metrics, stopping
from .attribution import Attribution
from .datavalues import DataValues, value_data
from .estimate import estimate
from .estimation.evaluation import BudgetError
from .exact import exact
from .explain import explain
from .explanation import Explanation
from .game import Game
from .interaction_indices import InteractionIndex
from .interaction_values import Interactions
from .interactions import interactions
from .estimation.registry import methods
from .semivalues import Semivalue

__version__ = "0.1.0"


def __getattr__(name: str):
    """``fs.examples`` (Fisher kernels, prototypes, influence) is imported on first use, like ``fs.games``."""
    if name == "examples":
        import importlib

        return importlib.import_module(".examples", __name__)
    raise AttributeError(f"module 'fairshare' has no attribute {name!r}")

__all__ = ["Attribution", "BudgetError", "DataValues", "Explanation", "Game", "InteractionIndex", "Interactions",
           "Semivalue", "estimate", "exact", "explain", "games", "interactions", "methods", "metrics", "value_data"]
