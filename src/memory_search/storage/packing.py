"""Postings packed by term: the lexical index of a large index in a tenth of the space.

A posting as a row costs about 80 bytes with its b-trees (the row's header, the term again, the covering
b-tree's copy), and a chunk has 45-80 of them. Once the rows hold PACK_FROM_POSTINGS or more, the end of an
index run packs them: each term's postings, in the order the keyword leg reads them (the most occurrences
first, the shorter chunk first among equals), go into arrays of PACK_SIZE entries, one bigint each (chunk
id, count, chunk length), which PostgreSQL compresses. New files' postings are written as rows and read
together with the packed ones until the next packing. A deleted chunk's packed entries stay until then (a
search drops them with the chunk): its terms, tokenized again from its text as the indexer tokenized them,
leave the document frequencies at once and are kept with it as dead, so that the next packing knows which
terms' arrays to rewrite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import psycopg
from psycopg import sql

from .schema import ManagedIndex, ManagedTables

PACK_SIZE = 1024  # entries an array holds
PACK_FROM_POSTINGS = 1_000_000  # rows (about 15,000 chunks) before an index run packs them
DEAD_SHARE = 0.02  # of the packed chunks deleted since the last packing, before one is due for them alone

# An entry: the chunk id, then its count of the term (10 bits) and the chunk's length in terms (20 bits).
# Postings beyond these bounds (none that chunking writes) stay rows.
MAX_TF, MAX_DL, MAX_CHUNK_ID = (1 << 10) - 1, (1 << 20) - 1, (1 << 33) - 1
ENTRY = sql.SQL("(chunk_id << 30) | (tf::bigint << 20) | dl")
CHUNK_ID, TF, DL = (sql.SQL("e >> 30"), sql.SQL("((e >> 20) & 1023)::integer"), sql.SQL("(e & 1048575)::integer"))
_PACKABLE = sql.SQL(f"chunk_id <= {MAX_CHUNK_ID} AND tf <= {MAX_TF} AND dl <= {MAX_DL}")

# The packed chunks deleted since the last packing, with the terms they held. Schema 5 kept every packed
# chunk's terms instead, by number (300 bytes a chunk); its next index run moves the dead ones.
SCHEMA = """
CREATE TABLE IF NOT EXISTS {packed} (term text NOT NULL, seq integer NOT NULL, entries bigint[] NOT NULL,
                                     PRIMARY KEY (term, seq));
CREATE TABLE IF NOT EXISTS {packed_dead} (chunk_id bigint PRIMARY KEY, terms text[] NOT NULL);
"""
_UPGRADE = """
INSERT INTO {packed_dead} (chunk_id, terms) SELECT d.chunk_id, array_agg(t.term) FROM {legacy} d
    CROSS JOIN LATERAL unnest(d.term_ids) AS u(id) JOIN {terms} t ON t.id = u.id WHERE d.dead GROUP BY d.chunk_id
    ON CONFLICT (chunk_id) DO NOTHING;
