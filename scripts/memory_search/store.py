"""The tables an index lives in: names, introspection, the managed schema and its writes.

Two layouts are read through one interface:
- `cocoindex`: the table the original's CocoIndex flow writes (id, filename, chunk_text, embedding);
- `managed`: this project's tables `<prefix>__chunks|__files|__postings|__terms|__meta`, the same
  columns and more.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from .chunking import CHUNKER_VERSION
from .embedding import ModelSpec
from .errors import IndexMissing, UsageError
from .tokens import TOKENIZER_VERSION

CACHE_TABLE = "memsearch_embedding_cache"
SCHEMA_VERSION = "2"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")


def _host() -> str:
    return re.sub(r"[^a-zA-Z0-9]", "_", socket.gethostname())


def cocoindex_tables(memories_root: Path) -> list[str]:
    """Table names the original's recording side used for this directory, newest layout last."""
    host, name = _host(), memories_root.name
    return [f"codeindex_{host}_{name}__code_chunks".lower(),
            f"memoryindex_{host}_{name}__chunks".lower(),
            f"episodicindex_{host}_{name}__chunks".lower()]


def managed_prefix(memories_root: Path) -> str:
    """memsearch_<basename>_<hash of host and path>: one managed index per memories directory."""
    name = re.sub(r"[^a-z0-9]+", "_", memories_root.name.lower()).strip("_")[:24] or "root"
    digest = hashlib.sha1(f"{socket.gethostname()}:{memories_root}".encode()).hexdigest()[:8]
    return f"memsearch_{name}_{digest}"


@dataclass(frozen=True)
class ManagedTables:
    prefix: str

    @property
    def chunks(self) -> str:
        return f"{self.prefix}__chunks"

    @property
    def files(self) -> str:
        return f"{self.prefix}__files"

    @property
    def postings(self) -> str:
        return f"{self.prefix}__postings"

    @property
    def terms(self) -> str:
        return f"{self.prefix}__terms"

    @property
    def meta(self) -> str:
        return f"{self.prefix}__meta"


@dataclass
class IndexInfo:
    """What search needs to know about the table it reads."""

    table: str
    layout: str  # managed | cocoindex
    vector_type: str  # vector | halfvec
    dimension: int
    spec: ModelSpec | None = None  # the model a managed index recorded
    tables: ManagedTables | None = None
    chunk_count: int = 0
    average_terms: float = 0.0
    has_hnsw: bool = False

    @property
    def managed(self) -> bool:
        return self.layout == "managed"


def _columns(conn, table: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
        (table,),
    ).fetchall()
    return dict(rows)


def open_index(conn, memories_root: Path, table: str | None = None) -> IndexInfo:
    """Find and describe the index for a memories directory: an explicit table, the managed one, or CocoIndex's."""
    if table is not None:
        if not _IDENTIFIER.match(table):
            raise UsageError(f"invalid table name {table!r}: use letters, digits and _ (schema.table allowed)")
        candidates = [table, table + "__chunks"]  # a managed index may be named by its prefix
    else:
        candidates = [ManagedTables(managed_prefix(memories_root)).chunks] + cocoindex_tables(memories_root)
    for name in candidates:
        columns = _columns(conn, name)
        if columns:
            return _describe(conn, name, columns)
    if table is not None:
        raise IndexMissing(
            f"table {table} does not exist: check MEMORIES_TABLE / --table, or build it with scripts/index.py")
    raise IndexMissing(
        f"no index of {memories_root} in this database: build it with `scripts/index.py` "
        f"(or set MEMORIES_TABLE to an existing CocoIndex table)"
    )


