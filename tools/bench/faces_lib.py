"""Speed of the long-running faces, each started as a user starts it, on one memories directory.

HTTP: N clients sending /api/search (both branches) back to back for a while: requests/s, median and
95th-percentile latency, errors. MCP: a search tool call's round trip through the SDK's stdio client."""

from __future__ import annotations

import itertools
import os
import statistics
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import click

from memory_search.config import ENVIRONMENT_HELP
from memory_search.errors import MemorySearchError
from memory_search.faces.console import command, memories_option

QUERIES = ("セッション要約の保存先", "how do we tune the HNSW index", "embedding model decision", "コミット規約",
           "release plan", "バックアップ", "reranker", "meeting minutes retrospective")


def measure(base_url: str, db: str = "default", clients: int = 16, seconds: float = 30.0,
            queries=QUERIES, limit: int = 10, token: str | None = None, target: str | None = None) -> dict:
    """Each client sends GET /api/search (both branches, or the `target` one) back to back until the time is up
    (with `Authorization: Bearer token` when a token is given). Each request's question is new to the server
    (numbered), so none is answered from the vectors it keeps of recent questions."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    numbers = itertools.count()
    deadline = time.monotonic() + seconds

    def client(number: int):
        while time.monotonic() < deadline:
            sent = next(numbers)
            query = f"{queries[sent % len(queries)]} {sent}"
            url = f"{base_url}/api/search?" + urllib.parse.urlencode({"db": db, "q": query, "limit": limit,
                                                                     **({"target": target} if target else {})})
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as response:
                    response.read()
                    failed = None if response.status == 200 else f"HTTP {response.status}"
            except (urllib.error.URLError, OSError) as error:
                failed = str(error)
            elapsed = time.perf_counter() - started
            with lock:
                (errors.append(failed) if failed else latencies.append(elapsed))

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    ordered = sorted(latencies)

    def percentile(share: float) -> float | None:
        return round(1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1) if ordered else None

    return {"clients": clients, "seconds": round(wall, 1), "requests": len(latencies) + len(errors),
            "errors": len(errors), "first_error": errors[0] if errors else None,
            "requests_per_s": round(len(latencies) / wall, 1),
            "p50_ms": round(1000 * statistics.median(ordered), 1) if ordered else None,
            "p95_ms": percentile(0.95)}


def http_text(report: dict) -> str:
    return (f"HTTP /api/search: {report['clients']} clients, {report['seconds']} s: {report['requests']} requests, "
            f"{report['requests_per_s']} requests/s, p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, "
            f"{report['errors']} errors" + (f" (first: {report['first_error']})" if report["errors"] else ""))




def at_levels(base_url: str, env: dict, levels: list[int], seconds: float, queries=QUERIES) -> list[dict]:
    """At each level of concurrent clients: /api/search and the search tool over MCP's Streamable HTTP, each for
    `seconds`, with the most database connections the server held meanwhile."""
    results = []
    for clients in levels:
        with _connection_watch(env) as peak:
            http = measure(base_url, "default", clients, seconds, queries)
        with _connection_watch(env) as peak_mcp:
            mcp = mcp_over_http(base_url, clients, seconds, queries)
        results.append({"clients": clients, "http": http, "mcp_http": mcp,
                        "db_connections_peak": max(peak[0], peak_mcp[0])})
    return results


def team_server(env: dict, workdir: Path, prefix: str, levels: list[int], seconds: float,
                queries=QUERIES) -> list[dict]:
    """scripts/serve.py as a team starts it (127.0.0.1, a token file in `workdir`) serving the index `prefix` as
    db "team"; at each level of concurrent clients, /api/search for `seconds` with the bearer token. With each
    level: the machine's load average (1 minute) at its end, the share of the machine's CPU busy meanwhile, the
    CPU seconds serve.py, the database's backends and the clients (this process) spent, and the most database
    connections held."""
    token_file = workdir / "team-token"
    args = ("--host", "127.0.0.1", "--token-file", str(token_file), "--db", f"team=index:{prefix}")
    postmaster = _postmaster(env)
    results = []
    with serving(env, args) as (url, process):
        token = token_file.read_text(encoding="utf-8").strip()
        measure(url, "team", 2, min(seconds, 5.0), queries, token=token)  # warm: the model, the caches
        for clients in levels:
            busy, server, database = _machine_busy(), _cpu_seconds([process.pid]), _cpu_seconds(_children(postmaster))
            own = time.process_time()
            with _connection_watch(env) as peak:
                http = measure(url, "team", clients, seconds, queries, token=token)
            busy_end = _machine_busy()
            http.update(load=round(os.getloadavg()[0], 2),
                        cpu_busy=round(100 * (busy_end[0] - busy[0]) / max(busy_end[1] - busy[1], 1)),
                        serve_cpu_s=round(_cpu_seconds([process.pid]) - server, 1),
                        database_cpu_s=round(_cpu_seconds(_children(postmaster)) - database, 1),
                        clients_cpu_s=round(time.process_time() - own, 1), db_connections_peak=peak[0])
            results.append(http)
    return results


def voyage_server(memories: Path, levels: list[int], seconds: float, latency: float) -> list[dict]:
    """scripts/serve.py configured for Voyage AI, over a copy of `memories` indexed through a loopback stand-in
    for its API (the test suite's, tests/fake_voyage.py) that answers each query after `latency` seconds, as a
    distant service does; at each level of concurrent clients, /api/search and the search tool over MCP's
    Streamable HTTP (a hybrid search), each for `seconds`."""
    import shutil
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from fake_voyage import GOOD_KEY, FakeVoyage

    from memory_search.config import Settings
    from memory_search.indexing.indexer import Indexer

    with tempfile.TemporaryDirectory(prefix="memsearch-voyage-") as work, FakeVoyage() as voyage:
        shutil.copytree(memories, Path(work) / "memories")
        env = {key: value for key, value in os.environ.items() if not key.startswith(("MEMORIES_", "VOYAGE_"))}
        env.update(VOYAGE_API_KEY=GOOD_KEY, MEMORIES_VOYAGE_BASE_URL=voyage.url,
                   MEMORIES_DIR=str(Path(work) / "memories"), MEMORIES_DATA_DIR=str(Path(work) / "data"))
        Indexer(Settings.from_env(env)).run()
        voyage.latency = latency
        try:
            with running_http_server(env) as url:
                measure(url, "default", 2, min(seconds, 3.0))  # warm
                return [{"clients": clients, "http": measure(url, "default", clients, seconds),
                         "mcp_http": mcp_over_http(url, clients, seconds)} for clients in levels]
        finally:
            from memory_search.storage.database import EmbeddedServer

            EmbeddedServer(Path(work) / "data").stop()


def team_text(levels: list[dict]) -> str:
    lines = ["| clients | requests/s | p50 ms | p95 ms | errors | load (1 min) | CPU busy "
             "| CPU s: serve.py / PostgreSQL / clients | db connections |", "|---|---|---|---|---|---|---|---|---|"]
    for row in levels:
        lines.append(f"| {row['clients']} | {row['requests_per_s']} | {row['p50_ms']} | {row['p95_ms']} "
                     f"| {row['errors']}{' (' + row['first_error'][:80] + ')' if row['errors'] else ''} "
                     f"| {row['load']} | {row['cpu_busy']} % | {row['serve_cpu_s']} / {row['database_cpu_s']} "
                     f"/ {row.get('clients_cpu_s')} "
                     f"| {row['db_connections_peak']} |")
    return "\n".join(lines)


def _postmaster(env: dict) -> int | None:
    """The embedded PostgreSQL's process id when the settings use it (None for a configured server)."""
    from memory_search.config import Settings
    from memory_search.storage.database import EmbeddedServer

    settings = Settings.from_env(env)
    if settings.database_url:
        return None
    try:
        return int((EmbeddedServer(settings.data_dir).pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _children(parent: int | None) -> list[int]:
    if parent is None:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes (all their threads) have spent; Linux's /proc, else 0."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _machine_busy() -> tuple[int, int]:
    """(busy, all) CPU ticks of the machine since it started, from /proc/stat ((0, 0) elsewhere)."""
    try:
        ticks = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


@contextmanager
def _connection_watch(env: dict):
    """The most connections named memory-search the database held while the block ran ([peak])."""
    import psycopg

    from memory_search.config import Settings
    from memory_search.storage.database import database_url

    peak, stop = [0], threading.Event()

    def watch():
        with psycopg.connect(database_url(Settings.from_env(env)), autocommit=True) as conn:
            while not stop.is_set():
                count = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                                     "'memory-search'").fetchone()[0]
                peak[0] = max(peak[0], count)
                time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield peak
    finally:
        stop.set()
        watcher.join(timeout=5)


def mcp_over_http(base_url: str, clients: int, seconds: float, queries=QUERIES) -> dict:
    """`clients` MCP sessions over Streamable HTTP calling the search tool back to back for `seconds`."""
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    errors: list[str] = []
    numbers = itertools.count()

    async def client(number: int, deadline: float):
        async with streamable_http_client(base_url + "/mcp") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                while time.monotonic() < deadline:
                    sent = next(numbers)
                    started = time.perf_counter()
                    try:
                        result = await session.call_tool("search", {"query": f"{queries[sent % len(queries)]} {sent}",
                                                                    "top": 10})
                        (errors.append(result.content[0].text) if result.is_error else
                         latencies.append(time.perf_counter() - started))
                    except Exception as error:  # noqa: BLE001 - counted, the run goes on
                        errors.append(str(error))

    async def main():
        deadline = time.monotonic() + seconds
        async with anyio.create_task_group() as group:
            for number in range(clients):
                group.start_soon(client, number, deadline)

    started = time.monotonic()
    anyio.run(main)
    wall = time.monotonic() - started
    ordered = sorted(latencies)
    return {"clients": clients, "requests": len(latencies) + len(errors), "errors": len(errors),
            "requests_per_s": round(len(latencies) / wall, 1),
            "p50_ms": round(1000 * statistics.median(ordered), 1) if ordered else None,
            "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1) if ordered else None}


def mcp_round_trip(env: dict, calls: int = 20, queries=QUERIES) -> dict:
    """Start scripts/mcp_server.py under `env`, then time `calls` search tool calls (after one untimed)."""
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    script = str(Path(__file__).resolve().parents[2] / "scripts" / "mcp_server.py")
    timings: list[float] = []

    async def main():
        parameters = StdioServerParameters(command=sys.executable, args=[script], env=env)
        with open(os.devnull, "w") as quiet:
            async with stdio_client(parameters, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.call_tool("search", {"query": queries[0], "top": 10})
                    for number in range(calls):
                        started = time.perf_counter()
                        result = await session.call_tool("search", {"query": queries[number % len(queries)],
                                                                    "top": 10})
                        timings.append(time.perf_counter() - started)
                        if result.is_error:
                            raise RuntimeError(result.content[0].text)

    anyio.run(main)
    ordered = sorted(timings)
    return {"calls": calls, "median_ms": round(1000 * statistics.median(ordered), 1),
            "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)}


@contextmanager
def running_http_server(env: dict, args: tuple[str, ...] = ()):
    """scripts/serve.py on a free port, its endpoint file in a temporary configuration folder: its base URL."""
    with serving(env, args) as (url, _process):
        yield url


@contextmanager
def serving(env: dict, args: tuple[str, ...] = ()):
    """scripts/serve.py with `args` on a free port, as a user starts it: (its base URL, the process)."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as config:
        serve = Path(__file__).resolve().parents[2] / "scripts" / "serve.py"
        process = subprocess.Popen([sys.executable, str(serve), *args],
                                   env={**env, "XDG_CONFIG_HOME": config}, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        endpoint = Path(config) / "memory-search" / "endpoint"
        try:
            deadline = time.monotonic() + 120
            while not endpoint.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise MemorySearchError(f"serve.py did not start: {process.stderr.read().strip()[:300]}")
                time.sleep(0.1)
            yield endpoint.read_text().strip(), process
        finally:
            process.terminate()
            process.wait(timeout=30)


# --- the command ----------------------------------------------------------------------------------

FACES_EXAMPLES = """\
  faces.py --memories examples/memories              # 20 MCP calls; 16 HTTP clients for 30 s
  faces.py --clients 4 --seconds 10 --json
  faces.py --memories examples/memories --voyage-latency 0.15 --concurrency 1,8,32 --seconds 10"""


@command(FACES_EXAMPLES, ENVIRONMENT_HELP)
@click.option("--calls", type=click.IntRange(3, 1000), default=20, show_default=True,
              help="MCP search calls to time")
@click.option("--clients", type=click.IntRange(1, 256), default=16, show_default=True,
              help="concurrent HTTP clients")
@click.option("--seconds", type=click.FloatRange(1, 3600), default=30.0, show_default=True,
              help="how long the HTTP clients send")
@click.option("--concurrency", metavar="N,N,...", help="also measure /api/search and MCP over HTTP at each number "
                                                      "of concurrent clients, with the database connections held")
@click.option("--voyage-latency", type=click.FloatRange(0, 10), metavar="SECONDS",
              help="instead: serve.py configured for Voyage AI, over a copy of the memories indexed through a "
                   "loopback stand-in for its API that answers each query after SECONDS, at each --concurrency")
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
@memories_option
def bench_faces_command(calls, clients, seconds, concurrency, voyage_latency, as_json, memories):
    """Measure the MCP server and the HTTP API on an indexed memories directory.

    Starts scripts/mcp_server.py and times search tool calls through the MCP SDK's stdio client
    (median and p95 of CALLS round trips, after one untimed call); then starts scripts/serve.py
    on a free loopback port and has CLIENTS clients search through it for SECONDS."""
    from memory_search.render import as_json as to_json

    env = dict(os.environ)
    if memories:
        env["MEMORIES_DIR"] = os.path.abspath(os.path.expanduser(memories))
    levels = _levels(concurrency)
    if voyage_latency is not None:
        from memory_search.config import Settings

        served = voyage_server(Settings.from_env(env).memories_root, levels or [clients], seconds, voyage_latency)
        click.echo(to_json(served) if as_json else "\n".join(
            _level_text(level, f" (Voyage answering after {voyage_latency:g} s)") for level in served))
        return
    report = {"mcp_search": mcp_round_trip(env, calls)}
    with running_http_server(env) as url:
        report["http_search"] = measure(url, "default", clients, seconds)
        if levels:
            report["concurrency"] = at_levels(url, env, levels, seconds)
    if as_json:
        click.echo(to_json(report))
    else:
        mcp = report["mcp_search"]
        click.echo(f"MCP search tool, round trip over stdio: median {mcp['median_ms']} ms, p95 {mcp['p95_ms']} ms "
                   f"({mcp['calls']} calls)")
        click.echo(http_text(report["http_search"]))
        for level in report.get("concurrency", []):
            click.echo(_level_text(level, f"; database connections at most {level['db_connections_peak']}"))


def _level_text(level: dict, tail: str) -> str:
    http, mcp = level["http"], level["mcp_http"]
    return (f"{level['clients']:>3} clients: HTTP p50 {http['p50_ms']} ms, p95 {http['p95_ms']} ms, "
            f"{http['requests_per_s']}/s, {http['errors']} errors; MCP over HTTP p50 {mcp['p50_ms']} ms, "
            f"p95 {mcp['p95_ms']} ms, {mcp['requests_per_s']}/s, {mcp['errors']} errors{tail}")


def _levels(concurrency: str | None) -> list[int]:
    try:
        return [int(level) for level in concurrency.split(",")] if concurrency else []
    except ValueError:
        raise click.UsageError(f"--concurrency {concurrency!r}: give numbers like 1,8,32") from None
