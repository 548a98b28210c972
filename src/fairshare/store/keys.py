"""What tells one run's cache from another's: hashes of data, settings, models, functions and scorers by content.

A cache may only serve the run that wrote it, so its key must change whenever what the run computes can
change, and must not change between two processes running the same code on the same data (or the cache
never resumes). :func:`content_key` walks an object the way pickle does, with three differences:

- functions and classes of the user's own code (anything not installed in site-packages or the standard
  library: scripts, notebooks, local modules) are hashed by content: a function by its code (nested code
  objects of lambdas, comprehensions and inner functions by content, never by address), constants,
  defaults, closure cell contents and the globals it reads (data, objects, modules by name, other functions
  and classes by content); a class by its bases, its methods' code and its data attributes (``threshold = 0.5``
  read as ``self.threshold``; Python's own dunder entries aside), so a counter kept on the class changes its
  key. An edited function or class, or another one of the same name, gets another key;
- a module of the user's own that a function reads (``import cfg`` ... ``cfg.SCALE``, ``features.transform``; a
  global or a closure cell) by the attributes of it the function's code names, by content; installed modules by
  name and version;
- installed functions and classes are named by module, qualified name and their package's version; a callable
  wrapping a function (``functools.lru_cache``) by the function it wraps;
- sets are hashed in sorted order, numpy arrays and torch tensors by their bytes (torch pickles a tensor under the
  memory address of its storage), so that the key is the same in every process.

An object that cannot be pickled is hashed by its attributes, and where even that fails by its type.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import site
import sys
import sysconfig
import types
import warnings
from typing import Any

import numpy as np

from .._core.tables import target_of

__all__ = ["fingerprint", "content_key", "model_key", "estimator_key"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict)
_DEEPEST = 100                # objects within objects hashed in their own walk; deeper ones by their type


def fingerprint(*arrays: Any, **config: Any) -> str:
    """A short hash of the data and settings of a run (a cache is only reused for the same run).

    Arrays may be numpy arrays, anything numpy reads, scipy sparse matrices or torch tensors.

    Examples
    --------
    >>> fingerprint(np.arange(3), budget=10) == fingerprint(np.arange(3), budget=10)
    True
    >>> names = np.array([f"f{i}" for i in range(2000)]); other = names.copy(); other[1000] = "g"
    >>> fingerprint(names=names) == fingerprint(names=other)
    False
    """
    with np.printoptions(threshold=sys.maxsize):         # an object's str holding an array: all of it, no '...'
        h = hashlib.sha256(json.dumps(config, sort_keys=True, default=_setting).encode())
    for a in arrays:
        if a is None:
            h.update(b"none")
            continue
        if hasattr(a, "tocsr") and hasattr(a, "nnz"):                # a scipy sparse matrix: its parts
            a = a.tocsr()
            h.update(str(a.shape).encode())
            for part in (a.data, a.indices, a.indptr):
                h.update(np.ascontiguousarray(part).tobytes())
            continue
        if hasattr(a, "detach") and hasattr(a, "cpu"):                # a torch tensor, wherever it lives
            t = a.detach().cpu()
            try:
                a = t.numpy()
            except TypeError:                                         # a dtype numpy lacks (bfloat16): its bytes
                flat = t.contiguous().reshape(-1)
                h.update(f"{t.dtype} {tuple(t.shape)}".encode())
                h.update(flat.view(sys.modules["torch"].uint8).numpy().tobytes() if flat.numel() else b"")
                continue
        arr = np.ascontiguousarray(np.asarray(a))
        h.update(str(arr.shape).encode())
        h.update(arr.astype(str).tobytes() if arr.dtype == object else arr.tobytes())
    return h.hexdigest()[:16]


def _setting(value: Any) -> Any:
    """A setting JSON does not take, by its whole content: an array (numpy, a pandas Index or Series) as its list of
    elements, dtype and shape (str() of a long one summarizes it with '...', so one changed element in its middle
    did not change the key); anything else as its str()."""
    if isinstance(value, np.ndarray) or (type(value).__module__.startswith("pandas") and hasattr(value, "tolist")):
        arr = np.asarray(value)
        return {"array": arr.tolist() if arr.dtype == object else np.ravel(arr).tolist(), "dtype": str(arr.dtype),
                "shape": list(arr.shape)}
    return str(value)


def content_key(obj: Any) -> str:
    """A hash of ``obj`` by content (see the module docstring), the same in every process.

    Examples
    --------
    >>> content_key(lambda x: [v * 2 for v in x]) == content_key(lambda x: [v * 2 for v in x])
    True
    >>> content_key(lambda x: [v * 2 for v in x]) == content_key(lambda x: [v * 3 for v in x])
    False
    """
    try:
        digest = _Hasher(frozenset()).digest(obj)
    except Exception:                         # noqa: BLE001 - not picklable (or nested too deep): its attributes
        digest = _fallback(obj, frozenset({id(obj)}))
        if digest == _opaque(obj):
            warnings.warn(f"a {type(obj).__name__} cannot be hashed by content: a cache keys it by its type alone "
                          "(give each such object a cache folder of its own)", RuntimeWarning, stacklevel=3)
    return digest.hex()[:32]


def model_key(model: Any) -> str:
    """What tells one model's cache from another's, without calling it: :func:`content_key` of the model (of the
    object behind a bound method such as ``model.predict_proba``): a fitted model's whole state and its class, a
    function's code, closures and the globals it reads.

    Examples
    --------
    >>> model_key(len) == model_key(len)
    True
    """
    return content_key(target_of(model))


def estimator_key(model: Any) -> str:
    """The key of a model that is fitted afresh for every use (``value_data``): its unfitted settings (a
    scikit-learn clone) and its class by content; any other object whole.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> estimator_key(Ridge(1.0)) == estimator_key(Ridge(1.0).fit([[0.0], [1.0]], [0.0, 1.0]))
    True
    >>> estimator_key(Ridge(1.0)) == estimator_key(Ridge(2.0))
    False
    """
    try:
        from sklearn.base import BaseEstimator, clone

        if isinstance(model, BaseEstimator):
            model = clone(model)
    except Exception:                         # noqa: BLE001 - no scikit-learn, or a clone that fails: the whole object
        pass
    return content_key(model)


# --------------------------------------------------------------------------------------------- the walk
def _tag(*parts: Any) -> tuple:
    """What a hashed function, class, array or set stands for in the pickle stream (never called to load)."""
    return parts


class _Sink:
    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.write = self.sha.update


class _Hasher(pickle._Pickler):            # the pure-Python pickler: reducer_override sees every object
    def __init__(self, active: frozenset, root: Any = None) -> None:
        self._sink = _Sink()
        super().__init__(self._sink, protocol=4)
        self._active, self._root = active, root

    def digest(self, obj: Any) -> bytes:
        self.dump(obj)
        return self._sink.sha.digest()

    def _child(self, obj: Any, parts: Any = None) -> bytes:
        """The digest of ``obj`` (or of ``parts`` standing for it) in its own hasher, ``obj`` marked as being
        walked (a reference back to it is a cycle); an object pickle cannot take is hashed by its attributes."""
        active = self._active | {id(obj)}
        if len(active) > _DEEPEST:
            return _opaque(obj)
        try:
            return _Hasher(active, None if parts is not None else obj).digest(obj if parts is None else parts)
        except Exception:                     # noqa: BLE001 - not picklable: its attributes, else its type
            return _fallback(obj, active) if parts is None else _opaque(obj)

    def reducer_override(self, obj: Any) -> Any:
        t = type(obj)
        if t in _PLAIN or obj is self._root or obj is _tag:
            return NotImplemented
        if t in (set, frozenset):
            return _tag, ("set", sorted(self._child(v) for v in obj))
        if id(obj) in self._active:
            return _tag, ("cycle", _name(t if not isinstance(obj, (type, types.FunctionType)) else obj))
        if isinstance(obj, np.ndarray) and obj.dtype != object:
            data = hashlib.sha256(np.ascontiguousarray(obj).view(np.uint8).data).digest() if obj.size else b""
            return _tag, ("array", obj.dtype.str, obj.shape, data)
        if isinstance(obj, np.ndarray):
            return _tag, ("objects", obj.shape, obj.ravel().tolist())
        tensor = _tensor(obj)
        if tensor is not None:
            return _tag, tensor
        if isinstance(obj, types.ModuleType):
            return _tag, ("module", obj.__name__, _version(obj.__name__))
        if isinstance(obj, types.CodeType):
            return _tag, ("code",) + _code_parts(obj)
        if isinstance(obj, types.FunctionType):
            return self._function(obj)
        if isinstance(obj, type):
            return self._class(obj)
        if isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
            return NotImplemented
        wrapped = _wrapped(obj)
        if wrapped is not None:               # functools.lru_cache and the like, which pickle names: its function too
            return _tag, ("wrapped", _name(t), self._function(wrapped)[1], self._child(obj))
        return _tag, ("object", _name(t), self._child(obj))

    def _function(self, f: types.FunctionType) -> tuple:
        if _is_library(f.__module__):
            return _tag, ("installed", _name(f), _version(f.__module__))
        read = _global_names(f.__code__)
        cells = []
        for cell in f.__closure__ or ():
            try:
                cells.append(_user_module(cell.cell_contents, read, set()))
            except ValueError:                # a cell not filled yet
                cells.append(_tag)
        names = sorted(n for n in read if n in f.__globals__)
        parts = (_name(f), f.__code__, f.__defaults__, f.__kwdefaults__, cells,
                 [(n, _user_module(f.__globals__[n], read, set())) for n in names])
        return _tag, ("function", self._child(f, parts))

    def _class(self, cls: type) -> tuple:
        if _is_library(cls.__module__):
            return _tag, ("installed", _name(cls), _version(cls.__module__))
        members = []
        for name, value in sorted(vars(cls).items()):
            raw = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            if isinstance(raw, property):
                raw = (raw.fget, raw.fset, raw.fdel)
            elif isinstance(raw, functools.cached_property):
                raw = raw.func
            if not (name.startswith("__") and name.endswith("__")) or isinstance(raw, (types.FunctionType, type)):
                members.append((name, raw))                # methods, and data the methods read as self.<name>
        bases = [b for b in cls.__bases__ if b is not object]
        return _tag, ("class", self._child(cls, (_name(cls), bases, members)))


def _wrapped(obj: Any) -> types.FunctionType | None:
    """The function a callable wraps (``__wrapped__``: functools.lru_cache, functools.wraps), or None."""
    try:
        wrapped = getattr(obj, "__wrapped__", None)
    except Exception:                         # noqa: BLE001 - an object whose attribute lookup raises wraps nothing
        return None
    return wrapped if isinstance(wrapped, types.FunctionType) and callable(obj) else None


def _tensor(obj: Any) -> tuple | None:
    """A torch tensor by its bytes (torch pickles a tensor's storage under its memory address); None for anything
    else, or a tensor whose bytes cannot be read (sparse, on the meta device)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    try:
        flat = obj.detach().cpu().contiguous().reshape(-1)
        data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    except Exception:                         # noqa: BLE001 - pickled as it is
        return None
    return ("tensor", _name(type(obj)), str(obj.dtype), tuple(obj.shape), obj.device.type, bool(obj.requires_grad),
            hashlib.sha256(data).digest())


def _opaque(obj: Any) -> bytes:
    return _Hasher(frozenset()).digest(("opaque", _name(type(obj))))


def _fallback(obj: Any, active: frozenset) -> bytes:
    """An object pickle cannot take: hashed by its attributes, else by its type."""
    fields = getattr(obj, "__dict__", None)
    if isinstance(fields, dict):
        try:
            return _Hasher(active).digest(("fields", _name(type(obj)), sorted(fields.items())))
        except Exception:                     # noqa: BLE001 - not even its attributes
            pass
    return _opaque(obj)


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _code_parts(code: types.CodeType) -> tuple:
    """What a code object does, without where it was written (file, lines) or where it lives in memory."""
    return (code.co_name, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            code.co_code, getattr(code, "co_exceptiontable", b""), code.co_consts, code.co_names, code.co_varnames,
            code.co_freevars, code.co_cellvars)


def _user_module(value: Any, read: set[str], seen: set[int]) -> Any:
    """``value``, or where it is a module of the user's own (a local module, not installed) the attributes of it
    that the code may read (``cfg.SCALE``, ``features.transform``: their names are among ``read``), by content;
    its own modules the same way, each once."""
    if not isinstance(value, types.ModuleType) or _is_library(value.__name__) or id(value) in seen:
        return value
    seen.add(id(value))
    attrs = [(a, _user_module(getattr(value, a), read, seen)) for a in sorted(read)
             if not (a.startswith("__") and a.endswith("__")) and hasattr(value, a)]
    return ("user module", value.__name__, attrs)


def _global_names(code: types.CodeType) -> set[str]:
    """The names a function's code (and the code nested in it) may read from its globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


@functools.lru_cache(maxsize=None)
def _library_roots() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k) for k in ("purelib", "platlib", "stdlib", "platstdlib")}
    try:
        paths |= set(site.getsitepackages()) | {site.getusersitepackages()}
    except AttributeError:                    # pragma: no cover - a virtualenv without these
        pass
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


_INSTALLED: dict[str, bool] = {}


def _is_library(module: str | None) -> bool:
    """Whether ``module`` is installed (standard library, site-packages), not the user's own code (a script, a
    notebook, a local module)."""
    if not module or module == "__main__":
        return False
    if module not in _INSTALLED:
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names or top in sys.builtin_module_names:
            return _INSTALLED.setdefault(module, True)
        mod = sys.modules.get(module) or sys.modules.get(top)
        if mod is None:                       # not imported (yet): ask again next time
            return False
        path = getattr(mod, "__file__", None)
        _INSTALLED[module] = path is not None and os.path.realpath(path).startswith(_library_roots())
    return _INSTALLED[module]


def _version(module: str) -> str:
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return sys.version.split()[0]
    return str(getattr(sys.modules.get(top), "__version__", ""))
