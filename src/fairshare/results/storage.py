"""How results are stored: one ``.npz`` file per result, its arrays as members and every other field in one JSON
member, ``meta``; read back without pickle, so a file from anywhere can be opened without running its code.

The format: the member ``meta`` holds ``{"format": "fairshare-result", "version": 1, "kind": <class name>, "fields":
{...}}``; every field that is an array of numbers, booleans, strings or dates is a member of its own name, and every
other field is in ``fields`` as JSON: numpy arrays and scalars by their bytes (base64), tuples and dicts with keys
other than strings tagged so that they come back as they were, arrays of Python objects (a text's tokens) element by
element. Anything else (a game or a stopping rule in ``options``) is stored as its ``str``. Files written before this format (an
Explanation's ``meta`` with its fields at the top) are read as they were written.
"""

from __future__ import annotations

import base64
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_result", "read_result", "encode", "decode", "FORMAT", "VERSION"]

FORMAT = "fairshare-result"
VERSION = 1
_TAGS = ("__ndarray__", "__scalar__", "__tuple__", "__dict__")


def _stored_as_member(value: Any) -> bool:
    """Arrays that ``np.savez`` writes without pickle: every dtype but Python objects."""
    return isinstance(value, np.ndarray) and value.dtype != object


def encode(value: Any) -> Any:
    """``value`` as plain JSON data: numpy arrays and scalars by their bytes (so every bit and dtype comes back),
    arrays of Python objects element by element, tuples and dicts tagged to come back as they were.

    Examples
    --------
    >>> encode({"shape": (2, 3), "scale": np.float32(0.5)})
    {'shape': {'__tuple__': [2, 3]}, 'scale': {'__scalar__': 'AAAAPw==', 'dtype': '<f4'}}
    >>> decode(encode(np.array([[0.1, -0.0]])))
    array([[ 0.1, -0. ]])
    """
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"__ndarray__": [encode(v) for v in value.ravel()], "dtype": "object", "shape": list(value.shape)}
        return {"__ndarray__": _bytes(value), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {"__scalar__": _bytes(np.asarray(value)), "dtype": value.dtype.str}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not any(k in _TAGS for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _bytes(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _array(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.dtype(dtype)).copy()


def decode(value: Any) -> Any:
    """The value :func:`encode` stored.

    Examples
    --------
    >>> decode({"__ndarray__": ["a ", "b"], "dtype": "object", "shape": [1, 2]})
    array([['a ', 'b']], dtype=object)
    """
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        shape = tuple(value["shape"])
        if value["dtype"] != "object":
            return _array(value["__ndarray__"], value["dtype"]).reshape(shape)
        out = np.empty(len(value["__ndarray__"]), dtype=object)
        out[:] = [decode(v) for v in value["__ndarray__"]]
        return out.reshape(shape)
    if "__scalar__" in value:
        return _array(value["__scalar__"], value["dtype"])[0]
    if "__tuple__" in value:
        return tuple(decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["__dict__"]}
    return {k: decode(v) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def write_result(path: str | Path, kind: str, fields: dict[str, Any]) -> Path:
    """Write the ``fields`` of a result of class ``kind`` to ``path`` (written as given, no suffix added).

    Examples
    --------
    >>> import tempfile, os
    >>> p = write_result(os.path.join(tempfile.mkdtemp(), "r.npz"), "Attribution", {"values": np.ones(2), "index": "x"})
    >>> read_result(p)
    ('Attribution', {'index': 'x', 'values': array([1., 1.])})
    """
    path = Path(path)
    arrays = {name: value for name, value in fields.items() if _stored_as_member(value)}
    if "meta" in arrays:
        raise ValueError("a result field may not be named 'meta' (the file's own member)")
    meta = {"format": FORMAT, "version": VERSION, "kind": kind,
            "fields": {name: encode(value) for name, value in fields.items() if name not in arrays}}
    with open(path, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta, allow_nan=True)), **arrays)
    return path


def read_result(path: str | Path) -> tuple[str | None, dict[str, Any]]:
    """``(kind, fields)`` of the result stored at ``path``; ``kind`` is None for a file written before the format
    named its kind (an Explanation). Read without pickle.

    Examples
    --------
    >>> read_result("no-such-file.npz")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no result file at no-such-file.npz
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no result file at {path}")
    meta, arrays = _members(path)
    if meta.get("format") != FORMAT:                                  # an Explanation saved before the format
        return None, {**meta, **arrays}
    if meta.get("version") != VERSION:
        raise ValueError(f"{path} was written in version {meta.get('version')} of the result format; this fairshare "
                         f"reads version {VERSION}")
    if not isinstance(meta.get("kind"), str) or not isinstance(meta.get("fields"), dict):
        raise ValueError(f"{path} is not a fairshare result file (its meta names no kind or no fields)")
    try:
        fields = decode(meta["fields"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{path} is not a fairshare result file (a field does not decode: {exc})") from None
    return meta["kind"], {**fields, **arrays}


#: what numpy and zipfile raise on a file that is no readable archive
_UNREADABLE = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)


def _members(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The meta (a JSON object) and the arrays of the ``.npz`` archive at ``path``, read without pickle; anything
    else (another kind of file, an empty or truncated one) refused as no result file."""
    try:
        z = np.load(path, allow_pickle=False)
    except _UNREADABLE:                               # numpy takes a file it cannot read for a pickle
        reason = "an empty file" if path.stat().st_size == 0 else "not an .npz archive"
        raise ValueError(f"{path} is not a fairshare result file ({reason})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} is not a fairshare result file (it holds one array, not an .npz archive)")
    with z:
        if "meta" not in z.files:
            raise ValueError(f"{path} is not a fairshare result file (it has no 'meta' member)")
        try:
            meta = json.loads(str(z["meta"]))
            arrays = {name: z[name] for name in z.files if name != "meta"}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not a fairshare result file (its meta is not JSON: {exc})") from None
        except _UNREADABLE as exc:                         # a member stored with pickle, or a damaged archive
            why = "a member is stored with pickle, which is not read" if "pickle" in str(exc) else \
                f"a member does not read: {type(exc).__name__}"
            raise ValueError(f"{path} is not a fairshare result file ({why})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path} is not a fairshare result file (its meta is not a JSON object)")
    return meta, arrays
