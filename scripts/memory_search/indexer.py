"""Building and refreshing the managed index: only what changed is read, embedded and written."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import index_writer as writer
from .chunking import Chunk, chunk_markdown, embedding_context, join_context
from .config import Settings
from .database import connect
from .embedding import ModelSpec, choose_spec, make_embedder, vector_literal
from .embedding_cache import cache_embeddings, cached_embeddings
from .errors import DatabaseUnavailable, IndexBusy, first_line
from .links import Link, extract_links
from .memories import BadMemory, Memory, MemoryFile, Skipped, discover, read_memory, require_directory
from .records import record_date
from .schema import ManagedTables, check_versions, read_meta
from .tokens import term_frequencies

EMBED_BATCH = 32  # texts per embedding call: keeps the local model's threads busy
HNSW_MIN_CHUNKS = 5_000  # exact scans measured 9.6 ms at 5,000 chunks and 41 ms at 20,000 (bench.py)
MAX_CHUNKS_PER_FILE = 2_000  # about 2 MB of text; a larger file is skipped with the reason
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


def compare(found: list[MemoryFile], indexed: dict[str, writer.FileState]) -> Plan:
    """Sort files into new / changed / unchanged by size and mtime; content hashes settle the rest later."""
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
    plan.deleted = sorted(path for path in indexed if path not in seen)
    return plan


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Pending:
    memory_file: MemoryFile
    memory: Memory
    digest: str
    texts: list[str]
    hashes: list[str]
    rows: list[writer.ChunkRow]
    links: list[Link]


class Indexer:
    """One run over a memories directory. Use `run()`; `plan()` answers --dry-run and stats.

    include/exclude: None uses the selection the index remembers from its last run that named one;
    a tuple (even empty) replaces it."""

    def __init__(self, settings: Settings, include=None, exclude=None, progress=None, embedder=None):
        self.settings = settings
        self.embedder = embedder  # None: the configured provider's
        self.root = settings.memories_root
        self.include = None if include is None else tuple(include)
        self.exclude = None if exclude is None else tuple(exclude)
        self.progress = progress
        self.live = self.tables = ManagedTables.of(self.root)

    def _check_root(self):
        require_directory(self.root)

    def selection(self, conn) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(include, exclude) for this run: the given ones, else those the index remembers."""
        remembered = read_meta(conn, self.live)
        include = self.include if self.include is not None else tuple(json.loads(remembered.get("include", "[]")))
        exclude = self.exclude if self.exclude is not None else tuple(json.loads(remembered.get("exclude", "[]")))
        return include, exclude

    def plan(self, conn) -> Plan:
        self._check_root()
        include, exclude = self.selection(conn)
        found, bad = discover(self.root, include, exclude)
        indexed = writer.indexed_files(conn, self.tables) if read_meta(conn, self.tables) else {}
        plan = compare(found, indexed)
        plan.bad, plan.indexed = bad, indexed
        return plan

    def run(self, rebuild: bool = False, wait: bool = True) -> IndexStats:
        """Bring the index up to date; with rebuild, build a new one beside it and swap it in at the end, so
        searches see the old index whole until then."""
        import psycopg

        self._check_root()
        started = time.monotonic()
        try:
            with connect(self.settings, read_only=False) as conn:
                self._lock(conn, wait)
                include, exclude = self.selection(conn)
                if rebuild:
                    self.tables = ManagedTables(self.live.prefix + REBUILD_SUFFIX)
                    writer.drop_schema(conn, self.tables)  # what an interrupted rebuild left
                spec = self._prepare(conn, rebuild)
                writer.write_meta(conn, self.tables, {"include": json.dumps(include), "exclude": json.dumps(exclude)})
                stats = self._update(conn, spec)
                writer.write_meta(conn, self.tables, {"last_indexed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
                if stats.success or stats.deleted or stats.failed or rebuild:
                    statistics = writer.refresh_statistics(conn, self.tables)
                    writer.vacuum(conn, self.tables)
                    if int(statistics["chunks"]) >= HNSW_MIN_CHUNKS:
                        writer.ensure_hnsw(conn, self.tables, spec, self._say)
                if rebuild:
                    writer.swap(conn, self.tables, self.live)
        except psycopg.OperationalError as error:
            raise DatabaseUnavailable(
                f"lost the connection to PostgreSQL while indexing ({first_line(error)}): start it again and "
                "rerun index.py; every file written so far is kept") from None
        finally:
            self.tables = self.live
        stats.duration_secs = round(time.monotonic() - started, 3)
        return stats

    def _lock(self, conn, wait: bool) -> None:
        key = writer.lock_key(self.live)
        if conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            return
        if not wait:
            raise IndexBusy(f"another indexer is updating the index of {self.root}: try again when it finishes")
        self._say(f"another indexer is updating the index of {self.root}; waiting for it to finish")
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))

    def _prepare(self, conn, rebuild: bool) -> ModelSpec:
        meta = read_meta(conn, self.live)
        recorded = ModelSpec(meta["provider"], meta["model"], int(meta["dimension"])) if meta else None
        if recorded and not rebuild and not writer.count_embedded(conn, self.live):
            # Nothing embedded yet (a first run that failed at the model): the index binds to no model.
            if choose_spec(self.settings) != recorded:
                writer.drop_schema(conn, self.live)
                meta, recorded = {}, None
        if rebuild:  # keep the recorded model unless another one is asked for
            asked = self.settings.provider is not None or self.settings.model is not None
            spec = choose_spec(self.settings, None if asked else recorded)
        else:
            spec = choose_spec(self.settings, recorded)
            check_versions(meta, self.root)
        writer.create_schema(conn, self.tables, spec, self.root)
        return spec

    def _update(self, conn, spec: ModelSpec) -> IndexStats:
        plan = self.plan(conn)
        stats = IndexStats(total=len(plan.new) + len(plan.changed) + len(plan.unchanged))
        stats.skipped = len(plan.unchanged)
        for bad in plan.bad:
            stats.failed += 1
            stats.failures.append({"path": bad.relpath, "reason": bad.reason})
        writer.delete_files(conn, self.tables, plan.deleted)
        stats.deleted = len(plan.deleted)

        # Phase 1: every new or changed file becomes searchable by keyword (cached embeddings included),
        # newest first. Phase 2 embeds what the cache lacked, newest records first. A run killed in either
        # phase leaves whole files behind, and the next run carries on where it stopped.
        indexed = plan.indexed
        todo = _newest_first(plan.new + plan.changed)
        if self.progress:
            self.progress.start(len(todo))
        batch: list[_Pending] = []
        for memory_file in todo:
            pending = self._read(conn, memory_file, stats)
            if pending is None:
                self._advance(0)
                continue
            known = indexed.get(memory_file.path)
            if known and known.content_hash == pending.digest:  # touched, not changed
                writer.touch_file(conn, self.tables, memory_file.path, memory_file.size, memory_file.mtime_ns)
                stats.skipped += 1
                self._advance(0)
                continue
            batch.append(pending)
            if sum(len(item.texts) for item in batch) >= EMBED_BATCH:
                self._write(conn, spec, batch, stats)
                batch = []
        if batch:
            self._write(conn, spec, batch, stats)
        if self.progress:
            self.progress.finish()
        self._embed_pending(conn, spec, stats)
        return stats

    def _read(self, conn, memory_file: MemoryFile, stats: IndexStats) -> _Pending | None:
        """Read, parse, chunk and tokenize one file; any failure skips that file alone, with its reason."""
        try:
            memory, text = read_memory(memory_file)
            title = memory.record.title
            chunks = chunk_markdown(memory.body, memory.body_start_line)
            if len(chunks) > MAX_CHUNKS_PER_FILE:
                raise BadMemory(f"too many chunks ({len(chunks)} > {MAX_CHUNKS_PER_FILE}): split the file")
            if chunks:
                contexts = [embedding_context(title, chunk) for chunk in chunks]
                terms = [term_frequencies(title + "\n" + chunk.text) for chunk in chunks]
            else:  # frontmatter only: its title is what there is to find
                chunks = [Chunk(title, 1, max(1, memory.body_start_line - 1), "")]
                contexts, terms = [None], [term_frequencies(title)]
            texts = [join_context(context, chunk.text) for context, chunk in zip(contexts, chunks)]
            rows = [writer.ChunkRow(i, chunk.start_line, chunk.end_line, chunk.text, None, dict(counts), context)
                    for i, (chunk, counts, context) in enumerate(zip(chunks, terms, contexts))]
            links = extract_links(memory.body, memory_file.relpath, memory.body_start_line)
        except BadMemory as reason:
            self._skip(conn, memory_file, str(reason), stats)
            return None
        except Exception as error:  # one file never stops a run
            self._skip(conn, memory_file, f"could not be read ({type(error).__name__}: {first_line(error)})", stats)
            return None
        return _Pending(memory_file, memory, content_hash(text), texts,
                        [content_hash(text) for text in texts], rows, links)

    def _skip(self, conn, memory_file: MemoryFile, reason: str, stats: IndexStats) -> None:
        reason = reason.replace("\x00", "")
        stats.failed += 1
        stats.failures.append({"path": memory_file.relpath, "reason": reason})
        writer.mark_unreadable(conn, self.tables, memory_file.path, memory_file.relpath, memory_file.size,
                               memory_file.mtime_ns, reason)

    def _write(self, conn, spec: ModelSpec, batch: list[_Pending], stats: IndexStats) -> None:
        """Write a batch of files with the embeddings the cache already has: in one transaction, or, when
        PostgreSQL refuses a value, each file in its own so that only that file is skipped."""
        import psycopg

        hashes = sorted({text_hash for item in batch for text_hash in item.hashes})
        vectors = cached_embeddings(conn, spec, hashes)
        stats.cached += sum(text_hash in vectors for item in batch for text_hash in item.hashes)
        files = []
        for item in batch:
            for row, text_hash in zip(item.rows, item.hashes):
                row.embedding = vectors.get(text_hash)
            state = writer.FileState(item.digest, item.memory_file.size, item.memory_file.mtime_ns)
            files.append(writer.FileRows(item.memory.record, state, item.rows, item.links))
        try:
            writer.replace_files(conn, self.tables, files)
            written = list(zip(batch, files))
        except psycopg.OperationalError:
            raise
        except psycopg.Error:
            written = []
            for item, rows in zip(batch, files):
                try:
                    writer.replace_files(conn, self.tables, [rows])
                    written.append((item, rows))
                except psycopg.OperationalError:
                    raise
                except psycopg.Error as error:  # a value PostgreSQL refuses: that file alone is skipped
                    self._skip(conn, item.memory_file, f"refused by PostgreSQL ({first_line(error)})", stats)
                    self._advance(0)
        for item, rows in written:
            stats.success += 1
            stats.chunks += len(rows.chunks)
            self._advance(len(rows.chunks))

    def _embed_pending(self, conn, spec: ModelSpec, stats: IndexStats) -> None:
        """Phase 2: embed the chunks written without a vector, newest records first, a batch per transaction."""
        waiting = writer.count_pending(conn, self.tables)
        if not waiting:
            return
        embedder = self.embedder or make_embedder(spec, self.settings)
        if self.progress:
            self.progress.start(waiting, label="embedding", unit="chunks")
        while True:
            rows = writer.pending_chunks(conn, self.tables, EMBED_BATCH)
            if not rows:
                break
            texts = {chunk_id: join_context(context, text) for chunk_id, context, text in rows}
            hashes = {chunk_id: content_hash(text) for chunk_id, text in texts.items()}
            vectors = cached_embeddings(conn, spec, sorted(set(hashes.values())))
            missing = {text_hash: texts[chunk_id] for chunk_id, text_hash in hashes.items() if text_hash not in vectors}
            if missing:
                embedded = embedder.embed_documents(list(missing.values()))
                fresh = {text_hash: vector_literal(vector) for text_hash, vector in zip(missing, embedded)}
                cache_embeddings(conn, spec, fresh)
                vectors.update(fresh)
                stats.embedded += len(missing)
            stats.cached += len(rows) - len(missing)
            writer.set_embeddings(conn, self.tables, [(chunk_id, vectors[hashes[chunk_id]]) for chunk_id in texts])
            if self.progress:
                self.progress.advance(len(rows), len(rows))
        if self.progress:
            self.progress.finish()

    def _advance(self, chunks: int) -> None:
        if self.progress:
            self.progress.advance(1, chunks)

    def _say(self, message: str) -> None:
        if self.progress:
            self.progress.note(message)


