"""``fs.explain`` for texts: one game per text (its tokens are the players), one Explanation per text.

Texts have ragged lengths, so each gets its own method choice (the same rule as for tables: exact values when
the budget covers the coalitions, else the preferred estimator), its own seed (spawned from ``seed``, so the
same seed gives the same values whatever ``n_jobs``) and its own Explanation, whose ``data`` are the tokens.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._core.compiled import call_with, thread_settings
from ..games.cached import CachedGame
from ..store.cache import RunCache, fingerprint, model_key
from ..engine.choice import choose
from ..engine.engine import FairshareWarning, run
from ..results.explanation import Explanation
from ..games.model import LINKS
from ..games.text import TextGame, text_hierarchy, tokenize
from ..indices.hierarchy import resolve_value_index
from .._core.progress import reporter

__all__ = ["is_texts", "explain_texts", "text_predict", "check_tokenizer", "check_mask_token", "check_text_model"]

#: explain's arguments that have no meaning for texts, with their defaults
_TABLE_ONLY = {"background": None, "imputation": None, "groups": None, "model_output": None, "y": None,
               "interactions": None, "feature_names": None, "cache": None, "client": None}


def is_texts(X: Any) -> bool:
    """Whether ``X`` is a text or a collection of texts (str, list / tuple / array / Series of str).

    Examples
    --------
    >>> is_texts("a b"), is_texts(["a", "b c"]), is_texts([[1.0, 2.0]])
    (True, True, False)
    """
    if isinstance(X, str):
        return True
    items = _items(X)
    if items is None or not items or not any(isinstance(v, str) for v in items):
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
    return list(X) if isinstance(X, (list, tuple)) else None


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


def _plan(predict: Any, text: str, position: int, args: dict, options: dict) -> tuple[Any, Any, Any, int] | None:
    """The game, index, method choice and budget of text ``position`` (every check, no model call); None for an
    empty or whitespace-only text (warned about: it gets a result with no players)."""
    if not text.strip():
        warnings.warn(f"texts[{position}] is {'empty' if not text else 'only whitespace'}: it has no tokens, its "
                      "explanation has no players", FairshareWarning, stacklevel=4)
        return None
    pieces = tokenize(text, args["tokenizer"])
    if not pieces:
        raise ValueError(f"tokenizer found no tokens in texts[{position}] ({text!r:.60}); give a tokenizer whose "
                         "matches cover the text's words")
    game = TextGame(predict, text, args["tokenizer"], args["mask_token"], args["batch_size"], pieces=pieces)
    partition = args["partition"]
    if isinstance(partition, str) or (partition is None and isinstance(args["index"], str)
                                      and args["index"].strip().lower() == "owen"):
        partition = text_hierarchy(game.pieces)
        if not any(isinstance(b, list) for b in partition):
            partition = [[p] for p in partition]                 # one sentence, one phrase: Shapley values
    sv = resolve_value_index(args["index"], game.n_players, partition)
    budget = args["budget"] if args["budget"] is not None else 2 * game.n_players + 2048
    return game, sv, choose(game, sv, args["method"], budget, args["rule"], dict(options)), budget


def _one_text(model: Any, predict: Any, text: str, i: int, plan: Any, args: dict, seed: Any,
              folder: Any = None) -> Explanation:
    """The Explanation of text ``i`` (one row) under its ``plan``; with ``folder``, coalitions evaluated before (an
    interrupted run) are read from there and new ones kept."""
    if plan is None:
        out = np.asarray(predict([text]), dtype=float)[0]
        k = () if out.ndim == 0 else out.shape
        return Explanation(values=np.zeros((1, 0) + k), stderr=np.zeros((1, 0) + k), empty_value=out[None],
                           grand_value=out[None], data=np.zeros((1, 0), dtype=object), player_names=[],
                           index=str(getattr(args["index"], "name", args["index"])), method="none",
                           row_names=[str(i)], output_names=_output_names(model, k[0] if k else None),
                           info={"text": text, "why": "the text is empty or only whitespace: nothing to explain"})
    game, sv, choice, budget = plan
    phi = run(game if folder is None else CachedGame(game, folder), sv, choice, seed, args["rule"])
    values = np.asarray(phi.values, dtype=float)[None]
    stderr = None if phi.stderr is None else np.asarray(phi.stderr, dtype=float)[None]
    names = _output_names(model, values.shape[2] if values.ndim == 3 else None)
    return Explanation(values=values, stderr=stderr, empty_value=np.asarray(phi.empty_value, dtype=float)[None],
                       grand_value=np.asarray(phi.grand_value, dtype=float)[None],
                       data=np.array([game.pieces], dtype=object), player_names=list(game.player_names),
                       index=sv.name, method=choice.method, output_names=names, row_names=[str(i)],
                       n_evaluations=np.array([phi.n_evaluations]), options=dict(choice.options),
                       info={**phi.info, "choice": choice.as_info(), "text": text, "budget": budget,
                             "mask_token": args["mask_token"], "model_output": predict.__name__,
                             "link": args["link"]})


def _output_names(model: Any, k: int | None) -> list[str] | None:
    """The names of a text model's ``k`` outputs (its classes, else their positions), None for one output."""
    if k is None:
        return None
    classes = getattr(model, "classes_", None)
    return [str(c) for c in classes] if classes is not None and len(classes) == k else [str(j) for j in range(k)]


