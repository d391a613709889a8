"""The commands of the scripts and of `memory-search`: parse, call the library, render, map errors to exit
codes. The click plumbing they share (Console, command, option, run) is console.py's."""

from __future__ import annotations

from typing import Any

import click

from .. import params
from ..config import DATABASE_ENVIRONMENT_HELP, RECENT_ENVIRONMENT_HELP, Settings
from ..errors import UsageError
from .console import (
    PATH_EXIT_CODES_HELP,
    Command,
    Console,
    Group,
    checked,
    command,
    exit_codes_help,
    format_option,
    memories_option,
    option,
    options,
    run,
    table_option,
)
from .outcomes import EXIT_FAILURE, EXIT_PARTIAL


def _filter_options(where_help: str):
    return options(option("project"), option("tags"), option("since"), option("until"),
                   option("where", help=where_help))


def _scope_and_format(superseded_help: str = params.PARAMETERS["include_superseded"].help):
    return options(option("scope"), option("include_superseded", help=superseded_help), format_option)


# --- search --------------------------------------------------------------------------------------

SEARCH_EXAMPLES = """\
  search.py "セッション要約の保存先"
  search.py "コミット規約" --scope wiki --top 5 --format json
  search.py "Jina Reader 仕様" --scope web
  search.py "recording" --include-superseded
  search.py "ERR_PGVECTOR_DIM_MISMATCH" --mode keyword --explain
  search.py "release plan" --since 2026-10-01 --where '{"project": {"$in": ["agents", "infra"]}}'"""
WHERE_OPERATORS = params.PARAMETERS["where"].help + "; operators $eq $ne $gt $gte $lt $lte $in $nin"


@command(SEARCH_EXAMPLES)
@click.argument("query")
@option("top")
@_scope_and_format()
@click.option("--no-dedupe", is_flag=True, help="return every matching chunk, not one best chunk per file")
@option("mode")
@_filter_options(WHERE_OPERATORS)
@option("time")
@option("min_score")
@click.option("--explain", is_flag=True, help="show each leg's rank and score for every hit")
@click.option("--rerank/--no-rerank", default=None,
              help="rerank with Voyage rerank-2.5 (default: on when VOYAGE_API_KEY is set)")
@table_option
@click.option("--no-daemon", is_flag=True, help="do not use the warm helper process")
@memories_option
@click.pass_obj
def search_command(console: Console, query, output, no_dedupe, explain, rerank, table, no_daemon, memories, **given):
    """Search the memories for QUERY (natural language, Japanese or English, up to 2,000 characters).

    Prints the best chunk of each matching file, best first, as Markdown or JSON.
    A snippet is a lead: read the file before quoting it."""
    from ..render import hits_json, hits_markdown, window_text

    values = checked(given, ("top", "mode", "min_score", "time", *params.FILTER_NAMES))
    settings = console.settings(memories, table, daemon=False if no_daemon else None)
    with console.open(settings, warn=console.warn) as memories_:
        hits = memories_.search(query, top=values["top"], mode=values["mode"], filters=params.filters(values),
                                dedupe=not no_dedupe, min_score=values["min_score"], time=values["time"],
                                rerank=rerank)
    if hits.window is not None:
        console.err(f"{console.prog}: note: {window_text(hits.window)} (--no-time searches every date)")
    console.out(hits_json(hits, explain) if output == "json" else hits_markdown(hits, explain))


# --- similar -------------------------------------------------------------------------------------

SIMILAR_EXAMPLES = """\
  similar.py raw/session/2026-10-14/213305_3f9a1c2e_9d8c7b6a.md
  similar.py ~/memories/wiki/search/embedding-model.md --scope session --top 5 --format json
  similar.py wiki/dev/commit-conventions.md --include-superseded --top 10   # the 2025 style it replaced too"""


@command(SIMILAR_EXAMPLES, exit_codes=PATH_EXIT_CODES_HELP)
@click.argument("path")
@option("top", help="how many files to return, 1..100")
@_scope_and_format()
@_filter_options(params.PARAMETERS["where"].help)
@option("min_score", help="drop hits whose cosine similarity is below this")
@click.option("--explain", is_flag=True, help="show the semantic rank and score, and the line range")
@table_option
@memories_option
@click.pass_obj
def similar_command(console: Console, path, output, explain, table, memories, **given):
    """List the memories closest in meaning to the memory at PATH.

    PATH is absolute or relative to the memories directory. Its meaning is the mean of its
    chunks' vectors (its whole text, not its title); the memory itself is left out, and each
    file appears once. Same output as search.py."""
    from ..render import hits_json, hits_markdown

    values = checked(given, ("top", "min_score", *params.FILTER_NAMES))
    settings = console.settings(memories, table)
    with console.open(settings, warn=console.warn) as memories_:
        hits = memories_.similar(console.memory_path(path, settings), top=values["top"],
                                 filters=params.filters(values), min_score=values["min_score"])
    console.out(hits_json(hits, explain) if output == "json" else hits_markdown(hits, explain))


