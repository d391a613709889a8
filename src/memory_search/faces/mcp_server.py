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
from ..errors import MemorySearchError, ParameterError, UsageError, first_line, mask_secrets, require_text
from ..filters import Filters, where_conditions
from ..render import as_json, hit_dict, record_dict
from ..resources import Resources
from .outcomes import outcome

SERVER_NAME = "memory-search"


def _properties(*names: str, **descriptions) -> dict:
    """The JSON Schema of request parameters, from their one definition (params.py)."""
    return {name: params.PARAMETERS[name].schema(description=descriptions.get(name),
                                                 min_length=1 if name in ("query", "path") else None)
            for name in names}


TOOLS: dict[str, dict] = {
    "search": {
        "description": (
            "Search the user's Markdown memories - summaries of past coding sessions, archived web pages, meeting "
            "minutes and wiki pages, in Japanese and English - by meaning and keywords. Use it when the user asks "
            "what was decided, done or saved before, or when an answer may depend on earlier work. Returns a JSON "
            "list, best first, one entry per file: score, path, snippet (at most 200 characters: a lead, not a "
            "quotation - call read_memory with path, start_line and end_line before quoting), frontmatter, title, "
            "status, kind, date, start_line, end_line, stale, window. [] means nothing matched. Superseded and "
            "deprecated records are left out unless include_superseded is true. Time words in the query (先週, 昨日, "
            "3日前, yesterday, last week, Nov 20) limit the results to records dated then and are shown in each "
            "hit's window; ask with them rather than with since/until when the user speaks of time."),
        "properties": _properties("query", "top", *params.FILTER_NAMES, "time", "mode", "min_score"),
        "required": ["query"],
    },
    "recent": {
        "description": (
            "List the newest records by date - session summaries, archived web pages or meeting minutes - newest "
            "first, from the files themselves (no search). Use it for 'what did I do today', 'latest minutes', "
            "'recently archived pages'. Returns a JSON list of {date, time, ended_at, started_at, title, project, "
            "duration_minutes, tags, status, path, kind}; [] when nothing matched. Wiki pages are not listed."),
        "properties": _properties("kind", "top", "project", "days", "since", "until", top="How many (default 10)."),
        "required": [],
    },
    "similar": {
        "description": (
            "Find the memories closest in meaning to a given memory (by the meaning of its whole text, not its "
            "title): related sessions, the wiki page a session was about, earlier decisions on the same topic. "
            "path is a path a search or recent call returned, or a path relative to the memories directory; the "
            "memory itself is left out, one entry per file. Returns the same JSON list as the search tool. "
            "Superseded and deprecated records are left out unless include_superseded is true."),
        "properties": _properties("path", "top", *params.FILTER_NAMES, "min_score",
                                  path="The memory to start from: absolute path from a result, or relative to the "
                                       "memories directory.",
                                  top="How many files to return, best first (default 10).",
                                  min_score="Drop hits whose cosine similarity is below this."),
        "required": ["path"],
    },
    "read_memory": {
        "description": (
            "Read a memory file's text, to go beyond a search snippet before quoting or relying on it. path is a "
            "path a search or recent call returned, or a path relative to the memories directory; only memories "
            "(.md files) inside the memories directory can be read. start_line and end_line (1-based, inclusive) "
            "select lines; without them the whole file is returned (frontmatter included)."),
        "properties": _properties("path", "start_line", "end_line"),
        "required": ["path"],
    },
    "index_status": {
        "description": (
            "Report what the search index holds and how far it is behind the memories directory: files and "
            "chunks by kind and status, the embedding model, when it was last indexed, and how many files are "
            "new, changed or deleted since (pending). Use it when results look out of date."),
        "properties": {},
        "required": [],
    },
    # The seed's knowledge-base API (miyabi-knowledge): its own parameter names, mapped to frontmatter fields.
    "knowledge.search": {
        "description": (
            "Search the memories with the parameters of a knowledge-base API: query plus optional metadata "
            "filters, each matched against the memory file's YAML frontmatter: workspace -> `project`, agent -> "
            "`agent`, issue_number -> `issue_number`, task_type -> `task_type`, outcome -> `outcome` (equality; "
            "a list field matches when it contains the value). Returns a JSON list, best first, of {id (the "
            "file's absolute path), score, content (the matched chunk's text), metadata (the frontmatter plus "
            "path, title, kind, status, start_line, end_line, and workspace when project is set), timestamp (ISO "
            "date of the record, or null)}. Same search as the search tool: hybrid, superseded records hidden."),
        "properties": {
            "query": _properties("query", query="What to look for.")["query"],
            "workspace": {"type": "string", "description": "Frontmatter `project` equals this."},
            "agent": {"type": "string", "description": "Frontmatter `agent` equals this."},
            "issue_number": {"type": "integer", "minimum": 0, "description": "Frontmatter `issue_number` equals this."},
            "task_type": {"type": "string", "description": "Frontmatter `task_type` equals this."},
            "outcome": {"type": "string", "description": "Frontmatter `outcome` equals this (e.g. success, failed)."},
            "limit": {**_properties("top")["top"], "description": "Maximum results (default 10)."},
        },
        "required": ["query"],
    },
}

