"""The same bad inputs through every face: each refuses them its own way, from one definition of the parameters.

The command line exits 2, MCP answers JSON-RPC -32602, the HTTP API answers 400 with {"error": ...}.
Where a seed's contract says otherwise, the seed wins, and the row says so."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the faces extra is not installed (make install installs it)")
pytest.importorskip("starlette", reason="the faces extra is not installed (make install installs it)")

import anyio  # noqa: E402
from conftest import index, run_script  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

INVALID_PARAMS = -32602
LONG = "a" * 2_100
SEED_FALLBACK = "seed: the KuraDB API's limit falls back to 10"

# (row, search.py arguments, MCP search arguments, /api/search parameters, expected HTTP status)
ROWS = [
    ("top 0", ["tea", "--top", "0"], {"query": "tea", "top": 0}, {"q": "tea", "limit": "0"}, SEED_FALLBACK),
    ("top -1", ["tea", "--top", "-1"], {"query": "tea", "top": -1}, {"q": "tea", "limit": "-1"}, SEED_FALLBACK),
    ("top 10^9", ["tea", "--top", "1000000000"], {"query": "tea", "top": 10**9}, {"q": "tea", "limit": "1000000000"},
     SEED_FALLBACK),
    ("top not a number", ["tea", "--top", "ten"], {"query": "tea", "top": "ten"}, {"q": "tea", "limit": "ten"},
     SEED_FALLBACK),
    ("where not JSON", ["tea", "--where", "{"], {"query": "tea", "where": "{"}, {"q": "tea", "where": "{"}, 400),
    ("where unknown operator", ["tea", "--where", '{"a": {"$regex": "x"}}'],
     {"query": "tea", "where": {"a": {"$regex": "x"}}}, {"q": "tea", "where": '{"a": {"$regex": "x"}}'}, 400),
    ("query over the limit", [LONG], {"query": LONG}, {"q": LONG}, 400),
    ("unknown scope", ["tea", "--scope", "nowhere"], {"query": "tea", "scope": "nowhere"},
     {"q": "tea", "scope": "nowhere"}, 400),
    ("bad date", ["tea", "--since", "2026-13-01"], {"query": "tea", "since": "2026-13-01"},
     {"q": "tea", "since": "2026-13-01"}, 400),
    ("not a date at all", ["tea", "--until", "the 32nd"], {"query": "tea", "until": "the 32nd"},
     {"q": "tea", "until": "the 32nd"},
     400),
    ("NUL in a filter", ["tea", "--project", "a\x00b"], {"query": "tea", "project": "a\x00b"},
     {"q": "tea", "project": "a\x00b"}, 400),
    ("time words that start after they end", ["tea since 2099"], {"query": "tea since 2099"},
     {"q": "tea since 2099", "time": "1"}, 400),
    ("since after until", ["tea", "--since", "2026-12-01", "--until", "2026-11-01"],
     {"query": "tea", "since": "2026-12-01", "until": "2026-11-01"},
     {"q": "tea", "since": "2026-12-01", "until": "2026-11-01"}, 400),
    ("a date as long as a query", ["tea", "--since", "先週" * 1_000], {"query": "tea", "since": "先週" * 1_000},
     {"q": "tea", "since": "先週" * 1_000}, 400),
]


@pytest.fixture(scope="module")
def notes(tmp_path_factory, base_env, database):
    from conftest import MemoriesDir

    memories = MemoriesDir(tmp_path_factory.mktemp("bad-input") / "memories")
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees.", title="Tea")
    (memories.root.parent / "secret.md").write_text("# Secret\n\nTOP-SECRET-CONTENT\n")
    index(base_env, memories)
    return memories


@pytest.fixture(scope="module")
def faces(notes, base_env):
    """The MCP server and the HTTP app in this process, over one set of shared resources."""
    from memory_search.config import Settings
    from memory_search.faces.http_api import Database, create_app
    from memory_search.faces.mcp_server import Tools, build_server
    from memory_search.resources import Resources

    settings = Settings.from_env(base_env).with_overrides(memories_dir=notes.root)
    resources = Resources()
    app = create_app([Database("default", notes.root, "2026-12-01T00:00:00Z", settings)], resources)
    with TestClient(app, base_url="http://127.0.0.1") as http:
        yield build_server(Tools(settings, resources)), http
    resources.close()


def call_mcp(server, tool: str, arguments: dict):
    """(error code, message) of a refused call, or (None, the result) of an accepted one."""
    async def main():
        async with Client(server) as client:
            try:
                return None, await client.call_tool(tool, arguments)
            except MCPError as error:
                return error.error.code, error.error.message

    return anyio.run(main)


@pytest.mark.parametrize("row, cli, mcp_arguments, http, status", ROWS, ids=[row[0] for row in ROWS])
def test_each_face_refuses_a_bad_search_its_own_way(env, notes, faces, row, cli, mcp_arguments, http, status):
    server, client = faces
    result = run_script("search", *cli, env=env, memories=notes)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("search.py: error: ")

    code, message = call_mcp(server, "search", mcp_arguments)
    assert code == INVALID_PARAMS, message
    assert "\n" not in message and "--" not in message  # the face's own words, not the command line's

    answer = client.get("/api/search", params={"db": "default", **http})
    if status == SEED_FALLBACK:
        assert answer.status_code == 200 and set(answer.json()) == {"keyword", "semantic"}
    else:
        assert answer.status_code == status and set(answer.json()) == {"error"}, answer.text
        assert "\n" not in answer.json()["error"] and "--" not in answer.json()["error"]


def test_an_over_long_query_is_refused_with_its_length_as_sent_by_every_face(env, notes, faces):
    server, client = faces
    query = "先週の " + "tea " * 600  # the time words are not taken out before the length is counted
    length = f"the query is {len(query):,} characters long"
    cli = run_script("search", query, env=env, memories=notes)
    assert cli.returncode == 2 and length in cli.stderr and cli.stderr.count("\n") == 1
    code, message = call_mcp(server, "search", {"query": query})
    assert code == INVALID_PARAMS and length in message
    answer = client.get("/api/search", params={"db": "default", "q": query, "time": "1"})
    assert answer.status_code == 400 and length in answer.json()["error"]


@pytest.mark.parametrize("query, words", [("laſt week tea", "laſt week"), ("thıs week tea", "thıs week"),
                                          ("tea in Auguſt", "Auguſt"), ("yeſterday's tea", "yeſterday")])
def test_time_words_in_letters_that_case_folding_reads_as_ascii_are_read_by_every_face(env, notes, faces, query,
                                                                                      words):
    """ſ, ı and K match s, i and k in the rules' case-insensitive patterns; the words are read, never a crash."""
    import json

    server, client = faces
    cli = run_script("search", query, "--format", "json", env=env, memories=notes)
    assert cli.returncode == 0 and f"({words})" in cli.stderr, cli.stderr
    assert [hit["window"]["words"] for hit in json.loads(cli.stdout)] == [[words]]
    code, result = call_mcp(server, "search", {"query": query})
    assert code is None and not result.is_error, result
    assert [hit["window"]["words"] for hit in json.loads(result.content[0].text)] == [[words]]
    answer = client.get("/api/search", params={"db": "default", "q": query, "time": "1"})
    assert answer.status_code == 200, answer.text
    assert json.loads(answer.headers["X-Memory-Search-Window"])["words"] == [words]


