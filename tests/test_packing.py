"""A large index packs its keyword postings by term: searches find what they found as rows, edits and deletions
after a packing are seen at once, document frequencies stay exact, and the next packing drops what was deleted."""

from __future__ import annotations

import psycopg
import pytest
from conftest import index, names, run_script, search

from memory_search.search import layouts
from memory_search.storage import packing
from memory_search.storage.schema import ManagedTables

TOPICS = {
    "harbor.md": "The harbor crane lifts containers; the crane operator logs each container lift.",
    "orchard.md": "Apple orchard notes: pruning the apple trees in winter, grafting in spring.",
    "kiln.md": "The pottery kiln fired bowls at 1200 degrees; the kiln shelf cracked twice.",
    "glacier.md": "Glacier survey: the glacier retreated 40 metres; crevasses near the survey camp.",
    "ledger.md": "The ledger export fails on leap days; the ledger sync retries at midnight.",
    "会議.md": "リリース判定会議：ステージングの負荷試験は合格、本番デプロイは金曜に決定。",
    "設計.md": "検索インデックスの設計：転置索引を用語ごとにまとめ、容量を減らす。",
}
QUERIES = ["crane container lift", "apple trees", "kiln", "glacier survey camp", "ledger leap days",
           "the crane and the kiln", "本番デプロイ", "転置索引 容量", "survey of the orchard"]


def _write(memories) -> None:
    for name, text in TOPICS.items():
        memories.write(f"wiki/{name}", f"# {name}\n\n{text}\n", title=name.removesuffix(".md"))


def _keyword(env, memories, query) -> list[tuple[str, float]]:
    hits = search(env, memories, query, "--mode", "keyword", "--top", "10")
    return list(zip(names(hits), [hit["score"] for hit in hits]))


def _pack(database, memories) -> int:
    with psycopg.connect(database, autocommit=True) as conn:
        return packing.pack(ManagedTables.of(memories.root).on(conn))


def _rows(database, memories) -> dict[str, int]:
    tables = ManagedTables.of(memories.root)
    with psycopg.connect(database) as conn:
        return {name: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for name, table in (("rows", tables.postings), ("packed", tables.packed),
                                    ("dead", tables.packed_dead))}


def _verified(env, memories) -> None:
    result = run_script("stats", "--verify", env=env, memories=memories)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("budget", [None, 2])
def test_a_packed_index_finds_the_same_records_with_the_same_scores(env, memories, database, monkeypatch, budget):
    # With a budget of 2 postings the terms are read for the chunks that hold them most, sorted; without one each
    # is read whole, unsorted. Either way rows and packed arrays give the same hits.
    if budget is not None:
        monkeypatch.setattr(layouts, "POSTINGS_BUDGET", budget)
    _write(memories)
    index(env, memories)
    before = {query: _keyword(env, memories, query) for query in QUERIES}
    assert _pack(database, memories) > 0
    assert _rows(database, memories)["rows"] == 0 and _rows(database, memories)["packed"] > 0
    assert {query: _keyword(env, memories, query) for query in QUERIES} == before
    assert names(search(env, memories, "crane lift"))[0] == "harbor.md"  # hybrid reads them too
    _verified(env, memories)


def test_after_a_packing_an_edit_and_a_deletion_are_seen_at_once_and_counts_stay_exact(env, memories, database,
                                                                                      monkeypatch):
    from memory_search.config import Settings
    from memory_search.indexing.indexer import Indexer

    _write(memories)
    index(env, memories)
    _pack(database, memories)
    memories.write("wiki/kiln.md", "# kiln\n\nThe bakery oven proofs sourdough overnight.\n", title="kiln")
    (memories.root / "wiki" / "glacier.md").unlink()
    monkeypatch.setattr(packing, "DEAD_SHARE", 2.0)  # no packing at the end of this run
    Indexer(Settings.from_env().with_overrides(memories_dir=str(memories.root))).run()
    assert "kiln.md" not in names(search(env, memories, "pottery shelf cracked", "--mode", "keyword"))
    assert names(search(env, memories, "sourdough oven", "--mode", "keyword"))[0] == "kiln.md"
    assert "glacier.md" not in names(search(env, memories, "glacier crevasses", "--mode", "keyword"))
    _verified(env, memories)  # document frequencies, term counts: rows and packed entries together
    rows = _rows(database, memories)
    assert rows["rows"] > 0  # the edit's postings wait as rows for the next packing
    assert rows["dead"] == 2  # so do the replaced and the deleted chunk's packed entries
    _pack(database, memories)
    after = _rows(database, memories)
    assert after["rows"] == 0 and after["dead"] == 0
    assert names(search(env, memories, "sourdough oven", "--mode", "keyword"))[0] == "kiln.md"
    _verified(env, memories)
    memories.write("wiki/trek.md", "# trek\n\nCrevasses opened on the trek.\n", title="trek")  # the glacier's word
    index(env, memories)
    assert names(search(env, memories, "crevasses", "--mode", "keyword")) == ["trek.md"]
    _verified(env, memories)


