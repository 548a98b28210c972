"""``fs.explain``'s argument table: every argument declared once (default, check, doc), checked before anything runs;
its docstring's parameters are written from it."""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from .._core.arguments import Arguments, Option, check_progress, check_unique_names
from ..backends.clients import check_client
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
    return check_unique_names([str(v) for v in value], "feature_names")


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


def _batch_size(value: Any) -> Any:
    if value is None or value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"batch_size must be a positive integer or 'auto', got {value!r}")
    if value < 1:
        raise ValueError(f"batch_size must be >= 1 or 'auto', got {value!r}")
    return int(value)


def _baseline(value: Any) -> Any:
    if value is None or isinstance(value, str) and value in ("blur", "mean"):
        return value
    if isinstance(value, str) or isinstance(value, bool) or not (isinstance(value, numbers.Real) or
                                                                 hasattr(value, "shape")):
        raise ValueError(f"baseline must be 'blur', 'mean', a number, one image or a batch of images, got {value!r}")
    if isinstance(value, numbers.Real) and not np.isfinite(value):
        raise ValueError(f"baseline must be finite, got {value!r}")
    return value


def _index(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0


def _output(value: Any) -> Any:
    if value is None or value == "top" or _index(value):
        return value if not _index(value) else int(value)
    if isinstance(value, (list, tuple)) and value and all(_index(j) for j in value) and len(set(value)) == len(value):
        return [int(j) for j in value]
    raise ValueError(f"output must be an output's index (>= 0), a list of distinct indices or 'top', got {value!r}")


def _patch_size(value: Any) -> Any:
    sizes = value if isinstance(value, tuple) else (value,)
    if value is None:
        return None
    if len(sizes) not in (1, 2) or not all(_index(v) and v >= 1 for v in sizes):
        raise ValueError(f"patch_size must be a number of pixels >= 1 or (height, width), got {value!r}")
    return int(sizes[0]) if len(sizes) == 1 else (int(sizes[0]), int(sizes[1]))


def _sigma(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"sigma must be a number of pixels > 0, got {value!r}")
    return float(value)


def _slic(value: Any) -> Any:
    from ..inputs.image_parts import SLIC_PARAMETERS

    if value is None:
        return None
    if not isinstance(value, dict):
        raise TypeError(f"slic must be a dict of scikit-image SLIC parameters, got {type(value).__name__}")
    unknown = sorted(set(value) - set(SLIC_PARAMETERS))
    if unknown:
        raise ValueError(f"slic: unknown SLIC parameter(s) {unknown}; known: {list(SLIC_PARAMETERS)}")
    return dict(value)


def check_jobs(value: Any) -> int | None:
    """``n_jobs``: threads, at least 1, or -1 for one per core (joblib's, scikit-learn's and shap's convention).

    Examples
    --------
    >>> check_jobs(2), check_jobs(-1) == (os.cpu_count() or 1)
    (2, True)
    >>> check_jobs(0)
    Traceback (most recent call last):
    ...
    ValueError: n_jobs must be >= 1, or -1 for one thread per core, got 0
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"n_jobs must be an integer, got {value!r}")
    if value == -1:
        return os.cpu_count() or 1
    if value < 1:
        raise ValueError(f"n_jobs must be >= 1, or -1 for one thread per core, got {value!r}")
    return int(value)


#: fs.explain's arguments (besides the model, the data, the background and the method's own options)
EXPLAIN = Arguments("explain", common_arguments() + (
    Option("n_jobs", None, "items (rows, texts, inputs) explained in parallel threads, the same values whatever "
           "their number; -1: one per core (an integer >= 1, or -1, or None)", check=check_jobs),
    Option("client", None, "a dask.distributed.Client, a pyspark SparkSession (or SparkContext) or the ray module "
           "after ray.init(): items in tasks (one item: its batches of coalitions on the cluster), the local values "
           "bit for bit; a lost worker's tasks run again, every wait is bounded (dask setting fairshare.timeout)",
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
           "'time', ('time', w) windows, 'features' channels or integer labels shaped like one input; images: "
           "'patches' (of patch_size), 'superpixels' (SLIC, per image), integer labels of pixels (H, W) or per image "
           "(N, H, W); None: every element"),
    Option("partition", None, "index='owen': blocks of players (positions or names; nested lists: a hierarchy), or "
           "'correlation' (a hierarchy clustered from the background's feature correlations); texts: 'sentences'",
           check=_partition_arg),
    Option("tokenizer", None, "texts: None (words and punctuation), a regular expression whose matches are the "
           "tokens, or a callable text -> tokens", check=check_tokenizer),
    Option("mask_token", None, "texts: None deletes a removed token, a string replaces it", check=check_mask_token),
    Option("batch_size", None, "most model rows per call; torch models: 'auto' fits the device's free memory (on "
           "a GPU; the CPU: a fixed number of input elements)", check=_batch_size),
    Option("feature_names", None, "one name per feature (default: the columns of X)", check=_names),
    Option("interactions", None, "2 adds shap's pairwise interaction matrices per row (e.interactions, (rows, n, n"
           "[, k]), the same as fairshare.games.tree_interactions): half of each pair's SII (Banzhaf values: BII) "
           "off the diagonal, the rest of each value on it, rows summing to the values; from the values' own run of "
           "the pair index, so both stay within the budget (default: 2n + 2048, or twice the pairs' minimum when "
           "more); exact for trees; other indices: fs.interactions(game, index=...)", kind="int", minimum=2,
           maximum=2, none_ok=True),
    Option("layout", None, "images: None or 'NCHW' for (N, C, H, W), 'NHWC' for channels last (arrays from image "
           "files)", allowed=(None, "NCHW", "NHWC")),
    Option("baseline", None, "images: what absent pixels take: 'blur' (each image blurred, a Gaussian of sigma "
           "pixels), 'mean' (each image's mean colour), a number, one image, or a batch of background images "
           "averaged over (the same as background=)", check=_baseline),
    Option("output", None, "images: the output explained: None (all), an index, a list of indices, or 'top' (each "
           "image's predicted class); checked against the model's last linear layer before any call",
           check=_output),
    Option("patch_size", None, "images, groups='patches': the patches' size in pixels, or (height, width); default "
           "at most 8 x 8 patches", check=_patch_size),
    Option("sigma", None, "images, baseline='blur': the Gaussian's sigma in pixels (default min(H, W) / 16, at "
           "least 1)", check=_sigma),
    Option("slic", None, "images, groups='superpixels': scikit-image SLIC parameters (default n_segments=50, "
           "compactness=10)", check=_slic),
))
