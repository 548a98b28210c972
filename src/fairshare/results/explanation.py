"""Explanation: attributions of many rows, sliceable, savable and plottable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .base import Result, frame_clash
from .keys import names_of as _names_of, one_position, positions
from .layout import check_layout, one_per_row, players_of, rows_of

__all__ = ["Explanation"]


@dataclass(eq=False, kw_only=True)
class Explanation(Result):
    """Values for many explained rows.

    The same vocabulary as :class:`~fairshare.Attribution` (one per row), with what is per row as arrays.

    Attributes
    ----------
    values : (rows, players) or (rows, players, outputs)
    stderr : same shape, or None where the method gives none
    empty_value : (rows,) or (rows, outputs): the value of the empty coalition (the base value); one shared by every
        row (a number, or one per output) is given to each row
    grand_value : (rows,) or (rows, outputs): the value of every player present (the model's output), or None
    data : (rows, players) feature values of the explained rows (None when players are groups)
    player_names : one name per player (features, or groups of them)
    index : the semivalue's name
    method : the method every row ran (one choice for all rows)
    output_names : one name per output, or None
    row_names : one label per row (the DataFrame's index, or the row numbers)
    n_evaluations : game evaluations per row
    options : the method's options as it ran them
    info : facts about the run, apart from what was asked: ``choice`` (method and why), the model output
        explained, the imputation, the budget per row, the seed
    interactions : ``(rows, n, n[, k])`` or None (``explain(..., interactions=2)``): shap's
        ``shap_interaction_values`` convention, as :func:`fairshare.games.tree_interactions`: half of each pair's
        Shapley interaction index (SII) in both off-diagonal cells, the rest of each Shapley value on the diagonal,
        so each row sums to ``values``; for Banzhaf values the same with the Banzhaf interaction index (BII)
    interactions_stderr : their standard errors, laid out the same way
    base_values, feature_names : shap's names of ``empty_value`` (one per row: ``(rows,)`` or ``(rows, outputs)``)
        and ``player_names``, read-only aliases

    ``plot(kind, ...)`` draws with :mod:`fairshare.plots`: ``kind`` = bar, waterfall, beeswarm, dependence (alias
    ``scatter``, as shap calls it), heatmap, decision, text; it returns the axes (``ax=`` draws on given ones).
    ``save(path)`` writes one ``.npz`` file, ``Explanation.load(path)`` reads it back (files written by earlier
    versions too).

    Examples
    --------
    >>> e = Explanation(values=np.arange(6.0).reshape(2, 3), stderr=None, empty_value=np.zeros(2),
    ...                 data=None, player_names=["a", "b", "c"], index="shapley")
    >>> e["b"].values.ravel()
    array([1., 4.])
    >>> e[1].values
    array([[3., 4., 5.]])
    >>> e.base_values, e.feature_names
    (array([0., 0.]), ['a', 'b', 'c'])
    >>> import tempfile, os
    >>> Explanation.load(e.save(os.path.join(tempfile.mkdtemp(), "e.npz"))).values
    array([[0., 1., 2.],
           [3., 4., 5.]])
    """

    data: np.ndarray | None = None
    output_names: list[str] | None = None
    row_names: list[str] | None = None
    interactions: np.ndarray | None = None          # (rows, n, n[, k]) shap's interaction matrices: half each pair's
    # SII (Banzhaf values: BII) in both off-diagonal cells, the rest of each value on the diagonal; rows sum to values
    interactions_stderr: np.ndarray | None = None

    _required: ClassVar[tuple[str, ...]] = ("empty_value", "index")
    _plot_family: ClassVar[str] = "explanation"
    _default_plot: ClassVar[str | None] = "bar"
    _report: ClassVar[str | None] = "rows"

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=float)
        if self.values.ndim not in (2, 3):
            raise ValueError(f"values must be (rows, players) or (rows, players, outputs), got {self.values.shape}")
        if self.method is None:
            self.method = "unknown"
        super().__post_init__()
        rows = self.values.shape[0]
        self.empty_value = one_per_row(self.empty_value, self.values.shape)
        if self.grand_value is not None:
            self.grand_value = one_per_row(self.grand_value, self.values.shape)
        self.row_names = [str(r) for r in self.row_names] if self.row_names is not None else \
            [str(r) for r in range(rows)]
        if len(self.row_names) != rows:
            raise ValueError(f"row_names must have {rows} names, got {len(self.row_names)}")
        self.n_evaluations = np.asarray(self.n_evaluations)
        check_layout(self)

    def _count_players(self) -> int:
        return int(self.values.shape[1])

    def _per_row(self, empty_value: Any) -> Any:
        """shap's ``base_values``: ``(rows,)`` or ``(rows, outputs)``, the empty coalition's value of each row."""
        return one_per_row(empty_value, self.values.shape)

    def _no_evaluations(self) -> np.ndarray:
        return np.zeros(self.values.shape[0], dtype=np.int64)

    @classmethod
    def from_exact(cls, values: np.ndarray, empty_value: Any, *, index: str, grand_value: Any = None,
                   data: Any = None, player_names: Any = None, row_names: Any = None, output_names: Any = None,
                   options: dict | None = None, info: dict | None = None) -> Explanation:
        """The Explanation of exact values computed for every row at once (``values`` ``(rows, n[, k])``; no
        evaluations, zero standard errors): ``empty_value`` (the same for every row) is given to each row; names
        that do not fit (None, another length) give way to the defaults.

        Examples
        --------
        >>> e = Explanation.from_exact(np.ones((2, 3)), 0.5, index="shapley")
        >>> e.empty_value, e.player_names, e.n_evaluations
        (array([0.5, 0.5]), ['x0', 'x1', 'x2'], array([0, 0]))
        """
        values = np.asarray(values, dtype=float)
        rows, outputs = values.shape[0], values.shape[2:]

        def fit(names: Any, size: int) -> list[str] | None:
            return [str(v) for v in names] if names is not None and len(names) == size else None

        return cls(values=values, stderr=np.zeros_like(values), index=index, method="exact",
                   empty_value=np.broadcast_to(np.asarray(empty_value, dtype=float), (rows,) + outputs).copy(),
                   grand_value=grand_value, data=data, player_names=fit(player_names, values.shape[1]),
                   row_names=fit(row_names, rows), output_names=fit(output_names, outputs[0]) if outputs else None,
                   n_evaluations=np.zeros(rows, dtype=np.int64), options=options or {}, info=info or {})

    def to_shap(self) -> Any:
        """This explanation as a ``shap.Explanation`` (values, base_values, data, feature_names, output_names,
        standard errors as ``error_std``) that shap's plots take; needs shap
        (:func:`fairshare.results.shap_interop.to_shap`).

        Examples
        --------
        >>> e = Explanation.from_exact(np.ones((2, 3)), 0.5, index="shapley")
        >>> e.to_shap().base_values.tolist()
        [0.5, 0.5]
        """
        from .shap_interop import to_shap

        return to_shap(self)

    @classmethod
    def from_shap(cls, shap_explanation: Any, index: str = "shapley") -> Explanation:
        """shap's result as ours (single or multi-output), so our plots, files and reports take it; shapes that
        do not fit are refused naming ``shap_explanation``.

        Examples
        --------
        >>> import shap
        >>> e = Explanation.from_shap(shap.Explanation(np.ones((2, 3)), base_values=np.zeros(2)))
        >>> e.values.shape, e.method, e.player_names
        ((2, 3), 'shap', ['x0', 'x1', 'x2'])
        """
        from .shap_interop import from_shap

        return cls(**from_shap(shap_explanation, index))

    def _repr_html_(self) -> str | None:
        """A text's tokens shaded by their values in notebooks (other explanations: the plain repr)."""
        if not self.is_text:
            return None
        from .html import text_html

        return text_html(self)

    # --------------------------------------------------------------------------------- access
    @property
    def is_text(self) -> bool:
        """Whether this is the Explanation of one text (its ``data`` are the text's pieces)."""
        return "text" in self.info and self.data is not None and len(self) == 1

    @property
    def tokens(self) -> list[str]:
        """A text's tokens (without their whitespace), for an Explanation of one text.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.explain(lambda ts: [len(t) for t in ts], "to be", progress=False).tokens
        ['to', 'be']
        """
        if not self.is_text:
            raise AttributeError("tokens: this Explanation holds no text (explain a string to get them)")
        return [str(p).strip() for p in self.data[0]]

    def input_values(self, stderr: bool = False) -> np.ndarray:
        """The values (or standard errors) in the shape of the explained inputs, ``(rows, *input_shape[, k])``,
        for inputs of more than one dimension (sequences, images) explained cell by cell; grouped inputs
        (``groups="time"``...) give each cell its group's value; images explained by pixels (patches, superpixels,
        labels) give ``(rows, H, W[, k])``; the cells of players sliced away (``e[:, players]``) are NaN.

        Examples
        --------
        >>> import numpy as np, fairshare as fs
        >>> X = np.arange(12.0).reshape(2, 3, 2)
        >>> e = fs.explain(lambda X: X.sum(axis=(1, 2)), X, background=np.zeros((1, 3, 2)), progress=False)
        >>> e.input_values().shape
        (2, 3, 2)
        """
        shape = self.info.get("input_shape")
        if shape is None:
            raise ValueError("input_values: these values are not of inputs with a shape (explain an array of "
                             "sequences or images to get them)")
        source = self.stderr if stderr else self.values
        if source is None:
            raise ValueError("input_values: this explanation has no standard errors")
        groups = self.info.get("input_groups")
        if groups is not None:                  # each cell's player (per row: images' superpixels); -1: sliced away
            labels = np.asarray(groups).reshape(len(source) if np.ndim(groups) == len(shape) + 1 else 1, -1)
            picked = source[np.arange(len(source))[:, None], np.maximum(labels, 0)]
            gone = (labels < 0).reshape(labels.shape + (1,) * (picked.ndim - 2))
            source = np.where(gone, np.nan, picked)
        elif source.shape[1] != int(np.prod(shape)):
            raise ValueError(f"input_values: {source.shape[1]} players are groups given as lists, not the "
                             f"{int(np.prod(shape))} cells of an input")
        return source.reshape((source.shape[0],) + tuple(shape) + source.shape[2:])

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def _feature_index(self, key: Any) -> np.ndarray:
        """Players by name (str, or a list, tuple, array or pandas Index of them) or by position (int, slice, a
        list, tuple or array of ints or booleans)."""
        names = _names_of(key)
        if names is not None:
            keys = names
            missing = [k for k in keys if k not in self.player_names]
            if missing:
                raise KeyError(f"unknown player name(s) {missing}; players: {self.player_names}")
            return np.array([self.player_names.index(k) for k in keys])
        return positions(key, self.values.shape[1], "players")     # a tuple of positions: positions, as numpy

    def _output_index(self, key: Any) -> tuple[np.ndarray | int, str | None]:
        """Outputs by position or name: ``(positions, None)``, or ``(position, name)`` for one output (an int or a
        name), whose Explanation has no outputs axis."""
        if self.values.ndim == 2:
            raise IndexError(f"this Explanation has one output (values {self.values.shape}: rows, players); "
                             "an output index is for values of shape (rows, players, outputs)")
        names = self._outputs()
        k = self.values.shape[2]
        position = lambda o: names.index(o) if isinstance(o, str) and o in names else o     # noqa: E731
        if isinstance(key, (str, int, np.integer)):
            o = position(key)
            if isinstance(o, str) or (not isinstance(o, bool) and not -k <= int(o) < k):
                raise IndexError(f"output {key!r} is not one of the {k} outputs {names}")
            o = one_position(o, k, "outputs")
            return o, names[o]
        if _names_of(key) is not None:                        # names in an array or a pandas Index, as players
            key = list(_names_of(key))
        if isinstance(key, (list, tuple)):
            key = [position(o) for o in key]
            unknown = [o for o in key if isinstance(o, str)]
            if unknown:
                raise IndexError(f"output(s) {unknown} not among the outputs {names}")
        return positions(key, k, "outputs"), None

    def _split_key(self, key: Any) -> tuple[Any, Any, Any]:
        """``(rows, players, outputs)`` of a key, shap's way: ``e[rows]``, ``e[names]``, ``e[rows, players]``,
        ``e[rows, players, outputs]``, ``...`` standing for the axes it skips."""
        if not isinstance(key, tuple):
            if _names_of(key) is not None:
                return slice(None), key, slice(None)
            return key, slice(None), slice(None)
        if sum(k is Ellipsis for k in key) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if any(k is Ellipsis for k in key):                     # not ``in``: an array in the key compares by element
            at = [k is Ellipsis for k in key].index(True)
            key = key[:at] + (slice(None),) * (self.values.ndim - len(key) + 1) + key[at + 1:]
        if len(key) == 3 and self.values.ndim == 2:
            self._output_index(key[2])                                    # refused, naming the shape
        if len(key) > self.values.ndim:
            raise IndexError(f"too many indices for an Explanation of values {self.values.shape} "
                             f"({'rows, players, outputs' if self.values.ndim == 3 else 'rows, players'})")
        key = key + (slice(None),) * (3 - len(key))
        return key[0], key[1], key[2]

    def __getitem__(self, key: Any) -> Explanation:
        """Rows by position (int, slice, array), players by name (str or list of str) or position, and outputs by
        position or name, shap's way: ``e[rows]``, ``e["age"]``, ``e[rows, players]``, ``e[rows, players, output]``
        (``...`` for the axes skipped). Rows and players keep their axes (``e[0]`` is one row); one output (an int
        or a name: ``e[:, :, 1]``) gives the single-output Explanation of it, its values, error bars, base values,
        grand values and interactions those of that output (``info["output"]`` names it).

        Examples
        --------
        >>> e = Explanation(values=np.arange(12.0).reshape(2, 3, 2), stderr=None, empty_value=np.ones((2, 2)),
        ...                 data=None, player_names=["a", "b", "c"], index="shapley", output_names=["no", "yes"])
        >>> one = e[:, :, 1]
        >>> one.values.shape, one.values[0].tolist(), one.base_values.tolist(), one.info["output"]
        ((2, 3), [1.0, 3.0, 5.0], [1.0, 1.0], 'yes')
        >>> np.array_equal(e[..., "yes"].values, one.values), e[0, "b"].values.tolist()
        (True, [[[2.0, 3.0]]])
        """
        rows, cols, outs = self._split_key(key)
        idx_rows = positions(rows, len(self), "rows")
        idx_cols = self._feature_index(cols)
        info = players_of(rows_of(self.info, idx_rows, len(self)), idx_cols, self.values.shape[1])
        output_names = self.output_names
        if self.values.ndim == 3 and not (isinstance(outs, slice) and outs == slice(None)):
            outs, name = self._output_index(outs)
            output_names = None if name is not None else [self._outputs()[o] for o in outs]
            if name is not None:
                info["output"] = name
        per_output = self.values.ndim == 3

        def out(a: Any, lead: int) -> Any:                 # an array with ``lead`` axes before its outputs axis
            if a is None or not per_output or np.ndim(a) <= lead:
                return a
            return a[(slice(None),) * lead + (outs,)]

        pick = lambda a: None if a is None else out(a[idx_rows][:, idx_cols], 2)   # noqa: E731
        pairs = lambda a: None if a is None else out(a[idx_rows][:, idx_cols][:, :, idx_cols], 3)   # noqa: E731
        return Explanation(values=pick(self.values), stderr=pick(self.stderr),
                           empty_value=out(self.empty_value[idx_rows], 1),
                           interactions=pairs(self.interactions), interactions_stderr=pairs(self.interactions_stderr),
                           data=self.data[idx_rows][:, idx_cols] if self.data is not None else None,
                           player_names=[self.player_names[i] for i in idx_cols], index=self.index,
                           method=self.method, output_names=output_names,
                           row_names=[self.row_names[i] for i in idx_rows],
                           grand_value=None if self.grand_value is None else out(self.grand_value[idx_rows], 1),
                           n_evaluations=self.n_evaluations[idx_rows], options=dict(self.options), info=info)

    def interactions_frame(self) -> Any:
        """The pairwise interaction values as a long table: one row per explained row and pair of features
        (``feature_i == feature_j``: the feature's main effect), columns ``row``, ``feature_i``, ``feature_j``
        (``output`` for several outputs), ``value``, ``stderr`` (NaN where none were given). The values are shap's
        convention (the upper triangle of ``interactions``): a pair's value is half its Shapley (Banzhaf) interaction
        index, the other half sits in the mirrored cell; a main effect is the feature's value minus its halves of
        every pair.

        Examples
        --------
        >>> import numpy as np, fairshare as fs
        >>> from sklearn.tree import DecisionTreeRegressor
        >>> X = np.random.default_rng(0).random((100, 3)); model = DecisionTreeRegressor(max_depth=3).fit(X, X[:, 0] * X[:, 1])
        >>> fs.explain(model, X[:2], interactions=2, progress=False).interactions_frame().shape
        (12, 5)
        """
        import pandas as pd

        if self.interactions is None:
            raise ValueError("no interaction values: explain(..., interactions=2) computes them")
        n = len(self.player_names)
        i, j = np.triu_indices(n)
        rows = self.row_names if self.row_names is not None else [str(r) for r in range(self.values.shape[0])]
        errors = np.full(self.interactions.shape, np.nan) if self.interactions_stderr is None else \
            self.interactions_stderr                                          # none given (a user's): unknown
        values, errs = self.interactions[:, i, j], errors[:, i, j]
        parts = []
        outputs = [None] if values.ndim == 2 else list(self.output_names or range(values.shape[2]))
        for o, name in enumerate(outputs):
            v = values if name is None else values[..., o]
            e = errs if name is None else errs[..., o]
            frame = pd.DataFrame({"row": np.repeat(rows, i.size),
                                  "feature_i": np.tile(np.asarray(self.player_names, dtype=object)[i], len(rows)),
                                  "feature_j": np.tile(np.asarray(self.player_names, dtype=object)[j], len(rows)),
                                  "value": v.ravel(), "stderr": e.ravel()})
            if name is not None:
                frame.insert(3, "output", name)
            parts.append(frame)
        return pd.concat(parts, ignore_index=True)

    def to_frame(self, stderr: bool = True) -> Any:
        """Wide pandas DataFrame: one row per explained row (indexed by ``row_names``), one column per player
        (``name[output]`` for several outputs), plus ``stderr:`` columns and the empty coalition's value; a player
        named as another column is refused (:func:`~fairshare.results.base.frame_clash`), not written over it.

        Examples
        --------
        >>> e = Explanation(values=[[1.0, 2.0]], stderr=[[0.1, 0.2]], empty_value=[0.5], data=None,
        ...                 player_names=["a", "b"], index="shapley")
        >>> e.to_frame().columns.tolist()
        ['empty_value', 'a', 'b', 'stderr:a', 'stderr:b']
        """
        import pandas as pd

        cols, data = self._columns(), {}
        base = self.empty_value.reshape(len(self), -1)
        empties = ["empty_value"] if base.shape[1] == 1 else [f"empty_value[{o}]" for o in self._outputs()]
        if (clash := frame_clash(cols, empties, stderr and self.stderr is not None)) is not None:
            raise ValueError(f"to_frame: {clash}; give the players other names (player_names=)")
        data.update(zip(empties, base.T))
        flat = self.values.reshape(len(self), -1)
        for c, col in enumerate(cols):
            data[col] = flat[:, c]
        if stderr and self.stderr is not None:
            flat_se = self.stderr.reshape(len(self), -1)
            for c, col in enumerate(cols):
                data[f"stderr:{col}"] = flat_se[:, c]
        return pd.DataFrame(data, index=pd.Index(self.row_names, name="row"))

    def _outputs(self) -> list[str]:
        k = self.values.shape[2] if self.values.ndim == 3 else 1
        return self.output_names or [str(j) for j in range(k)]

    def _columns(self) -> list[str]:
        if self.values.ndim == 2:
            return list(self.player_names)
        return [f"{f}[{o}]" for f in self.player_names for o in self._outputs()]

    def __repr__(self) -> str:
        outputs = f", outputs={self.values.shape[2]}" if self.values.ndim == 3 else ""
        return (f"Explanation(index={self.index!r}, rows={len(self)}, players={self.values.shape[1]}{outputs}, "
                f"method={self.method!r}, mean evaluations={float(np.mean(self.n_evaluations)):.0f})")
