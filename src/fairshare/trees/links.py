"""A tree model's output scales: the map from the trees' raw output (margin) to the model's own
``predict_proba``, found by checking it on rows, and the log loss of a label.

The trees give a margin per output (``TreeEnsemble.predict``); a classifier's probabilities are that margin
through the logistic function (one margin: binary; of twice the margin: scikit-learn's exponential loss), the
softmax (one margin per class), a logistic per output (several labels, or one class against the rest) or nothing
(scikit-learn's tree and forest classifiers average class fractions). Which one a model uses is not guessed from
its library: each candidate is tried on rows and kept only if it reproduces ``model.predict_proba`` to 1e-6.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit, softmax

__all__ = ["probability_link", "MODEL_OUTPUTS", "log_loss"]

#: the output scales a tree model can be explained on
MODEL_OUTPUTS = ("raw", "probability", "log_loss")


def _binary(margin: np.ndarray) -> np.ndarray:
    p = expit(margin[:, 0])
    return np.column_stack([1.0 - p, p])


_LINKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda raw: raw,
    "logistic": _binary,
    "softmax": lambda raw: softmax(raw, axis=1),
    # one logistic per output: several labels (xgboost, catboost's MultiLogloss) or one class against the rest
    # (lightgbm's multiclassova)
    "logistic per output": expit,
    "logistic of twice the margin": lambda raw: _binary(2.0 * raw),       # scikit-learn's exponential loss
}


def probability_link(model: Any, raw: np.ndarray, rows: Any) -> tuple[str, Callable[[np.ndarray], np.ndarray]]:
    """``(name, link)``: the map from the trees' raw output ``raw`` (rows, k) of ``rows`` to
    ``model.predict_proba(rows)``, the first of identity, logistic, softmax, a logistic per output and the logistic
    of twice the margin that reproduces it to 1e-6.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> X = np.random.default_rng(0).random((100, 3)); y = X[:, 0] > 0.5
    >>> model = GradientBoostingClassifier(n_estimators=5).fit(X, y)
    >>> probability_link(model, model.decision_function(X[:5])[:, None], X[:5])[0]
    'logistic'
    """
    if not callable(getattr(model, "predict_proba", None)):
        raise ValueError(f"model_output='probability' needs a classifier with predict_proba; "
                         f"{type(model).__name__} has none")
    want = np.asarray(model.predict_proba(rows), dtype=float)
    raw = np.asarray(raw, dtype=float)
    for name, link in _LINKS.items():
        if name.startswith("logistic") and (raw.shape[1] != 1) != (name == "logistic per output") or \
                name == "softmax" and raw.shape[1] < 2:
            continue
        got = link(raw)
        if got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6):
            return name, link
    raise ValueError(f"model_output='probability': no link (identity, logistic, softmax, logistic per output, logistic "
                     f"of twice the margin) maps the trees' output of "
                     f"{type(model).__name__} to its predict_proba; explain its raw output (model_output='raw') or "
                     "its predict_proba as a black box (explain(model.predict_proba, ...))")


def log_loss(probabilities: np.ndarray, label: int) -> np.ndarray:
    """``-log p[label]`` per row (probabilities clipped at 1e-15, as scikit-learn's log_loss).

    Examples
    --------
    >>> log_loss(np.array([[0.25, 0.75]]), 1).round(4)
    array([0.2877])
    """
    return -np.log(np.clip(probabilities[:, label], 1e-15, 1.0))
