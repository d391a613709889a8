"""Links between memories: how they are written, and extracted while indexing (storage/links.py stores and
resolves them).

Recognized in a memory's body (not inside code: fenced or indented blocks, or inline code):
  [[Note]]  [[Note|alias]]  [[Note#heading]]  [[folder/Note]]  ![[embed]]  [text](../wiki/page.md)

Resolution follows Obsidian-style vaults, case-insensitively: first by path (a wikilink's path from
the memories root, a Markdown link's path from the linking file's folder; `.md` added when missing),
then by file name without extension when exactly one indexed file has it. A name that several files
share is ambiguous and stays unresolved, as does a link to a note that does not exist.

Each link is stored with the candidates it resolves by (target_path, target_name); the resolution
is a join against the files table at read time, so renaming, adding or deleting a target needs no
rewrite of the files that link to it.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-+*]|\d{1,9}[.)])(?:\s|$)")
_ATX_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MARKDOWN_LINK = re.compile(r"(!?)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+[\"'(][^)\n]*)?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Link:
    """A link as written in a file: where it points and how it can be resolved."""

    kind: str  # wikilink | embed | markdown
    line: int  # 1-based, in the file
    target: str  # as written, without alias or heading
    target_path: str | None  # lower-case path from the memories root, ending in .md; None when it leaves the root
    target_name: str  # lower-case file name without .md


@dataclass(frozen=True)
class Edge:
    """A link with its resolution: target_file is None when it points at nothing (or at several files)."""

    source: str  # absolute path
    target_file: str | None  # absolute path
    kind: str
    line: int
    target: str
    ambiguous: bool = False


def extract_links(body: str, source_relpath: str, first_line: int = 1) -> list[Link]:
    """Every link in a memory's body; `first_line` is the file line of the body's first line."""
    links: list[Link] = []
    folder = posixpath.dirname(source_relpath)
    fence: str | None = None
    continues = in_list = False  # the line before is text a line can continue; a list item is open
    for offset, line in enumerate(body.splitlines()):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line.strip()[len(opened.group(1)):].strip():
                fence = None
            continue
        if opened:
            fence, continues = opened.group(1), False
            continue
        if not line.strip():
            continues = False
            continue
        indented = _indent(line) >= 4
        if indented and not continues and not in_list:
            continue  # an indented code block, as CommonMark reads one outside lists
        if _LIST_ITEM.match(line):
            in_list = True
        elif not continues and not line[:1].isspace():
            in_list = False  # a paragraph at the margin after a blank line closes the list
        continues = not _ATX_HEADING.match(line)
        if "[" not in line:
            continue
        text = _INLINE_CODE.sub(lambda match: " " * len(match.group(0)), line)
        number = first_line + offset
        for match in _WIKILINK.finditer(text):
            inner = match.group(2).split("|", 1)[0].split("#", 1)[0].split("^", 1)[0].strip()
            if inner:
                links.append(_wikilink(inner, "embed" if match.group(1) else "wikilink", number))
        for match in _MARKDOWN_LINK.finditer(_WIKILINK.sub(lambda m: " " * len(m.group(0)), text)):
            if match.group(1):  # ![alt](image.png): an image, not a memory
                continue
            link = _markdown_link(match.group(2).strip("<>"), folder, number)
            if link is not None:
                links.append(link)
    return links


def _indent(line: str) -> int:
    """Columns of leading white space, a tab reaching the next multiple of four."""
    column = 0
    for char in line:
        if char == " ":
            column += 1
        elif char == "\t":
            column += 4 - column % 4
        else:
            break
    return column


def _wikilink(target: str, kind: str, line: int) -> Link:
    path = target.lstrip("/")
    if not path.lower().endswith(".md"):
        path += ".md"
    normalized = posixpath.normpath(path)
    inside = not normalized.startswith("../") and normalized != ".."
    return Link(kind, line, target, normalized.lower() if inside else None, _name(normalized))


def _markdown_link(destination: str, folder: str, line: int) -> Link | None:
    if not destination or destination.startswith("#") or _SCHEME.match(destination):
        return None  # an anchor in the same file, or a URL
    path = unquote(destination.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None
    extension = posixpath.splitext(posixpath.basename(path))[1].lower()
    if extension not in ("", ".md"):
        return None  # an image or another file, not a memory
    if not extension:
        path += ".md"
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(folder, path)
    normalized = posixpath.normpath(joined)
    inside = not normalized.startswith("../") and normalized != ".."
    return Link("markdown", line, destination, normalized.lower() if inside else None, _name(normalized))


def _name(path: str) -> str:
    name = posixpath.basename(path)
    return (name[:-3] if name.lower().endswith(".md") else name).lower()
