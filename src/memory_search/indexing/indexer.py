"""Building and refreshing the managed index: only what changed is read, embedded and written."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import Settings
from ..directory.files import (
    BadMemory,
    MemoryFile,
    Skipped,
    UnreadableMemory,
    out_of_reach,
    read_memory,
    require_directory,
)
from ..directory.records import record_date
from ..directory.sources import list_sources, shown_path
from ..embedding import ModelSpec, choose_spec, make_embedder
from ..errors import DatabaseUnavailable, IndexBusy, MemoriesMissing, MemorySearchError, first_line
from ..hints import command
from ..storage import writer
from ..storage.database import connect
from ..storage.schema import ManagedTables, check_versions, chunked_by_another_version, read_meta
from . import pipeline
from .run_progress import RunProgress

REBUILD_SUFFIX = "_next"  # --rebuild fills <prefix>_next__* beside the live tables, then swaps


@dataclass
class IndexStats:
    """What a run did; the first seven keys are miyabi's IndexStats."""

    total: int = 0  # files found
    success: int = 0  # files (re)indexed
    failed: int = 0  # files that could not be indexed
    skipped: int = 0  # files unchanged since the last run
    deleted: int = 0
    chunks: int = 0  # chunks written
    duration_secs: float = 0.0
    embedded: int = 0  # texts sent to the model
    cached: int = 0  # texts whose embedding came from the cache
    failures: list[dict] = field(default_factory=list)
    unreachable: int = 0  # indexed files that could not be reached this time: kept in the index as they were
    # Folders that list empty or lead elsewhere now, whose indexed files were kept: [{"folder", "reason"}]
    emptied: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Plan:
    """How the directory differs from the index."""

    new: list[MemoryFile] = field(default_factory=list)
    changed: list[MemoryFile] = field(default_factory=list)
    unchanged: list[MemoryFile] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    bad: list[Skipped] = field(default_factory=list)
    indexed: dict[str, writer.FileState] = field(default_factory=dict)  # what the index held
    # Indexed files not found where nothing could be looked at (a folder that cannot be listed): (relpath, why);
    # they stay in the index as they are.
    unreachable: list[tuple[str, str]] = field(default_factory=list)
    # Of those, the folders that list empty or lead elsewhere now: {folder: what it does}; their files are
    # removed only when the caller says the removal is meant.
    emptied: dict[str, str] = field(default_factory=dict)


def compare(found: list[MemoryFile], indexed: dict[str, writer.FileState], root: Path | None = None,
            skipped: Sequence[Skipped] = (), allow_removal: bool = False) -> Plan:
    """Sort files into new / changed / unchanged by size and mtime; content hashes settle the rest later.

    An indexed file that was not found is deleted only when its folder was listed: one in a folder that
    could not be listed, or that could not be looked at itself, is unreachable, and kept. So is one under a
    folder that lists empty or is a link now (an unmounted drive's mount point), unless allow_removal."""
    plan = Plan()
    for memory_file in found:
        known = indexed.get(memory_file.path)
        if known is None:
            plan.new.append(memory_file)
        elif (known.size, known.mtime_ns) == (memory_file.size, memory_file.mtime_ns):
            plan.unchanged.append(memory_file)
        else:
            plan.changed.append(memory_file)
    seen = {memory_file.path for memory_file in found}
    if root is None:  # nothing to look at: every indexed file not found is deleted
        plan.deleted.extend(path for path in sorted(indexed) if path not in seen)
        return plan
    reach = out_of_reach(root, skipped, allow_removal)
    for path in sorted(indexed):
        if path in seen:
            continue
        where = reach(path)
        if where is None:
            plan.deleted.append(path)
            continue
        relpath = shown_path(path, root)
        if where.emptied:
            plan.emptied[where.relpath] = where.reason
            plan.unreachable.append((relpath, f"its folder {where.relpath} {where.reason}"))
        elif relpath != where.relpath:  # a file in a folder that could not be listed; the folder is listed apart
            plan.unreachable.append((relpath, f"its folder {where.relpath} cannot be listed ({where.unreachable})"))
        else:
            plan.unreachable.append((relpath, where.reason))
    return plan


class RebuildWouldLose(MemorySearchError):
    """A rebuild met an indexed file it cannot read now: swapping in the new index would lose it."""

    def __init__(self, relpath: str, reason: str):
        super().__init__(f"cannot rebuild the index now: {relpath}: {reason}; the index is left as it is, "
                         "rebuild once every file can be read")


