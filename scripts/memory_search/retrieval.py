"""The search pipeline: semantic and keyword legs, fusion, filters, one best chunk per file, rerank."""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .embedding import Embedder, vector_literal
from .errors import UsageError, first_line
from .filters import Filters, matches, sql_conditions
from .memories import (as_list, kind_of, normalize_status, read_frontmatter, record_date, relative_path,
                       require_directory)
from .snippets import snippet
from .store import IndexInfo
from .tokens import tokenize

MODES = ("hybrid", "semantic", "keyword")
FUSIONS = ("rrf", "rrf-equal", "weighted", "weighted-equal")
RRF_K = 60
BM25_K1, BM25_B = 1.2, 0.75
POSTINGS_BUDGET = 20_000  # postings read per query at most, unless the rarest term alone has more
HNSW_EF_SEARCH = 100
RERANK_MODEL = "rerank-2.5"
RERANK_CANDIDATES = 30

_MANAGED_COLUMNS = ("id, filename, chunk_text, start_line, end_line, kind, status, title, tags, project, "
                    "recorded_on, frontmatter")


@dataclass
class SearchRequest:
    query: str
    top: int = 10
    mode: str | None = None  # None: hybrid when the index has a keyword column, else semantic
    filters: Filters = field(default_factory=Filters)
    dedupe: bool = True
    min_score: float | None = None
    rerank: bool = False
    fusion: str = "rrf"
    snippets: bool = True  # eval needs only the ranking


@dataclass
class Candidate:
    """One chunk as a leg returned it."""

    id: int
    filename: str
    chunk_text: str
    score: float
    start_line: int | None = None
    end_line: int | None = None
    record: dict | None = None  # managed index: the record's columns
    coverage: float = 1.0  # keyword leg: the share of the query's term weight this chunk matched


@dataclass
class Hit:
    path: str
    score: float
    snippet: str
    frontmatter: dict
    title: str
    status: str
    tags: list[str]
    kind: str | None
    date: str | None
    start_line: int | None
    end_line: int | None
    chunk_text: str
    legs: dict = field(default_factory=dict)  # leg -> {"rank", "score"}, for --explain
    stale: bool | None = None  # the file changed since it was indexed (None: the table cannot tell)


