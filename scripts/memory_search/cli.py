"""Command-line entry points: parse, call the library, render, map errors to exit codes."""

from __future__ import annotations

import datetime as dt
import gc
import math
import os
import sys
import time

import click

from .config import DATABASE_ENVIRONMENT_HELP, ENVIRONMENT_HELP, RECENT_ENVIRONMENT_HELP, Settings
from .errors import EXIT_FAILURE, EXIT_PARTIAL, EXIT_USAGE, MemorySearchError, UsageError, first_line, require_text

EXIT_CODES_HELP = """\b
Exit codes:
  0  success, also when nothing matched
  1  runtime failure (database, embedding service, index mismatch)
  2  usage error (bad flag, empty query, --top outside 1..100)
  3  the memories directory or the index is missing"""
INDEX_EXIT_CODES_HELP = EXIT_CODES_HELP + """
  4  the index is up to date except for files that could not be
     indexed (each listed with its reason)"""


def _command(examples: str, environment: str = ENVIRONMENT_HELP, exit_codes: str = EXIT_CODES_HELP):
    """A click command whose --help ends with examples, environment variables and exit codes."""
    epilog = "\b\nExamples:\n" + examples + "\n\n" + environment + "\n\n" + exit_codes
    return click.command(epilog=epilog, context_settings={"help_option_names": ["-h", "--help"]})


def run(command: click.Command, prog: str, args=None, start_helper: bool = False, exits: bool = True) -> None:
    """Run a click command with one-line errors on stderr and the documented exit codes.

    start_helper: no warm helper answered this call (scripts/_client.py); start one for the next.
    exits: the process ends after this run (False in the helper, which runs many)."""
    try:
        code = command.main(args=args, prog_name=prog, standalone_mode=False)
    except click.exceptions.Exit as done:
        code = done.exit_code
    except click.UsageError as error:
        _fail(prog, f"{error.format_message()} (see {prog} --help)", EXIT_USAGE)
    except MemorySearchError as error:
        _fail(prog, str(error), error.exit_code)
    except (KeyboardInterrupt, click.Abort):
        _fail(prog, "interrupted", 130)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except Exception as error:  # last resort: still one line, never a traceback
        if os.environ.get("MEMORIES_DEBUG", "0") not in ("", "0"):
            raise
        _fail(prog, _describe_unexpected(error), EXIT_FAILURE)
    finally:
        if start_helper:  # after the output: the helper's start-up must not slow this call
            from . import daemon

            daemon.start_in_background(warm=prog == "search.py")
        if exits:  # spare the collector its pass over every object at shutdown: 30 ms of a short search
            gc.freeze()
    sys.exit(code if isinstance(code, int) else 0)


def _describe_unexpected(error: Exception) -> str:
    if type(error).__module__.startswith("psycopg"):  # without importing psycopg on the way here
        if type(error).__name__ in ("OperationalError", "AdminShutdown", "ConnectionTimeout"):
            return (f"PostgreSQL went away ({first_line(error)}): check that it runs "
                    "(scripts/db.py status, or your MEMORIES_DATABASE_URL server) and try again")
        return f"PostgreSQL refused the request ({first_line(error)})"
    return f"unexpected {type(error).__name__}: {first_line(error)} (set MEMORIES_DEBUG=1 for a traceback)"


def _fail(prog: str, message: str, code: int) -> None:
    click.echo(f"{prog}: error: {_masked(message)}", err=True)
    sys.exit(code)


def _masked(message: str) -> str:
    """Never print a secret: the configured ones by value, any password, token or key by its shape."""
    from .errors import mask_secrets

    try:
        settings = Settings.from_env()
        known = (settings.voyage_api_key, settings.database_url)
    except Exception:  # masking must not fail; the shapes are still masked
        known = ()
    return mask_secrets(message, *known)


