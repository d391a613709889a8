"""stats.py --verify: clean on a fresh index; each kind of outside damage named, with the command that repairs it."""

from __future__ import annotations

import json
import subprocess

import psycopg
import pytest
from conftest import index, run_script

from memory_search.hints import command
from memory_search.storage.database import postgres_binaries
from memory_search.storage.schema import ManagedTables
from memory_search.storage.writer import lock_key

PSQL = postgres_binaries() / "psql"


def _verify(env, memories):
    result = run_script("stats", "--verify", env=env, memories=memories)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, result.stdout


def _psql(database: str, statement: str) -> None:
    subprocess.run([str(PSQL), database, "-v", "ON_ERROR_STOP=1", "-q", "-c", statement], check=True,
                   capture_output=True, text=True)


@pytest.fixture
def indexed(env, memories):
    # Two sections long enough to be two chunks (a short section is chunked with the one it opens).
    memories.write("wiki/a.md", "# Alpha\n\nAlpha particles and apples. " + "Alpha rays are stopped by paper. " * 12
                   + "\n\n## More\n\nA second part about alpha.", title="Alpha")
    memories.write("wiki/b.md", "# Beta\n\nBeta releases go out on Mondays.", title="Beta")
    memories.write("wiki/bad.md", "---\ntitle: [unclosed\n---\nbroken frontmatter")
    index(env, memories)
    return memories


def test_a_fresh_index_verifies_clean_and_lists_skipped_files(env, indexed):
    code, text = _verify(env, indexed)
    assert code == 0 and text.startswith("verified: 2 files and 3 chunks match the directory")
    assert "skipped wiki/bad.md: invalid YAML frontmatter" in text
    report = json.loads(run_script("stats", "--verify", "--json", env=env, memories=indexed).stdout)
    assert report["clean"] and report["problems"] == [] and report["repair"] == []


def test_files_changed_added_or_deleted_without_reindexing_are_named(env, indexed):
    indexed.write("wiki/a.md", "# Alpha\n\nEdited behind the indexer's back.", title="Alpha")
    indexed.write("wiki/c.md", "# Gamma\n\nA new note.", title="Gamma")
    (indexed.root / "wiki/b.md").unlink()
    code, text = _verify(env, indexed)
    assert code == 1
    assert "problem: indexed files no longer on disk: wiki/b.md" in text
    assert "problem: files on disk not in the index: wiki/c.md" in text
    assert "problem: files changed since they were indexed: wiki/a.md" in text
    assert text.rstrip().endswith(f"repair: {command('index', '--memories', str(indexed.root))}")
    index(env, indexed)
    assert _verify(env, indexed)[0] == 0  # the named repair mends it


@pytest.mark.parametrize("damage, message", [
    ("UPDATE {chunks} SET chunk_text = 'planted text' WHERE id = (SELECT min(id) FROM {chunks})",
     "chunks whose stored text or lines differ from their unchanged file: wiki/a.md"),
    ("UPDATE {chunks} SET end_line = end_line + 1 WHERE id = (SELECT max(id) FROM {chunks})",
     "chunks whose stored text or lines differ from their unchanged file"),
    ("DELETE FROM {chunks} WHERE id = (SELECT max(id) FROM {chunks})", "files whose chunks are missing or extra"),
    ("DELETE FROM {postings} WHERE ctid = (SELECT min(ctid) FROM {postings})",
     "chunks whose postings do not add up to their term count"),
    ("UPDATE {terms} SET df = df + 1 WHERE term = 'alpha'", "document frequencies that differ from the postings"),
    ("INSERT INTO {chunks} (filename, chunk_index, start_line, end_line, chunk_text, embedding, term_count, kind, "
     "status, title, tags, project, recorded_on, recorded_time, frontmatter) SELECT filename, chunk_index, "
     "start_line, end_line, chunk_text, embedding, term_count, kind, status, title, tags, project, recorded_on, "
     "recorded_time, frontmatter FROM {chunks} LIMIT 1", "duplicate chunks (same file and chunk number)"),
    ("UPDATE {meta} SET value = '99' WHERE key = 'chunks'", "the meta table's chunk count is wrong"),
    ("UPDATE {meta} SET value = '1' WHERE key = 'total_terms'", "the meta table's term total is wrong"),
    ("UPDATE pg_index SET indisvalid = false WHERE indexrelid = '{chunks}_filename'::regclass",
     "invalid indexes on the chunks table (an interrupted build)"),
])
def test_rows_damaged_through_psql_are_named_and_a_rebuild_mends_them(env, indexed, database, damage, message):
    tables = ManagedTables.of(indexed.root)
    _psql(database, damage.format(**{name: getattr(tables, name) for name in ("chunks", "postings", "terms",
                                                                              "meta")}))
    code, text = _verify(env, indexed)
    assert code == 1 and f"problem: {message}" in text
    assert text.rstrip().endswith(f"repair: {command('index', '--memories', str(indexed.root), '--rebuild')}")
    index(env, indexed, "--rebuild")
    assert _verify(env, indexed)[0] == 0


def test_chunks_left_without_an_embedding_are_named_and_index_py_fills_them(env, indexed, database):
    tables = ManagedTables.of(indexed.root)
    _psql(database, f"UPDATE {tables.chunks} SET embedding = NULL WHERE id = (SELECT min(id) FROM {tables.chunks})")
    code, text = _verify(env, indexed)
    assert code == 1 and "problem: chunks still waiting for their embedding (found by keywords only): 1 chunks" in text
    assert text.rstrip().endswith(f"repair: {command('index', '--memories', str(indexed.root))}")
    index(env, indexed)
    assert _verify(env, indexed)[0] == 0


def test_verify_without_an_index_says_how_to_build_one(env, memories):
    memories.write("wiki/a.md", "# A\n\ntext", title="A")
    result = run_script("stats", "--verify", env=env, memories=memories)
    assert result.returncode == 3 and f"build it with `{command('index', '--memories', str(memories.root))}`" \
        in result.stderr
    assert command("index").startswith("/")  # a command that runs from any directory


def test_stats_shows_whether_an_indexer_is_running_and_the_link_counts(env, indexed, database):
    def status():
        return json.loads(run_script("stats", "--json", env=env, memories=indexed, check=True).stdout)

    assert status()["building"] is False
    with psycopg.connect(database, autocommit=True) as holder:  # what a running index.py holds
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_key(ManagedTables.of(indexed.root)),))
        assert status()["building"] is True
        text = run_script("stats", env=env, memories=indexed, check=True).stdout
        assert "an indexer is running now" in text
    assert status()["building"] is False
    assert status()["links"] == {"links": 0, "resolved": 0, "unresolved": 0, "ambiguous": 0, "by_kind": {}}


def test_verify_reads_the_directory_with_the_selection_the_index_remembers(env, memories):
    memories.session("2026-11-02", "101500", "Release notes", "# Release\n\nThe notes go out on Friday.")
    memories.write("wiki/left-out.md", "# Left out\n\nNot selected by the index.", title="Left out")
    index(env, memories, "--include", "raw/**")
    code, text = _verify(env, memories)
    assert code == 0 and text.startswith("verified: 1 files"), text
    memories.session("2026-11-03", "101500", "Another session", "# Another\n\nA new session, selected.")
    code, text = _verify(env, memories)
    assert code == 1 and "files on disk not in the index: raw/session/2026-11-03/" in text and "left-out" not in text
    index(env, memories)  # the repair it names keeps the selection, and mends it
    assert _verify(env, memories)[0] == 0
