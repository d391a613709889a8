"""What long-running processes share between calls: one embedder per model and a bounded pool of
read-only database connections. The warm helper, the MCP server, the HTTP API and the LangBot plugin
each hold one; every call opens a Memories over it."""

from __future__ import annotations

import threading

from .config import Settings
from .embedding import Embedders
from .storage.database import ConnectionPool

CONNECTIONS = 4  # read-only connections open at once, and so calls reading the database at once


class Resources:
    _default: "Resources | None" = None
    _default_lock = threading.Lock()

    def __init__(self, connections: int = CONNECTIONS):
        self.embedders = Embedders(shared=True)
        self.connections = ConnectionPool(connections)

    @classmethod
    def default(cls) -> "Resources":
        """The process's shared resources, made on first use (for callers that hold none of their own)."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    def open(self, settings: Settings, warn=None):
        """A Memories over these resources (api.Memories); close it to give its connection back."""
        from .api import Memories

        return Memories(settings, warn=warn, resources=self)

    def close(self) -> None:
        self.connections.close()
