#!/usr/bin/env python3
"""Postings as rows (the index's layout) against postings grouped by term in blocks: see `postings_lab.py --help`.
Development tooling, not installed."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(ROOT, "src"))
from memory_search.faces.environment import ensure  # noqa: E402

ensure()

import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import click  # noqa: E402

from memory_search.faces.cli import command, run  # noqa: E402

EXAMPLES = """\
  nice postings_lab.py                                   # 200,000 chunks, blocks of 128 and 1,024
  postings_lab.py --chunks 50000 --block 256 --workdir /var/tmp/postings-lab
  postings_lab.py --index memsearch_notes_0123abcd       # a real index's postings as blocks (db.py indexes)"""

K1, B = 1.2, 0.75
# An entry packs a posting into one bigint: the chunk id, then its count of the term (10 bits) and the
# chunk's length in terms (20 bits), decoded by shifts in SQL.
PACK = "(chunk_id << 30) | (least(tf, 1023) << 20) | least(dl, 1048575)"
ROWS_QUERY = f"""SELECT p.chunk_id, sum(q.w * p.tf * {K1 + 1} / (p.tf + {K1} * (1 - {B} + {B} * p.dl / %s))) AS s
  FROM unnest(%s::text[], %s::float8[]) AS q(t, w) JOIN lab_rows p ON p.term = q.t
  GROUP BY p.chunk_id ORDER BY s DESC, p.chunk_id LIMIT 20"""
BLOCKS_QUERY = f"""SELECT e >> 30 AS chunk_id, sum(q.w * ((e >> 20) & 1023) * {K1 + 1} /
  (((e >> 20) & 1023) + {K1} * (1 - {B} + {B} * (e & 1048575) / %s))) AS s
  FROM unnest(%s::int4[], %s::float8[]) AS q(t, w) JOIN lab_blocks p ON p.term_id = q.t
  CROSS JOIN LATERAL unnest(p.entries) AS e GROUP BY 1 ORDER BY s DESC, 1 LIMIT 20"""


@command(EXAMPLES)
@click.option("--chunks", "chunk_count", type=click.IntRange(min=1000), default=200_000, show_default=True,
              help="chunks to generate")
@click.option("--block", "blocks", default="128,1024", show_default=True,
              help="postings per block, comma-separated: each is built and measured")
@click.option("--vocabulary", type=click.IntRange(min=100), default=300_000, show_default=True,
              help="distinct terms; a term's frequency falls with its rank (Zipf, exponent 1.05)")
@click.option("--workdir", type=click.Path(file_okay=False), default=None,
              help="where the embedded PostgreSQL lives (default: a temporary folder, removed at the end)")
@click.option("--seed", type=int, default=5, show_default=True)
@click.option("--index", "prefix", default=None, metavar="PREFIX",
              help="instead, measure the postings of this index of the configured database as blocks (in a "
                   "temporary table; the index is only read)")
def postings_lab_command(chunk_count, blocks, vocabulary, workdir, seed, prefix):
    """Measure what the keyword leg's postings cost as rows and as blocks, on the same generated chunks.

    Chunks of 90 words drawn by a Zipf law over the vocabulary (about 70 distinct terms a chunk) are
    written as the index writes postings today (a row per term and chunk, a covering b-tree by term, a
    b-tree by chunk) and as blocks: one row per term and run of chunk ids, its postings packed into a
    bigint array (chunk id, count, chunk length), which PostgreSQL compresses once a block outgrows
    2 kB. Prints bytes per chunk of each part, with the chunk's own list of term ids (what a writer of
    blocks keeps to find a deleted chunk's postings), and the p50/p95 ms of 60 BM25 queries read both
    ways under the keyword leg's postings budget, checking that both rank the same chunks with the same
    scores.

    With --index, a real index's postings are grouped into blocks in a temporary table instead, and their
    bytes per chunk printed beside the rows'.

    Exit codes: 0 done; 1 the two layouts disagree, the index has no chunks, or the database failed."""
    import numpy
    import psycopg

    from memory_search.errors import MemorySearchError
    from memory_search.search.layouts import POSTINGS_BUDGET
    from memory_search.storage.database import EmbeddedServer

    sizes = [int(value) for value in blocks.split(",") if value.strip()]
    if prefix is not None:
        return _real_index(prefix, sizes)
    folder = Path(workdir or tempfile.mkdtemp(prefix="memsearch-postings-"))
    server = EmbeddedServer(folder)
    try:
        url = server.start()
        with psycopg.connect(url, autocommit=True) as conn, psycopg.connect(url, autocommit=True) as other:
            rng = numpy.random.default_rng(seed)
            weights = 1 / numpy.arange(1, vocabulary + 1) ** 1.05
            weights /= weights.sum()
            _generate(conn, other, rng, weights, chunk_count)
            frequencies = dict(conn.execute("SELECT term, df FROM lab_terms").fetchall())
            ids = dict(conn.execute("SELECT term, id FROM lab_terms").fetchall())
            average = conn.execute("SELECT avg(dl) FROM lab_lengths").fetchone()[0]
            queries = _queries(rng, weights, random.Random(seed), frequencies)
            rows = _part_sizes(conn, "lab_rows", chunk_count)
            postings = conn.execute("SELECT count(*) FROM lab_rows").fetchone()[0]
            read = statistics.median(query[1] for query in queries)
            click.echo(f"{chunk_count:,} chunks, {postings / chunk_count:.1f} postings a chunk; queries read "
                       f"{read:,.0f} postings (median), at most {POSTINGS_BUDGET:,} unless one term has more")
            click.echo(f"term ids kept per chunk: {_term_ids_bytes(conn):.0f} bytes a chunk")
            click.echo("| layout | table bytes/chunk | indexes bytes/chunk | total | p50 ms | p95 ms |")
            click.echo("|---|---|---|---|---|---|")
            click.echo(_line("rows (today)", rows, _times(conn, ROWS_QUERY, queries, average, None)))
            reference = _ranked(conn, ROWS_QUERY, queries, average, None)
            for size in sizes:
                _build_blocks(conn, size)
                if _ranked(conn, BLOCKS_QUERY, queries, average, ids) != reference:
                    raise MemorySearchError(f"blocks of {size} rank differently from rows")
                click.echo(_line(f"blocks of {size}", _part_sizes(conn, "lab_blocks", chunk_count),
                                 _times(conn, BLOCKS_QUERY, queries, average, ids)))
    except psycopg.Error as error:
        raise MemorySearchError(f"the database failed: {str(error).splitlines()[0]}") from None
    finally:
        server.stop()
        if workdir is None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


