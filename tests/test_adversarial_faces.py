"""The faces against hostile input: what an attacker on the same machine, a malicious web page and a careless
user would try on the HTTP API, MCP, export, verify, the search log and the terminal.

Every case checks the same four things where they apply: no traceback, no hang (each call has a deadline),
no file lost or replaced, no content leaked."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the faces extra is not installed (make install installs it)")
pytest.importorskip("mcp", reason="the faces extra is not installed (make install installs it)")

from conftest import SCRIPTS, MemoriesDir, index, run_process, run_script  # noqa: E402

SECRET = "TOP-SECRET-CONTENT"


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and 'File "' not in text, text[-2000:]


@pytest.fixture(scope="module")
def notes(tmp_path_factory, base_env, database):
    folder = tmp_path_factory.mktemp("hostile")
    memories = MemoriesDir(folder / "memories")
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees.\n", title="Tea")
    memories.write("wiki/old.md", "# Old tea\n\nBoil it.\n", title="Old tea", status="superseded")
    memories.write("wiki/formula.md", "=HYPERLINK(\"http://evil.example\")\n\n+cmd|' /C calc'!A0\n", title="=1+1")
    memories.write("wiki/escape.md", "# Terminal\n\nPlain words \x1b]0;pwned title\x07 and \x1b[2J cleared "
                   "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ bell\x07.\n", title="Terminal \x1b[31mred")
    (memories.root / "wiki/sub").mkdir()
    memories.write("wiki/sub/inside.md", "# Inside\n\nA note in a folder.\n", title="Inside")
    (memories.root / "wiki/alias.md").symlink_to(memories.root / "wiki/tea.md")
    (folder / "secret.md").write_text(f"# Secret\n\n{SECRET}\n")
    index(base_env, memories)
    return memories


# --- HTTP ---------------------------------------------------------------------------------------------

class Server:
    def __init__(self, process, base, endpoint, stderr_path):
        self.process, self.base, self.endpoint, self.stderr_path = process, base, endpoint, stderr_path

    def get(self, path: str, headers=None, timeout: float = 30):
        request = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def start_server(env, notes, tmp_path, *args, limit_files: int | None = None) -> Server:
    config = tmp_path / "config"
    stderr_path = tmp_path / "serve.err"
    endpoint = config / "memory-search" / "endpoint"

    def limit():
        if limit_files:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))

    process = subprocess.Popen([sys.executable, str(SCRIPTS / "serve.py"), *args],
                               env={**env, "MEMORIES_DIR": str(notes.root), "XDG_CONFIG_HOME": str(config)},
                               stdout=subprocess.DEVNULL, stderr=open(stderr_path, "w"), preexec_fn=limit)
    deadline = time.monotonic() + 120
    while not endpoint.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"serve.py did not start: {stderr_path.read_text()}")
        time.sleep(0.1)
    return Server(process, endpoint.read_text().strip(), endpoint, stderr_path)


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=30)


@pytest.fixture(scope="module")
def server(base_env, notes, tmp_path_factory):
    """One server for the module's requests: each is answered on its own, and none may leave a traceback."""
    running = start_server(base_env, notes, tmp_path_factory.mktemp("server"))
    yield running
    stop_server(running)
    no_traceback(running.stderr)


def raw_request(base: str, request: bytes, timeout: float = 15) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        connection.sendall(request)
        chunks = []
        while True:
            try:
                chunk = connection.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


FOREIGN_HOSTS = ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "localhost.evil.example:{port}",
                 "", "127.0.0.2:{port}"]


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_http_a_foreign_host_header_gets_400_with_a_json_error_and_no_content(server, host):
    port = server.base.rsplit(":", 1)[1]
    for path in ("/api/search?db=default&q=tea", "/graph/data.json", "/api/read?db=default&path=wiki/tea.md",
                 "/mcp"):
        header = f"Host: {host.format(port=port)}\r\n" if host else ""
        reply = raw_request(server.base, f"GET {path} HTTP/1.1\r\n{header}Connection: close\r\n\r\n".encode())
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400") and b"tea" not in body.lower(), reply[:300]
        assert b"content-type: application/json" in head.lower() and set(json.loads(body)) == {"error"}, reply[:300]
    status, _, body = server.get("/api/search?db=default&q=tea")  # the server's own name still works
    assert status == 200 and b"tea.md" in body