def _settings(memories, table=None, daemon=None) -> Settings:
    if memories is not None and not memories.strip():
        raise UsageError("--memories is empty: give the memories directory")
    require_text(memories, "--memories")
    settings = Settings.from_env().with_overrides(memories_dir=memories, table=table)
    return settings if daemon is None else settings.with_overrides(daemon=daemon)


def open_memories(settings: Settings, warn=None):
    """The library object a command works with; the warm helper puts one over its shared resources here."""
    from .api import Memories

    return Memories(settings, warn=warn)


def _date(value: str | None, flag: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{flag} {value!r} is not a date: use YYYY-MM-DD") from None


memories_option = click.option("--memories", "memories", metavar="DIR",
                               help="memories directory (default: $MEMORIES_DIR)")


def _options(*options):
    """Several click options as one decorator, listed in --help in the order given."""
    def apply(function):
        for option in reversed(options):
            function = option(function)
        return function
    return apply


# The options search.py and similar.py share.
_scope_and_format_options = _options(
    click.option("--scope", type=click.Choice(["session", "web", "minutes", "wiki", "all"]), default="all",
                 show_default=True, help="wiki/** or raw/<kind>/** only"),
    click.option("--include-superseded", is_flag=True, help="also return superseded and deprecated records"),
    click.option("--format", "output", type=click.Choice(["markdown", "json"]), default="markdown",
                 show_default=True))
WHERE_HELP = 'frontmatter filter as JSON, Chroma style: {"field": {"$gte": 3}}'


def _record_filter_options(where_help: str):
    return _options(
        click.option("--project", help="only records whose frontmatter project is NAME"),
        click.option("--tag", "tags", multiple=True, help="only records with this tag (repeatable: all must match)"),
        click.option("--since", help="only records dated on or after YYYY-MM-DD"),
        click.option("--until", help="only records dated on or before YYYY-MM-DD"),
        click.option("--where", help=where_help))


# --- search --------------------------------------------------------------------------------------

SEARCH_EXAMPLES = """\
  search.py "セッション要約の保存先"
  search.py "コミット規約" --scope wiki --top 5 --format json
  search.py "Jina Reader 仕様" --scope web
  search.py "recording" --include-superseded
  search.py "ERR_PGVECTOR_DIM_MISMATCH" --mode keyword --explain
  search.py "release plan" --since 2026-10-01 --where '{"project": {"$in": ["agents", "infra"]}}'"""


@_command(SEARCH_EXAMPLES)
@click.argument("query")
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True,
              help="how many files (after dedupe) to return, 1..100")
@_scope_and_format_options
@click.option("--no-dedupe", is_flag=True, help="return every matching chunk, not one best chunk per file")
@click.option("--mode", type=click.Choice(["hybrid", "semantic", "keyword"]),
              help="retrieval legs (default: hybrid; semantic on a bare CocoIndex table)")
@_record_filter_options(WHERE_HELP + "; operators $eq $ne $gt $gte $lt $lte $in $nin")
@click.option("--min-score", type=float, help="drop hits scoring below this")
@click.option("--explain", is_flag=True, help="show each leg's rank and score for every hit")
@click.option("--rerank/--no-rerank", default=None,
              help="rerank with Voyage rerank-2.5 (default: on when VOYAGE_API_KEY is set)")
