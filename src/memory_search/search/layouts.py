"""One class per index layout, behind the interface the search pipeline uses.

A layout answers the legs (nearest chunks by vector; BM25 over postings, where it has them), says which
filters it runs in SQL, completes the candidates chosen from the legs (their text and record), and admits
a candidate: the record to show for it, or None when its file is gone, lies outside the memories directory
or fails a filter the SQL could not apply.
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import replace
from pathlib import Path

from psycopg import sql

from ..directory.files import read_record, relative_path
from ..directory.records import Record
from ..directory.sources import OTHER_SOURCE_KINDS
from ..embedding import vector_literal
from ..storage import packing
from ..storage.schema import IndexInfo, ManagedTables, check_versions, identifier
from ..text.tokens import counted_terms, is_japanese
from .filters import Filters, matches, sql_conditions
from .retrieval import FUSION_DEPTH, Candidate, KeywordResult

BM25_K1, BM25_B = 1.2, 0.75
# Postings read per query at most: a query's terms are read rarest first until their postings reach it (the
# commonest words of a long query over a large index are left out), and of a term in more chunks than this,
# this many are read: the chunks that hold it most often, the shortest first among equals, where BM25's best
# for it lie. The sum of the scores then stays in memory and a query of common words fast: at a million
# chunks, p95 35-40 ms and nothing spilled to disk at 50,000, where 100,000 took 61-96 ms and spilled.
# Scaled to leave out what it would at a million (tools/eval/eval.py --budget-at), 50,000 cost keyword search
# 0.03-0.05 nDCG@10 on two development sets; scoring the chunks found by all the query's terms
# (RESCORED_CANDIDATES) took English back within noise (references/scale.md).
POSTINGS_BUDGET = 50_000
# A long query (a pasted page) is searched by its rarest terms the index holds, at most this many: they carry
# most of its BM25 weight, and the coverage and ceiling of the relevance score then refer to what was searched.
MAX_QUERY_TERMS = 32
# The best candidates of a keyword leg that left terms out, or read some in part, are scored again by all the
# query's terms, counted in their own text: the budget then bounds which chunks are found, not how they are
# ordered. As many as a hybrid search fuses, so that the scores fusion compares are all of one kind.
RESCORED_CANDIDATES = FUSION_DEPTH
HNSW_EF_SEARCH = 100
# A date range that holds at most this many chunks is read whole by the dates b-tree and ranked exactly,
# instead of walking the vector graph for chunks that pass it: at a million chunks 13,000 of them take about
# 22 ms this way, and the walk, which may pass many more before it has enough, finds fewer of the nearest.
EXACT_DATED_CHUNKS = 20_000


class Layout:
    """The interface; see ManagedLayout and CocoIndexLayout."""

    has_keyword_leg = False

    def __init__(self, info: IndexInfo, memories_root: Path, remote: bool = False):
        """remote: the memories are on another machine, so a file's presence cannot be checked here: the index,
        which its indexer keeps in step with the files, is taken as it is."""
        self.info, self.root, self.remote = info, memories_root, remote

    @property
    def table(self) -> str:
        return self.info.table

    @property
    def script_means(self) -> dict[bool, tuple[int, list[float]]]:
        """relevance.is_cjk -> (chunk count, mean vector) of the chunks in that script, as the indexer last
        counted them; empty when it did not."""
        return {}

    def semantic(self, conn, vector: list[float], filters: Filters, limit: int,
                 exclude: str | None = None) -> list[Candidate]:
        raise NotImplementedError

    def keyword(self, conn, terms: dict[str, int], filters: Filters, limit: int) -> KeywordResult:
        raise NotImplementedError

    def complete(self, conn, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates with their text and record, where the legs left them out; those whose chunk
        is no longer in the index are dropped."""
        return candidates

    def admit(self, candidate: Candidate, filters: Filters) -> Record | None:
        raise NotImplementedError

    def neighbours(self, conn, chunks: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, int, int]]:
        """(filename, chunk index) -> (text, first line, last line) of those chunks that the index holds, for the
        chunks next to hits; empty where the layout does not number a file's chunks."""
        return {}

    def vectors_of(self, conn, filename: str) -> list[list[float]]:
        """The chunk vectors of one file (for similar memories)."""
        rows = conn.execute(sql.SQL("SELECT embedding::text FROM {} WHERE filename = %s ORDER BY id").format(
            identifier(self.table)), (filename,)).fetchall()
        return [[float(value) for value in row[0].strip("[]").split(",")] for row in rows]

    def waiting_for_embeddings(self, conn) -> int:
        """Chunks an indexer has written but not embedded yet (found by keywords only meanwhile)."""
        return 0

    def skip_reason(self, conn, filename: str) -> str | None:
        """Why index.py left a file out of the index (binary, broken frontmatter...), or None."""
        return None

    def indexed_state(self, conn, paths: list[str]) -> dict[str, tuple[int, int]] | None:
        """path -> (size, mtime_ns) as indexed, or None when the layout does not record it."""
        return None

    # --- shared by the layouts ---------------------------------------------------------------

    def _path_in_root(self, filename: str) -> tuple[str, str] | None:
        """(absolute path under the memories root, relpath) of an existing file, else None."""
        relative = relative_path(filename, self.root)
        if relative is None:
            return None
        path = str(self.root / relative)
        if not self.remote and not os.path.isfile(path):  # deleted since it was indexed
            return None
        return path, str(relative)

    def _path_elsewhere(self, filename: str) -> tuple[str, str] | None:
        """(path, path) of an existing file another source (directory/sources.py) had indexed, else None."""
        if not os.path.isabs(filename) or (not self.remote and not os.path.isfile(filename)):
            return None
        return filename, filename

    def _nearest(self, conn, columns: sql.Composable, clauses: list, params: list, vector: list[float],
                 limit: int, exact: bool = False) -> list[tuple]:
        """exact: rank every chunk that passes the clauses (the graph is not read)."""
        literal = vector_literal(vector)
        distance = sql.SQL("embedding <=> %s::{}").format(sql.SQL(self.info.vector_type))
        # The graph serves only an ORDER BY of the distance itself; a query of its own text also keeps
        # the server from reusing the other's cached plan.
        order = sql.SQL("({}) + 0").format(distance) if exact else distance
        where = sql.SQL("WHERE ") + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")
        query = sql.SQL("SELECT {columns}, 1 - ({distance}) AS score FROM {table} {where} "
                        "ORDER BY {order} LIMIT %s").format(columns=columns, distance=distance, order=order,
                                                           table=identifier(self.table), where=where)
        with conn.transaction():
            if self.info.has_hnsw and not exact:  # iterative scans keep filtered HNSW searches from coming back short
                conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                             "set_config('hnsw.ef_search', %s, true)", (str(HNSW_EF_SEARCH),))
            return conn.execute(query, [literal, *params, literal, limit]).fetchall()


