"""Writing the managed index: its tables, one file's rows at a time, and the statistics BM25 reads.

Only the indexer writes here; searches read the same tables through layouts.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from psycopg import sql

from ..directory.records import KINDS, Record
from ..embedding import ModelSpec
from ..text.chunking import CHUNKER_VERSION
from ..text.language import CJK_SHARE
from ..text.links import Link
from ..text.tokens import TOKENIZER_VERSION, chunk_terms
from . import packing
from .catalog import share_with_readers
from .embedding_cache import create_cache
from .links import add_links, create_table as create_links_table, forget_links
from .schema import SCHEMA_VERSION, UPGRADABLE_SCHEMAS, ManagedIndex, ManagedTables, columns_of

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {files} (
    filename text PRIMARY KEY,
    relpath text NOT NULL,
    content_hash text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    chunk_count integer NOT NULL,
    error text,  -- why the file could not be indexed; it has no chunks then
    indexed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {chunks} (
    id bigserial PRIMARY KEY,
    filename text NOT NULL REFERENCES {files} (filename) ON DELETE CASCADE,
    chunk_index integer NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    chunk_text text NOT NULL,
    embedding {vector},  -- NULL until the second phase of a run embeds it
    embed_context text,  -- title / section the model reads before chunk_text
    term_count integer NOT NULL,
    kind text,
    status text NOT NULL,
    title text NOT NULL,
    tags text[] NOT NULL,
    project text,
    recorded_on date,
    recorded_time text,
    frontmatter jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS {chunks_filename} ON {chunks} (filename);
CREATE INDEX IF NOT EXISTS {chunks_filters} ON {chunks} (kind, status, recorded_on);
-- Dates alone: a recent few days of a large index are read whole and ranked exactly, not sought in the graph.
CREATE INDEX IF NOT EXISTS {chunks_dates} ON {chunks} (recorded_on);
CREATE INDEX IF NOT EXISTS {chunks_pending} ON {chunks} (recorded_on, id) WHERE embedding IS NULL;
-- The lexical index: one row per (term, chunk), read by term for BM25 (see references/schema.md).
CREATE TABLE IF NOT EXISTS {postings} (
    term text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL
);
CREATE INDEX IF NOT EXISTS {postings_by_term} ON {postings} (term, tf DESC, dl) INCLUDE (chunk_id);
CREATE INDEX IF NOT EXISTS {postings_chunk} ON {postings} (chunk_id);
CREATE TABLE IF NOT EXISTS {terms} (term text PRIMARY KEY, df integer NOT NULL);
"""


@dataclass
class ChunkRow:
    chunk_index: int
    start_line: int
    end_line: int
    chunk_text: str
    embedding: str | None  # pgvector text; None until embedded
    terms: dict[str, int]
    context: str | None = None  # what the model reads before chunk_text


@dataclass(frozen=True)
class FileState:
    """What the index remembers of a file to tell whether it changed."""

    content_hash: str
    size: int
    mtime_ns: int


def _names(tables: ManagedTables) -> dict[str, sql.Identifier]:
    names = {key: tables.sql(key) for key in ("meta", "files", "chunks", "postings", "terms")}
    for index in ("chunks_filename", "chunks_filters", "chunks_dates", "chunks_pending", "postings_by_term",
                  "postings_chunk"):
        names[index] = sql.Identifier(f"{tables.prefix}__{index}")
    return names


def vector_type(dimension: int) -> str:
    """The stored vectors' type: halfvec (2 bytes a dimension) up to pgvector's HNSW limit for it. Its cosines
    differ from single precision's in the fourth decimal; the index's recall@10 is measured by
    tools/bench_scale.py (references/scale.md)."""
    return "halfvec" if dimension <= HALFVEC_MAX_DIMENSION else "vector"


HALFVEC_MAX_DIMENSION = 4000


