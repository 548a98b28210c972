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
| ``.pt``, ``.pth``, ``.ts`` | a TorchScript module (``torch.jit.save``) |
| ``.joblib``, ``.pkl``, ``.pickle`` | joblib / pickle, with ``--trust-model`` only |
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["load_model", "SAFE_FORMATS", "PICKLE_SUFFIXES"]

SAFE_FORMATS = {".json": "xgboost", ".ubj": "xgboost", ".txt": "lightgbm", ".cbm": "catboost", ".skops": "skops",
                ".pt2": "export", ".pt": "torchscript", ".pth": "torchscript", ".ts": "torchscript"}
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")

_CLASSIFYING_LOSSES = ("Logloss", "CrossEntropy", "MultiClass", "MultiClassOneVsAll", "MultiLogloss",
                       "MultiCrossEntropy")


def load_model(path: str, flag: str = "--model", trust: bool = False) -> Any:
    """The model saved at ``path``: read by its suffix from a format that holds no code, or unpickled with joblib
    when ``trust`` is true (``--trust-model``); errors name ``flag``.

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
    if suffix in PICKLE_SUFFIXES or (trust and suffix not in SAFE_FORMATS):
        if not trust:
            raise ValueError(f"{flag} {path} is a pickle, which runs code when loaded: pass --trust-model if you trust "
                             f"who made it, or save the model as {_formats()}")
        return _read(path, flag, _joblib)
    if suffix not in SAFE_FORMATS:
        raise ValueError(f"{flag} {path}: unknown model format {suffix or '(no suffix)'!r}; save the model as "
                         f"{_formats()}, or as .joblib with --trust-model")
    reader = {"xgboost": _xgboost, "lightgbm": _lightgbm, "catboost": _catboost, "skops": _skops,
              "torchscript": _torchscript, "export": _exported}[SAFE_FORMATS[suffix]]
    return _read(path, flag, lambda p: reader(p, flag))


def _formats() -> str:
    return (".json / .ubj (xgboost), .txt (lightgbm), .cbm (catboost), .skops (scikit-learn), .pt2 (torch.export) or "
            ".pt (TorchScript)")


def _read(path: str, flag: str, reader: Any) -> Any:
    try:
        return reader(path)
    except (ImportError, ValueError) as exc:
        if isinstance(exc, ImportError) or str(exc).startswith(flag):
            raise
        raise ValueError(f"{flag} {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    except Exception as exc:  # noqa: BLE001 - a library's own error on a bad file: say which file and what
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{flag} {path}: not a readable model file ({type(exc).__name__}: {first[:200]})") from None


def _joblib(path: str) -> Any:
    import joblib

    return joblib.load(path)


def _xgboost(path: str, flag: str) -> Any:
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(path)
    objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
    model = xgb.XGBClassifier() if objective.startswith(("binary:", "multi:")) else xgb.XGBRegressor()
    model.load_model(path)
    return model


def _lightgbm(path: str, flag: str) -> Any:
    import lightgbm as lgb

    with open(path, encoding="utf-8", errors="replace") as fh:
        head = fh.read(64)
    if not head.startswith("tree"):
        raise ValueError(f"{flag} {path}: not a lightgbm model file (it starts with {head[:20]!r}, not 'tree')")
    return lgb.Booster(model_file=path)


def _catboost(path: str, flag: str) -> Any:
    import catboost

    model = catboost.CatBoost()
    model.load_model(path)
    loss = str(model.get_all_params().get("loss_function", ""))
    typed = catboost.CatBoostClassifier() if loss.split(":")[0] in _CLASSIFYING_LOSSES else catboost.CatBoostRegressor()
    typed.load_model(path)
    return typed


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
    import torch

    return torch.export.load(path).module()


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
    raise ValueError(f"{flag} {path} holds weights (a state dict) without the model's code: save the module with "
                     "torch.export.save (.pt2) or torch.jit.save (.pt), or a pickled module with --trust-model")
