"""The library's public face, as a Python user calls it."""

from __future__ import annotations

import json

import pytest
from conftest import run_script

import memory_search
from memory_search.errors import IndexMissing, MemoriesMissing, MemoryNotFound, PathOutside
from memory_search.render import hits_json, records_json

TEA = "# Brewing green tea\n\nBrew green tea at 70 degrees for two minutes; boiling water makes it bitter.\n"
BREAD = "# パンの焼き方\n\n強力粉でパンを焼く。発酵は二回、オーブンは 200 度。\n"
DEPLOY = "# Deploy runbook\n\nRoll out with blue green deploys and watch the error rate for ten minutes.\n"


@pytest.fixture
def notes(memories):
    memories.write("wiki/kitchen/green-tea.md", TEA, title="Green tea", tags=["kitchen"])
    memories.write("wiki/kitchen/bread.md", BREAD, title="パン")
    memories.write("wiki/ops/deploy.md", DEPLOY, title="Deploy runbook", tags=["ops"])
    memories.session("2026-11-03", "080000", "Tea tasting", "We brewed the green tea at 70 degrees and it was "
                     "not bitter; two minutes is enough.", project="home")
    memories.write("raw/web/2026-11-01/090000_article.md", "# Blue green deployment\n\nTwo environments, one live.",
                   kind="web", title="Blue green article")
    return memories


def test_open_search_recent_status_and_index(env, notes):
    with memory_search.open(memories_dir=str(notes.root)) as memories:
        stats = memories.index()
        assert stats.success == 5 and stats.failed == 0
        hits = memories.search("how hot should the water be for green tea", top=3)
        assert hits[0].path == str(notes.root / "wiki/kitchen/green-tea.md")
        assert hits[0].record.title == "Green tea" and hits[0].record.kind == "wiki"
        wiki = memories.search("tea", filters=memory_search.Filters(scope="session"))
        assert [hit.record.kind for hit in wiki] == ["session"]
        assert [record.title for record in memories.recent(kind="all")] == ["Tea tasting", "Blue green article"]
        assert memories.status()["files"] == 5
        assert memories.index().skipped == 5  # nothing changed


def test_recent_takes_dates_as_dates_or_as_text(env, notes):
    import datetime as dt

    from memory_search.errors import UsageError

    with memory_search.open(memories_dir=str(notes.root)) as memories:
        as_text = memories.recent(kind="all", since="2026-11-02")
        assert [record.title for record in as_text] == ["Tea tasting"]
        assert memories.recent(kind="all", since=dt.date(2026, 11, 2)) == as_text
        with pytest.raises(UsageError, match="not a date"):
            memories.recent(kind="all", since="the day after")


def test_the_library_prints_what_the_scripts_print(env, notes):
    with memory_search.open(memories_dir=str(notes.root)) as memories:
        memories.index()
        hits = memories.search("パンの発酵", top=5)
        records = memories.recent(kind="all")
    assert json.loads(hits_json(hits)) == json.loads(
        run_script("search", "パンの発酵", "--format", "json", env=env, memories=notes, check=True).stdout)
    assert json.loads(records_json(records)) == json.loads(
        run_script("recent", "--kind", "all", "--format", "json", env=env, memories=notes, check=True).stdout)


def test_similar_finds_the_page_about_the_same_topic_not_the_memory_itself(env, notes):
    session = next((notes.root / "raw/session").rglob("*.md"))
    with memory_search.open(memories_dir=str(notes.root)) as memories:
        memories.index()
        hits = memories.similar(str(session), top=3)
        by_relative = memories.similar(str(session.relative_to(notes.root)), top=3)
    assert hits[0].path == str(notes.root / "wiki/kitchen/green-tea.md")
    assert str(session) not in [hit.path for hit in hits]
    assert [hit.path for hit in by_relative] == [hit.path for hit in hits]


def test_similar_refuses_a_path_outside_the_directory_or_not_indexed(env, notes, tmp_path):
    with memory_search.open(memories_dir=str(notes.root)) as memories:
        memories.index()
        with pytest.raises(PathOutside, match="outside the memories directory"):
            memories.similar(str(tmp_path / "elsewhere.md"))
        notes.write("wiki/new.md", "# New\n\nNot indexed yet.", title="New")
        with pytest.raises(MemoryNotFound, match="not in the index"):
            memories.similar("wiki/new.md")