# --- recent --------------------------------------------------------------------------------------

RECENT_EXAMPLES = """\
  recent.py --kind session --top 5
  recent.py --kind session --project agents --days 7
  recent.py --kind all --since 先週
  recent.py --since "last monday" --until yesterday
  recent.py --kind web --top 10 --format json
  recent.py --kind all --format paths"""


@command(RECENT_EXAMPLES, RECENT_ENVIRONMENT_HELP, exit_codes_help(
    "bad flag or date", "the memories directory is missing", "a memories directory that cannot be read"))
@option("kind", help=None)
@option("top", help="how many records, 1..100")
@option("project")
@option("days")
@option("since", help="only date folders on or after YYYY-MM-DD, or the start of 先週, last monday...")
@option("until", help="only date folders on or before YYYY-MM-DD, or the end of 先週, yesterday...")
@click.option("--format", "output", type=click.Choice(["markdown", "json", "paths"]), default="markdown",
              show_default=True)
@memories_option
@click.pass_obj
def recent_command(console: Console, output, memories, **given):
    """List the newest records under raw/<kind>/YYYY-MM-DD/HHMMSS_*.md, newest first.

    Reads the files only: no database and no model."""
    from ..render import records_json, records_markdown, records_paths

    values = checked(given, ("kind", "top", "project", "days", "since", "until"))
    records = console.open(console.settings(memories), warn=console.warn).recent(**values)
    if output == "json":
        console.out(records_json(records))
    elif output == "paths":
        if records:
            console.out(records_paths(records))
    else:
        console.out(records_markdown(records))


# --- index ---------------------------------------------------------------------------------------

INDEX_EXAMPLES = """\
  index.py                          # bring the index up to date
  index.py --memories ~/memories --json
  index.py --dry-run                # list what would change
  index.py --rebuild                # start over (cached embeddings are reused)
  index.py --exclude 'raw/web/**'   # on top of trashbox/**, **/_*.md, **/.git/**, dot-files
  index.py --reset-selection        # forget --include/--exclude: index every memory again
  index.py --watch                  # keep the index fresh while files change"""


@command(INDEX_EXAMPLES, exit_codes=exit_codes_help(
    "bad flag", "the memories directory is missing or cannot be read\n     (the index is left as it is)",
    "database down or its disk full, embedding service, another\n     index run under way, a rebuild that cannot "
    "read every\n     indexed file",
    "  4  the index is up to date except for files that could not be\n     indexed or reached (each listed with its "
    "reason; those\n     reached before keep what the index holds of them), or\n     that lie under a folder that "
    "lists empty or is a link now\n     (kept: --allow-removal drops them)",
    success="the index is up to date"))
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
@click.option("--allow-removal", is_flag=True,
              help="drop what the index holds under a folder that lists empty or is a link now (kept otherwise, "
                   "as a drive that is not mounted)")
@click.option("--progress", "show_progress", is_flag=True,
              help="report progress on stderr even when it is not a terminal (a line every few seconds)")
