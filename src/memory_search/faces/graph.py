"""The link graph in the browser: GET /graph, and the data it draws.

The page (static/graph.html, with static/graph.js, which the knowledge-base page draws its graph with too)
lays the graph out with a small force simulation and draws it as SVG, so it works offline and brings no
third-party code. Its data
comes from GET /graph/data.json; a click on a node asks GET /graph/related.json for the node's
related memories. serve.py mounts these routes beside the API's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .. import params
from ..config import Settings, chosen_db
from ..errors import UsageError

PAGE = Path(__file__).resolve().parent.parent / "static" / "graph.html"
SCRIPT = PAGE.with_name("graph.js")  # the layout and drawing, shared with the knowledge-base page
# The page's own script and style: files, not inline, so the server's Content-Security-Policy holds here too.
FILES = {"graph.js": (SCRIPT, "text/javascript; charset=utf-8"),
         "graph-page.js": (PAGE.with_name("graph-page.js"), "text/javascript; charset=utf-8"),
         "graph.css": (PAGE.with_name("graph.css"), "text/css; charset=utf-8")}


def graph_routes(databases: Mapping[str, Settings], resources, answer, query_values) -> list:
    """Starlette routes: GET /graph, its script and style, /graph/data.json?db=, /graph/related.json?db=&path=&top=.

    answer(work) runs a request's work and turns a failure into the API's error response; query_values(request,
    names) reads and checks a request's parameters (http_api.query_values)."""
    import anyio.to_thread
    from starlette.responses import FileResponse, JSONResponse
    from starlette.routing import Route

    async def run(request, function):
        async def work():
            _, settings = chosen_db(databases, request.query_params.get("db"))

            def call():
                with resources.open(settings) as memories:
                    return function(memories, request)

            return JSONResponse(await anyio.to_thread.run_sync(call))

        return await answer(work)

    async def page(request):
        return FileResponse(PAGE, media_type="text/html; charset=utf-8")

    def file(name: str):
        path, kind = FILES[name]

        async def serve_file(request):
            return FileResponse(path, media_type=kind)

        return serve_file

    async def data(request):
        return await run(request, lambda memories, _: memories.graph())

    def related_list(memories, request) -> dict:
        from ..render import related_dict

        values = query_values(request, {"path": "path", "top": "top", "include_superseded": "include_superseded"})
        path = values["path"] or ""
        if not path.strip():
            raise UsageError("path is required: give a memory's path")
        entries = memories.related(path, top=values["top"],
                                   filters=params.filters(values))
        return {"path": memories.filename(path),
                "related": [{**related_dict(entry), "id": entry.record.relpath} for entry in entries]}

    async def related(request):
        return await run(request, related_list)

    return [Route("/graph", page, methods=["GET"]), Route("/graph/", page, methods=["GET"]),
            *(Route(f"/graph/{name}", file(name), methods=["GET"]) for name in FILES),
            Route("/graph/data.json", data, methods=["GET"]),
            Route("/graph/related.json", related, methods=["GET"])]
