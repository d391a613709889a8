#!/usr/bin/env python3
"""Grow a real index to large sizes and measure it: see `scale.py --help`. Development tooling, not installed."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.join(ROOT, "src"))
from memory_search.faces.environment import ensure  # noqa: E402

ensure()

import click  # noqa: E402

from memory_search.errors import UsageError  # noqa: E402
from memory_search.faces.cli import command, run  # noqa: E402

EXAMPLES = """\
  nice -n 15 scale.py                              # 20k, 100k and 300k chunks (about an hour on 2 cores)
  nice -n 15 scale.py --sizes 20000,1000000 --json
  scale.py --sizes 20000 --queries 10 --workdir /var/tmp/scale   # keep the index for another look
  scale.py --sizes 20000 --workdir /var/tmp/scale --ef-search 100,200,400   # measured again as it is
  nice -n 10 scale.py --sizes 20000,100000 --queries 10 --workdir /var/tmp/scale --serve-clients 1,8,32
                                                         # and the team server under 1, 8 and 32 clients"""


@command(EXAMPLES)
@click.option("--sizes", default="20000,100000,300000", show_default=True,
              help="index sizes in chunks, ascending, comma-separated")
@click.option("--queries", "query_count", type=click.IntRange(min=3), default=40, show_default=True,
              help="questions timed per mode (from examples/eval)")
@click.option("--workdir", type=click.Path(file_okay=False), default=None,
              help="where the embedded PostgreSQL and the memories live (default: a new temporary folder, "
                   "removed at the end)")
@click.option("--ef-search", default="", help="also measure recall and the semantic leg at these hnsw.ef_search "
                                            "values, comma-separated (the searches use layouts.HNSW_EF_SEARCH)")
@click.option("--serve-clients", metavar="N,N,...", default="",
              help="also start serve.py as a team server (127.0.0.1, a token file) at each size and measure "
                   "/api/search under each number of concurrent clients")
@click.option("--serve-seconds", type=click.FloatRange(1, 3600), default=30.0, show_default=True,
              help="how long the clients send at each number")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def bench_scale_command(sizes, query_count, workdir, ef_search, serve_clients, serve_seconds, as_json):
    """Grow a real index to large sizes in SQL and measure searches, size and the HNSW build.

    The base is a real index: examples/memories and the notes of examples/eval written out as memories,
    embedded by the bundled model (its chunks/s on this machine is reported, with the first-index time it
    implies for 100,000 chunks). It is then grown by copying its rows as the indexer wrote them: chunks,
    files and postings, document frequencies and counts kept exact; each copy's vector is its original's
    real embedding mixed with another chunk's and a little noise, normalized: no two are the same, but the
    copies of one chunk lie close together, which real memories do not, so recall is given both by row and
    by source (a hit counts when it copies the same base chunk as one of the exact ten). A copy keeps its
    original's kind, tags and frontmatter; its project names one of ten team members, and copy k is dated k
    days before its original.

    At each size: p50/p95 ms of in-process searches per mode (the query embedded by the model each time),
    and of hybrid searches filtered as people filter them: to sessions, to a tag, and by a frontmatter field
    (filters that cluster with meaning: the copies of a chunk share them), to a member's project and to the
    last 90 days (a tenth of the index and a few per cent of it at a million, unrelated to meaning), with
    the share of the index each filter keeps and of its searches those that came back with a full ten;
    the keyword leg alone over the questions and over the index's commonest words, and whether any of them
    spilled to disk; recall@10 of the semantic leg against an exact scan,
    unfiltered and filtered (and the share of filtered legs that came back full); how often half precision
    changes the exact ten on the base's real embeddings; the bytes each part of the index takes, per
    chunk; the HNSW build time with the indexer's own settings. With --serve-clients, scripts/serve.py is
    started as a team starts it (127.0.0.1, --token-file in the workdir, the index served as
    --db team=index:PREFIX) and clients send /api/search (both branches, examples/eval's questions, the token as
    Authorization: Bearer) back to back: requests/s, p50/p95 ms and errors at each number of clients, with
    the load average at its end, the machine's CPU busy meanwhile, the CPU seconds serve.py,
    PostgreSQL and the clients spent, and the most database connections the server held.

    Uses its own embedded PostgreSQL (MEMORIES_DATABASE_URL is ignored), stopped at the end; with --workdir
    the index stays there for another look."""
    from scale_lib import Scale, report_text

    from memory_search.render import as_json as to_json

    try:
        targets = sorted(int(size) for size in sizes.split(",") if size.strip())
        ef_values = [int(value) for value in ef_search.split(",") if value.strip()]
        levels = [int(value) for value in serve_clients.split(",") if value.strip()]
    except ValueError:
        raise UsageError(f"--sizes {sizes!r} / --ef-search {ef_search!r} / --serve-clients {serve_clients!r}: "
                         "give numbers like 20000,100000") from None
    if not targets:
        raise UsageError("--sizes is empty: give chunk counts like 20000,100000")
    scale = Scale(workdir, say=lambda message: click.echo(message, err=True))
    try:
        report = scale.run(targets, query_count, ef_values, levels, serve_seconds)
    finally:
        scale.close()
    click.echo(to_json(report) if as_json else report_text(report))


if __name__ == "__main__":
    run(bench_scale_command, "scale.py")
