"""The MCP face: the library's calls as Model Context Protocol tools over stdio (official `mcp` SDK).

Tools return what the scripts print with --format json / --json, as text, and the same value as
structured content. A call with bad arguments is a JSON-RPC error -32602 (invalid params); a
failure the user can act on (no index, no database) is a tool result with is_error and one line;
anything unexpected is -32603 (internal error) with one line. The server keeps answering."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from .. import params
from ..config import Settings
from ..errors import (
    IndexMissing,
    MemorySearchError,
    ParameterError,
    UsageError,
    first_line,
    mask_secrets,
    quoted,
    require_text,
    shorten_quotes,
)
from ..render import as_json, hit_dict, record_dict
from ..resources import Resources
from .mcp_tools import HELP, INSTRUCTIONS, SERVER_NAME, TOOLS, schema
from .outcomes import outcome


def tool_list() -> list[types.Tool]:
    return [types.Tool(name=name, description=spec["description"], input_schema=schema(name),
                       annotations=types.ToolAnnotations(read_only_hint=name != "refresh_index",
                                                         open_world_hint=False))
            for name, spec in TOOLS.items()]


class ArgumentError(Exception):
    """The arguments do not fit the tool's schema: JSON-RPC -32602."""


def check_arguments(name: str, arguments: dict | None) -> dict:
    """The arguments when they fit the tool's JSON Schema, with text PostgreSQL and the model can take."""
    import jsonschema

    if name not in TOOLS:
        raise ArgumentError(f"unknown tool {quoted(name)}: use one of {', '.join(TOOLS)}")
    if arguments is not None and not isinstance(arguments, dict):
        raise ArgumentError(f"invalid arguments for {name}: expected an object")
    arguments = dict(arguments or {})
    try:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema(name)).iter_errors(arguments))
    except RecursionError:
        raise ArgumentError(f"invalid arguments for {name}: nested too deeply") from None
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path)
        problem = shorten_quotes(error.message)
        raise ArgumentError(f"invalid arguments for {name}: {where + ': ' if where else ''}{problem}")
    for key, value in arguments.items():  # text PostgreSQL and the model can take: UTF-8, no NUL
        for text in (value if isinstance(value, list) else [value]):
            if isinstance(text, str):
                try:
                    require_text(text, key)
                except UsageError as problem:
                    raise ArgumentError(f"invalid arguments for {name}: {problem}") from None
    return arguments


# --- the tools ------------------------------------------------------------------------------------

class Tools:
    """Each tool as a plain function of its arguments; each call opens the memories over shared resources."""

    def __init__(self, settings: Settings, resources: Resources):
        self.settings, self.resources = settings, resources

    def call(self, name: str, arguments: dict):
        try:
            return getattr(self, name.replace(".", "_"))(**arguments)
        except ParameterError as error:
            raise UsageError(error.spelled(error.parameter)) from None

    def _open(self):
        return self.resources.open(self.settings)

    def search(self, query, **given):
        values = params.check(given, ("top", *params.FILTER_NAMES, "time", "mode", "min_score"))
        notes = []
        with self.resources.open(self.settings, warn=notes.append) as memories:
            hits = memories.search(query, top=values["top"], filters=params.filters(values), mode=values["mode"],
                                   min_score=values["min_score"], time=values["time"])
        return [hit_dict(hit, window=hits.window) | ({"note": notes[0]} if notes else {}) for hit in hits]

    def refresh_index(self):
        with self._open() as memories:
            started = memories.index_in_background()
            try:
                status = memories.status()
            except IndexMissing:
                status = {"memories_dir": str(self.settings.memories_root), "files": 0, "chunks": 0}
        return {"started": started, "note": "index.py runs in the background: new and changed files become "
                                            "searchable by keywords within seconds, by meaning once embedded"
                if started else "an index run started less than a minute ago is still at work", **status}

    def similar(self, path, **given):
        values = params.check(given, ("top", *params.FILTER_NAMES, "min_score"))
        with self._open() as memories:
            hits = memories.similar(path, top=values["top"], filters=params.filters(values),
                                    min_score=values["min_score"])
        return [hit_dict(hit) for hit in hits]

    def recent(self, **given):
        values = params.check(given, ("kind", "top", "project", "days", "since", "until"))
        notes = []
        with self.resources.open(self.settings, warn=notes.append) as memories:
            records = memories.recent(**values)
        return [record_dict(record) | ({"note": notes[0]} if notes else {}) for record in records]

    def index_status(self):
        with self._open() as memories:
            return memories.status()

    def read_memory(self, path, start_line=1, end_line=None):
        with self._open() as memories:
            return memories.read(path, start_line, end_line).text

    def knowledge_search(self, query, limit=10, workspace=None, **metadata):
        filters = params.knowledge_filters(workspace, metadata)
        with self._open() as memories:
            hits = memories.search(query, top=limit, filters=filters)
        return [knowledge_result(hit) for hit in hits]