@memories_option
@click.pass_obj
def index_command(console: Console, rebuild, include, exclude, reset_selection, dry_run, as_json, watch, no_wait,
                  allow_removal, show_progress, memories):
    """Build or refresh the search index of the memories directory.

    Only new and changed files are read and embedded; deleted files leave the index. A folder
    that cannot be listed or a file that cannot be read right now (permissions, an I/O error,
    a dropped mount) is not taken for deleted: what the index holds of it stays, each file is
    listed (exit 4), and the next run reads it once it can. So is a folder that lists empty or
    is a link now (an unmounted drive's mount point) unless --allow-removal says its files
    were removed on purpose. Each file's rows are replaced in
    one transaction, so a search never sees half a file and an interrupted run loses nothing
    already written. Progress goes to stderr on a terminal (or anywhere, with --progress)."""
    from ..render import as_json as to_json, shown_path, stats_text
    from .progress import Progress

    settings = console.settings(memories)
    progress = Progress(console.stderr, lines=show_progress)
    if reset_selection:
        include, exclude = include or (), exclude or ()
    elif not include and not exclude:
        include = exclude = None  # the selection the index remembers
    library = console.open(settings)
    if dry_run:
        with library:
            plan = library.plan(include, exclude, allow_removal)
        planned: dict[str, Any] = {
            "new": [f.relpath for f in plan.new], "changed": [f.relpath for f in plan.changed],
            "deleted": [shown_path(path, settings.memories_root) for path in plan.deleted],
            "unchanged": len(plan.unchanged),
            "unreadable": [{"path": s.relpath, "reason": s.reason} for s in plan.bad],
            "kept": [{"path": path, "reason": reason} for path, reason in plan.unreachable]}
        if as_json:
            console.out(to_json(planned))
        else:
            for key in ("new", "changed", "deleted"):
                for path in planned[key]:
                    console.out(f"{key}\t{path}")
            for item in planned["kept"]:
                console.out(f"kept\t{item['path']}")
            console.err(f"{len(plan.new)} new, {len(plan.changed)} changed (by size or time), "
                        f"{len(plan.deleted)} deleted, {len(plan.unchanged)} unchanged"
                        + (f", {len(plan.unreachable)} kept (cannot be reached now)" if plan.unreachable else ""))
        return None

    def report(stats):
        if as_json:
            console.out(to_json(stats.as_dict()))
        else:
            console.err(stats_text(stats))

    if watch:
        console.err(f"watching {settings.memories_root} (Ctrl-C to stop)")
        library.watch(include=include, exclude=exclude, on_run=report, progress=progress, on_problem=console.warn,
                      allow_removal=allow_removal)
        return None
    stats = library.index(rebuild=rebuild, include=include, exclude=exclude, wait=not no_wait, progress=progress,
                          allow_removal=allow_removal)
    report(stats)
    return EXIT_PARTIAL if stats.failed else None


# --- stats ---------------------------------------------------------------------------------------

STATS_EXAMPLES = """\
  stats.py
  stats.py --json
  stats.py --verify                 # prove the index matches the directory (exit 1 if not)
  stats.py --searches               # the search log: count, p50/p95, queries that found nothing"""


@command(STATS_EXAMPLES, exit_codes=exit_codes_help(
    "bad flag", "the memories directory or the index is missing, or the\n     directory cannot be read",
    failure="database; with --verify: the index and the directory differ"))
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
@click.option("--verify", is_flag=True, help="check every file, chunk, posting and count against the directory; "
                                             "exit 1 and name the repair when something is wrong")
@click.option("--searches", is_flag=True, help="summarize the search log (MEMORIES_SEARCH_LOG=1); no database")
@memories_option
@click.pass_obj
def stats_command(console: Console, as_json, verify, searches, memories):
    """Show what the index holds and how far it is behind the memories directory.

    Also how many chunks wait for their embeddings (found by keyword, not yet by meaning), the
    stale files by name, whether an indexer is running now (and how far it got) and how many
    links the memories hold. "up to date" only when nothing is new, changed or deleted and no
    chunk waits."""
    from ..render import as_json as to_json, search_summary_text, status_text, verification_text

    settings = console.settings(memories)
    if verify and searches:
        raise UsageError("--verify and --searches are separate reports: give one")
    if searches:
        summary = console.open(settings).search_summary()
        console.out(to_json(summary) if as_json else search_summary_text(summary))
        return None
    with console.open(settings) as library:
        if verify:
            result = library.verify()
            console.out(to_json(result.as_dict()) if as_json else verification_text(result))
            raise click.exceptions.Exit(0 if result.clean else EXIT_FAILURE)
        status = library.status()
    console.out(to_json(status) if as_json else status_text(status))
    return None


# --- related -------------------------------------------------------------------------------------

RELATED_EXAMPLES = """\
  related.py wiki/dev/commit-conventions.md
  related.py "$MEMORIES_DIR/raw/session/2026-11-05/091130_7c2d9e41_2a3b4c5d.md" --top 5 --format json
  related.py wiki/ops/dev-setup.md --include-superseded"""


@command(RELATED_EXAMPLES, exit_codes=PATH_EXIT_CODES_HELP)
@click.argument("path")
@option("top", help="how many memories, 1..100")
@format_option
@option("scope")
@option("include_superseded", help="also list superseded and deprecated records")
@option("project")
@option("tags")
@memories_option
@click.pass_obj
def related_command(console: Console, path, output, memories, **given):
    """List what the memory at PATH is connected to, with the reason for each.

    PATH is absolute, relative to the working directory, or relative to the memories
    directory. Memories it links to (`links to`) and that link to it (`linked from`) come
    first, then the nearest in meaning (`similar 0.83`); superseded records are left out
    unless asked for, as in search."""
    from ..render import related_json, related_markdown

    values = checked(given, ("top", "scope", "include_superseded", "project", "tags"))
    settings = console.settings(memories)
    with console.open(settings, warn=console.warn) as library:
        entries = library.related(console.memory_path(path, settings), top=values["top"],
                                  filters=params.filters(values))
    console.out(related_json(entries) if output == "json" else related_markdown(entries))


