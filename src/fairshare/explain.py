"""``fairshare.explain``: attributions for many rows of a model, locally or on a Dask cluster, resumable."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ._validation import SeedLike, check_int, check_rng
from .cache import CachedGame, RunCache, fingerprint, writable_folder
from .estimate import estimate
from .explanation import Explanation
from .games.distributed import DistributedGame
from .games.model import ModelError, ModelGame, _as_rows, _frame_info
from .semivalues import Semivalue, resolve_index
from .trees.readers import is_tree_model

__all__ = ["explain", "default_budget"]


def default_budget(n_players: int) -> int:
    """``2n + 2048`` evaluations (shap.KernelExplainer's default), never more than ``2^n``.

    Examples
    --------
    >>> default_budget(8), default_budget(30)
    (256, 2108)
    """
    return int(min(2 ** min(n_players, 62), 2 * n_players + 2048))


def _one_row(obj: Any) -> Any:
    """A pandas Series or a 1-D array is one row: a one-row DataFrame or a (1, n) array."""
    if hasattr(obj, "to_frame") and hasattr(obj, "index") and not hasattr(obj, "columns"):
        import pandas as pd

        return pd.DataFrame([obj.to_numpy()], columns=list(obj.index)).infer_objects()
    if type(obj).__module__.startswith("torch"):
        return obj
    if isinstance(obj, (list, tuple)) or (hasattr(obj, "shape") and len(getattr(obj, "shape")) == 1):
        arr = np.asarray(obj)
        return arr[None, :] if arr.ndim == 1 else arr
    return obj


def _aligned(frame: Any, reference: list[str], name: str, source: str) -> Any:
    """``frame`` with its columns in the order of ``reference`` (matched by name); a clear error otherwise."""
    cols = [str(c) for c in frame.columns]
    if len(set(cols)) != len(cols):
        dups = sorted({c for c in cols if cols.count(c) > 1})
        raise ValueError(f"{name} has duplicate column names {dups}")
    if cols == reference:
        return frame
    missing = [c for c in reference if c not in cols]
    extra = [c for c in cols if c not in reference]
    if missing or extra:
        raise ValueError(f"{name} columns do not match {source}: missing {missing[:10]}, unexpected {extra[:10]}")
    return frame[[frame.columns[cols.index(c)] for c in reference]]


def _prepare(model: Any, X: Any, background: Any) -> tuple[Any, Any]:
    """Rows and background as the model takes them: one row given as a Series or 1-D array made a row,
    DataFrame columns matched by name to the model's ``feature_names_in_`` (else to each other)."""
    X = _one_row(X)
    if background is not None:
        background = _one_row(background)
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if n == 0:
        raise ValueError("X holds no rows to explain")
    model_names = getattr(model, "feature_names_in_", None)
    reference, source = None, ""
    if model_names is not None:
        reference, source = [str(c) for c in model_names], "the model's features (feature_names_in_)"
    elif hasattr(X, "columns"):
        reference, source = [str(c) for c in X.columns], "the columns of X"
    if hasattr(X, "columns") and reference is not None:
        X = _aligned(X, reference, "X", source)
    elif model_names is not None and np.ndim(X) == 2 and np.shape(X)[1] == len(reference):
        import pandas as pd                     # numpy rows for a model fitted on a DataFrame: its names, by position

        X = pd.DataFrame(np.asarray(X), columns=list(model_names))
        if background is not None and not hasattr(background, "columns") and np.ndim(background) == 2 and \
                np.shape(background)[1] == len(reference):
            background = pd.DataFrame(np.asarray(background), columns=list(model_names))
    if hasattr(background, "columns") and hasattr(background, "iloc"):
        if reference is None:
            reference, source = [str(c) for c in background.columns], "the columns of background"
        background = _aligned(background, reference, "background", source)
    return X, background


def _model_key(model: Any) -> str:
    """What tells one model's cache from another's, without calling it: a fitted model (or the model behind a
    bound method such as ``model.predict_proba``) by the hash of its whole state (joblib.hash: parameters and
    fitted weights); a plain function by its module, name and code (a function whose behaviour depends on
    outside state is not told apart: give it its own folder)."""
    import inspect

    target = getattr(model, "__self__", model) if inspect.ismethod(model) else model
    if inspect.isfunction(target):
        code = target.__code__
        return fingerprint(function=f"{target.__module__}.{target.__qualname__}", code=code.co_code.hex(),
                           consts=repr(code.co_consts), defaults=repr(target.__defaults__))
    try:
        import joblib

        return str(joblib.hash(target))
    except Exception:                                  # noqa: BLE001 - not picklable: its type and settings
        params = target.get_params() if hasattr(target, "get_params") else None
        return fingerprint(model=type(target).__name__, params=params)


def _row_frame(X: Any, i: int) -> Any:
    return X.iloc[[i]] if hasattr(X, "iloc") else np.asarray(X)[i]


def _explain_row(predict: Any, x: Any, background: Any, settings: dict, seed: Any, folder: Any, row: int = 0) -> dict:
    """Explain one row (a top-level function so Dask can ship it to workers); a model that fails is reported
    with the row and the coalition."""
    try:
        return _explain_one(predict, x, background, settings, seed, folder)
    except ModelError as exc:
        raise ModelError(f"row {row}: {exc}") from exc.__cause__
    except ValueError as exc:
        if str(exc).startswith(("the game returned NaN", "predict returned")):
            raise ValueError(f"row {row}: {str(exc).replace('the game returned', 'the model returned')}") from exc
        raise


def _explain_one(predict: Any, x: Any, background: Any, settings: dict, seed: Any, folder: Any) -> dict:
    game = ModelGame(predict, x, background, imputation=settings["imputation"], groups=settings["groups"],
                     batch_size=settings["batch_size"], feature_names=settings["feature_names"])
    if folder is not None:
        game = CachedGame(game, folder)
    if settings.get("client") is not None:
        game = DistributedGame(game, settings["client"])
    budget = settings["budget"] or default_budget(game.n_players)
    phi = estimate(game, settings["index"], method=settings["method"], budget=budget, seed=seed,
                   **settings["options"])
    return dict(values=np.asarray(phi.values, dtype=float),
                stderr=None if phi.stderr is None else np.asarray(phi.stderr, dtype=float),
                base=np.asarray(phi.empty_value if phi.empty_value is not None else np.nan, dtype=float),
                n_evaluations=np.asarray(phi.n_evaluations), method=phi.method, names=game.player_names)


def explain(model: Any, X: Any, background: Any = None, *, index: str | Semivalue = "shapley", method: str = "auto",
            budget: int | None = None, seed: SeedLike = None, n_jobs: int | None = None, client: Any = None,
            cache: Any = None, progress: bool = True, imputation: str | None = None, groups: Any = None,
            batch_size: int | None = None, feature_names: Any = None, **options: Any) -> Explanation:
    """Explain the predictions of ``model`` on every row of ``X``.

    Parameters
    ----------
    model : a fitted model (scikit-learn, xgboost, lightgbm; classifiers are explained through their
        class probabilities, all classes at once), a torch module, or a prediction function
    X : rows to explain (numpy array or pandas DataFrame)
    background : baseline row(s) for the absent features; required unless ``model`` is a tree model
        explained exactly (then ``None`` means path-dependent tree values)
    index : "shapley", "banzhaf" or a Semivalue
    method : a registry method or "auto": exact tree values for tree models (their raw output, as
        shap.TreeExplainer), enumeration when ``2^n`` fits the budget, else the most accurate estimator
    budget : evaluations per row (default ``2n + 2048``)
    seed : same seed, same values, whatever ``n_jobs`` or ``client``
    n_jobs : rows explained in parallel threads
    client : a ``dask.distributed.Client``: rows are explained on the cluster (one row: its batches of
        coalitions are)
    cache : a folder; finished rows and evaluated coalitions are kept there and an interrupted call
        with the same arguments resumes without evaluating the model again
    progress : show a progress bar over rows
    imputation, groups, batch_size, feature_names : see :class:`fairshare.games.ModelGame`
    **options : method options (``fairshare methods``)

    Returns
    -------
    Explanation

    Examples
    --------
    >>> import numpy as np, fairshare as fs
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.random.default_rng(0).random((50, 4)); y = X @ [1.0, 2.0, 0.0, -1.0]
    >>> model = LinearRegression().fit(X, y)
    >>> e = fs.explain(model, X[:3], background=X[:1], progress=False, seed=0)
    >>> e.values.shape, e.methods[0]
    ((3, 4), 'exact')
    """
    sv = resolve_index(index)
    if method != "auto":
        from .estimation.registry import get_method

        get_method(method)                       # unknown names fail here, listing the valid ones
    if budget is not None:
        budget = check_int(budget, "budget", minimum=1)
    if n_jobs is not None:
        n_jobs = check_int(n_jobs, "n_jobs", minimum=1)
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    check_rng(seed)                              # a bad seed fails here, not after the first model call
    if cache is not None:
        writable_folder(cache, "cache")          # before any model call
    if _is_torch_module(model) and _is_images(X, background):
        return _explain_torch(model, X, background, sv, method, budget, seed, groups, batch_size, progress, options)
    X, background = _prepare(model, X, background)
    if method in ("auto", "exact") and groups is None and is_tree_model(model) and \
            (imputation != "baseline" or background is None or _as_rows(background, "background").shape[0] == 1):
        return _explain_trees(model, X, background, sv, feature_names)
    columns, _ = _frame_info(X)
    rows = _as_rows(X, "X")
    n_rows, n_features = rows.shape
    names = [str(f) for f in feature_names] if feature_names is not None else (
        columns or [f"x{i}" for i in range(n_features)])
    if len(names) != n_features:
        raise ValueError(f"feature_names must have {n_features} names, got {len(names)}")
    if background is not None:
        bg_rows = _as_rows(background, "background")
        if bg_rows.shape[1] != n_features:
            raise ValueError(f"background has {bg_rows.shape[1]} columns but X has {n_features}")
    if background is None:
        raise ValueError("background (a baseline row or rows) is required to explain a non-tree model")
    from .games.model import as_predict

    predict = as_predict(model)
    auto_note = None
    if method == "auto" and not options:
        # one choice for every row (the same method whatever the threads or the cluster), made on the first row;
        # the rows share the second of surrogate fitting auto allows one estimate
        from .estimation.choice import AUTO_SURROGATE_SECONDS, resolve_auto, with_surrogate_allowance

        first = ModelGame(predict, _row_frame(X, 0), background, imputation=imputation, groups=groups,
                          batch_size=batch_size, feature_names=names)
        try:
            method, auto_note = with_surrogate_allowance(AUTO_SURROGATE_SECONDS.get() / max(1, n_rows), resolve_auto,
                                                         first, sv, budget or default_budget(first.n_players))
        except ModelError as exc:
            raise ModelError(f"row 0: {exc}") from exc.__cause__
    settings = dict(imputation=imputation, groups=groups, batch_size=batch_size, feature_names=names, index=sv,
                    method=method, budget=budget, options=options, client=None)
    seeds = np.random.SeedSequence(seed if not isinstance(seed, np.random.Generator)
                                   else seed.integers(2**63)).spawn(n_rows)
    run = None
    if cache is not None:
        key = fingerprint(rows, _as_rows(background, "background"), index=sv.name,
                          weights=list(np.round(sv.log_weights(max(n_features, 1)), 12)) if sv.n_players is None else None,
                          method=method, budget=budget, seed=str(seed), imputation=imputation, groups=groups,
                          options=options, names=names, model=_model_key(model))
        run = RunCache(cache, key)
    results: list[dict | None] = [run.row(i) if run is not None else None for i in range(n_rows)]
    todo = [i for i in range(n_rows) if results[i] is None]
    bar = _progress(progress and n_rows > 1, n_rows, initial=n_rows - len(todo))

    def finish(i: int, result: dict) -> None:
        results[i] = result
        if run is not None:
            run.save_row(i, result)
        bar.update(1)

    try:
        if client is not None and len(todo) > 1:
            _on_dask(client, predict, X, background, settings, seeds, todo, finish)
        elif client is not None and todo:
            i = todo[0]
            finish(i, _explain_row(predict, _row_frame(X, i), background, {**settings, "client": client}, seeds[i],
                                   run.coalition_folder(i) if run is not None else None, i))
        elif n_jobs and n_jobs > 1 and len(todo) > 1:
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                futures = {i: pool.submit(_explain_row, predict, _row_frame(X, i), background, settings, seeds[i],
                                          run.coalition_folder(i) if run is not None else None, i) for i in todo}
                for i, fut in futures.items():
                    finish(i, fut.result())
        else:
            for i in todo:
                finish(i, _explain_row(predict, _row_frame(X, i), background, settings, seeds[i],
                                       run.coalition_folder(i) if run is not None else None, i))
    finally:
        bar.close()
    first = results[0]
    player_names = list(first["names"]) if "names" in first else (
        names if groups is None else [f"group{j}" for j in range(first["values"].shape[0])])
    values = np.stack([r["values"] for r in results])
    stderr = None if any(r["stderr"] is None for r in results) else np.stack([r["stderr"] for r in results])
    k = values.shape[2] if values.ndim == 3 else None
    return Explanation(values=values, stderr=stderr, base_values=np.stack([r["base"] for r in results]),
                       data=rows if groups is None and rows.dtype != object else (rows if groups is None else None),
                       feature_names=player_names, index=sv.name,
                       output_names=_output_names(model, k), methods=[r["method"] for r in results],
                       n_evaluations=np.array([int(r["n_evaluations"]) for r in results]),
                       info=dict(model_output="predict_proba" if hasattr(model, "predict_proba") else "predict",
                                 imputation=imputation or ("baseline" if _as_rows(background, "b").shape[0] == 1 else "marginal"),
                                 budget=budget, seed=str(seed), **({"auto": auto_note} if auto_note else {})))


def _is_torch_module(model: Any) -> bool:
    return hasattr(model, "forward") and hasattr(model, "parameters") and type(model).__module__.startswith("torch") \
        or any(c.__module__.startswith("torch.nn") for c in type(model).__mro__)


def _is_images(X: Any, background: Any) -> bool:
    """Inputs a TorchGame explains: a tensor (or array) with more than two dimensions, or a tensor of rows with
    at most one baseline (a number, a single input, or nothing)."""
    ndim = len(getattr(X, "shape", ()))
    if ndim > 2:
        return True
    single = background is None or np.ndim(background) == 0 or (hasattr(background, "shape") and len(background.shape) == 1)
    return ndim == 2 and type(X).__module__.startswith("torch") and single


def _explain_torch(model: Any, X: Any, background: Any, sv: Semivalue, method: str, budget: Any, seed: SeedLike,
                   groups: Any, batch_size: Any, progress: bool, options: dict) -> Explanation:
    """Torch modules on inputs of any shape: one :class:`~fairshare.games.TorchGame` per input, on the model's
    device (tensors end to end on a GPU)."""
    from .games.torch_game import TorchGame

    n_rows = int(X.shape[0])
    if n_rows == 0:
        raise ValueError("X holds no inputs to explain")
    baseline = 0.0 if background is None else background
    if hasattr(baseline, "shape") and len(baseline.shape) == len(X.shape) and baseline.shape[0] == 1:
        baseline = baseline[0]
    seeds = np.random.SeedSequence(seed if not isinstance(seed, np.random.Generator)
                                   else seed.integers(2**63)).spawn(n_rows)
    results, bar = [], _progress(progress and n_rows > 1, n_rows)
    if method == "auto" and not options:                       # one choice for every input (see explain)
        from .estimation.choice import AUTO_SURROGATE_SECONDS, resolve_auto, with_surrogate_allowance

        first = TorchGame(model, X[0], baseline=baseline, groups=groups, batch_size=batch_size)
        method, _ = with_surrogate_allowance(AUTO_SURROGATE_SECONDS.get() / n_rows, resolve_auto, first, sv,
                                             budget or default_budget(first.n_players))
    try:
        for i in range(n_rows):
            game = TorchGame(model, X[i], baseline=baseline, groups=groups, batch_size=batch_size)
            b = budget or default_budget(game.n_players)
            phi = estimate(game, sv, method=method, budget=b, seed=seeds[i], **options)
            results.append(phi)
            bar.update(1)
    finally:
        bar.close()
    values = np.stack([np.asarray(r.values, dtype=float) for r in results])
    stderr = None if any(r.stderr is None for r in results) else np.stack([np.asarray(r.stderr) for r in results])
    k = values.shape[2] if values.ndim == 3 else None
    return Explanation(values=values, stderr=stderr, base_values=np.stack([np.asarray(r.empty_value, dtype=float)
                                                                           for r in results]),
                       data=None, feature_names=list(results[0].player_names), index=sv.name,
                       output_names=[str(j) for j in range(k)] if k else None, methods=[r.method for r in results],
                       n_evaluations=np.array([r.n_evaluations for r in results]),
                       info=dict(model_output="torch module outputs", budget=budget, seed=str(seed),
                                 input_shape=list(X.shape[1:])))


def _output_names(model: Any, k: int | None) -> list[str] | None:
    if k is None:
        return None
    classes = getattr(model, "classes_", None)
    if classes is not None and len(classes) == k:
        return [str(c) for c in classes]
    return [str(j) for j in range(k)]


def _on_dask(client: Any, predict: Any, X: Any, background: Any, settings: dict, seeds: list, todo: list,
             finish: Any) -> None:
    """One task per row on the cluster; rows are saved as they complete."""
    from dask.distributed import as_completed

    remote_predict = client.scatter(predict, broadcast=True)
    remote_background = client.scatter(background, broadcast=True)
    index_of, futures = {}, []
    for i in todo:
        fut = client.submit(_explain_row, remote_predict, _row_frame(X, i), remote_background, settings, seeds[i],
                            None, i, pure=False)
        index_of[fut.key] = i
        futures.append(fut)
    for fut in as_completed(futures):
        finish(index_of[fut.key], fut.result())


def _explain_trees(model: Any, X: Any, background: Any, sv: Semivalue, feature_names: Any) -> Explanation:
    """Exact tree values (the model read once, rows in parallel): path-dependent without background."""
    from .games.tree import _check_mode, _exact_rows, empty_value
    from .trees.inputs import tree_rows
    from .trees.prepared import prepared

    prep = prepared(model)
    ens = prep.ensemble
    rows = tree_rows(X, ens, "X")
    if rows.shape[0] == 0:
        raise ValueError("X holds no rows to explain")
    mode = "path-dependent" if background is None else "interventional"
    _check_mode(prep, mode, background)
    bg = None if background is None else tree_rows(background, ens, "background")
    if bg is not None and bg.shape[0] == 0:
        raise ValueError("background must hold at least one row")
    values = _exact_rows(prep, rows, resolve_index(sv, ens.n_features), mode, bg)
    values = values if ens.n_outputs > 1 else values[..., 0]
    empty = empty_value(prep, mode, bg)
    empty = empty if ens.n_outputs > 1 else empty[0]
    n = len(rows)
    names = [str(f) for f in feature_names] if feature_names is not None else (
        ens.feature_names or _frame_info(X)[0] or [f"x{i}" for i in range(ens.n_features)])
    if len(names) != ens.n_features:
        raise ValueError(f"feature_names must have {ens.n_features} names, got {len(names)}")
    base = np.broadcast_to(empty, (n,) + np.shape(empty)).copy()
    k = values.shape[2] if values.ndim == 3 else None
    return Explanation(values=values, stderr=np.zeros_like(values), base_values=base, data=rows,
                       feature_names=list(names), index=sv.name, output_names=_output_names(model, k),
                       methods=["exact (tree)"] * n, n_evaluations=np.zeros(n, dtype=np.int64),
                       info=dict(model_output=f"raw ({ens.output})", tree_mode=mode))


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(enabled: bool, total: int, initial: int = 0) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="explaining rows", unit="row")
