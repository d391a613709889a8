"""What the index holds, and how far it is behind the memories directory (stats.py)."""

from __future__ import annotations

from psycopg import sql

from ..storage.links import counts as link_counts
from ..storage.schema import ManagedIndex, ManagedTables, index_parts, managed_index, read_meta
from ..storage.writer import hnsw_graph_bytes, lock_key, server_on_this_machine, unreadable_files
from . import run_progress

LISTED = 20  # the stale files named, of each sort; the counts are in `pending`


def index_status(conn, settings) -> dict:
    from .indexer import Indexer

    root = settings.memories_root
    tables, meta = managed_index(conn, root)
    index = tables.on(conn)
    groups = conn.execute(sql.SQL(
        "SELECT coalesce(kind, 'other'), status, count(DISTINCT filename), count(*), "
        "count(*) FILTER (WHERE embedding IS NULL) FROM {} GROUP BY 1, 2 ORDER BY 1, 2").format(
        tables.sql("chunks"))).fetchall()
    # A file index.py skipped (binary, not UTF-8, broken frontmatter) has a row that remembers why; it is no
    # memory, so it is counted apart, as the per-kind rows, --verify and the graph leave it out.
    files, skipped = conn.execute(sql.SQL(
        "SELECT count(*) FILTER (WHERE error IS NULL), count(*) FILTER (WHERE error IS NOT NULL) FROM {}").format(
        tables.sql("files"))).fetchone()
    parts = index_parts(index)
    plan = Indexer(settings).plan(conn) if not settings.remote else None  # the files are on another machine
    bad, unreachable = (plan.bad, plan.unreachable) if plan else ([], [])
    unreadable = unreadable_files(index)
    waiting = sum(row[4] for row in groups)
    building = indexer_running(index)
    return {
        "memories_dir": str(root),
        "table": tables.chunks,
        "files": files,
        "skipped": skipped,  # files index.py could not index, each in `unreadable` with its reason
        "chunks": sum(row[3] for row in groups),
        "embedded": sum(row[3] for row in groups) - waiting,
        # Chunks searchable by keyword whose embedding a run has yet to compute (keyword-first indexing).
        "waiting_for_embeddings": waiting,
        "by_kind_and_status": [{"kind": kind, "status": status, "files": count_files, "chunks": count_chunks}
                               for kind, status, count_files, count_chunks, _ in groups],
        "model": {"provider": meta["provider"], "model": meta["model"], "dimension": int(meta["dimension"])},
        "index_bytes": sum(parts.values()),
        "index_parts": parts,
        "last_indexed_at": meta.get("last_indexed_at"),
        "building": building,
        "progress": run_progress.read(meta) if building else None,
        "links": link_counts(index),
        "pending": {"new": len(plan.new), "changed": len(plan.changed), "deleted": len(plan.deleted)} if plan
        else None,
        "stale": {"new": [item.relpath for item in plan.new[:LISTED]],
                  "changed": [item.relpath for item in plan.changed[:LISTED]],
                  "deleted": [_relative(path, root) for path in plan.deleted[:LISTED]]} if plan else None,
        "server": server_shortfalls(index, sum(row[3] for row in groups) - waiting, int(meta["dimension"]),
                                    configured=bool(settings.database_url)),
        "unreadable": [{"path": path, "reason": reason} for path, reason in unreadable]
                      + [{"path": skipped.relpath, "reason": skipped.reason} for skipped in bad]
                      + [{"path": path, "reason": f"{reason}; kept in the index as it was"}
                         for path, reason in unreachable if not any(skipped.relpath == path for skipped in bad)],
    }


def index_progress(conn, settings) -> dict:
    """Whether an indexer is at work on the index now, how far it got when it is (run_progress.py), and when
    the last run ended: a cheap look, for polling while a run goes on."""
    index = ManagedTables.of(settings.memories_root).on(conn)
    building = indexer_running(index)
    meta = read_meta(index)
    return {"building": building, "progress": run_progress.read(meta) if building else None,
            "last_indexed_at": meta.get("last_indexed_at")}


def _relative(path: str, root) -> str:
    from ..directory.sources import shown_path

    return shown_path(path, root)


def indexer_running(index: ManagedIndex) -> bool:
    """Whether an indexer holds this index's advisory lock right now (read from pg_locks; taking no lock)."""
    conn, tables = index.conn, index.tables
    key = lock_key(tables)
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
        "AND classid::bigint = %s AND objid::bigint = %s AND database = (SELECT oid FROM pg_database "
        "WHERE datname = current_database()))", (key >> 32, key & 0xFFFFFFFF)).fetchone()[0]


def server_shortfalls(index: ManagedIndex, embedded: int, dimension: int, configured: bool) -> list[str]:
    """What the PostgreSQL server lacks for an index of this size, each with its consequence and the setting
    that mends it: pgvector without iterative index scans; on a configured server elsewhere (whose memory this
    machine cannot size) maintenance_work_mem below the vector graph and no parallel maintenance workers; and
    a vector index larger than shared_buffers."""
    conn, tables = index.conn, index.tables
    from .pipeline import HNSW_MIN_CHUNKS

    settings = dict(conn.execute(
        "SELECT name, setting::bigint * CASE unit WHEN '8kB' THEN 8192 WHEN 'kB' THEN 1024 ELSE 1 END "
        "FROM pg_settings WHERE name IN ('maintenance_work_mem', 'shared_buffers', "
        "'max_parallel_maintenance_workers')").fetchall())
    notes = []
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if version and tuple(int(part) for part in version[0].split(".")[:2] if part.isdigit()) < (0, 8):
        notes.append(f"pgvector {version[0]} has no iterative index scans: a filtered search over the vector "
                     "index may return fewer records than asked; update the extension to 0.8 or later "
                     "(ALTER EXTENSION vector UPDATE)")
    if embedded < HNSW_MIN_CHUNKS:
        return notes
    stored = "halfvec" if "halfvec" in (conn.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attname = 'embedding'", (tables.chunks,)).fetchone() or ("",))[0] else "vector"
    graph = hnsw_graph_bytes(embedded, stored, dimension)
    if configured and not server_on_this_machine(conn):
        if settings["maintenance_work_mem"] < graph:
            notes.append(f"maintenance_work_mem is {_mb(settings['maintenance_work_mem'])}, the vector graph of "
                         f"{embedded:,} chunks takes about {_mb(graph)}: its build spills to disk and runs several "
                         f"times slower; set maintenance_work_mem to {_mb(graph * 1.25)} on the server")
        if settings["max_parallel_maintenance_workers"] == 0:
            notes.append("max_parallel_maintenance_workers is 0: the vector index is built on one core; set it "
                         "to the server's cores but one")
    # Every vector graph of the index: the graph of all, and those of each kind of record a large index has.
    hnsw = index_parts(index)["vector_graphs"]
    if configured and hnsw and settings["shared_buffers"] < hnsw:
        notes.append(f"shared_buffers is {_mb(settings['shared_buffers'])}, the vector index {_mb(hnsw)}: "
                     "semantic searches read it from the operating system's cache or the disk; set shared_buffers "
                     f"to {_mb(hnsw * 1.25)} or more on the server")
    return notes


def _mb(size: float) -> str:
    return f"{size / 1048576:,.0f} MB"
