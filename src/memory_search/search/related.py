"""What a memory is connected to: the memories it links to, those linking to it, and the nearest in meaning;
and the link graph of every indexed memory."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from psycopg import sql

from ..directory.records import Record, make_record
from ..storage.links import counts, edges
from ..storage.schema import ManagedIndex, ManagedTables, managed_index
from .filters import Filters, matches


@dataclass
class Related:
    """One connected memory and why: `links to`, `linked from`, `similar 0.83`."""

    record: Record
    links_to: bool = False
    linked_from: bool = False
    similarity: float | None = None
    lines: list[int] = field(default_factory=list)  # where the memory links to it, or it to the memory

    @property
    def reasons(self) -> list[str]:
        reasons = []
        if self.links_to:
            reasons.append("links to")
        if self.linked_from:
            reasons.append("linked from")
        if self.similarity is not None:
            reasons.append(f"similar {self.similarity:.2f}")
        return reasons


def related(memories, filename: str, top: int = 10, filters: Filters | None = None) -> list[Related]:
    """Linked memories first (both ways, then one way), then by similarity; each passes the filters."""
    filters = filters or Filters()
    index = ManagedTables.of(memories.root).on(memories.connection)
    lines: dict[str, list[int]] = {}  # the memories this one links to: the lines of its links
    for edge in edges(index, source=filename):
        if edge.target_file and edge.target_file != filename:
            lines.setdefault(edge.target_file, []).append(edge.line)
    linked_from = dict.fromkeys(edge.source for edge in edges(index, target=filename)
                                if edge.source != filename)  # the memories that link to this one, in order
    linked = list(dict.fromkeys([*lines, *linked_from]))
    known = indexed_records(index, linked)
    entries: dict[str, Related] = {}
    for path in linked:
        record = known.get(path)
        if record is not None and matches(filters, record):
            entries[path] = Related(record, links_to=path in lines, linked_from=path in linked_from,
                                    lines=lines.get(path, []))
    for hit in memories.similar(filename, top=top + len(entries), filters=filters):
        entry = entries.get(hit.path)
        if entry is None:
            entry = entries[hit.path] = Related(hit.record)
        entry.similarity = float(hit.score)
    ordered = sorted(entries.values(), key=lambda entry: (
        -(entry.links_to + entry.linked_from), -(entry.similarity if entry.similarity is not None else -1.0),
        entry.record.relpath))
    return ordered[:top]


def indexed_records(index: ManagedIndex, filenames: list[str] | None = None) -> dict[str, Record]:
    """The records of indexed files (all readable ones when `filenames` is None), from their first chunk."""
    conn, tables = index.conn, index.tables
    if not filenames and filenames is not None:
        return {}
    where = sql.SQL("f.error IS NULL") + (sql.SQL(" AND f.filename = ANY(%s)") if filenames is not None
                                          else sql.SQL(""))
    rows = conn.execute(sql.SQL(
        "SELECT f.filename, f.relpath, c.kind, c.title, c.status, c.tags, c.project, c.recorded_on, "
        "c.recorded_time, c.frontmatter FROM {files} f LEFT JOIN LATERAL (SELECT * FROM {chunks} c "
        "WHERE c.filename = f.filename ORDER BY c.chunk_index LIMIT 1) c ON true WHERE {where} "
        "ORDER BY f.relpath").format(files=tables.sql("files"), chunks=tables.sql("chunks"), where=where),
        [filenames] if filenames is not None else []).fetchall()
    records = {}
    for filename, relpath, kind, title, status, tags, project, day, clock, frontmatter in rows:
        if title is None:  # a file without chunks (frontmatter only): what its path says
            records[filename] = make_record(filename, relpath, {})
        else:
            records[filename] = Record(filename, relpath, kind, title, status, tuple(tags or ()), project, day,
                                       clock, frontmatter or {})
    return records


def graph(conn, root) -> dict:
    """Nodes (one per indexed memory) and edges (resolved links between two of them), with link counts."""
    tables, _ = managed_index(conn, root)
    index = tables.on(conn)
    records = indexed_records(index)
    found: list[dict] = []
    degree: Counter[str] = Counter()
    for edge in edges(index):
        if edge.target_file in records and edge.source in records and edge.target_file != edge.source:
            found.append({"source": records[edge.source].relpath, "target": records[edge.target_file].relpath,
                          "kind": edge.kind, "line": edge.line})
            degree[edge.source] += 1
            degree[edge.target_file] += 1
    nodes = [{"id": record.relpath, "path": record.path, "title": record.title, "kind": record.kind or "other",
              "status": record.status, "project": record.project, "tags": list(record.tags),
              "date": record.date.isoformat() if record.date else None, "degree": degree[filename]}
             for filename, record in records.items()]
    return {"memories_dir": str(root), "nodes": nodes, "edges": found, "links": counts(index)}
