"""One search, end to end: the connection it reads, the index found once, the model, the layout, the Searcher.

api.Memories and knowledge_base.KnowledgeBase both search through an Engine. Per search it embeds the query
with a local model early (on another thread, while the database is reached), reads the index's description
once, picks the layout and the embedder it calls for, runs the request within the dates its time words name
(retrieval.search_within), and runs it all again once on a new connection when the one it read broke.

Imports of the database driver and the models wait for their first use: a cold start overlaps the model's
loading with the driver's import."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import Settings
from ..errors import MemorySearchError

if TYPE_CHECKING:
    from ..embedding import Embedder, Embedders
    from ..storage.database import ConnectionPool
    from ..storage.schema import IndexInfo
    from .layouts import Layout
    from .retrieval import Background, Hit, Hits, SearchRequest

T = TypeVar("T")


class Reader:
    """The read-only connection a library object reads through: opened (or taken from a shared pool) on first
    use and again when it broke, closed (or given back to the pool) by close()."""

    def __init__(self, settings: Settings, pool: ConnectionPool | None = None,
                 before: Callable[[], None] = lambda: None):
        """before: called ahead of every use of the connection (Memories checks that its directory is there)."""
        self.settings, self.pool, self.before = settings, pool, before
        self._connection: Any = None

    @property
    def connection(self) -> Any:
        from ..storage.database import connect

        self.before()
        if self._connection is not None and (self._connection.closed or self._connection.broken):
            self.close()
        if self._connection is None:
            if self.pool is not None:
                self._connection = self.pool.take(self.settings)
            else:
                self._connection = connect(self.settings, read_only=True)
        return self._connection

    @property
    def held(self) -> Any:
        """The connection open now, or None: nothing is opened before a read needs it."""
        return self._connection

    def close(self) -> None:
        """Close the connection, or give it back to the shared pool."""
        if self._connection is not None:
            if self.pool is not None:
                self.pool.give(self._connection)
            else:
                self._connection.close()
            self._connection = None

    def reconnecting(self, read: Callable[[], T]) -> T:
        """read(), again on a new connection when the one it used broke (the database restarted since it was
        opened, or during the call): a read changes nothing, so it is safe to repeat once."""
        try:
            return read()
        except Exception as error:
            if not self._lost(error):
                raise
            if self.pool is not None:
                self.pool.lost(self._connection)
            else:
                self._connection.close()
            self._connection = None
        return read()

    def _lost(self, error: Exception) -> bool:
        """Whether the error is the connection's end: the server shut down, crashed or went away."""
        from ..storage.database import connection_lost

        return self._connection is not None and connection_lost(self._connection, error)


