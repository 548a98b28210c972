"""Explanation: attributions of many rows, sliceable, savable and plottable."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Explanation"]


@dataclass(eq=False)
class Explanation:
    """Values for many explained rows.

    Attributes
    ----------
    values : (rows, players) or (rows, players, outputs)
    stderr : same shape, or None where the method gives none
    base_values : (rows,) or (rows, outputs): the value of the empty coalition
    data : (rows, players) feature values of the explained rows (None when players are groups)
    feature_names : one name per player
    output_names : one name per output, or None
    index : the semivalue's name
    methods : method used for each row
    n_evaluations : game evaluations per row
    info : anything else worth keeping (model output, imputation, budget, seed)

    Examples
    --------
    >>> e = Explanation(values=np.arange(6.0).reshape(2, 3), stderr=None, base_values=np.zeros(2),
    ...                 data=None, feature_names=["a", "b", "c"], index="shapley")
    >>> e["b"].values.ravel()
    array([1., 4.])
    >>> e[1].values
    array([[3., 4., 5.]])
    """

    values: np.ndarray
    stderr: np.ndarray | None
    base_values: np.ndarray
    data: np.ndarray | None
    feature_names: list[str]
    index: str
    output_names: list[str] | None = None
    methods: list[str] = field(default_factory=list)
    n_evaluations: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=float)
        if self.values.ndim not in (2, 3):
            raise ValueError(f"values must be (rows, players) or (rows, players, outputs), got {self.values.shape}")
        rows, players = self.values.shape[:2]
        if self.stderr is not None:
            self.stderr = np.asarray(self.stderr, dtype=float)
            if self.stderr.shape != self.values.shape:
                raise ValueError("stderr must have the shape of values")
        self.base_values = np.asarray(self.base_values, dtype=float)
        if len(self.feature_names) != players:
            raise ValueError(f"feature_names must have {players} names, got {len(self.feature_names)}")
        if not self.methods:
            self.methods = ["unknown"] * rows
        if self.n_evaluations is None:
            self.n_evaluations = np.zeros(rows, dtype=np.int64)
        self.n_evaluations = np.asarray(self.n_evaluations)

    # --------------------------------------------------------------------------------- access
    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def _feature_index(self, key: Any) -> np.ndarray:
        keys = [key] if isinstance(key, str) else list(key)
        missing = [k for k in keys if k not in self.feature_names]
        if missing:
            raise KeyError(f"unknown feature name(s) {missing}; features: {self.feature_names}")
        return np.array([self.feature_names.index(k) for k in keys])

    def __getitem__(self, key: Any) -> Explanation:
        """Rows by position (int, slice, array) and players by name (str or list of str); a tuple
        ``(rows, names)`` does both."""
        rows, cols = slice(None), slice(None)
        if isinstance(key, tuple):
            rows, cols = key
            cols = self._feature_index(cols) if not isinstance(cols, slice) else cols
        elif isinstance(key, str) or (isinstance(key, (list, tuple)) and key and all(isinstance(k, str) for k in key)):
            cols = self._feature_index(key)
        else:
            rows = key
        if isinstance(rows, (int, np.integer)):
            rows = [int(rows)]
        idx_rows = np.arange(len(self))[rows]
        idx_cols = np.arange(self.values.shape[1])[cols]
        pick = lambda a: None if a is None else a[idx_rows][:, idx_cols]   # noqa: E731
        return Explanation(values=pick(self.values), stderr=pick(self.stderr), base_values=self.base_values[idx_rows],
                           data=pick(self.data) if self.data is not None else None,
                           feature_names=[self.feature_names[i] for i in idx_cols], index=self.index,
                           output_names=self.output_names, methods=[self.methods[i] for i in idx_rows],
                           n_evaluations=self.n_evaluations[idx_rows], info=dict(self.info))

    def to_frame(self, stderr: bool = True) -> Any:
        """Wide pandas DataFrame: one row per explained row, one column per player (``name[output]`` for
        several outputs), plus ``stderr:`` columns and the base value.

        Examples
        --------
        >>> e = Explanation(values=[[1.0, 2.0]], stderr=[[0.1, 0.2]], base_values=[0.5], data=None,
        ...                 feature_names=["a", "b"], index="shapley")
        >>> e.to_frame().columns.tolist()
        ['base_value', 'a', 'b', 'stderr:a', 'stderr:b']
        """
        import pandas as pd

        cols, data = self._columns(), {}
        base = self.base_values.reshape(len(self), -1)
        for j in range(base.shape[1]):
            data["base_value" if base.shape[1] == 1 else f"base_value[{self._outputs()[j]}]"] = base[:, j]
        flat = self.values.reshape(len(self), -1)
        for c, col in enumerate(cols):
            data[col] = flat[:, c]
        if stderr and self.stderr is not None:
            flat_se = self.stderr.reshape(len(self), -1)
            for c, col in enumerate(cols):
                data[f"stderr:{col}"] = flat_se[:, c]
        return pd.DataFrame(data)

    def _outputs(self) -> list[str]:
        k = self.values.shape[2] if self.values.ndim == 3 else 1
        return self.output_names or [str(j) for j in range(k)]

    def _columns(self) -> list[str]:
        if self.values.ndim == 2:
            return list(self.feature_names)
        return [f"{f}[{o}]" for f in self.feature_names for o in self._outputs()]

    # ------------------------------------------------------------------------------- storage
    def save(self, path: str | Path) -> Path:
        """Save to ``path`` (``.npz``); :meth:`load` reads it back.

        Examples
        --------
        >>> import tempfile, os
        >>> e = Explanation(values=[[1.0]], stderr=None, base_values=[0.0], data=None, feature_names=["a"], index="banzhaf")
        >>> p = e.save(os.path.join(tempfile.mkdtemp(), "e.npz"))
        >>> Explanation.load(p).values
        array([[1.]])
        """
        path = Path(path)
        meta = dict(feature_names=self.feature_names, index=self.index, output_names=self.output_names,
                    methods=self.methods, info=self.info)
        arrays = dict(values=self.values, base_values=self.base_values, n_evaluations=self.n_evaluations,
                      meta=np.array(json.dumps(meta, default=str)))
        if self.stderr is not None:
            arrays["stderr"] = self.stderr
        if self.data is not None:
            arrays["data"] = np.asarray(self.data, dtype=float) if np.asarray(self.data).dtype != object else \
                np.asarray(self.data).astype(str)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Explanation:
        """Read an explanation written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            return cls(values=z["values"], stderr=z["stderr"] if "stderr" in z else None,
                       base_values=z["base_values"], data=z["data"] if "data" in z else None,
                       feature_names=meta["feature_names"], index=meta["index"], output_names=meta["output_names"],
                       methods=meta["methods"], n_evaluations=z["n_evaluations"], info=meta["info"])

    def __repr__(self) -> str:
        outputs = f", outputs={self.values.shape[2]}" if self.values.ndim == 3 else ""
        methods = sorted(set(self.methods))
        return (f"Explanation(index={self.index!r}, rows={len(self)}, players={self.values.shape[1]}{outputs}, "
                f"methods={methods}, mean evaluations={float(np.mean(self.n_evaluations)):.0f})")

    # --------------------------------------------------------------------------------- plots
    def plot(self, kind: str = "bar", **kwargs: Any) -> Any:
        """Plot with :mod:`fairshare.plots` (``kind`` = bar, waterfall, beeswarm); returns the axes."""
        from . import plots

        if kind not in ("bar", "waterfall", "beeswarm"):
            raise ValueError(f"kind must be 'bar', 'waterfall' or 'beeswarm', got {kind!r}")
        return getattr(plots, kind)(self, **kwargs)
