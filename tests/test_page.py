"""The knowledge-base page at serve.py's /: its JSON, its safety rules (policy, anti-forgery, sign-in), and the
page itself driven in a real headless Chromium (tools/chromium.py): search, open a memory, follow a link, the
graph, the progress of an index run, the keyboard, the phone width, and notes that try to run script."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("starlette", reason="the faces extra is not installed (make install installs it)")
pytest.importorskip("markdown_it", reason="the faces extra is not installed (make install installs it)")

from conftest import ROOT, SCRIPTS, MemoriesDir, index, seeded  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import chromium as browser  # noqa: E402

from memory_search.faces.markdown_html import render  # noqa: E402
from memory_search.storage.schema import ManagedTables  # noqa: E402
from memory_search.storage.writer import lock_key, write_meta  # noqa: E402

YESTERDAY = (dt.date.today() - dt.timedelta(days=1)).isoformat()
HOSTILE = """# Hostile <img src=x onerror="window.pwned='heading'">

<script>window.pwned = 'script'</script>
<img src="x" onerror="window.pwned='img'">
<a href="javascript:window.pwned='raw-link'">raw link</a>
[a javascript link](javascript:window.pwned='markdown-link') and [upper](JAVASCRIPT:window.pwned='upper')
[a data link](data:text/html,<script>window.pwned='data'</script>) <javascript:window.pwned='autolink'>
[[<script>window.pwned='wikilink'</script>]] ![x](javascript:window.pwned='image')
<svg onload="window.pwned='svg'"></svg> <iframe src="javascript:window.pwned='iframe'"></iframe>
<div style="background:url(javascript:window.pwned='style')">styled</div>

