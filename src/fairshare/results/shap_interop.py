"""shap interop: an :class:`~fairshare.results.explanation.Explanation` as a ``shap.Explanation`` and back, so
shap's plots take our results and our plots and files take shap's (shap stays optional: imported only here, only
when asked)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["to_shap", "from_shap"]


def _shap() -> Any:
    try:
        import shap
    except ImportError as exc:
        raise ImportError("to_shap needs shap: pip install shap (fairshare does not need it otherwise)") from exc
    return shap


def to_shap(e: Any) -> Any:
    """``e`` as a ``shap.Explanation``: its values, ``base_values`` (one per row), ``data``, ``feature_names``,
    ``output_names``, the row names as ``instance_names`` and the standard errors as ``error_std`` (copies: what is
    done to one result leaves the other as it was).

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda X: X.sum(axis=1), np.ones((2, 3)), np.zeros((1, 3)), progress=False)
    >>> s = to_shap(e)
    >>> type(s).__name__, s.values.shape, s.base_values.tolist(), s.feature_names
    ('Explanation', (2, 3), [0.0, 0.0], ['x0', 'x1', 'x2'])
    """
    shap = _shap()
    data = None if e.data is None else np.array(e.data)
    if data is not None and data.shape[:2] != e.values.shape[:2]:
        data = None
    return shap.Explanation(values=np.array(e.values), base_values=np.array(e.base_values), data=data,
                            feature_names=list(e.player_names), output_names=e.output_names,
                            instance_names=list(e.row_names),
                            error_std=None if e.stderr is None else np.array(e.stderr))


def _one_feature(explanation: Any) -> bool:
    """Whether ``explanation`` is shap's slice of one feature (``shap_explanation[:, "age"]``, ``[:, 2]``): its
    ``feature_names`` is that feature's name, and its values have no axis of features."""
    return isinstance(explanation.feature_names, str)


