"""Persistence for long runs: finished rows and every evaluated coalition, so an interrupted run resumes
where it stopped without calling the model again.

Values are appended to a :class:`RecordLog` as they come (one fixed-width record per coalition, with a
checksum), flushed after every write: a run killed at any moment loses at most the record being
written, and a torn or damaged record is detected and its coalition evaluated again, never read as a
value. A cache folder carries the fingerprint of its run (data, model, settings) in ``manifest.json``;
another run pointed at it is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .estimation.evaluation import CoalitionStore, coalition_keys
from .explanation import Explanation
from .game import Game, GameWrapper
from .tables import target_of

__all__ = ["RunCache", "CachedGame", "RecordLog", "fingerprint", "model_key", "open_cache_folder", "writable_folder"]

_MAGIC = b"fslog\x00\x01\x00"
_HEAD = 24                    # magic, key width, values per record, tag, reserved


def fingerprint(*arrays: Any, **config: Any) -> str:
    """A short hash of the data and settings of a run (a cache is only reused for the same run).

    Examples
    --------
    >>> fingerprint(np.arange(3), budget=10) == fingerprint(np.arange(3), budget=10)
    True
    """
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
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
        arr = np.ascontiguousarray(np.asarray(a))
        h.update(str(arr.shape).encode())
        h.update(arr.astype(str).tobytes() if arr.dtype == object else arr.tobytes())
    return h.hexdigest()[:16]


def model_key(model: Any) -> str:
    """What tells one model's cache from another's, without calling it: a fitted model (or the model behind a
    bound method such as ``model.predict_proba``) by the hash of its whole state (joblib.hash: parameters and
    fitted weights); a plain function by its module, name and code (a function whose behaviour depends on
    outside state is not told apart: give it its own folder).

    Examples
    --------
    >>> model_key(len) == model_key(len)
    True
    """
    import inspect

    target = target_of(model)
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


def cache_folder(folder: Any) -> Path | None:
    """The ``cache`` argument of a door: None, or a writable folder (created if needed).

    Examples
    --------
    >>> cache_folder(None) is None
    True
    """
    return None if folder is None else writable_folder(folder, "cache")


def writable_folder(folder: Any, argument: str = "cache") -> Path:
    """``folder`` as a Path, created if needed and checked to be writable; errors name ``argument``.

    Examples
    --------
    >>> writable_folder(3)
    Traceback (most recent call last):
    ...
    TypeError: cache must be a folder path (str or Path), got int
    """
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"{argument} must be a folder path (str or Path), got {type(folder).__name__}")
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"{argument} {str(folder)!r} cannot be created or written: "
                         f"{exc.strerror or exc}") from None
    return path


def open_cache_folder(folder: Any, key: str, argument: str = "cache") -> Path:
    """Create (or reopen) a cache folder for the run with fingerprint ``key``; errors name ``argument``.

    Raised before any model call: a folder that cannot be created or written, a manifest that is
    damaged, or one that belongs to another run.

    Examples
    --------
    >>> import tempfile
    >>> p = open_cache_folder(tempfile.mkdtemp(), "abc")
    >>> (p / "manifest.json").exists()
    True
    """
    path = writable_folder(folder, argument)
    manifest = path / "manifest.json"
    if manifest.exists():
        try:
            stored = json.loads(manifest.read_text()).get("fingerprint")
        except (ValueError, UnicodeDecodeError, AttributeError):
            raise ValueError(f"{argument} {str(folder)!r}: {manifest.name} is damaged (not the manifest fairshare "
                             "writes); delete the folder or use another one") from None
        if stored != key:
            raise ValueError(f"{argument} {str(folder)!r} holds a different run (other data, model, model settings "
                             "or options); use another folder or delete it")
    else:
        manifest.write_text(json.dumps({"fingerprint": key}))
    return path


class RecordLog:
    """An append-only file of ``(key, values)`` records of fixed width, each with a CRC-32.

    Opening reads every whole, intact record; a torn last record (a run killed mid-write) is cut off
    and a damaged one skipped (counted in :attr:`damaged`, with a warning naming the file), so its
    coalition is evaluated again. ``append`` writes and flushes at once.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "v.log"
    >>> log = RecordLog(p); log.append(np.array([[1, 2]], dtype=np.uint8), np.array([[0.5]])); log.close()
    >>> RecordLog(p).values.tolist()
    [[0.5]]
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.damaged = 0
        self.keys = np.zeros((0, 0), dtype=np.uint8)
        self.values = np.zeros((0, 0))
        self.key_width: int | None = None
        self.n_values: int | None = None
        self.tag = 0                      # a number for the owner (CachedGame: 1 when the game is scalar)
        self._fh: Any = None
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        data = self.path.read_bytes()
        if len(data) < _HEAD or data[:8] != _MAGIC:
            if data:
                warnings.warn(f"cache file {self.path} is damaged (no fairshare header); its values are computed "
                              "again", RuntimeWarning, stacklevel=3)
                self.damaged += 1
            self.path.unlink()
            return
        kw, k, self.tag, _ = (int(x) for x in np.frombuffer(data[8:_HEAD], dtype="<u4"))
        self.key_width, self.n_values = kw, k
        width = kw + 8 * k + 4
        whole = (len(data) - _HEAD) // width
        if _HEAD + whole * width < len(data):              # a torn last record: cut it off before appending
            os.truncate(self.path, _HEAD + whole * width)
        rows = np.frombuffer(data, dtype=np.uint8, count=whole * width, offset=_HEAD).reshape(whole, width)
        crc = rows[:, kw + 8 * k:].copy().view("<u4").ravel()
        ok = np.fromiter((zlib.crc32(r[:kw + 8 * k].tobytes()) for r in rows), dtype=np.uint32, count=whole) == crc
        if not ok.all():
            self.damaged += int((~ok).sum())
            warnings.warn(f"cache file {self.path}: {int((~ok).sum())} damaged record(s) skipped; their values are "
                          "computed again", RuntimeWarning, stacklevel=3)
        rows = rows[ok]
        self.keys = rows[:, :kw].copy()
        self.values = rows[:, kw:kw + 8 * k].copy().view("<f8").reshape(-1, k)

    def append(self, keys: np.ndarray, values: np.ndarray, tag: int = 0) -> None:
        """Write records (``keys``: (r, w) uint8, ``values``: (r, k) floats) and flush; ``tag`` goes into a new
        file's header."""
        keys = np.ascontiguousarray(keys, dtype=np.uint8)
        values = np.ascontiguousarray(np.asarray(values, dtype="<f8").reshape(keys.shape[0], -1))
        if self._fh is None:
            if self.key_width is None:
                self.key_width, self.n_values, self.tag = keys.shape[1], values.shape[1], int(tag)
                self.path.write_bytes(_MAGIC + np.array([self.key_width, self.n_values, self.tag, 0],
                                                        dtype="<u4").tobytes())
            self._fh = open(self.path, "ab")
        if keys.shape[1] != self.key_width or values.shape[1] != self.n_values:
            raise ValueError(f"cache file {self.path} holds records of another shape")
        body = np.hstack([keys, values.view(np.uint8).reshape(keys.shape[0], -1)])
        crc = np.fromiter((zlib.crc32(r.tobytes()) for r in body), dtype="<u4", count=body.shape[0])
        self._fh.write(np.hstack([body, crc.view(np.uint8).reshape(-1, 4)]).tobytes())
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __del__(self) -> None:
        self.close()