def create_schema(index: ManagedIndex, spec: ModelSpec, memories_root: Path,
                  say=lambda message: None) -> None:
    conn, tables = index.conn, index.tables
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    # The b-tree by term alone that postings_by_term replaced: it could not read a term's densest chunks first.
    replaced = f"{tables.prefix}__postings_term"
    with conn.transaction():
        _upgrade(index, spec)
        if conn.execute("SELECT to_regclass(%s)", (replaced,)).fetchone()[0]:
            say("building the keyword index's b-tree by term and count, once (about a minute a million chunks; "
                "searches go on meanwhile)")
        conn.execute(sql.SQL(_SCHEMA).format(vector=sql.SQL(f"{vector_type(spec.dimension)}({int(spec.dimension)})"),
                                             **_names(tables)))
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(replaced)))
        packing.create_tables(index)
        create_cache(conn)
        create_links_table(index)
        share_with_readers(conn)  # the read-only roles grant-read named read the new tables too
        meta = {
            "provider": spec.provider, "model": spec.model, "dimension": str(spec.dimension),
            "chunker_version": CHUNKER_VERSION, "tokenizer_version": TOKENIZER_VERSION,
            "schema_version": SCHEMA_VERSION, "memories_dir": str(memories_root), "host": socket.gethostname(),
        }
        conn.cursor().executemany(
            sql.SQL("INSERT INTO {} (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING").format(
                tables.sql("meta")),
            list(meta.items()),
        )
        # The counts BM25 reads, kept exact in each file's transaction from now on (older indexes lack one).
        conn.execute(sql.SQL(
            "INSERT INTO {meta} (key, value) SELECT 'chunks', count(*)::text FROM {chunks} "
            "ON CONFLICT (key) DO NOTHING; "
            "INSERT INTO {meta} (key, value) SELECT 'total_terms', coalesce(sum(term_count), 0)::text FROM {chunks} "
            "ON CONFLICT (key) DO NOTHING").format(meta=tables.sql("meta"), chunks=tables.sql("chunks")))


def _upgrade(index: ManagedIndex, spec: ModelSpec) -> None:
    """Bring an index of an earlier schema to this one in place, its records kept: the nullable embedding and
    context column of keyword-first indexing, and vectors stored as halfvec (schema 4). The vector index is
    dropped for the new type and built again by the end of the run; searches meanwhile scan exactly."""
    conn, tables = index.conn, index.tables
    columns = columns_of(conn, tables.chunks)
    if not columns:
        return
    if "embed_context" not in columns:
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN embed_context text, ALTER COLUMN embedding DROP NOT NULL"
                             ).format(tables.sql("chunks")))
    stored = f"{vector_type(spec.dimension)}({int(spec.dimension)})"
    if columns["embedding"] != stored and columns["embedding"] == f"vector({int(spec.dimension)})":
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(f"{tables.prefix}__chunks_hnsw")))
        drop_kind_graphs(index)
        conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE {} USING embedding::{}").format(
            tables.sql("chunks"), sql.SQL(stored), sql.SQL(stored)))
    if columns_of(conn, tables.meta):
        conn.execute(sql.SQL("UPDATE {} SET value = %s WHERE key = 'schema_version' AND value = ANY(%s)").format(
            tables.sql("meta")), (SCHEMA_VERSION, list(UPGRADABLE_SCHEMAS)))


def drop_schema(index: ManagedIndex) -> None:
    conn, tables = index.conn, index.tables
    with conn.transaction():
        for name in tables.all + tables.retired:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def write_meta(index: ManagedIndex, values: dict[str, str]) -> None:
    conn, tables = index.conn, index.tables
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value").format(tables.sql("meta")),
        list(values.items()),
    )


def indexed_files(index: ManagedIndex) -> dict[str, FileState]:
    """filename -> FileState of every indexed file (none when the index does not exist yet)."""
    conn, tables = index.conn, index.tables
    if not columns_of(conn, tables.files):
        return {}
    rows = conn.execute(sql.SQL("SELECT filename, content_hash, size, mtime_ns FROM {}").format(
        tables.sql("files"))).fetchall()
    return {row[0]: FileState(row[1], row[2], row[3]) for row in rows}


