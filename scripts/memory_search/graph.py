"""The link graph of an index, as JSON and as a page drawn in the browser (GET /graph).

The page (static/graph.html) is one self-contained file: its script lays the graph out with a small
force simulation and draws it as SVG, so it works offline and brings no third-party code. Its data
comes from GET /graph/data.json; a click on a node asks GET /graph/related.json for the node's
related memories. Mount the routes into any Starlette app:

    routes += graph_routes({"default": settings})   # db name -> Settings; ?db=NAME picks one
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Mapping

from .config import Settings
from .errors import IndexMissing, MemorySearchError, UsageError, first_line
from .filters import Filters
from .links import counts as link_counts, edges as link_edges
from .related import indexed_records
from .schema import ManagedTables, read_meta

PAGE = Path(__file__).with_name("static") / "graph.html"
DEFAULT_DB = "default"


def graph_data(conn, root: Path) -> dict:
    """Nodes (one per indexed memory) and edges (resolved links between two of them), with link counts."""
    tables = ManagedTables.of(root)
    if not read_meta(conn, tables):
        raise IndexMissing(f"no index of {root} in this database: build it with `scripts/index.py`")
    records = indexed_records(conn, tables)
    edges, degree = [], Counter()
    for edge in link_edges(conn, tables):
        if edge.target_file in records and edge.source in records and edge.target_file != edge.source:
            edges.append({"source": records[edge.source].relpath, "target": records[edge.target_file].relpath,
                          "kind": edge.kind, "line": edge.line})
            degree[edge.source] += 1
            degree[edge.target_file] += 1
    nodes = [{"id": record.relpath, "path": record.path, "title": record.title, "kind": record.kind or "other",
              "status": record.status, "project": record.project, "tags": list(record.tags),
              "date": record.date.isoformat() if record.date else None, "degree": degree[filename]}
             for filename, record in records.items()]
    return {"memories_dir": str(root), "nodes": nodes, "edges": edges, "links": link_counts(conn, tables)}


class _Index:
    """One db's memories, opened on first use; calls are serialized (one connection, one model)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.lock = threading.Lock()
        self.memories = None

    def call(self, function):
        from .api import Memories

        with self.lock:
            if self.memories is None:
                self.memories = Memories(self.settings)
            return function(self.memories)


def graph_routes(databases: Mapping[str, Settings]) -> list:
    """Starlette routes: GET /graph, /graph/data.json?db=, /graph/related.json?db=&path=&top=."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import FileResponse, JSONResponse
    from starlette.routing import Route

    indexes = {name: _Index(settings) for name, settings in databases.items()}

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=status)

    async def answer(request, function):
        name = request.query_params.get("db") or (DEFAULT_DB if DEFAULT_DB in indexes else next(iter(indexes), ""))
        index = indexes.get(name)
        if index is None:
            return error(400, f"unknown db {name!r}: use one of {', '.join(indexes) or 'none'}")
        try:
            return JSONResponse(await run_in_threadpool(index.call, lambda memories: function(memories, request)))
        except UsageError as failure:
            return error(400, str(failure))
        except IndexMissing as failure:
            return error(404, str(failure))
        except MemorySearchError as failure:
            return error(500, str(failure))
        except Exception as failure:  # one line, never a traceback
            return error(500, f"{type(failure).__name__}: {first_line(failure)}")

    async def page(request):
        return FileResponse(PAGE, media_type="text/html; charset=utf-8")

    async def data(request):
        return await answer(request, lambda memories, _: graph_data(memories.connection, memories.root))

    def related_list(memories, request) -> dict:
        from .render import related_dict

        path = request.query_params.get("path", "")
        if path.strip() and not Path(path).is_absolute():  # the page sends paths inside the memories directory
            path = str(memories.root / path)
        try:
            top = min(max(int(request.query_params.get("top", "10")), 1), 100)
        except ValueError:
            raise UsageError("top must be a number from 1 to 100") from None
        include_superseded = request.query_params.get("include_superseded") in ("1", "true")
        entries = memories.related(path, top=top, filters=Filters(include_superseded=include_superseded))
        return {"path": memories.filename(path),
                "related": [{**related_dict(entry), "id": entry.record.relpath} for entry in entries]}

    async def related(request):
        return await answer(request, related_list)

    return [Route("/graph", page, methods=["GET"]), Route("/graph/", page, methods=["GET"]),
            Route("/graph/data.json", data, methods=["GET"]), Route("/graph/related.json", related, methods=["GET"])]


def graph_app(databases: Mapping[str, Settings]):
    """A Starlette app serving only the graph (tests; serve.py mounts graph_routes instead)."""
    from starlette.applications import Starlette

    return Starlette(routes=graph_routes(databases))
