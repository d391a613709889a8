"""Time in the question: 「先週の…」 and "…yesterday" find the record of that date, in every face."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from conftest import index, run_script

TODAY = dt.date.today()
MONDAY = TODAY - dt.timedelta(days=TODAY.weekday())
LAST_WEEK = MONDAY - dt.timedelta(days=5)  # a Wednesday of last week
TWO_WEEKS_AGO = LAST_WEEK - dt.timedelta(days=7)
YESTERDAY = TODAY - dt.timedelta(days=1)


def meeting(memories, day: dt.date, decision: str) -> str:
    relpath = f"raw/minutes/{day.isoformat()}/100000_release-weekly.md"
    memories.write(relpath, f"# 週次リリース手順ミーティング\n\n## 決定事項\n\n{decision}\n",
                   kind="minutes", title="週次リリース手順ミーティング")
    return relpath


@pytest.fixture
def weekly(memories):
    """The same meeting every week, a different decision each time; a wiki page on the topic, undated."""
    memories.paths = {
        "last": meeting(memories, LAST_WEEK, "リリースノートは金曜に公開する。担当は佐藤。"),
        "before": meeting(memories, TWO_WEEKS_AGO, "コードフリーズを水曜正午に早める。担当は鈴木。"),
        "yesterday": meeting(memories, YESTERDAY, "ホットフィックスは二人の承認で出す。担当は田中。"),
    }
    memories.write("wiki/release.md", "# リリース手順\n\nリリース手順ミーティングで決めたことの一覧。\n",
                   title="リリース手順")
    return memories


def paths(hits) -> list[str]:
    return [hit["path"].split("/memories/", 1)[1] for hit in hits]


def search_json(env, memories, *args):
    result = run_script("search", *args, "--format", "json", env=env, memories=memories, check=True)
    return json.loads(result.stdout), result.stderr


def test_last_week_finds_last_weeks_meeting_and_says_which_dates_it_read(env, weekly):
    index(env, weekly)
    hits, stderr = search_json(env, weekly, "先週のリリース手順ミーティングで何を決めた?")
    assert paths(hits)[0] == weekly.paths["last"]
    window = hits[0]["window"]
    since = LAST_WEEK - dt.timedelta(days=LAST_WEEK.weekday())
    assert window == {"since": since.isoformat(), "until": (since + dt.timedelta(days=6)).isoformat(),
                      "words": ["先週"], "inside": True}
    assert "wiki/release.md" not in paths(hits)  # undated: never in a window, nor around it
    # The meetings of the days around the window follow the one inside it, each saying it lies outside.
    assert all(hit["window"]["inside"] is False for hit in hits[1:]) and weekly.paths["before"] in paths(hits)
    question = "先週のリリース手順ミーティングで何を決めた?"
    shown = run_script("search", question, env=env, memories=weekly, check=True).stdout
    first, *others = shown.split("\n### ")
    assert "outside the window" not in first and all("outside the window" in other for other in others) and others
    assert "note: window" in stderr and "(先週)" in stderr
    english, _ = search_json(env, weekly, "what did we decide yesterday at the release meeting")
    assert paths(english)[0] == weekly.paths["yesterday"] and english[0]["window"]["words"] == ["yesterday"]


def test_explain_shows_the_window(env, weekly):
    index(env, weekly)
    result = run_script("search", "先週のリリース手順", "--explain", env=env, memories=weekly, check=True)
    assert "; window " in result.stdout and "(先週)" in result.stdout


def test_explicit_dates_and_no_time_win_over_the_words(env, weekly):
    index(env, weekly)
    given, _ = search_json(env, weekly, "先週のリリース手順ミーティング", "--since", TWO_WEEKS_AGO.isoformat(),
                           "--until", TWO_WEEKS_AGO.isoformat())
    assert paths(given) == [weekly.paths["before"]] and given[0]["window"] is None
    off, stderr = search_json(env, weekly, "先週のリリース手順ミーティング", "--no-time")
    assert len(paths(off)) == 4 and off[0]["window"] is None and "window" not in stderr


def test_nothing_in_the_window_says_so_and_shows_every_date(env, weekly):
    index(env, weekly)
    hits, stderr = search_json(env, weekly, "去年のリリース手順ミーティング")
    assert hits and all(hit["window"]["inside"] is False for hit in hits)
    assert "nothing inside matched" in stderr and stderr.count("\n") == 1
    assert weekly.paths["last"] in paths(hits)  # what the unwindowed search finds, never a bare 検索結果なし


def test_a_weekend_is_told_of_in_the_days_after_it(env, memories):
    saturday = MONDAY - dt.timedelta(days=2)
    memories.session((saturday + dt.timedelta(days=2)).isoformat(), "090000", "Monday catch-up",
                     "# Monday catch-up\n\nOn Saturday we hiked up Mount Takao and ate soba at the top.\n")
    memories.session((saturday - dt.timedelta(days=30)).isoformat(), "090000", "Older hike",
                     "# Older hike\n\nWe hiked up Mount Takao in the rain.\n")
    index(env, memories)
    hits, stderr = search_json(env, memories, "where did we hike last weekend?")
    assert [hit["title"] for hit in hits] == ["Monday catch-up", "Older hike"]  # written two days after, first
    assert [hit["window"]["inside"] for hit in hits] == [False, False]
    assert "nothing inside matched: from the 7 days on each side, then any date" in stderr

    hits, stderr = search_json(env, memories, "where did we hike last weekend?", "--top", "1")
    assert [hit["title"] for hit in hits] == ["Monday catch-up"]
    assert "nothing inside matched: from the 7 days on each side (" in stderr  # no hit from any other date


def test_only_time_words_lists_that_days_records(env, weekly):
    index(env, weekly)
    hits, _ = search_json(env, weekly, "昨日")
    assert paths(hits) == [weekly.paths["yesterday"]]


def test_recent_takes_time_words_for_its_bounds(env, weekly):
    listed = json.loads(run_script("recent", "--kind", "minutes", "--since", "先週", "--until", "先週", "--format",
                                   "json", env=env, memories=weekly, check=True).stdout)
    assert [item["path"].split("/memories/", 1)[1] for item in listed] == [weekly.paths["last"]]
    since_monday = json.loads(run_script("recent", "--kind", "all", "--since", "last monday", "--format", "json",
                                         env=env, memories=weekly, check=True).stdout)
    assert all(item["date"] >= (TODAY - dt.timedelta(days=TODAY.weekday() or 7)).isoformat()
               for item in since_monday)
    refused = run_script("recent", "--since", "先週の何か", env=env, memories=weekly)
    assert refused.returncode == 2 and "--since" in refused.stderr


def test_the_library_takes_today_from_its_caller(env, weekly):
    import memory_search

    index(env, weekly)
    with memory_search.open(memories_dir=str(weekly.root)) as memories:
        hits = memories.search("昨日のリリース手順ミーティング", today=LAST_WEEK + dt.timedelta(days=1))
        assert hits.window.since == hits.window.until == LAST_WEEK
        assert hits[0].record.relpath == weekly.paths["last"]
        plain = memories.search("昨日のリリース手順ミーティング", time=False)
        assert plain.window is None and len(plain) == 4


def test_mcp_http_and_knowledge_bases_get_it_from_the_core(env, weekly):
    pytest.importorskip("mcp")
    pytest.importorskip("starlette")
    import anyio
    from mcp import Client
    from starlette.testclient import TestClient

    from memory_search.config import Settings
    from memory_search.faces.http_api import Database, create_app
    from memory_search.faces.mcp_server import Tools, build_server
    from memory_search.resources import Resources

    index(env, weekly)
    settings = Settings.from_env(env).with_overrides(memories_dir=weekly.root)
    resources = Resources()

    async def call(arguments):
        async with Client(build_server(Tools(settings, resources))) as client:
            return json.loads((await client.call_tool("search", arguments)).content[0].text)

    try:
        timed = anyio.run(call, {"query": "先週のリリース手順ミーティング", "top": 3})
        assert paths(timed)[0] == weekly.paths["last"] and timed[0]["window"]["words"] == ["先週"]
        untimed = anyio.run(call, {"query": "先週のリリース手順ミーティング", "time": False})
        assert untimed[0]["window"] is None
        app = create_app([Database("default", weekly.root, "2026-12-01T00:00:00Z", settings)], resources)
        with TestClient(app, base_url="http://127.0.0.1") as http:
            seed = http.get("/api/search", params={"db": "default", "q": "先週のリリース手順", "target": "semantic"})
            assert len(seed.json()["semantic"]) == 4  # the seed's route as it was: time words are not read
            assert "x-memory-search-window" not in seed.headers
            timed_http = http.get("/api/search", params={"db": "default", "q": "先週のリリース手順",
                                                          "target": "semantic", "time": "1"})
            assert [group["source"].split("/memories/", 1)[1] for group in timed_http.json()["semantic"]][0] == \
                weekly.paths["last"]
            window = json.loads(timed_http.headers["x-memory-search-window"])
            assert window["since"] == (MONDAY - dt.timedelta(days=7)).isoformat() and window["inside"] is True
    finally:
        resources.close()