def _describe(conn, name: str, columns: dict[str, str]) -> IndexInfo:
    missing = {"filename", "chunk_text", "embedding"} - set(columns)
    if missing:
        raise IndexMissing(f"table {name} lacks the column(s) {', '.join(sorted(missing))}: it is not a memories index")
    match = re.match(r"(vector|halfvec)\((\d+)\)", columns["embedding"])
    if not match:
        raise IndexMissing(f"table {name}'s embedding column is {columns['embedding']}, not vector(N) or halfvec(N)")
    info = IndexInfo(name, "cocoindex", match.group(1), int(match.group(2)))
    if name.endswith("__chunks") and "term_count" in columns:
        tables = ManagedTables(name.removesuffix("__chunks"))
        meta = read_meta(conn, tables)
        if meta:
            info.layout = "managed"
            info.tables = tables
            info.spec = ModelSpec(meta["provider"], meta["model"], int(meta["dimension"]))
            info.chunk_count = int(meta.get("chunks") or 0)
            info.average_terms = float(meta.get("average_terms") or 0.0)
    info.has_hnsw = bool(conn.execute(
        "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
        "WHERE i.indrelid = to_regclass(%s) AND am.amname = 'hnsw'", (name,)).fetchone())
    return info


def read_meta(conn, tables: ManagedTables) -> dict[str, str]:
    if not _columns(conn, tables.meta):
        return {}
    return dict(conn.execute(f"SELECT key, value FROM {tables.meta}").fetchall())


# --- the managed schema: written by the indexer only -------------------------------------------

def create_schema(conn, tables: ManagedTables, spec: ModelSpec, memories_root: Path) -> None:
    vector_type = "vector" if spec.dimension <= 2000 else "halfvec"
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    with conn.transaction():
        conn.execute(f"""
            CREATE TABLE IF NOT EXISTS {tables.meta} (key text PRIMARY KEY, value text NOT NULL);
            CREATE TABLE IF NOT EXISTS {tables.files} (
                filename text PRIMARY KEY,
                relpath text NOT NULL,
                content_hash text NOT NULL,
                size bigint NOT NULL,
                mtime_ns bigint NOT NULL,
                chunk_count integer NOT NULL,
                error text,  -- why the file could not be indexed; it has no chunks then
                indexed_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE TABLE IF NOT EXISTS {tables.chunks} (
                id bigserial PRIMARY KEY,
                filename text NOT NULL REFERENCES {tables.files} (filename) ON DELETE CASCADE,
                chunk_index integer NOT NULL,
                start_line integer NOT NULL,
                end_line integer NOT NULL,
                chunk_text text NOT NULL,
                embedding {vector_type}({spec.dimension}) NOT NULL,
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
            CREATE INDEX IF NOT EXISTS {tables.prefix}__chunks_filename ON {tables.chunks} (filename);
            CREATE INDEX IF NOT EXISTS {tables.prefix}__chunks_filters ON {tables.chunks} (kind, status, recorded_on);
            -- The lexical index: one row per (term, chunk), read by term for BM25 (see references/schema.md).
            CREATE TABLE IF NOT EXISTS {tables.postings} (
                term text NOT NULL,
                chunk_id bigint NOT NULL,
                tf integer NOT NULL,
                dl integer NOT NULL
            );
            CREATE INDEX IF NOT EXISTS {tables.prefix}__postings_term ON {tables.postings} (term)
                INCLUDE (chunk_id, tf, dl);
            CREATE INDEX IF NOT EXISTS {tables.prefix}__postings_chunk ON {tables.postings} (chunk_id);
            CREATE TABLE IF NOT EXISTS {tables.terms} (term text PRIMARY KEY, df integer NOT NULL);
            CREATE TABLE IF NOT EXISTS {CACHE_TABLE} (
                model text NOT NULL,
                text_hash text NOT NULL,
                embedding vector NOT NULL,
                PRIMARY KEY (model, text_hash)
            );
        """)
        meta = {
            "provider": spec.provider, "model": spec.model, "dimension": str(spec.dimension),
            "chunker_version": CHUNKER_VERSION, "tokenizer_version": TOKENIZER_VERSION,
            "schema_version": SCHEMA_VERSION, "memories_dir": str(memories_root),
        }
        conn.cursor().executemany(
            f"INSERT INTO {tables.meta} (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
            list(meta.items()),
        )