# --- export --------------------------------------------------------------------------------------

EXPORT_EXAMPLES = """\
  export.py > chunks.jsonl
  export.py --format csv --output chunks.csv --scope wiki
  export.py --format json --project agents --since 2026-10-01 --with-vectors"""


@command(EXPORT_EXAMPLES, exit_codes=exit_codes_help(
    "bad flag or filter, an output that is not a regular file", failure="database, the output cannot be written"))
@click.option("--format", "output_format", type=click.Choice(["jsonl", "json", "csv"]), default="jsonl",
              show_default=True, help="JSON Lines, one JSON array, or CSV (UTF-8, a header, every cell quoted; "
                                      "a byte-order mark only in a file written with --output, for spreadsheets, "
                                      "never on stdout)")
@click.option("--output", metavar="FILE", help="write here (appears only when complete) instead of stdout")
@click.option("--with-vectors", is_flag=True, help="add each chunk's embedding as a list of floats")
@option("scope")
@click.option("--active-only", is_flag=True, help="leave superseded and deprecated records out (by default "
                                                  "every record is exported)")
@click.option("--include-superseded", is_flag=True, help="accepted as in search.py; changes nothing: superseded "
                                                         "and deprecated records are exported by default")
@_filter_options('frontmatter filter as JSON, as in search.py: {"field": {"$gte": 3}}')
@memories_option
@click.pass_obj
def export_command(console: Console, output_format, output, with_vectors, active_only, include_superseded, memories,
                   **given):
    """Export the indexed chunks with their metadata for other tools.

    Every indexed chunk, superseded and deprecated records included, unless a filter leaves
    some out. Each chunk: path, relpath, kind, title, status, tags, project, date,
    chunk_index, start_line, end_line, tokens (its term count), content_hash (SHA-256 of the
    text) and text; `vector` with --with-vectors. In CSV a cell starting with = + - @, a tab
    or a carriage return gets a leading ' so a spreadsheet shows it as text. Rows stream from
    the database, so memory stays flat however large the index. --output writes a new file,
    or replaces a regular one once complete; it never writes through a symlink, a FIFO or a
    device. The count goes to stderr."""
    if active_only and include_superseded:
        raise UsageError("--active-only and --include-superseded contradict each other: give one")
    given["include_superseded"] = not active_only
    values = checked(given, params.FILTER_NAMES)
    with console.open(console.settings(memories)) as library:
        to = console.absolute(output) if output and output != "-" else console.stdout
        count = library.write_export(output_format, to, params.filters(values), with_vectors)
    console.err(f"exported {count} chunk(s)" + (f" to {output}" if output and output != "-" else ""))


# --- db ------------------------------------------------------------------------------------------

DB_EXAMPLES = """\
  db.py status
  db.py start
  db.py stop
  db.py indexes                     # every memories index in the database, from any machine
  db.py grant-read searcher --password-file ~/.config/memory-search/searcher-password"""


@click.group(cls=Group, epilog="\b\nExamples:\n" + DB_EXAMPLES + "\n\n" + DATABASE_ENVIRONMENT_HELP + "\n\n"
             + exit_codes_help("bad flag or role name", None, "the server did not start or stop, database",
                                             success="success"),
             context_settings={"help_option_names": ["-h", "--help"]})
def db_command():
    """Start, stop or check the embedded PostgreSQL server (used when no database URL is set), list the
    indexes a database holds, and make a role that may only read them.

    search.py and index.py start the embedded server on demand and leave it running, so a search only
    connects to its socket."""


def _server(console: Console, action: str):
    from ..api import describe_database, embedded_server

    settings = Settings.from_env(console.environ, console.cwd)
    if settings.database_url and action != "status":
        console.err(f"{console.prog}: note: MEMORIES_DATABASE_URL/COCOINDEX_DATABASE_URL is set "
                    f"({describe_database(settings.database_url)}); the embedded server is not used")
    return embedded_server(settings)


@db_command.command("start", cls=Command)
@click.pass_obj
def db_start(console: Console):
    """Start the embedded server (initializing its data on first use) and print its URL."""
    console.out(_server(console, "start").start())