def tool_list() -> list[types.Tool]:
    tools = []
    for name, spec in TOOLS.items():
        schema = {"type": "object", "properties": spec["properties"], "required": spec["required"],
                  "additionalProperties": False}
        tools.append(types.Tool(name=name, description=spec["description"], input_schema=schema,
                                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False)))
    return tools


class ArgumentError(Exception):
    """The arguments do not fit the tool's schema: JSON-RPC -32602."""


def check_arguments(name: str, arguments: dict | None) -> dict:
    """The arguments when they fit the tool's JSON Schema, with text PostgreSQL and the model can take."""
    import jsonschema

    spec = TOOLS.get(name)
    if spec is None:
        raise ArgumentError(f"unknown tool {name!r}: use one of {', '.join(TOOLS)}")
    if arguments is not None and not isinstance(arguments, dict):
        raise ArgumentError(f"invalid arguments for {name}: expected an object")
    arguments = dict(arguments or {})
    schema = {"type": "object", "properties": spec["properties"], "required": spec["required"],
              "additionalProperties": False}
    try:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
    except RecursionError:
        raise ArgumentError(f"invalid arguments for {name}: nested too deeply") from None
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path)
        raise ArgumentError(f"invalid arguments for {name}: {where + ': ' if where else ''}{error.message}")
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
        with self._open() as memories:
            hits = memories.search(query, top=values["top"], filters=params.filters(values), mode=values["mode"],
                                   min_score=values["min_score"], time=values["time"])
        return [hit_dict(hit, window=hits.window) for hit in hits]

    def similar(self, path, **given):
        values = params.check(given, ("top", *params.FILTER_NAMES, "min_score"))
        with self._open() as memories:
            hits = memories.similar(path, top=values["top"], filters=params.filters(values),
                                    min_score=values["min_score"])
        return [hit_dict(hit) for hit in hits]

    def recent(self, **given):
        values = params.check(given, ("kind", "top", "project", "days", "since", "until"))
        with self._open() as memories:
            return [record_dict(record) for record in memories.recent(**values)]

    def index_status(self):
        with self._open() as memories:
            return memories.status()

    def read_memory(self, path, start_line=1, end_line=None):
        with self._open() as memories:
            return memories.read(path, start_line, end_line).text

    def knowledge_search(self, query, limit=10, workspace=None, **metadata):
        given = {field: value for field, value in metadata.items() if value is not None}
        conditions = where_conditions(given, "metadata") if given else ()
        with self._open() as memories:
            hits = memories.search(query, top=limit, filters=Filters(project=workspace, where=conditions))
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
                    instructions="Search and read the user's Markdown memories (sessions, web pages, minutes, "
                                 "wiki). Read-only.",
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
    """Load the model and connect once, then answer over stdin/stdout until the client hangs up."""
    resources = Resources()
    try:
        with resources.open(settings) as memories:
            memories.search("warm up", top=1)
    except MemorySearchError as error:  # no index yet: every call will say so
        sys.stderr.write(f"mcp_server.py: warning: {error}\n")
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
        sys.stderr.write(f"{prog}: error: no arguments are taken (got {arguments[0]!r}); "
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


HELP = """\
Usage: mcp_server.py

  Serve the memories to MCP clients (Claude Desktop, Claude Code, agent hosts)
  over stdio. Tools: search, similar, recent, read_memory, index_status,
  knowledge.search;
  also the JSON-RPC method knowledge.search. Read-only. The model and the
  database connection are loaded once, when the server starts.

Examples:
  claude mcp add memory-search -e MEMORIES_DIR=$HOME/memories -- /path/to/scripts/mcp_server.py
  MEMORIES_DIR=~/memories scripts/mcp_server.py   # then speak JSON-RPC on stdin

Environment: the same as search.py (MEMORIES_DIR, MEMORIES_DATABASE_URL,
  MEMORIES_DATA_DIR, MEMORIES_TABLE, MEMORIES_EMBEDDING_PROVIDER, VOYAGE_API_KEY, ...).

Exit codes: 0 when the client hangs up; 1 runtime failure at start; 2 usage error.
"""
