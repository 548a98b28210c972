"""Reading a saved model for the command line: formats that hold no code first; pickles only when trusted.

A joblib or pickle file runs whatever code it was made to run when it is loaded, so the command line reads one
only with ``--trust-model``. Without it, it reads formats that carry data, not code:

| file | read as |
|---|---|
| ``.json``, ``.ubj`` | an xgboost model (``XGBClassifier`` or ``XGBRegressor`` by its objective) |
| ``.txt`` | a lightgbm model (its ``Booster``) |
| ``.cbm`` | a catboost model (``CatBoostClassifier`` or ``CatBoostRegressor`` by its loss) |
| ``.skops`` | a scikit-learn model saved with ``skops.io.dump`` (scikit-learn's types and those skops trusts) |
| ``.pt2`` | a torch program saved with ``torch.export.save`` (export it with a dynamic batch dimension) |
| ``.pt``, ``.pth``, ``.ts`` | a TorchScript module (``torch.jit.save``); with ``--architecture``, a state dict |
| ``.joblib``, ``.pkl``, ``.pickle`` | joblib / pickle, with ``--trust-model`` only |

A torch state dict holds weights, not the network that uses them: ``--architecture MODULE:NAME`` (an importable
module) or ``FILE.py:NAME`` names the code that builds the network (a class or a function called with no
arguments); the weights are read with ``torch.load(weights_only=True)``, which unpickles tensors only, and must
match the network's parameters and buffers exactly. That code is the user's own, named on the command line, as with
``python -m``; the model file still runs nothing.

The tree libraries' own formats are read by their readers (:func:`fairshare.trees.readers.file_readers`: each
reader's ``suffixes`` and ``load``); a new tree library's format needs no line here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..trees.readers import file_readers

__all__ = ["load_model", "build_architecture", "SAFE_FORMATS", "PICKLE_SUFFIXES"]

_OTHER_FORMATS = {".skops": "skops", ".pt2": "export", ".pt": "torchscript", ".pth": "torchscript",
                  ".ts": "torchscript"}
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")


def _safe_formats() -> dict[str, str]:
    """Suffix -> what reads it: a tree library's reader (by name), skops, torch.export or TorchScript."""
    return {**{suffix: reader.name for suffix, reader in file_readers().items()}, **_OTHER_FORMATS}


SAFE_FORMATS = _safe_formats()


def load_model(path: str, flag: str = "--model", trust: bool = False, architecture: str | None = None) -> Any:
    """The model saved at ``path``: read by its suffix from a format that holds no code, or unpickled with joblib
    when ``trust`` is true (``--trust-model``); a torch state dict into the network ``architecture`` builds
    (``MODULE:NAME`` or ``FILE.py:NAME``); errors name ``flag``.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "model.joblib"); open(path, "wb").close()
    >>> load_model(path)                                # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --model ...model.joblib is a pickle, which runs code when loaded: pass --trust-model if you trust who made it, or save the model as .json / .ubj (xgboost), .txt (lightgbm), .cbm (catboost), .skops (scikit-learn), .pt2 (torch.export) or .pt (TorchScript)
    """
    if not Path(path).is_file():
        raise OSError(f"{flag} {path}: no such file")
    suffix = Path(path).suffix.lower()
    if architecture is not None:
        return _state_dict(path, flag, architecture)
    trees, safe = file_readers(), _safe_formats()
    if suffix in PICKLE_SUFFIXES or (trust and suffix not in safe):
        if not trust:
            raise ValueError(f"{flag} {path} is a pickle, which runs code when loaded: pass --trust-model if you trust "
                             f"who made it, or save the model as {_formats()}")
        return _read(path, flag, _joblib)
    if suffix not in safe:
        raise ValueError(f"{flag} {path}: unknown model format {suffix or '(no suffix)'!r}; save the model as "
                         f"{_formats()}, or as .joblib with --trust-model")
    if suffix in trees:
        return _read(path, flag, trees[suffix].load)
    reader = {"skops": _skops, "torchscript": _torchscript, "export": _exported}[safe[suffix]]
    return _read(path, flag, lambda p: reader(p, flag))


def _formats() -> str:
    libraries: dict[str, list[str]] = {}
    for suffix, reader in file_readers().items():
        libraries.setdefault(reader.title, []).append(suffix)
    trees = ", ".join(f"{' / '.join(suffixes)} ({title})" for title, suffixes in libraries.items())
    return f"{trees}, .skops (scikit-learn), .pt2 (torch.export) or .pt (TorchScript)"


