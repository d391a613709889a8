"""Files index.py skips (a PNG named .md, text that is not UTF-8, broken frontmatter): one count of memories
everywhere, the skipped ones reported apart, and no reader listing them as memories."""

from __future__ import annotations

import json

import pytest
from conftest import MemoriesDir, run_script

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, base_env, database) -> MemoriesDir:
    memories = MemoriesDir(tmp_path_factory.mktemp("skipped") / "memories")
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees.", title="Tea")
    memories.write("wiki/coffee.md", "# Coffee\n\nGrind the beans just before brewing.", title="Coffee")
    memories.write("raw/web/2026-11-02/090000_brewing.md", "# Brewing\n\nAn archived page on brewing tea.",
                   kind="web", title="Brewing guide")
    (memories.root / "raw/web/2026-11-03").mkdir(parents=True)
    (memories.root / "raw/web/2026-11-03/101500_screenshot.md").write_bytes(PNG)
    (memories.root / "wiki/binary-blob.md").write_bytes(PNG)
    (memories.root / "wiki/broken.md").write_text("---\ntitle: [unclosed\n---\nBody of a broken note.\n")
    result = run_script("index", "--json", env=base_env, memories=memories)
    assert result.returncode == 4 and json.loads(result.stdout)["failed"] == 3, result.stderr
    return memories


def test_stats_counts_the_memories_once_and_the_skipped_files_apart(env, mixed):
    status = json.loads(run_script("stats", "--json", env=env, memories=mixed).stdout)
    assert status["files"] == 3 == sum(group["files"] for group in status["by_kind_and_status"])
    assert status["skipped"] == 3
    assert {item["path"] for item in status["unreadable"]} == {
        "raw/web/2026-11-03/101500_screenshot.md", "wiki/binary-blob.md", "wiki/broken.md"}
    verified = json.loads(run_script("stats", "--verify", "--json", env=env, memories=mixed).stdout)
    assert verified["files"] == status["files"]
    text = run_script("stats", env=env, memories=mixed).stdout
    assert "  3 files, " in text and "3 skipped file(s) not counted" in text


def test_recent_lists_no_file_the_indexer_skips(env, mixed):
    listed = json.loads(run_script("recent", "--kind", "web", "--format", "json", env=env, memories=mixed,
                                   check=True).stdout)
    assert [record["title"] for record in listed] == ["Brewing guide"]  # not the PNG named .md


def test_similar_on_a_skipped_file_says_why_it_is_not_indexed(env, mixed):
    result = run_script("similar", "wiki/binary-blob.md", env=env, memories=mixed)
    assert result.returncode == 3 and result.stdout == "" and result.stderr.count("\n") == 1
    assert "binary content" in result.stderr and "run index.py" not in result.stderr
    broken = run_script("similar", "wiki/broken.md", env=env, memories=mixed)
    assert broken.returncode == 3 and "invalid YAML frontmatter" in broken.stderr
