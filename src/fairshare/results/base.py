"""The one result base: what every result holds (values, standard errors, the empty coalition's value, the players,
the facts of the run), how it is saved and read back, how it plots, and shap's names for its fields.

Every result (:class:`~fairshare.Attribution`, :class:`~fairshare.Explanation`, :class:`~fairshare.Interactions`,
:class:`~fairshare.DataValues`, the tree door's interaction rows, the SBQ :class:`~fairshare.examples.Prototypes`) is a
:class:`Result` and adds only what is its own.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .storage import read_result, write_result

__all__ = ["Result", "Alias", "result_kinds", "frame_clash"]

#: class name -> result class, for :meth:`Result.load` (every subclass registers itself)
_KINDS: dict[str, type] = {}


def result_kinds() -> list[str]:
    """The result classes :meth:`Result.load` can read (those imported so far).

    Examples
    --------
    >>> import fairshare
    >>> {"Attribution", "Explanation", "Interactions", "DataValues"} <= set(result_kinds())
    True
    """
    return sorted(_KINDS)


def frame_clash(columns: list[str], empties: tuple | list = ("empty_value",), stderr: bool = True,
                index: str | None = None) -> str | None:
    """What makes :meth:`Explanation.to_frame`'s column names ambiguous, or None: a player's column named as the
    empty coalition's value column, as another player's ``stderr:`` column, or as ``index`` (the rows' index
    ``row``, a column once ``to_frame().reset_index()`` inserts it, as the command line writes it).

    Examples
    --------
    >>> frame_clash(["a", "b"], index="row") is None
    True
    >>> frame_clash(["empty_value", "b"])
    "the player 'empty_value' has the name of the empty coalition's value column"
    """
    taken = {e: "the empty coalition's value" for e in empties}
    if stderr:
        taken.update({f"stderr:{c}": f"the standard errors of {c!r}" for c in columns})
    if index is not None:
        taken[index] = "the rows' index"
    named = next((c for c in columns if c in taken), None)
    if named is None:
        return None
    return f"the player {named!r} has the name of {taken[named]} column"


class Alias:
    """A read-only second name of a field (shap's names: ``base_values`` for ``empty_value``, ``feature_names`` for
    ``player_names``). Reading it gives the field (through the result's ``view`` method when one is named), an array
    as a read-only view and a list as a copy, so that nothing written through the alias changes the field;
    assigning or deleting it raises an AttributeError that names the field to set instead.

    Examples
    --------
    >>> class Box:
    ...     size = 3
    ...     width = Alias("size")
    >>> Box().width
    3
    >>> Box().width = 4
    Traceback (most recent call last):
    ...
    AttributeError: width is a read-only alias of size: set size instead
    """

    def __init__(self, target: str, view: str | None = None, doc: str = "") -> None:
        self.target, self.view = target, view
        self.__doc__ = doc or f"Read-only alias of ``{target}``."

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = getattr(obj, self.target)
        return _read_only(getattr(obj, self.view)(value) if self.view else value)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"{self.name} is a read-only alias of {self.target}: set {self.target} instead")

    def __delete__(self, obj: Any) -> None:
        raise AttributeError(f"{self.name} is a read-only alias of {self.target}: it cannot be deleted")


def _read_only(value: Any) -> Any:
    """What an alias gives: an array as a read-only view, a list as a copy (changing it changes no field).

    Examples
    --------
    >>> _read_only(np.zeros(2)).flags.writeable, _read_only(["a"]) == ["a"]
    (False, True)
    """
    if isinstance(value, np.ndarray):
        value = value.view()
        value.flags.writeable = False
        return value
    return list(value) if isinstance(value, list) else value


@dataclass(eq=False)
class Result:
    """What every result holds, in one vocabulary.

    Attributes
    ----------
    values : ndarray
        One value per player (per row and player for results of many rows; per subset for interactions).
    stderr : ndarray like ``values``, or None
        Standard error of each value; None where the method gives none (exact methods report zeros).
    index : str or None
        The index computed (``"shapley"``, ``"banzhaf"``, ``"k-sii"``, ...).
    method : str or None
        Registry key of the method that ran (``"exact"``, ``"kernelshap"``, ...).
    options : dict
        The method's options as it ran them.
    info : dict
        Facts of the run, apart from what was asked: ``choice`` (the method chosen and why), ``budget``, ``seed``,
        ``stopped``, the imputation, notes on fallbacks (what a door knows; results of one game carry fewer).
    n_evaluations : int or ndarray
        Game evaluations spent (per row for results of many rows).
    empty_value, grand_value
        ``v(empty set)`` (the base value) and ``v(all players)``, where known.
    player_names : list of str

    Only ``values`` and ``stderr`` may be given by position; the rest are keywords. ``np.asarray(result)`` is
    ``result.values``. ``save(path)`` writes one ``.npz`` file that :meth:`load` reads back field for field.

    shap's names are read-only aliases: ``base_values`` is ``empty_value`` (one per row for results of many rows, as
    shap's ``Explanation.base_values``), ``feature_names`` is ``player_names``; assigning either raises an
    AttributeError that names the field. ``plot("scatter", ...)`` is ``plot("dependence", ...)``.

    Examples
    --------
    >>> import fairshare as fs
    >>> phi = fs.exact(fs.games.AdditiveGame([1.0, -2.0]), "shapley")
    >>> isinstance(phi, Result), phi.feature_names, phi.base_values
    (True, ['x0', 'x1'], 0.0)
    """

    values: np.ndarray
    stderr: np.ndarray | None
    _: KW_ONLY
    index: Any = None
    method: str | None = None
    options: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    n_evaluations: Any = None
    empty_value: Any = None
    grand_value: Any = None
    player_names: list[str] = field(default_factory=list)

    #: keywords a subclass cannot do without (checked as the dataclass checks its own required arguments)
    _required: ClassVar[tuple[str, ...]] = ()
    #: the family its plots are registered under in :mod:`fairshare.results.plotting`, and the plot drawn by default
    _plot_family: ClassVar[str] = ""
    _default_plot: ClassVar[str | None] = None
    #: how :meth:`to_html` reads it: ``"rows"`` (an Explanation), ``"game"`` (one game's values, drawn as the
    #: Explanation of one row), ``"subsets"`` (interaction values), None (no report)
    _report: ClassVar[str | None] = None

    base_values = Alias("empty_value", view="_per_row",
                        doc="shap's name for ``empty_value`` (read-only): one per row for results of many rows.")
    feature_names = Alias("player_names", doc="shap's name for ``player_names`` (read-only).")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _KINDS[cls.__name__] = cls

    def __post_init__(self) -> None:
        missing = [name for name in self._required if getattr(self, name) is None]
        if missing:
            raise TypeError(f"{type(self).__name__}() missing required keyword argument(s): "
                            f"{', '.join(map(repr, missing))}")
        self.values = np.asarray(self.values, dtype=float)
        if self.stderr is not None:
            self.stderr = np.asarray(self.stderr, dtype=float)
            if self.stderr.shape != self.values.shape:
                raise ValueError(f"stderr shape {self.stderr.shape} differs from values shape {self.values.shape}")
        count = self._count_players()
        names = [] if self.player_names is None else list(self.player_names)
        self.player_names = names if names or count is None else [f"x{i}" for i in range(count)]
        if count is not None and len(self.player_names) != count:
            raise ValueError(f"player_names must have one entry per player ({count}), got {len(self.player_names)}")
        if self.n_evaluations is None:
            self.n_evaluations = self._no_evaluations()

    # ------------------------------------------------------------------------- what subclasses shape
    def _count_players(self) -> int | None:
        """The number of players ``values`` holds (None: not checked against the names)."""
        return int(self.values.shape[0]) if self.values.ndim else None

    def _no_evaluations(self) -> Any:
        """``n_evaluations`` when none was given."""
        return 0

    def _per_row(self, empty_value: Any) -> Any:
        """``base_values``: the empty coalition's value as shap lays it out (one game: as it is)."""
        return empty_value

    def _plotted(self) -> Any:
        """What the registered plots draw (the result itself, or the Explanation it is a row of)."""
        return self

    # --------------------------------------------------------------------------------- common views
    @property
    def n_players(self) -> int:
        """Number of players."""
        return len(self.player_names)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(result)`` is ``result.values``."""
        return np.array(self.values, dtype=dtype, copy=copy)

    # ----------------------------------------------------------------------------------- storage
    def save(self, path: str | Path) -> Path:
        """Write to ``path`` (one ``.npz`` file: the arrays as members, the other fields as JSON); :meth:`load`
        reads it back. Returns the path.

        Examples
        --------
        >>> import tempfile, os, fairshare as fs
        >>> phi = fs.exact(fs.games.AdditiveGame([1.0, -2.0]), "banzhaf")
        >>> p = phi.save(os.path.join(tempfile.mkdtemp(), "phi.npz"))
        >>> Result.load(p).values
        array([ 1., -2.])
        """
        return write_result(path, type(self).__name__, {f.name: getattr(self, f.name) for f in fields(self)
                                                        if f.init})

    @classmethod
    def load(cls, path: str | Path) -> Result:
        """Read a result written by :meth:`save` (its own class; ``Explanation.load`` also reads files written before
        the format named its class). Read without pickle; a file of another kind of result is refused; members of
        the file that are no field of the result (what a cache adds beside it) are left there.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.Attribution.load("missing.npz")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no result file at missing.npz
        """
        kind, stored = read_result(path)
        kind = kind or "Explanation"                        # files from before the format: Explanation.save's
        target = _KINDS.get(kind)
        if target is None:
            raise ValueError(f"{path} holds a {kind} result, which is not loaded (results known: {result_kinds()}); "
                             "import the module that defines it")
        if not issubclass(target, cls):
            raise TypeError(f"{path} holds a result of kind {kind}, not {cls.__name__}")
        names = {f.name for f in fields(target) if f.init}          # other members (a cache's owner) stay in the file
        return target(**{"stderr": None, **{name: value for name, value in stored.items() if name in names}})

    # -------------------------------------------------------------------------------------- report
    def to_html(self, path: str | Path, *, title: str | None = None, model: Any = None, output: Any = None,
                max_display: int = 20) -> Path:
        """Write one self-contained HTML report of this result to ``path`` (style, data and script inline; no
        network, no fonts or libraries fetched): the method, budget, seed, model calls and library versions; the
        summary plots (bar of mean |value|, beeswarm); a row picker with each row's waterfall and table of values with
        two-standard-error bars (the address keeps the row: ``report.html#row=12`` opens at row 12); a text's tokens
        shaded by value; an image's values over it; pairwise interactions. Every name, token and label is escaped.
        Returns the path.

        ``output``: which output of several (name or position; default the positive class of a binary classifier,
        else the first). ``model``: the model, so its library's version is shown too. ``max_display``: players
        drawn in the plots (the others summed in one bar; the tables list every player).

        Examples
        --------
        >>> import fairshare as fs, os, tempfile
        >>> e = fs.explain(lambda X: X @ [1.0, 2.0], np.eye(2), np.zeros((1, 2)), progress=False)
        >>> path = e.to_html(os.path.join(tempfile.mkdtemp(), "report.html"))
        >>> "x1" in path.read_text(encoding="utf-8")
        True
        """
        from .report import write_html

        return write_html(self, path, title=title, model=model, output=output, max_display=max_display)

    # ------------------------------------------------------------------------------------- plots
    def plot(self, kind: str | None = None, *args: Any, **kwargs: Any) -> Any:
        """Draw a plot registered for this kind of result (:mod:`fairshare.plots`; ``"scatter"`` is shap's name of
        ``"dependence"``); returns the axes.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.interactions(fs.games.SOUMGame([[True, True]], [1.0]), "sii", method="exact").plot("pie")
        Traceback (most recent call last):
        ...
        ValueError: kind must be one of ['heatmap', 'network'] or an alias ['scatter'], got 'pie'
        """
        from .plotting import draw

        return draw(self._plot_family, kind or self._default_plot, self._plotted(), *args, **kwargs)
