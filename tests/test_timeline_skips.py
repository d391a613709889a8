"""A date folder that cannot be listed is said in every face: recent.py and MCP warn, and the page's timeline,
which has no stderr, gets the skipped folders from the library and shows a line saying so."""

from __future__ import annotations

import errno
import os
import re

from conftest import ROOT, shared_resources

import memory_search


def _refuse_listing(monkeypatch, folder, code: int) -> None:
    """Listing `folder` fails with OSError(code), as on a folder without permission or a dropped mount."""
    real = os.listdir

    def listdir(path="."):
        if os.path.abspath(os.fspath(path)) == str(folder):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)


def _notes(memories):
    memories.session("2026-11-05", "091130", "Standup", "# Standup\n\nWe planned the lighthouse release.")
    memories.session("2026-11-07", "080000", "Retro", "# Retro\n\nThe lighthouse shipped.")
    return memories


def test_the_librarys_recent_records_name_the_date_folders_it_could_not_read(env, memories, monkeypatch):
    notes = _notes(memories)
    _refuse_listing(monkeypatch, notes.root / "raw/session/2026-11-07", errno.EACCES)
    with memory_search.open(memories_dir=str(notes.root), warn=lambda message: None) as library:
        records = library.recent(kind="all")
    assert [record.title for record in records] == ["Standup"]
    assert records.skipped == [{"folder": "raw/session/2026-11-07", "reason": "Permission denied"}]


def test_the_pages_timeline_says_which_date_folder_it_left_out(env, memories, monkeypatch):
    from starlette.testclient import TestClient

    from memory_search.config import Settings
    from memory_search.faces.http_api import Database, create_app

    notes = _notes(memories)
    _refuse_listing(monkeypatch, notes.root / "raw/session/2026-11-07", errno.EIO)
    settings = Settings.from_env(env).with_overrides(memories_dir=notes.root)
    app = create_app([Database("default", notes.root, "2026-12-01T00:00:00Z", settings)], shared_resources())
    with TestClient(app, base_url="http://127.0.0.1") as client:
        answer = client.get("/page/recent.json").json()
    assert [record["title"] for record in answer["records"]] == ["Standup"]
    assert answer["skipped"] == [{"folder": "raw/session/2026-11-07", "reason": os.strerror(errno.EIO)}]

    # The page draws it as a line of the timeline, in both languages.
    script = (ROOT / "src/memory_search/static/page.js").read_text(encoding="utf-8")
    assert len(re.findall(r"recentSkipped: \(folders\) =>", script)) == 2
    assert "T.recentSkipped(answer.skipped" in script
