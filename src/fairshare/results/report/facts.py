"""The facts of a run as the report shows them: what was computed and how (method and why, budget, seed, model
calls), the libraries that did it, and every other entry of ``info`` in a short form."""

from __future__ import annotations

import datetime
import platform
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from typing import Any

import numpy as np

__all__ = ["libraries", "model_library", "facts", "short"]

#: ``info`` entries the page shows elsewhere (the text, the images) or that only say which entries are per row
_SHOWN_ELSEWHERE = ("text", "images", "per_row", "input_groups")


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(version unknown)"


def model_library(model: Any = None, info: dict | None = None) -> tuple[str, str] | None:
    """``(distribution, version)`` of the library the model comes from: read from ``model`` (its class's top
    module, or that of the object a bound method belongs to), else from ``info`` where it says (a torch module's
    outputs); None when neither tells (a plain function).

    Examples
    --------
    >>> model_library(np.polynomial.Polynomial([1.0]))[0]
    'numpy'
    >>> model_library(lambda X: X) is None
    True
    """
    owner = getattr(model, "__self__", model)                # a bound method (model.predict): its model
    module = "" if owner is None else (type(owner).__module__ or "").split(".")[0]
    if module in ("builtins", "__main__", "functools", ""):
        module = ""
    if not module and str((info or {}).get("model_output", "")).startswith("torch"):
        module = "torch"
    if not module:
        return None
    names = packages_distributions().get(module, [module])
    return names[0], _version(names[0])


def libraries(model: Any = None, info: dict | None = None) -> list[tuple[str, str]]:
    """``(name, version)`` of fairshare, numpy, Python and, when known, the model's library (:func:`model_library`).

    Examples
    --------
    >>> [name for name, _ in libraries()]
    ['fairshare', 'numpy', 'python']
    """
    found = [("fairshare", _version("fairshare")), ("numpy", np.__version__), ("python", platform.python_version())]
    own = model_library(model, info)
    if own is not None and own[0] not in ("fairshare", "numpy"):
        found.append(own)
    return found


def short(value: Any, limit: int = 40) -> str:
    """An ``info`` entry in a short form: arrays by their shape, a per-row list of facts by how often each fact
    occurs, long lists by their first ``limit`` entries and how many there are in all.

    Examples
    --------
    >>> short(np.zeros((20, 3)))
    'array of shape (20, 3)'
    >>> short([{"via": "enumeration"}] * 3 + [{"via": "tree"}])
    "{'via': 'enumeration'} x 3; {'via': 'tree'} x 1"
    >>> short(list(range(50)), limit=3)
    '[0, 1, 2, ... 47 more (50 in all)]'
    """
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}" if value.size > limit else str(value.tolist())
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        counts: dict[str, int] = {}
        for v in value:
            counts[repr(v)] = counts.get(repr(v), 0) + 1
        return "; ".join(f"{k} x {c}" for k, c in counts.items())
    if isinstance(value, (list, tuple)) and len(value) > limit:
        shown = ", ".join(repr(v) for v in value[:limit])
        return f"[{shown}, ... {len(value) - limit} more ({len(value)} in all)]"
    return str(value)


def _calls(n_evaluations: Any, model_rows: Any = None) -> str:
    """Model calls: the rows sent to the model where the result records them (``info["model_rows"]``: SAGE, whose
    game evaluation costs every row's imputed rows) with the game evaluations behind them; else the game
    evaluations, in total and per row where there are several rows.

    Examples
    --------
    >>> _calls(8, 2400)
    '2,400 model rows (8 game evaluations)'
    """
    calls = np.asarray(n_evaluations).reshape(-1)
    if model_rows is not None:
        return f"{int(model_rows):,} model rows ({_calls(n_evaluations)})"
    if calls.size == 1:
        return f"{int(calls[0]):,} game evaluations"
    if calls.min() == calls.max():
        return f"{int(calls.sum()):,} game evaluations ({int(calls[0]):,} per row, {calls.size:,} rows)"
    return (f"{int(calls.sum()):,} game evaluations ({calls.mean():,.1f} per row on average, from {int(calls.min()):,} "
            f"to {int(calls.max()):,}; {calls.size:,} rows)")


def facts(result: Any, shape: str, model: Any = None) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The facts the report leads with (name, text), and every other ``info`` entry in :func:`short` form.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda X: X.sum(axis=1), np.ones((2, 3)), np.zeros((1, 3)), budget=8, seed=3, progress=False)
    >>> lead = dict(facts(e, "2 rows x 3 players")[0])
    >>> lead["seed"], lead["budget"], lead["model calls"]
    ('3', '8', '16 game evaluations (8 per row, 2 rows)')
    """
    info = dict(result.info or {})
    choice = info.pop("choice", None)
    method = str(result.method)
    if isinstance(choice, dict) and choice.get("why"):
        method += f" ({choice['why']})"
    lead = [("values", f"{result.index} values of {shape}"), ("method", method),
            ("budget", str(info.pop("budget", "not recorded"))), ("seed", str(info.pop("seed", "not recorded"))),
            ("model calls", _calls(result.n_evaluations, info.pop("model_rows", None)))]
    if hasattr(result, "n_fits"):                          # data values: the model fits behind the evaluations
        lead.append(("model fits", f"{result.n_fits:,} fitted, {result.reused_fits:,} from the cache, "
                                   f"{result.seconds:.1f} s"))
    if "stopped" in info:
        lead.append(("stopped", short(info.pop("stopped"))))
    for key in ("model_output", "imputation", "tree_mode", "link", "via"):
        if key in info:
            lead.append((key.replace("_", " "), short(info.pop(key))))
    if result.options:
        lead.append(("options", ", ".join(f"{k}={v!r}" for k, v in result.options.items())))
    lead.append(("libraries", ", ".join(f"{name} {v}" for name, v in libraries(model, result.info))))
    lead.append(("written", f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}"))
    rest = [(key, short(value)) for key, value in info.items() if key not in _SHOWN_ELSEWHERE]
    return lead, rest
