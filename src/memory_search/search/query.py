"""What a search takes before it runs: its modes, and a query it can run (params.py gives both to the faces)."""

from __future__ import annotations

from ..errors import UsageError, require_text

MODES = ("hybrid", "semantic", "keyword")


def require_query(query, name: str = "the query") -> str:
    """A query a search can take, or UsageError when it is missing or blank; `name`: how the face calls it."""
    if query is None or not require_text(query, name).strip():
        raise UsageError(f"{name} is empty: give a few words to search for")
    return query
