"""recent.py: newest records by date folder and file name, without database or model."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest
from conftest import run_script


def _day(offset: int) -> str:
    return (dt.date.today() - dt.timedelta(days=offset)).isoformat()


@pytest.fixture
def diary(memories):
    memories.session(_day(0), "090000", "Today early", "a", project="agents", duration_minutes=30,
                     ended_at=f"{_day(0)}T09:30:00+09:00", started_at=f"{_day(0)}T09:00:00+09:00", tags=["x", "y"])
    memories.session(_day(0), "170000", "Today late", "b", project="webapp", duration_minutes=15)
    memories.session(_day(3), "120000", "Three days ago", "c", project="agents")
    memories.session(_day(30), "120000", "A month ago", "d", project="agents", status="superseded")
    memories.write(f"raw/web/{_day(1)}/080000_page.md", "e", kind="web", title="Yesterday's page")
    memories.write(f"raw/minutes/{_day(2)}/100000_meeting.md", "f", kind="minutes", title="Meeting")
    memories.write(f"raw/session/{_day(0)}/notes.md", "not a timed record", title="Ignored")
    memories.write("wiki/page.md", "g", title="Wiki page")
    return memories


def _titles(result):
    return [record["title"] for record in json.loads(result.stdout)]


def test_sessions_newest_first(env, diary):
    result = run_script("recent", "--format", "json", env=env, memories=diary, check=True)
    assert _titles(result) == ["Today late", "Today early", "Three days ago", "A month ago"]


def test_json_fields_are_the_originals(env, diary):
    result = run_script("recent", "--format", "json", "--top", "2", env=env, memories=diary, check=True)
    early = json.loads(result.stdout)[1]
    assert early["date"] == _day(0) and early["time"] == "09:00:00"
    assert early["ended_at"] == f"{_day(0)}T09:30:00+09:00" and early["started_at"] == f"{_day(0)}T09:00:00+09:00"
    assert early["project"] == "agents" and early["duration_minutes"] == 30
    assert early["tags"] == ["x", "y"] and early["status"] == "active"
    assert early["path"].startswith(str(diary.root / f"raw/session/{_day(0)}/090000_abcd1234_"))


@pytest.mark.parametrize("kind, expected", [
    ("web", ["Yesterday's page"]),
    ("minutes", ["Meeting"]),
    ("all", ["Today late", "Today early", "Yesterday's page", "Meeting", "Three days ago", "A month ago"]),
])
def test_kinds(env, diary, kind, expected):
    result = run_script("recent", "--kind", kind, "--format", "json", env=env, memories=diary, check=True)
    assert _titles(result) == expected


def test_project_days_and_top(env, diary):
    agents = run_script("recent", "--project", "agents", "--format", "json", env=env, memories=diary, check=True)
    assert _titles(agents) == ["Today early", "Three days ago", "A month ago"]
    week = run_script("recent", "--days", "7", "--format", "json", env=env, memories=diary, check=True)
    assert _titles(week) == ["Today late", "Today early", "Three days ago"]
    today = run_script("recent", "--days", "0", "--format", "json", env=env, memories=diary, check=True)
    assert _titles(today) == ["Today late", "Today early"]
    one = run_script("recent", "--top", "1", "--format", "json", env=env, memories=diary, check=True)
    assert _titles(one) == ["Today late"]


def test_markdown_and_paths(env, diary):
    markdown = run_script("recent", "--top", "2", env=env, memories=diary, check=True).stdout
    assert markdown.startswith("### 1. Today late  _(ended: ")
    assert f"### 2. Today early  _(ended: {_day(0)}T09:30:00+09:00, 30 min)_" in markdown  # English, as the rest


def test_each_kind_is_labelled_with_what_its_time_means(env, diary):
    markdown = run_script("recent", "--kind", "all", env=env, memories=diary, check=True).stdout
    assert f"### 3. Yesterday's page  _(archived: {_day(1)} 08:00:00)_" in markdown
    assert f"### 4. Meeting  _(held: {_day(2)} 10:00:00)_" in markdown
    assert "_(ended: " in markdown and "分" not in markdown
    paths = run_script("recent", "--kind", "web", "--format", "paths", env=env, memories=diary, check=True).stdout
    assert paths.strip() == str(diary.root / f"raw/web/{_day(1)}/080000_page.md")


def test_no_records(env, memories):
    memories.write("wiki/page.md", "only a wiki page")
    result = run_script("recent", env=env, memories=memories)
    assert result.returncode == 0 and result.stdout.strip() == "該当する記録なし"
    assert json.loads(run_script("recent", "--format", "json", env=env, memories=memories).stdout) == []


def test_recent_needs_no_database(env, diary):
    broken = dict(env, MEMORIES_DATABASE_URL="postgresql://nobody@127.0.0.1:9/none")
    assert run_script("recent", env=broken, memories=diary).returncode == 0


@pytest.mark.parametrize("args, code", [(["--kind", "wiki"], 2), (["--top", "0"], 2), (["--days", "-1"], 2),
                                        (["--format", "csv"], 2)])
def test_bad_flags(env, diary, args, code):
    result = run_script("recent", *args, env=env, memories=diary)
    assert result.returncode == code and len(result.stderr.strip().splitlines()) == 1


def test_missing_directory(env, tmp_path):
    result = run_script("recent", "--memories", str(tmp_path / "none"), env=env)
    assert result.returncode == 3


@pytest.mark.skipif(os.path.exists("/Volumes/memory"), reason="this machine has the default memories folder")
def test_the_missing_default_folder_says_how_to_set_one_on_linux_too(env):
    for script in ("recent", "search"):
        result = run_script(script, *(["x"] if script == "search" else []), env=env)  # no MEMORIES_DIR
        assert result.returncode == 3 and result.stderr.count("\n") == 1, result.stderr
        assert "/Volumes/memory (the default, a macOS volume) not found" in result.stderr
        assert "export MEMORIES_DIR=~/memories` on Linux" in result.stderr


def test_only_the_newest_folders_and_the_printed_files_are_read(memories, monkeypatch):
    from memory_search.directory import recent

    for day in range(40):
        for clock in ("080000", "120000", "180000"):
            memories.session(_day(day), clock, f"day {day} at {clock}", "body", project="p" if day % 2 else "q")
    listed, read = [], []
    real_listdir, real_read = recent.os.listdir, recent.memory_record
    monkeypatch.setattr(recent.os, "listdir", lambda path: listed.append(path) or real_listdir(path))
    monkeypatch.setattr(recent, "memory_record", lambda *args: read.append(args[1]) or real_read(*args))

    records = recent.list_recent(memories.root, kind="all", top=4)
    assert [record.title for record in records] == ["day 0 at 180000", "day 0 at 120000", "day 0 at 080000",
                                                    "day 1 at 180000"]
    assert len(read) == 4 and len(listed) == 2  # of 40 date folders and 120 files

    listed.clear()
    read.clear()
    records = recent.list_recent(memories.root, kind="session", top=2, project="p")
    assert [record.title for record in records] == ["day 1 at 180000", "day 1 at 120000"]
    assert len(read) == 5  # the three of day 0 (another project), then two