@dataclass
class FileRows:
    """Everything the index holds for one file."""

    record: Record
    state: FileState
    chunks: list[ChunkRow]
    links: list[Link] = field(default_factory=list)


def replace_files(index: ManagedIndex, files: list[FileRows]) -> None:
    """Swap files' rows (chunks, postings, links) for new ones in a single transaction, a statement per table
    rather than per file: readers see old or new, never a mix."""
    conn, tables = index.conn, index.tables
    chunk_table, postings, terms = (tables.sql(name) for name in ("chunks", "postings", "terms"))
    chunk_count = sum(len(item.chunks) for item in files)
    with conn.transaction():
        _forget_files(index, [item.record.path for item in files])
        _count(index, chunk_count, sum(sum(chunk.terms.values()) for item in files for chunk in item.chunks))
        conn.cursor().executemany(
            sql.SQL("INSERT INTO {} (filename, relpath, content_hash, size, mtime_ns, chunk_count, indexed_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, now()) ON CONFLICT (filename) DO UPDATE SET "
                    "relpath = EXCLUDED.relpath, content_hash = EXCLUDED.content_hash, size = EXCLUDED.size, "
                    "mtime_ns = EXCLUDED.mtime_ns, chunk_count = EXCLUDED.chunk_count, error = NULL, "
                    "indexed_at = now()").format(tables.sql("files")),
            [(item.record.path, item.record.relpath, item.state.content_hash, item.state.size, item.state.mtime_ns,
              len(item.chunks)) for item in files],
        )
        add_links(index, [(item.record.path, link) for item in files for link in item.links])
        if not chunk_count:
            return
        ids = iter([row[0] for row in conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            (tables.chunks, chunk_count)).fetchall()])
        numbered = [(next(ids), item.record, chunk) for item in files for chunk in item.chunks]
        frontmatter = {item.record.path: json.dumps(item.record.frontmatter, ensure_ascii=False) for item in files}
        conn.cursor().executemany(
            sql.SQL("INSERT INTO {} (id, filename, chunk_index, start_line, end_line, chunk_text, embedding, "
                    "embed_context, term_count, kind, status, title, tags, project, recorded_on, recorded_time, "
                    "frontmatter) VALUES (%s, %s, %s, %s, %s, %s, %s::vector, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s::jsonb)").format(chunk_table),
            [(chunk_id, record.path, chunk.chunk_index, chunk.start_line, chunk.end_line, chunk.chunk_text,
              chunk.embedding, chunk.context, sum(chunk.terms.values()), record.kind, record.status, record.title,
              list(record.tags), record.project, record.date, record.time, frontmatter[record.path])
             for chunk_id, record, chunk in numbered],
        )
        with conn.cursor().copy(sql.SQL("COPY {} (term, chunk_id, tf, dl) FROM STDIN").format(postings)) as copy:
            for chunk_id, _, chunk in numbered:
                length = sum(chunk.terms.values())
                for term, count in chunk.terms.items():
                    copy.write_row((term, chunk_id, count, length))
        conn.execute(
            sql.SQL("INSERT INTO {terms} (term, df) SELECT term, count(*) FROM {postings} "
                    "WHERE chunk_id = ANY(%s) GROUP BY term "
                    "ON CONFLICT (term) DO UPDATE SET df = {terms}.df + EXCLUDED.df").format(
                terms=terms, postings=postings),
            ([chunk_id for chunk_id, _, _ in numbered],),
        )


