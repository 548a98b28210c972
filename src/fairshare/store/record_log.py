"""RecordLog: an append-only file of fixed-width ``(key, values)`` records, each with a checksum, that knows whose it is.

Layout: a 48-byte header written twice (magic, key width, values per record, a tag for the owner, the first 16
bytes of the SHA-256 of the owner's name, a CRC-32 of the header), then records of ``key width + 8 * values + 4``
bytes: the key, the values (little-endian float64) and a CRC-32 of both seeded with the owner, so that a record
copied from another file never reads as this file's.

Opening keeps every intact record and redoes (with a warning naming the file) what is not: a file with no
fairshare header, a header damaged in both copies, or one written for another owner (another row, game or run)
is removed and its values computed again; a header damaged in one copy is restored from the other; damaged
records are dropped; a record torn by a kill mid-write is cut off. What is dropped or cut is dropped from the
file too (it is rewritten whole, then renamed over the old one), so the next run does not meet it again.

Processes sharing a log (two runs on one cache folder) take its lock file (``.<name>.lock`` beside it; POSIX
``flock``) to read and repair it and to append, so that none reads another's record half written, and none repairs
a log from a stale read; an append handle finding the log renamed over by another's repair opens the new file by
its path. Where ``fcntl`` is missing (Windows) there is no lock: only the handle's check on the file is kept.
"""

from __future__ import annotations

import os
import uuid
import warnings
import zlib
from contextlib import contextmanager
from hashlib import sha256
from pathlib import Path
from typing import Any, Iterator

import numpy as np

try:
    import fcntl
except ImportError:                   # pragma: no cover - not POSIX (Windows): logs are not locked
    fcntl = None

__all__ = ["RecordLog", "unique_temp", "owner_id", "HEADER_BYTES"]

_MAGIC = b"fslog\x00\x02\x00"
_OLD_MAGIC = b"fslog\x00\x01\x00"
_COPY = 48                    # one header copy: magic 8, 4 x u4 (key width, values, tag, 0), owner 16, crc 4, 0 4
_HEAD = 2 * _COPY
#: bytes before a log's first record
HEADER_BYTES = _HEAD


def owner_id(owner: str) -> bytes:
    """The 16 bytes that name an owner in a log's header.

    Examples
    --------
    >>> len(owner_id("row 3")), owner_id("row 3") == owner_id("row 4")
    (16, False)
    """
    return sha256(owner.encode()).digest()[:16]


def unique_temp(path: Path) -> Path:
    """A name next to ``path`` that no other process or thread writes to (for a write-then-rename).

    Examples
    --------
    >>> unique_temp(Path("a/b.log")) != unique_temp(Path("a/b.log"))
    True
    """
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")


def _crcs(body: np.ndarray, seed: int) -> np.ndarray:
    return np.fromiter((zlib.crc32(r.tobytes(), seed) for r in body), dtype="<u4", count=body.shape[0])


