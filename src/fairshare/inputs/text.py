"""Texts: one game per text (its tokens are the players), one Explanation per text.

Texts have ragged lengths, so each gets its own plan (the same rule as for tables: exact values when the budget
covers the coalitions, else the preferred estimator; Owen values over its sentences and phrases), its own seed
(:func:`fairshare._core.seeds.item_seeds`, so the same seed gives the same values whatever ``n_jobs``) and its own
Explanation, whose ``data`` are the tokens. An empty text is warned about by position and gets no players.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core.errors import FairshareWarning
from ..engine.choice import choose
from ..games.base import Game
from ..games.model import LINKS
from ..games.text import TextGame, text_hierarchy, tokenize
from ..indices.hierarchy import resolve_value_index
from ..results.explanation import Explanation
from ..store.keys import model_key
from .base import Input, Plan, default_budget, output_names

__all__ = ["TextInput", "is_texts", "text_predict", "check_tokenizer", "check_mask_token", "check_text_model"]

#: explain's arguments that have no meaning for texts
_TABLE_ONLY = ("imputation", "groups", "model_output", "y", "interactions", "feature_names")


_NUMBERS = (int, float, np.integer, np.floating)


def is_texts(X: Any) -> bool:
    """Whether ``X`` is a text or a collection of texts (str, list / tuple / array / Series of str).

    Examples
    --------
    >>> import pandas as pd
    >>> is_texts("a b"), is_texts(["a", "b c"]), is_texts([[1.0, 2.0]]), is_texts(pd.Series(["Paris", 30.0]))
    (True, True, False, False)
    """
    if isinstance(X, str):
        return True
    items = _items(X)
    if items is None or not items or not any(isinstance(v, str) for v in items):
        return False
    if hasattr(X, "index") and hasattr(X, "dtype") and any(       # a Series of words beside numbers: a frame's row
            isinstance(v, _NUMBERS) and not isinstance(v, bool) and np.isfinite(float(v)) for v in items):
        return False
    for position, v in enumerate(items):                  # some strings: texts, each of them a string
        if not isinstance(v, str):
            raise TypeError(f"X holds texts, but X[{position}] is {type(v).__name__} ({v!r:.40}); every text must be "
                            "a string (an empty text is '')")
    return True


def _items(X: Any) -> list | None:
    """The elements of a one-dimensional collection (list, tuple, array or Series), or None for anything else."""
    values = getattr(X, "values", X) if hasattr(X, "dtype") and not hasattr(X, "columns") else X
    if isinstance(values, np.ndarray):
        return list(values) if values.ndim == 1 and (values.dtype.kind == "U" or values.dtype == object) else None
    if values is not X and getattr(X, "ndim", None) == 1 and _string_dtype(X.dtype):     # pandas' str / string
        return list(X)
    return list(X) if isinstance(X, (list, tuple)) else None


def _string_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` is one of pandas' dtypes of strings (``str``, ``string``; their values are no ndarray)."""
    try:
        import pandas as pd
    except ImportError:                                   # pragma: no cover - a dtype without pandas
        return False
    return isinstance(dtype, pd.StringDtype)


def check_text_model(model: Any) -> None:
    """Refuse, before any call, a model that takes numbers rather than texts: a tree model, a torch module, or an
    estimator fitted on a table of numbers (it has ``n_features_in_``).

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> check_text_model(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]))
    Traceback (most recent call last):
    ...
    TypeError: texts need a model that takes a list of strings (a text pipeline or a function of texts); LinearRegression was fitted on a table of 1 numeric feature(s)
    """
    from ..trees.readers import is_tree_model

    name = type(model).__name__
    if hasattr(model, "forward") and hasattr(model, "parameters"):
        raise TypeError(f"texts need a model that takes a list of strings; {name} is a torch module (it takes "
                        "tensors): wrap it in a function of a list of texts")
    if is_tree_model(model):
        raise TypeError(f"texts need a model that takes a list of strings (a text pipeline or a function of texts); "
                        f"{name} is a tree model of numeric features")
    n = getattr(model, "n_features_in_", None) if not isinstance(model, type) else None
    if isinstance(n, (int, np.integer)):
        raise TypeError(f"texts need a model that takes a list of strings (a text pipeline or a function of texts); "
                        f"{name} was fitted on a table of {int(n)} numeric feature(s)")


def check_tokenizer(value: Any) -> Any:
    """``tokenizer``: None (words and punctuation), a regular expression or a callable."""
    if value is None or callable(value):
        return value
    if isinstance(value, str):
        import re
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"tokenizer: {value!r} is not a regular expression ({exc})") from None
        return value
    raise TypeError(f"tokenizer must be None, a regular expression or a callable, got {type(value).__name__}")