Back to the [hub](hub.md), a [safe site](https://example.com/a?b=1&c=2).
"""
def needs_browser(test):
    """A test in a real Chromium: the end-to-end tier (`make test-all`); skipped, saying so, without one."""
    return pytest.mark.e2e(pytest.mark.skipif(
        not browser.available(), reason="Chromium is not installed: `make browser` (apt-get install chromium)")(test))


@pytest.fixture(scope="module")
def kb(tmp_path_factory, base_env, database):
    """A memories directory with links, dates, a superseded note and a hostile one, indexed."""
    memories = MemoriesDir(tmp_path_factory.mktemp("page") / "memories")
    memories.write("wiki/hub.md", "# Hub\n\nLinks to [[topic]] and ![[embedded]] and [[missing note]].\n\n"
                   "| a | b |\n|:-|-:|\n| 1 | 2 |\n", title="Hub", project="alpha", tags=["index"])
    memories.write("wiki/topic.md", "# Topic\n\nBack to [the hub](hub.md). We tune the HNSW index here.",
                   title="Topic", project="alpha", tags=["hnsw"])
    memories.write("wiki/embedded.md", "# Embedded\n\nA small note shown inside the hub.", title="Embedded")
    memories.write("wiki/old.md", "# Old HNSW notes\n\nThe HNSW index used ef_search 40.", title="Old HNSW notes",
                   status="superseded")
    memories.write(f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md",
                   "# Session\n\nTuned the HNSW index: ef_search from 40 to 100. See [[hub]].",
                   kind="session", title="HNSW tuning session", project="beta", tags=["hnsw"])
    memories.write("raw/web/2026-11-02/090000_page.md", "# Web page\n\nAn archived page about pgvector.", kind="web",
                   title="A web page about pgvector")
    memories.write("raw/minutes/2026-11-03/100000_sync.md", "# Sync\n\nMinutes of a sync: 夜間バッチの見直し。",
                   kind="minutes", title="Weekly sync")
    memories.write("wiki/invoices.md", "# Invoices\n\n**Ann**: The invoice PDF?\n**Bob**: WeasyPrint.\n"
                   "**Ann**: Fonts?\n**Bob**: Noto Sans CJK.\n", title="Invoice PDFs",
                   tags=["pdf", "weasyprint", "invoice"])
    memories.write("wiki/hostile.md", HOSTILE, title="<img src=x onerror=\"window.pwned='title'\">",
                   tags=["<script>window.pwned='tag'</script>"], project="<b onmouseover=alert(1)>p</b>")
    index(base_env, memories)
    return memories


def _serve(env, *args):
    """serve.py as a user runs it; (process, base URL) once it answers."""
    config = env["XDG_CONFIG_HOME"]
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "serve.py"), *args], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    path = f"{config}/memory-search/endpoint"
    deadline = time.monotonic() + 120
    while True:
        try:
            with open(path) as handle:
                return process, handle.read().strip()
        except FileNotFoundError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"serve.py did not start: {process.communicate()[1]}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(kb, base_env, tmp_path_factory):
    config = tmp_path_factory.mktemp("config")
    env = {**base_env, "MEMORIES_DIR": str(kb.root), "XDG_CONFIG_HOME": str(config),
           "XDG_STATE_HOME": str(config / "state")}
    process, base = _serve(env)
    yield {"base": base, "memories": kb, "env": env}
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def team_server(kb, base_env, tmp_path_factory):
    """The same memories behind a token."""
    config = tmp_path_factory.mktemp("team-config")
    token_file = config / "token"
    token_file.write_text("a-token-of-at-least-sixteen-characters\n")
    token_file.chmod(0o600)
    env = {**base_env, "MEMORIES_DIR": str(kb.root), "XDG_CONFIG_HOME": str(config)}
    process, base = _serve(env, "--token-file", str(token_file))
    yield {"base": base, "token": "a-token-of-at-least-sixteen-characters"}
    process.terminate()
    process.wait(timeout=30)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def request(base: str, route: str, method: str = "GET", headers: dict | None = None, body: bytes | None = None,
            **params):
    """(status, headers, body text) of one request; redirects are returned, not followed."""
    url = base + route + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, data=body, method=method, headers=headers or {}),
                         timeout=120) as answer:
            return answer.status, answer.headers, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def get_json(base: str, route: str, **params):
    status, _, body = request(base, route, **params)
    assert status == 200, body
    return json.loads(body)


# --- the page's routes --------------------------------------------------------------------------

def test_the_page_and_its_assets_come_from_the_package_under_a_policy_without_inline_script(server):
    status, headers, body = request(server["base"], "/")
    policy = headers["content-security-policy"]
    assert status == 200 and "script-src 'self';" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy and headers["x-content-type-options"] == "nosniff"
    assert re.findall(r"<script(?![^>]*\b(?:src=|type=\"application/json\"))", body) == []
    assert not re.search(r"\son\w+=", body)
    assert not re.search(r"(?:src|href)=\"(?:https?:)?//", body)  # nothing from elsewhere
    for path, kind in (("/assets/page.js", "text/javascript"), ("/assets/page.css", "text/css"),
                       ("/graph/graph.js", "text/javascript")):
        status, headers, text = request(server["base"], path)
        assert status == 200 and headers["content-type"].startswith(kind) and len(text) > 1000
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert request(server["base"], "/assets/nothing.js")[0] == 404
    assert request(server["base"], "/assets/..%2Fgraph.html")[0] == 404


def test_the_page_served_for_a_search_holds_its_answer_as_data_whatever_the_query(server):
    status, _, body = request(server["base"], "/", q="HNSW tuning yesterday")
    first = json.loads(re.search(r'<script type="application/json" id="first-search">(.*?)</script>', body,
                                 re.S).group(1))
    assert status == 200 and first["hits"][0]["relpath"] == f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md"
    assert first == get_json(server["base"], "/page/search.json", q="HNSW tuning yesterday") | {
        "took_ms": first["took_ms"]}
    hostile = "</script><script>window.pwned=1</script><!--"
    body = request(server["base"], "/", q=hostile)[2]
    assert "<script>window.pwned" not in body and body.count("</script>") == 2  # the page's script, and the data's
    data = re.search(r'id="first-search">(.*?)</script>', body, re.S).group(1)
    assert json.loads(data) is None or json.loads(data)["query"] == hostile
    assert re.search(r'id="first-search">null</script>', request(server["base"], "/")[2])


def test_search_answers_as_search_py_with_the_matched_words_and_the_window_of_time_words(server):
    answer = get_json(server["base"], "/page/search.json", q="HNSW tuning yesterday")
    assert answer["window"] == {"since": YESTERDAY, "until": YESTERDAY, "words": ["yesterday"], "inside": True}
    hit = answer["hits"][0]
    assert hit["relpath"] == f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md" and hit["title"] == "HNSW tuning session"
    assert 0 <= hit["score"] <= 1 and hit["start_line"] >= 1 and hit["end_line"] >= hit["start_line"]
    marked = [hit["snippet"][start:end] for start, end in hit["marks"]]
    assert "HNSW" in marked and "Tuned" in marked and "yesterday" not in marked

    def relpaths(**params):
        return [hit["relpath"] for hit in get_json(server["base"], "/page/search.json", **params)["hits"]]

    assert "wiki/old.md" not in relpaths(q="HNSW index")
    assert "wiki/old.md" in relpaths(q="HNSW index", include_superseded="true")
    assert set(relpaths(q="HNSW index", scope="wiki")) <= {"wiki/topic.md", "wiki/hub.md", "wiki/embedded.md",
                                                           "wiki/hostile.md", "wiki/invoices.md"}
    assert relpaths(q="HNSW", project="beta") == [f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md"]
    assert set(relpaths(q="HNSW", tag="hnsw")) == {"wiki/topic.md", f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md"}
    assert relpaths(q="HNSW", since="2026-01-01", until="2026-01-02") == []
    status, _, body = request(server["base"], "/page/search.json", q="HNSW", scope="nowhere")
    assert status == 400 and "scope" in json.loads(body)["error"]
    assert request(server["base"], "/page/search.json", q=" ")[0] == 400


def test_the_pages_snippets_are_text_marked_at_the_words_of_the_querys_subject(server):
    answer = get_json(server["base"], "/page/search.json", q="how do we tune the HNSW index")
    topic = next(hit for hit in answer["hits"] if hit["relpath"] == "wiki/topic.md")
    assert "Back to the hub. We tune the HNSW index here." in topic["snippet"]  # not [the hub](hub.md)
    marked = {hit["snippet"][start:end].lower() for hit in answer["hits"] for start, end in hit["marks"]}
    assert {"tune", "hnsw", "index"} <= marked <= {"tune", "tuned", "tuning", "hnsw", "index", "indexes"}


def test_a_memory_comes_with_its_frontmatter_its_markdown_rendered_and_what_it_links_to(server):
    memory = get_json(server["base"], "/page/memory.json", path="wiki/hub.md")
    assert memory["relpath"] == "wiki/hub.md" and memory["frontmatter"]["project"] == "alpha"
    assert memory["start_line"] == 7 and memory["title"] == "Hub"
    html = memory["html"]
    assert '<a class="memory-link" href="?db=default&amp;open=wiki%2Ftopic.md" data-open="wiki/topic.md">topic</a>' \
        in html
    assert 'data-open="wiki/embedded.md"' in html and '<span class="dead-link" title="missing note">' in html
    assert '<th class="align-left">a</th>' in html and "style=" not in html
    related = {entry["relpath"]: entry["reasons"] for entry in memory["related"]}
    assert related["wiki/topic.md"][:2] == ["links to", "linked from"]
    assert related[f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md"][0] == "linked from"
    assert request(server["base"], "/page/memory.json", path="wiki/none.md")[0] == 404
    assert request(server["base"], "/page/memory.json", path="../../etc/passwd")[0] == 400


def test_a_hostile_note_is_rendered_as_text_with_no_way_to_run_script(server):
    memory = get_json(server["base"], "/page/memory.json", path="wiki/hostile.md")
    html = memory["html"]
    assert "<script" not in html and "<img" not in html and "<svg" not in html and "<iframe" not in html
    audit = _Audit()  # only safe tags and attributes; links only to http(s), mailto or a memory
    audit.feed(html)
    assert audit.problems == []
    assert "&lt;script&gt;window.pwned = 'script'&lt;/script&gt;" in html  # shown, as text
    assert '<a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">' in html
    assert 'data-open="wiki/hub.md"' in html
    assert memory["frontmatter"]["title"] == "<img src=x onerror=\"window.pwned='title'\">"  # data, for the page


def test_the_overview_names_the_index_its_model_embeddings_and_stale_files(server):
    overview = get_json(server["base"], "/page/overview.json")
    status = overview["status"]
    assert overview["db"] == "default" and overview["dbs"] == ["default"] and overview["refresh"] is True
    assert status["files"] == 9 and status["chunks"] == status["embedded"] and status["waiting_for_embeddings"] == 0
    assert status["model"]["provider"] == "local" and status["last_indexed_at"] and status["building"] is False
    assert status["stale"] == {"new": [], "changed": [], "deleted": []}
    recent = get_json(server["base"], "/page/recent.json")["records"]
    assert [record["kind"] for record in recent] == ["session", "minutes", "web"]
    assert recent[0]["relpath"] == f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md"
    assert get_json(server["base"], "/page/progress.json") == {"building": False, "progress": None,
                                                               "last_indexed_at": status["last_indexed_at"]}


def test_the_page_obeys_the_host_rule_and_writes_only_through_the_refresh(server):
    assert request(server["base"], "/", headers={"Host": "evil.example"})[0] == 400
    assert request(server["base"], "/page/search.json", headers={"Host": "evil.example"}, q="x")[0] == 400
    for path in ("/", "/page/search.json", "/page/overview.json"):
        assert request(server["base"], path, method="POST")[0] == 405
    assert request(server["base"], "/page/refresh")[0] == 405


def _csrf(base: str) -> str:
    return re.search(r'name="csrf-token" content="([^"]+)"', request(base, "/")[2]).group(1)


def test_a_refresh_needs_the_pages_own_token_and_a_same_origin_request_then_runs_the_indexer(server, kb):
    base, host = server["base"], urllib.parse.urlsplit(server["base"]).netloc
    csrf = _csrf(base)
    for headers in ({}, {"X-Memory-Search-CSRF": "guessed"},
                    {"X-Memory-Search-CSRF": csrf, "Origin": "http://evil.example"},
                    {"X-Memory-Search-CSRF": csrf, "Sec-Fetch-Site": "cross-site"}):
        status, _, body = request(base, "/page/refresh", method="POST", headers=headers, body=b"")
        assert status == 403 and "refused" in json.loads(body)["error"]
    kb.write("wiki/later.md", "# Later\n\nWritten after the index run.", title="Later")
    try:
        status, _, body = request(base, "/page/refresh", method="POST", body=b"",
                                  headers={"X-Memory-Search-CSRF": csrf, "Origin": f"http://{host}",
                                           "Sec-Fetch-Site": "same-origin"})
        assert status == 200 and json.loads(body) == {"started": True}
        deadline = time.monotonic() + 180
        while get_json(base, "/page/overview.json")["status"]["files"] != 10:
            assert time.monotonic() < deadline, "the index run started by the page did not finish"
            time.sleep(0.5)
    finally:
        (kb.root / "wiki" / "later.md").unlink()
        index(server["env"], kb)


def test_the_load_report_sends_a_team_servers_token(team_server):
    from faces_lib import measure

    base, token = team_server["base"], team_server["token"]
    answered = measure(base, clients=2, seconds=1, token=token)
    assert answered["errors"] == 0 and answered["requests"] > 0
    refused = measure(base, clients=1, seconds=1)
    assert refused["requests"] > 0 and refused["errors"] == refused["requests"] and "401" in refused["first_error"]


def test_in_team_mode_a_person_signs_in_once_with_a_form_and_gets_an_httponly_samesite_cookie(team_server):
    base, token = team_server["base"], team_server["token"]
    host = urllib.parse.urlsplit(base).netloc
    port = host.rsplit(":", 1)[1]
    status, headers, _ = request(base, "/", q="HNSW", scope="wiki")
    assert status == 303 and headers["location"] == "/signin?next=%2F%3Fq%3DHNSW%26scope%3Dwiki"
    status, form_headers, form = request(base, "/signin", next="/?q=HNSW&scope=wiki")
    assert status == 200 and '<input type="hidden" name="next" value="/?q=HNSW&amp;scope=wiki">' in form
    assert request(base, "/assets/page.css")[0] == 200  # the form's style needs no token
    assert request(base, "/page/search.json", q="HNSW")[0] == 401
    presession = form_headers["set-cookie"].split(";")[0]
    csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)

    def sign_in(given: str, origin: str | None = None, back: str = "/?q=HNSW&scope=wiki"):
        body = urllib.parse.urlencode({"token": given, "next": back, "csrf": csrf}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": presession,
                   **({"Origin": origin} if origin else {})}
        return request(base, "/signin", method="POST", headers=headers, body=body)

    status, headers, _ = sign_in("wrong-token-wrong-token")
    assert status == 303 and headers["location"].startswith("/signin?failed=1") and "set-cookie" not in headers
    assert sign_in(token, origin="http://evil.example")[0] == 403
    status, headers, _ = sign_in(token, origin=f"http://{host}")
    assert status == 303 and headers["location"] == "/?q=HNSW&scope=wiki" and token not in headers["location"]
    cookie = next(value for value in headers.get_all("set-cookie") if value.startswith(f"memory_search_{port}="))
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
    status, headers, _ = sign_in(token, back="//evil.example/x\r\nSet-Cookie: a=b")
    assert status == 303 and headers["location"] == "/"  # only this server's own pages
    jar = {"Cookie": cookie.split(";")[0]}
    assert request(base, "/", headers=jar)[0] == 200
    assert request(base, "/page/search.json", headers=jar, q="HNSW")[0] == 200
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', request(base, "/", headers=jar)[2]).group(1)
    assert request(base, "/page/refresh", method="POST", body=b"", headers={"X-Memory-Search-CSRF": csrf})[0] == 401


# --- the renderer -------------------------------------------------------------------------------

ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "a", "span", "em", "strong", "code", "pre", "ul", "ol",
                "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "s"}
ALLOWED_ATTRIBUTES = {"href", "class", "title", "data-open", "rel", "target", "start"}


class _Audit(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems = []

    def handle_starttag(self, tag, attributes):
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"tag {tag}")
        for name, value in attributes:
            if name not in ALLOWED_ATTRIBUTES:
                self.problems.append(f"attribute {name}")
            if name == "href" and not re.match(r"^(?:https?:|mailto:|#|\?(?:db=[^&]*&)?open=)", value or "", re.I):
                self.problems.append(f"href {value}")


hostile_pieces = st.sampled_from([
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "[x](JaVaScRiPt:a)",
    "[x](java\tscript:a)", "[x](data:text/html,a)", "<javascript:alert(1)>", "[[a|<b onclick=x>]]", "![i](x.png)",
    "[x](vbscript:a)", "<a href='javascript:a'>a</a>", "[x](  javascript:a )", "[x](&#106;avascript:a)",
    "[x]: javascript:a\n\n[x]", "<style>*{}</style>", "| a |\n|:-:|\n| b |", "```\n<script>\n```", "[[hub]]",
    "[t](hub.md)", "[t](<hub.md>)", "[t](https://e.x/?a=1&b=\"2\")", "`code`", "> quote", "- item", "# h",
])


@seeded
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(hostile_pieces, st.text(max_size=40)), max_size=12))
def test_rendered_markdown_holds_only_safe_tags_attributes_and_links_whatever_the_note_says(pieces):
    started = time.perf_counter()
    html = render("\n".join(pieces), {"hub": "wiki/hub.md", "hub.md": "wiki/hub.md"}, "default")
    assert time.perf_counter() - started < 2
    audit = _Audit()
    audit.feed(html)
    assert audit.problems == []


# --- in a real browser --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium():
    with browser.Browser() as running:
        yield running


def _ready(page, url):
    page.goto(url, until="document.body.dataset.ready === '1'")


@needs_browser
def test_search_open_a_memory_follow_a_link_go_back_and_reload_in_chromium(server, chromium):
    base = server["base"]
    page = chromium.page(1280, 900, "en-US")
    _ready(page, base + "/")
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.evaluate("document.getElementById('state-text').textContent") == "Indexed (" + \
        str(get_json(base, "/page/overview.json")["status"]["chunks"]) + " chunks)"
    page.focus("#q")
    page.type("HNSW tuning yesterday")
    page.press("Enter")
    page.wait("document.body.dataset.results > 0")
    assert "q=HNSW+tuning+yesterday" in page.evaluate("location.search")
    first = page.evaluate("document.querySelector('#results li a.hit').textContent")
    # the score with two decimals: a probability, 1.00 for a hit that all but surely answers
    assert re.match(rf"raw/session/{YESTERDAY}/101010_abcd1234_s1\.md:\d+-\d+ HNSW tuning session \((0\.\d\d|1\.00)\)$",
                    first)
    assert "HNSW" in page.evaluate("[...document.querySelectorAll('#results mark')].map(m => m.textContent)")
    assert YESTERDAY in page.evaluate("document.getElementById('window').textContent")
    assert "probability" in page.evaluate("document.getElementById('score-note').textContent")

    page.click("#results li a.hit")
    page.wait("document.body.dataset.open === " + json.dumps(f"raw/session/{YESTERDAY}/101010_abcd1234_s1.md"))
    assert page.evaluate("document.getElementById('reader-title').textContent") == "HNSW tuning session"
    assert page.evaluate("document.activeElement.id") == "reader-title"
    page.click("#reader-text a[data-open='wiki/hub.md']")  # [[hub]] in the session
    page.wait("document.body.dataset.open === 'wiki/hub.md'")
    assert "project" in page.evaluate("document.getElementById('frontmatter').textContent")
    page.click("#related a[data-open='wiki/topic.md']")
    page.wait("document.body.dataset.open === 'wiki/topic.md'")
    assert page.evaluate("new URLSearchParams(location.search).get('q')") == "HNSW tuning yesterday"

    page.evaluate("history.back()")
    page.wait("document.body.dataset.open === 'wiki/hub.md'")
    page.goto(page.evaluate("location.href"), until="document.body.dataset.ready === '1' && document.body.dataset.open")
    assert page.evaluate("document.body.dataset.open") == "wiki/hub.md"  # the state is in the address
    assert page.evaluate("document.getElementById('q').value") == "HNSW tuning yesterday"
    assert page.evaluate("document.body.dataset.results") != ""
    assert page.exceptions == [] and not page.evaluate("document.body.dataset.errors")


@needs_browser
def test_the_page_is_usable_by_keyboard_alone(server, chromium):
    page = chromium.page(1280, 900, "en-US")
    _ready(page, server["base"] + "/")
    page.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.type("pgvector")
    page.press("Enter")
    page.wait("document.body.dataset.results > 0")
    page.press("ArrowDown")
    assert page.evaluate("document.activeElement.classList.contains('hit')")
    page.press("Enter")
    page.wait("document.body.dataset.open")
    assert page.evaluate("document.activeElement.id") == "reader-title"
    page.press("Escape")
    page.wait("!document.body.dataset.open || document.getElementById('reader').hidden")
    assert page.evaluate("document.activeElement.classList.contains('hit')")  # back where the reader was opened
    page.press("Tab", shift=True)
    assert page.evaluate("document.activeElement.tagName") in ("A", "INPUT", "BUTTON", "SUMMARY", "SELECT")


@needs_browser
def test_japanese_by_the_browsers_language_and_readable_at_phone_width(server, chromium):
    page = chromium.page(390, 844, "ja", mobile=True)
    _ready(page, server["base"] + "/?q=" + urllib.parse.quote("夜間バッチ"))
    page.wait("document.body.dataset.results > 0")
    assert page.evaluate("document.documentElement.lang") == "ja"
    assert page.evaluate("document.getElementById('search-title').textContent") == "検索"
    assert "見込み" in page.evaluate("document.getElementById('score-note').textContent")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
    page.click("#results li a.hit")
    page.wait("document.body.dataset.open")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


@needs_browser
def test_the_graph_is_drawn_and_a_click_on_a_node_opens_that_memory(server, chromium):
    page = chromium.page(1280, 900, "en-US")
    _ready(page, server["base"] + "/")
    page.evaluate("document.getElementById('graph-section').scrollIntoView()")
    page.wait("document.body.dataset.nodes")
    assert page.evaluate("document.body.dataset.nodes") == "9"
    assert page.evaluate("document.querySelectorAll('#graph circle.node').length") == 9
    assert page.evaluate("document.querySelectorAll('#graph line.edge').length") >= 4
    page.click("#graph circle[data-id='wiki/topic.md']")
    page.wait("document.body.dataset.open === 'wiki/topic.md'")
    assert page.evaluate("document.querySelector(\"#graph circle[data-id='wiki/topic.md']\").classList"
                         ".contains('selected')")


@needs_browser
def test_a_running_index_shows_its_progress_live_files_then_embeddings(server, chromium, database, kb):
    """An indexer's lock and the progress it records, held by the test as index.py holds them mid-run."""
    page = chromium.page(1280, 900, "en-US")
    _ready(page, server["base"] + "/")
    assert page.evaluate("document.getElementById('progress').hidden")
    tables = ManagedTables.of(kb.root)
    state = {"phase": "files", "files": {"done": 3, "total": 8, "chunks": 12}, "embeddings": None,
             "current": "wiki/topic.md", "started_at": "2026-12-01T10:00:00+0000", "updated_at": "x"}
    with psycopg.connect(database, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_key(tables),))
        try:
            write_meta(tables.on(holder), {"progress": json.dumps(state)})
            page.wait("!document.getElementById('progress').hidden", timeout=15)
            page.wait("document.getElementById('files-count').textContent.startsWith('3 / 8 files')")
            assert page.evaluate("document.getElementById('files-bar').value") == 3
            assert page.evaluate("document.getElementById('current').textContent") == "Now: wiki/topic.md"
            state.update(phase="embeddings", files={"done": 8, "total": 8, "chunks": 30},
                         embeddings={"done": 10, "total": 30}, current=None)
            write_meta(tables.on(holder), {"progress": json.dumps(state)})
            page.wait("document.getElementById('embed-count').textContent.startsWith('10 / 30 chunks')", timeout=15)
            assert page.evaluate("document.getElementById('embed-bar').max") == 30
            assert page.evaluate("document.getElementById('progress').dataset.phase") == "embeddings"
        finally:
            holder.execute(f"DELETE FROM {tables.meta} WHERE key = 'progress'")
            holder.execute("SELECT pg_advisory_unlock(%s)", (lock_key(tables),))
    page.wait("document.getElementById('progress').hidden", timeout=15)


