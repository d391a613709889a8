"""A real index grown to large sizes in SQL, and what it costs: scale.py's work.

The base index is built by the indexer with the bundled model; every grown row is a copy of a base row
as the indexer wrote it, so the keyword leg's postings and the filters' columns are real. Only the
vectors are derived: the base chunk's embedding plus a quarter of another base chunk's and a little
Gaussian noise, normalized; each copy's project names one of ten team members (MEMBERS), and copy k is
dated k days before its original (as if the base had been written again each day, back over the years)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "examples" / "eval"
CORPORA = ("bilingual-twins", "en-questions-ja-notes", "ja-questions-en-notes", "ja-conversations", "web-archive")
QUESTION_SETS = ("memories-questions", "bilingual-twins", "en-questions-ja-notes", "ja-questions-en-notes",
                 "web-archive")
KINDS = ("session", "wiki", "minutes", "web")
NOISE_VECTORS = 4096
NOISE_SIGMA = 0.01  # per dimension: the noise vector's norm is about 0.2 for 384 dimensions
PARTNER_WEIGHT = 0.25
# Copy k of the base belongs to project member<k % MEMBERS>, as if MEMBERS people's memories shared the
# database: a filter on one of them keeps a tenth of the index, in no relation to what the chunks say (the
# kind, which a copy keeps from its original, clusters with meaning instead).
MEMBERS = 10
MEMBER = "member3"
# The filters a search is measured under besides the project: the last SINCE_DAYS days (copies are dated by
# copy number, so this too is unrelated to meaning), and a tag and a frontmatter field that copies keep from
# their originals (which cluster with meaning, as the kind does).
SINCE_DAYS = 90
TAG = "t3"
WHERE = {"project": "p1"}


def write_base(root: Path) -> int:
    """examples/memories and the eval sets' notes as memories under `root`; returns the file count."""
    shutil.copytree(ROOT / "examples" / "memories", root)
    count = sum(1 for _ in root.rglob("*.md"))
    for number, line in enumerate(line for name in CORPORA
                                  for line in (EVAL / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines()):
        note = json.loads(line)
        kind = KINDS[number % len(KINDS)]
        day = f"2026-{1 + number % 11:02d}-{1 + number % 28:02d}"
        path = root / "raw" / kind / day / f"{number:04d}_{hashlib.sha1(note['_id'].encode()).hexdigest()[:8]}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        title = note.get("title") or note["_id"]
        path.write_text(f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\nkind: {kind}\ndate: {day}\n"
                        f"project: p{number % 5}\ntags: [t{number % 7}]\n---\n\n{note['text']}\n", encoding="utf-8")
        count += 1
    return count


def questions(count: int, seed: int = 5) -> list[str]:
    texts = [json.loads(line)["text"] for name in QUESTION_SETS
             for line in (EVAL / name / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    return random.Random(seed).sample(texts, min(count, len(texts)))


def percentiles(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 1)}


class Scale:
    def __init__(self, workdir: str | None, say=print):
        self.say = say
        self.owned = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="memsearch-scale-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.root = self.workdir / "memories"
        for key in [key for key in os.environ if key.startswith(("MEMORIES_", "COCOINDEX_", "VOYAGE_"))]:
            del os.environ[key]
        os.environ.update({"MEMORIES_DATA_DIR": str(self.workdir / "data"), "MEMORIES_DIR": str(self.root)})
        from memory_search.config import Settings

        self.settings = Settings.from_env()

    # --- the base ----------------------------------------------------------------------------------

    def base(self) -> dict:
        """Index the base with the bundled model (once per workdir); its size and the model's chunks/s."""
        from memory_search.embedding.local import LocalEmbedder
        from memory_search.indexing.indexer import Indexer

        embedder = LocalEmbedder()
        if not self.root.exists():  # a grown index is never indexed again: its copies have no files
            files = write_base(self.root)
            self.say(f"indexing the base: {files} files, embedded by the bundled model")
            Indexer(self.settings, embedder=embedder).run()
        measured = self.workdir / "model-rate.json"
        if measured.exists():
            return json.loads(measured.read_text())
        texts = self._texts(160)
        embedder.embed_documents(texts[:8])  # loaded and warm
        started = time.perf_counter()
        for offset in range(0, len(texts), 32):
            embedder.embed_documents(texts[offset:offset + 32])
        rate = len(texts) / (time.perf_counter() - started)
        figures = {"chunks": self._count(), "model_chunks_per_s": round(rate, 1),
                   "first_index_100k_min": round(100_000 / rate / 60, 1), "load": round(os.getloadavg()[0], 2)}
        measured.write_text(json.dumps(figures))
        return figures

    def _texts(self, limit: int) -> list[str]:
        with self.connect() as conn:
            rows = conn.execute(self.sql("SELECT coalesce(embed_context || E'\\n\\n', '') || chunk_text FROM {chunks} "
                                         "ORDER BY id LIMIT %s"), (limit,)).fetchall()
        return [row[0] for row in rows]

    # --- growing -----------------------------------------------------------------------------------

    def connect(self, read_only: bool = False):
        from memory_search.storage.database import connect

        return connect(self.settings, read_only=read_only)

    @property
    def tables(self):
        from memory_search.storage.schema import ManagedTables

        return ManagedTables.of(self.settings.memories_root)

    def sql(self, text: str, **more):
        from psycopg import sql

        names = {name: self.tables.sql(name) for name in ("chunks", "files", "postings", "terms", "meta")}
        return sql.SQL(text).format(**names, **more)

    def _count(self) -> int:
        with self.connect() as conn:
            return conn.execute(self.sql("SELECT count(*) FROM {chunks}")).fetchone()[0]

    def _keep_base(self, conn) -> None:
        """The base's rows, numbered, in side tables (once): every copy is made from them. Logged, so a kept
        --workdir keeps them through a restart of its server (an unlogged table is emptied by one)."""
        if conn.execute("SELECT to_regclass('scale_base_chunks')").fetchone()[0]:
            if not conn.execute("SELECT EXISTS (SELECT 1 FROM scale_base_chunks)").fetchone()[0]:
                from memory_search.errors import UsageError

                raise UsageError(f"the base rows kept in {self.workdir} are gone (an earlier version kept them in "
                                 "unlogged tables, which a restart of the server empties): use another --workdir")
            return
        conn.execute(self.sql(
            "CREATE TABLE scale_base_chunks AS SELECT row_number() OVER (ORDER BY c.id) - 1 AS n, "
            "c.*, f.relpath FROM {chunks} c JOIN {files} f USING (filename)"))
        conn.execute("CREATE UNIQUE INDEX ON scale_base_chunks (n)")
        conn.execute(self.sql("CREATE TABLE scale_base_files AS SELECT * FROM {files} WHERE chunk_count > 0"))
        conn.execute(self.sql("CREATE TABLE scale_base_postings AS SELECT p.*, b.n FROM {postings} p "
                              "JOIN scale_base_chunks b ON b.id = p.chunk_id"))
        conn.execute(self.sql("CREATE TABLE scale_base_terms AS SELECT * FROM {terms}"))
        conn.execute(self.sql("CREATE TABLE scale_base_meta AS SELECT * FROM {meta}"))
        rng = random.Random(17)
        dimension = len(json.loads(conn.execute("SELECT embedding::text FROM scale_base_chunks LIMIT 1").fetchone()[0]))
        conn.execute(f"CREATE TABLE scale_noise (n integer PRIMARY KEY, v vector({dimension}))")
        with conn.cursor().copy("COPY scale_noise (n, v) FROM STDIN") as copy:
            for number in range(NOISE_VECTORS):
                copy.write_row((number, "[" + ",".join(f"{rng.gauss(0, NOISE_SIGMA):.5f}"
                                                       for _ in range(dimension)) + "]"))
        conn.execute("ANALYZE scale_base_chunks, scale_base_postings, scale_noise")

    def grow(self, target: int) -> dict:
        """Copy base rows until the index holds `target` chunks; its secondary indexes are dropped while the
        rows go in and made again after (by the indexer's own schema), then the tables are vacuumed."""
        from memory_search.errors import UsageError
        from memory_search.storage import packing, writer as index_writer
        from memory_search.storage.schema import find_index

        started = time.perf_counter()
        with self.connect() as conn:
            index = self.tables.on(conn)
            self._keep_base(conn)
            base, span = conn.execute("SELECT count(*), max(id) FROM scale_base_chunks").fetchone()
            have = conn.execute(self.sql("SELECT count(*) FROM {chunks}")).fetchone()[0]
            if target == have:  # grown by an earlier run: measured again as it is
                return {"chunks": have, "grow_s": 0.0}
            if target < have:
                raise UsageError(f"the index in {self.workdir} already holds {have} chunks: give sizes from "
                                 f"{have} up, or another --workdir")
            info = find_index(conn, self.settings.memories_root)
            spec = info.spec
            index_writer.create_schema(index, spec, self.settings.memories_root)  # upgraded first
            info = find_index(conn, self.settings.memories_root)
            self._drop_indexes(conn)
            mix = "[" + ",".join([str(PARTNER_WEIGHT)] * info.dimension) + "]"
            # Copy number k (1, 2, ...) of base chunk n is chunk n + base * k overall, with id id + span * k.
            first, last = have, target
            conn.execute(self.sql(
                "INSERT INTO {files} (filename, relpath, content_hash, size, mtime_ns, chunk_count, indexed_at) "
                "SELECT %(root)s || '/copy' || k || '/' || f.relpath, 'copy' || k || '/' || f.relpath, "
                "f.content_hash, f.size, f.mtime_ns, f.chunk_count, f.indexed_at "
                "FROM generate_series(%(k0)s::int, %(k1)s::int) k CROSS JOIN scale_base_files f "
                "ON CONFLICT DO NOTHING"),
                {"root": str(self.settings.memories_root), "k0": max(1, first // base), "k1": (last - 1) // base})
            self.say(f"  copying chunks {first:,}..{last:,}")
            conn.execute(self.sql(
                "INSERT INTO {chunks} (id, filename, chunk_index, start_line, end_line, chunk_text, embedding, "
                "embed_context, term_count, kind, status, title, tags, project, recorded_on, recorded_time, "
                "frontmatter) "
                "SELECT b.id + %(span)s * g / %(base)s, %(root)s || '/copy' || (g / %(base)s) || '/' || b.relpath, "
                "b.chunk_index, b.start_line, b.end_line, b.chunk_text, "
                "l2_normalize(b.embedding::vector + p.embedding::vector * %(mix)s::vector + z.v), "
                "b.embed_context, b.term_count, b.kind, b.status, b.title, b.tags, "
                "'member' || (g / %(base)s) %% " + str(MEMBERS) + ", b.recorded_on - (g / %(base)s)::int, "
                "b.recorded_time, b.frontmatter "
                "FROM generate_series(%(first)s::bigint, %(last)s::bigint - 1) g "
                "JOIN scale_base_chunks b ON b.n = g %% %(base)s "
                "JOIN scale_base_chunks p ON p.n = (g * 7 + g / %(base)s * 31 + 1) %% %(base)s "
                "JOIN scale_noise z ON z.n = (g * 13 + g / %(base)s) %% " + str(NOISE_VECTORS)),
                {"span": span, "base": base, "root": str(self.settings.memories_root), "mix": mix,
                 "first": first, "last": last})
            self.say("  copying postings")
            conn.execute(self.sql(
                "INSERT INTO {postings} (term, chunk_id, tf, dl) "
                "SELECT p.term, p.chunk_id + %(span)s * k, p.tf, p.dl FROM scale_base_postings p "
                "CROSS JOIN generate_series(%(k0)s::int, %(k1)s::int) k "
                "WHERE k * %(base)s + p.n >= %(first)s AND k * %(base)s + p.n < %(last)s"),
                {"span": span, "base": base, "first": first, "last": last, "k0": first // base,
                 "k1": (last - 1) // base})
            # Exact document frequencies and totals: full copies of the base, plus the part of the last one.
            full, part = divmod(target, base)
            conn.execute(self.sql(
                "UPDATE {terms} t SET df = b.df * %(full)s + coalesce(p.df, 0) FROM scale_base_terms b "
                "LEFT JOIN (SELECT term, count(*) AS df FROM scale_base_postings WHERE n < %(part)s GROUP BY term) p "
                "USING (term) WHERE b.term = t.term"),
                {"full": full, "part": part})
            chunks, terms = conn.execute(self.sql("SELECT count(*), sum(term_count) FROM {chunks}")).fetchone()
            index_writer.write_meta(index, {"chunks": str(chunks), "total_terms": str(terms)})
            self.say("  making the secondary indexes again, vacuuming")
            index_writer.create_schema(index, spec, self.settings.memories_root)
            index_writer.vacuum(index)
            conn.execute(self.sql("VACUUM ANALYZE {files}, {terms}"))
            grown = round(time.perf_counter() - started, 1)
            packed = None
            if packing.due(index, chunks):  # as the end of an index run does
                started = time.perf_counter()
                packing.pack(index, say=lambda message: self.say("  " + message))
                index_writer.vacuum(index)
                packed = round(time.perf_counter() - started, 1)
        return {"chunks": chunks, "grow_s": grown, "pack_s": packed}

    def _drop_indexes(self, conn) -> None:
        rows = conn.execute(
            "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = ANY(ARRAY[to_regclass(%s), to_regclass(%s)]) AND NOT i.indisprimary "
            "AND NOT i.indisunique",
            (self.tables.chunks, self.tables.postings)).fetchall()
        for (name,) in rows:
            conn.execute(f"DROP INDEX {name}")

    def build_hnsw(self) -> dict:
        """The indexer's own builds, timed, with the session settings it chose: the graph of all chunks, and
        from KIND_GRAPH_CHUNKS on a graph per kind of record (either None when built by an earlier run)."""
        from memory_search.indexing.pipeline import HNSW_MIN_CHUNKS, KIND_GRAPH_CHUNKS
        from memory_search.storage import writer as index_writer
        from memory_search.storage.schema import find_index

        with self.connect() as conn:
            info = find_index(conn, self.settings.memories_root)
            chunks = conn.execute(self.sql("SELECT count(*) FROM {chunks}")).fetchone()[0]
            chosen = index_writer.hnsw_build_settings(
                conn, index_writer.hnsw_graph_bytes(chunks, info.vector_type, info.dimension))
            result = {"hnsw_build_s": None, "kind_graphs_s": None, "hnsw_settings": chosen}
            if not info.has_hnsw:
                started = time.perf_counter()
                index_writer.ensure_hnsw(self.tables.on(conn), info.spec, say=self.say)
                result["hnsw_build_s"] = round(time.perf_counter() - started, 1)
            if chunks >= KIND_GRAPH_CHUNKS and not conn.execute(
                    "SELECT 1 FROM pg_class WHERE relname = %s",
                    (index_writer.kind_graph(self.tables, "session"),)).fetchone():
                started = time.perf_counter()
                index_writer.ensure_kind_graphs(self.tables.on(conn), info.spec, HNSW_MIN_CHUNKS, say=self.say)
                result["kind_graphs_s"] = round(time.perf_counter() - started, 1)
            return result

    # --- measuring ---------------------------------------------------------------------------------

    def sizes(self) -> dict:
        """Bytes per part: tables (with their TOAST) and each kind of index."""
        parts = {}
        with self.connect() as conn:
            for table in self.tables.all:
                name = table.removeprefix(self.tables.prefix + "__")
                parts[f"{name} table"] = conn.execute("SELECT pg_table_size(to_regclass(%s))", (table,)).fetchone()[0]
                for index, size in conn.execute(
                        "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c "
                        "ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(%s)", (table,)).fetchall():
                    parts[index.removeprefix(self.tables.prefix + "__")] = size
        return parts

    def measure(self, queries: list[str], ef_search: list[int] = ()) -> dict:
        from memory_search.embedding.local import LocalEmbedder
        from memory_search.search.filters import Filters
        from memory_search.search.layouts import layout_for
        from memory_search.search.retrieval import Searcher, SearchRequest
        from memory_search.storage.schema import find_index

        embedder = LocalEmbedder()
        result = {}
        with self.connect(read_only=True) as conn:
            info = find_index(conn, self.settings.memories_root)
            layout = layout_for(info, self.settings.memories_root, remote=True)
            searcher = Searcher(conn, layout, embedder)
            latest = conn.execute(self.sql("SELECT max(recorded_on) FROM {chunks}")).fetchone()[0]
            runs = {"keyword": {"mode": "keyword"}, "semantic": {"mode": "semantic"}, "hybrid": {"mode": "hybrid"}}
            filtered = self.filters(latest)
            runs.update({name: {"mode": "hybrid", "filters": filters} for name, filters in filtered.items()})
            for query in queries:  # warm: the model, the caches, the planner
                searcher.search(SearchRequest(query=query, snippets=False, time=False))
            for name, options in runs.items():
                seconds, full = [], 0
                for query in queries:
                    started = time.perf_counter()
                    hits = searcher.search(SearchRequest(query=query, snippets=False, time=False, **options))
                    seconds.append(time.perf_counter() - started)
                    full += len(hits) >= 10
                result[name] = percentiles(seconds) | {"full": round(full / len(queries), 3)}
            result["kept"] = self._kept(conn, filtered)
            result["keyword leg"] = self._keyword_leg(conn, layout, queries)
            vectors = [embedder.embed_query(query) for query in queries]
            result["recall@10"] = self._recall(conn, layout, vectors, Filters())
            result["recall@10 session"] = self._recall(conn, layout, vectors, Filters(scope="session"))
            result["recall@10 project"] = self._recall(conn, layout, vectors, Filters(project=MEMBER))
            result["hnsw"] = info.has_hnsw
            if info.has_hnsw and ef_search:
                result["ef_search"] = self._ef_search(conn, layout, vectors, ef_search)
        return result

    @staticmethod
    def filters(latest) -> dict:
        """The filtered hybrid searches measured, by name."""
        import datetime as dt

        from memory_search.search.filters import Filters, where_conditions

        return {"hybrid session": Filters(scope="session"), "hybrid project": Filters(project=MEMBER),
                "hybrid since": Filters(since=latest - dt.timedelta(days=SINCE_DAYS)),
                "hybrid tag": Filters(tags=(TAG,)), "hybrid where": Filters(where=where_conditions(WHERE))}

    def _kept(self, conn, filters: dict) -> dict:
        """The share of the index each filter keeps."""
        from psycopg import sql

        from memory_search.search.filters import sql_conditions

        total = conn.execute(self.sql("SELECT count(*) FROM {chunks}")).fetchone()[0]
        kept = {}
        for name, chosen in filters.items():
            clauses, params = sql_conditions(chosen)
            query = sql.SQL("SELECT count(*) FROM {} WHERE ").format(self.tables.sql("chunks")) + sql.SQL(
                " AND ").join(clauses)
            kept[name] = round(conn.execute(query, params).fetchone()[0] / max(total, 1), 3)
        return kept

    def _keyword_leg(self, conn, layout, queries: list[str]) -> dict:
        """The keyword leg alone (its SQL, as a hybrid search asks it), over the questions and over pairs of the
        index's twenty commonest terms (the most postings a query can meet): p50/p95 ms, and how many of the
        queries wrote temporary files (sorted or hashed on disk), read from EXPLAIN (ANALYZE, BUFFERS)."""
        from collections import Counter

        from memory_search.search.filters import Filters
        from memory_search.search.retrieval import FUSION_DEPTH
        from memory_search.text.tokens import tokenize

        common = [row[0] for row in conn.execute(self.sql("SELECT term FROM {terms} ORDER BY df DESC LIMIT 20"))]
        kinds = {"questions": [Counter(tokenize(query)) for query in queries],
                 "common words": [Counter(common[at:at + 2]) for at in range(0, len(common), 2)]}
        explaining = _Explaining(conn)
        result = {}
        for kind, term_sets in kinds.items():
            for terms in term_sets:  # warm
                layout.keyword(conn, terms, Filters(), FUSION_DEPTH)
            seconds = []
            for terms in term_sets:
                started = time.perf_counter()
                layout.keyword(conn, terms, Filters(), FUSION_DEPTH)
                seconds.append(time.perf_counter() - started)
            spilled = 0
            for terms in term_sets:
                explaining.temp_blocks = 0
                layout.keyword(explaining, terms, Filters(), FUSION_DEPTH)
                spilled += explaining.temp_blocks > 0
            result[kind] = {**percentiles(seconds), "spilled": spilled, "queries": len(term_sets)}
        return result

    def _ef_search(self, conn, layout, vectors, values: list[int]) -> dict:
        """Recall@10 (unfiltered and filtered) and the semantic leg's p50/p95 at other hnsw.ef_search values."""
        from memory_search.search import layouts
        from memory_search.search.filters import Filters
        from memory_search.search.retrieval import FUSION_DEPTH

        kept, figures = layouts.HNSW_EF_SEARCH, {}
        try:
            for value in values:
                layouts.HNSW_EF_SEARCH = value
                seconds = []
                for vector in vectors:
                    started = time.perf_counter()
                    layout.semantic(conn, vector, Filters(), FUSION_DEPTH)
                    seconds.append(time.perf_counter() - started)
                figures[value] = {"leg": percentiles(seconds),
                                  "recall@10": self._recall(conn, layout, vectors, Filters()),
                                  "recall@10 session": self._recall(conn, layout, vectors, Filters(scope="session"))}
        finally:
            layouts.HNSW_EF_SEARCH = kept
        return figures

    def _recall(self, conn, layout, vectors, filters) -> dict | None:
        """The share of the exact 10 nearest (of the filter's chunks) among the 10 best the semantic leg
        returns when asked for as many as a hybrid search asks it for (retrieval.FUSION_DEPTH)."""
        from memory_search.search.retrieval import FUSION_DEPTH

        if not layout.info.has_hnsw:
            return None
        span = conn.execute("SELECT max(id) FROM scale_base_chunks").fetchone()[0]
        found = total = found_sources = filled = 0
        # The exact scans on a connection of their own: a plan the server caches for a statement prepared with
        # index scans off could outlive the setting and be timed afterwards.
        with self.connect(read_only=True) as scanning:
            scanning.execute("SET enable_indexscan = off")
            exact_tens = [[candidate.id for candidate in layout.semantic(scanning, vector, filters, 10)]
                          for vector in vectors]
        for vector, exact in zip(vectors, exact_tens):
            leg = layout.semantic(conn, vector, filters, FUSION_DEPTH)
            filled += len(leg) >= FUSION_DEPTH
            approximate = [candidate.id for candidate in leg[:10]]
            found += len(set(approximate) & set(exact))
            total += len(exact)
            # Copies of one base chunk lie close together: which of them is nearest is decided by the noise.
            # By source, a hit counts when it is a copy of a chunk whose copy is in the exact ten.
            sources = {(id_ - 1) % span for id_ in exact}
            found_sources += sum(1 for id_ in approximate if (id_ - 1) % span in sources)
        return {"rows": round(found / max(total, 1), 3), "sources": round(found_sources / max(total, 1), 3),
                "filled": round(filled / max(len(vectors), 1), 3)}

    def halfvec_agreement(self, queries: list[str]) -> dict:
        """What half precision changes on the base's real embeddings: the share of the exact ten nearest in
        single precision that are the exact ten in half precision, and the largest cosine difference."""
        from memory_search.embedding import vector_literal
        from memory_search.embedding.local import LocalEmbedder

        embedder = LocalEmbedder()
        same = total = 0
        largest = 0.0
        with self.connect() as conn:
            self._keep_base(conn)
            for query in queries:
                literal = vector_literal(embedder.embed_query(query))
                rows = conn.execute(
                    "SELECT id, 1 - (embedding::vector <=> %s::vector), 1 - (embedding::halfvec <=> %s::halfvec) "
                    "FROM scale_base_chunks", (literal, literal)).fetchall()
                single = {row[0] for row in sorted(rows, key=lambda row: -row[1])[:10]}
                half = {row[0] for row in sorted(rows, key=lambda row: -row[2])[:10]}
                same += len(single & half)
                total += 10
                largest = max(largest, max(abs(row[1] - row[2]) for row in rows))
        return {"top10_same": round(same / total, 3), "largest_cosine_difference": round(largest, 5)}

    def serve(self, levels: list[int], seconds: float) -> list[dict]:
        """The team server over this index (serve.py with a token, the index served as db "team") under each
        level of concurrent clients asking examples/eval's questions: faces_lib.team_server's figures."""
        from faces_lib import team_server

        return team_server(dict(os.environ), self.workdir, self.tables.prefix, levels, seconds, questions(40))

    def run(self, targets: list[int], query_count: int, ef_search: list[int] = (), serve_levels: list[int] = (),
            serve_seconds: float = 30.0) -> dict:
        report = {"machine": {"cores": os.cpu_count(), "load": os.getloadavg()[0],
                              "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
                  "base": self.base(), "sizes": []}
        self.say(f"base: {report['base']}")
        queries = questions(query_count)
        report["halfvec"] = self.halfvec_agreement(queries)
        with self.connect() as conn:
            report["settings"] = dict(conn.execute(
                "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name IN ('shared_buffers', "
                "'maintenance_work_mem', 'max_parallel_maintenance_workers', 'work_mem')").fetchall())
        for target in targets:
            self.say(f"growing to {target:,} chunks")
            row = self.grow(target)
            self.say(f"  building HNSW over {row['chunks']:,} chunks")
            row.update(self.build_hnsw())
            row["load"] = round(os.getloadavg()[0], 2)
            row["parts"] = self.sizes()
            self.say(f"  searching ({len(queries)} questions per mode)")
            row.update(self.measure(queries, ef_search))
            if serve_levels:
                self.say(f"  the team server under {', '.join(map(str, serve_levels))} clients, "
                         f"{serve_seconds:g} s each")
                row["serve"] = self.serve(serve_levels, serve_seconds)
            self.say(f"  {json.dumps(row)}")
            report["sizes"].append(row)
        with self.connect() as conn:
            report["vector_type"] = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                                                 "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
                                                 (self.tables.chunks,)).fetchone()[0]
        return report

    def close(self) -> None:
        from memory_search.storage.database import EmbeddedServer

        EmbeddedServer(self.settings.data_dir).stop()  # a kept workdir's server starts again on demand
        if self.owned:
            shutil.rmtree(self.workdir, ignore_errors=True)


class _Explaining:
    """A connection whose statements are run once under EXPLAIN (ANALYZE, BUFFERS) first, adding up the
    temporary blocks they wrote."""

    def __init__(self, conn):
        self.conn, self.temp_blocks = conn, 0

    def execute(self, query, params=None):
        from psycopg import sql

        statement = query if isinstance(query, sql.Composable) else sql.SQL(query)
        plan = self.conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + statement, params).fetchone()[0]
        self.temp_blocks += plan[0]["Plan"].get("Temp Written Blocks", 0)
        return self.conn.execute(query, params)


def report_text(report: dict) -> str:
    base = report["base"]
    lines = [f"base: {base['chunks']:,} real chunks; bundled model {base['model_chunks_per_s']} chunks/s, "
             f"so a first index of 100,000 chunks takes about {base['first_index_100k_min']} min",
             f"stored vectors: {report['vector_type']}; {report['machine']['cores']} cores, "
             f"{report['machine']['memory_gb']} GB; PostgreSQL {report['settings']}",
             f"half precision on the base's real embeddings: exact top 10 the same {report['halfvec']['top10_same']}"
             f", largest cosine difference {report['halfvec']['largest_cosine_difference']}",
             "",
             "| chunks | keyword | semantic | hybrid | hybrid --scope session | hybrid --project "
             f"{MEMBER} | hybrid --since (last {SINCE_DAYS} days) | hybrid --tag {TAG} | hybrid --where "
             f"'{json.dumps(WHERE)}' | recall@10 (session; project) | index size | bytes/chunk | HNSW build | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["sizes"]:
        total = sum(row["parts"].values())
        cells = [f"{row[mode]['p50_ms']}/{row[mode]['p95_ms']}" if mode in row else "-"
                 for mode in ("keyword", "semantic", "hybrid", "hybrid session", "hybrid project", "hybrid since",
                              "hybrid tag", "hybrid where")]
        lines.append(f"| {row['chunks']:,} | " + " | ".join(cells)
                     + f" | {_recall(row['recall@10'])} ({_recall(row['recall@10 session'])}; "
                     f"{_recall(row.get('recall@10 project', '-'))}) "
                     f"| {total / 2**20:,.0f} MB | {total / row['chunks']:,.0f} "
                     f"| {_build_time(row)} "
                     f"| {row['load']} |")
    for row in report["sizes"]:
        if row.get("kept"):
            lines.append(f"  {row['chunks']:,} chunks, the share each filter keeps, and of its searches those that "
                         "came back with a full ten: " + "; ".join(
                             f"{name.removeprefix('hybrid ')} {share} ({row[name].get('full', '-')})"
                             for name, share in row["kept"].items() if name in row))
    for row in report["sizes"]:
        for kind, figures in (row.get("keyword leg") or {}).items():
            lines.append(f"  {row['chunks']:,} chunks, keyword leg alone, {kind}: {figures['p50_ms']}/"
                         f"{figures['p95_ms']} ms, {figures['spilled']} of {figures['queries']} spilled to disk")
    for row in report["sizes"]:
        for value, figures in (row.get("ef_search") or {}).items():
            lines.append(f"  {row['chunks']:,} chunks, hnsw.ef_search {value}: semantic leg "
                         f"{figures['leg']['p50_ms']}/{figures['leg']['p95_ms']} ms, recall@10 "
                         f"{_recall(figures['recall@10'])} ({_recall(figures['recall@10 session'])})")
    for row in report["sizes"]:
        if row.get("serve"):
            from faces_lib import team_text

            lines += ["", f"the team server (serve.py, a bearer token, 127.0.0.1) at {row['chunks']:,} chunks, "
                      "/api/search (its keyword and semantic branches) back to back:", team_text(row["serve"])]
    if report["sizes"]:
        last = report["sizes"][-1]
        lines += ["", f"bytes per chunk by part at {last['chunks']:,} chunks:"]
        for part, size in sorted(last["parts"].items(), key=lambda item: -item[1]):
            lines.append(f"  {part:<24} {size / last['chunks']:>8,.0f}")
    lines.append("latencies p50/p95 ms, in-process, the query embedded by the model each time; recall@10 of the "
                 "semantic leg against an exact scan, by row and by the base chunk a row copies")
    return "\n".join(lines)


def _build_time(row: dict) -> str:
    """The graph of all's build time, and the graphs per kind's after a plus when there are any."""
    text = "built before" if row.get("hnsw_build_s") is None else f"{row['hnsw_build_s']} s"
    if row.get("kind_graphs_s") is not None:
        text += f" + {row['kind_graphs_s']} s by kind"
    if row.get("pack_s") is not None:
        text += f"; postings packed in {row['pack_s']} s"
    return text


def _recall(recall) -> str:
    if not isinstance(recall, dict):
        return str(recall)
    return f"{recall['rows']}/{recall['sources']}"
