#!/usr/bin/env python3
"""The knowledge-base page in headless Chromium: its first search timed against the API's own, and its
screenshots: see `page.py --help`. Development tooling."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.join(ROOT, "src"))
sys.path.insert(1, os.path.join(ROOT, "tools"))  # chromium.py
from memory_search.faces.environment import ensure  # noqa: E402

ensure("starlette", "markdown_it")

import statistics  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402

import chromium  # noqa: E402
import click  # noqa: E402
from faces_lib import running_http_server  # noqa: E402

from memory_search.config import ENVIRONMENT_HELP  # noqa: E402
from memory_search.faces.console import command, memories_option, run  # noqa: E402

QUERIES = ("how do we tune the HNSW index", "セッション要約の保存先", "先週の会議で決めたこと")
SHOTS = (  # file, width, height, language, what the address opens
    ("page-desktop.png", 1280, 900, "en-US", {"q": "how do we tune the HNSW index"}),
    ("page-phone.png", 390, 844, "ja", {"q": "セッション要約の保存先"}),
)


def timed(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as answer:
        answer.read()
    return (time.perf_counter() - started) * 1000


def first_search(browser: chromium.Browser, base: str, url: str) -> float:
    """Milliseconds from the navigation to /?q=... to its results drawn, in a fresh browser context (nothing
    cached) whose tab has shown a page of the server before, as a tab a person has open has."""
    page = browser.page(1280, 900, "en-US")
    try:
        page.goto(base + "/api/health")
        time.sleep(0.2)
        page.goto(url, until="window.firstSearchAt !== undefined")
        return page.evaluate("window.firstSearchAt")
    finally:
        page.close()


def measure(base: str, query: str, runs: int, browser: chromium.Browser) -> dict:
    """Each run asks the API, the page's JSON and the page in turn, so that a busy moment of the machine weighs
    on all three alike."""
    api = f"{base}/api/search?" + urllib.parse.urlencode({"db": "default", "q": query, "limit": 10})
    page_json = f"{base}/page/search.json?" + urllib.parse.urlencode({"q": query})
    page = f"{base}/?" + urllib.parse.urlencode({"q": query})
    timed(api), timed(page_json), first_search(browser, base, page)  # the model and the connections are warm
    figures: dict[str, list[float]] = {"api_ms": [], "page_json_ms": [], "page_ms": []}
    for _ in range(runs):
        figures["api_ms"].append(timed(api))
        figures["page_json_ms"].append(timed(page_json))
        figures["page_ms"].append(first_search(browser, base, page))
    return {key: round(statistics.median(values), 1) for key, values in figures.items()}


def screenshots(base: str, folder: Path, browser: chromium.Browser) -> list[Path]:
    """The page at desktop and phone width, a search made and its first result opened."""
    made = []
    for name, width, height, language, address in SHOTS:
        page = browser.page(width, height, language, mobile=width < 600)
        try:
            page.goto(f"{base}/?" + urllib.parse.urlencode(address), until="document.body.dataset.ready === '1'")
            page.wait("document.body.dataset.results > 0")
            if width >= 600:
                page.click("#results li a.hit")
                page.wait("document.body.dataset.open")
            page.evaluate("window.scrollTo(0, 0)")
            time.sleep(0.3)
            page.screenshot(folder / name)
            made.append(folder / name)
            if width >= 600:  # the recent records and the graph, further down
                page.evaluate("document.getElementById('graph-section').scrollIntoView()")
                page.wait("document.body.dataset.nodes")
                page.evaluate("document.getElementById('graph-section').scrollIntoView({block: 'end'})")
                time.sleep(0.3)
                page.screenshot(folder / "page-graph.png")
                made.append(folder / "page-graph.png")
        finally:
            page.close()
    return made


def smaller(path: Path) -> None:
    """The screenshot in 256 colours, a third of its size, when Pillow is at hand (it is no dependency)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        reduced = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    reduced.save(path, optimize=True)


EXAMPLES = """\
  page.py --memories examples/memories
  page.py --memories examples/memories --runs 10 --shots references/"""


@command(EXAMPLES, ENVIRONMENT_HELP + """
  The memories directory must be indexed (index.py); Chromium must be installed (make browser);
  Japanese text in the screenshots needs a CJK font (apt-get install fonts-noto-cjk).""")
@click.option("--runs", type=click.IntRange(3, 200), default=10, show_default=True, help="runs per figure")
@click.option("--shots", metavar="DIR", help="also save the page's screenshots (desktop, phone, graph) in DIR")
@memories_option
def page_bench_command(runs, shots, memories):
    """Time the page's first search against the API's own time for the same query.

    Starts scripts/serve.py on a free loopback port. For each query, the median of RUNS: GET
    /api/search (the API, both branches), GET /page/search.json (what the page asks), and the
    page in a fresh headless Chromium context, from the navigation to /?q=QUERY until its results
    are drawn (the page's assets, its overview, recent records and the search, as a person sees it)."""
    if not chromium.available():
        raise click.UsageError("Chromium is not installed: run `make browser` (apt-get install chromium)")
    env = dict(os.environ)
    if memories:
        env["MEMORIES_DIR"] = os.path.abspath(os.path.expanduser(memories))
    with running_http_server(env) as base, chromium.Browser() as browser:
        click.echo(f"medians of {runs} runs, each asking the API, the page's JSON and the page in Chromium (a fresh "
                   "browser context, from the navigation to /?q= to its results drawn)")
        for query in QUERIES:
            figures = measure(base, query, runs, browser)
            click.echo(f"{query}: API {figures['api_ms']} ms, /page/search.json {figures['page_json_ms']} ms, "
                       f"page in Chromium {figures['page_ms']} ms "
                       f"({figures['page_ms'] - figures['api_ms']:+.1f} ms against the API)")
        if shots:
            folder = Path(shots)
            folder.mkdir(parents=True, exist_ok=True)
            for path in screenshots(base, folder, browser):
                smaller(path)
                click.echo(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    run(page_bench_command, "page.py")
