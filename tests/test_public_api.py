"""Every public import that worked before the house moved into folders still works (issue 36): ``fairshare``,
``fairshare.games``, ``fairshare.examples``, ``fairshare.stopping``, ``fairshare.metrics``, the command line."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

#: the public names as they were before the move
BEFORE = {
    "fairshare": ["Attribution", "BudgetError", "DataValues", "Explanation", "Game", "InteractionIndex", "Interactions",
                  "Semivalue", "estimate", "exact", "explain", "games", "interactions", "methods", "metrics",
                  "value_data", "stopping", "examples"],
    "fairshare.games": ["AdditiveGame", "AdversarialGame", "AirportGame", "CopulaImputer", "EmpiricalImputer",
                        "GaussianImputer", "GaussianLinearGame", "Imputer", "DataGame", "DistributedGame",
                        "FunctionGame", "HastieClassificationGame", "KNNGame", "ModelError", "ModelGame", "NoisyGame",
                        "RadialGame", "RestrictedGame", "SOUMGame", "SymmetricGame", "TorchGame", "TreeGame",
                        "UnanimityGame", "WeightedVotingGame", "knn_shapley", "tree_interactions", "tree_values",
                        "unanimity_share"],
    "fairshare.examples": ["fisher_embedding", "FisherKernel", "LinearKernel", "RBFKernel", "as_kernel",
                           "select_prototypes", "Prototypes", "influence", "self_influence", "rank_mislabeled"],
    "fairshare.stopping": ["MaxEvaluations", "MaxTime", "RankStable", "RelativeError", "StandardError",
                           "StoppingRule"],
    "fairshare.metrics": ["relative_squared_error", "top_features", "cayley_distance", "spearman", "objective_error",
                          "insertion_auc", "deletion_auc"],
    "fairshare.cli": ["main"],
}


@pytest.mark.parametrize("module", sorted(BEFORE))
def test_every_public_name_is_where_it_was(module):
    imported = importlib.import_module(module)
    missing = [name for name in BEFORE[module] if not hasattr(imported, name)]
    assert not missing, missing


def test_the_public_modules_import_by_their_old_paths():
    import fairshare as fs
    import fairshare.metrics
    import fairshare.stopping
    from fairshare.stopping import RelativeError

    assert fairshare.stopping is fs.stopping and fairshare.metrics is fs.metrics
    assert repr(RelativeError(0.05) | fs.stopping.MaxTime(60)) == "(RelativeError(0.05) | MaxTime(60))"


@pytest.mark.parametrize("command", [["-m", "fairshare", "methods"], ["-m", "fairshare.cli", "methods"]])
def test_the_command_line_runs_by_both_names(command):
    result = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "permutation" in result.stdout
