"""Links between memories: extracted while indexing, stored per source file, resolved when read.

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

from psycopg import sql

from ..storage.schema import ManagedTables

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


# --- the links table -------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {links} (
    source text NOT NULL REFERENCES {files} (filename) ON DELETE CASCADE,
    kind text NOT NULL,
    line integer NOT NULL,
    target text NOT NULL,
    target_path text,
    target_name text NOT NULL
);
CREATE INDEX IF NOT EXISTS {links_source} ON {links} (source);
CREATE INDEX IF NOT EXISTS {links_path} ON {links} (target_path);
CREATE INDEX IF NOT EXISTS {links_name} ON {links} (target_name);
CREATE INDEX IF NOT EXISTS {files_lower_relpath} ON {files} (lower(relpath));
"""


def _names(tables: ManagedTables) -> dict:
    return {"links": tables.sql("links"), "files": tables.sql("files"),
            **{name: sql.Identifier(f"{tables.prefix}__{name}")
               for name in ("links_source", "links_path", "links_name", "files_lower_relpath")}}


def create_table(conn, tables: ManagedTables) -> None:
    conn.execute(sql.SQL(_SCHEMA).format(**_names(tables)))


def forget_links(conn, tables: ManagedTables, sources: list[str]) -> None:
    """Drop the links of these files; run inside the transaction that replaces their chunks."""
    conn.execute(sql.SQL("DELETE FROM {} WHERE source = ANY(%s)").format(tables.sql("links")), (sources,))


def add_links(conn, tables: ManagedTables, links: list[tuple[str, Link]]) -> None:
    """(source file, link) pairs, after forget_links in the same transaction."""
    if links:
        with conn.cursor().copy(sql.SQL("COPY {} (source, kind, line, target, target_path, target_name) FROM STDIN")
                                .format(tables.sql("links"))) as copy:
            for source, link in links:
                copy.write_row((source, link.kind, link.line, link.target, link.target_path, link.target_name))


# --- reading ---------------------------------------------------------------------------------------

# One row per link with its target file: by path first, then by a file name only one file has.
_RESOLVED = """
WITH readable AS (
    SELECT filename, lower(relpath) AS path,
           lower(regexp_replace(regexp_replace(relpath, '^.*/', ''), '\\.md$', '', 'i')) AS name
    FROM {files} WHERE error IS NULL
), names AS (
    SELECT name, min(filename) AS filename, count(*) AS n FROM readable GROUP BY name
)
SELECT l.source, coalesce(by_path.filename, CASE WHEN by_name.n = 1 THEN by_name.filename END) AS target_file,
       l.kind, l.line, l.target, (by_path.filename IS NULL AND coalesce(by_name.n, 0) > 1) AS ambiguous
FROM {links} l
LEFT JOIN readable by_path ON by_path.path = l.target_path
LEFT JOIN names by_name ON by_name.name = l.target_name
"""


def _resolved(tables: ManagedTables) -> sql.Composed:
    return sql.SQL(_RESOLVED).format(files=tables.sql("files"), links=tables.sql("links"))


def exists(conn, tables: ManagedTables) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (tables.links,)).fetchone()[0]


def edges(conn, tables: ManagedTables, source: str | None = None, target: str | None = None) -> list[Edge]:
    """Resolved links, all of them or those from `source` / to `target` (absolute paths), in file order."""
    if not exists(conn, tables):
        return []
    clauses, params = [], []
    if source is not None:
        clauses.append(sql.SQL("source = %s"))
        params.append(source)
    if target is not None:
        clauses.append(sql.SQL("target_file = %s"))
        params.append(target)
    where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")
    query = sql.SQL("SELECT * FROM ({}) resolved{} ORDER BY source, line, target").format(
        _resolved(tables), where)
    return [Edge(*row) for row in conn.execute(query, params).fetchall()]


def counts(conn, tables: ManagedTables) -> dict:
    """How many links the index holds, how many resolve, and why the others do not."""
    if not exists(conn, tables):
        return {"links": 0, "resolved": 0, "unresolved": 0, "ambiguous": 0, "by_kind": {}}
    rows = conn.execute(sql.SQL(
        "SELECT kind, count(*), count(target_file), count(*) FILTER (WHERE ambiguous) FROM ({}) resolved "
        "GROUP BY kind ORDER BY kind").format(_resolved(tables))).fetchall()
    total = sum(row[1] for row in rows)
    resolved = sum(row[2] for row in rows)
    return {"links": total, "resolved": resolved, "unresolved": total - resolved,
            "ambiguous": sum(row[3] for row in rows), "by_kind": {row[0]: row[1] for row in rows}}
