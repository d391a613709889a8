"""The MCP tools' names, descriptions and input schemas, standard library only: the real server (mcp_server.py)
and the stand-in that answers while the environment is being built (mcp_relay.py) list the same tools."""

from __future__ import annotations

from .. import params

SERVER_NAME = "memory-search"
INSTRUCTIONS = ("Search and read the user's Markdown memories (sessions, web pages, minutes, wiki). Read-only, "
                "but for refresh_index, which brings the search index up to date with the memories folder.")


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
    "refresh_index": {
        "description": (
            "Bring the search index up to date with the memories folder: starts the indexer in the background "
            "(new and changed files become searchable by keywords within seconds, by meaning once embedded) and "
            "returns what index_status returns, with started (false when a run started less than a minute ago "
            "is still at work). Use it when index_status shows pending files or a memory the user just wrote "
            "is not found."),
        "properties": {},
        "required": [],
    },
    "index_status": {
        "description": (
            "Report what the search index holds and how far it is behind the memories directory: files and "
            "chunks by kind and status, the embedding model, when it was last indexed, and how many files are "
            "new, changed or deleted since (pending), how many chunks still wait for their embeddings "
            "(waiting_for_embeddings: found by keyword, not yet by meaning), and files that could not be read "
            "(unreadable). Up to date when pending is all 0 and waiting_for_embeddings is 0. Use it when results "
            "look out of date."),
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


def schema(name: str) -> dict:
    """The JSON Schema of a tool's arguments."""
    spec = TOOLS[name]
    return {"type": "object", "properties": spec["properties"], "required": spec["required"],
            "additionalProperties": False}


# mcp_server.py --help: here, away from the MCP SDK, so that --help answers without importing it.
HELP = """\
Usage: mcp_server.py

  Serve the memories to MCP clients (Claude Desktop, Claude Code, agent hosts)
  over stdio. Tools: search, similar, recent, read_memory, refresh_index,
  index_status, knowledge.search; also the JSON-RPC method knowledge.search.
  Read-only but for refresh_index. The server answers at once; the model and
  the database connection load in the background and stay loaded. serve.py
  serves the same tools over Streamable HTTP at /mcp.

Examples:
  claude mcp add memory-search -e MEMORIES_DIR=$HOME/memories -- /path/to/scripts/mcp_server.py
  MEMORIES_DIR=~/memories scripts/mcp_server.py   # then speak JSON-RPC on stdin

Environment: the same as search.py (MEMORIES_DIR, MEMORIES_DATABASE_URL,
  MEMORIES_DATA_DIR, MEMORIES_TABLE, MEMORIES_EMBEDDING_PROVIDER, VOYAGE_API_KEY, ...).

Exit codes: 0 when the client hangs up; 1 runtime failure at start; 2 usage error.
"""
