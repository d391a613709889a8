"""Reading the schema: where an index lives, which layout it has, and what its meta table says.

Two layouts are found by introspection:
- `cocoindex`: the table the original's CocoIndex flow writes (id, filename, chunk_text, embedding);
- `managed`: this project's tables `<prefix>__chunks|__files|__postings|__packed|__packed_dead|__terms|__meta`,
  the same columns and more (written by writer.py), and `<prefix>__links` (links.py).
"""

from __future__ import annotations

import hashlib
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psycopg import sql

from ..embedding import ModelSpec
from ..errors import IndexMismatch, IndexMissing, UsageError, quoted
from ..hints import command
from ..text.chunking import CHUNKER_VERSION
from ..text.tokens import TOKENIZER_VERSION

# 3: the links table; 4: vectors stored as halfvec, half the size of the graph; 5: postings packed by term;
# 6: a packed chunk's terms kept only once it is deleted (tokenized again from its text)
SCHEMA_VERSION = "6"
# Indexes of these versions are searched as they are, and upgraded in place by the next index run.
UPGRADABLE_SCHEMAS = ("3", "4", "5")
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


def identifier(name: str) -> sql.Identifier:
    """A possibly schema-qualified table name as an SQL identifier."""
    return sql.Identifier(*name.split("."))


@dataclass(frozen=True)
class ManagedTables:
    """The names of one managed index's tables."""

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
    def packed(self) -> str:
        return f"{self.prefix}__packed"

    @property
    def packed_dead(self) -> str:
        return f"{self.prefix}__packed_dead"

    @property
    def meta(self) -> str:
        return f"{self.prefix}__meta"

    @property
    def links(self) -> str:
        return f"{self.prefix}__links"

    @property
    def all(self) -> tuple[str, ...]:
        return (self.chunks, self.files, self.postings, self.packed, self.packed_dead, self.terms, self.meta,
                self.links)

    @property
    def schema5_packed_chunks(self) -> str:
        """Schema 5's terms of every packed chunk, replaced by packed_dead (packing.create_tables)."""
        return f"{self.prefix}__packed_chunks"

    @property
    def retired(self) -> tuple[str, ...]:
        """Tables of an earlier schema that its upgrade replaced, dropped with the index where still there."""
        return (self.schema5_packed_chunks,)

    def sql(self, name: str) -> sql.Identifier:
        """sql.Identifier of one table: tables.sql("chunks")."""
        return sql.Identifier(getattr(self, name))

    @classmethod
    def of(cls, memories_root: Path) -> "ManagedTables":
        return cls(managed_prefix(memories_root))

    def on(self, conn) -> ManagedIndex:
        """These tables on a connection."""
        return ManagedIndex(conn, self)


@dataclass(frozen=True)
class ManagedIndex:
    """One managed index on a connection: its tables, and the connection that reads and writes them. What the
    storage functions of an index take (writer.py, links.py, packing.py)."""

    conn: Any  # a psycopg connection
    tables: ManagedTables


@dataclass
class IndexInfo:
    """What introspection found about the table a search reads."""

    table: str
    vector_type: str  # vector | halfvec
    dimension: int
    has_hnsw: bool = False
    tables: ManagedTables | None = None  # set for a managed index
    meta: dict | None = None  # a managed index's meta table

    @property
    def spec(self) -> ModelSpec | None:
        """The model a managed index recorded."""
        if not self.meta:
            return None
        return ModelSpec(self.meta["provider"], self.meta["model"], int(self.meta["dimension"]))


def columns_of(conn, table: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
        (table,),
    ).fetchall()
    return dict(rows)


def find_index(conn, memories_root: Path, table: str | None = None) -> IndexInfo:
    """Find and describe the index for a memories directory: an explicit table, the managed one, or CocoIndex's."""
    if table is not None:
        if not _IDENTIFIER.match(table):
            raise UsageError(f"invalid table name {quoted(table)}: use letters, digits and _ (schema.table allowed)")
        candidates = [table, table + "__chunks"]  # a managed index may be named by its prefix
    else:
        candidates = [ManagedTables.of(memories_root).chunks] + cocoindex_tables(memories_root)
    for name in candidates:
        columns = columns_of(conn, name)
        if columns:
            return describe(conn, name, columns)
    if table is not None:
        raise IndexMissing(
            f"table {quoted(table)} does not exist: check the table name (MEMORIES_TABLE), or build the index with "
            f"`{command('index')}`")
    raise no_index(memories_root, " (or set MEMORIES_TABLE to an existing CocoIndex table)")