def mark_unreadable(index: ManagedIndex, filename: str, relpath: str, size: int, mtime_ns: int,
                    reason: str) -> None:
    """Remember a file that cannot be indexed, dropping what it held, until it changes again."""
    conn, tables = index.conn, index.tables
    with conn.transaction():
        _forget_files(index, [filename])
        conn.execute(
            sql.SQL("INSERT INTO {} (filename, relpath, content_hash, size, mtime_ns, chunk_count, error) "
                    "VALUES (%s, %s, '', %s, %s, 0, %s) ON CONFLICT (filename) DO UPDATE SET "
                    "relpath = EXCLUDED.relpath, content_hash = '', size = EXCLUDED.size, "
                    "mtime_ns = EXCLUDED.mtime_ns, chunk_count = 0, error = EXCLUDED.error, "
                    "indexed_at = now()").format(tables.sql("files")),
            (filename, relpath, size, mtime_ns, reason),
        )


def unreadable_files(index: ManagedIndex) -> list[tuple[str, str]]:
    """(relpath, reason) of the files the last runs could not index."""
    conn, tables = index.conn, index.tables
    return conn.execute(sql.SQL("SELECT relpath, error FROM {} WHERE error IS NOT NULL ORDER BY relpath").format(
        tables.sql("files"))).fetchall()


def touch_file(index: ManagedIndex, filename: str, size: int, mtime_ns: int) -> None:
    """Record a new mtime for a file whose content did not change."""
    conn, tables = index.conn, index.tables
    conn.execute(sql.SQL("UPDATE {} SET size = %s, mtime_ns = %s WHERE filename = %s").format(tables.sql("files")),
                 (size, mtime_ns, filename))


def delete_files(index: ManagedIndex, filenames: list[str]) -> None:
    conn, tables = index.conn, index.tables
    if not filenames:
        return
    with conn.transaction():
        _forget_files(index, filenames)
        conn.execute(sql.SQL("DELETE FROM {} WHERE filename = ANY(%s)").format(tables.sql("files")), (filenames,))


def _forget_files(index: ManagedIndex, filenames: list[str]) -> None:
    """Remove files' chunks, postings and links and take their terms out of the document frequencies."""
    conn, tables = index.conn, index.tables
    chunks, postings, terms = tables.sql("chunks"), tables.sql("postings"), tables.sql("terms")
    forget_links(index, filenames)
    rows = conn.execute(sql.SQL("SELECT id, term_count FROM {} WHERE filename = ANY(%s)").format(chunks),
                        (filenames,)).fetchall()
    if not rows:
        return
    ids = [row[0] for row in rows]
    _count(index, -len(rows), -sum(row[1] for row in rows))
    packed_terms = _packed_terms(index, ids) if packing.any_packed(index) else {}
    conn.execute(
        sql.SQL("UPDATE {terms} t SET df = t.df - old.n FROM (SELECT term, count(*) AS n FROM {postings} "
                "WHERE chunk_id = ANY(%s) GROUP BY term) old WHERE t.term = old.term").format(
            terms=terms, postings=postings),
        (ids,),
    )
    conn.execute(sql.SQL("DELETE FROM {} WHERE chunk_id = ANY(%s)").format(postings), (ids,))
    packing.forget_chunks(index, packed_terms)
    conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(chunks), (ids,))


def _packed_terms(index: ManagedIndex, ids: list[int]) -> dict[int, set[str]]:
    """chunk id -> the terms it holds in packed arrays: those of its title and text, tokenized as when it was
    indexed (the index's tokenizer version is this one's), but those it holds as rows."""
    conn, tables = index.conn, index.tables
    rows = conn.execute(sql.SQL(
        "SELECT c.id, c.title, c.chunk_text, (SELECT array_agg(p.term) FROM {postings} p WHERE p.chunk_id = c.id) "
        "FROM {chunks} c WHERE c.id = ANY(%s)").format(chunks=tables.sql("chunks"), postings=tables.sql("postings")),
        (ids,)).fetchall()
    return {chunk_id: set(chunk_terms(title or "", text)) - set(as_rows or ())
            for chunk_id, title, text, as_rows in rows}