def test_http_the_endpoint_file_is_private(server):
    assert stat.S_IMODE(server.endpoint.stat().st_mode) == 0o600
    assert stat.S_IMODE(server.endpoint.parent.stat().st_mode) == 0o700


CLIENT_MISTAKES = [
    ("/api/search?db=default&q=" + "a" * 2100, 400), ("/graph/related.json?path=/etc/passwd", 400),
    ("/graph/related.json?path=%00", 400), ("/api/search?db=default&q=%00", 400),
    ("/api/read?db=default&path=%2Fetc%2Fpasswd", 400), ("/api/read?db=default&path=..%2Fsecret.md", 400),
    ("/api/read?db=default&path=wiki%2Fnone.md", 404), ("/api/read?db=default", 400),
    ("/api/read?db=default&path=wiki/tea.md&start_line=-3", 400), ("/api/search?db=default&q=tea&since=x", 400),
    ("/api/search?db=default&q=tea&where=%7B", 400), ("/api/search?db=default&q=tea&scope=%00", 400),
    ("/api/search?db=nowhere&q=tea", 400), ("/api/search?q=tea", 400), ("/graph/data.json?db=nowhere", 400),
    ("/api/search?db=default&q=tea&limit=abc", 200),  # the seed's contract: falls back to 10
]


@pytest.mark.parametrize("path, status", CLIENT_MISTAKES)
def test_http_a_client_mistake_is_4xx_with_one_line_and_no_internals(server, path, status):
    got, headers, body = server.get(path)
    assert got == status, (path, body[:300])
    if status >= 400:
        error = json.loads(body)["error"]
        assert "\n" not in error and "DataError" not in error and "psycopg" not in error and SECRET not in error


def test_http_our_own_fault_is_500_without_the_exception_text(notes, base_env):
    from starlette.testclient import TestClient

    from memory_search.config import Settings
    from memory_search.faces.http_api import Database, create_app

    class Broken:
        def open(self, settings, warn=None):
            raise RuntimeError("internal detail: /srv/secret/path")

    settings = Settings.from_env(base_env).with_overrides(memories_dir=notes.root)
    app = create_app([Database("default", notes.root, "2026-12-01T00:00:00Z", settings)], Broken())
    with TestClient(app, base_url="http://127.0.0.1") as client:
        answer = client.get("/api/search", params={"db": "default", "q": "tea"})
    assert answer.status_code == 500 and "internal detail" not in answer.text and set(answer.json()) == {"error"}


def test_http_a_token_guards_every_route_but_health(env, notes, tmp_path):
    token_file = tmp_path / "token"
    running = start_server(env, notes, tmp_path, "--token-file", str(token_file))
    try:
        token = token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(token) >= 32
        assert running.get("/api/health")[0] == 200
        for path in ("/api/search?db=default&q=tea", "/api/list", "/graph/data.json", "/graph",
                     "/api/read?db=default&path=wiki/tea.md"):
            for headers in ({}, {"Authorization": "Bearer wrong-token-of-enough-length"},
                            {"Authorization": f"Basic {token}"}, {"Cookie": "memory_search_token=nope"}):
                status, _, body = running.get(path, headers)
                assert status == 401 and b"tea" not in body, (path, headers)
            assert running.get(path, {"Authorization": f"Bearer {token}"})[0] == 200
        import http.cookiejar

        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with browser.open(running.base + f"/graph?token={token}", timeout=30) as page:  # a cookie, then the page
            assert page.status == 200 and page.url == running.base + "/graph" and b"<svg" in page.read().lower()
        with browser.open(running.base + "/graph/data.json", timeout=30) as data:  # the page's own requests
            assert data.status == 200 and json.loads(data.read())["nodes"]
    finally:
        stop_server(running)
    no_traceback(running.stderr)


