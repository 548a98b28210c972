"""The result of an interaction estimate: one value (and standard error) per subset of players."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._core.arguments import check_int
from .attribution import value_columns
from .base import Result
from .html import unnamed_output
from ..indices.moebius import SubsetIndex

__all__ = ["Interactions"]


@dataclass(eq=False, kw_only=True)
class Interactions(Result):
    """Interaction values of one game: a value per subset of 1..order players, with standard errors.

    Attributes
    ----------
    values : ndarray (p,) or (p, k)
        One row per subset of ``subsets``.
    stderr : ndarray like ``values``, or None
    subsets : int ndarray (p, order)
        The players of each subset, padded with -1; by size, then lexicographically.
    index : str
        ``"k-sii"``, ``"sii"``, ``"stii"``, ``"fsii"``, ``"fbii"``, ``"bii"``, ``"moebius"``, or a pairwise layout:
        ``"sii-matrix"`` (shap's ``shap_interaction_values``: :meth:`matrix` holds half of each pair's SII in both
        off-diagonal cells and the rest of each Shapley value on the diagonal, rows summing to the Shapley values)
        or ``"bii-matrix"`` (the same with BII and the Banzhaf values).
    order : int
    method, options, info, n_evaluations, empty_value, grand_value, player_names
        As in :class:`~fairshare.Attribution` (the fields of :class:`~fairshare.results.base.Result`).
    base_values, feature_names
        shap's names of ``empty_value`` and ``player_names`` (read-only aliases).

    Examples
    --------
    >>> import fairshare as fs
    >>> g = fs.games.SOUMGame([[True, True, False]], [2.0], player_names=["a", "b", "c"])
    >>> res = fs.interactions(g, "k-sii", order=2, method="exact")
    >>> res.get(("a", "b")), res.get((0,)), res.get(())
    (2.0, 0.0, 0.0)
    """

    subsets: np.ndarray
    order: int

    _required: ClassVar[tuple[str, ...]] = ("index", "method")
    _plot_family: ClassVar[str] = "interactions"
    _default_plot: ClassVar[str | None] = "heatmap"
    _report: ClassVar[str | None] = "subsets"

    def __post_init__(self) -> None:
        self.subsets = np.asarray(self.subsets, dtype=np.int64)
        super().__post_init__()
        if self.values.shape[0] != self.subsets.shape[0]:
            raise ValueError("values must have one row per subset")
        self._where = SubsetIndex(self.subsets)

    def _count_players(self) -> int | None:
        """Players named by the subsets (names given are not checked against them: a player may be in none)."""
        return None if len(self.player_names or []) else int(self.subsets.max(initial=-1)) + 1

    # ------------------------------------------------------------------------------------ lookups
    def _position(self, subset: Any) -> int | None:
        """Row of ``subset`` (names or positions, any order); None for the empty set; KeyError if not valued."""
        if isinstance(subset, (str, int, np.integer)):
            subset = (subset,)
        members = []
        for p in subset:
            if isinstance(p, str):
                if p not in self.player_names:
                    raise KeyError(f"no player named {p!r}")
                members.append(self.player_names.index(p))
            else:
                i = int(p)
                if not 0 <= i < self.n_players:
                    raise KeyError(f"player {i} is out of range for {self.n_players} players")
                members.append(i)
        if len(set(members)) != len(members):
            raise KeyError(f"subset {tuple(subset)!r} names a player twice")
        if not members:
            return None
        if len(members) > self.order:
            raise KeyError(f"subset {tuple(subset)!r} has {len(members)} players; the values go up to order {self.order}")
        row = np.full((1, self.order), -1)
        row[0, :len(members)] = sorted(members)
        return int(self._where(row)[0])

    def get(self, subset: Any) -> Any:
        """The value of ``subset`` (a tuple of player names or positions; ``()`` gives ``v(empty)``, the result's
        ``empty_value``: a KeyError saying so where the result does not know it, ``empty_value=None``).

        Examples
        --------
        >>> import fairshare as fs
        >>> res = fs.interactions(fs.games.SOUMGame([[True, True]], [1.0]), "sii", method="exact")
        >>> res.get((1, 0)), res.get(())
        (1.0, 0.0)
        """
        at = self._position(subset)
        if at is None and self.empty_value is None:
            raise KeyError("() is the empty set, whose value v(empty) these interaction values do not know "
                           "(empty_value is None); the subsets of 1 to order players are valued")
        v = self.empty_value if at is None else self.values[at]
        return float(v) if np.ndim(v) == 0 else v

    __getitem__ = get

    def get_stderr(self, subset: Any) -> Any:
        """The standard error of ``subset``'s value (0 for ``()``; None when the method gives none)."""
        at = self._position(subset)
        if self.stderr is None:
            return None
        v = np.zeros_like(self.values[0]) if at is None else self.stderr[at]
        return float(v) if np.ndim(v) == 0 else v

    # ------------------------------------------------------------------------------------ views
    def _names(self, rows: np.ndarray) -> list[tuple[str, ...]]:
        return [tuple(self.player_names[i] for i in r if i >= 0) for r in self.subsets[rows]]

    def to_frame(self) -> Any:
        """A DataFrame with one row per subset: ``players`` (tuple of names), ``size``, ``value``, ``stderr``
        (``value_j`` / ``stderr_j`` per output).

        Examples
        --------
        >>> import fairshare as fs
        >>> res = fs.interactions(fs.games.SOUMGame([[True, True]], [1.0]), "sii", method="exact")
        >>> res.to_frame().columns.tolist()
        ['players', 'size', 'value', 'stderr']
        """
        import pandas as pd

        rows = np.arange(self.subsets.shape[0])
        frame = pd.DataFrame({"players": self._names(rows), "size": (self.subsets >= 0).sum(axis=1),
                              **value_columns(self.values, self.stderr)})
        frame.attrs.update(index=self.index, order=self.order, method=self.method, n_evaluations=self.n_evaluations)
        return frame

    def _output(self, output: Any) -> int | None:
        """The position of ``output`` (None: the first) among the outputs; None for values of one output, where any
        ``output`` is refused naming it (:func:`~fairshare.results.html.unnamed_output`)."""
        return unnamed_output(self.values.shape[1] if self.values.ndim == 2 else None, output)

    def matrix(self, output: Any = None, stderr: bool = False) -> np.ndarray:
        """The ``n x n`` pairwise matrix (symmetric; each pair's value in both of its cells, the players' own values
        on the diagonal), ``(n, n)`` or ``(n, n, k)`` (every output; ``output``: one of them, by position);
        ``stderr=True`` gives the standard errors laid out the same way. For ``index="sii-matrix"`` this is shap's
        interaction matrix (rows summing to the Shapley values).

        Examples
        --------
        >>> import fairshare as fs
        >>> res = fs.interactions(fs.games.SOUMGame([[True, True]], [1.0]), "sii", method="exact")
        >>> res.matrix()
        array([[0.5, 1. ],
               [1. , 0.5]])
        """
        if self.order < 2:
            raise ValueError("matrix() needs interaction values of order >= 2")
        source = self.stderr if stderr else self.values
        if source is None:
            raise ValueError("this result has no standard errors")
        if output is not None:
            source = source[:, self._output(output)]
        n = self.n_players
        out = np.zeros((n, n) + source.shape[1:])
        size = (self.subsets >= 0).sum(axis=1)
        one, two = size == 1, size == 2
        out[self.subsets[one, 0], self.subsets[one, 0]] = source[one]
        out[self.subsets[two, 0], self.subsets[two, 1]] = source[two]
        out[self.subsets[two, 1], self.subsets[two, 0]] = source[two]
        return out

    def top(self, k: int = 10, min_size: int = 2, output: Any = None) -> Any:
        """The ``k`` subsets of at least ``min_size`` players with the largest ``|value|`` (a DataFrame, largest
        first), of output ``output`` (by position; default the first) where there are several.

        Examples
        --------
        >>> import fairshare as fs
        >>> res = fs.interactions(fs.games.SOUMGame([[True, True], [False, True]], [1.0, 3.0]), "sii", method="exact")
        >>> res.top(1)["players"].tolist()
        [('x0', 'x1')]
        """
        frame = self.to_frame()
        k, min_size = check_int(k, "k", minimum=0), check_int(min_size, "min_size", minimum=0)
        j = self._output(output)
        col = "value" if j is None else f"value_{j}"
        frame = frame[frame["size"] >= min_size]
        order = np.argsort(-np.abs(frame[col].to_numpy()), kind="stable")[:k]
        return frame.iloc[order].reset_index(drop=True)

    def __repr__(self) -> str:
        head = (f"Interactions(index={self.index!r}, order={self.order}, method={self.method!r}, "
                f"n_players={self.n_players}, n_subsets={self.subsets.shape[0]}, n_evaluations={self.n_evaluations})")
        v = self.values if self.values.ndim == 1 else np.abs(self.values).max(axis=1)
        order = np.argsort(-np.abs(v), kind="stable")[:8]
        lines = [head]
        for i, names in zip(order, self._names(order)):
            s = "" if self.stderr is None else f" +- {np.ravel(self.stderr[i])[0]:.3g}"
            lines.append(f"  {' x '.join(names):<30} {np.ravel(self.values[i])[0]:>12.6g}{s}")
        return "\n".join(lines)