def _values(explanation: Any) -> np.ndarray:
    raw = explanation.values
    try:
        values = np.array(raw, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("shap_explanation: its values are ragged (texts of different lengths?); convert one row "
                         "at a time, Explanation.from_shap(shap_explanation[i])") from None
    if _one_feature(explanation):                # rows (or one row: its data is one value), then outputs
        one_row = explanation.data is not None and np.ndim(explanation.data) == 0 or values.ndim == 0
        values = values[None, None] if one_row else values[:, None]
    elif values.ndim == 1 or values.ndim == 2 and _one_row_of_outputs(explanation, values.shape):
        values = values[None]
    if values.ndim not in (2, 3):
        raise ValueError(f"shap_explanation: values must be (players,), (rows, players), (players, outputs) or "
                         f"(rows, players, outputs), got shape {values.shape}")
    return values


def _one_row_of_outputs(explanation: Any, shape: tuple[int, ...]) -> bool:
    """Whether 2-d values are one row of several outputs, ``(players, outputs)`` (what ``shap_explanation[i]``
    gives for a multi-output result), rather than ``(rows, players)``: its data is one row, ``(players,)``, or,
    without data, its base values are one per output, ``(outputs,)``, not one per row."""
    data, base = explanation.data, explanation.base_values
    if data is not None and np.ndim(data) >= 1:
        return np.ndim(data) == 1 and len(data) == shape[0] and shape != (1, 1)
    return base is not None and np.ndim(base) == 1 and len(base) == shape[1] != shape[0]


def _base(explanation: Any, values: np.ndarray) -> np.ndarray:
    base = np.asarray(0.0 if explanation.base_values is None else explanation.base_values, dtype=float)
    want = values.shape[:1] + values.shape[2:]
    if base.ndim == len(want) - 1 and values.shape[0] == 1:
        base = base[None]
    try:
        return np.broadcast_to(base, want).copy()
    except ValueError:
        raise ValueError(f"shap_explanation: base_values of shape {base.shape} do not fit values of shape "
                         f"{values.shape} (one base value per row, and per output)") from None


def _names(names: Any, size: int, what: str, prefix: str | None) -> list[str] | None:
    if names is None or isinstance(names, str) or not hasattr(names, "__len__"):
        return None if prefix is None else [f"{prefix}{i}" for i in range(size)]
    names = [str(v) for v in names]
    if len(names) != size:
        raise ValueError(f"shap_explanation: {len(names)} {what} for {size}")
    return names


def _text(data: np.ndarray | None, names: Any) -> str | None:
    """The text of an explanation of one text: one row of string pieces (tokens with their whitespace, as shap's
    text explainers and :func:`to_shap` give them) whose feature names are the tokens (shap's) or ``"i:token"``
    (ours); None for anything else (a row of a table with words in it keeps its feature names)."""
    if data is None or data.ndim != 2 or data.shape[0] != 1 or names is None or isinstance(names, str):
        return None
    pieces, names = data[0].tolist(), [str(v) for v in names]
    if not pieces or not all(isinstance(p, str) for p in pieces) or len(names) != len(pieces):
        return None
    tokens = [p.strip() for p in pieces]
    ours = [f"{i}:{t}" for i, t in enumerate(tokens)]
    return "".join(pieces) if names == ours or [v.strip() for v in names] == tokens else None


def from_shap(explanation: Any, index: str = "shapley") -> dict:
    """The fields of our Explanation of a ``shap.Explanation`` (single or multi-output, or one row of either, as
    ``shap_explanation[i]`` gives, or one feature of either, as ``shap_explanation[:, "age"]`` gives), checked:
    values, base values, data, names (``instance_names`` as row names) and ``error_std`` (as standard errors) must
    fit together, else a ValueError names ``shap_explanation``; the arrays are copies of shap's. One text (one row of
    string pieces named by their tokens, as shap's text explainers and ``to_shap`` give it) is a text again:
    ``info["text"]`` holds it, so ``plot("text")`` and the report draw it.
    :meth:`fairshare.Explanation.from_shap` builds the result.

    Examples
    --------
    >>> import shap
    >>> f = from_shap(shap.Explanation(np.ones((2, 3)), base_values=np.zeros(2), feature_names=["a", "b", "c"]))
    >>> f["values"].shape, f["player_names"], f["empty_value"].tolist()
    ((2, 3), ['a', 'b', 'c'], [0.0, 0.0])
    >>> one = from_shap(shap.Explanation(np.ones((3, 2)), base_values=np.array([0.5, -0.5]), data=np.ones(3)))
    >>> one["values"].shape, one["empty_value"].tolist()
    ((1, 3, 2), [[0.5, -0.5]])
    """
    if not all(hasattr(explanation, a) for a in ("values", "base_values", "data")):
        raise TypeError(f"shap_explanation must be a shap.Explanation, got {type(explanation).__name__}")
    values = _values(explanation)
    rows, n = values.shape[:2]
    data = None if explanation.data is None else np.array(explanation.data)
    if data is not None:
        data = data.reshape(-1, 1) if _one_feature(explanation) and data.ndim <= 1 else data
        data = data[None] if data.ndim == 1 and rows == 1 else data
        if data.shape[:2] != (rows, n):
            raise ValueError(f"shap_explanation: data of shape {data.shape} for values of shape {values.shape}")
    stderr = getattr(explanation, "error_std", None)
    if stderr is not None:
        stderr = np.array(stderr, dtype=float).reshape(values.shape) if np.size(stderr) == values.size else None
    outputs = values.shape[2] if values.ndim == 3 else None
    output_names = getattr(explanation, "output_names", None)
    instances = getattr(explanation, "instance_names", None)           # shap_explanation[i] names its row alone
    instances = [instances] if isinstance(instances, str) and rows == 1 else instances
    info: dict = {"source": "shap.Explanation (values computed by shap)"}
    text = _text(data, explanation.feature_names)
    if text is not None:
        info["text"] = text                      # drawn as a text (plot("text"), the report), as it was before
    return dict(values=values, stderr=stderr, empty_value=_base(explanation, values), data=data, index=index,
                method="shap", player_names=_names([explanation.feature_names] if _one_feature(explanation) else
                                                   explanation.feature_names, n, "feature names", "x"),
                output_names=None if outputs is None else _names(output_names, outputs, "output names", None),
                row_names=_names(instances, rows, "instance names", None),
                n_evaluations=np.zeros(rows, dtype=np.int64), info=info)