@click.option("--table", help="read this table (default: $MEMORIES_TABLE, the managed index, then CocoIndex's)")
@click.option("--no-daemon", is_flag=True, help="do not use the warm helper process")
@memories_option
def search_command(query, top, scope, include_superseded, output, no_dedupe, mode, project, tags, since, until,
                   where, min_score, explain, rerank, table, no_daemon, memories):
    """Search the memories for QUERY (natural language, Japanese or English).

    Prints the best chunk of each matching file, best first, as Markdown or JSON.
    A snippet is a lead: read the file before quoting it."""
    from .render import hits_json, hits_markdown
    from .retrieval import SearchRequest

    if not require_text(query, "the query").strip():
        raise UsageError("the query is empty: give a few words to search for")
    if min_score is not None and not math.isfinite(min_score):
        raise UsageError(f"--min-score {min_score} is not a number: give one like 0.5")
    settings = _settings(memories, table, daemon=False if no_daemon else None)
    filters = _filters(scope, include_superseded, project, tags, since, until, where)
    request = SearchRequest(query=query, top=top, mode=mode, filters=filters, dedupe=not no_dedupe,
                            min_score=min_score,
                            rerank=bool(settings.voyage_api_key) if rerank is None else rerank)
    started = time.perf_counter()
    hits = _search(settings, request)
    if settings.search_log is not None:
        _log_search(settings, request, len(hits), (time.perf_counter() - started) * 1000)
    click.echo(hits_json(hits, explain) if output == "json" else hits_markdown(hits, explain))


def _log_search(settings: Settings, request, results: int, milliseconds: float) -> None:
    from . import search_log

    item = search_log.entry(request.query, request.filters, request.top, results, milliseconds, request.mode)
    warning = search_log.append(settings.search_log, settings.memories_root, item)
    if warning:
        _warn(warning)


def _filters(scope, include_superseded, project, tags, since, until, where):
    from .filters import Filters, parse_where

    return Filters(scope=scope, include_superseded=include_superseded, project=require_text(project, "--project"),
                   tags=tuple(require_text(tag, "--tag") for tag in tags), since=_date(since, "--since"),
                   until=_date(until, "--until"), where=parse_where(require_text(where, "--where")))


def _warn(message: str) -> None:
    click.echo(f"search.py: warning: {message}", err=True)


def _search(settings: Settings, request):
    with open_memories(settings, warn=_warn) as memories:
        return memories.run(request)


# --- similar -------------------------------------------------------------------------------------

SIMILAR_EXAMPLES = """\
  similar.py raw/session/2026-10-14/213305_3f9a1c2e_9d8c7b6a.md
  similar.py ~/memories/wiki/search/embedding-model.md --scope session --top 5 --format json
  similar.py wiki/dev/commit-conventions.md --include-superseded --since 2026-10-01"""


@_command(SIMILAR_EXAMPLES)
@click.argument("path")
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True,
              help="how many files to return, 1..100")
@_scope_and_format_options
@_record_filter_options(WHERE_HELP)
@click.option("--min-score", type=float, help="drop hits whose cosine similarity is below this")
@click.option("--explain", is_flag=True, help="show the semantic rank and score, and the line range")
@click.option("--table", help="read this table (default: $MEMORIES_TABLE, the managed index, then CocoIndex's)")
@memories_option
def similar_command(path, top, scope, include_superseded, output, project, tags, since, until, where, min_score,
                    explain, table, memories):
    """List the memories closest in meaning to the memory at PATH.

    PATH is absolute or relative to the memories directory. Its meaning is the mean of its
    chunks' vectors (its whole text, not its title); the memory itself is left out, and each
    file appears once. Same output as search.py."""
    from .api import Memories
    from .render import hits_json, hits_markdown

    settings = _settings(memories, table)
    filters = _filters(scope, include_superseded, project, tags, since, until, where)
    with Memories(settings, warn=lambda message: click.echo(f"similar.py: warning: {message}", err=True)) as opened:
        hits = opened.similar(path, top=top, filters=filters, min_score=min_score)
    click.echo(hits_json(hits, explain) if output == "json" else hits_markdown(hits, explain))


# --- recent --------------------------------------------------------------------------------------

RECENT_EXAMPLES = """\
  recent.py --kind session --top 5
  recent.py --kind session --project agents --days 7
  recent.py --kind web --top 10 --format json
  recent.py --kind all --format paths"""