def explain_texts(model: Any, X: Any, args: dict, options: dict, seed: Any) -> Explanation | list[Explanation]:
    """Explain every text of ``X`` (checked arguments of ``fs.explain`` in ``args``); a single string gives one
    Explanation, a collection a list of them (ragged: one token per player).

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("good") for t in ts], "good, not good", progress=False)
    >>> e.values.ravel().round(6).tolist(), e.tokens
    ([1.0, 0.0, 0.0, 1.0], ['good', ',', 'not', 'good'])
    """
    given = [name for name, default in _TABLE_ONLY.items() if args.get(name) is not default]
    given = [name for name in given if name not in ("client", "cache")]
    if given:
        raise ValueError(f"{', '.join(given)}: not used for texts (a removed token is deleted, or replaced by "
                         "mask_token); leave them out")
    single = isinstance(X, str)
    texts = [X] if single else list(_items(X))
    check_text_model(model)
    if args["partition"] is not None and not isinstance(args["partition"], str) and len(texts) > 1:
        raise ValueError("partition: a list of blocks fits one text; for many texts use partition='sentences' "
                         "(sentences -> phrases -> tokens of each text)")
    if isinstance(args["partition"], str) and args["partition"] != "sentences":
        raise ValueError(f"partition={args['partition']!r}: for texts use 'sentences' or a list of token blocks")
    predict = text_predict(model, args["link"])
    plans = [_plan(predict, t, i, args, options) for i, t in enumerate(texts)]   # every text checked before any call
    root = seed.integers(2**63) if isinstance(seed, np.random.Generator) else seed
    seeds = np.random.SeedSequence(root).spawn(len(texts))
    store = None if args["cache"] is None else RunCache(args["cache"], _texts_key(model, texts, args, options, seed),
                                                        item=lambda i: np.array([texts[i]], dtype=object))
    results: list[Any] = [None if store is None else store.explanation(i) for i in range(len(texts))]
    todo = [i for i, e in enumerate(results) if e is None]
    report = reporter(args["progress"] if len(texts) > 1 else False, "explaining texts", "text")
    done = [len(texts) - len(todo)]

    def finish(i: int, out: Explanation) -> None:
        results[i] = out
        if store is not None:                      # kept as it finishes: an interrupted run resumes after it
            store.save_explanation(i, out)
        done[0] += 1
        if report is not None:
            report(done[0], len(texts), None)

    def one(i: int) -> None:
        folder = None if store is None else store.coalition_folder(i)
        finish(i, _one_text(model, predict, texts[i], i, plans[i], args, np.random.default_rng(seeds[i]), folder))

    try:
        if args["client"] is not None and todo:
            _on_dask(args["client"], model, predict, texts, plans, args, seeds, todo, finish)
        elif args["n_jobs"] and args["n_jobs"] > 1 and len(todo) > 1:
            settings = thread_settings()                   # the workers compute as this thread would
            with ThreadPoolExecutor(max_workers=args["n_jobs"]) as pool:
                list(pool.map(lambda i: call_with(settings, one, i), todo))
        else:
            for i in todo:
                one(i)
    finally:
        if report is not None:
            report.close()
    return results[0] if single else results


def _texts_key(model: Any, texts: list[str], args: dict, options: dict, seed: Any) -> str:
    """What tells one run over texts from another (a cache folder serves only the same run)."""
    tokenizer = args["tokenizer"]
    return fingerprint(np.array(texts, dtype=object), kind="texts", model=model_key(model),
                       index=str(getattr(args["index"], "name", args["index"])), method=args["method"],
                       budget=args["budget"], stop=repr(args["rule"]), seed=str(seed), options=repr(sorted(options.items())),
                       tokenizer=model_key(tokenizer) if callable(tokenizer) else str(tokenizer),
                       mask_token=args["mask_token"], partition=repr(args["partition"]), link=args["link"])


def _on_dask(client: Any, model: Any, predict: Any, texts: list[str], plans: list, args: dict, seeds: list,
             todo: list[int], finish: Any) -> None:
    """One task per text on the cluster, each with its own spawned seed (the local values, bit for bit); each
    finished text is handed to ``finish`` as it completes. Each task carries its text's plan (game and model)
    in the task graph, so a worker that dies loses nothing, and every wait is bounded
    (:mod:`fairshare.backends.dask`)."""
    from ..backends.dask import Finished, submit

    local = {k: v for k, v in args.items() if k not in ("client", "progress")}
    futures = {submit(client, _one_text, model, predict, texts[i], i, plans[i], local,
                      np.random.default_rng(seeds[i])): i for i in todo}
    for fut, result in Finished(client, list(futures)):
        finish(futures[fut], result)
