"""similar.py: the memories nearest in meaning to a memory, as a user sees them."""

from __future__ import annotations

import json

import pytest
from conftest import index, names, run_script

BACKUP_SESSION = """# Restore rehearsal

We rehearsed restoring last night's database dump from object storage. The restore of the nightly
pg_dump took 12 minutes; the WAL replay another 4. We will keep 14 generations of dumps.
"""
BACKUP_WIKI = """# Backups

Nightly batch at 03:00 dumps the database with pg_dump and ships it to object storage; WAL is archived
continuously. Dumps are kept for 14 generations; a restore is rehearsed every month.
"""
COMMITS_WIKI = """# Commit conventions

Use Conventional Commits: feat:, fix:, docs:. The subject may be written in Japanese.
"""
HNSW_SESSION = """# Tuning the HNSW index

We raised ef_search from 40 to 100 and rebuilt the index with m = 16; recall went from 0.91 to 0.98.
"""


@pytest.fixture
def sample(env, memories):
    memories.session("2026-11-02", "101500", "Restore rehearsal", BACKUP_SESSION)
    memories.write("wiki/ops/backups.md", BACKUP_WIKI, title="Backups")
    memories.write("wiki/dev/commits.md", COMMITS_WIKI, title="Commit conventions")
    memories.session("2026-11-03", "090000", "Tuning the HNSW index", HNSW_SESSION)
    memories.write("wiki/ops/backups-2024.md", BACKUP_WIKI.replace("14", "7"), title="Backups (2024)",
                   status="superseded")
    index(env, memories)
    return memories


def session_path(memories, title_word: str) -> str:
    return next(str(path) for path in memories.root.glob("raw/session/*/*.md") if title_word in path.read_text())


def similar(env, memories, *args) -> list[dict]:
    return json.loads(run_script("similar", *args, "--format", "json", env=env, memories=memories,
                                 check=True).stdout)


def test_the_nearest_memory_of_a_session_is_the_wiki_page_on_its_topic(env, sample):
    session = session_path(sample, "Restore rehearsal")
    hits = similar(env, sample, session)
    assert names(hits)[0] == "backups.md"
    assert session not in [hit["path"] for hit in hits]  # not the session itself
    assert len(names(hits)) == len(set(hit["path"] for hit in hits))  # one entry per file
    assert "backups-2024.md" not in names(hits)  # superseded, hidden as in search.py
    assert "backups-2024.md" in names(similar(env, sample, session, "--include-superseded"))


def test_a_relative_path_and_the_search_filters_work_as_in_search_py(env, sample):
    hits = similar(env, sample, "wiki/ops/backups.md", "--scope", "session", "--top", "1")
    assert [hit["title"] for hit in hits] == ["Restore rehearsal"]
    for key in ("score", "path", "snippet", "frontmatter", "title", "status", "kind", "date", "start_line",
                "end_line", "stale"):
        assert key in hits[0]
    markdown = run_script("similar", "wiki/ops/backups.md", "--top", "2", env=env, memories=sample, check=True)
    assert markdown.stdout.startswith("### 1. ") and "- **path**: `" in markdown.stdout


@pytest.mark.parametrize("path, code, words", [
    ("/etc/hostname", 2, "outside the memories directory"),
    ("wiki/never-written.md", 3, "not in the index"),
    ("", 2, "empty"),
])
def test_a_path_outside_or_not_indexed_is_one_line(env, sample, path, code, words):
    result = run_script("similar", path, env=env, memories=sample)
    assert result.returncode == code and result.stdout == ""
    assert result.stderr.count("\n") == 1 and words in result.stderr and result.stderr.startswith("similar.py: error:")


def test_a_malformed_argument_is_a_usage_error(env, sample):
    result = run_script("similar", "wiki/ops/backups.md", "--top", "0", env=env, memories=sample)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