@pytest.mark.parametrize("problem", ["world-readable", "too short", "a symlink"])
def test_http_a_weak_token_file_is_refused_at_start(env, notes, tmp_path, problem):
    token_file = tmp_path / "token"
    if problem == "world-readable":
        token_file.write_text("x" * 40)
        token_file.chmod(0o644)
    elif problem == "too short":
        token_file.write_text("short")
        token_file.chmod(0o600)
    else:
        (tmp_path / "real").write_text("x" * 40)
        (tmp_path / "real").chmod(0o600)
        token_file.symlink_to(tmp_path / "real")
    result = run_process("serve", "--token-file", str(token_file), env={**env, "MEMORIES_DIR": str(notes.root)},
                         timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "token" in result.stderr
    no_traceback(result.stderr)


def test_http_beyond_loopback_needs_a_token(env, notes):
    result = run_process("serve", "--host", "0.0.0.0", env={**env, "MEMORIES_DIR": str(notes.root)}, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "needs a token file: give --token-file FILE" in result.stderr


class HalfSentHolder:
    """Holds `count` connections that each sent half a request head, opening a new one whenever the server
    closes one: an attacker who keeps the server's connections busy for as long as it likes."""

    HALF = b"GET /api/search?db=default&q=tea HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # never ends

    def __init__(self, base: str, count: int):
        import selectors

        host, port = base.removeprefix("http://").split(":")
        self.address, self.count = (host, int(port)), count
        self.selector = selectors.DefaultSelector()
        self.stopped = threading.Event()
        self.opened = self.closed_by_server = 0
        self.full = threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def __enter__(self):
        self.thread.start()
        assert self.full.wait(60), f"only {len(self.selector.get_map())} connections could be opened"
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(30)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()

    def _open(self) -> None:
        import selectors

        try:
            connection = socket.create_connection(self.address, timeout=2)
            connection.sendall(self.HALF)
        except OSError:
            time.sleep(0.01)
            return
        connection.setblocking(False)
        self.selector.register(connection, selectors.EVENT_READ)
        self.opened += 1

    def _hold(self) -> None:
        while not self.stopped.is_set():
            while len(self.selector.get_map()) < self.count and not self.stopped.is_set():
                self._open()
            self.full.set()
            for key, _ in self.selector.select(timeout=0.05):
                try:
                    data = key.fileobj.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the server: open another in its place
                    self.selector.unregister(key.fileobj)
                    key.fileobj.close()
                    self.closed_by_server += 1


@pytest.mark.slow
def test_http_health_answers_within_10_s_while_300_half_sent_connections_are_held(env, notes, tmp_path):
    running = start_server(env, notes, tmp_path, limit_files=256)
    try:
        with HalfSentHolder(running.base, 300) as holder:
            started = time.monotonic()
            answered = None
            while answered is None and time.monotonic() - started < 10:
                try:
                    answered = running.get("/api/health", timeout=max(0.1, 10 - (time.monotonic() - started)))[0]
                except OSError:
                    time.sleep(0.1)
            elapsed = time.monotonic() - started
            assert answered == 200 and elapsed < 10, (answered, elapsed, holder.opened, holder.closed_by_server)
            assert holder.opened >= 300 and holder.closed_by_server > 0  # the longest idle ones gave way
            print(f"/api/health answered in {elapsed:.2f} s with {holder.count} half-sent connections held "
                  f"({holder.opened} opened, {holder.closed_by_server} closed by the server)")
    finally:
        stop_server(running)
    assert running.process.returncode == 0
    assert running.stderr_path.stat().st_size < 10_000, running.stderr[-2000:]
    no_traceback(running.stderr)


def _seconds_until_closed(connection: socket.socket, limit: float) -> float | None:
    """How long until the server closes the connection (what it sent first is ignored); None: not within limit."""
    started = time.monotonic()
    connection.settimeout(limit)
    try:
        while connection.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return None
    return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("half", ["head", "body"])
def test_http_a_request_that_stalls_half_sent_is_closed_and_the_server_answers_on(server, half):
    host, port = server.base.removeprefix("http://").split(":")
    requests = {"head": b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                "body": b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\""}
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(requests[half])
        assert server.get("/api/health")[0] == 200  # others are answered meanwhile
        closed = _seconds_until_closed(connection, 30)
    assert closed is not None and closed < 15, closed
    assert server.get("/api/health")[0] == 200


def test_http_mcp_sessions_are_capped_per_token_and_end_when_idle(notes, base_env, monkeypatch):
    from starlette.testclient import TestClient

    from memory_search.config import Settings
    from memory_search.faces import http_guard
    from memory_search.faces.http_api import Database, create_app
    from memory_search.resources import Resources

    monkeypatch.setattr(http_guard, "MCP_SESSIONS", 3)
    monkeypatch.setattr(http_guard, "MCP_IDLE_SECONDS", 2.0)
    monkeypatch.setattr(http_guard, "MCP_ACTIVE_SECONDS", 0.0)  # a session is in use only while a request is
    token = "t" * 32
    settings = Settings.from_env(base_env).with_overrides(memories_dir=notes.root)
    resources = Resources(2)
    app = http_guard.Guard(create_app([Database("default", notes.root, "2026-12-01T00:00:00Z", settings)], resources,
                                      mcp=True), http_guard.Hosts("127.0.0.1", 80), token)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "leaky", "version": "1"}}}

    def ping(http, session):
        return http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                         headers={**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})

    try:
        with TestClient(app, base_url="http://127.0.0.1") as http:
            sessions = []
            for _ in range(5):  # a client that opens sessions and never ends them
                opened = http.post("/mcp", json=initialize, headers=headers)
                assert opened.status_code == 200, opened.text
                sessions.append(opened.headers["mcp-session-id"])
            answers = [ping(http, session) for session in sessions]
            assert [answer.status_code for answer in answers] == [404, 404, 200, 200, 200]  # the oldest gave way
            assert all(set(answer.json()) >= {"error"} for answer in answers[:2])
            time.sleep(3)  # idle beyond MCP_IDLE_SECONDS: every session ended
            assert [ping(http, session).status_code for session in sessions[2:]] == [404, 404, 404]
            assert http.post("/mcp", json=initialize, headers=headers).status_code == 200  # room for new ones
    finally:
        resources.close()


