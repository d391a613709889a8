"""An index run's progress, kept in the index's meta table while the run holds the index, so that whoever reads
the index (a server's page, stats.py, from this machine or another) sees it: files read and written first,
then chunks embedded, as index.py's progress bar draws them on a terminal."""

from __future__ import annotations

import json
import time
from typing import TypedDict

from psycopg import sql

from ..storage.schema import ManagedIndex

KEY = "progress"
EVERY = 0.5  # seconds between two writes: a run of many small files writes no more often than this


class _State(TypedDict):
    """What the meta table holds of a run, in this order."""

    phase: str  # files | embeddings
    files: dict[str, int]  # done, total, chunks
    embeddings: dict[str, int] | None  # done, total; None until the phase starts
    current: str | None  # the file being read
    started_at: str
    updated_at: str


class RunProgress:
    """The indexer's progress calls (those of progress.Progress), passed on to `terminal` (a Progress, or None)
    and written to the meta table of `index` (its connection in autocommit), at most every EVERY seconds."""

    def __init__(self, index: ManagedIndex, terminal=None):
        self.index, self.terminal = index, terminal
        self.state: _State = {"phase": "files", "files": {"done": 0, "total": 0, "chunks": 0}, "embeddings": None,
                              "current": None, "started_at": _now(), "updated_at": _now()}
        self._written = 0.0

    def start(self, total: int, label: str | None = None, unit: str = "files") -> None:
        if unit == "files":
            self.state["phase"], self.state["files"] = "files", {"done": 0, "total": total, "chunks": 0}
        else:
            self.state["phase"], self.state["embeddings"] = "embeddings", {"done": 0, "total": total}
            self.state["current"] = None
        self._write(force=True)
        if self.terminal:
            self.terminal.start(total, label, unit)

    def reading(self, relpath: str) -> None:
        """The file the run is at now."""
        first = self.state["current"] is None
        self.state["current"] = relpath
        self._write(force=first)  # a reader sees a file named from the first on

    def advance(self, files: int, chunks: int) -> None:
        if self.state["phase"] == "files":
            counts = self.state["files"]
            counts["done"] += files
            counts["chunks"] += chunks
        else:
            embeddings = self.state["embeddings"]
            assert embeddings is not None  # set by start() with the phase
            embeddings["done"] += files
        self._write()
        if self.terminal:
            self.terminal.advance(files, chunks)

    def note(self, message: str) -> None:
        if self.terminal:
            self.terminal.note(message)

    def finish(self) -> None:
        self._write(force=True)
        if self.terminal:
            self.terminal.finish()

    def clear(self) -> None:
        """The run is over: its progress leaves the meta table (a broken connection leaves it to the next run,
        and readers ignore it once no indexer holds the index)."""
        try:
            self.index.conn.execute(sql.SQL("DELETE FROM {} WHERE key = %s").format(self.index.tables.sql("meta")),
                                    (KEY,))
        except Exception:  # the run's own failure is what matters
            pass

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._written < EVERY:
            return
        self._written = now
        self.state["updated_at"] = _now()
        from ..storage.writer import write_meta

        write_meta(self.index, {KEY: json.dumps(self.state, ensure_ascii=False)})


def read(meta: dict) -> dict | None:
    """The progress recorded in an index's meta values, or None."""
    try:
        state = json.loads(meta[KEY])
    except (KeyError, TypeError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
