"""A memory's Markdown as HTML for the knowledge-base page: read-only, and safe whatever the memory holds.

markdown-it-py (CommonMark, with tables and strikethrough) renders it with raw HTML turned off, so a tag
in a memory is shown as text, never parsed; every text and attribute is escaped by the renderer. What it
would still emit that a hostile note could use is narrowed here, so the output needs no sanitiser after it:
- links: only http, https and mailto URLs stay links (they open in a new tab, without referrer or opener);
  a link to a memory ([[Note]], [text](note.md)) that the index resolves opens that memory in the page;
  anything else (javascript:, data:, a relative file) is shown as its text;
- images are shown as their alt text and never fetched (the page stays offline and tells no one it was read);
- no inline style (table alignment becomes a class), so the page's Content-Security-Policy needs none.

shown() bounds the work: a note longer than RENDER_LIMIT characters, or one whose Markdown is not rendered
within RENDER_SECONDS, is shown as plain text, with a note saying why.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from urllib.parse import unquote, urlencode

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
OPEN_SCHEMES = ("http", "https", "mailto")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")


RENDER_LIMIT = 200_000  # characters rendered as Markdown at most (0.9-1.2 s of prose or links on a busy 2-core machine)
RENDER_SECONDS = 1.0  # rendering given up after this long: a note built to be slow is shown as text


class TooSlow(Exception):
    """The Markdown was not rendered within its time."""


def render(body: str, links: dict[str, str], db: str | None = None, deadline: float | None = None) -> str:
    """HTML of a memory's body. links: a link's target as written -> the relative path of the memory it leads
    to (document.Document.links); db: the db named in the links to memories; deadline: a time.monotonic()
    after which TooSlow is raised."""
    resolved = {unquote(target).strip().lower(): relpath for target, relpath in links.items()}
    return _markdown().render(body, {"links": resolved, "db": db, "deadline": deadline})


def shown(body: str, links: dict[str, str], db: str | None = None) -> tuple[str, str | None]:
    """(HTML, None) of a memory's body rendered, or (its text escaped in a <pre>, why) when it is too large or
    too slow to render."""
    if len(body) > RENDER_LIMIT:
        why = (f"shown as plain text: {len(body):,} characters, more than the {RENDER_LIMIT:,} the page renders "
               "as Markdown")
    else:
        try:
            return render(body, links, db, time.monotonic() + RENDER_SECONDS), None
        except TooSlow:
            why = f"shown as plain text: its Markdown took more than {RENDER_SECONDS:g} s to render"
    return f'<pre class="plain-text">{escapeHtml(body)}</pre>', why


def _in_time(env) -> None:
    deadline = env.get("deadline")
    if deadline is not None and time.monotonic() > deadline:
        raise TooSlow()


def memory_href(relpath: str, db: str | None) -> str:
    """The page's address of a memory: ?db=...&open=..."""
    return "?" + urlencode({**({"db": db} if db else {}), "open": relpath})


class _Markdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        """Before our renderers see a link: no dangerous scheme reaches them."""
        return _allowed(url)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    markdown = _Markdown("commonmark", {"html": False, "linkify": False, "typographer": False})
    markdown.enable(["table", "strikethrough"])
    markdown.inline.ruler.before("link", "wikilink", _wikilink)
    markdown.core.ruler.at("inline", _inline_in_time)
    markdown.inline.ruler.before("text", "deadline", _inline_deadline)
    markdown.core.ruler.push("no_inline_style", _no_inline_style)
    _render_in_time(markdown.renderer)
    markdown.add_render_rule("link_open", _link_open)
    markdown.add_render_rule("link_close", _link_close)
    markdown.add_render_rule("image", _image)
    markdown.add_render_rule("wikilink", _render_wikilink)
    return markdown


def _allowed(url: str) -> bool:
    """A URL may be a link when it has no scheme (a path or an anchor) or one of OPEN_SCHEMES."""
    scheme = _SCHEME.match(url.strip())
    return scheme is None or scheme.group(1).lower() in OPEN_SCHEMES