class Indexer:
    """One run over a memories directory. Use `run()`; `plan()` answers --dry-run and stats.

    include/exclude: None uses the selection the index remembers from its last run that named one;
    a tuple (even empty) replaces it."""

    def __init__(self, settings: Settings, include=None, exclude=None, progress=None, embedder=None,
                 embedders=None, allow_removal: bool = False):
        self.settings = settings
        # Files under a folder that lists empty or leads elsewhere now are removed from the index (they were
        # removed on purpose) rather than kept as out of reach.
        self.allow_removal = allow_removal
        self.embedder = embedder  # None: the configured provider's, from `embedders` (an Embedders) when given
        self.embedders = embedders
        self.root = settings.memories_root
        self.include = None if include is None else tuple(include)
        self.exclude = None if exclude is None else tuple(exclude)
        self.progress = progress  # a terminal's progress bar, or None
        self._run: RunProgress | None = None  # the progress of the run under way, recorded in the index
        self.live = self.tables = ManagedTables.of(self.root)
        self._indexed: dict[str, writer.FileState] = {}  # what the index held when this run began
        self._kept: list[Skipped] = []  # where another source could not be looked at (sources.Listing.kept)

    def _check_root(self):
        require_directory(self.root, self.settings.missing_memories())

    def _where_data(self) -> str:
        if self.settings.database_url:
            return ""
        from ..storage.database import EmbeddedServer

        return f" ({EmbeddedServer(self.settings.data_dir).pgdata})"

    def selection(self, conn) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(include, exclude) for this run: the given ones, else those the index remembers."""
        remembered = read_meta(self.live.on(conn))
        include = self.include if self.include is not None else tuple(json.loads(remembered.get("include", "[]")))
        exclude = self.exclude if self.exclude is not None else tuple(json.loads(remembered.get("exclude", "[]")))
        return include, exclude

    def plan(self, conn) -> Plan:
        self._check_root()
        include, exclude = self.selection(conn)
        listing = list_sources(self.settings, include, exclude)
        indexed = writer.indexed_files(self.tables.on(conn)) if read_meta(self.tables.on(conn)) else {}
        self._kept = listing.kept(indexed, self.root)
        plan = compare(listing.found, indexed, self.root, listing.skipped + self._kept, self.allow_removal)
        plan.bad, plan.indexed = listing.skipped, indexed
        return plan

    def run(self, rebuild: bool = False, wait: bool = True) -> IndexStats:
        """Bring the index up to date; with rebuild, build a new one beside it and swap it in at the end, so
        searches see the old index whole until then."""
        import psycopg

        started = time.monotonic()
        try:
            self._check_root()
            with connect(self.settings, read_only=False) as conn, \
                    writer.writing_lock(self.live.on(conn), lambda: self._waiting(wait)):
                live = self.live.on(conn)
                include, exclude = self.selection(conn)
                if not rebuild and chunked_by_another_version(read_meta(live)):
                    self._say("the index was chunked by an earlier version: building it anew beside the one "
                              "searches read (cached embeddings are reused)")
                    rebuild = True
                if rebuild:
                    self.tables = ManagedTables(self.live.prefix + REBUILD_SUFFIX)
                    writer.drop_schema(self.tables.on(conn))  # what an interrupted rebuild left
                written = self.tables.on(conn)  # the live index, or the one a rebuild fills beside it
                spec = self._prepare(conn, rebuild)
                writer.write_meta(written, {"include": json.dumps(include), "exclude": json.dumps(exclude)})
                # Recorded where readers of the index look: the live index, even while a rebuild fills another.
                under_way = self._run = RunProgress(live if read_meta(live) else written, self.progress)
                try:
                    stats = self._update(conn, spec, under_way)
                except RebuildWouldLose:
                    writer.drop_schema(written)
                    raise
                writer.write_meta(written, {"last_indexed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
                # An index written before the statistics gained the per-script means gets them once.
                if (stats.success or stats.deleted or stats.failed or rebuild
                        or "script_means" not in read_meta(written)):
                    pipeline.finish(written, spec, self._say)
                if rebuild:
                    writer.swap(conn, self.tables, self.live)
        except MemoriesMissing as error:  # the directory went away or out of reach during the run
            raise type(error)(f"{error}; the index keeps every memory it holds") from None
        except psycopg.errors.DiskFull as error:
            raise MemorySearchError(
                f"the database's disk is full ({first_line(error)}): free space where PostgreSQL keeps its data"
                f"{self._where_data()} and rerun `{command('index')}`; every file written so far is kept") from None
        except psycopg.OperationalError as error:
            raise DatabaseUnavailable(
                f"lost the connection to PostgreSQL while indexing ({first_line(error)}): start it again and "
                f"rerun `{command('index')}`; every file written so far is kept") from None
        finally:
            if self._run is not None:
                self._run.clear()
            self.tables, self._run = self.live, None
        stats.duration_secs = round(time.monotonic() - started, 3)
        return stats

    def _waiting(self, wait: bool) -> None:
        """Another indexer holds the index's lock: say that this one waits for it, or give up."""
        if not wait:
            raise IndexBusy(f"another indexer is updating the index of {self.root}: try again when it finishes")
        self._say(f"another indexer is updating the index of {self.root}; waiting for it to finish")

    def _prepare(self, conn, rebuild: bool) -> ModelSpec:
        meta = read_meta(self.live.on(conn))
        recorded = ModelSpec(meta["provider"], meta["model"], int(meta["dimension"])) if meta else None
        if recorded and not rebuild and not writer.count_embedded(self.live.on(conn)):
            # Nothing embedded yet (a first run that failed at the model): the index binds to no model.
            if choose_spec(self.settings) != recorded:
                writer.drop_schema(self.live.on(conn))
                meta, recorded = {}, None
        if rebuild:  # keep the recorded model unless another one is asked for
            asked = self.settings.provider is not None or self.settings.model is not None
            spec = choose_spec(self.settings, None if asked else recorded)
        else:
            spec = choose_spec(self.settings, recorded)
            check_versions(meta, self.root)
        writer.create_schema(self.tables.on(conn), spec, self.root, self._say)
        return spec

    def _update(self, conn, spec: ModelSpec, under_way: RunProgress) -> IndexStats:
        plan = self.plan(conn)
        self._indexed = plan.indexed
        if self.tables is not self.live:  # a rebuild starts empty: what it cannot reach would be lost at the swap
            self._indexed = writer.indexed_files(self.live.on(conn)) if read_meta(self.live.on(conn)) else {}
            lost = compare([], self._indexed, self.root, plan.bad + self._kept, self.allow_removal).unreachable
            if lost:
                raise RebuildWouldLose(*lost[0])
        stats = IndexStats(total=len(plan.new) + len(plan.changed) + len(plan.unchanged))
        stats.skipped = len(plan.unchanged)
        for bad in plan.bad:
            stats.failed += 1
            stats.failures.append({"path": bad.relpath, "reason": bad.reason})
        for relpath, reason in plan.unreachable:
            stats.unreachable += 1
            if not any(bad.relpath == relpath for bad in plan.bad):
                stats.failed += 1
                stats.failures.append({"path": relpath, "reason": f"{reason}; kept in the index as it was"})
        stats.emptied = [{"folder": folder, "reason": reason} for folder, reason in plan.emptied.items()]
        writer.delete_files(self.tables.on(conn), plan.deleted)
        stats.deleted = len(plan.deleted)

        # Phase 1: every new or changed file becomes searchable by keyword (cached embeddings included),
        # newest first. Phase 2 embeds what the cache lacked, newest records first. A run killed in either
        # phase leaves whole files behind, and the next run carries on where it stopped.
        indexed = plan.indexed
        todo = _newest_first(plan.new + plan.changed)
        under_way.start(len(todo))
        batch: list[pipeline.Prepared] = []
        for memory_file in todo:
            under_way.reading(memory_file.relpath)
            item = self._read(conn, memory_file, stats)
            if item is None:
                self._advance(0)
                continue
            known = indexed.get(memory_file.path)
            if known and known.content_hash == item.state.content_hash:  # touched, not changed
                writer.touch_file(self.tables.on(conn), memory_file.path, memory_file.size, memory_file.mtime_ns)
                stats.skipped += 1
                self._advance(0)
                continue
            batch.append(item)
            if sum(len(pending.rows) for pending in batch) >= pipeline.EMBED_BATCH:
                self._write(conn, spec, batch, stats)
                batch = []
        if batch:
            self._write(conn, spec, batch, stats)
        under_way.finish()
        if writer.count_pending(self.tables.on(conn)):
            embedder = self.embedder or (self.embedders.get(spec, self.settings) if self.embedders is not None
                                         else make_embedder(spec, self.settings))
            done = pipeline.embed_pending(self.tables.on(conn), spec, embedder, under_way)
            stats.embedded += done.embedded
            stats.cached += done.cached
        return stats

    def _read(self, conn, memory_file: MemoryFile, stats: IndexStats) -> pipeline.Prepared | None:
        """Read, parse, chunk and tokenize one file; any failure skips that file alone, with its reason."""
        try:
            memory, text = read_memory(memory_file)
            state = writer.FileState(pipeline.content_hash(text), memory_file.size, memory_file.mtime_ns)
            return pipeline.prepare(memory, state)
        except UnreadableMemory as error:
            self._unreadable(conn, memory_file, error, stats)
        except BadMemory as reason:
            self._skip(conn, memory_file, str(reason), stats)
        except Exception as error:  # one file never stops a run
            self._skip(conn, memory_file, f"could not be read ({type(error).__name__}: {first_line(error)})", stats)
        return None

    def _unreadable(self, conn, memory_file: MemoryFile, error: UnreadableMemory, stats: IndexStats) -> None:
        """A file the system would not let us read: gone when it no longer exists (and the directory still
        does); otherwise out of reach for now, so what the index holds of it stays, and the next run tries again."""
        if memory_file.kind is None and error.gone:
            require_directory(self.root, self.settings.missing_memories())  # not a directory that went away
        # Another source's file is gone when its folder is still there; else that folder went away (kept).
        if error.gone and (memory_file.kind is None or os.path.isdir(os.path.dirname(memory_file.path))):
            if memory_file.path in self._indexed and self.tables is self.live:
                writer.delete_files(self.tables.on(conn), [memory_file.path])
                stats.deleted += 1
            return
        known = memory_file.path in self._indexed
        if known and self.tables is not self.live:
            raise RebuildWouldLose(memory_file.relpath, str(error))
        stats.failed += 1
        stats.unreachable += known
        stats.failures.append({"path": memory_file.relpath, "reason": f"{error}; " + (
            "kept in the index as it was" if known else "indexed once it can be read")})

    def _skip(self, conn, memory_file: MemoryFile, reason: str, stats: IndexStats) -> None:
        reason = reason.replace("\x00", "")
        stats.failed += 1
        stats.failures.append({"path": memory_file.relpath, "reason": reason})
        writer.mark_unreadable(self.tables.on(conn), memory_file.path, memory_file.relpath, memory_file.size,
                               memory_file.mtime_ns, reason)

    def _write(self, conn, spec: ModelSpec, batch: list[pipeline.Prepared], stats: IndexStats) -> None:
        written, refused = pipeline.write(self.tables.on(conn), spec, batch)
        stats.cached += pipeline.cached_count(batch)
        for failure in refused:  # a value PostgreSQL refuses: that file alone is skipped
            item = failure.item
            self._skip(conn, MemoryFile(item.record.path, item.record.relpath, item.state.size, item.state.mtime_ns),
                       failure.reason, stats)
            self._advance(0)
        for item in written:
            stats.success += 1
            stats.chunks += len(item.rows)
            self._advance(len(item.rows))

    def _advance(self, chunks: int) -> None:
        if self._run:
            self._run.advance(1, chunks)

    def _say(self, message: str) -> None:
        if self._run:
            self._run.note(message)
        elif self.progress:
            self.progress.note(message)


