"""The graph page: its JSON routes mounted in a Starlette app, and the page drawn by a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from conftest import index

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def sample(env, memories):
    memories.write("wiki/hub.md", "# Hub\n\nLinks to [[topic]] and ![[embedded]] and [[missing note]].",
                   title="Hub", project="alpha", tags=["index"])
    memories.write("wiki/topic.md", "# Topic\n\nBack to [the hub](hub.md).", title="Topic", project="alpha")
    memories.write("wiki/embedded.md", "# Embedded\n\nA small note shown inside the hub.", title="Embedded")
    memories.write("raw/session/2026-11-01/101010_abcd1234_s1.md", "# Session\n\nWrote [[hub]] today.",
                   kind="session", title="Session one", project="beta")
    memories.write("raw/web/2026-11-02/090000_page.md", "# Web page\n\nAn archived page.", kind="web",
                   title="A web page")
    memories.write("raw/minutes/2026-11-03/100000_sync.md", "# Sync\n\nMinutes of a sync.", kind="minutes",
                   title="Weekly sync")
    index(env, memories)
    return memories


@pytest.fixture
def server(sample):
    """The graph routes mounted in one line beside another route, served by uvicorn on 127.0.0.1."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from memory_search.config import Settings
    from memory_search.faces.graph import graph_routes
    from memory_search.faces.http_api import error_response, query_values
    from memory_search.resources import Resources

    async def answer(work):
        try:
            return await work()
        except Exception as error:
            return error_response(error)

    settings = Settings.from_env().with_overrides(memories_dir=sample.root)
    routes = [Route("/api/health", lambda request: PlainTextResponse("OK"))]
    routes += graph_routes({"default": settings}, Resources(), answer, query_values)  # what a server needs
    config = uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    uvicorn_server = uvicorn.Server(config)
    thread = threading.Thread(target=uvicorn_server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uvicorn_server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = uvicorn_server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_data_route_has_one_node_per_memory_and_the_resolved_links(server, sample):
    status, data = _get(server + "/graph/data.json")
    assert status == 200
    nodes = {node["id"]: node for node in data["nodes"]}
    assert len(nodes) == 6
    assert (nodes["wiki/hub.md"]["kind"], nodes["wiki/hub.md"]["degree"], nodes["wiki/hub.md"]["title"]) == (
        "wiki", 4, "Hub")
    assert nodes["raw/session/2026-11-01/101010_abcd1234_s1.md"]["kind"] == "session"
    assert sorted((edge["source"], edge["target"], edge["kind"]) for edge in data["edges"]) == [
        ("raw/session/2026-11-01/101010_abcd1234_s1.md", "wiki/hub.md", "wikilink"),
        ("wiki/hub.md", "wiki/embedded.md", "embed"),
        ("wiki/hub.md", "wiki/topic.md", "wikilink"),
        ("wiki/topic.md", "wiki/hub.md", "markdown"),
    ]
    assert (data["links"]["links"], data["links"]["unresolved"]) == (5, 1)

    status, related = _get(server + "/graph/related.json?path=wiki/hub.md&top=3")
    assert status == 200 and related["related"][0]["id"] == "wiki/topic.md"
    assert related["related"][0]["reasons"][:2] == ["links to", "linked from"]

    assert _get(server + "/graph/data.json?db=other")[0] == 400
    status, missing = _get(server + "/graph/related.json?path=wiki/none.md")
    assert status == 404 and "not in the index" in missing["error"]


@pytest.mark.e2e
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="Chromium is not installed: apt-get install chromium")
def test_the_page_draws_every_memory_in_headless_chromium_without_console_errors(server, tmp_path):
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1280,800", "--virtual-time-budget=15000", "--enable-logging=stderr", "--v=0",
         "--dump-dom", server + "/graph?select=wiki/hub.md"],
        capture_output=True, text=True, timeout=120)
    dom = result.stdout
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []  # no script error, no failed request
    assert 'data-nodes="6"' in dom and "data-errors" not in dom
    circles = re.findall(r'<circle class="node[^"]*"[^>]*data-kind="(\w+)"', dom)
    assert sorted(circles) == ["minutes", "session", "web", "wiki", "wiki", "wiki"]
    assert len(re.findall(r'<line class="edge', dom)) == 4
    assert "Weekly sync\n" in dom or "<title>Weekly sync" in dom  # the hover text: title, then path
    assert "links to, linked from" in dom  # the preselected node's related list