@_command(RECENT_EXAMPLES, RECENT_ENVIRONMENT_HELP)
@click.option("--kind", type=click.Choice(["session", "web", "minutes", "all"]), default="session", show_default=True)
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True, help="how many records, 1..100")
@click.option("--project", help="only records whose frontmatter project is NAME")
@click.option("--days", type=click.IntRange(min=0), help="only date folders from the last D days")
@click.option("--format", "output", type=click.Choice(["markdown", "json", "paths"]), default="markdown",
              show_default=True)
@memories_option
def recent_command(kind, top, project, days, output, memories):
    """List the newest records under raw/<kind>/YYYY-MM-DD/HHMMSS_*.md, newest first.

    Reads the files only: no database and no model."""
    from .render import records_json, records_markdown, records_paths

    records = open_memories(_settings(memories)).recent(kind=kind, top=top, project=project, days=days)
    if output == "json":
        click.echo(records_json(records))
    elif output == "paths":
        if records:
            click.echo(records_paths(records))
    else:
        click.echo(records_markdown(records))


# --- index ---------------------------------------------------------------------------------------

INDEX_EXAMPLES = """\
  index.py                          # bring the index up to date
  index.py --memories ~/memories --json
  index.py --dry-run                # list what would change
  index.py --rebuild                # start over (cached embeddings are reused)
  index.py --exclude 'raw/web/**'   # on top of trashbox/**, **/_*.md, **/.git/**, dot-files
  index.py --reset-selection        # forget --include/--exclude: index every memory again
  index.py --watch                  # keep the index fresh while files change"""


@_command(INDEX_EXAMPLES, exit_codes=INDEX_EXIT_CODES_HELP)
@click.option("--rebuild", is_flag=True,
              help="build the index again beside the old one, then swap (searches keep working)")
@click.option("--include", multiple=True, metavar="GLOB",
              help="index only paths matching GLOB (repeatable; remembered by the index; * stays in a folder, "
                   "** crosses folders)")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="also leave out paths matching GLOB (repeatable; remembered by the index)")
@click.option("--reset-selection", is_flag=True, help="forget the remembered --include/--exclude")
@click.option("--dry-run", is_flag=True, help="list new, changed and deleted files; change nothing")
@click.option("--json", "as_json", is_flag=True, help="print IndexStats as JSON on stdout")
@click.option("--watch", is_flag=True, help="keep running and re-index when files change")
@click.option("--no-wait", is_flag=True, help="exit at once if another indexer holds the lock")
@memories_option
def index_command(rebuild, include, exclude, reset_selection, dry_run, as_json, watch, no_wait, memories):
    """Build or refresh the search index of the memories directory.

    Only new and changed files are read and embedded; deleted files leave the index. Each
    file's rows are replaced in one transaction, so a search never sees half a file and an
    interrupted run loses nothing already written. Progress goes to stderr on a terminal."""
    from .api import Memories
    from .progress import Progress
    from .render import as_json as to_json, stats_text

    settings = _settings(memories)
    progress = Progress()
    if reset_selection:
        include, exclude = include or (), exclude or ()
    elif not include and not exclude:
        include = exclude = None  # the selection the index remembers
    if dry_run:
        with Memories(settings) as library:
            plan = library.plan(include, exclude)
        report = {"new": [f.relpath for f in plan.new], "changed": [f.relpath for f in plan.changed],
                  "deleted": [os.path.relpath(path, settings.memories_root) for path in plan.deleted],
                  "unchanged": len(plan.unchanged),
                  "unreadable": [{"path": s.relpath, "reason": s.reason} for s in plan.bad]}
        if as_json:
            click.echo(to_json(report))
        else:
            for key in ("new", "changed", "deleted"):
                for path in report[key]:
                    click.echo(f"{key}\t{path}")
            click.echo(f"{len(plan.new)} new, {len(plan.changed)} changed (by size or time), "
                       f"{len(plan.deleted)} deleted, {len(plan.unchanged)} unchanged", err=True)
        return

    def report(stats):
        if as_json:
            click.echo(to_json({key: value for key, value in stats.as_dict().items()}))
        else:
            click.echo(stats_text(stats), err=True)

    if watch:
        from .indexer import watch as watch_directory

        click.echo(f"watching {settings.memories_root} (Ctrl-C to stop)", err=True)
        watch_directory(settings, include, exclude, on_run=report, progress=progress)
        return None
    stats = Memories(settings).index(rebuild=rebuild, include=include, exclude=exclude, wait=not no_wait,
                                     progress=progress)
    report(stats)
    return EXIT_PARTIAL if stats.failed else None


