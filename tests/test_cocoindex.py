"""Reading a table as the original's CocoIndex flow writes it: absolute filenames, halfvec, no metadata."""

from __future__ import annotations

import psycopg
import pytest
from conftest import names, run_script, search

from memory_search.storage.schema import cocoindex_tables

NOTES = {
    "wiki/deploy.md": ("---\ntitle: Deploy runbook\ntags: [ops]\n---\n",
                       "Roll out with blue green deploys and watch the error rate."),
    "wiki/deploy-old.md": ("---\ntitle: Old deploy runbook\nstatus: superseded\n---\n",
                           "Deploy by copying files over ssh."),
    "raw/session/2026-11-01/101010_aaaa1111_bbbb2222.md": (
        "---\ntitle: Deploy incident\nkind: session\n---\n",
        "The deploy failed because the error rate rose after rollout."),
    "raw/web/2026-11-02/090000_page.md": ("---\ntitle: Blue green article\n---\n",
                                          "Blue green deployment keeps two environments."),
}


@pytest.fixture
def cocoindex_table(env, database, memories):
    """A CocoIndex-layout table with halfvec(384) embeddings made by the local model, built here."""
    from memory_search.embedding import vector_literal
    from memory_search.embedding.local import LocalEmbedder

    for relpath, (head, body) in NOTES.items():
        path = memories.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(head + body + "\n", encoding="utf-8")
    outside = memories.root.parent / "elsewhere.md"
    outside.write_text("Deploy notes kept outside the memories directory.\n", encoding="utf-8")

    table = cocoindex_tables(memories.root)[0]
    rows = [(str(memories.root / relpath), body) for relpath, (_, body) in NOTES.items()]
    rows.append(("wiki/deploy.md", "Relative filename: roll out with blue green deploys."))  # relative to the root
    rows.append((str(outside), "Deploy notes kept outside the memories directory."))
    vectors = LocalEmbedder().embed_documents([text for _, text in rows])
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, filename text NOT NULL, "
                     "chunk_text text NOT NULL, embedding halfvec(384) NOT NULL)")
        for (filename, text), vector in zip(rows, vectors):
            conn.execute(f"INSERT INTO {table} (filename, chunk_text, embedding) VALUES (%s, %s, %s::halfvec)",
                         (filename, text, vector_literal(vector)))
    yield table
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_search_reads_a_cocoindex_table_found_by_hostname_and_directory(env, memories, cocoindex_table):
    local = dict(env, MEMORIES_EMBEDDING_PROVIDER="local")
    hits = search(local, memories, "blue green deploy", "--top", "10")
    paths = [hit["path"] for hit in hits]
    assert str(memories.root / "wiki/deploy.md") in paths
    assert all(path.startswith(str(memories.root) + "/") for path in paths)  # outside: dropped
    assert len(paths) == len(set(paths))  # the relative and absolute rows of deploy.md: one hit
    assert "deploy-old.md" not in names(hits)  # superseded, read from the file's frontmatter
    assert "deploy-old.md" in names(search(local, memories, "deploy over ssh", "--include-superseded"))


def test_scope_applies_after_retrieval_on_a_cocoindex_table(env, memories, cocoindex_table):
    local = dict(env, MEMORIES_EMBEDDING_PROVIDER="local")
    assert names(search(local, memories, "deploy", "--scope", "session")) == ["101010_aaaa1111_bbbb2222.md"]
    assert names(search(local, memories, "deploy", "--scope", "web")) == ["090000_page.md"]


def test_table_can_be_named_explicitly(env, memories, cocoindex_table, tmp_path):
    local = dict(env, MEMORIES_EMBEDDING_PROVIDER="local", MEMORIES_TABLE=cocoindex_table)
    assert search(local, memories, "blue green")
    flag = run_script("search", "blue green", "--table", "no_such_table", env=local, memories=memories)
    assert flag.returncode == 3 and "no_such_table" in flag.stderr


def test_keyword_mode_is_refused_without_a_keyword_column(env, memories, cocoindex_table):
    local = dict(env, MEMORIES_EMBEDDING_PROVIDER="local")
    result = run_script("search", "deploy", "--mode", "keyword", env=local, memories=memories)
    assert result.returncode == 2 and "--mode semantic" in result.stderr


def test_a_model_of_another_dimension_is_refused(env, memories, cocoindex_table):
    voyage = dict(env, MEMORIES_EMBEDDING_PROVIDER="voyage", VOYAGE_API_KEY="k")
    result = run_script("search", "deploy", "--no-rerank", env=voyage, memories=memories)
    assert result.returncode == 1
    assert "384" in result.stderr and "voyage-3-large" in result.stderr
