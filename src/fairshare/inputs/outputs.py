"""What a table's model output is: checked against the model (raw, probability, log loss, a link) before any call,
the labels of a log loss, and how the result describes the output it explains."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.tables import target_of

__all__ = ["check_outputs", "labels_of", "describe_output"]


def check_outputs(model: Any, tree: bool, unread: str | None, model_output: str | None, link: str, y: Any,
                  background: Any) -> None:
    """Refuse an output the model cannot give: a link for trees or log losses, ``raw`` of a black box, a
    probability of a model without ``predict_proba``, a log loss without labels (or labels without one), a tree's
    probability without a background.

    Examples
    --------
    >>> check_outputs(len, False, None, "raw", "identity", None, [[0.0]])
    Traceback (most recent call last):
    ...
    ValueError: model_output='raw' is the raw output of a tree model's trees; this model is explained as a black box (its predict_proba or predict): leave model_output=None
    """
    if link != "identity" and (tree or model_output == "log_loss"):
        raise ValueError(f"link={link!r} applies to a black box's averaged probabilities; "
                         + ("a tree model's scale is model_output ('raw': its margin)" if tree else
                            "the log loss is no probability"))
    if model_output == "raw" and not tree and unread is None:
        raise ValueError("model_output='raw' is the raw output of a tree model's trees; this model is explained "
                         "as a black box (its predict_proba or predict): leave model_output=None")
    if model_output in ("probability", "log_loss") and not callable(getattr(model, "predict_proba", None)):
        raise ValueError(f"model_output={model_output!r} needs a classifier with predict_proba; "
                         f"{type(model).__name__} has none")
    if (model_output == "log_loss") != (y is not None):
        raise ValueError("y (one label per row of X) is required for model_output='log_loss' and only used there")
    if tree and model_output in ("probability", "log_loss") and background is None:
        raise ValueError(f"model_output={model_output!r} of a tree model is defined with a background "
                         "(interventional); pass background rows")


def labels_of(model: Any, y: Any, n_rows: int) -> list | None:
    """The labels ``y`` of the rows, one per row and each a class of the model (for the log loss), or None.

    Examples
    --------
    >>> labels_of(None, [0, 1], 2)
    [0, 1]
    """
    if y is None:
        return None
    labels = list(np.asarray(y).ravel()) if np.ndim(y) else [y]
    if len(labels) != n_rows:
        raise ValueError(f"y must hold one label per row of X ({n_rows}), got {len(labels)}")
    classes = [c.item() if hasattr(c, "item") else c for c in getattr(model, "classes_", [])]
    labels = [v.item() if hasattr(v, "item") else v for v in labels]
    bad = [v for v in labels if classes and v not in classes]
    if bad:
        raise ValueError(f"y must hold classes of the model {classes}, got {bad[0]!r}")
    return labels


def describe_output(model: Any, tree: bool, unread: str | None, model_output: str | None, predict: Any,
                    labels: list | None, link: str, background: Any, imputation: Any) -> dict:
    """What a result's ``info`` says of the output explained and the imputation.

    Examples
    --------
    >>> describe_output(len, False, None, None, len, None, "identity", [[0.0]], "marginal")
    {'model_output': 'len', 'imputation': 'marginal'}
    """
    if tree:
        out = {"probability": "probability (the model's predict_proba, from its trees)",
               "log_loss": "log_loss (of the labels y)"}.get(model_output, "raw (the trees' margin or prediction)")
        return {"model_output": out, "tree_mode": "path-dependent" if background is None else "interventional"}
    if unread is not None:
        out = {"probability": "probability (the model's predict_proba)", "log_loss": "log_loss (of the labels y)"}
        return {"model_output": out.get(model_output, "raw (the model's own raw output, what its trees sum to)") +
                ", through the model's own predictions: " + unread, "tree_mode": "interventional",
                "imputation": imputation}
    target = target_of(model)
    output = getattr(predict, "__name__", "the function")
    described = f"{type(target).__name__}.{output}" if target is not model or hasattr(model, "predict") else output
    if labels is not None:
        described = f"log_loss of {described}"
    elif link != "identity":
        described = f"{link} of the mean of {described}"
    return {"model_output": described, "imputation": imputation}
