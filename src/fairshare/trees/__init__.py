"""Tree ensembles: one flat representation, root-to-leaf paths, exact semivalues."""

from .ensemble import TreeEnsemble, read_ensemble
from .paths import LeafPaths, leaf_paths
from .values import leaf_semivalues, path_weights

__all__ = ["TreeEnsemble", "read_ensemble", "LeafPaths", "leaf_paths", "leaf_semivalues", "path_weights"]
