"""Proving that the managed index matches the memories directory (stats.py --verify).

Every check reads; nothing is repaired here. Each problem says what is wrong and which command mends it:
`index.py` for files that changed, appeared or went away since the last run, `index.py --rebuild` for
rows damaged from outside (the indexer trusts what it wrote and would not notice them). The directory is
read with the selection (--include/--exclude) the index remembers, as index.py reads it.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from psycopg import sql

from ..config import Settings
from ..directory.files import BadMemory, out_of_reach, read_memory, require_directory
from ..directory.sources import list_sources
from ..hints import command
from ..storage import packing
from ..storage.schema import ManagedTables, columns_of, managed_index

SHOWN = 5  # examples named per problem


@dataclass
class Problem:
    what: str
    repair: str
    examples: list[str] = field(default_factory=list)
    count: int = 1

    def text(self) -> str:
        shown = "; ".join(self.examples[:SHOWN]) + (f"; ... {self.count - SHOWN} more" if self.count > SHOWN else "")
        return f"{self.what}" + (f": {shown}" if shown else "")


@dataclass
class Verification:
    files: int = 0
    chunks: int = 0
    skipped: list[dict] = field(default_factory=list)  # eligible files left out, with the reason
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not self.problems

    @property
    def repairs(self) -> list[str]:
        wanted = {problem.repair for problem in self.problems}
        rebuilds = sorted(repair for repair in wanted if repair.endswith("--rebuild"))
        return rebuilds or sorted(wanted)  # a rebuild also catches up with the directory

    def as_dict(self) -> dict:
        return {"clean": self.clean, "files": self.files, "chunks": self.chunks, "skipped": self.skipped,
                "problems": [{"problem": problem.what, "count": problem.count, "examples": problem.examples[:SHOWN],
                              "repair": problem.repair} for problem in self.problems],
                "repair": self.repairs, "seconds": self.seconds}


def verify(conn, settings: Settings) -> Verification:
    started = time.monotonic()
    root = require_directory(settings.memories_root, settings.missing_memories())
    tables, meta = managed_index(conn, root)
    result = Verification()
    check = _Checker(conn, tables, result, root, settings)
    check.files_on_disk(root, meta)
    check.chunks()
    check.postings(meta)
    check.vectors(meta)
    check.meta(meta)
    result.seconds = round(time.monotonic() - started, 3)
    return result


class _Checker:
    def __init__(self, conn, tables: ManagedTables, result: Verification, root, settings: Settings):
        self.conn, self.tables, self.result, self.settings = conn, tables, result, settings
        # What mends each problem: index.py catches up with the directory; a rebuild writes every row anew
        # (index.py trusts the rows it wrote, and would not notice rows damaged from outside).
        self.reindex = command("index", "--memories", str(root))
        self.rebuild = command("index", "--memories", str(root), "--rebuild")
        # What the queries' {names} read: each a table, or (postings of a packed index) a query of its own.
        self.t: dict[str, sql.Composable] = {name: tables.sql(name)
                                             for name in ("files", "chunks", "postings", "terms", "meta")}

    def problem(self, what: str, repair: str, examples=(), count: int | None = None) -> None:
        examples = [str(example) for example in examples]
        self.result.problems.append(Problem(what, repair, examples, count if count is not None else len(examples)))

    def rows(self, query: str, params=()) -> list[tuple]:
        return self.conn.execute(sql.SQL(query).format(**self.t), params).fetchall()

    def files_on_disk(self, root, meta: dict) -> None:
        """Indexed files exist with the hash they were indexed with, and their chunks are what their text makes
        of them now; every file the index's selection takes in is indexed or skipped."""
        from .pipeline import chunks_of, content_hash

        indexed = {row[0]: row for row in self.rows(
            "SELECT filename, relpath, content_hash, error FROM {files}")}
        include, exclude = (tuple(json.loads(meta.get(key, "[]"))) for key in ("include", "exclude"))
        listing = list_sources(self.settings, include, exclude)
        found, bad = listing.found, listing.skipped
        self.result.files = sum(1 for row in indexed.values() if row[3] is None)
        on_disk = {memory_file.path: memory_file for memory_file in found}
        # What lies where nothing could be looked at is not missing: unknown.
        reach = out_of_reach(root, bad + listing.kept(indexed, root))
        missing = sorted(row[1] for path, row in indexed.items() if path not in on_disk and reach(path) is None)
        if missing:
            self.problem("indexed files no longer on disk", self.reindex, missing)
        new = sorted(memory_file.relpath for path, memory_file in on_disk.items() if path not in indexed)
        if new:
            self.problem("files on disk not in the index", self.reindex, new)
        changed, altered = [], []
        stored = self._stored_chunks()
        for path, memory_file in sorted(on_disk.items()):  # in the order the chunks are read
            row = indexed.get(path)
            if row is None:
                continue
            if row[3] is not None:  # remembered as unreadable: it must still be
                self.result.skipped.append({"path": row[1], "reason": row[3]})
                continue
            try:
                memory, text = read_memory(memory_file)
            except BadMemory as reason:
                changed.append(f"{memory_file.relpath} (now unreadable: {reason})")
                continue
            if content_hash(text) != row[2]:
                changed.append(memory_file.relpath)
                continue
            try:
                chunks, contexts = chunks_of(memory)
            except BadMemory:
                chunks, contexts = [], []
            expected = [(chunk.start_line, chunk.end_line, chunk.text, context)
                        for chunk, context in zip(chunks, contexts)]
            if stored.of(path) != expected:
                altered.append(memory_file.relpath)
        stored.close()
        if changed:
            self.problem("files changed since they were indexed", self.reindex, sorted(changed))
        if altered:
            self.problem("chunks whose stored text or lines differ from their unchanged file", self.rebuild, altered)
        self.result.skipped.extend({"path": item.relpath, "reason": item.reason} for item in bad)

    def _stored_chunks(self) -> "_StoredChunks":
        return _StoredChunks(self.conn, self.t["chunks"])

    def chunks(self) -> None:
        chunks = self.rows("SELECT count(*) FROM {chunks}")[0][0]
        self.result.chunks = chunks
        duplicates = self.rows("SELECT filename, chunk_index FROM {chunks} GROUP BY 1, 2 HAVING count(*) > 1")
        if duplicates:
            self.problem("duplicate chunks (same file and chunk number)", self.rebuild,
                         [f"{name} #{index}" for name, index in duplicates])
        orphans = self.rows("SELECT DISTINCT c.filename FROM {chunks} c LEFT JOIN {files} f USING (filename) "
                            "WHERE f.filename IS NULL")
        if orphans:
            self.problem("chunks of files the index does not list", self.rebuild, [row[0] for row in orphans])
        wrong = self.rows(
            "SELECT f.relpath, f.chunk_count, count(c.id), coalesce(max(c.chunk_index) + 1, 0) FROM {files} f "
            "LEFT JOIN {chunks} c USING (filename) GROUP BY f.relpath, f.chunk_count "
            "HAVING f.chunk_count <> count(c.id) OR coalesce(max(c.chunk_index) + 1, 0) <> count(c.id) "
            "ORDER BY f.relpath")
        if wrong:
            self.problem("files whose chunks are missing or extra", self.rebuild,
                         [f"{path} (expected {expected}, found {found})" for path, expected, found, _ in wrong])

    def postings(self, meta: dict) -> None:
        if packing.in_use(meta):
            self.t["postings"] = packing.all_postings(self.tables, meta)  # rows and packed arrays together
        orphans = self.rows("SELECT count(*) FROM {postings} p LEFT JOIN {chunks} c ON c.id = p.chunk_id "
                            "WHERE c.id IS NULL")[0][0]
        if orphans:
            self.problem("postings of chunks that no longer exist", self.rebuild, [f"{orphans} rows"], orphans)
        lengths = self.rows(
            "SELECT c.filename, c.chunk_index FROM {chunks} c LEFT JOIN (SELECT chunk_id, sum(tf) AS total, "
            "min(dl) AS low, max(dl) AS high FROM {postings} every GROUP BY chunk_id) p ON p.chunk_id = c.id "
            "WHERE coalesce(p.total, 0) <> c.term_count OR p.low <> c.term_count OR p.high <> c.term_count")
        if lengths:
            self.problem("chunks whose postings do not add up to their term count", self.rebuild,
                         [f"{name} #{index}" for name, index in lengths])
        frequencies = self.rows(
            "SELECT coalesce(t.term, p.term), coalesce(t.df, 0), coalesce(p.n, 0) FROM {terms} t FULL JOIN "
            "(SELECT term, count(*) AS n FROM {postings} every GROUP BY term) p ON p.term = t.term "
            "WHERE coalesce(t.df, 0) <> coalesce(p.n, 0) AND NOT (p.n IS NULL AND t.df <= 0)")
        if frequencies:
            self.problem("document frequencies that differ from the postings", self.rebuild,
                         [f"{term!r} (df {df}, postings {n})" for term, df, n in frequencies], len(frequencies))

    def vectors(self, meta: dict) -> None:
        dimension = int(meta["dimension"])
        column = columns_of(self.conn, self.tables.chunks).get("embedding", "")
        if not re.fullmatch(rf"(vector|halfvec)\({dimension}\)", column):
            self.problem(f"the embedding column is {column or 'missing'}, not the model's {dimension} dimensions",
                         self.rebuild, [meta["model"]])
        pending = self.rows("SELECT count(*) FROM {chunks} WHERE embedding IS NULL")[0][0]
        if pending:  # keyword-first indexing: written, not embedded yet (a run stopped before the model finished)
            self.problem("chunks still waiting for their embedding (found by keywords only)", self.reindex,
                         [f"{pending} chunks"], pending)
        invalid = self.conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = to_regclass(%s) AND NOT (i.indisvalid AND i.indisready)",
            (self.tables.chunks,)).fetchall()
        if invalid:
            self.problem("invalid indexes on the chunks table (an interrupted build)", self.rebuild,
                         [row[0] for row in invalid])

    def meta(self, meta: dict) -> None:
        recorded = meta.get("chunks")
        if recorded is not None and int(recorded) != self.result.chunks:
            self.problem("the meta table's chunk count is wrong", self.rebuild,
                         [f"says {recorded}, the chunks table holds {self.result.chunks}"])
        terms = meta.get("total_terms")
        actual = self.rows("SELECT coalesce(sum(term_count), 0) FROM {chunks}")[0][0]
        if terms is not None and int(terms) != int(actual):
            self.problem("the meta table's term total is wrong", self.rebuild,
                         [f"says {terms}, the chunks hold {actual}"])


class _StoredChunks:
    """Each file's chunks as (start_line, end_line, text, context), read in file name order with a server-side
    cursor while the files are checked in the same order, so memory stays flat."""

    def __init__(self, conn, chunks):
        self.rows = self._read(conn, chunks)
        self.pending = next(self.rows, None)

    @staticmethod
    def _read(conn, chunks):
        with conn.transaction(), conn.cursor(name="memory_search_verify") as cursor:
            cursor.itersize = 2000
            cursor.execute(sql.SQL('SELECT filename, start_line, end_line, chunk_text, embed_context FROM {} '
                                   'ORDER BY filename COLLATE "C", chunk_index').format(chunks))
            yield from cursor

    def close(self) -> None:
        self.rows.close()  # ends the cursor's transaction

    def of(self, filename: str) -> list[tuple]:
        """The chunks of `filename`; files must be asked for in code point order."""
        found = []
        while self.pending is not None and self.pending[0] < filename:
            self.pending = next(self.rows, None)
        while self.pending is not None and self.pending[0] == filename:
            found.append(tuple(self.pending[1:]))
            self.pending = next(self.rows, None)
        return found