# --- stats ---------------------------------------------------------------------------------------

STATS_EXAMPLES = """\
  stats.py
  stats.py --json
  stats.py --verify                 # prove the index matches the directory (exit 1 if not)
  stats.py --searches               # the search log: count, p50/p95, queries that found nothing"""


@_command(STATS_EXAMPLES)
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
@click.option("--verify", is_flag=True, help="check every file, chunk, posting and count against the directory; "
                                             "exit 1 and name the repair when something is wrong")
@click.option("--searches", is_flag=True, help="summarize the search log (MEMORIES_SEARCH_LOG=1); no database")
@memories_option
def stats_command(as_json, verify, searches, memories):
    """Show what the index holds and how far it is behind the memories directory.

    Also whether an indexer is running now and how many links the memories hold."""
    from .render import as_json as to_json, search_summary_text, status_text, verification_text

    settings = _settings(memories)
    if verify and searches:
        raise UsageError("--verify and --searches are separate reports: give one")
    if searches:
        from .search_log import summarize

        summary = summarize(settings.state_dir / "searches.jsonl")
        click.echo(to_json(summary) if as_json else search_summary_text(summary))
        return
    if verify:
        from .api import Memories
        from .verify import verify as check

        with Memories(settings) as library:
            result = check(library.connection, settings)
        click.echo(to_json(result.as_dict()) if as_json else verification_text(result))
        raise click.exceptions.Exit(0 if result.clean else EXIT_FAILURE)
    with open_memories(settings) as library:
        status = library.status()
    click.echo(to_json(status) if as_json else status_text(status))


# --- related -------------------------------------------------------------------------------------

RELATED_EXAMPLES = """\
  related.py wiki/dev/commit-conventions.md
  related.py "$MEMORIES_DIR/raw/session/2026-11-05/091130_7c2d9e41_2a3b4c5d.md" --top 5 --format json
  related.py wiki/ops/dev-setup.md --include-superseded"""


@_command(RELATED_EXAMPLES)
@click.argument("path")
@click.option("--top", type=click.IntRange(1, 100), default=10, show_default=True, help="how many memories, 1..100")
@click.option("--format", "output", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--scope", type=click.Choice(["session", "web", "minutes", "wiki", "all"]), default="all",
              show_default=True, help="wiki/** or raw/<kind>/** only")
@click.option("--include-superseded", is_flag=True, help="also list superseded and deprecated records")
@click.option("--project", help="only records whose frontmatter project is NAME")
@click.option("--tag", "tags", multiple=True, help="only records with this tag (repeatable: all must match)")
@memories_option
def related_command(path, top, output, scope, include_superseded, project, tags, memories):
    """List what the memory at PATH is connected to, with the reason for each.

    PATH is absolute, relative to the working directory, or relative to the memories
    directory. Memories it links to (`links to`) and that link to it (`linked from`) come
    first, then the nearest in meaning (`similar 0.83`); superseded records are left out
    unless asked for, as in search."""
    from .api import Memories
    from .render import related_json, related_markdown

    filters = _filters(scope, include_superseded, project, tags, None, None, None)
    with Memories(_settings(memories), warn=_warn) as library:
        entries = library.related(path, top=top, filters=filters)
    click.echo(related_json(entries) if output == "json" else related_markdown(entries))


# --- export --------------------------------------------------------------------------------------