def test_an_index_run_packs_once_the_rows_are_many_or_many_packed_chunks_were_deleted(env, memories, database,
                                                                                     monkeypatch):
    from memory_search.config import Settings
    from memory_search.indexing.indexer import Indexer

    _write(memories)
    settings = Settings.from_env().with_overrides(memories_dir=str(memories.root))
    Indexer(settings).run()
    assert _rows(database, memories)["packed"] == 0  # a few rows: left as they are
    monkeypatch.setattr(packing, "PACK_FROM_POSTINGS", 10)
    memories.write("wiki/new.md", "# new\n\nA windmill grinds barley by the canal.\n", title="new")
    Indexer(settings).run()
    assert _rows(database, memories)["rows"] == 0
    monkeypatch.setattr(packing, "PACK_FROM_POSTINGS", 10**9)
    (memories.root / "wiki" / "ledger.md").unlink()
    Indexer(settings).run()  # one of eight packed chunks deleted: due
    assert _rows(database, memories)["dead"] == 0
    assert names(search(env, memories, "windmill barley", "--mode", "keyword"))[0] == "new.md"
    _verified(env, memories)


@pytest.mark.parametrize("damage", ["dead entry", "wrong frequency"])
def test_verify_reads_the_packed_postings(env, memories, database, damage):
    _write(memories)
    index(env, memories)
    _pack(database, memories)
    tables = ManagedTables.of(memories.root)
    with psycopg.connect(database, autocommit=True) as conn:
        if damage == "dead entry":  # a packed chunk's row removed behind the index's back
            conn.execute(f"DELETE FROM {tables.chunks} WHERE filename LIKE %s", ("%/orchard.md",))
        else:
            conn.execute(f"UPDATE {tables.terms} SET df = df + 1 WHERE term = 'kiln'")
    result = run_script("stats", "--verify", env=env, memories=memories)
    assert result.returncode == 1


def test_a_packing_that_fails_halfway_leaves_the_index_as_it_was(env, memories, database, monkeypatch):
    # One transaction: an error after the arrays were written (here a block size PostgreSQL divides by) takes
    # them back, and the rows stay where searches read them.
    from memory_search.config import Settings
    from memory_search.indexing.indexer import Indexer

    _write(memories)
    index(env, memories)
    _pack(database, memories)
    memories.write("wiki/kiln.md", "# kiln\n\nThe kiln shelf was replaced; the crane lifted it in.\n", title="kiln")
    monkeypatch.setattr(packing, "DEAD_SHARE", 2.0)
    Indexer(Settings.from_env().with_overrides(memories_dir=str(memories.root))).run()
    before = {query: _keyword(env, memories, query) for query in QUERIES}
    rows = _rows(database, memories)
    assert rows["rows"] > 0 and rows["packed"] > 0
    with monkeypatch.context() as patched, pytest.raises(psycopg.errors.DivisionByZero):
        patched.setattr(packing, "PACK_SIZE", 0)
        _pack(database, memories)
    assert _rows(database, memories) == rows
    assert {query: _keyword(env, memories, query) for query in QUERIES} == before
    _verified(env, memories)


def test_an_indexer_role_that_may_not_make_temporary_tables_packs_all_the_same(env, memories, database,
                                                                               monkeypatch):
    # A hardened server revokes TEMP from PUBLIC; the indexer may still create the index's own tables.
    from test_roles import Team

    from memory_search.config import Settings
    from memory_search.indexing.indexer import Indexer

    with Team(database) as team:
        team.sql(team.role("owner"), f"REVOKE TEMPORARY ON DATABASE {team.database} FROM PUBLIC")
        indexer = team.indexer("indexer")
        monkeypatch.setenv("MEMORIES_DATABASE_URL", team.url_of(indexer))
        _write(memories)
        monkeypatch.setattr(packing, "PACK_FROM_POSTINGS", 1)
        Indexer(Settings.from_env().with_overrides(memories_dir=str(memories.root))).run()
        tables = ManagedTables.of(memories.root)
        with psycopg.connect(team.url_of(indexer)) as conn:
            assert conn.execute(f"SELECT count(*) FROM {tables.postings}").fetchone()[0] == 0
            assert conn.execute(f"SELECT count(*) FROM {tables.packed}").fetchone()[0] > 0
        assert names(search({**env, "MEMORIES_DATABASE_URL": team.url_of(indexer)}, memories, "kiln shelf",
                            "--mode", "keyword"))[0] == "kiln.md"


