"""The Game contract: a set function evaluated on batches of coalitions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._core.arguments import check_coalitions, check_int, check_unique_names, format_coalition
from .._core.arrays import is_tensor
from ..indices.moebius import interactions_from_terms
from ..indices.semivalues import Semivalue

__all__ = ["Game", "GameWrapper", "SameValues", "KINDS", "check_output_axes"]

#: what a game can declare itself to be (``Game.kind``); the method choice prefers methods by kind
KINDS = ("function", "model", "tree", "torch", "data", "synthetic")


def check_output_axes(shape: tuple[int, ...], source: str = "the model") -> None:
    """Refuse a model whose output per row has more than one axis (``shape``: a batch's, rows first), naming that
    shape: values are explained per output, one output or a vector of them per row, and flattening the axes would
    explain each cell under a position the model never named; or none (a vector of no output per row).

    Examples
    --------
    >>> check_output_axes((5, 3))                       # a vector of 3 outputs per row
    >>> check_output_axes((5, 2, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the model returned outputs of shape (2, 2) per row (an array of shape (5, 2, 2) for a batch of 5 ...
    """
    if len(shape) == 2 and int(shape[1]) == 0:
        raise ValueError(f"{source} returned no output per row (an array of shape {tuple(int(d) for d in shape)}): "
                         "fairshare explains one output or a vector of at least one per row")
    if len(shape) <= 2:
        return
    per_row, every = tuple(int(d) for d in shape[1:]), tuple(int(d) for d in shape)
    raise ValueError(f"{source} returned outputs of shape {per_row} per row (an array of shape {every} for a "
                     f"batch of {every[0]} rows): fairshare explains one output or a vector of outputs per row; "
                     f"flatten them in the model to explain its {math.prod(per_row)} outputs in C order (e.g. "
                     "lambda X: model(X).reshape(len(X), -1)), or give a model of the one output to explain")


class Game:
    """A cooperative game (set function) over ``n_players`` players.

    Everything in fairshare talks to a game through one batched call,
    ``game(coalitions)``, where ``coalitions`` is a boolean ``(m, n_players)``
    array; it returns ``(m,)`` floats, or ``(m, k)`` for a game with ``k``
    outputs (class probabilities, say). The game validates its input and output,
    counts evaluations, and splits huge requests into calls of at most
    ``batch_size`` coalitions.

    Subclasses implement :meth:`_evaluate`; games that know their exact values
    also implement :meth:`exact_values`.

    Parameters
    ----------
    n_players : int
        Number of players (features, groups, data points), at least 1.
    player_names : sequence of str, optional
        One name per player; defaults to ``"x0", "x1", ...``.
    batch_size : int, optional
        Largest number of coalitions passed to :meth:`_evaluate` in one call.

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> class Size(fs.Game):
    ...     def _evaluate(self, coalitions):
    ...         return coalitions.sum(axis=1).astype(float)
    >>> g = Size(3)
    >>> g(np.array([[True, True, False]]))
    array([2.])
    >>> g.n_evaluations
    1
    """

    def __init__(self, n_players: int, player_names: Any = None, batch_size: int | None = None) -> None:
        self.n_players = check_int(n_players, "n_players", minimum=1)
        if player_names is None:
            self.player_names = [f"x{i}" for i in range(self.n_players)]
        else:
            names = [str(p) for p in player_names]
            if len(names) != self.n_players:
                raise ValueError(
                    f"player_names must have one name per player ({self.n_players}), got {len(names)}"
                )
            self.player_names = check_unique_names(names, "player_names")
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.n_evaluations = 0
        self.n_outputs: int | None = None  # None until known; 0 marks a scalar game

    # ------------------------------------------------------------------ facts
    #: what the game is (one of :data:`KINDS`): ``"data"`` games (model fits) prefer truncated Monte Carlo for
    #: Shapley values, the others the regression estimators
    kind = "function"

    def cost(self) -> float | None:
        """Predicted seconds per evaluation, from what the game knows of itself (a fixed cost model, never a
        timing, so that the same arguments give the same method choice); None when it cannot tell.

        The method choice spends extra work (the tree control variate's surrogate fits) only where it stays a
        small share of the game's own cost. The default knows nothing.
        """
        return None

    def call_seconds(self) -> float:
        """Predicted seconds each call of the game's model costs whatever its rows (a frame built, a library's
        checks): a fixed cost model. A game split into parts (:meth:`parts`) makes a call per part and round, so
        ``auto`` counts it (:mod:`fairshare.engine.split`). The default: none.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.games.AdditiveGame([1.0, 2.0]).call_seconds()
        0.0
        """
        return 0.0

    def table_seconds(self) -> float | None:
        """Predicted seconds of a table of all ``2^n`` coalitions that the game reads every evaluation from (a tree
        game's probability or log loss on few features), or None when it evaluates coalitions one by one; where it
        has one, ``auto`` takes exact values from it (:mod:`fairshare.engine.choice`).

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.games.AdditiveGame([1.0, 2.0]).table_seconds() is None
        True
        """
        return None

    # ------------------------------------------------------------------ calls
    #: whether :meth:`_evaluate` takes a torch tensor of coalitions (and then answers with one, on its device)
    accepts_tensors = False

    def __call__(self, coalitions: Any) -> np.ndarray:
        """Evaluate the game on a boolean ``(m, n_players)`` array of coalitions."""
        if is_tensor(coalitions):
            return self._call_tensor(coalitions)
        X = check_coalitions(coalitions, self.n_players)
        m = X.shape[0]
        step = self.batch_size or max(m, 1)
        parts = [self._checked(X[start:start + step]) for start in range(0, m, step)]
        if not parts:
            return np.zeros((0,) if not self.n_outputs else (0, self.n_outputs))
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def _call_tensor(self, X: Any) -> Any:
        """Coalitions as a torch tensor: a game that accepts them keeps them (and its values) on their device;
        any other game gets them as numpy and its values come back as a tensor on the same device."""
        import torch

        if X.ndim != 2 or X.shape[1] != self.n_players:
            raise ValueError(f"coalitions must have shape (m, {self.n_players}), got {tuple(X.shape)}")
        if X.dtype != torch.bool:
            raise TypeError(f"coalitions must be a boolean tensor, got {X.dtype}")
        if not self.accepts_tensors:
            return torch.as_tensor(self(X.cpu().numpy()), device=X.device)
        step = self.batch_size or max(X.shape[0], 1)
        parts = []
        for start in range(0, X.shape[0], step):
            out = self._evaluate(X[start:start + step])
            self.n_evaluations += int(min(step, X.shape[0] - start))
            out = out.to(torch.float64)
            if out.ndim not in (1, 2) or out.shape[0] != min(step, X.shape[0] - start) or out.ndim == 2 and \
                    out.shape[1] == 0:
                raise ValueError(f"the game must return one value (or row of k >= 1) per coalition, got shape "
                                 f"{tuple(out.shape)}")
            k = 0 if out.ndim == 1 else out.shape[1]
            if self.n_outputs is None:
                self.n_outputs = k
            elif k != self.n_outputs:
                raise ValueError(f"the game returned {k or 'scalar'} outputs, earlier calls returned "
                                 f"{self.n_outputs or 'scalar'}")
            if not bool(torch.isfinite(out).all()):
                raise ValueError("the game returned NaN or inf for some coalitions")
            parts.append(out)
        if not parts:
            return torch.zeros((0,) if not self.n_outputs else (0, self.n_outputs), dtype=torch.float64,
                               device=X.device)
        return torch.cat(parts)

    def _checked(self, X: np.ndarray) -> np.ndarray:
        out = np.asarray(self._evaluate(X))
        self.n_evaluations += X.shape[0]
        if out.dtype.kind not in "biuf":
            raise TypeError(f"the game must return numbers, got an array of dtype {out.dtype}")
        out = out.astype(float, copy=False)
        if out.ndim not in (1, 2) or out.shape[0] != X.shape[0] or out.ndim == 2 and out.shape[1] == 0:
            raise ValueError(
                f"the game must return shape ({X.shape[0]},) or ({X.shape[0]}, k) for {X.shape[0]} "
                f"coalitions, k >= 1, got {out.shape}"
            )
        k = 0 if out.ndim == 1 else out.shape[1]
        if self.n_outputs is None:
            self.n_outputs = k
        elif k != self.n_outputs:
            raise ValueError(f"the game returned {k or 'scalar'} outputs, earlier calls returned {self.n_outputs or 'scalar'}")
        bad = ~np.isfinite(out) if out.ndim == 1 else ~np.all(np.isfinite(out), axis=1)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"the game returned NaN or inf for {int(bad.sum())} of {X.shape[0]} coalitions; "
                f"e.g. coalition {format_coalition(X[first], self.player_names)} gave {out[first]}"
            )
        return out

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        """Values of a validated boolean ``(m, n_players)`` batch: ``(m,)`` or ``(m, k)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement _evaluate(coalitions)")

    # ----------------------------------------------------------- exact values
    def exact_values(self, index: Semivalue) -> np.ndarray | None:
        """Closed-form values for ``index`` when the game knows them, else None.

        Returns ``(n_players,)`` or ``(n_players, k)``. The default knows nothing.
        """
        return None

    def null_players(self) -> np.ndarray | None:
        """Boolean mask of players known never to change the game's value (or None).

        Estimators solve the smaller game of the other players and give these players 0, which
        is exact for every semivalue (the null-player axiom; the weights of the smaller game are
        ``p_t + p_(t+1)``). E.g. features whose explicand and baseline values coincide.
        """
        return None

    def parts(self) -> list[Game] | None:
        """Games whose mean is this game, each evaluated on its own (or None: the game is one whole).

        A model explained over ``B`` background rows is the mean of ``B`` games, one per background row, each with
        its own null players (the features where the explicand equals that row). ``auto`` may estimate each part
        on its own share of the evaluations (:mod:`fairshare.engine.split`): the same model rows, spent where the
        parts' players are. The default is one whole.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.games.AdditiveGame([1.0, 2.0]).parts() is None
        True
        """
        return None

    def knows_exact_values(self, index: Semivalue) -> bool:
        """Cheap check: does :meth:`exact_values` give a closed form for ``index``?

        The default says yes for any game class that overrides :meth:`exact_values`;
        a game that knows only some indices overrides this too.
        """
        return type(self).exact_values is not Game.exact_values

    def moebius_terms(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The game's non-empty Moebius terms ``(carriers (K, n) bool, coefficients (K,) or (K, k))`` when it knows
        them (``v(S) = v(empty) + sum_t a_t [T_t subset of S]``), else None. Interaction values of every index
        follow from them exactly. The default knows none.
        """
        return None

    def knows_exact_interactions(self, index: Any) -> bool:
        """Cheap check: does :meth:`exact_interactions` give closed-form interaction values for ``index``?"""
        return type(self).moebius_terms is not Game.moebius_terms

    def exact_interactions(self, index: Any, subsets: np.ndarray) -> np.ndarray | None:
        """Closed-form values ``(p, k)`` of ``index`` (an :class:`~fairshare.InteractionIndex`) for the padded
        ``subsets`` rows, or None. The default uses :meth:`moebius_terms`.

        Examples
        --------
        >>> import fairshare as fs
        >>> from fairshare.indices.interactions import subsets_up_to
        >>> g = fs.games.SOUMGame([[True, True]], [2.0])
        >>> g.exact_interactions(fs.InteractionIndex("sii", 2), subsets_up_to(2, 2))[:, 0]
        array([1., 1., 2.])
        """
        terms = self.moebius_terms()
        if terms is None:
            return None
        return interactions_from_terms(terms[0], terms[1], index, subsets)

    # ---------------------------------------------------------------- helpers
    def empty_and_full(self) -> np.ndarray:
        """Boolean ``(2, n)`` array holding the empty and the grand coalition.

        Examples
        --------
        >>> import fairshare as fs
        >>> fs.games.AdditiveGame([1.0, 2.0]).empty_and_full().astype(int)
        array([[0, 0],
               [1, 1]])
        """
        out = np.zeros((2, self.n_players), dtype=bool)
        out[1] = True
        return out

    def reset_evaluations(self) -> None:
        """Set the evaluation counter back to zero."""
        self.n_evaluations = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_players={self.n_players})"


class GameWrapper(Game):
    """A game evaluated through another one (``self.game``: cached, distributed, restricted, noisy): it declares
    what the inner game declares (its kind and its cost per evaluation).

    Examples
    --------
    >>> import fairshare as fs
    >>> inner = fs.games.FunctionGame(lambda S: S.sum(axis=1), n_players=2, cost=1e-3)
    >>> fs.games.RestrictedGame(inner, [1]).cost()
    0.001
    """

    game: Game

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.game.kind

    def cost(self) -> float | None:
        return self.game.cost()

    def call_seconds(self) -> float:
        return self.game.call_seconds()

    def table_seconds(self) -> float | None:
        return self.game.table_seconds()


class SameValues(GameWrapper):
    """A wrapper whose values are the inner game's, evaluated elsewhere (a cache on disk, a cluster): it knows what
    the inner game knows (closed-form values and interactions, null players), so a cache or a cluster leaves a
    closed form one (an additive game explained with ``cache=`` at a budget of 100 was enumerated: '256 more
    evaluations would exceed the budget of 100').

    Examples
    --------
    >>> import fairshare as fs, tempfile
    >>> from fairshare.games.cached import CachedGame
    >>> CachedGame(fs.games.AdditiveGame([1.0, 2.0]), tempfile.mkdtemp()).exact_values(fs.Semivalue.shapley())
    array([1., 2.])
    """

    def null_players(self) -> np.ndarray | None:
        return self.game.null_players()

    def parts(self) -> list[Game] | None:
        """The inner game's parts, each wrapped as this game is (:meth:`part_of`); None where it cannot wrap them."""
        inner = self.game.parts()
        wrapped = None if inner is None else [self.part_of(p, b) for b, p in enumerate(inner)]
        return None if wrapped is None or any(w is None for w in wrapped) else wrapped

    def part_of(self, part: Game, b: int) -> Game | None:
        """Part ``b`` of the inner game wrapped as this game wraps it; the default: None (the game stays whole,
        as it must where a wrapper does not know how to wrap a part)."""
        return None

    def knows_exact_values(self, index: Semivalue) -> bool:
        return self.game.knows_exact_values(index)

    def exact_values(self, index: Semivalue) -> np.ndarray | None:
        return self.game.exact_values(index)

    def moebius_terms(self) -> tuple[np.ndarray, np.ndarray] | None:
        return self.game.moebius_terms()

    def knows_exact_interactions(self, index: Any) -> bool:
        return self.game.knows_exact_interactions(index)

    def exact_interactions(self, index: Any, subsets: np.ndarray) -> np.ndarray | None:
        return self.game.exact_interactions(index, subsets)
