"""The HTTP face: a read-only API (Starlette on Uvicorn), on 127.0.0.1 unless told otherwise (then with a token).

Routes (GET only): /api/health, /api/list, /api/search, and the deprecated /api/keyword and
/api/semantic, which are /api/search with a fixed target; /api/read returns a memory's lines; /graph
draws the link graph (graph.py); / is the knowledge-base page (page.py: its JSON under /page/, and a
POST that refreshes the index); /mcp is the MCP server over Streamable HTTP. A "db" is a named index:
a memories directory and its table, or an index another machine builds (index:PREFIX). The default one
is MEMORIES_DIR's; more come from --db or from databases.json in the configuration folder. Both branches
of a search run at once, each on its own read-only connection, through the same search as search.py."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from .. import params
from ..api import semantic_cutoff
from ..config import DEFAULT_DB, Database, Settings, chosen_db, config_dir, databases_file, now
from ..errors import MemorySearchError, ParameterError, UsageError, first_line, mask_secrets, quoted
from ..resources import Resources
from .graph import graph_routes
from .outcomes import outcome
from .page import page_routes
from .team import signin_routes

DEFAULT_LIMIT, MAX_LIMIT = 10, params.MAX_TOP
TARGETS = ("keyword", "semantic")
WINDOW_HEADER = "X-Memory-Search-Window"  # the dates a query's time words named, with time=1
CONNECTIONS = 4  # read-only connections open at once, across every db
# /api/search's extensions beyond the seed's db, q, limit and target: the filters, as search.py has them.
SEARCH_EXTENSIONS = {"tag": "tags", **{name: name for name in params.FILTER_NAMES if name != "tags"}}


def registered(settings: Settings, flags: tuple[str, ...] = (), config: Path | None = None) -> list[Database]:
    """The default db, then databases.json's entries, then --db flags (a later name replaces an earlier one)."""
    started = now()
    databases = {DEFAULT_DB: Database(DEFAULT_DB, settings.memories_root, started)}
    databases.update(databases_file((config or config_dir()) / "databases.json", started))
    for flag in flags:
        name, _, target = flag.partition("=")
        if not name or not target:
            raise UsageError(f"--db {quoted(flag)}: use NAME=DIR or NAME=index:PREFIX")
        index = target.removeprefix("index:") if target.startswith("index:") else ""
        databases[name] = Database.of(name, index, "" if index else target, started)
    return list(databases.values())


def load(settings: Settings, databases: list[Database], resources: Resources, warn) -> None:
    """Open every registered db whose directory and index exist and that this database role may read; the others
    stay registered only, each named with the reason. An `index` db is read from the index alone: its memories
    are on the machine that builds it."""
    from ..api import database_refusal as refusal

    for database in databases:
        try:
            chosen = _settings_of(settings, database)
            with resources.open(chosen) as memories:
                memories.warm_up()
        except Exception as error:
            known = error if isinstance(error, MemorySearchError) else refusal(error)
            if known is None:
                raise
            warn(f"db {quoted(database.name)} not loaded: {known}")
            continue
        database.settings = chosen


def _settings_of(settings: Settings, database: Database) -> Settings:
    if database.index is None:
        return settings.with_overrides(memories_dir=database.memories_dir)
    from ..api import served

    return served(settings, database.index)


# --- the application ------------------------------------------------------------------------------

def parse_limit(value: str | None) -> int:
    """1..100; missing, non-numeric, non-positive or over 100 falls back to 10 (the seed's contract)."""
    try:
        limit = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_LIMIT
    return limit if 1 <= limit <= MAX_LIMIT else DEFAULT_LIMIT


def group_by_source(hits) -> list[dict]:
    """Hits (chunks, best first) grouped by file, in the order each file first appears."""
    groups: dict[str, list[dict]] = {}
    for hit in hits:
        groups.setdefault(hit.path, []).append({"chunk": hit.chunk_index, "content": hit.chunk_text})
    return [{"source": source, "matches": matches} for source, matches in groups.items()]


def query_values(request: Request, names: dict[str, str]) -> dict:
    """The request parameters `names` (query name -> parameter name) of an HTTP query, checked; a bad one is
    ParameterError spelled as the query names it."""
    texts = {parameter: request.query_params.getlist(query) for query, parameter in names.items()}
    spelled = {parameter: query for query, parameter in names.items()}
    try:
        return params.check(params.from_texts(texts, names.values()), names.values())
    except ParameterError as error:
        raise UsageError(error.spelled(spelled.get(error.parameter, error.parameter))) from None