@pytest.mark.parametrize("parameter, cli_flag", [("scope", "--scope"), ("mode", "--mode"), ("top", "--top")])
def test_a_value_as_long_as_a_page_is_not_echoed_back(env, notes, faces, parameter, cli_flag):
    server, client = faces
    pasted = "x" * 100_000
    cli = run_script("search", "tea", cli_flag, pasted, env=env, memories=notes)
    assert cli.returncode == 2 and cli.stderr.count("\n") == 1 and len(cli.stderr) < 400, cli.stderr[:400]
    code, message = call_mcp(server, "search", {"query": "tea", parameter: pasted})
    assert code == INVALID_PARAMS and len(message) < 400 and "100,000 characters" in message, message[:400]
    url_sized = pasted[:6_000]  # an address holds less
    answer = client.get("/api/search", params={"db": "default", "q": "tea", "target": url_sized, "scope": url_sized})
    assert answer.status_code == 400 and len(answer.text) < 400, answer.text[:400]


@pytest.mark.parametrize("variable", ["MEMORIES_EMBEDDING_PROVIDER", "MEMORIES_TABLE"])
def test_a_setting_as_long_as_a_page_is_not_echoed_back(env, notes, variable):
    result = run_script("search", "tea", env=dict(env, **{variable: "x" * 100_000}), memories=notes)
    assert result.returncode != 0 and result.stderr.count("\n") == 1, result.stderr[:400]
    assert len(result.stderr) < 400 and "100,000 characters" in result.stderr, result.stderr[:400]


