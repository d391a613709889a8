"""The knowledge-base page: GET / in a browser, and the JSON it reads. serve.py mounts these routes beside the API.

The page (static/page.html, page.js, page.css, with graph.js for the graph) is plain files shipped in the
package: no build step, no third-party code, nothing fetched from elsewhere. Its script asks:
  GET  /page/overview.json?db=    what the index holds (Memories.status), or why there is none
  GET  /page/progress.json?db=    whether an index run is under way and how far it got (Memories.progress)
  GET  /page/search.json?db=&q=&scope=&project=&tag=&since=&until=&include_superseded=&top=
                                  hits as search.py finds them, with the words of each snippet the query matched
  GET  /page/memory.json?db=&path=  a memory: frontmatter, its Markdown as sanitised HTML, related memories
  GET  /page/recent.json?db=&top=   the newest records of every kind (Memories.recent)
  POST /page/refresh?db=          start index.py in the background, as MCP's refresh_index does
and /graph/data.json for the graph. Every answer carries a Content-Security-Policy without inline script; the
refresh needs the page's own anti-forgery token and a same-origin request.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from .. import params
from ..config import Settings, chosen_db
from ..errors import IndexMissing, NotFound, UsageError
from .markdown_html import RENDER_LIMIT
from .team import PERSON

STATIC = Path(__file__).resolve().parent.parent / "static"
ASSET = re.compile(r"^[a-z][a-z0-9-]*\.(?:js|css|svg)$")
ASSET_TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml"}
CSRF_HEADER = "x-memory-search-csrf"
RECENT_TOP = 30
# The security headers (a Content-Security-Policy without inline script, no framing) are http_guard's, on
# every answer of the server.
HEADERS = {"cache-control": "no-store"}
# Memories read, rendered and encoded at once: a few clients reading megabyte notes leave the interpreter to
# the searches between them (a memory of a usual size takes milliseconds, so the wait is short).
MEMORIES_AT_ONCE = 1
SIGN_OUT = ('<form class="signout" method="post" action="/signout"><button type="submit" data-i18n="signOut">'
            'Sign out</button></form>')
SEARCH_NAMES = {"q": "query", "top": "top", "scope": "scope", "project": "project", "tag": "tags", "since": "since",
                "until": "until", "include_superseded": "include_superseded"}


def page_routes(databases: Mapping[str, Settings], resources, answer, query_values, refresh: bool = False) -> list:
    """Starlette routes of the page. answer(work) runs a request's work and turns a failure into the API's
    error response; query_values(request, names) reads request parameters as the API does; refresh: whether
    the page may start index.py (on loopback, or behind the token)."""
    import anyio.to_thread
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from ..render import hit_dict, record_dict, related_dict

    csrf = secrets.token_urlsafe(32)  # this server's: a page from another site cannot read it

    def names_db(request) -> tuple[str, Settings]:
        return chosen_db(databases, request.query_params.get("db"))

    def json(body, status: int = 200):
        return JSONResponse(body, status_code=status, headers=HEADERS)

    def reading(function):
        """A route that runs function(memories, db name, request) in a worker thread, over the request's db."""
        async def handle(request):
            async def work():
                name, settings = names_db(request)

                def call():
                    with resources.open(settings) as memories:
                        return function(memories, name, request)

                return json(await anyio.to_thread.run_sync(call))

            return await answer(work)

        return handle

    async def page(request):
        text = (STATIC / "page.html").read_text(encoding="utf-8").replace("{{csrf}}", csrf)
        text = text.replace("{{signout}}", SIGN_OUT if request.scope.get(PERSON) else "")  # team mode: signed in
        before, _, after = text.partition("{{first}}")

        async def parts():
            # The page goes out at once, so the browser fetches its script and style while the first search
            # runs; its answer closes the page (the script reads it there instead of asking again).
            yield before.encode()
            first = "null"
            if request.query_params.get("q", "").strip():
                try:
                    name, settings = names_db(request)

                    def call():
                        with resources.open(settings) as memories:
                            return search(memories, name, request)

                    first = script_json(await anyio.to_thread.run_sync(call))
                except Exception:  # the page asks again, and shows what went wrong
                    first = "null"
            yield (first + after).encode()

        return StreamingResponse(parts(), media_type="text/html; charset=utf-8", headers=HEADERS)

    async def asset(request):
        name = request.path_params["name"]
        if not ASSET.match(name) or not (STATIC / name).is_file():
            return Response(status_code=404, headers=HEADERS)
        return Response((STATIC / name).read_bytes(), media_type=ASSET_TYPES[name.rsplit(".", 1)[1]],
                        headers={**HEADERS, "cache-control": "no-cache"})

    def overview(memories, name, request) -> dict:
        about = {"db": name, "dbs": list(databases), "refresh": refresh and not memories.settings.remote,
                 "remote": memories.settings.remote, "memories_dir": str(memories.root)}
        try:
            return {**about, "status": memories.status(), "problem": None}
        except IndexMissing as missing:
            return {**about, "status": None, "problem": str(missing).splitlines()[0]}

    def progress(memories, name, request) -> dict:
        try:
            return memories.progress()
        except IndexMissing:
            return {"building": False, "progress": None, "last_indexed_at": None}

    def search(memories, name, request) -> dict:
        from ..render import marks, plain

        values = query_values(request, SEARCH_NAMES)
        query = values["query"]
        started = time.perf_counter()
        hits = memories.search(query, top=values["top"], filters=params.filters(values), query_name="q")
        took = (time.perf_counter() - started) * 1000
        window = hits.window
        text = query
        if window is not None and window.inside:  # the words the legs searched: the query without its time words
            for words in window.words:
                text = text.replace(words, " ")
        return {"query": query, "took_ms": round(took, 1), "window": window.as_dict() if window else None,
                "hits": [{**hit_dict(hit), "relpath": hit.record.relpath, "snippet": plain(hit.snippet),
                          "marks": marks(plain(hit.snippet), text)} for hit in hits]}

    def memory(memories, name, request) -> tuple[dict, str, dict]:
        """(what the page shows of a memory but its body, the body, where its links lead), read from the index;
        rendering comes after, with the connection given back."""
        path = query_values(request, {"path": "path"})["path"]
        if not path or not path.strip():
            raise UsageError("path is required: give a memory's path")
        found = memories.document(path, link_limit=RENDER_LIMIT)  # a longer note is shown as text, links unread
        try:
            related = memories.related(found.record.path, top=10)
        except NotFound:  # a memory written since the last index run: shown, with nothing related yet
            related = []
        record = found.record
        return ({"path": record.path, "relpath": record.relpath, "title": record.title, "kind": record.kind,
                 "status": record.status, "date": record.date.isoformat() if record.date else None,
                 "project": record.project, "tags": list(record.tags), "frontmatter": found.frontmatter,
                 "problem": found.problem, "start_line": found.body_start_line, "end_line": found.end_line,
                 "related": [{**related_dict(entry), "relpath": entry.record.relpath} for entry in related]},
                found.body, found.links)

    showing = threading.BoundedSemaphore(MEMORIES_AT_ONCE)

    async def memory_shown(request):
        import json as json_text

        from .markdown_html import shown

        async def work():
            name, settings = names_db(request)

            def call() -> bytes:
                with showing:
                    started = time.perf_counter()
                    with resources.open(settings) as memories:
                        about, body, links = memory(memories, name, request)
                    # The connection is back in the pool: a large note's rendering keeps no request waiting.
                    html, plain = shown(body, links, name)
                    # Encoded here, not on the event loop: a megabyte of JSON would hold up every answer.
                    encoded = json_text.dumps({**about, "html": html, "plain_text": plain}, ensure_ascii=False,
                                              separators=(",", ":")).encode()
                    if len(body) > RENDER_LIMIT:
                        # A note this large is served at most half the time: the other half, the interpreter
                        # is the searches' (clients reading megabyte notes in a loop would else starve them).
                        time.sleep(min(time.perf_counter() - started, 1.0))
                    return encoded

            return Response(await anyio.to_thread.run_sync(call), media_type="application/json", headers=HEADERS)

        return await answer(work)

    def recent(memories, name, request) -> dict:
        top = query_values(request, {"top": "top"})["top"] if "top" in request.query_params else RECENT_TOP
        records = memories.recent(kind="all", top=top)
        return {"records": [{**record_dict(record), "relpath": record.relpath} for record in records],
                "skipped": records.skipped}  # date folders that could not be read: their records are missing

    async def start_index(request):
        async def work():
            if not refresh:
                return json({"error": "this server does not start index runs: run index.py where the memories "
                                      "are"}, 403)
            if not same_origin(request, csrf):
                return json({"error": "refused: refresh the index from the page itself"}, 403)
            _, settings = names_db(request)

            def start():
                with resources.open(settings) as memories:
                    return memories.index_in_background()

            started = await anyio.to_thread.run_sync(start)
            return json({"started": started})

        return await answer(work)

    return [Route("/", page, methods=["GET"]),
            Route("/assets/{name}", asset, methods=["GET"]),
            Route("/page/overview.json", reading(overview), methods=["GET"]),
            Route("/page/progress.json", reading(progress), methods=["GET"]),
            Route("/page/search.json", reading(search), methods=["GET"]),
            Route("/page/memory.json", memory_shown, methods=["GET"]),
            Route("/page/recent.json", reading(recent), methods=["GET"]),
            Route("/page/refresh", start_index, methods=["POST"])]


def script_json(value) -> str:
    """JSON to place inside <script type="application/json">: no `<`, `>` or `&` that could end the element."""
    import json

    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026")


def same_origin(request, csrf: str) -> bool:
    """A request the page itself sent: its anti-forgery header, and no sign of another site (Origin names this
    host; Sec-Fetch-Site, when the browser sends it, says same-origin)."""
    given = request.headers.get(CSRF_HEADER, "")
    if not given or not hmac.compare_digest(given.encode(), csrf.encode()):
        return False
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()