class Searcher:
    """Runs requests against one index with one embedder; holds no state between requests."""

    def __init__(self, conn, info: IndexInfo, embedder: Embedder | None, memories_root: Path,
                 reranker=None, warn=lambda message: None):
        self.conn, self.info, self.embedder = conn, info, embedder
        self.root = memories_root
        self.reranker = reranker
        self.warn = warn

    def mode_for(self, request: SearchRequest) -> str:
        if request.mode is None:
            return "hybrid" if self.info.managed else "semantic"
        if request.mode not in MODES:
            raise UsageError(f"unknown mode {request.mode!r}: use one of {', '.join(MODES)}")
        if request.mode != "semantic" and not self.info.managed:
            raise UsageError(f"table {self.info.table} has no keyword column: use --mode semantic")
        return request.mode

    def search(self, request: SearchRequest) -> list[Hit]:
        if not request.query.strip():
            raise UsageError("the query is empty: give a few words to search for")
        mode = self.mode_for(request)
        terms = Counter(tokenize(request.query))
        vector = self.embedder.embed_query(request.query) if mode != "keyword" else None
        fetch = max(request.top * 3, 30)
        while True:
            legs: dict[str, list[Candidate]] = {}
            exhausted = True
            if vector is not None:
                legs["semantic"] = self._semantic(vector, request.filters, fetch)
                exhausted = len(legs["semantic"]) < fetch
            if mode != "semantic":
                legs["keyword"], term_weights, keyword_exhausted = self._keyword(terms, request.filters, fetch)
                exhausted = exhausted and keyword_exhausted
            else:
                term_weights = {term: 1.0 for term in terms}
            fused = fuse(legs, request.fusion) if len(legs) > 1 else _single(legs)
            hits = self._collect(fused, legs, request, term_weights)
            if len(hits) >= request.top or exhausted:
                break
            fetch *= 4
        if request.rerank and self.reranker is not None and hits:
            hits = self._rerank(request.query, hits)
        if request.min_score is not None:
            hits = [hit for hit in hits if hit.score >= request.min_score]
        hits = hits[: request.top]
        self._mark_stale(hits)
        return hits

    def _mark_stale(self, hits: list[Hit]) -> None:
        """Flag hits whose file changed after it was indexed: their text may be out of date."""
        if not self.info.managed or not hits:
            return
        indexed = {row[0]: (row[1], row[2]) for row in self.conn.execute(
            f"SELECT filename, size, mtime_ns FROM {self.info.tables.files} WHERE filename = ANY(%s)",
            ([hit.path for hit in hits],)).fetchall()}
        for hit in hits:
            try:
                stat = os.stat(hit.path)
            except OSError:
                continue
            hit.stale = indexed.get(hit.path) != (stat.st_size, stat.st_mtime_ns)

    # --- legs -------------------------------------------------------------------------------

    def _semantic(self, vector: list[float], filters: Filters, limit: int) -> list[Candidate]:
        info = self.info
        literal = vector_literal(vector)
        distance = f"embedding <=> %s::{info.vector_type}"
        if info.managed:
            clauses, params = sql_conditions(filters)
            where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
            sql = (f"SELECT {_MANAGED_COLUMNS}, 1 - ({distance}) AS score FROM {info.table} {where} "
                   f"ORDER BY {distance} LIMIT %s")
            args = [literal, *params, literal, limit]
        else:
            sql = (f"SELECT id, filename, chunk_text, 1 - ({distance}) AS score FROM {info.table} "
                   f"ORDER BY {distance} LIMIT %s")
            args = [literal, literal, limit]
        with self.conn.transaction():
            if info.has_hnsw:  # iterative scans keep filtered HNSW searches from coming back short
                self.conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                                  "set_config('hnsw.ef_search', %s, true)", (str(HNSW_EF_SEARCH),))
            rows = self.conn.execute(sql, args).fetchall()
        candidates = [self._candidate(row) for row in rows]
        candidates.sort(key=lambda candidate: -candidate.score)
        return candidates

    def _keyword(self, terms: Counter, filters: Filters, limit: int) -> tuple[list[Candidate], dict, bool]:
        """BM25 over the postings. Returns candidates, the query terms' weights, and whether no more exist."""
        info = self.info
        if not terms:
            return [], {}, True
        frequencies = dict(self.conn.execute(
            f"SELECT term, df FROM {info.tables.terms} WHERE term = ANY(%s)", (list(terms),)).fetchall())
        total = max(info.chunk_count, 1)
        weights = {term: count * _idf(frequencies.get(term, 0), total) for term, count in terms.items()}
        present = sorted((term for term in terms if frequencies.get(term, 0) > 0), key=lambda t: frequencies[t])
        if not present:
            return [], weights, True
        # The rarest terms first, until their postings add up to the budget: the commonest terms,
        # which carry the least weight, are left out of long queries over large indexes.
        scored, postings = [], 0
        for term in present:
            if scored and postings + frequencies[term] > POSTINGS_BUDGET:
                break
            scored.append(term)
            postings += frequencies[term]
        clauses, params = sql_conditions(filters)
        average = info.average_terms or 1.0
        bm25 = f"q.w * p.tf * {BM25_K1 + 1} / (p.tf + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * p.dl / %s))"
        # Rank on the postings alone, then read (and filter) only the best of them. Filters that
        # drop most of the best make the caller ask again with a larger limit, until exhausted.
        ranked_limit = limit * 8 if filters.narrows else limit * 2
        ranked = (f"SELECT p.chunk_id, sum({bm25}) AS score, sum(q.w) AS weight "
                  f"FROM unnest(%s::text[], %s::float8[]) AS q(t, w) JOIN {info.tables.postings} p ON p.term = q.t "
                  "GROUP BY p.chunk_id ORDER BY score DESC LIMIT %s")
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        sql = (f"SELECT {_MANAGED_COLUMNS}, s.score, s.weight FROM ({ranked}) s "
               f"JOIN {info.table} c ON c.id = s.chunk_id {where} ORDER BY s.score DESC LIMIT %s")
        args = [average, scored, [weights[term] for term in scored], ranked_limit, *params, limit]
        rows = self.conn.execute(sql, args).fetchall()
        exhausted = len(rows) < limit and ranked_limit >= postings
        total = sum(weights.values())
        candidates = []
        for row in rows:
            candidate = self._candidate(row[:-1])
            candidate.coverage = min(1.0, row[-1] / total)
            candidates.append(candidate)
        return candidates, weights, exhausted

    def _candidate(self, row) -> Candidate:
        if self.info.managed:
            (id_, filename, text, start, end, kind, status, title, tags, project, recorded_on, frontmatter,
             score) = row
            record = {"kind": kind, "status": status, "title": title, "tags": tags, "project": project,
                      "date": recorded_on.isoformat() if recorded_on else None, "frontmatter": frontmatter}
            return Candidate(id_, filename, text, float(score), start, end, record)
        id_, filename, text, score = row
        return Candidate(id_, filename, text, float(score))

    # --- from chunks to hits ----------------------------------------------------------------

    def _collect(self, fused: list[tuple[int, float]], legs: dict[str, list[Candidate]],
                 request: SearchRequest, term_weights: dict) -> list[Hit]:
        by_id: dict[int, Candidate] = {}
        ranks: dict[int, dict] = {}
        for leg, candidates in legs.items():
            for rank, candidate in enumerate(candidates, 1):
                by_id.setdefault(candidate.id, candidate)
                ranks.setdefault(candidate.id, {})[leg] = {"rank": rank, "score": round(candidate.score, 6)}
        hits: list[Hit] = []
        seen: set[str] = set()
        verdicts: dict[str, tuple | None] = {}
        for chunk_id, score in fused:
            candidate = by_id[chunk_id]
            if candidate.filename not in verdicts:
                verdicts[candidate.filename] = self._admit(candidate, request.filters)
            admitted = verdicts[candidate.filename]
            if admitted is None or (request.dedupe and admitted[0] in seen):
                continue
            path, frontmatter = admitted
            seen.add(path)
            hits.append(self._hit(candidate, path, frontmatter, score, ranks[chunk_id],
                                  term_weights if request.snippets else None))
            if len(hits) >= max(request.top, RERANK_CANDIDATES if request.rerank else 0):
                break
        return hits

    def _admit(self, candidate: Candidate, filters: Filters) -> tuple[str, dict] | None:
        """(absolute path, frontmatter) when the chunk's file may be shown, else None."""
        relative = relative_path(candidate.filename, self.root)
        if relative is None:
            return None
        path = str(self.root / relative)
        if not os.path.isfile(path):  # deleted since it was indexed
            return None
        if candidate.record is not None:
            return path, candidate.record["frontmatter"]
        frontmatter = read_frontmatter(path)
        return (path, frontmatter) if matches(filters, str(relative), frontmatter) else None

    def _hit(self, candidate: Candidate, path: str, frontmatter: dict, score: float, legs: dict,
             term_weights: dict) -> Hit:
        text = snippet(candidate.chunk_text, term_weights) if term_weights is not None else ""
        record = candidate.record
        relative = str(relative_path(path, self.root))
        if record is None:
            day, _ = record_date(relative, frontmatter)
            record = {"kind": kind_of(relative), "status": normalize_status(frontmatter.get("status")),
                      "title": str(frontmatter.get("title") or Path(path).stem),
                      "tags": as_list(frontmatter.get("tags")), "date": day.isoformat() if day else None}
        return Hit(path=path, score=round(score, 6), snippet=text, frontmatter=frontmatter, title=record["title"],
                   status=record["status"], tags=list(record["tags"] or []), kind=record["kind"], date=record["date"],
                   start_line=candidate.start_line, end_line=candidate.end_line, chunk_text=candidate.chunk_text,
                   legs=legs)

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        pool = hits[:RERANK_CANDIDATES]
        try:
            scores = self.reranker(query, [hit.chunk_text for hit in pool])
        except Exception as error:  # any failure: keep the fused order
            self.warn(f"rerank failed ({first_line(error)}); showing the fused order")
            return hits
        for hit, score in zip(pool, scores):
            hit.legs["rerank"] = {"score": round(score, 6)}
            hit.score = round(score, 6)
        pool.sort(key=lambda hit: -hit.score)
        for rank, hit in enumerate(pool, 1):
            hit.legs["rerank"]["rank"] = rank
        return pool + hits[RERANK_CANDIDATES:]