def _real_index(prefix: str, sizes: list[int]) -> None:
    """Bytes per chunk of a real index's postings as rows and as blocks of each size, with its term ids."""
    import psycopg
    from psycopg import sql

    from memory_search.config import Settings
    from memory_search.errors import MemorySearchError
    from memory_search.storage.database import connect
    from memory_search.storage.schema import ManagedTables

    tables = ManagedTables(prefix)
    try:
        with connect(Settings.from_env(), read_only=False) as conn:
            def one(statement, *args):
                return conn.execute(sql.SQL(statement).format(postings=tables.sql("postings"),
                                                              chunks=tables.sql("chunks")), args).fetchone()[0]

            chunks = one("SELECT count(*) FROM {chunks}")
            if not chunks:
                raise MemorySearchError(f"the index {prefix} has no chunks: db.py indexes lists the indexes")
            postings = one("SELECT count(*) FROM {postings}")
            rows = one("SELECT pg_total_relation_size(%s)", tables.postings)
            term_ids = one("SELECT avg(pg_column_size(ids)) FROM (SELECT array_agg(0::int4) AS ids FROM {postings} "
                           "GROUP BY chunk_id) s")
            click.echo(f"{prefix}: {chunks:,} chunks, {postings / chunks:.1f} postings a chunk, "
                       f"{one('SELECT count(DISTINCT term) FROM {postings}'):,} terms; term ids kept per chunk: "
                       f"{float(term_ids):.0f} bytes a chunk")
            click.echo(f"| rows (today) | {rows / chunks:,.0f} bytes a chunk |")
            for size in sizes:
                conn.execute("CREATE TEMPORARY TABLE lab_blocks (term_id int4 NOT NULL, first bigint NOT NULL, "
                             "entries bigint[] NOT NULL, PRIMARY KEY (term_id, first))")
                conn.execute(sql.SQL(
                    f"INSERT INTO lab_blocks SELECT dense_rank() OVER (ORDER BY term), first, entries FROM ("
                    f"SELECT term, min(chunk_id) AS first, array_agg({PACK} ORDER BY chunk_id) AS entries FROM ("
                    f"SELECT *, (row_number() OVER (PARTITION BY term ORDER BY chunk_id) - 1) / {int(size)} AS block "
                    f"FROM {{}}) s GROUP BY term, block) b").format(tables.sql("postings")))
                size_bytes = conn.execute("SELECT pg_total_relation_size('lab_blocks')").fetchone()[0]
                click.echo(f"| blocks of {size} | {size_bytes / chunks:,.0f} bytes a chunk |")
                conn.execute("DROP TABLE lab_blocks")
    except psycopg.Error as error:
        raise MemorySearchError(f"the database failed: {str(error).splitlines()[0]}") from None