EXPORT_EXAMPLES = """\
  export.py > chunks.jsonl
  export.py --format csv --output chunks.csv --scope wiki
  export.py --format json --project agents --since 2026-10-01 --with-vectors"""


@_command(EXPORT_EXAMPLES)
@click.option("--format", "output_format", type=click.Choice(["jsonl", "json", "csv"]), default="jsonl",
              show_default=True, help="JSON Lines, one JSON array, or CSV (UTF-8 with BOM and header, all quoted)")
@click.option("--output", metavar="FILE", help="write here (appears only when complete) instead of stdout")
@click.option("--with-vectors", is_flag=True, help="add each chunk's embedding as a list of floats")
@click.option("--scope", type=click.Choice(["session", "web", "minutes", "wiki", "all"]), default="all",
              show_default=True, help="wiki/** or raw/<kind>/** only")
@click.option("--include-superseded", is_flag=True, help="also export superseded and deprecated records")
@click.option("--project", help="only records whose frontmatter project is NAME")
@click.option("--tag", "tags", multiple=True, help="only records with this tag (repeatable: all must match)")
@click.option("--since", help="only records dated on or after YYYY-MM-DD")
@click.option("--until", help="only records dated on or before YYYY-MM-DD")
@click.option("--where", help='frontmatter filter as JSON, as in search.py: {"field": {"$gte": 3}}')
@memories_option
def export_command(output_format, output, with_vectors, scope, include_superseded, project, tags, since, until,
                   where, memories):
    """Export the indexed chunks with their metadata for other tools.

    Each chunk: path, relpath, kind, title, status, tags, project, date, chunk_index,
    start_line, end_line, tokens (its term count), content_hash (SHA-256 of the text) and
    text; `vector` with --with-vectors. Rows stream from the database, so memory stays flat
    however large the index. The count goes to stderr."""
    from .api import Memories
    from .export import chunks, export

    filters = _filters(scope, include_superseded, project, tags, since, until, where)
    with Memories(_settings(memories)) as library:
        count = export(chunks(library.connection, library.root, filters, with_vectors), output_format, output)
    click.echo(f"exported {count} chunk(s)" + (f" to {output}" if output and output != "-" else ""), err=True)


# --- db ------------------------------------------------------------------------------------------

@_command("  db.py status\n  db.py start\n  db.py stop", DATABASE_ENVIRONMENT_HELP)
@click.argument("action", type=click.Choice(["start", "stop", "status"]))
def db_command(action):
    """Start, stop or check the embedded PostgreSQL server (used when no database URL is set).

    search.py and index.py start it on demand and leave it running, so a search only
    connects to its socket."""
    from .database import EmbeddedServer, describe

    settings = Settings.from_env()
    server = EmbeddedServer(settings.data_dir)
    if settings.database_url and action != "status":
        click.echo(f"db.py: note: MEMORIES_DATABASE_URL/COCOINDEX_DATABASE_URL is set "
                   f"({describe(settings.database_url)}); the embedded server is not used", err=True)
    if action == "start":
        click.echo(server.start())
    elif action == "stop":
        from . import daemon

        daemon.stop()  # its connections would break anyway
        click.echo("stopped" if server.stop() else "not running")
    else:
        url = server.running_url()
        click.echo(f"running: {url}" if url else f"not running (data in {server.pgdata})")


# --- eval ----------------------------------------------------------------------------------------

EVAL_EXAMPLES = """\
  eval.py ../shared/eval/jsquad-dev --split dev --limit-queries 500
  eval.py ../shared/eval/scifact-train --split train --json
  eval.py DATASET --split test --modes semantic,hybrid,hybrid:rrf-equal,hybrid:weighted
  eval.py DATASET --split test --compare hybrid:rrf-equal,hybrid
  eval.py DATASET --split test --save before.json     # then, after a tokenizer change:
  eval.py DATASET --split test --against before.json"""


