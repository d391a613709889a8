"""The library's face: one object per memories directory that every script, server and plugin uses.

    import memory_search
    with memory_search.open(memories_dir="~/memories") as memories:
        for hit in memories.search("セッション要約の保存先", top=5):
            print(hit.score, hit.path, hit.snippet)

It owns the database connection (read-only, opened on first use), the embedders (loaded on first use,
kept for later calls) and the detection of the index layout (on each call, so an index built meanwhile
is seen). Long-running processes open each call's Memories over shared Resources (resources.py).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings
from .directory.files import relative_path, require_directory
from .errors import MemoryNotFound, PathOutside, UsageError
from .search.filters import Filters

if TYPE_CHECKING:
    from .search.layouts import Layout
    from .search.retrieval import Hits, SearchRequest


def open(settings: Settings | None = None, /, warn=None, resources=None, **overrides) -> "Memories":  # noqa: A001
    """Memories for the settings (default: the environment), with keyword overrides such as memories_dir.

    resources: a resources.Resources shared with other calls (servers); by default this object's own."""
    settings = (settings or Settings.from_env()).with_overrides(**overrides)
    return Memories(settings, warn=warn, resources=resources)


def semantic_cutoff() -> float:
    """The relevance floor of the seed's semantic search (relevance.semantic_cutoff)."""
    from .search.relevance import semantic_cutoff

    return semantic_cutoff()


# --- the database and its indexes, for the commands that look after them -------------------------

def embedded_server(settings: Settings):
    """The embedded PostgreSQL server of the settings' data folder (storage.database.EmbeddedServer)."""
    from .storage.database import EmbeddedServer

    return EmbeddedServer(settings.data_dir)


def describe_database(url: str) -> str:
    """A database URL to show: its host, port and name, never its password."""
    from .storage.database import describe

    return describe(url)


def database_refusal(error: BaseException):
    """The MemorySearchError a database's error means to a user (a role that may not read an index, say), or
    None when it means nothing particular."""
    from .storage.database import refusal

    return refusal(error)


def indexes(settings: Settings) -> list:
    """Every memories index the database holds (storage.catalog.IndexEntry), from any machine."""
    from .storage.catalog import indexes

    return indexes(settings)


def grant_read(settings: Settings, role: str, password: str | None, writers=()) -> list[str]:
    """Let `role` read the memories indexes and nothing else; the statements run."""
    from .storage.catalog import grant_read

    return grant_read(settings, role, password, writers)


def served(settings: Settings, prefix: str) -> Settings:
    """The settings that read the index `prefix` another machine builds in the same database."""
    from .storage.catalog import served

    return served(settings, prefix)