def drop_schema(conn, tables: ManagedTables) -> None:
    with conn.transaction():
        for table in (tables.postings, tables.chunks, tables.files, tables.terms, tables.meta):
            conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")


def write_meta(conn, tables: ManagedTables, values: dict[str, str]) -> None:
    conn.cursor().executemany(
        f"INSERT INTO {tables.meta} (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        list(values.items()),
    )


def indexed_files(conn, tables: ManagedTables) -> dict[str, tuple[str, int, int]]:
    """filename -> (content hash, size, mtime_ns) of every indexed file."""
    rows = conn.execute(f"SELECT filename, content_hash, size, mtime_ns FROM {tables.files}").fetchall()
    return {row[0]: (row[1], row[2], row[3]) for row in rows}


def cached_embeddings(conn, spec: ModelSpec, text_hashes: list[str]) -> dict[str, str]:
    """text hash -> embedding (pgvector text) for the hashes already embedded by this model."""
    if not text_hashes:
        return {}
    rows = conn.execute(
        f"SELECT text_hash, embedding::text FROM {CACHE_TABLE} WHERE model = %s AND text_hash = ANY(%s)",
        (spec.key, text_hashes),
    ).fetchall()
    return dict(rows)


def cache_embeddings(conn, spec: ModelSpec, vectors: dict[str, str]) -> None:
    if vectors:
        conn.cursor().executemany(
            f"INSERT INTO {CACHE_TABLE} (model, text_hash, embedding) VALUES (%s, %s, %s::vector) "
            "ON CONFLICT DO NOTHING",
            [(spec.key, text_hash, vector) for text_hash, vector in vectors.items()],
        )


@dataclass
class ChunkRow:
    chunk_index: int
    start_line: int
    end_line: int
    chunk_text: str
    embedding: str  # pgvector text
    terms: dict[str, int]


@dataclass
class FileRow:
    filename: str
    relpath: str
    content_hash: str
    size: int
    mtime_ns: int
    kind: str | None
    status: str
    title: str
    tags: list[str]
    project: str | None
    recorded_on: object
    recorded_time: str | None
    frontmatter: dict


def replace_file(conn, tables: ManagedTables, file: FileRow, chunks: list[ChunkRow]) -> None:
    """Swap one file's rows for new ones in a single transaction: readers see old or new, never a mix."""
    with conn.transaction():
        _forget_file(conn, tables, file.filename)
        conn.execute(
            f"INSERT INTO {tables.files} (filename, relpath, content_hash, size, mtime_ns, chunk_count, indexed_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, now()) ON CONFLICT (filename) DO UPDATE SET "
            "relpath = EXCLUDED.relpath, content_hash = EXCLUDED.content_hash, size = EXCLUDED.size, "
            "mtime_ns = EXCLUDED.mtime_ns, chunk_count = EXCLUDED.chunk_count, error = NULL, indexed_at = now()",
            (file.filename, file.relpath, file.content_hash, file.size, file.mtime_ns, len(chunks)),
        )
        if not chunks:
            return
        ids = [row[0] for row in conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            (tables.chunks, len(chunks))).fetchall()]
        frontmatter = json.dumps(file.frontmatter, ensure_ascii=False)
        conn.cursor().executemany(
            f"INSERT INTO {tables.chunks} (id, filename, chunk_index, start_line, end_line, chunk_text, embedding, "
            "term_count, kind, status, title, tags, project, recorded_on, recorded_time, frontmatter) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s::vector, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
            [(chunk_id, file.filename, chunk.chunk_index, chunk.start_line, chunk.end_line, chunk.chunk_text,
              chunk.embedding, sum(chunk.terms.values()), file.kind, file.status, file.title, file.tags,
              file.project, file.recorded_on, file.recorded_time, frontmatter)
             for chunk_id, chunk in zip(ids, chunks)],
        )
        with conn.cursor().copy(f"COPY {tables.postings} (term, chunk_id, tf, dl) FROM STDIN") as copy:
            for chunk_id, chunk in zip(ids, chunks):
                length = sum(chunk.terms.values())
                for term, count in chunk.terms.items():
                    copy.write_row((term, chunk_id, count, length))
        conn.execute(
            f"INSERT INTO {tables.terms} (term, df) SELECT term, count(*) FROM {tables.postings} "
            f"WHERE chunk_id = ANY(%s) GROUP BY term "
            f"ON CONFLICT (term) DO UPDATE SET df = {tables.terms}.df + EXCLUDED.df",
            (ids,),
        )


