"""What the index holds, and how far it is behind the memories directory (stats.py)."""

from __future__ import annotations

from psycopg import sql

from . import run_progress
from ..storage.writer import lock_key, unreadable_files
from ..search.links import counts as link_counts
from ..storage.schema import ManagedTables, no_index, read_meta

LISTED = 20  # the stale files named, of each sort; the counts are in `pending`


def index_status(conn, settings) -> dict:
    from .indexer import Indexer

    root = settings.memories_root
    tables = ManagedTables.of(root)
    meta = read_meta(conn, tables)
    if not meta:
        raise no_index(root)
    groups = conn.execute(sql.SQL(
        "SELECT coalesce(kind, 'other'), status, count(DISTINCT filename), count(*), "
        "count(*) FILTER (WHERE embedding IS NULL) FROM {} GROUP BY 1, 2 ORDER BY 1, 2").format(
        tables.sql("chunks"))).fetchall()
    files = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(tables.sql("files"))).fetchone()[0]
    size = conn.execute("SELECT sum(pg_total_relation_size(to_regclass(name))) FROM unnest(%s::text[]) AS name",
                        (list(tables.all),)).fetchone()[0]
    plan = Indexer(settings).plan(conn) if not settings.remote else None  # the files are on another machine
    unreadable = unreadable_files(conn, tables)
    waiting = sum(row[4] for row in groups)
    building = indexer_running(conn, tables)
    return {
        "memories_dir": str(root),
        "table": tables.chunks,
        "files": files,
        "chunks": sum(row[3] for row in groups),
        "embedded": sum(row[3] for row in groups) - waiting,
        # Chunks searchable by keyword whose embedding a run has yet to compute (keyword-first indexing).
        "waiting_for_embeddings": waiting,
        "by_kind_and_status": [{"kind": kind, "status": status, "files": count_files, "chunks": count_chunks}
                               for kind, status, count_files, count_chunks, _ in groups],
        "model": {"provider": meta["provider"], "model": meta["model"], "dimension": int(meta["dimension"])},
        "index_bytes": int(size or 0),
        "last_indexed_at": meta.get("last_indexed_at"),
        "building": building,
        "progress": run_progress.read(meta) if building else None,
        "links": link_counts(conn, tables),
        "pending": {"new": len(plan.new), "changed": len(plan.changed), "deleted": len(plan.deleted)} if plan
        else None,
        "stale": {"new": [item.relpath for item in plan.new[:LISTED]],
                  "changed": [item.relpath for item in plan.changed[:LISTED]],
                  "deleted": [_relative(path, root) for path in plan.deleted[:LISTED]]} if plan else None,
        "unreadable": [{"path": path, "reason": reason} for path, reason in unreadable]
                      + [{"path": skipped.relpath, "reason": skipped.reason} for skipped in (plan.bad if plan else [])]
                      + [{"path": path, "reason": f"{reason}; kept in the index as it was"}
                         for path, reason in (plan.unreachable if plan else [])
                         if not any(skipped.relpath == path for skipped in plan.bad)],
    }


def index_progress(conn, settings) -> dict:
    """Whether an indexer is at work on the index now, how far it got when it is (run_progress.py), and when
    the last run ended: a cheap look, for polling while a run goes on."""
    tables = ManagedTables.of(settings.memories_root)
    building = indexer_running(conn, tables)
    meta = read_meta(conn, tables)
    return {"building": building, "progress": run_progress.read(meta) if building else None,
            "last_indexed_at": meta.get("last_indexed_at")}


def _relative(path: str, root) -> str:
    import os

    return os.path.relpath(path, root)


def indexer_running(conn, tables: ManagedTables) -> bool:
    """Whether an indexer holds this index's advisory lock right now (read from pg_locks; taking no lock)."""
    key = lock_key(tables)
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
        "AND classid::bigint = %s AND objid::bigint = %s AND database = (SELECT oid FROM pg_database "
        "WHERE datname = current_database()))", (key >> 32, key & 0xFFFFFFFF)).fetchone()[0]
