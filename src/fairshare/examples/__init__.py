"""Example-based attribution: which training points are responsible for a set of predictions.

Fisher-kernel embeddings of a fitted model, Sequential Bayesian Quadrature prototypes (greedy,
stochastic, distributed) and Koh and Liang influence functions (Khanna et al., "Interpreting
Black Box Predictions using Fisher Kernels").
"""

from .fisher import fisher_embedding
from .influence import influence, rank_mislabeled, self_influence
from .kernels import FisherKernel, LinearKernel, RBFKernel, as_kernel
from .prototypes import Prototypes, select_prototypes

__all__ = ["fisher_embedding", "FisherKernel", "LinearKernel", "RBFKernel", "as_kernel", "select_prototypes",
           "Prototypes", "influence", "self_influence", "rank_mislabeled"]