def test_connection_opens_on_first_use_and_closes_with_the_block(env, notes):
    memories = memory_search.open(memories_dir=str(notes.root))
    assert memories._reader.held is None  # nothing opened by open()
    with memories:
        memories.index()
        memories.search("tea")
        connection = memories._reader.held
        assert connection is not None and not connection.closed
    assert connection.closed


def test_errors_are_the_library_errors(env, tmp_path):
    with pytest.raises(MemoriesMissing):
        memory_search.open(memories_dir=str(tmp_path / "none")).search("x")
    (tmp_path / "empty").mkdir()
    with memory_search.open(memories_dir=str(tmp_path / "empty")) as memories:
        with pytest.raises(IndexMissing):
            memories.search("x")


def test_a_query_over_the_limit_is_refused_before_anything_reads_it(env, tmp_path, monkeypatch):
    """The limit counts the query as sent, and nothing is spent on it first: no time words read, no memories
    directory looked at (this one does not exist), no connection opened."""
    from memory_search.errors import UsageError
    from memory_search.search import timewords

    def unread(*_):
        raise AssertionError("the time words of an over-long query were read")

    monkeypatch.setattr(timewords, "find_time", unread)
    query = "先週の " + "tea " * 600
    memories = memory_search.open(memories_dir=str(tmp_path / "none"))
    with pytest.raises(UsageError, match=f"^the query is {len(query):,} characters long: keep it to 2,000"):
        memories.search(query)
    assert memories._reader.held is None


def test_a_query_no_search_can_take_is_refused_once_for_every_face_in_its_words(env, tmp_path):
    """The request checks its query (blank, a NUL, over the limit) before anything is opened, naming it as the
    face that asked does (the page's "q")."""
    from memory_search.errors import UsageError

    memories = memory_search.open(memories_dir=str(tmp_path / "none"))
    for query, name, message in (("", "the query", "^the query is empty: give a few words to search for$"),
                                 ("  ", "q", "^q is empty: give a few words to search for$"),
                                 ("tea\x00", "q", "^q holds a NUL character: remove it$"),
                                 ("tea " * 600, "q", "^the query is 2,400 characters long")):
        with pytest.raises(UsageError, match=message):
            memories.search(query, query_name=name)
    assert memories._reader.held is None


def test_time_words_that_start_after_they_end_are_refused_before_the_search(env, tmp_path):
    import datetime

    from memory_search.errors import UsageError

    memories = memory_search.open(memories_dir=str(tmp_path / "none"))
    with pytest.raises(UsageError, match=r"'since 2030' name 2030-01-01\.\.2026-12-01, which starts after it ends"):
        memories.search("tea since 2030", today=datetime.date(2026, 12, 1))
    assert memories._reader.held is None


@pytest.mark.slow  # eighty files: past the fusion depth of a short list is the point
def test_asking_for_more_results_does_not_reorder_the_first_ones(env, memories):
    """Each leg is fused 100 deep for any list of up to 33 files, so a longer list only adds to the end."""
    teas = ["green", "black", "oolong", "white", "jasmine", "roasted", "smoked", "barley", "mint", "ginger"]
    ways = ["cold", "hot", "slowly", "quickly", "twice", "in a pot", "in a cup", "with milk"]
    for i in range(80):
        tea, way = teas[i % len(teas)], ways[i // len(teas)]
        memories.write(f"wiki/tea-{i:02d}.md", f"# {tea.title()} tea, brewed {way}\n\nBrew {tea} tea {way}. "
                       f"Note {i}: {'bitter' if i % 3 else 'sweet'} when steeped {i % 7 + 1} minutes.\n")
    with memory_search.open(memories_dir=str(memories.root)) as library:
        library.index()
        query = "which tea turned bitter when brewed hot for a few minutes"
        first = [(hit.path, hit.score) for hit in library.search(query, top=5)]
        longer = [(hit.path, hit.score) for hit in library.search(query, top=30)]
    assert len(first) == 5 and longer[:5] == first


def test_an_index_another_machine_builds_is_searched_here_but_not_indexed_from_here(env, notes):
    from memory_search.api import served
    from memory_search.errors import UsageError

    with memory_search.open(memories_dir=str(notes.root)) as memories:
        memories.index()
        prefix = memories.status()["table"].removesuffix("__chunks")
    with memory_search.open(served(memory_search.Settings.from_env(), prefix)) as remote:
        assert remote.search("green tea", top=1, mode="keyword")
        for action in (remote.index_in_background, remote.index):
            with pytest.raises(UsageError, match="on another machine .*: index them there"):
                action()