def check_mask_token(value: Any) -> Any:
    """``mask_token``: None (delete removed tokens) or the string that replaces each."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"mask_token must be a string or None (delete removed tokens), got {type(value).__name__}")


def text_predict(model: Any, link: str = "identity") -> Any:
    """What a text model is called with: a list of strings -> its ``predict_proba`` (classifiers, all classes),
    ``predict``, or the model itself when it is a function; ``link="logit"`` puts probabilities on the log-odds
    scale.

    Examples
    --------
    >>> f = text_predict(lambda texts: [0.5 for _ in texts], link="logit")
    >>> f(["a"])
    array([0.])
    """
    if callable(getattr(model, "predict_proba", None)):
        base = model.predict_proba
    elif callable(getattr(model, "predict", None)):
        base = model.predict
    elif callable(model):
        base = model
    else:
        raise TypeError(f"model must have predict_proba / predict or be a function of a list of texts, got "
                        f"{type(model).__name__}")
    scale = LINKS[link]

    def predict(texts: list[str]) -> np.ndarray:
        return scale(np.asarray(base(texts), dtype=float))

    predict.__name__ = getattr(base, "__name__", "predict")
    return predict


class TextInput(Input):
    """A text or a collection of texts for a model that takes a list of strings; a single string gives one
    Explanation, a collection a list of them (ragged: one token per player).

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("good") for t in ts], "good, not good", progress=False)
    >>> e.values.ravel().round(6).tolist(), e.tokens
    ([1.0, 0.0, 0.0, 1.0], ['good', ',', 'not', 'good'])
    """

    kind = "texts"
    noun = "text"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        return is_texts(X)

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        given = (["background"] if background is not None else []) + [n for n in _TABLE_ONLY if args.get(n) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: not used for texts (a removed token is deleted, or replaced by "
                             "mask_token); leave them out")
        self.single = isinstance(X, str)
        self.texts = [X] if self.single else list(_items(X))
        check_text_model(model)
        partition = args["partition"]
        if partition is not None and not isinstance(partition, str) and len(self.texts) > 1:
            raise ValueError("partition: a list of blocks fits one text; for many texts use partition='sentences' "
                             "(sentences -> phrases -> tokens of each text)")
        if isinstance(partition, str) and partition != "sentences":
            raise ValueError(f"partition={partition!r}: for texts use 'sentences' or a list of token blocks")
        self.model = model
        self.args = {k: args[k] for k in ("index", "tokenizer", "mask_token", "partition", "link")}
        self.predict = text_predict(model, args["link"])
        self.n_items = len(self.texts)
        self.item_names = [str(i) for i in range(self.n_items)]
        self.games: list[TextGame | None] = [None] * self.n_items

    def game(self, i: int) -> Game:
        return self.games[i]

    def plans(self, args: dict, rule: Any, options: dict) -> list[Plan | None]:
        """Every text's game and plan (every check, no model call); None for an empty or whitespace-only text
        (warned about by position: it gets a result with no players)."""
        plans: list[Plan | None] = []
        for i, text in enumerate(self.texts):
            if not text.strip():
                warnings.warn(f"texts[{i}] is {'empty' if not text else 'only whitespace'}: it has no tokens, its "
                              "explanation has no players", FairshareWarning, stacklevel=4)
                plans.append(None)
                continue
            pieces = tokenize(text, args["tokenizer"])
            if not pieces:
                raise ValueError(f"tokenizer found no tokens in texts[{i}] ({text!r:.60}); give a tokenizer whose "
                                 "matches cover the text's words")
            game = TextGame(self.predict, text, args["tokenizer"], args["mask_token"], args["batch_size"],
                            pieces=pieces)
            self.games[i] = game
            sv = resolve_value_index(args["index"], game.n_players, self._partition(game, args))
            budget = args["budget"] if args["budget"] is not None else default_budget(game.n_players)
            plans.append(Plan(sv, choose(game, sv, args["method"], budget, rule, dict(options)), budget))
        return plans

    @staticmethod
    def _partition(game: TextGame, args: dict) -> Any:
        partition = args["partition"]
        if isinstance(partition, str) or (partition is None and isinstance(args["index"], str)
                                          and args["index"].strip().lower() == "owen"):
            partition = text_hierarchy(game.pieces)
            if not any(isinstance(b, list) for b in partition):
                partition = [[p] for p in partition]                 # one sentence, one phrase: Shapley values
        return partition

    def empty_item(self, i: int) -> dict:
        out = np.asarray(self.predict([self.texts[i]]), dtype=float)[0]
        k = () if out.ndim == 0 else out.shape
        return dict(values=np.zeros((0,) + k), stderr=np.zeros((0,) + k), empty=out, grand=out,
                    n_evaluations=np.asarray(0), names=[], info={})

    def key(self) -> tuple[tuple, dict]:
        tokenizer = self.args["tokenizer"]
        return (np.array(self.texts, dtype=object),), dict(
            kind="texts", tokenizer=model_key(tokenizer) if callable(tokenizer) else str(tokenizer),
            mask_token=self.args["mask_token"], partition=repr(self.args["partition"]), link=self.args["link"])

    def item_data(self, i: int) -> Any:
        return np.array([self.texts[i]], dtype=object)

    def result(self, results: list[dict], plans: list, info: dict) -> Explanation | list[Explanation]:
        out = [self._text(i, r, plans[i]) for i, r in enumerate(results)]
        return out[0] if self.single else out

    def _text(self, i: int, r: dict, plan: Plan | None) -> Explanation:
        text = self.texts[i]
        k = r["values"].shape[1] if r["values"].ndim == 2 else None
        if plan is None:
            return Explanation(values=r["values"][None], stderr=np.zeros_like(r["values"])[None],
                               empty_value=r["empty"][None],
                               grand_value=r["grand"][None], data=np.zeros((1, 0), dtype=object), player_names=[],
                               index=str(getattr(self.args["index"], "name", self.args["index"])), method="none",
                               row_names=[str(i)], output_names=output_names(self.model, k),
                               info={"text": text, "why": "the text is empty or only whitespace: nothing to explain"})
        return Explanation(values=r["values"][None], stderr=None if r["stderr"] is None else r["stderr"][None],
                           empty_value=r["empty"][None], grand_value=r["grand"][None],
                           data=np.array([self.games[i].pieces], dtype=object), player_names=list(r["names"]),
                           index=plan.sv.name, method=plan.choice.method, output_names=output_names(self.model, k),
                           row_names=[str(i)], n_evaluations=np.array([int(r["n_evaluations"])]),
                           options=dict(plan.choice.options),
                           info={**r["info"], "choice": plan.choice.as_info(), "text": text, "budget": plan.budget,
                                 "mask_token": self.args["mask_token"], "model_output": self.predict.__name__,
                                 "link": self.args["link"]})
