"""What each face answers for a failure, decided by the error's class: one row per class, a column per
transport. The first row whose class the error is an instance of wins."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import IndexBusy, IndexMissing, MemoriesMissing, MemorySearchError, NotFound, UsageError

INVALID_PARAMS = -32602  # JSON-RPC: the caller's mistake
INTERNAL_ERROR = -32603  # JSON-RPC: ours

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_MISSING = 3
EXIT_PARTIAL = 4  # index.py: up to date except for files it had to skip, each listed


@dataclass(frozen=True)
class Outcome:
    exit_code: int  # the scripts
    tool_error: bool  # MCP tools: a tool result marked is_error (the model reads it) rather than a JSON-RPC error
    jsonrpc: int  # MCP: the JSON-RPC error code when not a tool result
    http: int  # the HTTP API's status


TABLE: tuple[tuple[type | tuple[type, ...], Outcome], ...] = (
    (UsageError, Outcome(EXIT_USAGE, False, INVALID_PARAMS, 400)),
    ((MemoriesMissing, IndexMissing), Outcome(EXIT_MISSING, True, INTERNAL_ERROR, 500)),  # the server's data
    (NotFound, Outcome(EXIT_MISSING, True, INTERNAL_ERROR, 404)),  # what the request names
    (IndexBusy, Outcome(EXIT_FAILURE, True, INTERNAL_ERROR, 503)),
    (MemorySearchError, Outcome(EXIT_FAILURE, True, INTERNAL_ERROR, 500)),
)
UNEXPECTED = Outcome(EXIT_FAILURE, False, INTERNAL_ERROR, 500)


def outcome(error: BaseException) -> Outcome:
    for kind, result in TABLE:
        if isinstance(error, kind):
            return result
    return UNEXPECTED


def exit_code(error: BaseException) -> int:
    return outcome(error).exit_code