def _read(path: str, flag: str, reader: Any) -> Any:
    try:
        return reader(path)
    except (ImportError, ValueError) as exc:
        if isinstance(exc, ImportError) or str(exc).startswith(flag):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{flag} {path}: not a readable model file ({first[:200]})") from None
    except Exception as exc:  # noqa: BLE001 - a library's own error on a bad file: say which file and what
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{flag} {path}: not a readable model file ({type(exc).__name__}: {first[:200]})") from None


def _joblib(path: str) -> Any:
    import joblib

    return joblib.load(path)


def _skops(path: str, flag: str) -> Any:
    try:
        import skops.io as sio
    except ImportError as exc:  # pragma: no cover - only without the ml extra
        raise ImportError(f"{flag} {path}: reading .skops files needs skops: pip install 'fairshare[ml]'") from exc
    untrusted = sio.get_untrusted_types(file=path)
    foreign = [t for t in untrusted if not t.startswith("sklearn.")]
    if foreign:
        raise ValueError(f"{flag} {path} holds types that are not scikit-learn's ({', '.join(foreign[:5])}); check "
                         "them and save the model in its library's own format, or as .joblib with --trust-model")
    return sio.load(path, trusted=untrusted)


def _exported(path: str, flag: str) -> Any:
    import logging

    import torch

    logger = logging.getLogger("torch.export")            # it logs a traceback before raising on a bad file
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        return torch.export.load(path).module()
    finally:
        logger.setLevel(level)


def _torchscript(path: str, flag: str) -> Any:
    import torch

    try:
        return torch.jit.load(path, map_location="cpu")
    except RuntimeError:
        pass
    try:
        torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - neither TorchScript nor plain tensors: refused below
        raise ValueError(f"{flag} {path}: not a TorchScript module (torch.jit.save) nor a file of tensors; a pickled "
                         "module loads only with --trust-model") from None
    raise ValueError(f"{flag} {path} holds weights (a state dict) without the model's code: name the code that "
                     "builds the network with --architecture MODULE:NAME or FILE.py:NAME, save the module with "
                     "torch.export.save (.pt2) or torch.jit.save (.pt), or a pickled module with --trust-model")


def _state_dict(path: str, flag: str, architecture: str) -> Any:
    """The network ``architecture`` builds, with the weights of the state dict at ``path`` (tensors only)."""
    import torch

    if Path(path).suffix.lower() not in (".pt", ".pth"):
        raise ValueError(f"--architecture reads a torch state dict (.pt / .pth), not {flag} {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - anything but plain tensors is refused by weights_only
        raise ValueError(f"{flag} {path}: not a state dict of tensors ({type(exc).__name__}); --architecture reads "
                         "the weights saved by torch.save(module.state_dict(), path)") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{flag} {path}: not a state dict (a dict of tensors), got {type(state).__name__}")
    module = build_architecture(architecture)
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        raise ValueError(f"{flag} {path} does not fit --architecture {architecture}: "
                         f"{' '.join(line.strip() for line in first[:3])[:300]}") from None
    return module.eval()


def build_architecture(spec: str) -> Any:
    """The torch module built by ``spec``: ``MODULE:NAME`` (importable) or ``FILE.py:NAME``, a class or function
    called with no arguments.

    Examples
    --------
    >>> build_architecture("torch.nn:Identity")
    Identity()
    >>> build_architecture("torch.nn")
    Traceback (most recent call last):
    ...
    ValueError: --architecture must be MODULE:NAME or FILE.py:NAME, got 'torch.nn'
    """
    import importlib
    import importlib.util

    import torch

    where, _, name = spec.rpartition(":")
    if not where or not name.isidentifier():
        raise ValueError(f"--architecture must be MODULE:NAME or FILE.py:NAME, got {spec!r}")
    try:
        if where.endswith(".py"):
            if not Path(where).is_file():
                raise ValueError(f"--architecture {spec}: no such file {where}")
            loaded = importlib.util.spec_from_file_location(f"_fairshare_architecture_{Path(where).stem}", where)
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ImportError as exc:
        raise ValueError(f"--architecture {spec}: cannot import {where} ({exc})") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(f"--architecture {spec}: {where} has no class or function {name!r}")
    built = factory()
    if not isinstance(built, torch.nn.Module):
        raise ValueError(f"--architecture {spec} built a {type(built).__name__}, not a torch.nn.Module")
    return built