_TIMESTAMP_KEYS = ("ended_at", "updated", "created", "date", "started_at")


def knowledge_result(hit) -> dict:
    """A hit in the shape of a knowledge-base result: id, score, content, metadata, timestamp."""
    record = hit.record
    metadata = dict(record.frontmatter)
    metadata.update(path=hit.path, title=record.title, kind=record.kind, status=record.status,
                    start_line=hit.start_line, end_line=hit.end_line)
    if record.frontmatter.get("project") is not None:
        metadata["workspace"] = record.frontmatter["project"]
    timestamp = next((str(record.frontmatter[key]) for key in _TIMESTAMP_KEYS if record.frontmatter.get(key)),
                     record.date.isoformat() if record.date else None)
    return {"id": hit.path, "score": hit.score, "content": hit.chunk_text, "metadata": metadata,
            "timestamp": timestamp}


# --- the server -----------------------------------------------------------------------------------

class KnowledgeSearchParams(types.RequestParams):
    """The seed's `knowledge.search` JSON-RPC params; validation failures are -32602."""

    model_config = ConfigDict(extra="allow")  # unknown keys are reported by check_arguments
    query: str
    workspace: str | None = None
    agent: str | None = None
    issue_number: int | None = None
    task_type: str | None = None
    outcome: str | None = None
    limit: int = 10