def test_a_packing_whose_connection_is_cut_at_its_last_step_leaves_the_index_as_it_was(env, memories, database,
                                                                                       monkeypatch):
    # The server ends the packing's session (a restart, an administrator) just before the rows are emptied.
    _write(memories)
    index(env, memories)
    before = {query: _keyword(env, memories, query) for query in QUERIES}
    rows = _rows(database, memories)

    def cut(conn, names, everything):
        with psycopg.connect(database, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        conn.execute("SELECT 1")

    monkeypatch.setattr(packing, "_empty_rows", cut)
    with pytest.raises(psycopg.OperationalError):
        _pack(database, memories)
    assert _rows(database, memories) == rows
    with psycopg.connect(database) as conn:  # nor are its working tables left behind
        assert not conn.execute("SELECT relname FROM pg_class WHERE relname LIKE %s",
                                (ManagedTables.of(memories.root).prefix + "\\_\\_packing%",)).fetchall()
    assert {query: _keyword(env, memories, query) for query in QUERIES} == before
    _verified(env, memories)


def test_an_index_of_schema_5_is_searched_then_upgraded_with_its_deleted_chunks_kept_dead(env, memories, database,
                                                                                        monkeypatch):
    # Schema 5 kept every packed chunk's terms by number; schema 6 keeps the deleted ones' terms alone.
    from memory_search.config import Settings
    from memory_search.indexing.indexer import Indexer
    from memory_search.storage.schema import SCHEMA_VERSION, columns_of

    _write(memories)
    index(env, memories)
    _pack(database, memories)
    tables = ManagedTables.of(memories.root)
    legacy = f"{tables.prefix}__packed_chunks"
    with psycopg.connect(database, autocommit=True) as conn:  # as schema 5 left it, glacier.md deleted since
        conn.execute(f"DROP TABLE {tables.packed_dead}")
        conn.execute(f"ALTER TABLE {tables.terms} ADD COLUMN id integer")
        conn.execute(f"UPDATE {tables.terms} t SET id = n FROM (SELECT term, row_number() OVER () AS n "
                     f"FROM {tables.terms}) numbered WHERE numbered.term = t.term")
        conn.execute(f"CREATE TABLE {legacy} (chunk_id bigint PRIMARY KEY, term_ids integer[] NOT NULL, "
                     "dead boolean NOT NULL DEFAULT false)")
        conn.execute(f"INSERT INTO {legacy} (chunk_id, term_ids) SELECT u.e >> 30, array_agg(t.id) FROM "
                     f"{tables.packed} b CROSS JOIN LATERAL unnest(b.entries) AS u(e) JOIN {tables.terms} t "
                     "USING (term) GROUP BY u.e >> 30")
        glacier = conn.execute(f"SELECT id FROM {tables.chunks} WHERE filename LIKE '%%/glacier.md'").fetchone()[0]
        conn.execute(f"UPDATE {tables.terms} t SET df = df - 1 FROM {legacy} d WHERE d.chunk_id = %s "
                     "AND t.id = ANY(d.term_ids)", (glacier,))
        conn.execute(f"UPDATE {legacy} SET dead = true WHERE chunk_id = %s", (glacier,))
        terms = conn.execute(f"DELETE FROM {tables.chunks} WHERE id = %s RETURNING term_count",
                             (glacier,)).fetchone()[0]
        conn.execute(f"DELETE FROM {tables.files} WHERE filename LIKE '%%/glacier.md'")
        conn.execute(f"UPDATE {tables.meta} SET value = (value::int - CASE key WHEN 'chunks' THEN 1 ELSE %s END)::text "
                     "WHERE key IN ('chunks', 'total_terms')", (terms,))
        conn.execute(f"UPDATE {tables.meta} SET value = '5' WHERE key = 'schema_version'")
    (memories.root / "wiki" / "glacier.md").unlink()
    assert names(search(env, memories, "kiln shelf", "--mode", "keyword"))[0] == "kiln.md"
    assert "glacier.md" not in names(search(env, memories, "glacier crevasses", "--mode", "keyword"))
    _verified(env, memories)
    monkeypatch.setattr(packing, "DEAD_SHARE", 2.0)  # the run upgrades and leaves the dead chunk for later
    Indexer(Settings.from_env().with_overrides(memories_dir=str(memories.root))).run()
    with psycopg.connect(database) as conn:
        assert conn.execute("SELECT to_regclass(%s)", (legacy,)).fetchone()[0] is None
        assert "id" not in columns_of(conn, tables.terms)
        assert conn.execute(f"SELECT chunk_id FROM {tables.packed_dead}").fetchall() == [(glacier,)]
        assert conn.execute(f"SELECT value FROM {tables.meta} WHERE key = 'schema_version'").fetchone()[0] \
            == SCHEMA_VERSION
    _verified(env, memories)
    _pack(database, memories)
    assert _rows(database, memories)["dead"] == 0
    _verified(env, memories)
    assert names(search(env, memories, "kiln shelf", "--mode", "keyword"))[0] == "kiln.md"