@needs_browser
def test_a_hostile_note_executes_nothing_in_the_browser(server, chromium):
    page = chromium.page(1280, 900, "en-US")
    url = server["base"] + "/?open=wiki/hostile.md&q=" + urllib.parse.quote(
        "hostile </script><script>window.pwned='query'</script>")

    def hostile_note_open():
        _ready(page, url)
        page.wait("document.body.dataset.open === 'wiki/hostile.md'")
        page.wait("document.querySelectorAll('#results a.hit').length > 0")

    hostile_note_open()
    assert page.evaluate("document.getElementById('reader-title').textContent") == \
        "<img src=x onerror=\"window.pwned='title'\">"
    # Each link is hovered and followed from the hostile note itself: a click that opens another memory
    # changes what the next one would find.
    for selector in ("#reader-text a", "#reader-text span.dead-link", "#frontmatter dd", "#results a.hit"):
        for number in range(page.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")):
            hostile_note_open()
            followed = page.evaluate(
                f"(element => {{ const target = element.getAttribute('href'); if (target && "
                f"target.startsWith('https://')) return 'another site'; element.dispatchEvent(new MouseEvent("
                f"'mouseover', {{bubbles: true}})); element.click(); return 'followed'; }})"
                f"(document.querySelectorAll({json.dumps(selector)})[{number}])")
            assert followed in ("another site", "followed")  # a new tab for another site: nothing runs here
            time.sleep(0.2)
            assert page.evaluate("typeof window.pwned") == "undefined", (selector, number)
    time.sleep(0.5)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('#reader-text script, #reader-text img, #reader-text svg, "
                         "#reader-text iframe, [onerror], [onload], [onmouseover]').length") == 0
    assert page.exceptions == []


@needs_browser
def test_the_refresh_button_starts_an_index_run_and_the_overview_follows_it(server, chromium, kb):
    import shutil as files

    files.rmtree(f"{server['env']['XDG_STATE_HOME']}/memory-search/indexing", ignore_errors=True)  # no run lately
    page = chromium.page(1280, 900, "en-US")
    _ready(page, server["base"] + "/")
    assert page.evaluate("document.querySelector('.figure[data-key=files] dd').textContent") == "9"
    kb.write("wiki/later.md", "# Later\n\nWritten after the index run.", title="Later")
    try:
        page.focus("#refresh")
        page.press("Enter")
        page.wait("document.getElementById('refresh-note').textContent.startsWith('An index run started')")
        page.wait("document.querySelector('.figure[data-key=files] dd').textContent === '10'", timeout=180)
        assert page.exceptions == []
    finally:
        (kb.root / "wiki" / "later.md").unlink()
        index(server["env"], kb)


def _in_view(page, element_id: str) -> bool:
    return page.evaluate(f"(() => {{ const box = document.getElementById('{element_id}').getBoundingClientRect();"
                         " return box.top > -5 && box.top < innerHeight - 100; })()")


@needs_browser
def test_results_start_high_and_a_memory_shows_its_tags_as_tags_and_its_turns_on_their_lines(server, chromium):
    page = chromium.page(1280, 800, "en-US")
    _ready(page, server["base"] + "/?q=" + urllib.parse.quote("invoice PDF"))
    page.wait("document.body.dataset.results > 0")
    first = page.evaluate("document.querySelector('#results li').getBoundingClientRect().top")
    assert first < 300 and page.evaluate("document.getElementById('overview').getBoundingClientRect().top") > first
    page.click("#results li[data-path='wiki/invoices.md'] a.hit")
    page.wait("document.body.dataset.open === 'wiki/invoices.md'")
    assert page.evaluate("[...document.querySelectorAll('#frontmatter dd.tags .badge')].map(tag => tag.textContent)"
                         ) == ["pdf", "weasyprint", "invoice"]
    assert "[" not in page.evaluate("document.getElementById('frontmatter').textContent")
    lines = page.evaluate("(() => { const turns = [...document.querySelectorAll('#reader-text p')].find("
                          "p => p.textContent.includes('Ann')); const range = document.createRange();"
                          " range.selectNodeContents(turns);"
                          " return new Set([...range.getClientRects()].map(box => Math.round(box.bottom))).size; })()")
    assert lines == 4  # one turn a line, as written
    assert page.exceptions == []


@needs_browser
def test_the_timeline_or_the_graph_looked_at_is_in_the_address_and_shown_again_on_reload(server, chromium):
    page = chromium.page(1280, 800, "en-US")
    _ready(page, server["base"] + "/?q=HNSW")
    page.click("header nav a[href='#recent']")
    page.wait("location.hash === '#recent'")
    assert "q=HNSW" in page.evaluate("location.search")
    page.goto(page.evaluate("location.href"), until="document.body.dataset.ready === '1'")
    assert page.evaluate("document.body.dataset.results") != "" and _in_view(page, "recent")
    page.click("header nav a[href='#graph-section']")
    page.wait("location.hash === '#graph-section'")
    page.goto(page.evaluate("location.href"), until="document.body.dataset.ready === '1'")
    page.wait("document.body.dataset.nodes")
    assert _in_view(page, "graph-section")
    legend = page.evaluate("document.getElementById('graph-legend').textContent")
    assert "pale: superseded or deprecated" in legend and "web page" in legend  # the pale node explained
    page.click("#results li a.hit")  # a memory opened is the view now
    page.wait("document.body.dataset.open")
    assert page.evaluate("location.hash") == ""
    assert page.exceptions == []


@needs_browser
def test_japanese_is_drawn_with_a_japanese_font_of_the_pages_list_not_as_boxes(server, chromium):
    """`make browser` installs fonts-noto-cjk beside Chromium; page.css names the CJK fonts of each system."""
    stack = re.search(r"--cjk:([^;]+);", (ROOT / "src/memory_search/static/page.css").read_text()).group(1)
    named = {name.strip().strip('"') for name in stack.split(",")}
    assert {"Hiragino Sans", "Yu Gothic", "Meiryo", "Noto Sans CJK JP", "Noto Sans JP", "IPAGothic"} <= named
    page = chromium.page(1280, 800, "ja")
    _ready(page, server["base"] + "/")
    page.send("DOM.enable")
    page.send("CSS.enable")
    root = page.send("DOM.getDocument")["root"]["nodeId"]
    title = page.send("DOM.querySelector", {"nodeId": root, "selector": "#search-title"})["nodeId"]
    fonts = page.send("CSS.getPlatformFontsForNode", {"nodeId": title})["fonts"]
    assert page.evaluate("document.getElementById('search-title').textContent") == "検索"
    assert [font["familyName"] for font in fonts if font["familyName"] in named], fonts