class RecordLog:
    """An append-only log of ``(key, values)`` records of fixed width, each with a CRC-32, owned by ``owner``.

    ``key_width``, when given, is the key width the owner expects (a log with another is another's). ``append``
    writes and flushes at once: a process killed at any moment loses at most the records being written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "v.log"
    >>> log = RecordLog(p, "me"); log.append(np.array([[1, 2]], dtype=np.uint8), np.array([[0.5]])); log.close()
    >>> RecordLog(p, "me").values.tolist()
    [[0.5]]
    """

    def __init__(self, path: Path, owner: str = "", key_width: int | None = None) -> None:
        self.path = Path(path)
        self.owner = owner_id(owner)
        self._seed = zlib.crc32(self.owner)
        self._expected_width = key_width
        self.damaged = 0
        self.keys = np.zeros((0, 0), dtype=np.uint8)
        self.values = np.zeros((0, 0))
        self.key_width: int | None = None
        self.n_values: int | None = None
        self.tag = 0                      # a number for the owner (CachedGame: 1 when the game is scalar)
        self._fh: Any = None
        if self.path.exists():
            with self._locked():                           # no other process half way through an append or a repair
                if self.path.exists():
                    self._read()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """This log's lock file held, exclusively (POSIX ``flock``; released when its descriptor closes, also by a
        process killed); nothing is held without ``fcntl``, in a folder this process cannot write (no other
        process of its own to keep out) or on a file system without locks."""
        try:
            fd = None if fcntl is None else os.open(self.path.with_name(f".{self.path.name}.lock"),
                                                    os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            fd = None
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError:                           # pragma: no cover - a file system without locks
                    pass
            yield
        finally:
            if fd is not None:
                os.close(fd)

    # --------------------------------------------------------------------------------------- reading
    def _header(self) -> bytes:
        fields = np.array([self.key_width, self.n_values, self.tag, 0], dtype="<u4").tobytes()
        body = _MAGIC + fields + self.owner
        copy = body + np.array([zlib.crc32(body), 0], dtype="<u4").tobytes()
        return copy + copy

    @staticmethod
    def _parse(data: bytes) -> tuple[tuple[int, int, int, bytes] | None, bool]:
        """The header's fields (from the first intact copy, None if neither is) and whether both copies are."""
        good = []
        for start in (0, _COPY):
            copy = data[start:start + _COPY]
            if len(copy) == _COPY and copy[:8] == _MAGIC and \
                    int(np.frombuffer(copy, "<u4", 1, 40)[0]) == zlib.crc32(copy[:40]):
                kw, k, tag, _ = (int(x) for x in np.frombuffer(copy, "<u4", 4, 8))
                good.append((kw, k, tag, bytes(copy[24:40])))
        return (good[0] if good else None), len(good) == 2

    def _drop(self, why: str) -> None:
        warnings.warn(f"cache file {self.path} {why}; its values are computed again", RuntimeWarning, stacklevel=4)
        self.damaged += 1
        self.path.unlink(missing_ok=True)

    def _read(self) -> None:
        data = self.path.read_bytes()
        head, both = self._parse(data)
        if head is None:
            self._drop("was written by an older fairshare" if data[:8] == _OLD_MAGIC else
                       "is damaged (its header is not fairshare's, or is damaged)" if data else "is empty")
            return
        kw, k, tag, owner = head
        if owner != self.owner or (self._expected_width is not None and kw != self._expected_width) or k == 0:
            self._drop("belongs to another row, game or run")
            return
        self.key_width, self.n_values, self.tag = kw, k, tag
        width = kw + 8 * k + 4
        whole = (len(data) - _HEAD) // width
        rows = np.frombuffer(data, dtype=np.uint8, count=whole * width, offset=_HEAD).reshape(whole, width)
        crc = rows[:, kw + 8 * k:].copy().view("<u4").ravel()
        ok = _crcs(rows[:, :kw + 8 * k], self._seed) == crc
        if not both:
            warnings.warn(f"cache file {self.path}: one copy of its header was damaged and is restored from the "
                          "other", RuntimeWarning, stacklevel=3)
        if not ok.all():
            self.damaged += int((~ok).sum())
            warnings.warn(f"cache file {self.path}: {int((~ok).sum())} damaged record(s) skipped; their values are "
                          "computed again", RuntimeWarning, stacklevel=3)
        rows = rows[ok]
        if not both or not ok.all() or _HEAD + whole * width < len(data):    # rewritten without what was bad
            self._write_whole(self._header() + rows.tobytes())
        self.keys = rows[:, :kw].copy()
        self.values = rows[:, kw:kw + 8 * k].copy().view("<f8").reshape(-1, k)

    def _write_whole(self, content: bytes) -> None:
        tmp = unique_temp(self.path)
        try:
            tmp.write_bytes(content)
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    # --------------------------------------------------------------------------------------- writing
    def _create(self) -> None:
        """Create the file with its header, atomically; a file another process created meanwhile is kept if it is
        this owner's with records of this shape."""
        tmp = unique_temp(self.path)
        try:
            tmp.write_bytes(self._header())
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                with open(self.path, "rb") as fh:
                    head, _ = self._parse(fh.read(_HEAD))
                if head is None or head[:2] != (self.key_width, self.n_values) or head[3] != self.owner:
                    os.replace(tmp, self.path)
            except OSError:                               # a file system without hard links
                os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def append(self, keys: np.ndarray, values: np.ndarray, tag: int = 0) -> None:
        """Write records (``keys``: (r, w) uint8, ``values``: (r, k) floats) and flush; ``tag`` goes into a new
        file's header."""
        keys = np.ascontiguousarray(keys, dtype=np.uint8)
        values = np.ascontiguousarray(np.asarray(values, dtype="<f8").reshape(keys.shape[0], -1))
        if self.key_width is None:
            self.key_width, self.n_values, self.tag = keys.shape[1], values.shape[1], int(tag)
        if keys.shape[1] != self.key_width or values.shape[1] != self.n_values:
            raise ValueError(f"cache file {self.path} holds records of another shape")
        body = np.hstack([keys, values.view(np.uint8).reshape(keys.shape[0], -1)])
        crc = _crcs(body, self._seed)
        with self._locked():
            if self._fh is not None and self._moved():     # another process's repair renamed a new file over it
                self.close()
            if self._fh is None:
                self._create()                            # (a file of this owner and shape is kept)
                self._fh = open(self.path, "ab")
            self._fh.write(np.hstack([body, crc.view(np.uint8).reshape(-1, 4)]).tobytes())
            self._fh.flush()

    def _moved(self) -> bool:
        """Whether the file the append handle writes is no longer the one at the log's path."""
        try:
            here, held = os.stat(self.path), os.fstat(self._fh.fileno())
        except FileNotFoundError:
            return True
        return (here.st_ino, here.st_dev) != (held.st_ino, held.st_dev)

    def close(self) -> None:
        if getattr(self, "_fh", None) is not None:         # (an object whose opening failed has none)
            self._fh.close()
            self._fh = None

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_fh"] = None                               # a copy (a game sent to a worker) opens its own
        return state