@db_command.command("stop", cls=Command)
@click.pass_obj
def db_stop(console: Console):
    """Stop the embedded server and end the warm helpers, answering or not (their connections would break
    anyway)."""
    from .helper_processes import stop

    server = _server(console, "stop")
    stop(console.environ)
    console.out("stopped" if server.stop() else "not running")


@db_command.command("status", cls=Command)
@click.pass_obj
def db_status(console: Console):
    """Whether the embedded server runs, and where."""
    server = _server(console, "status")
    url = server.running_url()
    console.out(f"running: {url}" if url else f"not running (data in {server.pgdata})")


@db_command.command("indexes", cls=Command)
@click.option("--json", "as_json", is_flag=True, help="print them as JSON")
@click.pass_obj
def db_indexes(console: Console, as_json):
    """List the memories indexes in the database: each machine's index of each memories folder, with the
    prefix serve.py's --db NAME=index:PREFIX takes."""
    from ..api import indexes
    from ..render import as_json as to_json

    found = indexes(Settings.from_env(console.environ, console.cwd))
    if as_json:
        console.out(to_json([entry.as_dict() for entry in found]))
        return
    for entry in found:
        if not entry.readable:
            console.out(f"{entry.prefix}\t(this role may not read it: the database owner can run grant-read)")
            continue
        console.out(f"{entry.prefix}\t{entry.host or '-'}:{entry.memories_dir}\t{entry.files} files\t"
                    f"{entry.chunks} chunks\t{entry.model}\tlast indexed {entry.last_indexed_at or 'never'}")
    if not found:
        console.err(f"{console.prog}: no memories index in this database yet")


@db_command.command("grant-read", cls=Command)
@click.argument("role")
@click.option("--password-file", metavar="FILE", help="create the role (or set its password) with the password in "
                                                      "FILE, so it can log in")
@click.option("--writer", "writers", multiple=True, metavar="ROLE",
              help="also keep readable the tables this role creates later: an indexer role that has not indexed "
                   "yet (repeatable)")
@click.pass_obj
def db_grant_read(console: Console, role, password_file, writers):
    """Let ROLE read the memories indexes, and nothing else: the role a search server connects with.

    ROLE gets SELECT on every memsearch table, and the memsearch tables the writer roles create later (a new
    memories folder's index, index.py --rebuild) are granted to it by index.py as it makes them (the table
    memsearch_readers records who reads whose): ROLE reads no other table a writer makes. The writers are the roles
    that own memsearch tables now, plus each --writer (or, with neither, the role running this); run it again
    after adding an indexer role. Run it as the database owner or a superuser: creating ROLE needs CREATEROLE,
    and granting on a writer's tables needs that writer's privileges (a superuser, or a member of the writer
    role). An indexer role usually lacks CREATEROLE and the other indexers' privileges; the error then says
    which role must run it."""
    from ..api import grant_read

    password = None
    if password_file:
        try:
            with open(console.absolute(password_file), encoding="utf-8") as handle:
                password = handle.read().strip()
        except OSError as error:
            raise UsageError(f"cannot read {password_file} ({error.strerror})") from None
    for statement in grant_read(Settings.from_env(console.environ, console.cwd), role, password, writers):
        console.out(statement)


# --- the long-running faces ----------------------------------------------------------------------

@click.command("mcp", cls=Command, context_settings={"help_option_names": ["-h", "--help"],
                                                    "ignore_unknown_options": True},
               add_help_option=False)
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def mcp_command(arguments):
    """Serve the memories to MCP clients over stdio (see memory-search mcp --help)."""
    from .mcp_server import main

    main(list(arguments), prog="memory-search mcp")


def _serve_command():
    from .serve_command import serve_command

    return serve_command


class _Lazy(Group):
    """The memory-search group: the serve command is loaded only when asked for (it imports Starlette)."""

    def get_command(self, ctx, name):
        if name == "serve":
            return _serve_command()
        return super().get_command(ctx, name)

    def list_commands(self, ctx):
        return sorted([*super().list_commands(ctx), "serve"])


memory_search_group = _Lazy(
    "memory-search", help="The same commands as the scripts: memory-search COMMAND --help.",
    context_settings={"help_option_names": ["-h", "--help"]},
    commands={"search": search_command, "similar": similar_command, "recent": recent_command, "index": index_command,
              "stats": stats_command, "db": db_command, "related": related_command, "export": export_command,
              "mcp": mcp_command})

# The scripts: name -> the command each runs.
COMMANDS = {"search": search_command, "similar": similar_command, "recent": recent_command, "index": index_command,
            "stats": stats_command, "db": db_command, "related": related_command, "export": export_command}


def main() -> None:
    """`memory-search <command>`."""
    run(memory_search_group, "memory-search")
