"""Exporting the indexed chunks for other tools: JSON Lines, JSON or CSV, streamed from a server-side cursor.

Memory stays flat however large the index: rows arrive in batches of FETCH and are written as they come.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from psycopg import sql

from .errors import IndexMissing, MemorySearchError, first_line
from .filters import Filters, sql_conditions
from .schema import ManagedTables, read_meta

FORMATS = ("jsonl", "json", "csv")
FIELDS = ("path", "relpath", "kind", "title", "status", "tags", "project", "date", "chunk_index", "start_line",
          "end_line", "tokens", "content_hash", "text")
FETCH = 1000  # rows per round trip of the server-side cursor


def chunks(conn, root: Path, filters: Filters | None = None, with_vectors: bool = False) -> Iterator[dict]:
    """The chunks of the managed index that pass the filters, in path and chunk order, one dict each."""
    tables = ManagedTables.of(root)
    if not read_meta(conn, tables):
        raise IndexMissing(f"no index of {root} in this database: build it with `scripts/index.py`")
    clauses, params = sql_conditions(filters or Filters())
    where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")
    vector = sql.SQL(", c.embedding::text") if with_vectors else sql.SQL("")
    query = sql.SQL(
        "SELECT c.filename, f.relpath, c.kind, c.title, c.status, c.tags, c.project, c.recorded_on, c.chunk_index, "
        "c.start_line, c.end_line, c.term_count, c.chunk_text{vector} "
        "FROM {chunks} c JOIN {files} f ON f.filename = c.filename{where} ORDER BY f.relpath, c.chunk_index").format(
        vector=vector, chunks=tables.sql("chunks"), files=tables.sql("files"), where=where)
    with conn.transaction():
        with conn.cursor(name="memory_search_export") as cursor:
            cursor.itersize = FETCH
            cursor.execute(query, params)
            for row in cursor:
                item = dict(zip(FIELDS, (*row[:7], row[7].isoformat() if row[7] else None, *row[8:12], None,
                                         row[12])))
                item["tags"] = list(item["tags"] or ())
                item["content_hash"] = hashlib.sha256(item["text"].encode("utf-8")).hexdigest()
                if with_vectors:  # null while the chunk waits for its embedding (keyword-first indexing)
                    item["vector"] = [float(value) for value in row[13].strip("[]").split(",")] if row[13] else None
                yield item


def write(items: Iterator[dict], output_format: str, stream) -> int:
    """Write the items to a text stream in the format; returns how many were written."""
    count = 0
    if output_format == "jsonl":
        for item in items:
            stream.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    elif output_format == "json":
        stream.write("[")
        for item in items:
            stream.write(("," if count else "") + "\n  " + json.dumps(item, ensure_ascii=False))
            count += 1
        stream.write("\n]\n" if count else "]\n")
    else:
        writer = None
        for item in items:
            if writer is None:
                writer = csv.DictWriter(stream, fieldnames=list(item), quoting=csv.QUOTE_ALL)
                writer.writeheader()
            writer.writerow({key: _cell(value) for key, value in item.items()})
            count += 1
        if writer is None:
            csv.writer(stream, quoting=csv.QUOTE_ALL).writerow(FIELDS)
    return count


def _cell(value):
    """Lists (tags, vectors) as JSON in one cell; missing values empty."""
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return value


def export(items: Iterator[dict], output_format: str, output: str | None) -> int:
    """Write to stdout, or to a file that appears only once complete (never half-written)."""
    if output_format not in FORMATS:
        raise MemorySearchError(f"unknown format {output_format!r}: use {', '.join(FORMATS)}")
    # Spreadsheet tools detect UTF-8 in a CSV file by its byte-order mark.
    encoding = "utf-8-sig" if output_format == "csv" else "utf-8"
    newline = "" if output_format == "csv" else None
    if output is None or output == "-":
        stream = sys.stdout
        if output_format == "csv":
            stream.reconfigure(newline="")
        return write(items, output_format, stream)
    target = Path(output).expanduser()
    if not target.parent.is_dir():
        raise MemorySearchError(f"cannot write {target}: its folder does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding=encoding, newline=newline) as stream:
            count = write(items, output_format, stream)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise MemorySearchError(f"cannot write {target} ({first_line(error)})") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count