def test_http_a_huge_header_is_refused_and_the_server_answers_on(server):
    reply = raw_request(server.base, b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 200_000
                        + b"\r\n\r\n")
    assert not reply.startswith(b"HTTP/1.1 200")
    assert server.get("/api/health")[0] == 200


# --- MCP ----------------------------------------------------------------------------------------------

def mcp_lines(env, notes, lines: list[str], timeout: float = 60) -> list[dict]:
    """Send raw lines to mcp_server.py after initializing; the replies to the requests with an id."""
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "mcp_server.py")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**env, "MEMORIES_DIR": str(notes.root)})
    hello = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    text = "\n".join([hello, '{"jsonrpc": "2.0", "method": "notifications/initialized"}', *lines,
                      json.dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/list"})]) + "\n"
    replies = []

    def read():  # every reply: one per line that needs one, the initialize and the last tools/list
        for raw in process.stdout:
            replies.append(json.loads(raw))
            if len(replies) == len(lines) + 2:
                break

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    process.stdin.write(text.encode("utf-8", "surrogatepass"))
    process.stdin.flush()
    reader.join(timeout)
    process.kill()
    stderr = process.stderr.read().decode(errors="replace")
    no_traceback(stderr)
    assert len(replies) == len(lines) + 2, ("the server stopped answering", replies, stderr[-1000:])
    return [reply for reply in replies[1:] if reply.get("id") != "last"]


MALFORMED = [
    ('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [1, 2]}', 2, -32602),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search", "arguments": '
     '{"query": "\\ud800"}}}', 4, -32602),
    ('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": ' + "[" * 5000 + "]" * 5000 + "}", 5, -32600),
    ('{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": "x"}', 6, -32602),
    ('{"jsonrpc": "2.0", "id": 7, "method": "knowledge.search", "params": [1]}', 7, -32602),
    ('{"jsonrpc": "2.0", "id": 8}', 8, -32600),
    ('{"jsonrpc": "1.0", "id": 9, "method": "tools/list"}', 9, -32600),
    ("not json at all {", None, -32700),
    ('{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', None, -32600),
]


def test_mcp_every_malformed_request_with_an_id_gets_its_json_rpc_error(env, notes):
    replies = mcp_lines(env, notes, [line for line, _, _ in MALFORMED])
    assert len(replies) == len(MALFORMED), replies
    for (line, identifier, code), reply in zip(MALFORMED, replies):
        assert reply.get("id") == identifier and reply["error"]["code"] == code, (line[:80], reply)


def test_mcp_read_memory_never_leaves_the_directory_while_a_folder_is_swapped_for_a_link(notes, base_env, tmp_path):
    from memory_search.config import Settings
    from memory_search.errors import MemorySearchError
    from memory_search.faces.mcp_server import Tools
    from memory_search.resources import Resources

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "inside.md").write_text(f"# Stolen\n\n{SECRET}\n")
    folder, parked = notes.root / "wiki/sub", notes.root / "wiki/sub-parked"
    tools = Tools(Settings.from_env(base_env).with_overrides(memories_dir=notes.root), Resources())
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            os.rename(folder, parked)
            os.symlink(outside, folder)
            os.unlink(folder)
            os.rename(parked, folder)

    swapper = threading.Thread(target=swap)
    swapper.start()
    leaked = answered = 0
    try:
        for _ in range(3000):
            try:
                text = tools.call("read_memory", {"path": "wiki/sub/inside.md"})
            except MemorySearchError:
                continue
            answered += 1
            leaked += SECRET in text
    finally:
        stop.set()
        swapper.join()
        tools.resources.close()
    assert leaked == 0 and answered > 0


