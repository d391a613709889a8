"""The library as the long-running faces (MCP server, HTTP API) use it: one index kept open.

memory_search.Memories holds one connection, so it serves one call at a time. Here a few of them
(each its own read-only connection) serve calls on several threads side by side, sharing one set of
embedders, so the model is loaded once per process; the local model is not thread-safe, so it embeds
one text at a time."""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager

from .api import Memories
from .config import Settings
from .filters import Filters


class SharedMemories:
    """One memories directory's index for concurrent callers: search, similar, recent, status."""

    def __init__(self, settings: Settings, connections: int = 4):
        self.settings = settings
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(max(1, connections))
        self._embedders = _SerialEmbedders()
        self._first = threading.Lock()  # until an embedder exists, calls run one at a time

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
        with self._handle() as memories:
            if self._embedders:
                return work(memories)
            with self._first:
                return work(memories)

    @contextmanager
    def _handle(self):
        with self._slots:
            try:
                memories = self._idle.get_nowait()
            except queue.Empty:
                memories = _Handle(self.settings, self._embedders)
            try:
                yield memories
            except BaseException:
                memories.close()  # its connection's state is unknown: reconnect on the next call
                raise
            finally:
                self._idle.put(memories)

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class _Handle(Memories):
    """A Memories whose embedders are the shared ones."""

    def __init__(self, settings: Settings, embedders: dict):
        super().__init__(settings)
        self._embedders = embedders


class _SerialEmbedders(dict):
    """The embedder cache Memories fills, each embedder made to embed one text at a time."""

    def __setitem__(self, key, embedder):
        super().__setitem__(key, self.get(key) or _Serial(embedder))


class _Serial:
    def __init__(self, embedder):
        self._embedder = embedder
        self._lock = threading.Lock()
        self.spec = embedder.spec

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return self._embedder.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            return self._embedder.embed_documents(texts)