def _newest_first(files: list[MemoryFile]) -> list[MemoryFile]:
    """Dated records (raw/<kind>/YYYY-MM-DD/HHMMSS_*) newest first, then the rest, each in path order."""
    def when(memory_file: MemoryFile) -> tuple:
        day, clock = record_date(memory_file.relpath, {})
        return (day is not None, day or dt.date.min, clock or "")

    return sorted(sorted(files, key=lambda memory_file: memory_file.relpath), key=when, reverse=True)


def watch(settings: Settings, include=None, exclude=None, interval: float = 2.0, settle: float = 1.5,
          on_run=None, progress=None, should_stop=lambda: False) -> None:
    """Re-index whenever the directory changes, once it has been quiet for `settle` seconds."""
    indexer = Indexer(settings, include, exclude, progress)
    include, exclude = include or (), exclude or ()
    last = _signature(Path(settings.memories_root), include, exclude)  # before the run: no change slips by
    on_run(indexer.run())
    while not should_stop():
        time.sleep(interval)
        current = _signature(Path(settings.memories_root), include, exclude)
        if current == last:
            continue
        while True:  # debounce: wait until a burst of writes is over
            time.sleep(settle)
            settled = _signature(Path(settings.memories_root), include, exclude)
            if settled == current:
                break
            current = settled
        on_run(indexer.run())
        last = current


def _signature(root: Path, include, exclude) -> frozenset:
    found, _ = discover(root, include, exclude)
    return frozenset((item.path, item.size, item.mtime_ns) for item in found)