def _link_open(self, tokens, idx, options, env):
    token = tokens[idx]
    href = token.attrGet("href") or ""
    scheme = _SCHEME.match(href)
    target = None
    if scheme is None and not href.startswith("#"):
        target = env["links"].get(unquote(href).strip().lower())
    if target is not None:
        token.meta["tag"] = "a"
        return (f'<a class="memory-link" href="{escapeHtml(memory_href(target, env["db"]))}" '
                f'data-open="{escapeHtml(target)}">')
    if scheme is not None and scheme.group(1).lower() in OPEN_SCHEMES:
        token.meta["tag"] = "a"
        return f'<a href="{escapeHtml(href)}" rel="noopener noreferrer nofollow" target="_blank">'
    if href.startswith("#"):
        token.meta["tag"] = "a"
        return f'<a href="{escapeHtml(href)}">'
    token.meta["tag"] = "span"  # a relative file the page cannot open, or a memory the index does not know
    return f'<span class="dead-link" title="{escapeHtml(href)}">'


def _link_close(self, tokens, idx, options, env):
    # The opening token is the last link_open before this one at the same level.
    for index in range(idx - 1, -1, -1):
        if tokens[index].type == "link_open" and tokens[index].level == tokens[idx].level:
            return f"</{tokens[index].meta.get('tag', 'a')}>"
    return "</a>"


def _image(self, tokens, idx, options, env):
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    return f'<span class="image-alt" title="{escapeHtml(token.attrGet("src") or "")}">[{escapeHtml(alt)}]</span>'


def _wikilink(state, silent: bool) -> bool:
    """[[target]], [[target|label]], [[target#heading]], ![[embed]], as links.py reads them."""
    start = state.pos
    match = _WIKILINK.match(state.src, start)
    if match is None:
        return False
    if not silent:
        inner = match.group(2)
        target_part, _, label = inner.partition("|")
        token = state.push("wikilink", "", 0)
        target = target_part.split("#", 1)[0].split("^", 1)[0].strip()
        token.meta = {"target": target, "label": (label or target_part).strip(), "embed": bool(match.group(1))}
    state.pos = match.end()
    return True


def _render_wikilink(self, tokens, idx, options, env):
    meta = tokens[idx].meta
    label = escapeHtml(meta["label"])
    relpath = env["links"].get(meta["target"].lower())
    if relpath is None:
        return f'<span class="dead-link" title="{escapeHtml(meta["target"])}">{label}</span>'
    kind = "memory-link embed" if meta["embed"] else "memory-link"
    return (f'<a class="{kind}" href="{escapeHtml(memory_href(relpath, env["db"]))}" '
            f'data-open="{escapeHtml(relpath)}">{label}</a>')


def _no_inline_style(state) -> None:
    """Table alignment as a class (align-left, align-center, align-right) instead of a style attribute."""
    for token in state.tokens:
        style = token.attrGet("style") if token.attrs else None
        if style:
            token.attrs.pop("style", None)
            token.attrSet("class", "align-" + style.rsplit(":", 1)[-1].strip())


def _inline_deadline(state, silent: bool) -> bool:
    """An inline rule that matches nothing: the deadline checked every 512 places within a paragraph."""
    env = state.env
    env["steps"] = steps = env.get("steps", 0) + 1
    if not steps & 511:
        _in_time(env)
    return False


def _inline_in_time(state) -> None:
    """markdown-it's inline stage, with the deadline checked between blocks (a table cell, a paragraph)."""
    for token in state.tokens:
        if token.type == "inline":
            _in_time(state.env)
            if token.children is None:
                token.children = []
            state.md.inline.parse(token.content, state.md, state.env, token.children)


def _render_in_time(renderer) -> None:
    """The renderer with the deadline checked before each block's inline content."""
    render_inline = renderer.renderInline

    def render_inline_in_time(tokens, options, env):
        _in_time(env)
        return render_inline(tokens, options, env)

    renderer.renderInline = render_inline_in_time
