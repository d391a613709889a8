"""The links table: each memory's links stored per source file in the transaction that writes its chunks, and
resolved when read (text/links.py: how links are written and extracted; the rules of resolution are there)."""

from __future__ import annotations

from psycopg import sql

from ..text.links import Edge, Link
from .schema import ManagedIndex, ManagedTables

# --- the links table -------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {links} (
    source text NOT NULL REFERENCES {files} (filename) ON DELETE CASCADE,
    kind text NOT NULL,
    line integer NOT NULL,
    target text NOT NULL,
    target_path text,
    target_name text NOT NULL
);
CREATE INDEX IF NOT EXISTS {links_source} ON {links} (source);
CREATE INDEX IF NOT EXISTS {links_path} ON {links} (target_path);
CREATE INDEX IF NOT EXISTS {links_name} ON {links} (target_name);
CREATE INDEX IF NOT EXISTS {files_lower_relpath} ON {files} (lower(relpath));
"""


def _names(tables: ManagedTables) -> dict:
    return {"links": tables.sql("links"), "files": tables.sql("files"),
            **{name: sql.Identifier(f"{tables.prefix}__{name}")
               for name in ("links_source", "links_path", "links_name", "files_lower_relpath")}}


def create_table(index: ManagedIndex) -> None:
    conn, tables = index.conn, index.tables
    conn.execute(sql.SQL(_SCHEMA).format(**_names(tables)))


def forget_links(index: ManagedIndex, sources: list[str]) -> None:
    """Drop the links of these files; run inside the transaction that replaces their chunks."""
    conn, tables = index.conn, index.tables
    conn.execute(sql.SQL("DELETE FROM {} WHERE source = ANY(%s)").format(tables.sql("links")), (sources,))


def add_links(index: ManagedIndex, links: list[tuple[str, Link]]) -> None:
    """(source file, link) pairs, after forget_links in the same transaction."""
    conn, tables = index.conn, index.tables
    if links:
        with conn.cursor().copy(sql.SQL("COPY {} (source, kind, line, target, target_path, target_name) FROM STDIN")
                                .format(tables.sql("links"))) as copy:
            for source, link in links:
                copy.write_row((source, link.kind, link.line, link.target, link.target_path, link.target_name))


# --- reading ---------------------------------------------------------------------------------------

# One row per link with its target file: by path first, then by a file name only one file has.
_RESOLVED = """
WITH readable AS (
    SELECT filename, lower(relpath) AS path,
           lower(regexp_replace(regexp_replace(relpath, '^.*/', ''), '\\.md$', '', 'i')) AS name
    FROM {files} WHERE error IS NULL
), names AS (
    SELECT name, min(filename) AS filename, count(*) AS n FROM readable GROUP BY name
)
SELECT l.source, coalesce(by_path.filename, CASE WHEN by_name.n = 1 THEN by_name.filename END) AS target_file,
       l.kind, l.line, l.target, (by_path.filename IS NULL AND coalesce(by_name.n, 0) > 1) AS ambiguous
FROM {links} l
LEFT JOIN readable by_path ON by_path.path = l.target_path
LEFT JOIN names by_name ON by_name.name = l.target_name
"""


def _resolved(tables: ManagedTables) -> sql.Composed:
    return sql.SQL(_RESOLVED).format(files=tables.sql("files"), links=tables.sql("links"))


def exists(index: ManagedIndex) -> bool:
    conn, tables = index.conn, index.tables
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (tables.links,)).fetchone()[0]


def edges(index: ManagedIndex, source: str | None = None, target: str | None = None) -> list[Edge]:
    """Resolved links, all of them or those from `source` / to `target` (absolute paths), in file order."""
    conn, tables = index.conn, index.tables
    if not exists(index):
        return []
    clauses, params = [], []
    if source is not None:
        clauses.append(sql.SQL("source = %s"))
        params.append(source)
    if target is not None:
        clauses.append(sql.SQL("target_file = %s"))
        params.append(target)
    where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")
    query = sql.SQL("SELECT * FROM ({}) resolved{} ORDER BY source, line, target").format(
        _resolved(tables), where)
    return [Edge(*row) for row in conn.execute(query, params).fetchall()]


def counts(index: ManagedIndex) -> dict:
    """How many links the index holds, how many resolve, and why the others do not."""
    conn, tables = index.conn, index.tables
    if not exists(index):
        return {"links": 0, "resolved": 0, "unresolved": 0, "ambiguous": 0, "by_kind": {}}
    rows = conn.execute(sql.SQL(
        "SELECT kind, count(*), count(target_file), count(*) FILTER (WHERE ambiguous) FROM ({}) resolved "
        "GROUP BY kind ORDER BY kind").format(_resolved(tables))).fetchall()
    total = sum(row[1] for row in rows)
    resolved = sum(row[2] for row in rows)
    return {"links": total, "resolved": resolved, "unresolved": total - resolved,
            "ambiguous": sum(row[3] for row in rows), "by_kind": {row[0]: row[1] for row in rows}}