def _count(index: ManagedIndex, chunks: int, terms: int) -> None:
    """Move the chunk and term totals in the same transaction as the rows they count, so a search never
    reads a document frequency above the chunk count."""
    conn, tables = index.conn, index.tables
    if chunks or terms:
        conn.execute(sql.SQL("UPDATE {} SET value = (value::bigint + CASE key WHEN 'chunks' THEN %s ELSE %s END)::text "
                             "WHERE key IN ('chunks', 'total_terms')").format(tables.sql("meta")), (chunks, terms))


def pending_chunks(index: ManagedIndex, limit: int) -> list[tuple[int, str | None, str]]:
    """(id, context, text) of chunks still without an embedding, newest records first."""
    conn, tables = index.conn, index.tables
    return conn.execute(sql.SQL(
        "SELECT id, embed_context, chunk_text FROM {} WHERE embedding IS NULL "
        "ORDER BY recorded_on DESC NULLS LAST, recorded_time DESC NULLS LAST, id LIMIT %s").format(
        tables.sql("chunks")), (limit,)).fetchall()


def count_embedded(index: ManagedIndex) -> int:
    conn, tables = index.conn, index.tables
    if not columns_of(conn, tables.chunks):
        return 0
    return conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NOT NULL").format(
        tables.sql("chunks"))).fetchone()[0]


def count_pending(index: ManagedIndex) -> int:
    conn, tables = index.conn, index.tables
    return conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NULL").format(
        tables.sql("chunks"))).fetchone()[0]


def set_embeddings(index: ManagedIndex, vectors: list[tuple[int, str]]) -> None:
    """Fill in the embeddings of chunks by id, in one transaction."""
    conn, tables = index.conn, index.tables
    with conn.transaction():
        conn.cursor().executemany(sql.SQL("UPDATE {} SET embedding = %s::vector WHERE id = %s").format(
            tables.sql("chunks")), [(vector, chunk_id) for chunk_id, vector in vectors])


def refresh_statistics(index: ManagedIndex) -> dict[str, str]:
    """Recount chunks and terms exactly and drop terms no chunk holds any more."""
    conn, tables = index.conn, index.tables
    with conn.transaction():
        conn.execute(sql.SQL("DELETE FROM {} WHERE df <= 0").format(tables.sql("terms")))
        chunks, total, average = conn.execute(sql.SQL(
            "SELECT count(*), coalesce(sum(term_count), 0), coalesce(avg(term_count), 0) FROM {}").format(
            tables.sql("chunks"))).fetchone()
        values = {"chunks": str(chunks), "total_terms": str(total), "average_terms": f"{float(average):.4f}",
                  "script_means": json.dumps(script_means(index), separators=(",", ":"))}
        write_meta(index, values)
    return values


def script_means(index: ManagedIndex) -> dict[str, tuple[int, list[float]]]:
    """"cjk" and "latin" -> (chunk count, mean vector) of the chunks in that script (relevance.is_cjk), for
    the learned fusion's language baseline."""
    conn, tables = index.conn, index.tables
    rows = conn.execute(sql.SQL(
        "SELECT octet_length(chunk_text) - char_length(chunk_text) >= {share} * 2 * char_length(chunk_text) "
        "AS cjk, count(*), avg(embedding)::text FROM {chunks} WHERE embedding IS NOT NULL GROUP BY cjk").format(
        share=sql.Literal(CJK_SHARE), chunks=tables.sql("chunks"))).fetchall()
    return {"cjk" if cjk else "latin": (count, [round(value, 6) for value in json.loads(mean)])
            for cjk, count, mean in rows}