def mark_unreadable(conn, tables: ManagedTables, filename: str, relpath: str, size: int, mtime_ns: int,
                    reason: str) -> None:
    """Remember a file that cannot be indexed, dropping what it held, until it changes again."""
    with conn.transaction():
        _forget_file(conn, tables, filename)
        conn.execute(
            f"INSERT INTO {tables.files} (filename, relpath, content_hash, size, mtime_ns, chunk_count, error) "
            "VALUES (%s, %s, '', %s, %s, 0, %s) ON CONFLICT (filename) DO UPDATE SET relpath = EXCLUDED.relpath, "
            "content_hash = '', size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns, chunk_count = 0, "
            "error = EXCLUDED.error, indexed_at = now()",
            (filename, relpath, size, mtime_ns, reason),
        )


def unreadable_files(conn, tables: ManagedTables) -> list[tuple[str, str]]:
    """(relpath, reason) of the files the last runs could not index."""
    return conn.execute(
        f"SELECT relpath, error FROM {tables.files} WHERE error IS NOT NULL ORDER BY relpath").fetchall()


def touch_file(conn, tables: ManagedTables, filename: str, size: int, mtime_ns: int) -> None:
    """Record a new mtime for a file whose content did not change."""
    conn.execute(f"UPDATE {tables.files} SET size = %s, mtime_ns = %s WHERE filename = %s", (size, mtime_ns, filename))


def delete_files(conn, tables: ManagedTables, filenames: list[str]) -> None:
    for filename in filenames:
        with conn.transaction():
            _forget_file(conn, tables, filename)
            conn.execute(f"DELETE FROM {tables.files} WHERE filename = %s", (filename,))


def _forget_file(conn, tables: ManagedTables, filename: str) -> None:
    """Remove a file's chunks and postings and take its terms out of the document frequencies."""
    ids = [row[0] for row in conn.execute(f"SELECT id FROM {tables.chunks} WHERE filename = %s",
                                          (filename,)).fetchall()]
    if not ids:
        return
    conn.execute(
        f"UPDATE {tables.terms} t SET df = t.df - old.n FROM (SELECT term, count(*) AS n FROM {tables.postings} "
        "WHERE chunk_id = ANY(%s) GROUP BY term) old WHERE t.term = old.term",
        (ids,),
    )
    conn.execute(f"DELETE FROM {tables.postings} WHERE chunk_id = ANY(%s)", (ids,))
    conn.execute(f"DELETE FROM {tables.chunks} WHERE id = ANY(%s)", (ids,))


def refresh_statistics(conn, tables: ManagedTables) -> dict[str, str]:
    """Chunk count and mean chunk length for BM25; drop terms no chunk holds any more."""
    conn.execute(f"DELETE FROM {tables.terms} WHERE df <= 0")
    chunks, average = conn.execute(
        f"SELECT count(*), coalesce(avg(term_count), 0) FROM {tables.chunks}").fetchone()
    values = {"chunks": str(chunks), "average_terms": f"{float(average):.4f}"}
    write_meta(conn, tables, values)
    return values


def vacuum(conn, tables: ManagedTables) -> None:
    """Mark new rows all-visible (the keyword leg reads postings from the index alone) and refresh
    the planner's statistics; only pages changed since the last run are visited."""
    conn.execute(f"VACUUM (ANALYZE) {tables.postings}, {tables.chunks}")


def lock_key(tables: ManagedTables) -> int:
    """A stable 63-bit advisory lock key for this index."""
    return int.from_bytes(hashlib.sha1(tables.prefix.encode()).digest()[:8], "big") >> 1
