"""Persistence for long runs: finished rows and every evaluated coalition, so an interrupted run resumes
where it stopped without calling the model again.

Values are appended to a :class:`~fairshare.store.record_log.RecordLog` as each model call returns (one fixed-width
record per coalition, with a checksum; a game that calls its model in batches hands every batch to the cache
through its ``on_batch`` hook), flushed after every write: a run killed at any moment loses at most the model
call in flight and the record being written (a torn record is cut off, a damaged one detected; their coalitions
are evaluated again, never read as values). A cache folder carries the fingerprint of its run (data, model by content, settings; see
:mod:`fairshare.store.keys`) in ``manifest.json``; another run pointed at it is refused, and so is a folder
written by an older fairshare (cache format 1). Every file records whose it is (run, row, the row's data): a
file moved, swapped or copied from elsewhere is computed again with a warning naming it, never read.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .keys import content_key, estimator_key, fingerprint, model_key
from .record_log import RecordLog, unique_temp

__all__ = ["RunCache", "CacheFolder", "RecordLog", "fingerprint", "model_key", "content_key",
           "estimator_key", "open_cache_folder", "writable_folder"]

#: the layout of cache folders; a folder of another format is refused (its keys and files mean other things)
FORMAT = 3


def cache_folder(folder: Any) -> Path | None:
    """The ``cache`` argument of a door: None, or a writable folder (created if needed).

    Examples
    --------
    >>> cache_folder(None) is None
    True
    """
    return None if folder is None else writable_folder(folder, "cache")


def writable_folder(folder: Any, argument: str = "cache") -> Path:
    """``folder`` as a Path, created if needed and checked to be writable (with a probe file of a name of its own,
    so that processes opening one folder at once do not meet); errors name ``argument``.

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
        handle, probe = tempfile.mkstemp(prefix=".write-test-", dir=path)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{argument} {str(folder)!r} cannot be created or written: "
                         f"{exc.strerror or exc}") from None
    return path


def open_cache_folder(folder: Any, key: str, argument: str = "cache") -> Path:
    """Create (or reopen) a cache folder for the run with fingerprint ``key``; errors name ``argument``.

    Raised before any model call: a folder that cannot be created or written, a manifest that is damaged,
    one that belongs to another run, or one written by an older fairshare. The manifest is created whole or not
    at all, so that processes opening one folder at once read either none or all of it.

    Examples
    --------
    >>> import tempfile
    >>> p = open_cache_folder(tempfile.mkdtemp(), "abc")
    >>> (p / "manifest.json").exists()
    True
    """
    path = writable_folder(folder, argument)
    manifest = path / "manifest.json"
    if not manifest.exists():
        tmp = unique_temp(manifest)
        try:
            tmp.write_text(json.dumps({"fingerprint": key, "format": FORMAT}))
            try:
                os.link(tmp, manifest)                    # only if no other process made it first
            except FileExistsError:
                pass
            except OSError:                               # a file system without hard links
                os.replace(tmp, manifest)
        finally:
            tmp.unlink(missing_ok=True)
    try:
        stored = json.loads(manifest.read_text())
        stored["fingerprint"]                             # noqa: B018 - the manifest must hold it
    except (ValueError, UnicodeDecodeError, TypeError, KeyError):
        raise ValueError(f"{argument} {str(folder)!r}: {manifest.name} is damaged (not the manifest fairshare "
                         "writes); delete the folder or use another one") from None
    if stored.get("format") != FORMAT:
        raise ValueError(f"{argument} {str(folder)!r} was written by an older fairshare (cache format "
                         f"{stored.get('format', 1)}, now {FORMAT}); delete the folder or use another one")
    if stored["fingerprint"] != key:
        raise ValueError(f"{argument} {str(folder)!r} holds a different run (other data, model, model settings "
                         "or options); use another folder or delete it")
    return path


@dataclass(frozen=True)
class CacheFolder(os.PathLike):
    """A folder of a run's cache and who owns what it holds (run, row, the row's data): the files in it are
    checked to be the owner's when read.

    Examples
    --------
    >>> f = CacheFolder(Path("cache/coalitions/00000003"), "run abc item 3"); os.fspath(f)
    'cache/coalitions/00000003'
    """

    path: Path
    owner: str

    def __fspath__(self) -> str:
        return str(self.path)


class RunCache:
    """A folder holding one run: ``manifest.json`` (the run's fingerprint), ``rows/`` (finished items: rows, texts,
    inputs) and ``coalitions/<item>/`` (values evaluated for unfinished items). Every file names its owner: the run, the row and (with ``item``, a function of the row's position
    giving its data) a hash of the row's data; a file of another owner is computed again with a warning.

    Examples
    --------
    >>> import tempfile
    >>> c = RunCache(tempfile.mkdtemp(), "k"); c.row(0) is None
    True
    """

    def __init__(self, path: str | Path, key: str, item: Callable[[int], Any] | None = None) -> None:
        self.path = open_cache_folder(path, key)
        self.key, self._item, self._owners = key, item, {}
        (self.path / "rows").mkdir(exist_ok=True)

    def owner(self, i: int) -> str:
        """Who owns row ``i``'s files: the run, the row and its data."""
        if i not in self._owners:
            data = "" if self._item is None else fingerprint(self._item(i))
            self._owners[i] = f"run {self.key} row {i} data {data}"
        return self._owners[i]

    def _owned(self, f: Path, i: int, what: str) -> dict | None:
        """The arrays of a finished row's file, or None (absent; damaged or another's: then with a warning and
        removed, so that the row is computed again)."""
        if not f.exists():
            return None
        try:
            with np.load(f, allow_pickle=False) as z:
                out = {k: z[k] for k in z.files}
            owner = str(out.pop("owner", ""))
        except Exception:                     # noqa: BLE001 - any damage: recompute the row
            warnings.warn(f"cache file {f} is damaged; {what} {i} is computed again", RuntimeWarning, stacklevel=3)
            f.unlink(missing_ok=True)
            return None
        if owner != self.owner(i):
            warnings.warn(f"cache file {f} belongs to another row or run; {what} {i} is computed again",
                          RuntimeWarning, stacklevel=3)
            f.unlink(missing_ok=True)
            return None
        return out

    def row(self, i: int) -> dict | None:
        """A finished item (its arrays, ``names`` and ``info``), or None (not finished, or its file is damaged or
        another's: then it is computed again)."""
        f = self.path / "rows" / f"{i:08d}.npz"
        out = self._owned(f, i, "row")
        if out is None:
            return None
        try:
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
        """Keep a finished item: every array of ``result`` (values, stderr, the ends, evaluations, and what else a
        runner gives, such as interaction matrices), its ``names`` and ``info``."""
        f = self.path / "rows" / f"{i:08d}.npz"
        tmp = unique_temp(f)
        arrays = {k: np.asarray(v) for k, v in result.items() if k not in ("names", "info", "stderr")}
        arrays["stderr"] = result["stderr"] if result["stderr"] is not None else np.zeros(0)
        meta = json.dumps({"names": list(result["names"]), "info": result["info"]}, default=str)
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays, meta=np.array(meta), owner=np.array(self.owner(i)))
            tmp.replace(f)
        finally:
            tmp.unlink(missing_ok=True)

    def coalition_folder(self, i: int) -> CacheFolder:
        return CacheFolder(self.path / "coalitions" / f"{i:08d}", self.owner(i))
