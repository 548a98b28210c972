"""A game as the input: ``fs.explain(game, budget=..., seed=...)``, one item, the game itself.

Any :class:`~fairshare.Game` is explained through the same door as data (the one scheduler: cache and resume, Dask,
seeds, stopping rules; the method chosen once). A game with a hierarchy of its players (``game.hierarchy()``: a
:class:`~fairshare.games.GenerationGame`'s document > paragraphs > sentences > words) gets Owen values over it when it
has more than :data:`LONG` players and the index and method are left at their defaults, so ``auto`` walks the tree
with ``owen-adaptive``; a method that estimates Shapley values (``method="kernelshap"``, ``"permutation"``, ...)
gets Shapley values, ``index="owen"`` the game's hierarchy (or ``partition=``). A generation game's Explanation
holds its spans' text (``e.plot("text")``, ``e._repr_html_()``), its answer's tokens as the outputs' names with
``per_token=True``, and in ``info`` the forward passes the model ran (not coalitions: the greedy continuation's and
the KV cache's passes are counted too).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..engine.choice import choose
from ..engine.registry import get_method
from ..games.base import Game
from ..indices.hierarchy import OwenIndex, resolve_value_index
from ..indices.semivalues import Semivalue
from ..results.explanation import Explanation
from .base import Input, Plan, default_budget

__all__ = ["GameInput", "LONG"]

#: more players than this, with a hierarchy: Owen values over it by default (a budget of a few thousand passes
#: resolves every player's Shapley value by regression up to about this many players)
LONG = 64
#: explain's arguments that have no meaning for a game (its players and values are the game's own)
_DATA_ONLY = ("imputation", "groups", "feature_names", "model_output", "y", "tokenizer", "mask_token", "batch_size",
              "interactions")
#: what a game's state gains as it runs, left out of its cache key: counts of evaluations, fits and seconds, the
#: outputs it learns it has, a scratch buffer, the hook a cache sets on it (a ModelGame or TorchGame explained again
#: with its cache folder was refused as another run: its '_buffer', 'seconds' and 'on_batch' had changed)
_COUNTERS = ("n_evaluations", "n_outputs", "calls", "sequences", "lm", "on_batch", "_buffer", "seconds", "n_fits",
             "reused", "degenerate")


class GameInput(Input):
    """A :class:`~fairshare.Game` explained as it is: one item, its players and values the game's.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(fs.games.AdditiveGame([1.0, -2.0, 0.5]), progress=False)
    >>> e.values.tolist(), e.method
    ([[1.0, -2.0, 0.5]], 'exact')
    """

    kind = "game"
    noun = "game"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return isinstance(model, Game) and X is None

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        given = (["background"] if background is not None else []) + \
            [n for n in _DATA_ONLY if args.get(n) is not None] + (["link"] if args.get("link") != "identity" else [])
        if given:
            raise ValueError(f"{', '.join(given)}: not used when explaining a game (its players and values are its "
                             "own; a generation game takes batch_size itself); leave them out")
        self.game_, self.model, self.client = model, _identity(model), args.get("client")
        self.before = _counts(model)                   # a game explained again: its counts of this run only
        self.n_items, self.item_names = 1, ["0"]
        self.why_index = ""

    def game(self, i: int) -> Game:
        return self.game_

    def value_index(self, args: dict) -> Any:
        """The index: Owen values over the game's hierarchy for a long game with the default index and method
        (or a method of Owen values only, or ``index="owen"`` without a partition), else what ``index`` says."""
        game, index, partition = self.game_, args["index"], args["partition"]
        hierarchy = game.hierarchy() if callable(getattr(game, "hierarchy", None)) else None
        if isinstance(index, str) and index.strip().lower() == "owen" and partition is None and hierarchy is not None:
            self.why_index = "index='owen': the game's hierarchy"
            return OwenIndex(_hierarchy(hierarchy, game.n_players))
        default = isinstance(index, Semivalue) and index.name == "shapley" and partition is None
        if default and hierarchy is not None:
            method = args["method"]
            owen_only = method != "auto" and not get_method(method).supports(index)
            if owen_only or (method == "auto" and game.n_players > LONG):
                self.why_index = (f"Owen values over the game's hierarchy: method {method!r} estimates Owen values"
                                  if owen_only else f"Owen values over the game's hierarchy: {game.n_players} players "
                                  f"> {LONG} (name a Shapley method for Shapley values)")
                return OwenIndex(_hierarchy(hierarchy, game.n_players))
        return resolve_value_index(index, game.n_players, partition)

    def plans(self, args: dict, rule: Any, options: dict) -> list[Plan | None]:
        """The one plan: the index, the budget and the method chosen once; the method takes the game's own
        settings of its options (a generation game's ``GenerationGame.walks`` and ``.refine`` for
        ``owen-adaptive``, ``.shrink`` for ``regression``) unless they are given."""
        sv = self.value_index(args)
        budget = args["budget"] if args["budget"] is not None else default_budget(self.game_.n_players)
        choice = choose(self.game_, sv, args["method"], budget, rule, options)
        takes = {o.name for o in get_method(choice.method).options}
        own = {name: getattr(self.game_, name, None) for name in ("walks", "refine", "shrink") if name in takes}
        own = {k: v for k, v in own.items() if k not in options and isinstance(v, int)}    # a bool is an int
        if own:
            said = ", ".join(f"{k}={v}" for k, v in own.items())
            choice = replace(choice, options={**choice.options, **own}, reason=f"{choice.reason}; {said} (the game's)")
        return [Plan(sv, choice, budget)]

    def key(self) -> tuple[tuple, dict]:
        game = self.game_
        arrays = tuple(getattr(game, name) for name in ("prompt", "start", "target") if hasattr(game, name))
        ranges = getattr(game, "ranges", None)
        return arrays, dict(kind="game", game=type(game).__name__, names=list(game.player_names),
                            ranges=repr(ranges), removal=repr(getattr(game, "removal", None)),
                            per_token=bool(getattr(game, "per_token", False)))

    def item_data(self, i: int) -> Any:
        return np.asarray(getattr(self.game_, "prompt", np.array(self.game_.player_names, dtype=object)))

    def info(self) -> dict:
        return {"index_choice": self.why_index} if self.why_index else {}

    def result(self, results: list[dict], plans: list, info: dict) -> Explanation:
        r, plan, game = results[0], plans[0], self.game_
        k = r["values"].shape[1] if r["values"].ndim == 2 else None
        ran = dict(game.info()) if callable(getattr(game, "info", None)) else {}
        ran.update({k: v - self.before[k] for k, v in _counts(game).items()})
        if ran and self.client:                  # the game ran on the cluster: each coalition one sequence there
            ran["forward_passes"] = int(r["n_evaluations"])
            ran["forward_passes_counted"] = "on the cluster, one sequence per coalition evaluated there"
        text = {"text": game.prompt_text()} if callable(getattr(game, "prompt_text", None)) else {}
        names = None
        if k is not None:
            answer = ran.get("answer") if getattr(game, "per_token", False) else None
            names = [f"{j}:{t}" for j, t in enumerate(answer)] if answer else [str(j) for j in range(k)]
        data = np.array([list(game.span_texts)], dtype=object) if text else None
        return Explanation(values=r["values"][None], stderr=None if r["stderr"] is None else r["stderr"][None],
                           empty_value=r["empty"][None], grand_value=r["grand"][None], data=data,
                           player_names=list(r["names"]), index=plan.sv.name, method=plan.choice.method,
                           output_names=names, row_names=["0"], n_evaluations=np.array([int(r["n_evaluations"])]),
                           options=dict(plan.choice.options),
                           info={**info, **r["info"], **ran, **text, "budget": plan.budget})


def _hierarchy(nested: Any, n: int) -> Any:
    """A game's hierarchy as a partition of its ``n`` players (a flat list of players: one block of them)."""
    from ..indices.hierarchy import Hierarchy

    nested = list(nested)
    if all(isinstance(b, (int, np.integer)) for b in nested):
        nested = [[p] for p in nested]
    return Hierarchy(nested, n)


#: what a game's ``info()`` counts, of which a result reports its own run's share
_COUNTED = ("forward_passes", "model_calls", "positions_computed", "positions_without_kv_cache")


def _counts(game: Game) -> dict:
    info = game.info() if callable(getattr(game, "info", None)) else {}
    return {k: int(info[k]) for k in _COUNTED if isinstance(info.get(k), (int, np.integer))}


def _identity(game: Game) -> Any:
    """What identifies a game for a cache: its model (a generation game's: the LM or function and its settings are
    in :meth:`GameInput.key`), else its state without the counters that change as it runs."""
    if hasattr(game, "model") and hasattr(game, "prompt"):
        return game.model
    return {"class": type(game), **{k: v for k, v in vars(game).items() if k not in _COUNTERS}}