class CachedGame(GameWrapper):
    """Wraps a game; coalitions evaluated before (in this or an earlier run) are answered from disk.

    Every batch of new values is appended to ``values.log`` in ``folder`` at once, so nothing is lost
    when a run is killed or interrupted between two model calls.

    Examples
    --------
    >>> import tempfile, fairshare as fs
    >>> d = tempfile.mkdtemp(); g = fs.games.AdditiveGame([1.0, 2.0])
    >>> CachedGame(g, d)(np.array([[True, False]])).tolist()
    [1.0]
    >>> c = CachedGame(g, d); c(np.array([[True, False]])).tolist(), c.model_calls
    ([1.0], 0)
    """

    def __init__(self, game: Game, folder: Path) -> None:
        super().__init__(game.n_players, player_names=game.player_names)
        self.game, self.folder = game, Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.n_outputs = game.n_outputs
        self.log = RecordLog(self.folder / "values.log")
        self._store = CoalitionStore()
        if self.log.keys.shape[0]:
            self._store.add(self.log.keys.copy().view(f"S{self.log.key_width}").ravel(), self.log.values)
        self.model_calls = 0

    def null_players(self) -> np.ndarray | None:
        return self.game.null_players()

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        keys = coalition_keys(coalitions)
        pos = self._store.find(keys)
        found = pos >= 0
        missing = np.flatnonzero(~found)
        new = None
        if missing.size:
            new = np.asarray(self.game(coalitions[missing]), dtype=float)
            self.model_calls += 1
            raw = np.frombuffer(keys[missing].tobytes(), dtype=np.uint8).reshape(missing.size, -1)
            self.log.append(raw, new.reshape(missing.size, -1), tag=int(new.ndim == 1))
            self._store.add(keys[missing], new.reshape(missing.size, -1))
        if not found.any():
            return new
        old = self._store.values[pos[found]]
        if self.log.tag == 1:                                   # a scalar game: one value per coalition
            old = old[:, 0]
        full = np.empty((keys.size,) + old.shape[1:])
        full[found] = old
        if new is not None:
            full[missing] = new
        return full


