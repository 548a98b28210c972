"""``fs.explain``'s argument table: every argument declared once (default, check, doc), checked before anything runs;
its docstring's parameters are written from it."""

from __future__ import annotations

from typing import Any

from .._core.arguments import Arguments, Option, check_client, check_progress
from ..games.imputers import Imputer
from ..games.model import IMPUTATIONS, LINKS
from ..indices.hierarchy import check_partition
from ..inputs.text import check_mask_token, check_tokenizer
from ..store.cache import cache_folder
from ..trees.links import MODEL_OUTPUTS
from .estimate import common_arguments

__all__ = ["EXPLAIN", "check_imputation"]


def _names(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise TypeError(f"feature_names must be a list of names, got {type(value).__name__}")
    return [str(v) for v in value]


def _partition_arg(value: Any) -> Any:
    return value if isinstance(value, str) and value in ("correlation", "sentences") else check_partition(value)


def check_imputation(value: Any) -> Any:
    """``imputation``: None, a name of :data:`~fairshare.games.model.IMPUTATIONS` or an Imputer.

    Examples
    --------
    >>> check_imputation("copula")
    'copula'
    """
    if value is None or isinstance(value, Imputer) or isinstance(value, str) and value in IMPUTATIONS:
        return value
    raise ValueError(f"imputation must be one of {list(IMPUTATIONS)} or a fairshare.games.imputers.Imputer, "
                     f"got {value!r}")


#: fs.explain's arguments (besides the model, the data, the background and the method's own options)
EXPLAIN = Arguments("explain", common_arguments() + (
    Option("n_jobs", None, "items (rows, texts, inputs) explained in parallel threads, the same values whatever "
           "their number", kind="int", minimum=1, none_ok=True),
    Option("client", None, "a dask.distributed.Client: one task per item (one item: its batches of coalitions on "
           "the cluster); a lost worker's tasks run again, every wait is bounded (dask setting fairshare.timeout)",
           check=check_client),
    Option("cache", None, "a folder keeping finished items and evaluated coalitions: an interrupted call with the "
           "same arguments resumes without calling the model again", check=cache_folder),
    Option("progress", True, "True for a bar over items, or progress(items done, items, None)", check=check_progress),
    Option("model_output", None, "what is explained: None (tree models: their raw output, as shap.TreeExplainer; "
           "other classifiers: predict_proba), raw (tree models), probability (the model's predict_proba; tree "
           "models: from their trees, with a background) or log_loss (of the labels y)",
           allowed=(None,) + MODEL_OUTPUTS),
    Option("y", None, "the labels of the rows of X, for model_output='log_loss'"),
    Option("link", "identity", "identity, or logit: a black box's averaged probabilities explained on the log-odds "
           "scale (as shap's KernelExplainer)", allowed=tuple(LINKS)),
    Option("imputation", None, "baseline (one background row), marginal (the average over the background) or "
           "conditional on the known features: conditional (= gaussian), gaussian, copula, empirical, or an Imputer",
           check=check_imputation),
    Option("groups", None, "lists of features (positions or names), each one player; inputs of more dimensions: "
           "'time', ('time', w) windows, 'features' channels or integer labels shaped like one input"),
    Option("partition", None, "index='owen': blocks of players (positions or names; nested lists: a hierarchy), or "
           "'correlation' (a hierarchy clustered from the background's feature correlations); texts: 'sentences'",
           check=_partition_arg),
    Option("tokenizer", None, "texts: None (words and punctuation), a regular expression whose matches are the "
           "tokens, or a callable text -> tokens", check=check_tokenizer),
    Option("mask_token", None, "texts: None deletes a removed token, a string replaces it", check=check_mask_token),
    Option("batch_size", None, "most model rows per call", kind="int", minimum=1, none_ok=True),
    Option("feature_names", None, "one name per feature (default: the columns of X)", check=_names),
    Option("interactions", None, "2 adds shap's pairwise interaction matrices per row (e.interactions, (rows, n, n"
           "[, k]), the same as fairshare.games.tree_interactions): half of each pair's SII (Banzhaf values: BII) "
           "off the diagonal, the rest of each value on it, rows summing to the values; from the values' own run of "
           "the pair index, so both stay within the budget (default: 2n + 2048, or twice the pairs' minimum when "
           "more); exact for trees; other indices: fs.interactions(game, index=...)", kind="int", minimum=2,
           maximum=2, none_ok=True),
))
