"""Auto-indexing (MEMORIES_AUTO_INDEX=1) is the library's: every face, and a Python user, gets it."""

from __future__ import annotations

import time

import pytest

import memory_search
from memory_search.errors import IndexMissing


def _until(check, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"still not true after {timeout} s")


def test_a_library_search_with_no_index_starts_one_and_answers_once_files_are_searchable(env, memories):
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees for two minutes.\n", title="Tea")
    notes = []
    with memory_search.open(memories_dir=str(memories.root), auto_index=True, warn=notes.append) as library:
        try:
            hits = library.search("green tea", mode="keyword")
            assert [hit.record.title for hit in hits] == ["Tea"] and "is being built" in notes[0]
        except IndexMissing as error:  # the run took longer than a search waits: it says so
            assert "building it in the background now" in str(error)
            hits = _until(lambda: library.search("green tea", mode="keyword"))
            assert [hit.record.title for hit in hits] == ["Tea"]


def test_a_search_that_finds_the_first_runs_tables_still_empty_waits_for_files_rather_than_answer_nothing(
        monkeypatch, tmp_path):
    from memory_search.config import Settings
    from memory_search.indexing import auto

    monkeypatch.setattr(auto, "start", lambda settings: True)
    monkeypatch.setattr(auto, "FIRST_WAIT", 1.5)
    settings = Settings.from_env().with_overrides(memories_dir=str(tmp_path), auto_index=True)
    written = {"chunks": 0}

    def search():
        if written["chunks"] is None:
            raise IndexMissing("no index")
        return [("tea",)] if written["chunks"] else []

    def status():
        return {"embedded": written["chunks"], "pending": {"new": 0 if written["chunks"] else 1}}

    with pytest.raises(IndexMissing, match="building it in the background now"):
        auto.searching(settings, _missing_once(search), print, status)
    notes = []
    monkeypatch.setattr(auto.time, "sleep", lambda seconds: written.update(chunks=3))
    assert auto.searching(settings, _missing_once(search), notes.append, status) == [("tea",)]
    assert "is being built" in notes[0]


def _missing_once(search):
    """`search`, but the first call finds no index (as the search that starts the first run does)."""
    calls = []

    def first_missing():
        calls.append(1)
        if len(calls) == 1:
            raise IndexMissing("no index")
        return search()
    return first_missing


def test_a_library_search_that_finds_the_newest_record_missing_starts_a_catch_up_run(env, memories):
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees for two minutes.\n", title="Tea")
    with memory_search.open(memories_dir=str(memories.root), auto_index=True) as library:
        library.index()
        memories.session("2026-11-03", "080000", "Quokka", "We moved the quokka cluster to the new racks.")
        assert library.behind()
        assert library.search("quokka cluster", mode="keyword") == []  # and a catch-up run starts
        hits = _until(lambda: library.search("quokka cluster", mode="keyword"))
        assert hits[0].record.title == "Quokka"


def test_without_auto_indexing_a_search_starts_no_index_run(env, memories):
    memories.write("wiki/tea.md", "# Tea\n\nGreen tea.\n", title="Tea")
    with memory_search.open(memories_dir=str(memories.root)) as library:
        for _ in range(2):
            with pytest.raises(IndexMissing):
                library.search("tea")
            time.sleep(2)