class RunCache:
    """A folder holding one run: ``manifest.json`` (the run's fingerprint), ``rows/`` (finished rows) and
    ``coalitions/<row>/`` (values evaluated for unfinished rows).

    Examples
    --------
    >>> import tempfile
    >>> c = RunCache(tempfile.mkdtemp(), "k"); c.row(0) is None
    True
    """

    def __init__(self, path: str | Path, key: str) -> None:
        self.path = open_cache_folder(path, key)
        (self.path / "rows").mkdir(exist_ok=True)

    def row(self, i: int) -> dict | None:
        """A finished row, or None (not finished, or its file is damaged: then it is computed again)."""
        f = self.path / "rows" / f"{i:08d}.npz"
        if not f.exists():
            return None
        try:
            with np.load(f, allow_pickle=False) as z:
                out = {k: z[k] for k in z.files}
            meta = json.loads(str(out.pop("meta")))
            out["names"], out["info"] = meta["names"], meta["info"]
            out["stderr"] = None if out["stderr"].size == 0 else out["stderr"]
            out["values"], out["empty"], out["grand"], out["n_evaluations"]     # noqa: B018 - every field must be there
        except Exception:                     # noqa: BLE001 - any damage: recompute the row
            warnings.warn(f"cache file {f} is damaged; row {i} is computed again", RuntimeWarning, stacklevel=2)
            f.unlink(missing_ok=True)
            return None
        return out

    def save_row(self, i: int, result: dict) -> None:
        f = self.path / "rows" / f"{i:08d}.npz"
        tmp = f.with_suffix(".tmp")
        stderr = result["stderr"] if result["stderr"] is not None else np.zeros(0)
        meta = json.dumps({"names": list(result["names"]), "info": result["info"]}, default=str)
        with open(tmp, "wb") as fh:
            np.savez(fh, values=result["values"], stderr=stderr, empty=result["empty"], grand=result["grand"],
                     n_evaluations=result["n_evaluations"], meta=np.array(meta))
        tmp.replace(f)

    def explanation(self, i: int) -> Explanation | None:
        """A finished item kept whole (an Explanation: a text's), or None (not finished, or damaged)."""
        f = self.path / "explanations" / f"{i:08d}.npz"
        if not f.exists():
            return None
        try:
            return Explanation.load(f)
        except Exception:                     # noqa: BLE001 - any damage: recompute it
            warnings.warn(f"cache file {f} is damaged; item {i} is computed again", RuntimeWarning, stacklevel=2)
            f.unlink(missing_ok=True)
            return None

    def save_explanation(self, i: int, explanation: Explanation) -> None:
        folder = self.path / "explanations"
        folder.mkdir(exist_ok=True)
        tmp = folder / f"{i:08d}.tmp"
        explanation.save(tmp)
        tmp.replace(folder / f"{i:08d}.npz")

    def coalition_folder(self, i: int) -> Path:
        return self.path / "coalitions" / f"{i:08d}"
