#!/usr/bin/env python3
"""Measure speed on synthetic memories: see `bench.py --help`. Development tooling, not installed."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.join(ROOT, "src"))
sys.path.insert(1, os.path.join(ROOT, "tools"))  # reports.py
from memory_search.faces.environment import ensure  # noqa: E402

ensure()

import click  # noqa: E402

from memory_search.errors import UsageError  # noqa: E402
from memory_search.faces.console import command, run  # noqa: E402

# --- bench ---------------------------------------------------------------------------------------

BENCH_EXAMPLES = """\
  bench.py                                  # the full table (about 30 minutes on 2 cores)
  bench.py --sizes 20000 --runs 10 --json
  bench.py --skip indexing,first,freshness"""


@command(BENCH_EXAMPLES)
@click.option("--sizes", default="5000,20000,200000", show_default=True, help="index sizes in chunks, comma-separated")
@click.option("--runs", type=click.IntRange(min=3), default=20, show_default=True, help="fresh processes per figure")
@click.option("--recent-files", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--fresh-files", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="files for the no-op and one-edit index runs")
@click.option("--index-files", type=click.IntRange(min=1), default=120, show_default=True,
              help="files embedded by the real model for indexing throughput")
@click.option("--first-files", type=click.IntRange(min=1), default=2_000, show_default=True,
              help="session-like files of the first-index part (real model)")
@click.option("--skip", default="", help="parts to leave out: indexing, first, sizes, recent, freshness, knowledge")
@click.option("--export-chunks", type=click.IntRange(min=1), default=20_000, show_default=True,
              help="chunks exported by export.py (knowledge part)")
@click.option("--python", "python", metavar="PATH",
              help="the interpreter `#!/usr/bin/env python3` runs (default: python3 on PATH outside the venv)")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def bench_command(sizes, runs, recent_files, fresh_files, index_files, first_files, skip, export_chunks, python,
                  as_json):
    """Measure speed on synthetic Japanese and English memories of every kind.

    Prints end-to-end wall time of search.py and recent.py as fresh processes (median and p95), with
    and without the warm helper, run by the venv's python and by the system python3 as Claude Code
    runs them, each also as a ratio to `python3 -c pass` timed interleaved in the same run; where a
    warm search's time goes; in-process query latency per mode, peak memory of a search
    process, indexing throughput next to the raw embedder's, a first index's seconds to a keyword
    hit and its embedding rate, no-op / one-edit index runs, and export.py / stats.py --verify time
    and memory.
    Sizes the local model cannot embed in reasonable time are loaded with vectors derived from a
    small pool of real embeddings; the output says so. Uses its own embedded PostgreSQL in a
    temporary folder."""
    from reports import bench_text
    from speed_lib import Bench, Report

    from memory_search.render import as_json as to_json

    skipped = {part.strip() for part in skip.split(",") if part.strip()}
    try:
        chunk_sizes = [int(size) for size in sizes.split(",") if size.strip()]
    except ValueError:
        raise UsageError(f"--sizes {sizes!r}: give chunk counts like 20000,200000") from None
    bench = Bench(runs, say=lambda message: click.echo(message, err=True), python=python)
    report = Report()
    try:
        if "indexing" not in skipped:
            click.echo(f"indexing {index_files} files with the local model", err=True)
            report.indexing = bench.indexing_throughput(index_files)
        if "first" not in skipped:
            click.echo(f"first index of {first_files} session files with the local model", err=True)
            report.first_index = bench.first_index(first_files)
        if "recent" not in skipped:
            report.recent = bench.recent(recent_files)
        if "freshness" not in skipped:
            click.echo(f"no-op and one-edit runs over {fresh_files} files", err=True)
            report.freshness = bench.freshness(fresh_files)
        if "knowledge" not in skipped:
            click.echo(f"export.py over {export_chunks} chunks, stats.py --verify over {fresh_files} files", err=True)
            report.knowledge = bench.knowledge(export_chunks, fresh_files)
        if "sizes" not in skipped:
            report.notes.append("sizes are loaded with pool-derived vectors, not embedded by the model; "
                                "queries are embedded by the real local model")
            for size in chunk_sizes:
                report.sizes.append(bench.size(size))
    finally:
        bench.close()
    click.echo(to_json(report.__dict__) if as_json else bench_text(report))


if __name__ == "__main__":
    run(bench_command, "speed.py")
