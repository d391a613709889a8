"""Exporting the indexed chunks for other tools: JSON Lines, JSON or CSV, streamed from a server-side cursor.

Memory stays flat however large the index: rows arrive in batches of FETCH and are written as they come.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterator

from psycopg import sql

from ..errors import MemorySearchError, UsageError, first_line, quoted
from ..storage.schema import managed_index
from .filters import Filters, sql_conditions

FORMATS = ("jsonl", "json", "csv")
FIELDS = ("path", "relpath", "kind", "title", "status", "tags", "project", "date", "chunk_index", "start_line",
          "end_line", "tokens", "content_hash", "text")
FETCH = 1000  # rows per round trip of the server-side cursor


def chunks(conn, root: Path, filters: Filters | None = None, with_vectors: bool = False) -> Iterator[dict]:
    """The chunks of the managed index that pass the filters, in path and chunk order, one dict each."""
    tables, _ = managed_index(conn, root)
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
    """Write the items to a text stream in the format, flushed; returns how many were written. Raises
    MemorySearchError when the stream cannot be written (a full disk)."""
    if output_format not in FORMATS:
        raise UsageError(f"unknown format {quoted(output_format)}: use {', '.join(FORMATS)}")
    try:
        count = _write(items, output_format, stream)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise MemorySearchError(f"cannot write the export ({error.strerror or first_line(error)})") from None
    return count


def _write(items: Iterator[dict], output_format: str, stream) -> int:
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


_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def _cell(value):
    """Lists (tags, vectors) as JSON in one cell; missing values empty. A text a spreadsheet would run as a
    formula (starting with = + - @, a tab or a carriage return) gets a leading ' (OWASP's rule)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.startswith(_FORMULA_LEAD):
        return "'" + value
    return value


def write_file(items: Iterator[dict], output_format: str, output: str) -> int:
    """Write to a file that appears only once complete (never half-written): a temporary file beside it,
    renamed into place. Only a missing file or a regular one is replaced; a symlink, a FIFO, a device or a
    folder at that path is refused (UsageError), and left as it was."""
    import stat

    target = Path(output)
    try:
        status = os.lstat(target)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise MemorySearchError(f"cannot write {target} ({error.strerror})") from None
    if status is not None and not stat.S_ISREG(status.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(status.st_mode) else "a folder" if stat.S_ISDIR(status.st_mode)
                else "a FIFO" if stat.S_ISFIFO(status.st_mode) else "a device or socket")
        raise UsageError(f"{target} is {kind}, not a regular file: give a new file's path to export to")
    if not target.parent.is_dir():
        raise MemorySearchError(f"cannot write {target}: its folder does not exist")
    # Spreadsheet tools detect UTF-8 in a CSV file by its byte-order mark.
    encoding = "utf-8-sig" if output_format == "csv" else "utf-8"
    newline = "" if output_format == "csv" else None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as error:
        raise MemorySearchError(f"cannot write {target} ({first_line(error)})") from None
    try:
        with os.fdopen(handle, "w", encoding=encoding, newline=newline) as stream:
            count = _write(items, output_format, stream)
            stream.flush()
            os.fsync(stream.fileno())  # on disk before it takes the old file's place
        if status is not None:
            os.chmod(temporary, stat.S_IMODE(status.st_mode))  # the file it replaces kept its mode
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise MemorySearchError(f"cannot write {target} ({error.strerror or first_line(error)}); nothing was "
                                "written there") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count
