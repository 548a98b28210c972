"""What a tree game's rows, features and outputs are called and how many: the classes or labels a probability output
has, the label a log loss reads, the background rows the probability link is found on, and the names of the rows and
of the features."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.tables import aligned, model_columns
from ..trees.ensemble import TreeEnsemble
from ..trees.readers import library_rows

__all__ = ["class_outputs", "link_rows", "row_names", "feature_labels"]

_LINK_ROWS = 20            # background rows the probability link is found on


def link_rows(background: Any, ens: TreeEnsemble) -> Any:
    """The first background rows as the model's ``predict_proba`` takes them, to find the link of its probabilities
    on: a frame's columns in the model's order (a one-row Series as a one-row frame), a tree library's container
    read as rows, a sparse matrix's first rows (sparse, as the model reads them), else the rows as given.

    Examples
    --------
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> link_rows(pd.Series({"b": 1.0, "a": 2.0}), SimpleNamespace(feature_names=["a", "b"])).values.tolist()
    [[2.0, 1.0]]
    """
    own = library_rows(background, "background")
    rows = own if own is not None else background
    if hasattr(rows, "to_frame") and hasattr(rows, "index") and not hasattr(rows, "columns"):       # a Series: a row
        import pandas as pd

        rows = pd.DataFrame([rows.to_numpy()], columns=list(rows.index), index=[rows.name]).infer_objects()
    if hasattr(rows, "columns") and hasattr(rows, "iloc"):
        if ens.feature_names is not None:
            rows = aligned(rows, ens.feature_names, "background", "the model's features")
        return rows.iloc[:_LINK_ROWS]
    if hasattr(rows, "tocsr") and hasattr(rows, "nnz"):          # scipy.sparse: its rows, as the model reads them
        return rows.tocsr()[:_LINK_ROWS]
    return np.atleast_2d(np.asarray(rows))[:_LINK_ROWS]


def class_outputs(model: Any, ens: TreeEnsemble, model_output: str, y: Any) -> tuple[int, int | None]:
    """``(n_outputs, label)`` of a tree game on ``model_output`` ``"probability"`` (one output per output of the
    trees: a class, or a label of a multi-label classifier; two for one margin) or ``"log_loss"`` (one output;
    ``y``'s position among the model's ``classes_``), without a model call; ``y`` not a class, or a log loss of a
    multi-label classifier (whose labels are no classes of one probability), is refused.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> class_outputs(SimpleNamespace(classes_=["a", "b", "c"]), None, "log_loss", "c")
    (0, 2)
    """
    if ens is not None and ens.no_probability:
        raise ValueError(f"model_output={model_output!r}: the {type(model).__name__}'s {ens.no_probability}, no "
                         "probability; explain its margin (model_output='raw'), or its predict_proba as a black box")
    found = getattr(model, "classes_", None)
    if ens is not None and ens.n_outputs > 1:
        k = ens.n_outputs
    else:
        k = len(found) if found is not None else 2
    if model_output == "probability":
        return k, None
    if ens is not None and ens.labels:
        raise ValueError(f"model_output='log_loss' reads the probability of y's class, but the "
                         f"{type(model).__name__} is a multi-label classifier (one probability of its own per each "
                         f"of its {k} labels, none of them a class); explain model_output='probability' (one value "
                         "per label)")
    classes = [c.item() if hasattr(c, "item") else c for c in (found if found is not None else range(k))]
    y = y.item() if hasattr(y, "item") else y
    if y not in classes:
        raise ValueError(f"y must be one of the model's classes {classes}, got {y!r}")
    return 0, classes.index(y)


def row_names(X: Any) -> list | None:
    """The names of the rows of ``X``: a DataFrame's index, a Series' name (one row; None when it has none), else
    None (positions).

    Examples
    --------
    >>> import pandas as pd
    >>> row_names(pd.Series([1.0, 2.0], index=["a", "b"], name=7)), row_names(pd.DataFrame({"a": [1.0]}, index=[3]))
    ([7], [3])
    """
    if hasattr(X, "columns") and hasattr(X, "index"):
        return list(X.index)
    if hasattr(X, "to_frame") and hasattr(X, "index"):                 # a Series is one row: its name names it
        return None if X.name is None else [X.name]
    return None


def feature_labels(model: Any, X: Any) -> list[str] | None:
    """The names of a tree model's features as the rows name them: a frame's columns matched to the model's own names
    (lightgbm keeps ``"mean radius"`` as ``"mean_radius"``: the frame's spelling, as ``fs.explain`` gives it), else
    the model's names, else a frame's columns, else None.

    Examples
    --------
    >>> import pandas as pd, lightgbm as lgb
    >>> X = pd.DataFrame({"mean radius": [0.0, 1.0, 2.0, 3.0] * 10, "b": [1.0, 0.0, 1.0, 0.0] * 10})
    >>> model = lgb.LGBMRegressor(n_estimators=2, min_child_samples=2, verbose=-1).fit(X, X["mean radius"])
    >>> model.feature_name_, feature_labels(model, X[["b", "mean radius"]])
    (['mean_radius', 'b'], ['mean radius', 'b'])
    """
    names, source = model_columns(model)
    if not (hasattr(X, "columns") and hasattr(X, "iloc")):
        return names
    if names is None:
        return [str(c) for c in X.columns]
    try:
        return [str(c) for c in aligned(X, names, "X", source).columns]
    except ValueError:                             # refused where the rows are read, naming both lists
        return names
