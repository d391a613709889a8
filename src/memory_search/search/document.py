"""A memory to show whole: its frontmatter apart from its body, and where each link in it leads."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..directory.files import BadMemory, relative_path, split_frontmatter
from ..directory.records import Record, make_record
from ..directory.sources import shown_path

DOCUMENT_LIMIT = 1_000_000  # characters shown at most; read a larger memory in parts


@dataclass
class Document:
    record: Record
    frontmatter: dict
    body: str
    body_start_line: int  # 1-based line of the body's first line in the file
    end_line: int  # the file's last line
    # A link's target as written ([[target]], or a Markdown link's destination) -> the path, relative to the
    # memories directory, of the memory it leads to; a link that leads nowhere (or to several) is absent.
    links: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # why the frontmatter could not be read (then it is part of the body)


def document(memories, path: str, link_limit: int | None = None) -> Document:
    """The memory at `path`, read through Memories.read (the one safe way in), its links resolved by the index;
    a body longer than `link_limit` characters comes without them (it will be shown as text)."""
    from ..errors import MemorySearchError
    from ..storage.links import edges
    from ..storage.schema import ManagedTables

    passage = memories.read(path, 1, None, limit=DOCUMENT_LIMIT)
    root = memories.root
    source = memories.source_of(passage.path)  # Claude Code's memories: kept by their absolute path
    relpath = passage.path if source else os.path.relpath(passage.path, os.path.realpath(root)).replace(os.sep, "/")
    problem = None
    try:
        frontmatter, body, body_start = split_frontmatter(passage.text)
    except BadMemory as reason:
        frontmatter, body, body_start, problem = {}, passage.text, 1, str(reason)
    links: dict[str, str] = {}
    try:
        if link_limit is None or len(body) <= link_limit:
            for edge in edges(ManagedTables.of(root).on(memories.connection), source=memories.filename(passage.path)):
                if edge.target_file is not None:
                    links.setdefault(edge.target, shown_path(edge.target_file, root))
    except MemorySearchError:
        pass  # a memory is shown without its links when the index cannot be read
    within = relative_path(passage.path, source.root) if source else None
    project = source.project_of(within.as_posix()) if source and within else None
    record = make_record(passage.path, relpath, frontmatter, body, source.kind if source else None, project)
    return Document(record, frontmatter, body, body_start, passage.end_line, links, problem)