def _newest_first(files: list[MemoryFile]) -> list[MemoryFile]:
    """Dated records (raw/<kind>/YYYY-MM-DD/HHMMSS_*) newest first, then the rest, each in path order."""
    def when(memory_file: MemoryFile) -> tuple:
        day, clock = record_date(memory_file.relpath, {})
        return (day is not None, day or dt.date.min, clock or "")

    return sorted(sorted(files, key=lambda memory_file: memory_file.relpath), key=when, reverse=True)


def watch(settings: Settings, include=None, exclude=None, interval: float = 2.0, settle: float = 1.5,
          on_run=None, progress=None, should_stop=lambda: False, embedders=None, on_problem=None,
          allow_removal: bool = False) -> None:
    """Re-index whenever the directory changes, once it has been quiet for `settle` seconds.

    A directory missing or unreadable at the start raises; one that goes away or out of reach later (an
    unmounted disk) leaves the index as it is, is reported to on_problem (raised when there is none), and is
    watched until it is back."""
    indexer = Indexer(settings, include, exclude, progress, embedders=embedders, allow_removal=allow_removal)
    include, exclude = include or (), exclude or ()
    indexer._check_root()
    last = _signature(settings, include, exclude)  # before the run: no change slips by
    on_run(indexer.run())
    while not should_stop():
        time.sleep(interval)
        current = _signature(settings, include, exclude)
        if current == last:
            continue
        while True:  # debounce: wait until a burst of writes is over
            time.sleep(settle)
            settled = _signature(settings, include, exclude)
            if settled == current:
                break
            current = settled
        try:
            on_run(indexer.run())
        except MemoriesMissing as error:
            if on_problem is None:
                raise
            on_problem(str(error))
        last = current


def _signature(settings: Settings, include, exclude) -> frozenset | str:
    """What the files of every source look like (path, size, time), or why the directory cannot be looked at."""
    try:
        listing = list_sources(settings, include, exclude)
    except MemoriesMissing as error:
        return str(error)
    return frozenset([(item.path, item.size, item.mtime_ns) for item in listing.found]
                     + [(item.relpath, item.reason) for item in listing.skipped]
                     + list(listing.out_of_reach.items()))
