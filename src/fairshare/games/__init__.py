"""Games: model-free set functions (FunctionGame), and synthetic games with known values."""

from .additive import AdditiveGame
from .airport import AirportGame
from .function import FunctionGame
from .distributed import DistributedGame
from .hastie import HastieClassificationGame, RadialGame
from .model import ModelGame
from .noisy import NoisyGame
from .restricted import RestrictedGame
from .symmetric import AdversarialGame, SymmetricGame
from .torch_game import TorchGame
from .tree import TreeGame, tree_values
from .unanimity import SOUMGame, UnanimityGame, unanimity_share
from .voting import WeightedVotingGame

__all__ = [
    "AdditiveGame",
    "AdversarialGame",
    "AirportGame",
    "DistributedGame",
    "FunctionGame",
    "HastieClassificationGame",
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
    "tree_values",
    "unanimity_share",
]
