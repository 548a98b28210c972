"""The result of an attribution: values, error bars and how they were obtained."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .base import Result
from .explanation import Explanation
from .keys import one_position

__all__ = ["Attribution", "value_columns"]


def value_columns(values: np.ndarray, stderr: np.ndarray | None) -> dict[str, np.ndarray]:
    """A result's table columns: ``value`` and ``stderr`` (NaN without standard errors), or ``value_j`` /
    ``stderr_j`` per output of a multi-output game.

    Examples
    --------
    >>> list(value_columns(np.zeros((3, 2)), None))
    ['value_0', 'value_1', 'stderr_0', 'stderr_1']
    """
    stderr = stderr if stderr is not None else np.full(values.shape, np.nan)
    if values.ndim == 1:
        return {"value": values, "stderr": stderr}
    return {**{f"value_{j}": values[:, j] for j in range(values.shape[1])},
            **{f"stderr_{j}": stderr[:, j] for j in range(values.shape[1])}}


@dataclass(eq=False, kw_only=True)
class Attribution(Result):
    """Per-player values of one game, with standard errors where the method knows them.

    A :class:`~fairshare.results.base.Result`: its fields are the base's, in the base's vocabulary.

    Attributes
    ----------
    values : ndarray of shape (n_players,) or (n_players, k)
    stderr : ndarray of the same shape, or None
        Estimated standard error of each value; None where the method cannot give one
        (exact methods have zero error and report zeros).
    index : str
        Name of the semivalue (``"shapley"``, ``"banzhaf"``, ``"beta-shapley(4,1)"``, ...).
    method : str
        Registry key of the method that produced the values.
    options : dict
        The method's options as it ran them: the ones given, checked, and the defaults.
    info : dict
        Facts about the run, apart from what was asked: ``choice`` (the method chosen and why), ``stopped``
        (the round and the reason), ``null_players``, ``solver``, sample counts, notes on fallbacks.
    n_evaluations : int
        Game evaluations spent.
    empty_value, grand_value : float or ndarray or None
        ``v(empty set)`` and ``v(all players)`` when the method evaluated them.
    player_names : list of str
    base_values, feature_names
        shap's names of ``empty_value`` and ``player_names`` (read-only aliases).

    Examples
    --------
    >>> import fairshare as fs
    >>> phi = fs.exact(fs.games.AdditiveGame([1.0, -2.0]), "shapley")
    >>> phi.values
    array([ 1., -2.])
    >>> phi.to_dict()
    {'x0': 1.0, 'x1': -2.0}
    """

    _required: ClassVar[tuple[str, ...]] = ("index", "method")
    _plot_family: ClassVar[str] = "explanation"
    _default_plot: ClassVar[str | None] = "bar"
    _report: ClassVar[str | None] = "game"

    def to_explanation(self) -> Explanation:
        """These values as an :class:`~fairshare.Explanation` of one row (what its plots draw).

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.exact(fs.games.AdditiveGame([1.0, 2.0]), "shapley").to_explanation().values
        array([[1., 2.]])
        """
        empty = np.nan if self.empty_value is None else self.empty_value
        return Explanation(values=self.values[None], stderr=None if self.stderr is None else self.stderr[None],
                           empty_value=np.asarray(empty, dtype=float)[None], data=None,
                           player_names=list(self.player_names), index=self.index, method=self.method,
                           grand_value=None if self.grand_value is None else
                           np.asarray(self.grand_value, dtype=float)[None],
                           n_evaluations=np.array([self.n_evaluations]), options=dict(self.options),
                           info=dict(self.info))

    def _plotted(self) -> Explanation:
        return self.to_explanation()

    def __getitem__(self, player: str | int) -> Any:
        """Value of one player, by name or position.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.exact(fs.games.AdditiveGame([1.0, 3.0]), "banzhaf")["x1"]
        3.0
        """
        if isinstance(player, str) and player not in self.player_names:
            raise KeyError(f"unknown player name {player!r}; players: {self.player_names}")
        i = self.player_names.index(player) if isinstance(player, str) else \
            one_position(player, len(self.player_names), "players")
        v = self.values[i]
        return float(v) if np.ndim(v) == 0 else v

    def to_dict(self) -> dict[str, Any]:
        """Mapping from player name to value (floats for a scalar game, arrays otherwise)."""
        return {name: self[i] for i, name in enumerate(self.player_names)}

    def to_frame(self) -> Any:
        """A pandas DataFrame with one row per player: ``value`` and ``stderr`` columns
        (``value_j`` / ``stderr_j`` per output for a multi-output game).

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.exact(fs.games.AdditiveGame([1.0, 2.0]), "shapley").to_frame().columns.tolist()
        ['value', 'stderr']
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - exercised only without pandas
            raise ImportError("to_frame() needs pandas: pip install 'fairshare[ml]'") from exc
        frame = pd.DataFrame(value_columns(self.values, self.stderr), index=pd.Index(self.player_names, name="player"))
        frame.attrs.update(index=self.index, method=self.method, n_evaluations=self.n_evaluations)
        return frame

    def __repr__(self) -> str:
        head = (
            f"Attribution(index={self.index!r}, method={self.method!r}, n_players={self.n_players}, "
            f"n_evaluations={self.n_evaluations}"
            + (f", n_outputs={self.values.shape[1]}" if self.values.ndim == 2 else "")
            + ")"
        )
        multi = self.values.ndim == 2
        magnitude = np.abs(self.values).max(axis=1) if multi else np.abs(self.values)
        order = np.argsort(-magnitude, kind="stable")[:10]
        width = max(6, *(len(self.player_names[i]) for i in order))
        lines = [head, f"  {'player':<{width}}  {'value':>12}  {'stderr':>10}"]
        if multi:
            lines[-1] += "  (output with the largest |value|)"
        for i in order:
            j = (int(np.argmax(np.abs(self.values[i]))),) if multi else ()
            v = self.values[(i, *j)]
            s = "" if self.stderr is None else f"{self.stderr[(i, *j)]:>10.4g}"
            lines.append(f"  {self.player_names[i]:<{width}}  {v:>12.6g}  {s}" + (f"  [output {j[0]}]" if multi else ""))
        if self.n_players > len(order):
            lines.append(f"  ... {self.n_players - len(order)} more players (largest |value| shown)")
        return "\n".join(lines)
