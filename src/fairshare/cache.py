"""Persistence for long runs: finished rows and every evaluated coalition, so an interrupted
``explain`` resumes where it stopped without evaluating the model again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from .evaluation import coalition_keys
from .game import Game

__all__ = ["RunCache", "CachedGame", "fingerprint"]


def fingerprint(*arrays: Any, **config: Any) -> str:
    """A short hash of the data and settings of a run (a cache is only reused for the same run)."""
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for a in arrays:
        if a is None:
            h.update(b"none")
            continue
        arr = np.ascontiguousarray(np.asarray(a))
        h.update(str(arr.shape).encode())
        h.update(arr.astype(str).tobytes() if arr.dtype == object else arr.tobytes())
    return h.hexdigest()[:16]


class CachedGame(Game):
    """Wraps a game; coalitions evaluated before (in this or an earlier run) are answered from disk.

    Each batch of new values is written to its own file at once, so nothing is lost when a run is
    killed between two model calls.
    """

    def __init__(self, game: Game, folder: Path) -> None:
        super().__init__(game.n_players, player_names=game.player_names)
        self.game, self.folder = game, Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.n_outputs = game.n_outputs
        keys, values = [], []
        for chunk in sorted(self.folder.glob("chunk_*.npz")):
            with np.load(chunk, allow_pickle=False) as z:
                keys.append(z["keys"])
                values.append(z["values"])
        self._chunks = len(keys)
        if keys:
            k = np.concatenate(keys)
            order = np.argsort(k, kind="stable")
            self._keys, self._values = k[order], np.concatenate(values)[order]
        else:
            self._keys, self._values = None, None
        self.model_calls = 0

    def null_players(self) -> np.ndarray | None:
        return self.game.null_players()

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        keys = coalition_keys(coalitions)
        found = np.zeros(keys.size, dtype=bool)
        pos = np.zeros(keys.size, dtype=np.intp)
        if self._keys is not None:
            pos = np.searchsorted(self._keys, keys)
            inside = pos < self._keys.size
            found[inside] = self._keys[pos[inside]] == keys[inside]
        out = None
        if found.any():
            out = self._values[pos[found]]
        missing = np.flatnonzero(~found)
        if missing.size:
            new = self.game(coalitions[missing])
            self.model_calls += 1
            path = self.folder / f"chunk_{self._chunks:06d}.npz"
            tmp = path.with_suffix(".tmp")
            with open(tmp, "wb") as fh:
                np.savez(fh, keys=keys[missing], values=new)
            tmp.replace(path)
            self._chunks += 1
            full = np.empty((keys.size,) + new.shape[1:])
            full[missing] = new
            if out is not None:
                full[found] = out
            return full
        return out


class RunCache:
    """A folder holding one run: ``manifest.json`` (the run's fingerprint), ``rows/`` (finished rows) and
    ``coalitions/<row>/`` (values evaluated for unfinished rows)."""

    def __init__(self, path: str | Path, key: str) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        manifest = self.path / "manifest.json"
        if manifest.exists():
            stored = json.loads(manifest.read_text()).get("fingerprint")
            if stored != key:
                raise ValueError(f"cache {self.path} holds a different run (other data, model settings or options); "
                                 "use another cache path or delete it")
        else:
            manifest.write_text(json.dumps({"fingerprint": key}))
        (self.path / "rows").mkdir(exist_ok=True)

    def row(self, i: int) -> dict | None:
        f = self.path / "rows" / f"{i:08d}.npz"
        if not f.exists():
            return None
        with np.load(f, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
        out["method"] = str(out["method"])
        out["stderr"] = None if out["stderr"].size == 0 else out["stderr"]
        return out

    def save_row(self, i: int, result: dict) -> None:
        f = self.path / "rows" / f"{i:08d}.npz"
        tmp = f.with_suffix(".tmp")
        stderr = result["stderr"] if result["stderr"] is not None else np.zeros(0)
        with open(tmp, "wb") as fh:
            np.savez(fh, values=result["values"], stderr=stderr, base=result["base"],
                     n_evaluations=result["n_evaluations"], method=np.array(result["method"]))
        tmp.replace(f)

    def coalition_folder(self, i: int) -> Path:
        return self.path / "coalitions" / f"{i:08d}"
