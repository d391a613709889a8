"""A drive that is not mounted: a folder that lists empty now (its empty mount point), or that is a link now (a
sub-folder swapped for a link to an empty folder, or to the same files moved elsewhere), while the index holds
records under it, is out of reach, not deleted: exit 4, the folder named, every record kept; --allow-removal says
the removal is meant. One rule of the library, so index.py, --watch, the plugin's catch-up run and a real tmpfs
unmounted between two runs all keep them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psycopg
import pytest
from conftest import ROOT, SCRIPTS, index, run_script

import memory_search
from memory_search.storage.schema import ManagedTables


def _indexed(database: str, root: Path) -> set[str]:
    tables = ManagedTables.of(root)
    with psycopg.connect(database, autocommit=True) as conn:
        return {row[0] for row in conn.execute(f"SELECT relpath FROM {tables.files}").fetchall()}


@pytest.fixture
def notes(env, memories):
    """Two pages on a drive (wiki/) and a session summary beside it, all indexed."""
    marker = memories.root.parent.name
    memories.write("wiki/apples.md", f"# Apples\n\nThe quokka eats apples in the orchard. {marker}", title="Apples")
    memories.write("wiki/boats.md", f"# Boats\n\nBoats sail on the lake at dawn. {marker}", title="Boats")
    memories.session("2026-11-05", "091130", "Standup", f"# Standup\n\nWe planned the lighthouse release. {marker}")
    index(env, memories)
    return memories


ALL = {"wiki/apples.md", "wiki/boats.md"}


def _unmount(notes, how: str, tmp_path: Path) -> None:
    """Leave wiki/ as a drive that is not mounted leaves it, in one of three ways."""
    wiki = notes.root / "wiki"
    moved = tmp_path / "moved-wiki"
    shutil.move(str(wiki), str(moved))
    if how == "empty mount point":
        wiki.mkdir()
        (wiki / ".DS_Store").write_bytes(b"")  # a dot-file does not make a folder hold memories
    elif how == "link to an empty folder":
        (tmp_path / "empty").mkdir()
        wiki.symlink_to(tmp_path / "empty")
    else:  # the same files, moved, reached through a link
        wiki.symlink_to(moved)


WAYS = ["empty mount point", "link to an empty folder", "link to the same files moved"]


@pytest.mark.parametrize("how", WAYS)
def test_a_folder_that_lists_empty_or_leads_elsewhere_keeps_its_records(env, notes, database, tmp_path, how):
    before = _indexed(database, notes.root)
    _unmount(notes, how, tmp_path)

    dry = json.loads(run_script("index", "--dry-run", "--json", env=env, memories=notes).stdout)
    assert dry["deleted"] == [] and {item["path"] for item in dry["kept"]} == ALL

    result = run_script("index", "--json", env=env, memories=notes)
    assert result.returncode == 4, result.stderr
    stats = json.loads(result.stdout)
    assert (stats["deleted"], stats["unreachable"]) == (0, 2)
    assert [held["folder"] for held in stats["emptied"]] == ["wiki"]
    reasons = {item["path"]: item["reason"] for item in stats["failures"]}
    assert all(reasons[path].startswith("its folder wiki ") and "kept in the index" in reasons[path] for path in ALL)
    assert _indexed(database, notes.root) == before

    text = run_script("index", env=env, memories=notes)
    assert text.returncode == 4 and "Traceback" not in text.stderr
    assert "kept what the index holds under wiki" in text.stderr and "--allow-removal" in text.stderr

    status = json.loads(run_script("stats", "--json", env=env, memories=notes).stdout)
    assert status["pending"]["deleted"] == 0 and ALL <= {item["path"] for item in status["unreadable"]}

    meant = json.loads(run_script("index", "--json", "--allow-removal", env=env, memories=notes).stdout)
    assert meant["deleted"] == 2 and meant["emptied"] == []
    assert not _indexed(database, notes.root) & ALL


def test_a_memories_folder_that_lists_empty_keeps_every_record(env, notes, database, tmp_path):
    before = _indexed(database, notes.root)
    for entry in list(notes.root.iterdir()):
        shutil.move(str(entry), str(tmp_path / entry.name))
    result = run_script("index", "--json", env=env, memories=notes)
    assert result.returncode == 4, result.stderr
    stats = json.loads(result.stdout)
    assert stats["deleted"] == 0 and stats["emptied"][0]["folder"] == str(notes.root)
    assert _indexed(database, notes.root) == before


def test_a_folder_emptied_among_others_still_loses_what_was_deleted_beside_it(env, notes, database):
    """The rule holds back only what lies under the emptied folder: a file removed from a folder that still
    holds others is gone."""
    (notes.root / "wiki/boats.md").unlink()
    stats = index(env, notes)
    assert (stats["deleted"], stats["unreachable"], stats["emptied"]) == (1, 0, [])


def test_watch_keeps_what_lies_under_a_folder_that_lists_empty(env, notes, database, tmp_path):
    from memory_search.indexing.indexer import watch

    settings = memory_search.Settings.from_env().with_overrides(memories_dir=str(notes.root))
    runs = []

    def on_run(stats):
        runs.append(stats)
        if len(runs) == 1:
            _unmount(notes, "empty mount point", tmp_path)

    thread = threading.Thread(target=watch, args=(settings,), kwargs=dict(
        interval=0.05, settle=0.05, on_run=on_run, should_stop=lambda: len(runs) >= 2), daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), runs
    assert runs[1].deleted == 0 and runs[1].unreachable == 2 and runs[1].emptied[0]["folder"] == "wiki"
    assert ALL <= _indexed(database, notes.root)


def test_the_plugins_catch_up_run_keeps_what_lies_under_an_empty_mount_point(env, notes, database, tmp_path):
    """What the SessionStart and SessionEnd hooks start in the background: environment.py prepare --index DIR."""
    _unmount(notes, "empty mount point", tmp_path)
    result = subprocess.run([sys.executable, str(ROOT / "src/memory_search/faces/environment.py"), "prepare",
                             "--index", str(notes.root)], capture_output=True, text=True, env=env, timeout=300,
                            cwd=ROOT)
    assert result.returncode == 4, result.stderr
    assert "kept what the index holds under wiki" in result.stderr
    assert ALL <= _indexed(database, notes.root)


def test_the_background_run_the_page_starts_keeps_them_and_says_so(env, notes, database, tmp_path):
    """The page's and the HTTP API's refresh start indexing/auto.py: it keeps them, and stats (the page's
    overview) lists them as kept."""
    _unmount(notes, "link to an empty folder", tmp_path)
    result = subprocess.run([sys.executable, "-m", "memory_search.indexing.auto", str(notes.root)],
                            capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert result.returncode == 4, result.stderr
    assert "kept what the index holds under wiki" in result.stderr
    assert ALL <= _indexed(database, notes.root)


def _can_unshare() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (in a private mount namespace)"
    if not shutil.which("unshare"):
        return "unshare is missing"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount is not permitted here ({probe.stderr.strip()})"
    return None


@pytest.mark.crash
def test_a_tmpfs_unmounted_between_two_runs_keeps_its_records(env, memories, database, tmp_path):
    """A real drive: a tmpfs mounted over memories/drive in a private mount namespace, indexed, unmounted (its
    empty mount point stays), indexed again: exit 4, the folder named, every record kept."""
    reason = _can_unshare()
    if reason:
        pytest.skip(reason)
    marker = tmp_path.name
    memories.write("notes.md", f"# Notes\n\nOn the system disk. {marker}", title="Notes")
    staged = tmp_path / "staged"
    for name, words in (("apples", "The quokka eats apples"), ("boats", "Boats sail on the lake")):
        (staged / name).mkdir(parents=True)
        (staged / name / f"{name}.md").write_text(f"# {name}\n\n{words}. {marker}\n", encoding="utf-8")
    (memories.root / "drive").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    script = textwrap.dedent(f"""
        set -u
        mount -t tmpfs -o size=8m memories-drive {memories.root}/drive
        cp -a {staged}/. {memories.root}/drive/
        {sys.executable} {SCRIPTS}/index.py --json --memories {memories.root} >{out}/first.json 2>{out}/first.err
        echo $? >{out}/first.code
        umount {memories.root}/drive
        {sys.executable} {SCRIPTS}/index.py --json --memories {memories.root} >{out}/second.json 2>{out}/second.err
        echo $? >{out}/second.code
    """)
    subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], env=env, timeout=600,
                   check=True)
    assert (out / "first.code").read_text().strip() == "0", (out / "first.err").read_text()
    assert json.loads((out / "first.json").read_text())["success"] == 3
    assert (out / "second.code").read_text().strip() == "4", (out / "second.err").read_text()
    second = json.loads((out / "second.json").read_text())
    assert second["deleted"] == 0 and second["emptied"][0]["folder"] == "drive"
    assert _indexed(database, memories.root) == {"notes.md", "drive/apples/apples.md", "drive/boats/boats.md"}