def _idf(df: int, total: int) -> float:
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def _single(legs: dict[str, list[Candidate]]) -> list[tuple[int, float]]:
    (candidates,) = legs.values()
    return [(candidate.id, candidate.score) for candidate in candidates]


def fuse(legs: dict[str, list[Candidate]], method: str = "rrf") -> list[tuple[int, float]]:
    """Chunk ids by fused score, best first, scaled so that 1.0 means first in every leg.

    rrf: reciprocal rank fusion (k=60) in which a keyword hit counts in proportion to the share of
    the query it matched, so a leg without signal (a Japanese question over English notes, matched
    on one stray word) cannot outvote one with signal. rrf-equal: plain RRF. weighted: 0.7 x cosine
    + 0.3 x BM25 scaled by the leg's best, the BM25 part also scaled by coverage; weighted-equal:
    without that scaling."""
    if method not in FUSIONS:
        raise UsageError(f"unknown fusion {method!r}: use one of {', '.join(FUSIONS)}")
    if method.startswith("weighted"):
        leg_weights = {"semantic": 0.7, "keyword": 0.3}
    else:
        leg_weights = {"semantic": 1.0, "keyword": 1.0}
    by_coverage = not method.endswith("-equal")
    scores: dict[int, float] = {}
    for leg, candidates in legs.items():
        if not candidates:
            continue
        best = candidates[0].score if leg == "keyword" and candidates[0].score > 0 else 1.0
        for rank, candidate in enumerate(candidates, 1):
            weight = leg_weights[leg] * (candidate.coverage if by_coverage else 1.0)
            if method.startswith("rrf"):
                contribution = weight / (RRF_K + rank)
            else:
                contribution = weight * candidate.score / best
            scores[candidate.id] = scores.get(candidate.id, 0.0) + contribution
    ceiling = sum(leg_weights[leg] for leg, candidates in legs.items() if candidates)
    if method.startswith("rrf"):
        ceiling /= RRF_K + 1
    ceiling = ceiling or 1.0
    return sorted(((chunk_id, score / ceiling) for chunk_id, score in scores.items()), key=lambda item: -item[1])


def search(settings, request: SearchRequest, warn=lambda message: None, connection=None,
           embedders: dict | None = None) -> list[Hit]:
    """Open the index for the settings' memories directory and run one request against it.

    A caller that keeps state warm passes its own read-only connection and embedder cache."""
    from .database import connect

    require_directory(settings.memories_root)
    if connection is None:
        with connect(settings, read_only=True) as conn:
            return _search(conn, settings, request, warn, {} if embedders is None else embedders)
    return _search(connection, settings, request, warn, {} if embedders is None else embedders)


def _search(conn, settings, request: SearchRequest, warn, embedders: dict) -> list[Hit]:
    from .embedding import choose_spec, make_embedder, voyage_reranker
    from .store import open_index

    root = settings.memories_root
    info = open_index(conn, root, settings.table)
    embedder = None
    if (request.mode or "") != "keyword":
        spec = choose_spec(settings, info.spec, info.dimension)
        embedder = embedders.get(spec.key)
        if embedder is None:
            embedder = embedders[spec.key] = make_embedder(spec, settings)
    reranker = voyage_reranker(settings, RERANK_MODEL) if request.rerank and settings.voyage_api_key else None
    return Searcher(conn, info, embedder, root, reranker, warn).search(request)