def error_response(error: BaseException, secrets: tuple = ()) -> JSONResponse:
    """{"error": one line} with the status the error's class calls for; our own unexpected faults say
    nothing of their insides."""
    while isinstance(error, BaseExceptionGroup):  # its first failure
        error = error.exceptions[0]
    status = outcome(error).http
    if isinstance(error, MemorySearchError):
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
    else:
        message = "internal error: see the server's log"
    return JSONResponse({"error": mask_secrets(message, *secrets)}, status_code=status)


def create_app(databases: list[Database], resources: Resources, secrets: tuple = (), mcp: bool = False,
               refresh: bool = False) -> Starlette:
    """The application; `secrets` (the Voyage key, the database URL) never appear in an error. With `mcp`, the
    default db's MCP tools are served at /mcp over Streamable HTTP, the same tools and schemas as mcp_server.py
    (behind http_guard.Guard, which checks Host and Origin for every route). refresh: whether the page at /
    may start index runs (page.py)."""
    by_name = {database.name: database for database in databases}
    loaded_settings = {db.name: db.settings for db in databases if db.settings is not None}

    def loaded(name: str | None) -> Database:
        return by_name[chosen_db(loaded_settings, name, api=True)[0]]

    async def answer(work):
        try:
            return await work()
        except Exception as error:
            return error_response(error, secrets)

    async def health(request: Request):
        return PlainTextResponse("OK")

    async def listing(request: Request):
        return JSONResponse({"loaded": [db.name for db in databases if db.settings is not None],
                             "registered": [{"db": db.name, "createAt": db.created_at} for db in databases]})

    def searcher(fixed_target: str | None):
        async def handle(request: Request):
            async def work():
                query_params = request.query_params
                database = loaded(query_params.get("db"))
                query = query_values(request, {"q": "query"})["query"]
                if not query or not query.strip():
                    raise UsageError("q is required")
                target = fixed_target or query_params.get("target") or None
                if target is not None and target not in TARGETS:
                    raise UsageError(f"target must be keyword or semantic (got {quoted(target)})")
                limit = parse_limit(query_params.get("limit"))
                filters = params.filters(query_values(request, SEARCH_EXTENSIONS))
                # An extension: off unless asked for, so the seed's routes answer as they always did.
                read_time = "time" in query_params and query_values(request, {"time": "time"})["time"]
                branches = [target] if target else list(TARGETS)
                results: dict[str, list] = {}
                windows = []

                def search(branch: str):
                    with resources.open(database.settings) as memories:
                        hits = memories.search(query, top=limit, mode=branch, dedupe=False, filters=filters,
                                               time=read_time,
                                               min_score=semantic_cutoff() if branch == "semantic" else None)
                    windows.append(hits.window)
                    return hits

                async def run(branch: str):
                    results[branch] = group_by_source(await anyio.to_thread.run_sync(search, branch))

                async with anyio.create_task_group() as group:  # one failing branch cancels the other
                    for branch in branches:
                        group.start_soon(run, branch)
                window = next((window for window in windows if window is not None), None)
                # The body keeps the seed's shape; the window read from the query goes in a header (ASCII JSON).
                headers = {WINDOW_HEADER: json.dumps(window.as_dict())} if window else None
                return JSONResponse({branch: results[branch] for branch in branches}, headers=headers)

            return await answer(work)

        return handle

    async def read(request: Request):
        async def work():
            database = loaded(request.query_params.get("db"))
            values = query_values(request, {"path": "path", "start_line": "start_line", "end_line": "end_line"})
            if not values["path"]:
                raise UsageError("path is required")

            def passage():
                with resources.open(database.settings) as memories:
                    return memories.read(values["path"], values["start_line"], values["end_line"])

            found = await anyio.to_thread.run_sync(passage)
            return JSONResponse({"path": found.path, "start_line": found.start_line, "end_line": found.end_line,
                                 "text": found.text})

        return await answer(work)

    async def http_error(request: Request, error: HTTPException):
        headers = getattr(error, "headers", None)
        return JSONResponse({"error": error.detail}, status_code=error.status_code, headers=headers)

    async def server_error(request: Request, error: Exception):
        return error_response(error, secrets)

    routes = [
        Route("/api/health", health, methods=["GET"]),
        Route("/api/list", listing, methods=["GET"]),
        Route("/api/search", searcher(None), methods=["GET"]),
        Route("/api/keyword", searcher("keyword"), methods=["GET"]),  # deprecated: use /api/search?target=
        Route("/api/semantic", searcher("semantic"), methods=["GET"]),  # deprecated: use /api/search?target=
        Route("/api/read", read, methods=["GET"]),
    ]
    routes += graph_routes(loaded_settings, resources, answer, query_values)
    routes += page_routes(loaded_settings, resources, answer, query_values, refresh)
    routes += signin_routes()
    lifespan = None
    served = [db.settings for db in databases if db.settings is not None]  # the default db first, when loaded
    if mcp and served:
        route, lifespan = mcp_route(served[0], resources)
        routes.append(route)
    # Each handler takes the class it handles; Starlette's type has every one take any Exception.
    handlers: dict[Any, Any] = {HTTPException: http_error, Exception: server_error}
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)


