"""Load on the HTTP API: N clients sending searches for a while; requests/s, latency, errors."""

from __future__ import annotations

import statistics
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

QUERIES = ("セッション要約の保存先", "how do we tune the HNSW index", "embedding model decision", "コミット規約",
           "release plan", "バックアップ", "reranker", "meeting minutes retrospective")


def measure(base_url: str, db: str = "default", clients: int = 16, seconds: float = 30.0,
            queries=QUERIES, limit: int = 10) -> dict:
    """Each client sends GET /api/search (both branches) back to back until the time is up."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(number: int):
        sent = number
        while time.monotonic() < deadline:
            query = queries[sent % len(queries)]
            sent += 1
            url = f"{base_url}/api/search?" + urllib.parse.urlencode({"db": db, "q": query, "limit": limit})
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
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


def text(report: dict) -> str:
    return (f"{report['clients']} clients, {report['seconds']} s: {report['requests']} requests, "
            f"{report['requests_per_s']} requests/s, p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, "
            f"{report['errors']} errors" + (f" (first: {report['first_error']})" if report["errors"] else ""))


# --- the command ----------------------------------------------------------------------------------

import click  # noqa: E402

from .cli import _command  # noqa: E402

LOAD_EXAMPLES = """\
  http_load.py                               # the running serve.py's endpoint file, 16 clients, 30 s
  http_load.py --url http://127.0.0.1:8765 --clients 4 --seconds 10 --json"""

LOAD_ENVIRONMENT = """\b
Environment:
  XDG_CONFIG_HOME               where serve.py wrote memory-search/endpoint
                                (default ~/.config)"""


@_command(LOAD_EXAMPLES, LOAD_ENVIRONMENT)
@click.option("--url", help="the API's base URL (default: serve.py's endpoint file)")
@click.option("--db", default="default", show_default=True)
@click.option("--clients", type=click.IntRange(1, 256), default=16, show_default=True)
@click.option("--seconds", type=click.FloatRange(1, 3600), default=30.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
def load_command(url, db, clients, seconds, as_json):
    """Measure a running serve.py: concurrent clients searching (both branches) back to back.

    Prints requests/s, median and 95th-percentile latency, and the number of failed requests."""
    from .errors import MemorySearchError
    from .http_api import config_dir
    from .render import as_json as to_json

    if url is None:
        endpoint = config_dir() / "endpoint"
        try:
            url = endpoint.read_text(encoding="utf-8").strip()
        except OSError:
            raise MemorySearchError(f"no {endpoint}: start scripts/serve.py, or pass --url") from None
    report = measure(url.rstrip("/"), db, clients, seconds)
    click.echo(to_json(report) if as_json else text(report))