class ManagedLayout(Layout):
    """This project's index: metadata columns, filters in SQL, BM25 over a postings table."""

    has_keyword_leg = True
    # The legs read ids and names only: a hybrid search fuses 200 candidates to show ten, and decoding
    # each one's text and frontmatter cost more than the legs' SQL.
    _LEG_COLUMNS = sql.SQL("id, filename")
    _COLUMNS = sql.SQL("id, filename, chunk_text, start_line, end_line, chunk_index, kind, status, title, tags, "
                       "project, recorded_on, recorded_time, frontmatter")

    def __init__(self, info: IndexInfo, memories_root: Path, remote: bool = False):
        # A managed index's: schema.describe sets its tables and meta together (layout_for looks at the tables).
        assert info.tables is not None and info.meta is not None
        meta = info.meta
        check_versions(meta, memories_root, chunker=False)
        super().__init__(info, memories_root, remote)
        self.tables: ManagedTables = info.tables
        self.meta: dict = meta
        self.packed = packing.in_use(meta)  # a term's postings are rows and packed arrays
        self.chunk_count = int(meta.get("chunks") or 0)
        self.postings_budget = POSTINGS_BUDGET
        if meta.get("total_terms") is not None:
            self.average_terms = int(meta["total_terms"]) / max(self.chunk_count, 1)
        else:
            self.average_terms = float(meta.get("average_terms") or 0.0)

    @functools.cached_property
    def script_means(self) -> dict[bool, tuple[int, list[float]]]:
        kept = json.loads(self.meta.get("script_means") or "{}")
        return {script == "cjk": (count, mean) for script, (count, mean) in kept.items()}

    def semantic(self, conn, vector, filters, limit, exclude=None):
        clauses, params = sql_conditions(filters)
        clauses.append(sql.SQL("embedding IS NOT NULL"))  # chunks still waiting for phase 2 of a run
        if exclude is not None:
            clauses.append(sql.SQL("filename <> %s"))
            params.append(exclude)
        exact = self.info.has_hnsw and self._few_dated(conn, filters)
        rows = self._nearest(conn, self._LEG_COLUMNS, clauses, params, vector, limit, exact)
        return sorted((Candidate(id_, filename, "", float(score)) for id_, filename, score in rows),
                      key=lambda candidate: -candidate.score)

    def _few_dated(self, conn, filters: Filters) -> bool:
        """Whether the filters' dates hold EXACT_DATED_CHUNKS chunks or fewer (counted on the dates b-tree,
        which stops at one more)."""
        if not (filters.since or filters.until):
            return False
        clauses, params = sql_conditions(Filters(since=filters.since, until=filters.until, include_superseded=True))
        count = conn.execute(sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} WHERE {} LIMIT %s) dated").format(
            self.tables.sql("chunks"), sql.SQL(" AND ").join(clauses)), (*params, EXACT_DATED_CHUNKS + 1)).fetchone()[0]
        return count <= EXACT_DATED_CHUNKS

    def keyword(self, conn, terms, filters, limit):
        if not terms:
            return KeywordResult([], {}, True)
        frequencies = dict(conn.execute(sql.SQL("SELECT term, df FROM {} WHERE term = ANY(%s)").format(
            self.tables.sql("terms")), (list(terms),)).fetchall())
        total = max(self.chunk_count, 1)
        weights = {term: count * _idf(frequencies.get(term, 0), total) for term, count in terms.items()}
        present = sorted((term for term in terms if frequencies.get(term, 0) > 0), key=lambda t: frequencies[t])
        if len(terms) > MAX_QUERY_TERMS:
            present = sorted(present, key=lambda term: -weights[term])[:MAX_QUERY_TERMS]
            weights = {term: weights[term] for term in present}
            present.sort(key=lambda term: frequencies[term])
        if not present:
            return KeywordResult([], weights, True)
        budget = self.postings_budget
        scored, postings = within_budget(present, frequencies, budget)
        clauses, params = sql_conditions(filters)
        bm25 = sql.SQL(f"q.w * p.tf * {BM25_K1 + 1} / (p.tf + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * p.dl / %s))")
        # Rank on the postings alone, then read (and filter) only the best of them. Filters that
        # drop most of the best make the caller ask again with a larger limit, until exhausted.
        ranked_limit = limit * 8 if filters.narrows else limit * 2
        where = sql.SQL("WHERE ") + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")
        if self.packed:
            term_postings, limits = packing.term_postings(self.tables), [
                budget, packing.arrays_for(budget), budget, budget]
        else:  # an index of an earlier schema, until its next index run
            term_postings, limits = sql.SQL(
                "SELECT chunk_id, tf, dl FROM {} WHERE term = q.t ORDER BY tf DESC, dl LIMIT %s").format(
                self.tables.sql("postings")), [budget]
        # A packed chunk deleted since the last packing has no row in chunks: the join drops it. Equal scores
        # are ordered by chunk, so that rows and packed arrays, which list a term's equals in another order, agree.
        query = sql.SQL(
            "SELECT {columns}, s.score, s.weight FROM ("
            "SELECT p.chunk_id, sum({bm25}) AS score, sum(q.w) AS weight "
            "FROM unnest(%s::text[], %s::float8[], %s::boolean[]) AS q(t, w, whole) "
            "CROSS JOIN LATERAL ({term_postings}) p "
            "GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %s"
            ") s JOIN {chunks} c ON c.id = s.chunk_id {where} ORDER BY s.score DESC, s.chunk_id LIMIT %s").format(
            columns=self._LEG_COLUMNS, bm25=bm25, term_postings=term_postings, chunks=self.tables.sql("chunks"),
            where=where)
        args = [self.average_terms or 1.0, scored, [weights[term] for term in scored],
                [frequencies[term] <= budget for term in scored], *limits, ranked_limit, *params, limit]
        rows = conn.execute(query, args).fetchall()
        exhausted = len(rows) < limit and ranked_limit >= min(postings, budget)
        total_weight = sum(weights.values())
        candidates = [Candidate(id_, filename, "", float(score), coverage=min(1.0, weight / total_weight))
                      for id_, filename, score, weight in rows]
        read = set(scored)
        sampled = {term: (min(budget, frequencies[term]) if term in read else 0, frequencies[term])
                   for term in present if term not in read or frequencies[term] > budget}
        # Japanese words are counted by Sudachi, milliseconds a chunk: a query that holds one keeps the order
        # of the terms read.
        rescored = bool(sampled) and not any(is_japanese(term) for term in present)
        if rescored:
            candidates = self._scored_by_all(conn, candidates, {term: weights[term] for term in present},
                                             total_weight)
        return KeywordResult(candidates, weights, exhausted, sampled, rescored)

    def _scored_by_all(self, conn, candidates: list[Candidate], weights: dict[str, float],
                       total_weight: float) -> list[Candidate]:
        """The best candidates (RESCORED_CANDIDATES) scored again by every term in `weights` (Latin words and
        Korean bigrams), each counted in the chunk's title and text as the indexer counted it, and put in that
        order; the others follow."""
        best, rest = candidates[:RESCORED_CANDIDATES], candidates[RESCORED_CANDIDATES:]
        rows = conn.execute(sql.SQL("SELECT id, title, chunk_text, term_count FROM {} WHERE id = ANY(%s)").format(
            self.tables.sql("chunks")), ([candidate.id for candidate in best],)).fetchall()
        average = self.average_terms or 1.0
        rescored = []
        for id_, title, text, length in rows:
            # A record of a title alone is one chunk whose text is the title, counted once.
            counts = counted_terms("" if text == title else title or "", text, weights)
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
            found = [term for term in weights if counts[term]]
            score = sum(weights[term] * counts[term] * (BM25_K1 + 1) / (counts[term] + norm) for term in found)
            rescored.append((id_, score, min(1.0, sum(weights[term] for term in found) / total_weight)))
        by_id = {candidate.id: candidate for candidate in best}
        rescored.sort(key=lambda row: (-row[1], row[0]))
        return [replace(by_id[id_], score=score, coverage=coverage) for id_, score, coverage in rescored] + rest

    def fusion_signals(self, conn, vector, ids) -> dict[int, tuple]:
        """What the fusion needs of the chunks both legs returned (see relevance.py), in one round trip: chunk
        id -> (its cosine to `vector`, None while it waits for its embedding; its record's title and its text,
        whose words tell its languages)."""
        rows = conn.execute(sql.SQL(
            "SELECT id, 1 - (embedding <=> %s::{}), coalesce(title, ''), chunk_text FROM {} WHERE id = ANY(%s)").format(
            sql.SQL(self.info.vector_type), self.tables.sql("chunks")), (vector_literal(vector), list(ids))).fetchall()
        return {id_: (None if cosine is None else float(cosine), title, text) for id_, cosine, title, text in rows}

    def complete(self, conn, candidates):
        rows = conn.execute(sql.SQL("SELECT {} FROM {} WHERE id = ANY(%s)").format(
            self._COLUMNS, self.tables.sql("chunks")), ([candidate.id for candidate in candidates],)).fetchall()
        by_id = {row[0]: row for row in rows}
        return [self._candidate(by_id[candidate.id], candidate) for candidate in candidates if candidate.id in by_id]

    def admit(self, candidate, filters):
        found = self._path_in_root(candidate.filename)
        if found is None and candidate.record.kind in OTHER_SOURCE_KINDS:
            found = self._path_elsewhere(candidate.filename)
        if found is None:
            return None
        return replace(candidate.record, path=found[0], relpath=found[1])  # the filters ran in SQL

    def neighbours(self, conn, chunks):
        if not chunks:
            return {}
        names, numbers = zip(*chunks)
        rows = conn.execute(sql.SQL(
            "SELECT c.filename, c.chunk_index, c.chunk_text, c.start_line, c.end_line FROM {} c "
            "JOIN unnest(%s::text[], %s::integer[]) AS wanted (filename, chunk_index) "
            "ON c.filename = wanted.filename AND c.chunk_index = wanted.chunk_index").format(
            self.tables.sql("chunks")), (list(names), list(numbers))).fetchall()
        return {(row[0], row[1]): (row[2], row[3], row[4]) for row in rows if row[3] is not None}

    def waiting_for_embeddings(self, conn) -> int:
        return conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NULL").format(
            self.tables.sql("chunks"))).fetchone()[0]

    def skip_reason(self, conn, filename):
        row = conn.execute(sql.SQL("SELECT error FROM {} WHERE filename = %s").format(self.tables.sql("files")),
                           (filename,)).fetchone()
        return row[0] if row else None

    def indexed_state(self, conn, paths):
        rows = conn.execute(sql.SQL("SELECT filename, size, mtime_ns FROM {} WHERE filename = ANY(%s)").format(
            self.tables.sql("files")), (paths,)).fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

    @staticmethod
    def _candidate(row, leg: Candidate) -> Candidate:
        (id_, filename, text, start, end, chunk_index, kind, status, title, tags, project, recorded_on,
         recorded_time, frontmatter) = row
        record = Record(path=filename, relpath="", kind=kind, title=title, status=status, tags=tuple(tags or ()),
                        project=project, date=recorded_on, time=recorded_time, frontmatter=frontmatter)
        return Candidate(id_, filename, text, leg.score, start, end, chunk_index, record, leg.coverage)


