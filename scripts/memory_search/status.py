"""What the index holds, and how far it is behind the memories directory (stats.py)."""

from __future__ import annotations

from . import store
from .database import connect
from .errors import IndexMissing
from .memories import require_directory


def index_status(settings) -> dict:
    from .indexer import Indexer

    root = require_directory(settings.memories_root)
    tables = store.ManagedTables(store.managed_prefix(root))
    with connect(settings, read_only=True) as conn:
        meta = store.read_meta(conn, tables)
        if not meta:
            raise IndexMissing(f"no index of {root} in this database: build it with `scripts/index.py`")
        groups = conn.execute(
            f"SELECT coalesce(kind, 'other'), status, count(DISTINCT filename), count(*) FROM {tables.chunks} "
            "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
        files = conn.execute(f"SELECT count(*) FROM {tables.files}").fetchone()[0]
        size = conn.execute(
            "SELECT sum(pg_total_relation_size(to_regclass(name))) FROM unnest(%s::text[]) AS name",
            ([tables.chunks, tables.files, tables.postings, tables.terms, tables.meta],)).fetchone()[0]
        plan = Indexer(settings).plan(conn)
        unreadable = store.unreadable_files(conn, tables)
    return {
        "memories_dir": str(root),
        "table": tables.chunks,
        "files": files,
        "chunks": sum(row[3] for row in groups),
        "by_kind_and_status": [{"kind": kind, "status": status, "files": count_files, "chunks": count_chunks}
                               for kind, status, count_files, count_chunks in groups],
        "model": {"provider": meta["provider"], "model": meta["model"], "dimension": int(meta["dimension"])},
        "index_bytes": int(size or 0),
        "last_indexed_at": meta.get("last_indexed_at"),
        "pending": {"new": len(plan.new), "changed": len(plan.changed), "deleted": len(plan.deleted)},
        "unreadable": [{"path": path, "reason": reason} for path, reason in unreadable]
                      + [{"path": skipped.relpath, "reason": skipped.reason} for skipped in plan.bad],
    }


def status_text(status: dict) -> str:
    lines = [
        f"index of {status['memories_dir']} ({status['table']})",
        f"  {status['files']} files, {status['chunks']} chunks, {status['index_bytes'] / 1048576:.1f} MB",
        f"  model {status['model']['provider']}/{status['model']['model']} ({status['model']['dimension']} dimensions)",
        f"  last indexed {status['last_indexed_at'] or 'never'}",
    ]
    for group in status["by_kind_and_status"]:
        lines.append(f"  {group['kind']:<8} {group['status']:<11} {group['files']:>6} files "
                     f"{group['chunks']:>7} chunks")
    pending = status["pending"]
    behind = pending["new"] + pending["changed"] + pending["deleted"]
    lines.append(f"  since then: {pending['new']} new, {pending['changed']} changed, {pending['deleted']} deleted"
                 + ("; run index.py to catch up" if behind else "; up to date"))
    for item in status["unreadable"][:10]:
        lines.append(f"  unreadable {item['path']}: {item['reason']}")
    if len(status["unreadable"]) > 10:
        lines.append(f"  ... and {len(status['unreadable']) - 10} more unreadable (see --json)")
    return "\n".join(lines)
