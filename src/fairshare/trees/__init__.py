"""Tree ensembles: one flat representation read from every library, root-to-leaf paths, exact semivalues."""

from .ensemble import TreeEnsemble
from .inputs import tree_rows
from .paths import LeafPaths, leaf_paths
from .prepared import Prepared, forget, prepared
from .readers import is_tree_model, read_ensemble
from .values import leaf_semivalues, path_weights

__all__ = ["TreeEnsemble", "read_ensemble", "is_tree_model", "tree_rows", "prepared", "forget", "Prepared", "LeafPaths",
           "leaf_paths", "leaf_semivalues", "path_weights"]
