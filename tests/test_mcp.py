"""mcp_server.py through the MCP SDK's own stdio client: tools, their answers, their errors."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (make install installs it)")

import anyio  # noqa: E402
from conftest import SCRIPTS, MemoriesDir, index, run_script, search  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def sample(tmp_path_factory, base_env, database):
    memories = MemoriesDir(tmp_path_factory.mktemp("mcp") / "memories")
    memories.write("wiki/ops/backup.md", "# バックアップ運用\n\n毎晩 2 時に夜間バッチでデータベースのダンプを取る。\n"
                   "保存期間は 30 日。\n", title="バックアップ運用", tags=["ops", "backup"], project="infra")
    memories.session("2026-11-02", "101500", "Tuning the HNSW index",
                     "# Tuning the HNSW index\n\nWe raised ef_search from 40 to 100; recall went to 0.98.\n",
                     project="search", agent="CodeGenAgent", outcome="success", issue_number=270)
    memories.session("2026-11-03", "090000", "Release checklist",
                     "# Release checklist\n\nTag the release, publish the notes, announce on Friday.\n",
                     project="search", agent="ReviewAgent", outcome="failed")
    memories.write("wiki/dev/commits-old.md", "# コミット規約 (旧版)\n\n件名は英語のみ。\n",
                   title="コミット規約 (旧版)",
                   status="superseded")
    (memories.root.parent / "secret.txt").write_text("outside\n")
    index(base_env, memories)
    return memories


def server_env(base_env, memories) -> dict:
    return {**base_env, "MEMORIES_DIR": str(memories.root)}


def talk(env: dict, conversation):
    """Start mcp_server.py, open a client session, run `conversation(session)`, return its value."""
    async def main():
        parameters = StdioServerParameters(command=sys.executable, args=[str(SCRIPTS / "mcp_server.py")], env=env)
        with open(env["HOME"] + "/mcp-server.log", "a") as log:
            async with stdio_client(parameters, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await conversation(session)

    return anyio.run(main)


def payload(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_lists_every_tool_with_a_schema_and_a_description(base_env, sample):
    async def conversation(session):
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in talk(server_env(base_env, sample), conversation)}
    assert {"search", "similar", "recent", "read_memory", "index_status", "knowledge.search"} <= set(tools)
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and len(tool.description) > 80
    assert tools["search"].input_schema["required"] == ["query"]
    assert "top" in tools["search"].input_schema["properties"]


def test_tools_answer_as_the_scripts_do(base_env, sample):
    env = server_env(base_env, sample)

    async def conversation(session):
        return {
            "search": payload(await session.call_tool("search", {"query": "夜間バッチ", "top": 3})),
            "filtered": payload(await session.call_tool("search", {"query": "release", "project": "search",
                                                                   "since": "2026-11-03", "mode": "keyword"})),
            "superseded": payload(await session.call_tool("search", {"query": "コミット規約",
                                                                     "include_superseded": True})),
            "similar": payload(await session.call_tool("similar", {"path": "wiki/ops/backup.md", "top": 2})),
            "recent": payload(await session.call_tool("recent", {"kind": "session", "top": 5})),
            "status": payload(await session.call_tool("index_status", {})),
        }

    answers = talk(env, conversation)
    assert answers["search"] == search(base_env, sample, "夜間バッチ", "--top", "3")
    assert answers["search"][0]["path"] == str(sample.root / "wiki/ops/backup.md")
    assert answers["filtered"] == search(base_env, sample, "release", "--project", "search", "--since", "2026-11-03",
                                         "--mode", "keyword")
    assert [hit["title"] for hit in answers["filtered"]] == ["Release checklist"]
    assert any(hit["status"] == "superseded" for hit in answers["superseded"])
    similar = run_script("similar", "wiki/ops/backup.md", "--top", "2", "--format", "json", env=base_env,
                         memories=sample, check=True)
    assert answers["similar"] == json.loads(similar.stdout)
    assert str(sample.root / "wiki/ops/backup.md") not in [hit["path"] for hit in answers["similar"]]
    recent = run_script("recent", "--kind", "session", "--top", "5", "--format", "json", env=base_env,
                        memories=sample, check=True)
    assert answers["recent"] == json.loads(recent.stdout)
    stats = json.loads(run_script("stats", "--json", env=base_env, memories=sample, check=True).stdout)
    assert answers["status"] == stats and answers["status"]["files"] == 4


def test_read_memory_reads_lines_inside_the_directory_only(base_env, sample):
    (sample.root / "wiki" / "escape.md").symlink_to(sample.root.parent / "secret.txt")

    async def conversation(session):
        whole = await session.call_tool("read_memory", {"path": "wiki/ops/backup.md"})
        lines = await session.call_tool("read_memory", {"path": str(sample.root / "wiki/ops/backup.md"),
                                                        "start_line": 5, "end_line": 6})
        refused = {}
        for path in ("../secret.txt", str(sample.root.parent / "secret.txt"), "wiki/escape.md", "/etc/passwd"):
            try:
                await session.call_tool("read_memory", {"path": path})
            except MCPError as error:
                refused[path] = (error.code, error.message)
        return whole.content[0].text, lines.content[0].text, refused

    whole, lines, refused = talk(server_env(base_env, sample), conversation)
    assert whole == (sample.root / "wiki/ops/backup.md").read_text()
    assert lines.splitlines() == whole.splitlines()[4:6]
    assert len(refused) == 4, refused
    for code, message in refused.values():
        assert code == INVALID_PARAMS and "\n" not in message
        assert "outside" in message or "'..'" in message


def test_bad_arguments_are_invalid_params_and_the_server_keeps_answering(base_env, sample):
    bad_calls = [
        ("search", {}),                                   # query missing
        ("search", {"query": "x", "top": 0}),             # out of range
        ("search", {"query": "x", "scope": "bogus"}),     # not in the enum
        ("search", {"query": "x", "since": "the 32nd"}),  # not a date
        ("search", {"query": "x", "where": "{not json"}),
        ("search", {"query": "x", "colour": "red"}),      # unknown argument
        ("search", {"query": "nul\x00byte"}),             # text PostgreSQL cannot take
        ("recent", {"kind": "wiki"}),
        ("knowledge.search", {"query": "x", "limit": "ten"}),
        ("no_such_tool", {}),
    ]

    async def conversation(session):
        errors = []
        for name, arguments in bad_calls:
            try:
                await session.call_tool(name, arguments)
            except MCPError as error:
                errors.append((error.code, error.message))
            else:
                errors.append(None)
        still = payload(await session.call_tool("search", {"query": "HNSW ef_search", "top": 1}))
        return errors, still

    errors, still = talk(server_env(base_env, sample), conversation)
    for (name, arguments), error in zip(bad_calls, errors):
        assert error is not None, f"{name} {arguments} was accepted"
        code, message = error
        assert code == INVALID_PARAMS and message and "\n" not in message and "Traceback" not in message
    assert still[0]["title"] == "Tuning the HNSW index"


def test_a_query_of_a_million_characters_is_refused_at_once_with_its_length_as_sent(base_env, sample):
    query = "先週の " + "HNSW " * 240_000  # 1,200,004 characters, time words first

    async def conversation(session):
        with anyio.fail_after(60):  # a guard, not a measure: reading its time words took minutes
            try:
                await session.call_tool("search", {"query": query})
            except MCPError as error:
                return error.code, error.message
        still = payload(await session.call_tool("search", {"query": "HNSW ef_search", "top": 1}))
        return None, still

    code, message = talk(server_env(base_env, sample), conversation)
    assert code == INVALID_PARAMS and message == (
        "search: the query is 1,200,004 characters long: keep it to 2,000 (the model reads about 500 tokens)")


def test_similar_outside_the_directory_is_invalid_params_with_one_line(base_env, sample):
    async def conversation(session):
        try:
            await session.call_tool("similar", {"path": str(sample.root.parent / "secret.txt")})
        except MCPError as error:
            return error.error.code, error.error.message
        return None

    code, message = talk(server_env(base_env, sample), conversation)
    assert code == INVALID_PARAMS and "outside the memories directory" in message and "\n" not in message


def test_a_missing_index_is_a_tool_error_with_one_line(base_env, sample, tmp_path):
    empty = MemoriesDir(tmp_path / "never-indexed")
    empty.write("wiki/a.md", "# A\n")

    async def conversation(session):
        return await session.call_tool("search", {"query": "anything"})

    result = talk(server_env(base_env, empty), conversation)
    assert result.is_error
    text = result.content[0].text
    assert "no index" in text and "index.py" in text and "\n" not in text


def test_knowledge_search_maps_the_seed_filters_to_frontmatter(base_env, sample):
    async def conversation(session):
        tool = payload(await session.call_tool("knowledge.search", {"query": "release", "workspace": "search",
                                                                    "agent": "ReviewAgent", "limit": 5}))
        by_issue = payload(await session.call_tool("knowledge.search", {"query": "index", "issue_number": 270,
                                                                        "outcome": "success"}))
        method = await session.send_request(
            _Request(method="knowledge.search", params={"query": "release", "agent": "ReviewAgent"}), _ANY)
        try:
            await session.send_request(_Request(method="knowledge.search", params={"agent": "x"}), _ANY)
        except MCPError as error:
            missing_query = error.code
        return tool, by_issue, method, missing_query

    tool, by_issue, method, missing_query = talk(server_env(base_env, sample), conversation)
    assert [result["metadata"]["title"] for result in tool] == ["Release checklist"]
    result = tool[0]
    assert set(result) == {"id", "score", "content", "metadata", "timestamp"}
    assert result["id"].endswith(".md") and "Tag the release" in result["content"]
    assert result["metadata"]["workspace"] == "search" and result["timestamp"] == "2026-11-03"
    assert [result["metadata"]["title"] for result in by_issue] == ["Tuning the HNSW index"]
    assert method["results_count"] == 1 and method["results"][0]["id"] == result["id"]
    assert missing_query == INVALID_PARAMS


from mcp_types import Request as _BaseRequest  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

_ANY = TypeAdapter(dict)


class _Request(_BaseRequest):
    """A request for a method outside the MCP spec (the seed's knowledge.search)."""

    method: str
    params: dict | None = None