def test_a_knowledge_base_setting_as_long_as_a_page_is_not_echoed_back():
    from memory_search import knowledge_base
    from memory_search.errors import UsageError

    with pytest.raises(UsageError) as refused:
        knowledge_base._chunk_settings("9" * 50_000 + "x", 0)
    assert len(str(refused.value)) < 300 and "50,001 characters" in str(refused.value)


def test_a_message_names_the_parameter_as_each_face_spells_it(env, notes, faces):
    server, client = faces
    cli = run_script("search", "tea", "--since", "2026-13-01", env=env, memories=notes)
    assert "--since '2026-13-01' is not a date" in cli.stderr
    assert call_mcp(server, "search", {"query": "tea", "since": "2026-13-01"})[1].endswith(
        "since '2026-13-01' is not a date: use YYYY-MM-DD")
    assert client.get("/api/search", params={"db": "default", "q": "tea", "since": "2026-13-01"}).json() == {
        "error": "since '2026-13-01' is not a date: use YYYY-MM-DD"}
    where = run_script("search", "tea", "--where", "{", env=env, memories=notes)
    assert "--where is not valid JSON" in where.stderr
    assert "where is not valid JSON" in call_mcp(server, "search", {"query": "tea", "where": "{"})[1]


@pytest.mark.parametrize("path", ["/etc/passwd", "../secret.md", "%s/../secret.md", "wiki/../../secret.md"])
def test_a_path_outside_the_memories_directory_is_refused_by_every_face(env, notes, faces, path):
    server, client = faces
    path = path.replace("%s", str(notes.root))
    for script in ("similar", "related"):
        result = run_script(script, path, env=env, memories=notes)
        assert result.returncode == 2 and result.stderr.count("\n") == 1 and result.stdout == ""
    for tool in ("read_memory", "similar"):
        code, message = call_mcp(server, tool, {"path": path})
        assert code == INVALID_PARAMS and "TOP-SECRET" not in message, message
    for route in ("/api/read", "/graph/related.json"):
        answer = client.get(route, params={"db": "default", "path": path})
        assert answer.status_code == 400 and set(answer.json()) == {"error"}, (route, answer.text)
        assert "TOP-SECRET" not in answer.text


def test_the_plainest_knowledge_search_call_is_answered(faces):
    server, _ = faces
    code, result = call_mcp(server, "knowledge.search", {"query": "green tea"})
    assert code is None and not result.is_error
    assert "tea.md" in result.content[0].text


def test_recent_and_read_take_their_parameters_from_the_same_definitions(env, notes, faces):
    server, client = faces
    assert run_script("recent", "--top", "0", env=env, memories=notes).returncode == 2
    assert call_mcp(server, "recent", {"top": 0})[0] == INVALID_PARAMS
    assert call_mcp(server, "recent", {"days": -1})[0] == INVALID_PARAMS
    assert call_mcp(server, "read_memory", {"path": "wiki/tea.md", "start_line": 0})[0] == INVALID_PARAMS
    assert client.get("/api/read", params={"db": "default", "path": "wiki/tea.md", "start_line": "0"}).status_code \
        == 400
    assert client.get("/api/read", params={"db": "default", "path": "wiki/tea.md", "end_line": "x"}).status_code \
        == 400
    read = client.get("/api/read", params={"db": "default", "path": "wiki/tea.md", "start_line": "6"})
    assert read.status_code == 200 and read.json()["text"] == "Brew green tea at 70 degrees."


@pytest.mark.parametrize("score", ["2", "-0.1", "1.5"])
def test_a_min_score_outside_zero_to_one_is_refused_by_every_face(env, notes, faces, score):
    """Scores are 0..1: a cut above 1 would empty every answer and say 検索結果なし as if nothing matched."""
    server, _ = faces  # the HTTP server's MCP route answers with these same tools
    for script, subject in (("search", "tea"), ("similar", "wiki/tea.md")):
        result = run_script(script, subject, "--min-score", score, env=env, memories=notes)
        assert result.returncode == 2 and result.stdout == "", result
        assert result.stderr == f"{script}.py: error: --min-score {float(score):g} is out of range: give a number " \
                                "in 0..1\n"
    for tool, arguments in (("search", {"query": "tea"}), ("similar", {"path": "wiki/tea.md"})):
        code, message = call_mcp(server, tool, {**arguments, "min_score": float(score)})
        assert code == INVALID_PARAMS and "min_score" in message, message  # the schema's bounds, 0 and 1
    assert run_script("search", "tea", "--min-score", "1", env=env, memories=notes).returncode == 0