DROP TABLE {legacy};
ALTER TABLE {terms} DROP COLUMN IF EXISTS id;
"""


def in_use(meta: dict) -> bool:
    """Whether an index has the packed tables: from schema 5 on (an earlier one gets them at its next run)."""
    return int(meta.get("schema_version") or 0) >= 5


def create_tables(index: ManagedIndex) -> None:
    """The packed tables; on an index of schema 5, its dead chunks moved to the table of this one."""
    conn, tables = index.conn, index.tables
    names = _names(tables)
    conn.execute(sql.SQL(SCHEMA).format(**names))
    legacy = tables.schema5_packed_chunks
    if conn.execute("SELECT to_regclass(%s)", (legacy,)).fetchone()[0]:
        conn.execute(sql.SQL(_UPGRADE).format(legacy=sql.Identifier(legacy), **names))


def _names(tables: ManagedTables) -> dict[str, sql.Identifier]:
    return {name: tables.sql(name) for name in ("postings", "packed", "packed_dead", "terms")}


def term_postings(tables: ManagedTables) -> sql.Composed:
    """The postings of one term (q.t), rows and packed together: where q.whole (the term is in no more chunks
    than the limit) all of them, in no order, since sorting them would change nothing; else its best, at most
    %s. Parameters: the limit, the packed arrays to read, the limit again (twice)."""
    return sql.SQL(
        "(SELECT chunk_id, tf, dl FROM {postings} WHERE q.whole AND term = q.t) UNION ALL "
        "(SELECT {chunk_id}, {tf}, {dl} FROM {packed} b CROSS JOIN LATERAL unnest(b.entries) AS u(e) "
        "WHERE q.whole AND b.term = q.t) UNION ALL "
        "(SELECT chunk_id, tf, dl FROM ("
        "(SELECT chunk_id, tf, dl FROM {postings} WHERE NOT q.whole AND term = q.t ORDER BY tf DESC, dl LIMIT %s) "
        "UNION ALL "
        "(SELECT {chunk_id}, {tf}, {dl} FROM {packed} b CROSS JOIN LATERAL unnest(b.entries) WITH ORDINALITY "
        "AS u(e, n) WHERE NOT q.whole AND b.term = q.t AND b.seq < %s ORDER BY b.seq, u.n LIMIT %s)"
        ") best ORDER BY tf DESC, dl LIMIT %s)").format(
        postings=tables.sql("postings"), packed=tables.sql("packed"), chunk_id=CHUNK_ID, tf=TF, dl=DL)


def arrays_for(postings: int) -> int:
    """How many of a term's arrays hold its best `postings`."""
    return -(-postings // PACK_SIZE)


def all_postings(tables: ManagedTables, meta: dict) -> sql.Composed:
    """Every live posting (term, chunk_id, tf, dl), rows and packed, for a check that reads them all."""
    if meta.get("schema_version") == "5":  # until its next index run
        dead = sql.SQL("SELECT chunk_id FROM {} WHERE dead").format(sql.Identifier(tables.schema5_packed_chunks))
    else:
        dead = sql.SQL("SELECT chunk_id FROM {}").format(tables.sql("packed_dead"))
    return sql.SQL(
        "(SELECT term, chunk_id, tf, dl FROM {postings} UNION ALL "
        "SELECT b.term, {chunk_id}, {tf}, {dl} FROM {packed} b CROSS JOIN LATERAL unnest(b.entries) AS u(e) "
        "WHERE u.e >> 30 NOT IN ({dead}))").format(
        postings=tables.sql("postings"), packed=tables.sql("packed"), dead=dead, chunk_id=CHUNK_ID, tf=TF, dl=DL)


def any_packed(index: ManagedIndex) -> bool:
    conn, tables = index.conn, index.tables
    return conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(tables.sql("packed"))).fetchone()[0]


def forget_chunks(index: ManagedIndex, packed_terms: Mapping[int, Iterable[str]]) -> None:
    """Take deleted chunks' packed terms (chunk id -> the terms it holds in packed arrays, not as rows) out of
    the document frequencies, and keep them as dead until the next packing rewrites those terms' arrays."""
    conn, tables = index.conn, index.tables
    packed_terms = {chunk_id: sorted(terms) for chunk_id, terms in packed_terms.items() if terms}
    if not packed_terms:
        return
    conn.execute(sql.SQL(
        "UPDATE {terms} t SET df = t.df - old.n FROM (SELECT term, count(*) AS n FROM unnest(%s::text[]) AS term "
        "GROUP BY term) old WHERE t.term = old.term").format(terms=tables.sql("terms")),
        ([term for terms in packed_terms.values() for term in terms],))
    conn.cursor().executemany(sql.SQL(
        "INSERT INTO {} (chunk_id, terms) VALUES (%s, %s) ON CONFLICT (chunk_id) DO NOTHING").format(
        tables.sql("packed_dead")), list(packed_terms.items()))


def due(index: ManagedIndex, chunks: int) -> bool:
    """Whether the rows have grown to PACK_FROM_POSTINGS, or deleted packed chunks to DEAD_SHARE of the index's
    `chunks`. The rows are counted by the planner's estimate, which the vacuum at the end of each run keeps close."""
    conn, tables = index.conn, index.tables
    rows = conn.execute("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = to_regclass(%s)",
                        (tables.postings,)).fetchone()
    if rows and rows[0] >= PACK_FROM_POSTINGS:
        return True
    dead = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(tables.sql("packed_dead"))).fetchone()[0]
    return dead > 0 and dead >= DEAD_SHARE * max(chunks, 1)