class CocoIndexLayout(Layout):
    """The original's CocoIndex table: chunks and vectors only; filters read each file's frontmatter."""

    _COLUMNS = sql.SQL("id, filename, chunk_text")

    def semantic(self, conn, vector, filters, limit, exclude=None):
        clauses, params = ([sql.SQL("filename <> %s")], [exclude]) if exclude is not None else ([], [])
        rows = self._nearest(conn, self._COLUMNS, clauses, params, vector, limit)
        return sorted((Candidate(id_, filename, text, float(score)) for id_, filename, text, score in rows),
                      key=lambda candidate: -candidate.score)

    def admit(self, candidate, filters):
        found = self._path_in_root(candidate.filename)
        if found is None:
            return None
        record = read_record(*found)
        return record if matches(filters, record) else None


def layout_for(info: IndexInfo, memories_root: Path, remote: bool = False) -> Layout:
    return (ManagedLayout if info.tables is not None else CocoIndexLayout)(info, memories_root, remote)


def within_budget(rarest_first: list[str], frequencies: dict[str, int], budget: int) -> tuple[list[str], int]:
    """The terms the keyword leg reads and their postings: the rarest first, until their postings add up to
    the budget (the commonest terms, which carry the least weight, are left out of long queries over large
    indexes); the rarest always, however many chunks hold it."""
    scored: list[str] = []
    postings = 0
    for term in rarest_first:
        if scored and postings + frequencies[term] > budget:
            break
        scored.append(term)
        postings += frequencies[term]
    return scored, postings


def _idf(df: int, total: int) -> float:
    """BM25's IDF, never negative: the chunk count is read apart from the frequencies, so it may lag them."""
    total = max(total, df)
    return math.log(1 + (total - df + 0.5) / (df + 0.5))