def test_mcp_a_line_range_of_a_huge_file_costs_no_more_than_the_range(notes, base_env):
    from memory_search.config import Settings
    from memory_search.faces.mcp_server import Tools
    from memory_search.resources import Resources

    huge = notes.root / "wiki/huge-log.md"
    with open(huge, "w") as handle:
        handle.write("# Huge\n\nfirst line of the body\n")
        line = "x" * 99 + "\n"
        for _ in range(1_000_000):  # 100 MB
            handle.write(line)
    tools = Tools(Settings.from_env(base_env).with_overrides(memories_dir=notes.root), Resources())
    try:
        tracemalloc.start()
        text = tools.call("read_memory", {"path": "wiki/huge-log.md", "end_line": 1})
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert text == "# Huge\n" and peak < 5_000_000
        from memory_search.errors import UsageError

        with pytest.raises(UsageError, match="smaller line range"):
            tools.call("read_memory", {"path": "wiki/huge-log.md"})
    finally:
        huge.unlink()
        tools.resources.close()


def test_mcp_path_errors_keep_their_dots(env, notes):
    (reply,) = mcp_lines(env, notes, [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read_memory", "arguments": {"path": "~/../../etc/passwd"}}})])
    assert "'..' is not allowed" in reply["error"]["message"] and "***" not in reply["error"]["message"]


# --- export -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["symlink", "fifo", "folder", "device"])
def test_export_never_replaces_what_is_not_a_regular_file(env, notes, tmp_path, target):
    output = tmp_path / "chunks.jsonl"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    if target == "symlink":
        output.symlink_to(victim)
    elif target == "fifo":
        os.mkfifo(output)
    elif target == "folder":
        output.mkdir()
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can make a device node")
        os.mknod(output, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    before = os.lstat(output)
    result = run_process("export", "--output", str(output), env=env, memories=notes, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "not a regular file" in result.stderr
    after = os.lstat(output)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert victim.read_text() == "keep me\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["chunks.jsonl", "victim.txt"])


def test_export_csv_cells_never_run_as_formulas_and_nothing_is_left_out(env, notes, tmp_path):
    import csv

    output = tmp_path / "chunks.csv"
    run_script("export", "--format", "csv", "--output", str(output), env=env, memories=notes, check=True)
    with open(output, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
    assert {row["relpath"] for row in rows} >= {"wiki/old.md", "wiki/formula.md"}  # superseded ones too
    assert next(row for row in rows if row["relpath"] == "wiki/formula.md")["title"] == "'=1+1"


# --- the search log -----------------------------------------------------------------------------------

def log_env(env, tmp_path) -> tuple[dict, Path]:
    state = tmp_path / "state"
    return {**env, "MEMORIES_SEARCH_LOG": "1", "XDG_STATE_HOME": str(state)}, state / "memory-search" / "searches.jsonl"


def test_search_log_never_writes_through_a_planted_symlink(env, notes, tmp_path):
    logged, log = log_env(env, tmp_path)
    log.parent.mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    log.symlink_to(victim)
    result = run_script("search", "tea", env=logged, memories=notes)
    assert result.returncode == 0 and "tea.md" in result.stdout
    assert victim.read_text() == "keep me\n" and log.is_symlink()
    assert result.stderr.count("\n") == 1 and "search log" in result.stderr


def test_search_log_made_private_and_refused_in_a_folder_others_can_write(env, notes, tmp_path):
    logged, log = log_env(env, tmp_path)
    log.parent.mkdir(parents=True, mode=0o700)
    log.write_text("")
    log.chmod(0o644)
    run_script("search", "tea", env=logged, memories=notes, check=True)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and log.read_text().count("\n") == 1
    log.parent.chmod(0o777)
    result = run_script("search", "tea", env=logged, memories=notes)
    assert result.returncode == 0 and "another user" in result.stderr and log.read_text().count("\n") == 1


def test_search_log_a_fifo_hangs_nothing(env, notes, tmp_path):
    logged, log = log_env(env, tmp_path)
    log.parent.mkdir(parents=True, mode=0o700)
    os.mkfifo(log)
    searched = run_process("search", "tea", env={**logged, "MEMORIES_NO_DAEMON": "1"}, memories=notes, timeout=60)
    assert searched.returncode == 0 and "tea.md" in searched.stdout and "search log" in searched.stderr
    summary = run_process("stats", "--searches", env=logged, memories=notes, timeout=60)
    assert summary.returncode == 1 and summary.stderr.count("\n") == 1 and "not a regular file" in summary.stderr


def test_search_log_torn_lines_bad_bytes_and_nan_are_skipped_and_counted(env, notes, tmp_path):
    logged, log = log_env(env, tmp_path)
    log.parent.mkdir(parents=True, mode=0o700)
    good = json.dumps({"query": "tea", "results": 1, "ms": 12.5})
    log.write_bytes(b"\n".join([good.encode(), b'{"query": "torn', b"\xff\xfe not utf-8", b'{"query": "nan", '
                                b'"results": 0, "ms": "NaN"}', b'{"query": "inf", "results": 0, "ms": 1e999}',
                                good.encode(), b""]))
    log.chmod(0o600)
    report = json.loads(run_script("stats", "--searches", "--json", env=logged, check=True).stdout)
    assert report["searches"] == 2 and report["skipped"] == 4 and report["p95_ms"] == 12.5
    text = run_script("stats", "--searches", env=logged, check=True).stdout
    assert "4 unreadable line(s) skipped" in text and "inf" not in text


# --- the terminal -------------------------------------------------------------------------------------

@pytest.mark.parametrize("script, args", [("search", ["cleared bell"]), ("similar", ["wiki/tea.md"]),
                                          ("related", ["wiki/escape.md"]), ("recent", [])])
def test_terminal_output_carries_no_control_characters_from_memory_text(env, notes, script, args):
    result = run_script(script, *args, env=env, memories=notes)
    assert result.returncode == 0
    assert not any(ord(character) < 32 and character != "\n" or 0x7f <= ord(character) < 0xa0
                   for character in result.stdout), repr(result.stdout)
    if script == "search":
        assert "\\x1b]0;pwned title\\x07" in result.stdout  # shown, harmless
        as_json = json.loads(run_script("search", *args, "--format", "json", env=env, memories=notes).stdout)
        assert as_json[0]["title"] == "Terminal \x1b[31mred"  # JSON stays exact


# --- symlinks -----------------------------------------------------------------------------------------

def test_a_link_to_a_memory_is_that_memory_once(env, notes):
    hits = json.loads(run_script("search", "green tea", "--format", "json", env=env, memories=notes).stdout)
    assert [Path(hit["path"]).name for hit in hits].count("tea.md") == 1
    assert not any(hit["path"].endswith("alias.md") for hit in hits)
    similar = json.loads(run_script("similar", "wiki/alias.md", "--format", "json", env=env, memories=notes).stdout)
    assert all(hit["score"] < 0.999 for hit in similar) and not any("tea.md" in hit["path"] for hit in similar)


# --- LangBot ------------------------------------------------------------------------------------------

def test_langbot_text_from_a_parser_plugin_has_the_file_limits(env):
    from memory_search.config import Settings
    from memory_search.directory.files import BadMemory
    from memory_search.knowledge_base import Document, KnowledgeBase

    kb = KnowledgeBase(Settings.from_env(env), "hostile-parsed")
    kb.create()
    try:
        with pytest.raises(BadMemory, match="too large"):
            kb.ingest(Document("big", "big.pdf", "word " * 2_500_000, markdown=False))  # 12.5 MB of parsed text
        with pytest.raises(BadMemory, match="too many chunks"):
            kb.ingest(Document("many", "many.pdf", "短い。\n\n" * 300_000, markdown=False), chunk_size=50,
                      chunk_overlap=0)
        assert kb.documents() == {}
    finally:
        kb.drop()


def test_the_hostile_directory_is_untouched(notes):
    """Whatever the cases above tried, the memories are as they were written (and nothing was added)."""
    names = sorted(path.relative_to(notes.root).as_posix() for path in notes.root.rglob("*"))
    assert names == ["wiki", "wiki/alias.md", "wiki/escape.md", "wiki/formula.md", "wiki/old.md", "wiki/sub",
                     "wiki/sub/inside.md", "wiki/tea.md"]
    assert shutil.disk_usage(notes.root).free > 0