def no_index(memories_root: Path, more: str = "") -> IndexMissing:
    return IndexMissing(f"no index of {memories_root} in this database: build it with "
                        f"`{command('index', '--memories', str(memories_root))}`{more}")


def describe(conn, name: str, columns: dict[str, str]) -> IndexInfo:
    missing = {"filename", "chunk_text", "embedding"} - set(columns)
    if missing:
        raise IndexMissing(f"table {name} lacks the column(s) {', '.join(sorted(missing))}: it is not a memories index")
    match = re.match(r"(vector|halfvec)\((\d+)\)", columns["embedding"])
    if not match:
        raise IndexMissing(f"table {name}'s embedding column is {columns['embedding']}, not vector(N) or halfvec(N)")
    info = IndexInfo(name, match.group(1), int(match.group(2)))
    if name.endswith("__chunks") and "term_count" in columns:
        tables = ManagedTables(name.removesuffix("__chunks"))
        meta = read_meta(tables.on(conn))
        if meta:
            info.tables, info.meta = tables, meta
    info.has_hnsw = bool(conn.execute(
        "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
        "WHERE i.indrelid = to_regclass(%s) AND am.amname = 'hnsw'", (name,)).fetchone())
    return info


# What each part of an index is made of: its tables (with their TOAST) and their indexes, by what they serve.
PART_OF_TABLE = {"chunks": "records", "postings": "keywords", "packed": "keywords", "packed_dead": "keywords",
                 "packed_chunks": "keywords", "terms": "keywords"}


def index_parts(index: ManagedIndex) -> dict[str, int]:
    """Bytes of each part of the index: records (the chunks' text, vectors and fields), vector graphs (every
    HNSW graph), keywords (postings, document frequencies and their b-trees), other (files, links, the
    chunks' other b-trees)."""
    conn, tables = index.conn, index.tables
    parts = dict.fromkeys(("records", "vector_graphs", "keywords", "other"), 0)
    for table in tables.all + tables.retired:
        part = PART_OF_TABLE.get(table.removeprefix(tables.prefix + "__"), "other")
        parts[part] += conn.execute("SELECT coalesce(pg_table_size(to_regclass(%s)), 0)", (table,)).fetchone()[0]
        for method, size in conn.execute(
                "SELECT am.amname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = to_regclass(%s)", (table,)).fetchall():
            parts["vector_graphs" if method == "hnsw" else "keywords" if part == "keywords" else "other"] += size
    return parts


def read_meta(index: ManagedIndex) -> dict[str, str]:
    conn, tables = index.conn, index.tables
    if not columns_of(conn, tables.meta):
        return {}
    return dict(conn.execute(sql.SQL("SELECT key, value FROM {}").format(tables.sql("meta"))).fetchall())


def managed_index(conn, memories_root: Path) -> tuple[ManagedTables, dict[str, str]]:
    """The managed index of `memories_root`: its tables and its meta; IndexMissing when it was never built."""
    tables = ManagedTables.of(memories_root)
    meta = read_meta(tables.on(conn))
    if not meta:
        raise no_index(memories_root)
    return tables, meta


def check_versions(meta: dict, root: Path, chunker: bool = True) -> None:
    """Refuse an index built by another tokenizer or schema version (and, with `chunker`, chunker version).
    Searches read an index of an earlier chunker as it is: its chunks are whole text with their lines, and
    the next index.py run chunks it anew."""
    versions = [("tokenizer_version", TOKENIZER_VERSION), ("schema_version", SCHEMA_VERSION)]
    for key, version in versions + ([("chunker_version", CHUNKER_VERSION)] if chunker else []):
        if key == "schema_version" and meta and meta.get(key) in UPGRADABLE_SCHEMAS:
            continue
        if meta and _newer(meta.get(key), version):  # another memory-search, newer, upgraded it (a team's)
            raise IndexMismatch(
                f"the index of {root} was built by a newer memory-search ({key.replace('_', ' ')} "
                f"{meta.get(key)}, this one reads {version}): update memory-search here; a rebuild by this one "
                "would undo the other's")
        if meta and meta.get(key) != version:
            raise IndexMismatch(
                f"the index of {root} was built by {key.replace('_', ' ')} {meta.get(key)}, "
                f"this is {version}: run `{command('index', '--rebuild')}` (cached embeddings are reused)"
            )


def _newer(recorded: str | None, ours: str) -> bool:
    return bool(recorded and recorded.isdigit() and ours.isdigit() and int(recorded) > int(ours))


def chunked_by_another_version(meta: dict) -> bool:
    return bool(meta) and meta.get("chunker_version") != CHUNKER_VERSION