def mcp_route(settings: Settings, resources: Resources):
    """(the /mcp route, the lifespan that runs its sessions): the MCP SDK's Streamable HTTP transport over the
    same server mcp_server.py runs on stdio. Its sessions are capped per person and end when idle
    (http_guard.SessionCap); the Host and Origin checks are http_guard.Guard's, for every route alike."""
    from contextlib import asynccontextmanager

    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from .http_guard import MCP_IDLE_SECONDS, SessionCap
    from .mcp_server import Tools, build_server

    manager = StreamableHTTPSessionManager(
        app=build_server(Tools(settings, resources)), session_idle_timeout=MCP_IDLE_SECONDS,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))

    @asynccontextmanager
    async def lifespan(app):
        async with manager.run():
            yield

    return Route("/mcp", endpoint=SessionCap(manager, StreamableHTTPASGIApp(manager))), lifespan


# --- serving --------------------------------------------------------------------------------------

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise MemorySearchError(f"cannot listen on {host}:{port} ({first_line(error)}): "
                                "choose another --port, or leave it out for a free one") from None
    sock.listen(128)
    return sock


class EndpointFile:
    """The base URL in <config>/endpoint while the server runs (mode 0600, in a folder of mode 0700 when it
    makes it); removed on exit if still ours."""

    def __init__(self, url: str, directory: Path | None = None):
        self.url = url
        self.path = (directory or config_dir()) / "endpoint"

    def __enter__(self):
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_name(f".endpoint.{os.getpid()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(self.url + "\n")
        os.replace(temporary, self.path)
        return self

    def __exit__(self, *exc):
        try:
            if self.path.read_text(encoding="utf-8").strip() == self.url:
                self.path.unlink()
        except OSError:
            pass


def application(app, hosts, tokens=None):
    """The application as it is served: every answer with the security headers, behind the Host, Origin and
    token checks (http_guard). tokens: team.Tokens, or None on loopback without a token file. The page starts
    index runs for whoever reaches it: create `app` with refresh only on loopback or with tokens."""
    from . import http_guard

    return http_guard.SecurityHeaders(http_guard.Guard(app, hosts, tokens))


def serve(settings: Settings, host: str, port: int, db_flags: tuple[str, ...], say, token_file: Path | None = None,
          extra_hosts: tuple[str, ...] = ()) -> None:
    import signal
    import sys

    import uvicorn

    from . import http_guard

    if host not in LOOPBACK and token_file is None:
        raise UsageError(f"serving on {host}, beyond loopback, needs a token file: give --token-file FILE "
                         "(created with a random token when missing)")
    from .team import Tokens

    tokens = Tokens(token_file, warn=lambda message: http_guard.incident("%s", message)) \
        if token_file is not None else None
    # Uvicorn re-raises the signal that stopped it; exiting through Python lets the endpoint file go.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    databases = registered(settings, db_flags)
    sock = bind(host, port)
    resources = Resources(CONNECTIONS)
    try:
        load(settings, databases, resources, lambda message: say(f"warning: {message}"))
        bound = sock.getsockname()[1]
        url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
        hosts = http_guard.Hosts(host, bound, extra_hosts)
        app = application(create_app(databases, resources, (settings.voyage_api_key, settings.database_url),
                                     mcp=True, refresh=tokens is not None or host in LOOPBACK), hosts, tokens)
        protocol = type("Protocol", (http_guard.GuardedH11,), {"cap": http_guard.connection_cap()})
        config = uvicorn.Config(app, http=protocol, lifespan="on", timeout_graceful_shutdown=5, access_log=False,
                                log_config=http_guard.quiet_logging(sys.stderr), timeout_keep_alive=5,
                                backlog=http_guard.ACCEPT_BATCH)
        with EndpointFile(url) as endpoint:
            say(f"serving {', '.join(db.name for db in databases if db.settings) or 'no db'} at {url} "
                f"(written to {endpoint.path})" + ("; a bearer token is required" if tokens else "")
                + "; Ctrl-C to stop")
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        resources.close()
