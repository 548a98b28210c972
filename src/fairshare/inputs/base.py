"""The Input protocol: what ``fs.explain`` needs of any kind of data, whatever it is.

An :class:`Input` is built from the model, the data and the background, and checks them then (before any model
call). It knows its items (rows, texts, images: ``n_items``, ``item_names``) and their players, builds the game of
an item (whose coalitions become model inputs in one array operation), plans each item's method (:meth:`plans`:
the index, the budget, the method choice), and shapes the items' values back into the result (:meth:`result`). The
door runs every item through one scheduler (``doors/scheduler.py``), so a new input kind is one module (a subclass
here), its line in ``inputs/registry.py`` and its test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.tables import target_of
from ..engine.choice import Choice, choose
from ..games.base import Game
from ..indices.hierarchy import resolve_value_index
from ..results.explanation import Explanation

__all__ = ["Input", "Plan", "default_budget", "output_names"]


def default_budget(n_players: int) -> int:
    """``2n + 2048`` evaluations (shap.KernelExplainer's default), never more than ``2^n``.

    Examples
    --------
    >>> default_budget(8), default_budget(30)
    (256, 2108)
    """
    return int(min(2 ** min(n_players, 62), 2 * n_players + 2048))


def output_names(model: Any, k: int | None) -> list[str] | None:
    """The names of a model's ``k`` outputs: its classes where it has ``k`` of them, else their positions; None for
    one output.

    Examples
    --------
    >>> output_names(None, 2), output_names(None, None)
    (['0', '1'], None)
    """
    if k is None:
        return None
    classes = getattr(target_of(model), "classes_", None)
    return [str(c) for c in classes] if classes is not None and len(classes) == k else [str(j) for j in range(k)]


@dataclass
class Plan:
    """How one item is explained: its index (a semivalue or Owen index over its players), the method chosen and the
    budget per item."""

    sv: Any
    choice: Choice
    budget: int


class Input:
    """One kind of data to explain (subclasses: tables, frames, sparse tables, texts, sequences, torch inputs).

    Attributes
    ----------
    model : what is explained
    n_items : how many items (rows, texts, inputs)
    item_names : one label per item (a frame's index, positions)
    noun : what an item is called in progress bars and errors ("row", "text", "input")
    """

    kind = "input"
    noun = "row"
    model: Any
    n_items: int
    item_names: list[str]

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        """Whether this kind reads ``X`` (the registry asks the kinds in order)."""
        raise NotImplementedError

    def game(self, i: int) -> Game:
        """The game of item ``i``: its players' coalitions, as model inputs, give the model's outputs."""
        raise NotImplementedError

    def partition(self, game: Game, args: dict) -> Any:
        """``args["partition"]`` over the players' positions (names resolved), or None."""
        return args["partition"]

    def check(self, args: dict) -> None:
        """Refuse, before anything is planned, what this data cannot be explained with (default: nothing)."""

    def value_index(self, args: dict) -> Any:
        """The index (semivalue, or Owen index over the partition) of the items' values."""
        game = self.game(0)
        return resolve_value_index(args["index"], game.n_players, self.partition(game, args))

    def plans(self, args: dict, rule: Any, options: dict) -> list[Plan | None]:
        """Each item's plan, every check made, no model call: by default one plan, from the first item's game,
        shared by every item (the facts the method choice reads are the same for every row)."""
        game = self.game(0)
        sv = self.value_index(args)
        budget = args["budget"] if args["budget"] is not None else default_budget(game.n_players)
        plan = Plan(sv, choose(game, sv, args["method"], budget, rule, options), budget)
        return [plan] * self.n_items

    def closed_form(self, plans: list, args: dict, seed: Any, options: dict) -> Any:
        """The result for every item at once where a closed form gives it without the scheduler (tree models),
        else None."""
        return None

    def key(self) -> tuple[tuple, dict]:
        """What identifies this data for a cache: arrays and settings (with the model, the plan and the seed)."""
        raise NotImplementedError

    def item_data(self, i: int) -> Any:
        """Item ``i``'s data, whose hash a cache file records so that a file of another item is never read."""
        raise NotImplementedError

    def info(self) -> dict:
        """What the result records of the input (the model output explained, the imputation, shapes)."""
        return {}

    def data(self) -> Any:
        """The items' feature values as the result shows them (None where players are not features)."""
        return None

    def output_model(self) -> Any:
        """The model whose classes name the outputs."""
        return self.model

    def empty_item(self, i: int) -> dict:
        """The result of an item with no players (an empty text)."""
        raise NotImplementedError

    def result(self, results: list[dict], plans: list, info: dict) -> Any:
        """The items' results as one Explanation (rows stacked); texts override it (one per text)."""
        values = np.stack([r["values"] for r in results])
        stderr = None if any(r["stderr"] is None for r in results) else np.stack([r["stderr"] for r in results])
        choice = plans[0].choice
        info = split_rows(info, [r["info"] for r in results])
        return Explanation(values=values, stderr=stderr, empty_value=np.stack([r["empty"] for r in results]),
                           grand_value=np.stack([r["grand"] for r in results]), data=self.data(),
                           player_names=list(results[0]["names"]), index=plans[0].sv.name, method=choice.method,
                           output_names=output_names(self.output_model(), values.shape[2] if values.ndim == 3
                                                     else None),
                           row_names=self.item_names,
                           n_evaluations=np.array([int(r["n_evaluations"]) for r in results]),
                           options=dict(choice.options), info={**info, "rows": [r["info"] for r in results]})


def split_rows(info: dict, rows: list[dict]) -> dict:
    """The door's ``info`` with the rows that ``auto`` split into one part per background row counted in its
    choice (:mod:`fairshare.engine.split`; each such row's info holds its ``split`` and its own ``choice``).

    Examples
    --------
    >>> split_rows({"choice": {"method": "regression", "why": "w"}}, [{"split": {}}, {}])["choice"]["split_rows"]
    1
    """
    split = sum("split" in r for r in rows)
    if not split or "choice" not in info:
        return info
    why = (f"{info['choice'].get('why', '')}; {split} of {len(rows)} rows ran as the mean of one part per background "
           "row (each part on its own players and share of the model rows; the row's info holds its split)")
    return {**info, "choice": {**info["choice"], "why": why, "split_rows": split}}
