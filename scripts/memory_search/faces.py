"""The library as the long-running faces (MCP server, HTTP API) use it: one index kept open.

The embedding model and the database connections are loaded once per process and shared by
every call. Each call takes a read-only connection of its own from a small pool, so calls on
several threads run side by side; the local model is not thread-safe, so it embeds one text at
a time."""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager

from .config import Settings
from .filters import Filters


class Memories:
    """One memories directory's index, kept open: search, recent, status."""

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
        """Connect and load the model now, so the first call costs no more than the next ones."""
        self.search("warm-up", top=1)

    def search(self, query: str, top: int = 10, filters: Filters | None = None, mode: str | None = None,
               min_score: float | None = None, dedupe: bool = True, warn=lambda message: None) -> list:
        from .retrieval import SearchRequest, search

        request = SearchRequest(query=query, top=top, mode=mode, filters=filters or Filters(), min_score=min_score,
                                dedupe=dedupe, rerank=bool(self.settings.voyage_api_key))
        with self._connection() as conn:
            if self._embedders:
                return search(self.settings, request, warn, connection=conn, embedders=self._embedders)
            with self._first:
                return search(self.settings, request, warn, connection=conn, embedders=self._embedders)

    def recent(self, kind: str = "session", top: int = 10, project: str | None = None,
               days: int | None = None) -> list:
        from .recent import list_recent

        return list_recent(self.root, kind=kind, top=top, project=project, days=days)

    def status(self) -> dict:
        from .status import index_status

        return index_status(self.settings)

    @contextmanager
    def _connection(self):
        from .database import connect

        with self._slots:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = None
            if conn is None or conn.closed or conn.broken:
                conn = connect(self.settings, read_only=True)
            try:
                yield conn
            except BaseException:
                conn.close()  # its state is unknown: never hand it to the next call
                raise
            else:
                self._idle.put(conn)

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class _SerialEmbedders(dict):
    """The embedder cache retrieval.search fills, each embedder made to embed one text at a time."""

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
