"""related.py (links both ways, then meaning) and export.py (every format parsed back, filters, vectors)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import MemoriesDir, index, run_script


@pytest.fixture(scope="module")
def linked(tmp_path_factory, base_env, database) -> MemoriesDir:
    """A small wiki: a hub page that links out, a page that links back, a superseded linked page."""
    memories = MemoriesDir(tmp_path_factory.mktemp("linked") / "memories")
    memories.write("wiki/hub.md", "# PostgreSQL backups\n\nWe back up PostgreSQL nightly with pg_dump; see "
                   "[[restore-drill]] and [[old-backups]].\n\nRetention is thirty days.",
                   title="PostgreSQL backups", tags=["ops", "backup"], project="infra")
    memories.write("wiki/restore-drill.md", "# Restore drill\n\nEvery quarter we restore a pg_dump backup into a "
                   "scratch server and time it.", title="Restore drill", tags=["ops"], project="infra")
    memories.write("wiki/old-backups.md", "# Old backups\n\nBackups used to be file-system snapshots.",
                   title="Old backups", status="superseded", tags=["ops", "backup"])
    memories.write("raw/session/2026-11-02/101010_abcd1234_s1.md",
                   "# Session\n\nWrote down the backup policy in [the wiki](../../../wiki/hub.md).",
                   kind="session", title="Backup policy session", project="infra", tags=["backup"])
    memories.write("raw/web/2026-11-03/090000_pg-dump.md", "# pg_dump manual\n\npg_dump extracts a PostgreSQL "
                   "database into a script file or an archive for backups.", kind="web", title="pg_dump manual")
    memories.write("wiki/cooking.md", "# Miso soup\n\nDashi, miso and tofu; never boil the miso.",
                   title="Miso soup", tags=["food"])
    index(base_env, memories)
    return memories


def _related(env, memories, path, *args):
    return json.loads(run_script("related", path, "--format", "json", *args, env=env, memories=memories,
                                 check=True).stdout)


def test_related_lists_links_both_ways_first_then_nearest_in_meaning(env, linked):
    entries = _related(env, linked, "wiki/hub.md", "--top", "4")
    assert [Path(entry["path"]).name for entry in entries[:2]] == ["restore-drill.md", "101010_abcd1234_s1.md"]
    assert entries[0]["reasons"][0] == "links to" and entries[1]["reasons"][0] == "linked from"
    assert all(reason.startswith("similar ") for reason in entries[2]["reasons"])  # then meaning only
    assert len(entries) == 4
    scores = [entry["similarity"] for entry in entries[2:]]
    assert scores == sorted(scores, reverse=True)
    assert "old-backups.md" not in {Path(entry["path"]).name for entry in entries}  # superseded, as in search
    assert "hub.md" not in {Path(entry["path"]).name for entry in entries}  # never itself

    everything = _related(env, linked, str(linked.root / "wiki/hub.md"), "--include-superseded", "--top", "10")
    old = next(entry for entry in everything if entry["path"].endswith("old-backups.md"))
    assert old["reasons"][0] == "links to" and old["status"] == "superseded"

    sessions = _related(env, linked, "wiki/hub.md", "--scope", "session")
    assert [entry["kind"] for entry in sessions] == ["session"]

    text = run_script("related", "wiki/hub.md", env=env, memories=linked, check=True).stdout
    assert "### 1. Restore drill  _(links to, similar 0." in text


def test_related_refuses_a_memory_that_is_not_indexed(env, linked):
    result = run_script("related", "wiki/nothing-here.md", env=env, memories=linked)
    assert result.returncode == 3 and result.stderr.count("\n") == 1 and "not in the index" in result.stderr


def _export(env, memories, *args) -> str:
    return run_script("export", *args, env=env, memories=memories, check=True).stdout


def test_export_in_every_format_parses_back_to_the_same_chunks(env, linked, tmp_path):
    lines = [json.loads(line) for line in _export(env, linked).splitlines()]  # every chunk, superseded too
    status = json.loads(run_script("stats", "--json", env=env, memories=linked, check=True).stdout)
    assert len(lines) == status["chunks"]
    first = next(item for item in lines if item["relpath"] == "wiki/hub.md")
    assert {key: first[key] for key in ("kind", "title", "status", "tags", "project", "start_line")} == {
        "kind": "wiki", "title": "PostgreSQL backups", "status": "active", "tags": ["ops", "backup"],
        "project": "infra", "start_line": first["start_line"]}
    assert first["start_line"] >= 1 and first["end_line"] >= first["start_line"] and first["tokens"] > 0
    assert len(first["content_hash"]) == 64 and "pg_dump" in first["text"] and "vector" not in first

    assert "wiki/old-backups.md" in {item["relpath"] for item in lines}
    as_json = json.loads(_export(env, linked, "--format", "json"))
    assert as_json == lines

    target = tmp_path / "chunks.csv"
    _export(env, linked, "--format", "csv", "--output", str(target))
    with open(target, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["text"] for row in rows] == [("'" if item["text"].startswith(("=", "+", "-", "@")) else "")
                                             + item["text"] for item in lines]  # newlines survive quoting
    assert json.loads(rows[0]["tags"]) == lines[0]["tags"] and rows[0]["start_line"] == str(lines[0]["start_line"])
    assert target.read_bytes().startswith(b"\xef\xbb\xbf\"path\",")  # BOM, quoted header
    assert [path.name for path in tmp_path.iterdir()] == ["chunks.csv"]  # no temporary file left


def test_export_applies_the_search_filters_and_adds_vectors_on_request(env, linked):
    active = [json.loads(line) for line in _export(env, linked, "--active-only").splitlines()]
    assert "wiki/old-backups.md" not in {item["relpath"] for item in active} and active
    infra = [json.loads(line) for line in _export(env, linked, "--project", "infra", "--tag", "backup").splitlines()]
    assert {item["relpath"] for item in infra} == {"wiki/hub.md", "raw/session/2026-11-02/101010_abcd1234_s1.md"}
    sessions = [json.loads(line) for line in _export(env, linked, "--scope", "session", "--since", "2026-11-01",
                                                     "--with-vectors").splitlines()]
    assert [item["kind"] for item in sessions] == ["session"] * len(sessions) and sessions
    assert len(sessions[0]["vector"]) == 384 and all(isinstance(value, float) for value in sessions[0]["vector"])
    nothing = _export(env, linked, "--format", "csv", "--where", '{"project": "none-such"}')
    assert list(csv.reader(io.StringIO(nothing))) == [[  # no byte-order mark on stdout
        "path", "relpath", "kind", "title", "status", "tags", "project", "date", "chunk_index", "start_line",
        "end_line", "tokens", "content_hash", "text"]]


def test_export_to_a_missing_folder_is_one_line_and_writes_nothing(env, linked, tmp_path):
    result = run_script("export", "--output", str(tmp_path / "absent" / "x.jsonl"), env=env, memories=linked)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "folder does not exist" in result.stderr
