"""The search log: off by default, one JSON line per search when on, summarized by stats.py --searches."""

from __future__ import annotations

import json

from conftest import index, run_script, search


def _tree(root) -> set:
    return {path.relative_to(root).as_posix() for path in root.rglob("*")}


def test_searches_are_logged_only_when_asked_and_never_into_the_memories(env, memories, tmp_path):
    memories.write("wiki/tea.md", "# Green tea\n\nBrew green tea at seventy degrees for two minutes.", title="Tea")
    index(env, memories)
    state = tmp_path / "state"
    env = {**env, "XDG_STATE_HOME": str(state)}
    before = _tree(memories.root)

    search(env, memories, "green tea temperature")
    assert not state.exists()  # off by default: queries can be private

    logged = {**env, "MEMORIES_SEARCH_LOG": "1"}
    search(logged, memories, "green tea temperature", "--top", "3")
    for _ in range(2):
        assert search(logged, memories, "anything at all", "--project", "no-such-project") == []
    search(logged, memories, "brew", "--mode", "keyword", "--scope", "wiki", "--tag", "x")

    log = state / "memory-search" / "searches.jsonl"
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [entry["query"] for entry in entries] == ["green tea temperature", "anything at all", "anything at all",
                                                     "brew"]
    first = entries[0]
    assert (first["top"], first["results"], first["filters"]) == (3, 1, {})
    assert first["ms"] > 0 and first["timestamp"].endswith("+00:00")
    assert entries[1]["filters"] == {"project": "no-such-project"} and entries[1]["results"] == 0
    assert entries[3]["filters"] == {"scope": "wiki", "tags": ["x"]} and entries[3]["mode"] == "keyword"
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    assert _tree(memories.root) == before

    summary = json.loads(run_script("stats", "--searches", "--json", env=env, check=True).stdout)
    assert summary["searches"] == 4 and summary["p50_ms"] <= summary["p95_ms"]
    assert summary["no_results"] == [{"query": "anything at all", "count": 2}, {"query": "brew", "count": 1}]
    text = run_script("stats", "--searches", env=env, check=True).stdout
    assert "4 searches logged" in text and "      2  anything at all" in text


def test_an_unwritable_log_warns_and_the_search_still_answers(env, memories, tmp_path):
    memories.write("wiki/tea.md", "# Green tea\n\nBrew green tea at seventy degrees.", title="Tea")
    index(env, memories)
    blocker = tmp_path / "state-file"
    blocker.write_text("not a folder")
    env = {**env, "XDG_STATE_HOME": str(blocker), "MEMORIES_SEARCH_LOG": "1"}
    result = run_script("search", "green tea", "--format", "json", env=env, memories=memories)
    assert result.returncode == 0 and json.loads(result.stdout)
    assert "cannot write the search log" in result.stderr and result.stderr.count("\n") == 1


def test_no_log_yet_says_how_to_turn_it_on(env, tmp_path):
    text = run_script("stats", "--searches", env={**env, "XDG_STATE_HOME": str(tmp_path)}, check=True).stdout
    assert "set MEMORIES_SEARCH_LOG=1" in text


def test_mcp_and_http_searches_are_logged_as_the_scripts_are(env, memories, tmp_path):
    """The library logs every face's search the same way: one line per search, with the query as asked (an HTTP
    search runs its two branches, each a search with its mode); warming up logs nothing."""
    from starlette.testclient import TestClient

    from memory_search.config import Settings
    from memory_search.faces.http_api import Database, create_app
    from memory_search.faces.mcp_server import Tools
    from memory_search.resources import Resources

    memories.write("wiki/tea.md", "# Green tea\n\nBrew green tea at seventy degrees for two minutes.", title="Tea")
    index(env, memories)
    state = tmp_path / "state"
    settings = Settings.from_env({**env, "XDG_STATE_HOME": str(state), "MEMORIES_SEARCH_LOG": "1"}).with_overrides(
        memories_dir=memories.root)
    log = state / "memory-search" / "searches.jsonl"
    resources = Resources()
    try:
        with resources.open(settings) as library:
            library.warm_up()
        assert not log.exists()

        tools = Tools(settings, resources)
        assert tools.search("green tea temperature", top=3, scope="wiki")
        assert tools.knowledge_search("green tea", limit=2) and tools.similar(str(memories.root / "wiki/tea.md")) == []
        app = create_app([Database("default", memories.root, "2026-12-01T00:00:00Z", settings)], resources)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            assert client.get("/api/search", params={"db": "default", "q": "brew", "target": "keyword"}).json()
            assert client.get("/api/search", params={"db": "default", "q": ""}).status_code == 400
    finally:
        resources.close()

    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(entry["query"], entry["top"], entry["mode"], entry["results"], entry["filters"]) for entry in entries] == [
        ("green tea temperature", 3, None, 1, {"scope": "wiki"}), ("green tea", 2, None, 1, {}),
        ("brew", 10, "keyword", 1, {})]
    assert all(entry["ms"] > 0 and entry["timestamp"].endswith("+00:00") for entry in entries)
    assert oct(log.stat().st_mode & 0o777) == "0o600"