@_command(EVAL_EXAMPLES)
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--split", required=True, help="the qrels file to score against: qrels/SPLIT.tsv")
@click.option("--modes", default=None, help="comma-separated: keyword, semantic, hybrid, rerank, each optionally "
                                             "with :OPTION[+OPTION...], OPTION a fusion (rrf, rrf-equal, convex, "
                                             "convex-equal, weighted, weighted-equal) (default: keyword,semantic,"
                                             "hybrid, and rerank with a Voyage key)")
@click.option("--compare", metavar="A,B", help="also run modes A and B and count the queries B wins and loses "
                                               "against A (nDCG@10)")
@click.option("--save", "save_path", type=click.Path(dir_okay=False), help="write the report with every query's "
                                                                            "nDCG@10 to FILE (JSON)")
@click.option("--against", "against_path", type=click.Path(exists=True, dir_okay=False),
              help="compare each mode with the same mode in a report saved by --save (another build or version)")
@click.option("--limit-queries", type=click.IntRange(min=1), help="score a sample of N queries (fixed seed)")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def eval_command(dataset, split, modes, compare, save_path, against_path, limit_queries, as_json):
    """Measure retrieval quality on a BEIR-layout set (corpus.jsonl, queries.jsonl, qrels/).

    Writes the documents as a memories directory in a temporary folder, indexes it with the
    real indexer (the embedding cache makes re-runs cheap), runs every query through the same
    search code as search.py, and prints nDCG@10, Recall@10, Recall@100, MRR@10 and the median
    query time per mode; with --compare or --against, each configuration's gain over the other
    with its per-query wins, losses and ties. The @10 figures and the time are those of a search
    for ten results, as search.py makes by default; Recall@100, of a search for 100."""
    import json
    from pathlib import Path

    from .evaluation import compare_reports, evaluate, parse_mode
    from .progress import Progress
    from .render import as_json as to_json
    from .reports import eval_text

    settings = Settings.from_env()
    chosen = modes.split(",") if modes else ["keyword", "semantic", "hybrid"] + (
        ["rerank"] if settings.voyage_api_key else [])
    pair = compare.split(",") if compare else []
    if compare and len(pair) != 2:
        raise UsageError(f"--compare takes two modes, A,B: got {compare!r}")
    chosen += [mode for mode in pair if mode not in chosen]
    for mode in chosen:
        parse_mode(mode)
    saved = None
    if against_path:
        try:
            saved = json.loads(Path(against_path).read_text(encoding="utf-8"))
            saved["per_query"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise UsageError(f"cannot read {against_path} as a report saved by --save ({error})") from None
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still drop the temporary index
    report = evaluate(settings, Path(dataset), split, chosen, limit_queries, progress=Progress())
    compare_reports(report, pair, saved)
    if save_path:
        Path(save_path).write_text(to_json(report.summary() | {"per_query": report.per_query}) + "\n",
                                   encoding="utf-8")
    click.echo(to_json(report.summary()) if as_json else eval_text(report))


# --- bench ---------------------------------------------------------------------------------------

BENCH_EXAMPLES = """\
  bench.py                                  # the full table (about 30 minutes on 2 cores)
  bench.py --sizes 20000 --runs 10 --json
  bench.py --skip indexing,first,freshness"""


@_command(BENCH_EXAMPLES)
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
    from .benchmark import Bench, Report
    from .render import as_json as to_json
    from .reports import bench_text

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


memory_search_group = click.Group(
    "memory-search", help="The same commands as the scripts: memory-search COMMAND --help.",
    context_settings={"help_option_names": ["-h", "--help"]},
    commands={"search": search_command, "similar": similar_command, "recent": recent_command, "index": index_command,
              "stats": stats_command, "db": db_command, "eval": eval_command, "bench": bench_command,
              "related": related_command, "export": export_command})


def main() -> None:
    """`memory-search <command>`."""
    run(memory_search_group, "memory-search")