def pack(index: ManagedIndex, say=lambda message: None) -> int:
    """Move the rows into the packed arrays and drop the dead chunks' entries, in one transaction (searches
    read the old arrays and rows until it commits). Rewrites the arrays of the terms the rows or the dead
    chunks hold. Returns the postings moved."""
    conn, tables = index.conn, index.tables
    names = _names(tables)
    # Working tables of the index's own (no temporary tables: a role that may create the index's tables may
    # create these, where a hardened server may refuse it temporary ones), dropped before the commit.
    work = {name: sql.Identifier(f"{tables.prefix}__{name}") for name in ("packing_rows", "packing_terms",
                                                                          "packing_entries")}
    with conn.transaction():
        conn.execute("SET LOCAL work_mem = '64MB'")
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {packing_rows}, {packing_terms}, {packing_entries}").format(**work))
        conn.execute(sql.SQL(
            "CREATE UNLOGGED TABLE {packing_rows} AS SELECT term, chunk_id, tf, dl FROM {postings} "
            "WHERE {packable}").format(packable=_PACKABLE, **names, **work))
        moved, left = conn.execute(sql.SQL("SELECT (SELECT count(*) FROM {packing_rows}), "
                                           "(SELECT count(*) FROM {postings})").format(**names, **work)).fetchone()
        say(f"packing {moved:,} postings of the keyword index")
        conn.execute(sql.SQL(
            "CREATE UNLOGGED TABLE {packing_terms} AS SELECT term FROM {packing_rows} UNION "
            "SELECT u.term FROM {packed_dead} d CROSS JOIN LATERAL unnest(d.terms) AS u(term)").format(**names, **work))
        conn.execute(sql.SQL("ALTER TABLE {packing_terms} ADD PRIMARY KEY (term)").format(**work))
        conn.execute(sql.SQL(
            "CREATE UNLOGGED TABLE {packing_entries} AS "
            "SELECT b.term, u.e FROM {packed} b JOIN {packing_terms} USING (term) "
            "CROSS JOIN LATERAL unnest(b.entries) AS u(e) "
            "WHERE NOT EXISTS (SELECT 1 FROM {packed_dead} d WHERE d.chunk_id = u.e >> 30) "
            "UNION ALL SELECT term, {entry} FROM {packing_rows}").format(entry=ENTRY, **names, **work))
        conn.execute(sql.SQL("DELETE FROM {packed} WHERE term IN (SELECT term FROM {packing_terms})").format(
            **names, **work))
        conn.execute(sql.SQL(
            "INSERT INTO {packed} (term, seq, entries) SELECT term, n / {size}, array_agg(e ORDER BY n) FROM ("
            "SELECT term, e, row_number() OVER (PARTITION BY term ORDER BY (e >> 20) & 1023 DESC, e & 1048575, e) "
            "- 1 AS n FROM {packing_entries}) ordered GROUP BY term, n / {size}").format(
            size=sql.Literal(PACK_SIZE), **names, **work))
        conn.execute(sql.SQL("DELETE FROM {packed_dead}").format(**names))
        conn.execute(sql.SQL("DELETE FROM {terms} WHERE df <= 0").format(**names))  # no chunk holds them
        conn.execute(sql.SQL("DROP TABLE {packing_rows}, {packing_terms}, {packing_entries}").format(**work))
        _empty_rows(conn, names, everything=moved == left)
    return moved


def _empty_rows(conn, names: dict, everything: bool) -> None:
    """Delete the packed rows. All of them by TRUNCATE, last for its lock (it holds the table from searches
    until the commit, which follows at once), unless a reader holds the table longer than a few seconds."""
    if everything:
        try:
            with conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '5s'")
                conn.execute(sql.SQL("TRUNCATE {postings}").format(**names))
                return
        except psycopg.errors.LockNotAvailable:
            pass
    conn.execute(sql.SQL("DELETE FROM {postings} WHERE {packable}").format(packable=_PACKABLE, **names))