def build_server(tools: Tools) -> Server:
    settings = tools.settings

    def masked(message: str) -> str:
        return mask_secrets(message, settings.voyage_api_key, settings.database_url)

    def run_tool(name: str, arguments: dict):
        """Blocking: one tool call. Raises MCPError for the protocol, returns (value, is_error)."""
        try:
            return tools.call(name, arguments), False
        except MemorySearchError as error:
            result = outcome(error)
            if result.tool_error:
                return masked(f"{name}: error: {error}"), True
            raise MCPError(result.jsonrpc, masked(f"{name}: {error}")) from None
        except Exception as error:  # never a traceback, never a dead server
            raise MCPError(outcome(error).jsonrpc,
                           masked(f"{name}: unexpected {type(error).__name__}: {first_line(error)}")) from None

    async def list_tools(ctx, request) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(ctx, request: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            arguments = check_arguments(request.name, request.arguments)
        except ArgumentError as error:
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
        value, failed = await anyio.to_thread.run_sync(run_tool, request.name, arguments)
        if failed:
            return types.CallToolResult(content=[types.TextContent(text=value)], is_error=True)
        text = value if isinstance(value, str) else as_json(value)
        structured = None if isinstance(value, str) else (value if isinstance(value, dict) else {"result": value})
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)

    async def knowledge_search(ctx, request: KnowledgeSearchParams) -> dict:
        arguments = request.model_dump(exclude={"meta"}, exclude_none=True)
        try:
            arguments = check_arguments("knowledge.search", arguments)
        except ArgumentError as error:
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
        value, failed = await anyio.to_thread.run_sync(run_tool, "knowledge.search", arguments)
        if failed:
            raise MCPError(types.INTERNAL_ERROR, value)
        return {"query": request.query, "results_count": len(value), "results": value}

    @asynccontextmanager
    async def lifespan(server):
        yield {}

    server = Server(SERVER_NAME, version=_version(), lifespan=lifespan,
                    instructions=INSTRUCTIONS,
                    on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_request_handler("knowledge.search", KnowledgeSearchParams, knowledge_search)
    return server


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("memory-search")
    except metadata.PackageNotFoundError:
        return "0"


INVALID_REQUEST, PARSE_ERROR = -32600, -32700
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')


def screen(line: str):
    """None for a line the SDK can take; else (id, code, message) of the JSON-RPC error it deserves. The SDK
    drops a message it cannot validate without a word, which leaves its client waiting for ever."""
    try:
        parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:
        problem = "the request does not fit JSON-RPC 2.0"
    else:  # an id the SDK cannot take makes it read the request as a notification, which gets no answer
        if isinstance(parsed, types.JSONRPCNotification) and '"id"' in line and "id" in json.loads(line):
            return None, INVALID_REQUEST, "the id must be a string or a number"
        return None
    try:
        message = json.loads(line)
    except RecursionError:
        message = None
        problem = "nested too deeply"
    except ValueError:
        found = _ID.search(line[:4096])  # an id before the part that does not parse
        if found is None:
            return None if not line.strip() else (None, PARSE_ERROR, "not JSON")
        return json.loads(found.group(1)), INVALID_REQUEST, "not valid JSON text (a lone surrogate, or cut short)"
    if message is None:
        found = _ID.search(line[:4096])
        return (json.loads(found.group(1)) if found else None), INVALID_REQUEST, problem
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None if isinstance(message, dict) and "method" in message else (
            _usable_id(message), INVALID_REQUEST, "not a JSON-RPC request")  # a notification: no reply is due
    if _usable_id(message) is None:
        return None, INVALID_REQUEST, "the id must be a string or a number"
    if not isinstance(message.get("method"), str) or message.get("jsonrpc") != "2.0":
        return message["id"], INVALID_REQUEST, "not a JSON-RPC 2.0 request"
    if not isinstance(message.get("params", {}), dict):
        return message["id"], types.INVALID_PARAMS, "invalid params: params must be an object"
    return message["id"], types.INVALID_PARAMS, "invalid params: a value of the wrong type, or text that is not UTF-8"


def _usable_id(message):
    identifier = message.get("id") if isinstance(message, dict) else None
    return identifier if isinstance(identifier, (str, int)) and not isinstance(identifier, bool) else None


class _ScreenedInput:
    """stdin's lines as the SDK reads them, less those it would drop: those get their JSON-RPC error here."""

    def __init__(self, lines):
        self.lines, self.replies = lines, None

    async def __aiter__(self):
        from mcp.shared.message import SessionMessage

        async for line in self.lines:
            problem = screen(line)
            if problem is None:
                yield line
            elif self.replies is not None:
                identifier, code, text = problem
                await self.replies.send(SessionMessage(types.JSONRPCError(
                    jsonrpc="2.0", id=identifier, error=types.ErrorData(code=code, message=text[:300]))))


def serve(settings: Settings) -> None:
    """Answer over stdin/stdout until the client hangs up; the model and a connection are loaded meanwhile, on
    another thread, so the client is answered at once and the first search is as fast as the next ones."""
    import threading

    resources = Resources()

    def warm_up():
        try:
            with resources.open(settings) as memories:
                memories.warm_up()
        except MemorySearchError as error:  # no index yet: every call will say so
            sys.stderr.write(f"mcp_server.py: warning: {mask_secrets(str(error))}\n")
        except Exception:  # noqa: BLE001 - the first call reports what is wrong
            pass

    threading.Thread(target=warm_up, daemon=True).start()
    server = build_server(Tools(settings, resources))

    async def main():
        stdin = _ScreenedInput(anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8",
                                                                errors="replace")))
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            stdin.replies = write_stream
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        resources.close()


def main(arguments: list[str] | None = None, prog: str = "mcp_server.py") -> None:
    """`scripts/mcp_server.py`, `memory-search mcp`: the environment variables are the scripts'; no arguments
    but --help."""
    arguments = sys.argv[1:] if arguments is None else arguments
    if any(argument in ("-h", "--help") for argument in arguments):
        sys.stdout.write(HELP.replace("mcp_server.py", prog))
        sys.exit(0)
    if arguments:
        sys.stderr.write(f"{prog}: error: no arguments are taken (got {quoted(arguments[0])}); "
                         f"configure it with MEMORIES_DIR and the other variables (see {prog} --help)\n")
        sys.exit(2)
    try:
        serve(Settings.from_env())
    except KeyboardInterrupt:
        sys.exit(130)
    except MemorySearchError as error:
        sys.stderr.write(f"{prog}: error: {mask_secrets(str(error))}\n")
        sys.exit(outcome(error).exit_code)
    except Exception as error:
        if os.environ.get("MEMORIES_DEBUG", "0") not in ("", "0"):
            raise
        sys.stderr.write(f"{prog}: error: unexpected {type(error).__name__}: {first_line(error)}\n")
        sys.exit(1)
