"""What a search takes before it runs: its modes, and a query it can run (params.py gives both to the faces)."""

from __future__ import annotations

from ..errors import UsageError, require_text

MODES = ("hybrid", "semantic", "keyword")
MAX_QUERY_CHARS = 2_000


def require_query(query, name: str = "the query") -> str:
    """A query a search can take, or UsageError when it is missing or blank; `name`: how the face calls it."""
    if query is None or not require_text(query, name).strip():
        raise UsageError(f"{name} is empty: give a few words to search for")
    return query


def check_query_length(query) -> None:
    """UsageError when the query is longer than MAX_QUERY_CHARS, quoting its length as sent. A SearchRequest
    cannot be made of such a query; a face that spends something on a query before its request (an embedding
    service of its host) checks it first."""
    if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"the query is {len(query):,} characters long: keep it to {MAX_QUERY_CHARS:,} "
                         "(the model reads about 500 tokens)")


def check_query(query, name: str = "the query") -> str:
    """The query of a search, every face's: text PostgreSQL and the model can take, not blank, and no longer than
    MAX_QUERY_CHARS; else UsageError, naming it as the face calls it (`name`: "q" on the page)."""
    require_query(query, name)
    check_query_length(query)
    return query