class Engine:
    """Runs search requests against one index through a Reader. By default the index is the settings' memories
    directory's (or MEMORIES_TABLE), read with the layout and the model it calls for; a knowledge base gives
    its own `find`, `layout` and `model`."""

    def __init__(self, settings: Settings, reader: Reader, embedders: Embedders,
                 warn: Callable[[str], None] = lambda message: None,
                 find: Callable[[Any], IndexInfo] | None = None,
                 layout: Callable[[IndexInfo], Layout] | None = None,
                 model: Callable[[IndexInfo], Embedder] | None = None, ahead: bool = True):
        """find(connection): the index's description, or IndexMissing; layout(info): how to read it; model(info):
        the embedder of its vectors. ahead: embed the query ahead of the database, early with the settings' local
        model and before taking a pooled connection (the shared embedders keep its vector for the search); off
        where another model embeds (a host's, which keeps nothing)."""
        self.settings, self.reader, self.embedders, self.warn = settings, reader, embedders, warn
        self._find, self._layout, self._model, self.ahead = find, layout, model, ahead
        self.layout: Layout | None = None  # the last search's: what the index held then

    @property
    def root(self) -> Path:
        return self.settings.memories_root

    # --- searching -----------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> Hits:
        """The request's hits (retrieval.Hits), best first, within the dates its time words name."""
        from dataclasses import replace

        from .retrieval import search_within, windowed

        if request.rerank is None:
            request = replace(request, rerank=bool(self.settings.voyage_api_key))
        timed = windowed(request)  # a window that cannot be is refused before anything is spent
        first = timed[0] if timed else request
        early = self._embed_early(first)
        pooled = self.ahead and self.reader.pool is not None
        found = self._embed_first(first, early) if pooled else None  # the index, when embedding needed it

        def search() -> Hits:
            nonlocal found
            info, found = found or self.find(), None  # read again after a lost connection
            layout = self.layout = self._layout_of(info)
            embedder = self._embedder_of(info) if (request.mode or "") != "keyword" else None
            reranker = self._reranker() if request.rerank else None

            def run(asked: SearchRequest) -> list[Hit]:
                vector = early[1] if early is not None and asked is first and early[0] is embedder else None
                if pooled and asked is not first and embedder is not None:
                    self._embed_ahead(asked, embedder, local=early is not None)
                return self._searcher(layout, embedder, reranker).search(asked, vector)

            return search_within(request, timed, run)

        return self.reader.reconnecting(search)

    def similar(self, filename: str, request: SearchRequest) -> list[Hit]:
        """The records nearest in meaning to the indexed file `filename` (retrieval.Searcher.similar)."""

        def similar() -> list[Hit]:
            info = self.find()
            return self._searcher(self._layout_of(info), self._embedder_of(info), None).similar(filename, request)

        return self.reader.reconnecting(similar)

    def find(self) -> IndexInfo:
        """The description of the index (storage.schema.IndexInfo), read from the database's catalog."""
        from ..storage.schema import find_index

        connection = self.reader.connection
        if self._find is not None:
            return self._find(connection)
        return find_index(connection, self.root, self.settings.table)

    # --- its parts -----------------------------------------------------------------------------------

    def _layout_of(self, info: IndexInfo) -> Layout:
        from .layouts import layout_for

        return self._layout(info) if self._layout is not None else layout_for(info, self.root, self.settings.remote)

    def _embedder_of(self, info: IndexInfo) -> Embedder:
        from ..embedding import choose_spec

        if self._model is not None:
            return self._model(info)
        return self.embedders.get(choose_spec(self.settings, info.spec, info.dimension), self.settings)

    def _reranker(self) -> Callable[[str, list[str]], list[float]] | None:
        from ..embedding import reranker

        return reranker(self.settings)

    def _searcher(self, layout: Layout, embedder: Embedder | None, reranker) -> Any:
        from .retrieval import Searcher

        # A shared pool's connections are few: one goes back while the search waits for the reranker's API.
        return Searcher(self.reader.connection, layout, embedder, reranker, self.warn,
                        self.reader.close if self.reader.pool is not None else lambda: None)

    # --- the query's vector, ahead of the database ----------------------------------------------------

    def _embed_early(self, request: SearchRequest) -> tuple[Embedder, Background] | None:
        """(embedder, Background) embedding the query with a local model while the database is reached, or
        None. Loading the model and embedding run in C without the interpreter's lock, so a cold start
        overlaps them with the database driver's import; the index decides afterwards whether the vector is used."""
        from ..embedding import choose_spec, provider
        from .retrieval import Background, leading_part

        if not self.ahead or request.mode == "keyword":
            return None
        try:
            spec = choose_spec(self.settings)
        except MemorySearchError:
            return None  # reported by the search itself
        if not provider(spec.provider).runs_locally:
            return None  # a remote model is asked only once the index is known to want it
        embedder = self.embedders.get(spec, self.settings)
        return embedder, Background(embedder.embed_query, leading_part(request.query))

    def _embed_first(self, request: SearchRequest, early: tuple[Embedder, Background] | None) -> IndexInfo | None:
        """Embed the query before taking one of a shared pool's few connections, so that none is held while a
        model or an API works: a semantic search has nothing to ask the database meanwhile, and a hybrid one on
        a remote model little (its keyword leg takes milliseconds, the API's answer a tenth of a second or
        more). The shared embedder keeps the vector for the search itself. The index's description, when it
        was read to know the model."""
        from .retrieval import leading_part

        if request.mode == "keyword" or (request.mode != "semantic" and early is not None):
            return None  # nothing to embed; or a hybrid search runs its keyword leg while the local model embeds
        if early is not None:
            early[1].result()
            return None
        info = self.reader.reconnecting(self.find)
        embedder = self._embedder_of(info)
        self.reader.close()  # back to the pool while the API answers
        embedder.embed_query(leading_part(request.query))
        return info

    def _embed_ahead(self, request: SearchRequest, embedder: Embedder, local: bool) -> None:
        """_embed_first for a request after the first of a search (the days around a window, any date), the
        index known: the connection goes back to the pool while the model or the API embeds its query, unless
        a hybrid search's local model embeds it beside the keyword leg."""
        from .retrieval import leading_part

        if request.mode == "keyword" or (request.mode != "semantic" and local):
            return
        self.reader.close()
        embedder.embed_query(leading_part(request.query))