def swap(conn, building: ManagedTables, live: ManagedTables) -> None:
    """Put a rebuilt index in the place of the live one in one transaction: a search sees one or the other."""
    with conn.transaction():
        # Every live table locked first, the chunks last: a search's statement locks the keyword tables before
        # the chunks, so taking them in this order (not one by one as they are dropped) cannot deadlock with it.
        order = [name for name in live.all + live.retired if name != live.chunks] + [live.chunks]
        present = [name for name in order if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]]
        if present:
            conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                sql.SQL(", ").join(sql.Identifier(name) for name in present)))
        for name in live.all + live.retired:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        for built, name in zip(building.all, live.all):
            conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(sql.Identifier(built), sql.Identifier(name)))
        rows = conn.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('i', 'S') AND starts_with(c.relname, %s)",
            (building.prefix + "__",)).fetchall()
        for name, kind in rows:
            statement = "ALTER INDEX {} RENAME TO {}" if kind == "i" else "ALTER SEQUENCE {} RENAME TO {}"
            conn.execute(sql.SQL(statement).format(sql.Identifier(name),
                                                   sql.Identifier(live.prefix + name[len(building.prefix):])))


def vacuum(index: ManagedIndex) -> None:
    """Mark new rows all-visible (the keyword leg reads postings from the index alone) and refresh
    the planner's statistics; only pages changed since the last run are visited."""
    conn, tables = index.conn, index.tables
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.SQL(", ").join(
        tables.sql(name) for name in ("postings", "packed", "chunks"))))


HNSW_M = 16  # pgvector's default neighbours per element; ef_construction stays at its default too


def hnsw_graph_bytes(chunks: int, stored: str, dimension: int) -> int:
    """About what pgvector's HNSW build holds in memory for `chunks` vectors: each element's value and its
    neighbour lists (2M at the ground layer, 16 bytes each, a few more above). A build whose graph outgrows
    maintenance_work_mem goes on on disk several times slower (tools/bench_scale.py)."""
    value = 8 + dimension * (2 if stored == "halfvec" else 4)
    return int(chunks * (value + 2 * HNSW_M * 16 * 1.1 + 160))


def server_on_this_machine(conn) -> bool:
    """Whether the server shares this machine's memory and cores: a Unix socket or a loopback address."""
    host = conn.info.host or ""
    return host.startswith("/") or host in ("localhost", "127.0.0.1", "::1")


