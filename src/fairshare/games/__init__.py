"""Games: model-free set functions (FunctionGame), models (ModelGame, TreeGame, TorchGame), language models'
answers (GenerationGame), data valuation (DataGame, KNNGame), and synthetic games with known values."""

from .additive import AdditiveGame
from .data import DataGame
from .airport import AirportGame
from .function import FunctionGame
from .gaussian import GaussianLinearGame
from .generation import GenerationGame
from .distributed import DistributedGame
from .loss import LossGame
from .knn import KNNGame, knn_shapley
from .hastie import HastieClassificationGame, RadialGame
from .imputers import CopulaImputer, EmpiricalImputer, GaussianImputer, Imputer
from .model import ModelError, ModelGame
from .noisy import NoisyGame
from .restricted import RestrictedGame
from .symmetric import AdversarialGame, SymmetricGame
from .torch_game import TorchGame
from .tree import TreeGame, tree_values, tree_values_array
from .tree_interactions import tree_interactions
from .unanimity import SOUMGame, UnanimityGame, unanimity_share
from .voting import WeightedVotingGame

__all__ = [
    "AdditiveGame",
    "AdversarialGame",
    "AirportGame",
    "CopulaImputer",
    "EmpiricalImputer",
    "GaussianImputer",
    "GaussianLinearGame",
    "GenerationGame",
    "Imputer",
    "DataGame",
    "DistributedGame",
    "FunctionGame",
    "HastieClassificationGame",
    "KNNGame",
    "LossGame",
    "ModelError",
    "ModelGame",
    "NoisyGame",
    "RadialGame",
    "RestrictedGame",
    "SOUMGame",
    "SymmetricGame",
    "TorchGame",
    "TreeGame",
    "UnanimityGame",
    "WeightedVotingGame",
    "knn_shapley",
    "tree_interactions",
    "tree_values",
    "tree_values_array",
    "unanimity_share",
]
