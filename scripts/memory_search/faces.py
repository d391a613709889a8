"""The library as the long-running faces (MCP server, HTTP API) use it: one index kept open.

memory_search.Memories holds one connection, so it serves one call at a time. Here each call gets a
Memories of its own over a few pooled read-only connections, so calls on several threads run side by
side, and all of them share one set of embedders, so the model is loaded once per process."""

from __future__ import annotations

import threading

from .api import Memories
from .config import Settings
from .database import ConnectionPool
from .embedding import Embedders
from .filters import Filters


class SharedMemories:
    """One memories directory's index for concurrent callers: search, similar, recent, status."""

    def __init__(self, settings: Settings, connections: int = 4):
        self.settings = settings
        self.embedders = Embedders(shared=True)
        self._pool = ConnectionPool(max(1, connections))
        self._slots = threading.BoundedSemaphore(max(1, connections))

    @property
    def root(self):
        return self.settings.memories_root

    def warm(self) -> None:
        """Connect and load the model now, so that the first call costs no more than the next ones."""
        self.search("warm-up", top=1)

    def search(self, query: str, *, top: int = 10, filters: Filters | None = None, mode: str | None = None,
               dedupe: bool = True, min_score: float | None = None) -> list:
        return self._call(lambda memories: memories.search(query, top=top, filters=filters, mode=mode,
                                                           dedupe=dedupe, min_score=min_score))

    def similar(self, path: str, *, top: int = 10, filters: Filters | None = None,
                min_score: float | None = None) -> list:
        return self._call(lambda memories: memories.similar(path, top=top, filters=filters, min_score=min_score))

    def recent(self, kind: str = "session", top: int = 10, project: str | None = None,
               days: int | None = None) -> list:
        return self._call(lambda memories: memories.recent(kind=kind, top=top, project=project, days=days))

    def status(self) -> dict:
        return self._call(lambda memories: memories.status())

    def _call(self, work):
        with self._slots, Memories(self.settings, embedders=self.embedders, connections=self._pool) as memories:
            return work(memories)

    def close(self) -> None:
        self._pool.close()