def hnsw_build_settings(conn, graph_bytes: int) -> dict[str, str]:
    """Session settings for an HNSW build on a server of this machine: maintenance_work_mem for the whole
    graph (up to a quarter of the memory) and a parallel worker per core but one; when /dev/shm cannot hold
    the graph, which a parallel build shares there, no worker. A configured server elsewhere keeps its own
    (stats.py says when they are short)."""
    import os

    if not server_on_this_machine(conn):
        return {}
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    current = conn.execute("SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"
                           ).fetchone()[0]
    wanted = max(current, min(int(graph_bytes * 1.25), memory // 4))
    workers = max(0, min((os.cpu_count() or 1) - 1, 7))
    try:
        shared = os.statvfs("/dev/shm")
        if shared.f_bavail * shared.f_frsize < wanted:
            workers = 0
    except OSError:
        pass
    return {"maintenance_work_mem": f"{wanted // 1048576}MB", "max_parallel_maintenance_workers": str(workers)}


def ensure_hnsw(index: ManagedIndex, spec: ModelSpec, say=lambda message: None) -> None:
    """Build the HNSW vector index when it is missing or was left invalid by an interrupted build."""
    tables = index.tables
    _ensure_graph(index, spec, f"{tables.prefix}__chunks_hnsw", None,
                  lambda: say("building the HNSW vector index (searches keep working meanwhile)"))


def kind_graph(tables: ManagedTables, kind: str) -> str:
    """The name of the vector graph of one kind of record's chunks."""
    return f"{tables.prefix}__chunks_hnsw_{kind}"


def ensure_kind_graphs(index: ManagedIndex, spec: ModelSpec, min_chunks: int,
                       say=lambda message: None) -> None:
    """A vector graph of each kind of record (sessions, web pages, minutes, wiki pages) with `min_chunks`
    embedded chunks or more, beside the graph of all: a search kept to one kind walks its own graph, where
    the graph of all would pass every other kind's chunks around the question first (at a million chunks
    the sessions' vector leg 113-129 -> 3-6 ms at p95; references/scale.md). Each costs about what its chunks
    cost in the graph of all."""
    conn, tables = index.conn, index.tables
    built = {name for (name,) in conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = to_regclass(%s) AND i.indisvalid", (tables.chunks,))}
    missing = [kind for kind in KINDS if kind_graph(tables, kind) not in built]
    if not missing:
        return  # an index run over a large index counts nothing
    counts = conn.execute(sql.SQL("SELECT kind, count(*) FROM {} WHERE embedding IS NOT NULL AND kind = ANY(%s) "
                                  "GROUP BY kind").format(tables.sql("chunks")), (missing,)).fetchall()
    for kind, count in sorted(counts):
        if count >= min_chunks:
            _ensure_graph(index, spec, kind_graph(tables, kind), kind,
                          lambda kind=kind: say(f"building the vector index of the {kind} records"))


def drop_kind_graphs(index: ManagedIndex) -> None:
    """Drop every kind's graph (the next run builds them again)."""
    conn, tables = index.conn, index.tables
    for kind in KINDS:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(kind_graph(tables, kind))))


def _ensure_graph(index: ManagedIndex, spec: ModelSpec, name: str, kind: str | None, starting) -> None:
    """Build one HNSW graph (of the chunks of `kind`, or of all) when it is missing or was left invalid by an
    interrupted build; starting() is called before a build."""
    conn, tables = index.conn, index.tables
    column_type = re.match(r"\w+", columns_of(conn, tables.chunks)["embedding"])
    assert column_type is not None  # vector(N) or halfvec(N), as create_schema made it
    stored = column_type.group(0)
    operator = f"{stored}_cosine_ops"
    valid = conn.execute("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)",
                         (name,)).fetchone()
    if valid and valid[0]:
        return
    if valid:  # an interrupted concurrent build leaves an invalid index behind
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    starting()
    # The predicate is the clause a scope writes (search/filters.py), so the planner can use the graph for it.
    predicate = sql.SQL("kind = {}").format(sql.Literal(kind)) if kind else sql.SQL("true")
    chunks = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NOT NULL AND {}").format(
        tables.sql("chunks"), predicate)).fetchone()[0]
    settings = hnsw_build_settings(conn, hnsw_graph_bytes(chunks, stored, spec.dimension))
    for setting, value in settings.items():  # CONCURRENTLY runs outside a transaction: no SET LOCAL
        conn.execute("SELECT set_config(%s, %s, false)", (setting, value))
    try:
        conn.execute(sql.SQL("CREATE INDEX CONCURRENTLY {} ON {} USING hnsw (embedding {}){}").format(
            sql.Identifier(name), tables.sql("chunks"), sql.SQL(operator),
            sql.SQL(" WHERE {}").format(predicate) if kind else sql.SQL("")))
    finally:
        for setting in settings if not conn.closed and not conn.broken else ():
            conn.execute(sql.SQL("RESET {}").format(sql.Identifier(setting)))


def lock_key(tables: ManagedTables) -> int:
    """A stable 63-bit advisory lock key for this index."""
    return int.from_bytes(hashlib.sha1(tables.prefix.encode()).digest()[:8], "big") >> 1


@contextmanager
def writing_lock(index: ManagedIndex, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the index's advisory lock for the block: one writer per index at a time, and writers of other
    indexes never wait for it. When another writer holds it, waiting() (if given) runs first: it says so,
    or raises to give up rather than wait. The lock goes at the end, or with the connection."""
    conn, tables = index.conn, index.tables
    key = lock_key(tables)
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        if waiting is not None:
            waiting()
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    try:
        yield
    finally:
        if not conn.closed and not conn.broken:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