class Memories:
    """Search, read, list, export, verify and index one memories directory."""

    def __init__(self, settings: Settings, warn: Callable[[str], None] | None = None, resources: Any = None):
        """resources: a resources.Resources shared with other calls (servers); None: this object's own."""
        from .embedding import Embedders
        from .search.engine import Engine, Reader

        self.settings = settings
        self.warn: Callable[[str], None] = warn or (lambda message: None)
        self.resources = resources
        self.embedders = resources.embedders if resources is not None else Embedders()
        self._reader = Reader(settings, resources.connections if resources is not None else None,
                              self._require_directory)
        self._engine = Engine(settings, self._reader, self.embedders, self.warn)

    @property
    def root(self) -> Path:
        return self.settings.memories_root

    # --- searching -----------------------------------------------------------------------------

    def search(self, query: str, *, top: int = 10, filters: Filters | None = None, mode: str | None = None,
               dedupe: bool = True, min_score: float | None = None, rerank: bool | None = None, time: bool = True,
               today: dt.date | None = None, query_name: str = "the query") -> Hits:
        """The best chunk of each matching record, best first (retrieval.Hits, a list of retrieval.Hit).

        time: read time words in the query as a date window (see run); today: the date they count from.
        query_name: how the face names the query, in the UsageError refusing one it cannot search."""
        from .search.retrieval import SearchRequest

        return self.run(SearchRequest(query=query, top=top, mode=mode, filters=filters or Filters(), dedupe=dedupe,
                                      min_score=min_score, rerank=rerank, time=time, today=today,
                                      query_name=query_name))

    def run(self, request: SearchRequest) -> Hits:
        """Run a retrieval.SearchRequest: its hits (retrieval.Hits), best first.

        Time words in the query ("先週", "yesterday") restrict it to their dates, undated records left out;
        when nothing dated there matches, the hits are those of the query as it was, from any date, and
        `hits.window.inside` is False. With auto-indexing on (Settings.auto_index), a missing index is built
        and one behind the newest records caught up, in the background (indexing/auto.py). With the search log
        on (Settings.search_log), the search is logged (search/log.py)."""
        import time

        from .indexing.auto import searching

        started = time.perf_counter()
        engine = self._engine
        hits = searching(self.settings, lambda: engine.search(request), self.warn, self.status,
                         lambda: self._behind(engine.layout))
        self._log(request, len(hits), (time.perf_counter() - started) * 1000)
        return hits

    def warm_up(self) -> None:
        """Load the model and open a connection now, so that the first real search is as fast as the next ones:
        what a long-running process does when it starts. Changes nothing, starts no index run, logs nothing."""
        from .search.retrieval import SearchRequest

        self._engine.search(SearchRequest(query="warm up", top=1, rerank=None))

    def similar(self, path: str, *, top: int = 10, filters: Filters | None = None,
                min_score: float | None = None) -> list:
        """The records nearest in meaning to the memory at `path` (absolute, or relative to the directory)."""
        from .search.retrieval import SearchRequest

        request = SearchRequest(query="", top=top, mode="semantic", filters=filters or Filters(), min_score=min_score,
                                by_example=True)
        return self._engine.similar(self.filename(path), request)

    def related(self, path: str, *, top: int = 10, filters: Filters | None = None) -> list:
        """What the memory at `path` links to, what links to it, and what is nearest in meaning
        (list of related.Related), linked records first."""
        from .search.related import related

        return related(self, self.filename(path), top=top, filters=filters or Filters())

    def graph(self) -> dict:
        """Every indexed memory as a node and every resolved link between two of them as an edge."""
        from .search.related import graph

        return graph(self.connection, self.root)

    # --- reading -------------------------------------------------------------------------------

    def read(self, path: str, start_line: int = 1, end_line: int | None = None, limit: int | None = None):
        """Lines of the memory at `path` (reading.Passage): the one safe way to open a file a client names.
        limit: the most characters returned (default reading.READ_LIMIT)."""
        from .directory.reading import READ_LIMIT, read

        if self.settings.remote:
            raise MemoryNotFound(f"the memories of this index are on another machine ({self.root}): read {path} there")
        require_directory(self.root, self.settings.missing_memories())
        elsewhere = self._elsewhere(path)
        if elsewhere is not None:  # a file of another source (Claude Code's memories), read the same safe way
            source, inside = elsewhere
            return read(source.root, str(inside), start_line, end_line, limit or READ_LIMIT)
        return read(self.root, str(path), start_line, end_line, limit or READ_LIMIT)

    def _elsewhere(self, path: str):
        """(source, path inside its root) of a file of another source (directory/sources.py) named by its
        absolute path, or None for anything else."""
        from .directory.sources import owner

        given = os.path.abspath(os.path.expanduser(str(path))) if str(path).strip() else ""
        if not given or relative_path(given, self.root) is not None:
            return None
        return owner(self.settings, given)

    def source_of(self, path: str):
        """The directory.sources.Source the file at `path` belongs to, when it is not the memories directory's."""
        elsewhere = self._elsewhere(path)
        return elsewhere[0] if elsewhere else None

    def document(self, path: str, link_limit: int | None = None):
        """The memory at `path` to show whole (document.Document): frontmatter, body, and where its links lead
        (not read for a body longer than `link_limit` characters)."""
        from .search.document import document

        return document(self, path, link_limit)

    def filename(self, path: str) -> str:
        """The absolute path of a memory given absolute or relative to the memories directory."""
        if not str(path).strip():
            raise UsageError("the path is empty: give a memory's path")
        relative = relative_path(Path(path).expanduser(), self.root)
        elsewhere = self._elsewhere(path) if relative is None else None
        if elsewhere is not None:
            return str(elsewhere[0].root / elsewhere[1])
        if relative is None:
            raise PathOutside(f"{path} is outside the memories directory {self.root}: give a path inside it")
        # A link inside the directory names the memory it leads to, indexed under that memory's own path.
        try:
            real, real_root = Path(os.path.realpath(self.root / relative)), Path(os.path.realpath(self.root))
        except OSError:  # a link that changed while it was being followed
            raise MemoryNotFound(f"{path} is not a file in the memories directory {self.root}") from None
        if real != self.root / relative:
            if real != real_root and real_root not in real.parents:
                raise PathOutside(f"{path} leads outside the memories directory {self.root}: give a path inside it")
            return str(self.root / real.relative_to(real_root))
        return str(self.root / relative)

    def recent(self, kind: str = "session", top: int = 10, project: str | None = None,
               days: int | None = None, since=None, until=None) -> list:
        """The newest records by date folder and file name (a list of records.Record whose `skipped` names the
        folders that could not be read: [{"folder", "reason"}]); no database.
        since/until: dates (or their text: YYYY-MM-DD, 先週, yesterday...), both inclusive."""
        from . import params
        from .directory.recent import list_recent

        dates = params.check({"since": since, "until": until})
        if kind == "claude":
            return self._recent_claude(top, project, days, dates["since"], dates["until"])
        return list_recent(self.root, kind=kind, top=top, project=project, days=days, since=dates["since"],
                           until=dates["until"], missing=self.settings.missing_memories(), warn=self.warn)

    def _recent_claude(self, top: int, project: str | None, days: int | None, since, until) -> list:
        """Claude Code's memories last changed first (directory/sources.py), when the settings take them in."""
        import datetime as dt

        from .directory.sources import recent_claude

        require_directory(self.root, self.settings.missing_memories())
        if not self.settings.claude_code:
            self.warn("Claude Code's memories are not read: set MEMORIES_CLAUDE_CODE=1 to take them in")
            return []
        if days is not None:
            try:
                since = max(since or dt.date.min, dt.date.today() - dt.timedelta(days=days))
            except OverflowError:  # further back than dates go: no limit
                pass
        return recent_claude(self.settings, top, project, since, until)

    def export(self, filters: Filters | None = None, with_vectors: bool = False):
        """Every indexed chunk that passes the filters, as dicts in path and chunk order, streamed; all of
        them by default, superseded records included."""
        from .search.export import chunks

        return chunks(self.connection, self.root, filters or Filters(include_superseded=True), with_vectors)

    def write_export(self, output_format: str, to, filters: Filters | None = None, with_vectors: bool = False) -> int:
        """Write export()'s chunks as jsonl, json or csv to `to`: a text stream, or a file name (a new file, or
        a regular one replaced once complete); how many were written."""
        from .search.export import write, write_file

        chunks = self.export(filters, with_vectors)
        return write_file(chunks, output_format, to) if isinstance(to, str) else write(chunks, output_format, to)

    def _log(self, request: SearchRequest, results: int, milliseconds: float) -> None:
        """Append a search to the search log when the settings keep one (search/log.py); warn when it could not
        be written (the search itself never fails for it)."""
        from .search import log

        if self.settings.search_log is None:
            return
        item = log.entry(request.query, request.filters, request.top, results, milliseconds, request.mode)
        warning = log.append(self.settings.search_log, self.root, item)
        if warning:
            self.warn(warning)

    def search_summary(self) -> dict:
        """The search log summed up: how many searches, how fast, and what found nothing; no database."""
        from .search.log import summarize

        state = self.settings.state_dir
        assert state is not None, "Settings.from_env gives the search log its folder"
        return summarize(state / "searches.jsonl")

    # --- the index -----------------------------------------------------------------------------

    def status(self) -> dict:
        """What the index holds and how far it is behind the directory: what stats.py prints."""
        from .indexing.status import index_status

        return self._reader.reconnecting(lambda: index_status(self.connection, self.settings))

    def progress(self) -> dict:
        """Whether an indexer is at work on the index now and how far it got, and when the last run ended:
        {"building", "progress", "last_indexed_at"} (run_progress.py); a cheap look, for polling."""
        from .indexing.status import index_progress

        return index_progress(self.connection, self.settings)

    def verify(self):
        """Check every file, chunk, posting, frequency, vector and count against the directory
        (verify.Verification); changes nothing."""
        from .indexing.verify import verify

        require_directory(self.root, self.settings.missing_memories())
        return verify(self.connection, self.settings)

    def behind(self) -> bool:
        """Whether the index lacks or holds an older version of one of the newest dated records (a cheap look at
        the newest date folders of each kind, not the whole directory: what a missed index run leaves behind)."""
        return self._behind(None)

    def _behind(self, layout: Layout | None) -> bool:
        """behind(), read with `layout` when a search just found the index (None: find it now)."""
        from .directory.recent import newest_files
        from .search.layouts import layout_for
        from .storage.schema import find_index

        newest = newest_files(self.root) if not self.settings.remote else {}
        if not newest:
            return False
        if layout is None:
            layout = layout_for(find_index(self.connection, self.root, self.settings.table), self.root)
        indexed = layout.indexed_state(self.connection, list(newest))
        return indexed is not None and any(indexed.get(path) != state for path, state in newest.items())

    def plan(self, include=None, exclude=None, allow_removal: bool = False):
        """How the directory differs from the index (indexer.Plan), changing nothing."""
        from .indexing.indexer import Indexer

        return Indexer(self.settings, include, exclude, allow_removal=allow_removal).plan(self.connection)

    def index_in_background(self) -> bool:
        """Start an index run of the directory in a detached process, unless one was started within a minute;
        True when it was started now."""
        from .indexing.auto import start

        self._require_local()
        return start(self.settings)

    def _require_local(self) -> None:
        """UsageError for an index another machine builds: its memories are there, and so is its indexer."""
        if self.settings.remote:
            raise UsageError(f"the memories of this index are on another machine ({self.root}): index them there; "
                             "its indexer keeps the index up to date")

    def index(self, *, rebuild: bool = False, include=None, exclude=None, wait: bool = True, progress=None,
              allow_removal: bool = False):
        """Bring the index up to date (indexer.IndexStats); only new and changed files are read.

        include/exclude (globs) replace the selection the index remembers; None keeps it. A folder that lists
        empty or is a link now (a drive that is not mounted) keeps what the index holds under it (stats.emptied
        names it) unless allow_removal says its files were removed on purpose."""
        from .indexing.indexer import Indexer

        self._require_local()
        return Indexer(self.settings, include, exclude, progress, embedders=self.embedders,
                       allow_removal=allow_removal).run(rebuild=rebuild, wait=wait)

    def watch(self, *, include=None, exclude=None, on_run=lambda stats: None, progress=None,
              should_stop=lambda: False, on_problem=None, allow_removal: bool = False) -> None:
        """Index now, then again whenever the directory changes, until should_stop() is true. A directory that
        goes away or out of reach meanwhile is told to on_problem (raised without one) and watched until back."""
        from .indexing.indexer import watch

        watch(self.settings, include, exclude, on_run=on_run, progress=progress, should_stop=should_stop,
              embedders=self.embedders, on_problem=on_problem, allow_removal=allow_removal)

    # --- resources -----------------------------------------------------------------------------

    @property
    def connection(self) -> Any:
        """A read-only connection, opened (or taken from the shared pool) on first use and again when it broke."""
        return self._reader.connection

    def close(self) -> None:
        """Close the connection, or give it back to the shared pool."""
        self._reader.close()

    def _require_directory(self) -> None:
        """MemoriesMissing (or the like) before the database is read for a directory that is not there."""
        if not self.settings.remote:
            require_directory(self.root, self.settings.missing_memories())

    def __enter__(self) -> "Memories":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
