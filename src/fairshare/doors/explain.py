"""``fs.explain``: attributions for every item of any data (rows of a table, texts, sequences, images) of any model.

The door is four steps: its arguments are checked against one table (:mod:`.explain_arguments`); the data are read
by their input kind (``inputs/``: checked, players known, before any model call); each item is planned (index,
budget, the method chosen once from facts that do not change between runs); and every item runs through the one
scheduler (:mod:`.scheduler`: cache, Dask, threads, progress, seeds) unless a closed form gives them all at once.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .._core.arguments import SeedLike
from .._core.seeds import seed_key
from ..engine.stopping import StoppingRule, as_rule
from ..games.base import Game
from ..indices.semivalues import Semivalue
from ..inputs.base import default_budget
from ..inputs.registry import read_input
from ..results.explanation import Explanation
from ..store.keys import content_key, fingerprint, model_key
from .explain_arguments import EXPLAIN
from .explain_spark import explain_frame, is_spark_frame
from .pairs import explain_pairs, pair_index
from .scheduler import run_values, schedule

__all__ = ["explain", "default_budget", "EXPLAIN"]


def explain(model: Any, X: Any = None, background: Any = None, *, index: str | Semivalue = "shapley",
            method: str = "auto", budget: int | None = None, seed: SeedLike = None, tol: float | None = None,
            stop: StoppingRule | None = None, n_jobs: int | None = None, client: Any = None, cache: Any = None,
            progress: Any = True, imputation: str | None = None, groups: Any = None,
            batch_size: int | str | None = None, feature_names: Any = None, interactions: int | None = None,
            model_output: str | None = None,
            y: Any = None, link: str = "identity", partition: Any = None, tokenizer: Any = None,
            mask_token: str | None = None, layout: str | None = None, baseline: Any = None, output: Any = None,
            patch_size: Any = None, sigma: float | None = None, slic: dict | None = None,
            **options: Any) -> Explanation | list[Explanation]:
    """Explain the predictions of ``model`` on every item of ``X``."""
    args = EXPLAIN.check(dict(index=index, method=method, budget=budget, seed=seed, tol=tol, stop=stop,
                              n_jobs=n_jobs, client=client, cache=cache, progress=progress, imputation=imputation,
                              groups=groups, batch_size=batch_size, feature_names=feature_names,
                              interactions=interactions, model_output=model_output, y=y, link=link,
                              partition=partition, tokenizer=tokenizer, mask_token=mask_token, layout=layout,
                              baseline=baseline, output=output, patch_size=patch_size, sigma=sigma, slic=slic))
    rule = as_rule(args["stop"], args["tol"])
    if is_spark_frame(X):                           # explained where it lies: a Spark DataFrame of values
        return explain_frame(model, X, background, args, seed, rule, options)
    if X is None and not isinstance(model, Game):
        raise ValueError(f"X: give the data to explain (rows, texts, inputs); only a fairshare Game is explained "
                         f"without X, got a {type(model).__name__}")
    data = read_input(model, X, background, args)
    data.check(args)
    try:
        kind = pair_index(data.value_index(args), args["interactions"]) if args["interactions"] else None
        if kind is not None:
            return explain_pairs(data, data.value_index(args), kind, args, rule, seed, options,
                                 lambda d, runner: schedule(d, runner, args, seed, _key(d, runner, args, seed)))
        plans = data.plans(args, rule, options)
    except ValueError as exc:
        if str(exc).startswith("unknown option"):
            raise ValueError(f"{exc} (explain's own arguments: {EXPLAIN.names()})") from None
        raise
    closed = data.closed_form(plans, args, seed, options)
    if closed is not None:
        return closed
    data.planned, data.rule = plans, rule
    results = schedule(data, run_values, args, seed, _key(data, run_values, args, seed))
    first = next((p for p in plans if p is not None), None)
    info = {} if first is None else {"choice": first.choice.as_info(), **data.info(), "budget": first.budget,
                                     "seed": str(seed)}
    return data.result(results, plans, info)


def _key(data: Any, runner: Any, args: dict, seed: Any) -> str | None:
    """What tells this run from another for a cache folder: the data, the model by content, every plan, the seed,
    the stopping rule by content (its class's code and its attributes: a rule of the user's without a __repr__ has
    its memory address in its repr, another in every process)."""
    if args["cache"] is None:
        return None
    with np.printoptions(threshold=sys.maxsize):       # the reprs of arrays (groups, options) whole, never '...'
        arrays, settings = data.key()
        plans = [None if p is None else (getattr(p.sv, "identity", p.sv.name),
                                         repr(getattr(p.sv, "hierarchy", None) and p.sv.hierarchy.nested()),
                                         p.choice.method, repr(sorted(p.choice.options.items())), p.choice.budget)
                 for p in data.planned]
    stop = None if data.rule is None else content_key(data.rule)
    return fingerprint(*arrays, **settings, runner=runner.__name__, plans=repr(plans), stop=stop,
                       seed=seed_key(seed), model=model_key(data.model), pairs=getattr(data, "pair_kind", None))


explain.__doc__ = f"""Explain the predictions of ``model`` on every item of ``X``: its rows, texts or inputs; or a game.

    Parameters
    ----------
    model : a fitted model (scikit-learn, xgboost, lightgbm, catboost; classifiers through their class probabilities,
        all classes at once, tree models through their raw output as shap.TreeExplainer), a scikit-learn Pipeline
        (the players are its raw columns: exact tree values through column-wise steps into a tree model, else a
        black box on the raw columns; ``e.info["pipeline"]`` says which and why), a bound method
        (``model.predict_proba``), a torch module, or a prediction function
    X : rows (numpy array, DataFrame whose columns are matched to the model's features by name, scipy sparse; a
        Series or a 1-D array is one row; a Spark DataFrame, explained on its executors); texts (a string, or a list of them, for a model of a list of strings:
        the players are each text's tokens, one Explanation per text); inputs of more dimensions (sequences,
        images) whose cells or groups of cells are the players; images ``(N, C, H, W)`` for a torch module (a tensor,
        an array, a list of images; ``layout``, ``groups``, ``baseline``, ``output`` below); None when ``model`` is
        a Game (e.g. ``fs.games.GenerationGame``: the spans of a prompt, the log-probability of an answer), explained
        as it is (one Explanation; a long game with a hierarchy gets Owen values over it, ``owen-adaptive`` by
        default)
    background : baseline row(s) for absent features, required unless ``model`` is a tree model (then None means
        path-dependent tree values); for torch inputs a number, one input or a batch averaged over
{EXPLAIN.numpydoc()}
    **options : the method's options (``fairshare methods``)

    Returns
    -------
    Explanation (a list of them for a list of texts); for a Spark DataFrame ``X``, a Spark DataFrame (lazy: a
    ``row`` column, the row's position, and :meth:`Explanation.to_frame`'s columns; see
    :mod:`fairshare.doors.explain_spark`)

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.random.default_rng(0).random((50, 4)); y = X @ [1.0, 2.0, 0.0, -1.0]
    >>> model = LinearRegression().fit(X, y)
    >>> e = fs.explain(model, X[:3], background=X[:1], progress=False, seed=0)
    >>> e.values.shape, e.method
    ((3, 4), 'exact')
    """