def _generate(conn, other, rng, weights, count: int) -> None:
    import numpy

    for statement in ("DROP TABLE IF EXISTS lab_rows, lab_blocks, lab_terms, lab_lengths, lab_term_ids",
                      "CREATE UNLOGGED TABLE lab_rows (term text NOT NULL, chunk_id bigint NOT NULL, "
                      "tf integer NOT NULL, dl integer NOT NULL)",
                      "CREATE UNLOGGED TABLE lab_term_ids (chunk_id bigint PRIMARY KEY, term_ids int4[] NOT NULL)"):
        conn.execute(statement)
    started = time.monotonic()
    for offset in range(0, count, 20_000):
        size = min(20_000, count - offset)
        draws = rng.choice(len(weights), size=(size, 90), p=weights)
        with conn.cursor().copy("COPY lab_rows FROM STDIN") as rows, \
                other.cursor().copy("COPY lab_term_ids FROM STDIN") as term_ids:
            for number in range(size):
                terms, counts = numpy.unique(draws[number], return_counts=True)
                length = int(counts.sum())
                for term, tf in zip(terms.tolist(), counts.tolist()):
                    rows.write_row((f"t{term}", offset + number + 1, tf, length))
                term_ids.write_row((offset + number + 1, terms.tolist()))
        click.echo(f"  {offset + size:,} chunks generated ({time.monotonic() - started:.0f} s)", err=True)
    conn.execute("CREATE INDEX lab_rows_term ON lab_rows (term) INCLUDE (chunk_id, tf, dl)")
    conn.execute("CREATE INDEX lab_rows_chunk ON lab_rows (chunk_id)")
    conn.execute("CREATE UNLOGGED TABLE lab_terms AS SELECT term, count(*) AS df, "
                 "row_number() OVER (ORDER BY term)::int4 AS id FROM lab_rows GROUP BY term")
    conn.execute("CREATE UNLOGGED TABLE lab_lengths AS SELECT chunk_id, min(dl) AS dl FROM lab_rows GROUP BY chunk_id")
    conn.execute("VACUUM ANALYZE lab_rows")


def _build_blocks(conn, size: int) -> None:
    conn.execute("DROP TABLE IF EXISTS lab_blocks")
    conn.execute("CREATE UNLOGGED TABLE lab_blocks (term_id int4 NOT NULL, first bigint NOT NULL, "
                 "entries bigint[] NOT NULL, PRIMARY KEY (term_id, first))")
    conn.execute(f"INSERT INTO lab_blocks SELECT id, min(chunk_id), array_agg({PACK} ORDER BY chunk_id) FROM "
                 f"(SELECT t.id, p.chunk_id, p.tf, p.dl, (row_number() OVER (PARTITION BY p.term ORDER BY p.chunk_id) "
                 f"- 1) / {int(size)} AS block FROM lab_rows p JOIN lab_terms t USING (term)) s GROUP BY id, block")
    conn.execute("VACUUM ANALYZE lab_blocks")


def _part_sizes(conn, table: str, chunks: int) -> tuple[float, float]:
    heap, indexes = conn.execute("SELECT pg_table_size(%s), pg_indexes_size(%s)", (table, table)).fetchone()
    return heap / chunks, indexes / chunks


def _term_ids_bytes(conn) -> float:
    return float(conn.execute("SELECT avg(pg_column_size(term_ids)) FROM lab_term_ids").fetchone()[0])


def _queries(rng, weights, chooser, frequencies) -> list[tuple[list[str], int]]:
    """Two to eight common-to-rare terms and up to three rarer ones, cut as the keyword leg cuts them."""
    from memory_search.search.layouts import within_budget

    queries = []
    for _ in range(60):
        drawn = [f"t{term}" for term in rng.choice(len(weights), size=chooser.randint(2, 8), p=weights)]
        drawn += [f"t{chooser.randrange(200, len(weights))}" for _ in range(chooser.randint(0, 3))]
        present = sorted({term for term in drawn if term in frequencies}, key=lambda term: frequencies[term])
        kept, postings = within_budget(present, frequencies)
        if kept:
            queries.append((kept, postings))
    return queries


def _arguments(query, average, ids):
    terms = query[0]
    return (average, [ids[term] for term in terms] if ids else terms, [1.0] * len(terms))


def _ranked(conn, statement, queries, average, ids) -> list:
    return [[(row[0], round(float(row[1]), 9)) for row in conn.execute(statement, _arguments(query, average, ids))]
            for query in queries]


def _times(conn, statement, queries, average, ids) -> tuple[float, float]:
    _ranked(conn, statement, queries, average, ids)  # warm
    seconds = []
    for query in queries:
        started = time.perf_counter()
        conn.execute(statement, _arguments(query, average, ids)).fetchall()
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    return statistics.median(seconds) * 1000, seconds[int(len(seconds) * 0.95)] * 1000


def _line(name, sizes, times) -> str:
    return (f"| {name} | {sizes[0]:,.0f} | {sizes[1]:,.0f} | {sizes[0] + sizes[1]:,.0f} | {times[0]:.1f} | "
            f"{times[1]:.1f} |")


if __name__ == "__main__":
    run(postings_lab_command, "postings_lab.py")
