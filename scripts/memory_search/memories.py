"""The memories directory: which files count, reading them, and their frontmatter."""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import MemoriesMissing, first_line
from .records import Record, kind_of, make_record

SCOPES = ("session", "web", "minutes", "wiki", "all")

# What the original's CocoIndex flow left out of the index.
DEFAULT_EXCLUDES = ("trashbox/**", "**/_*.md", "**/.git/**", "**/.*")

MAX_FILE_BYTES = 10 * 1024 * 1024

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)


def require_directory(root: Path) -> Path:
    """The memories directory, or MemoriesMissing saying how to point at it."""
    if not root.is_dir():
        raise MemoriesMissing(f"memories directory {root} not found: set MEMORIES_DIR or --memories")
    return root


class BadMemory(Exception):
    """A file that cannot be indexed; the message is the reason."""


def in_scope(relpath: str | PurePosixPath, scope: str) -> bool:
    return scope == "all" or kind_of(relpath) == scope


def relative_path(path: str | os.PathLike, root: Path) -> PurePosixPath | None:
    """The path relative to the memories root, or None when it lies outside it.

    Relative paths are taken as relative to the root, as the original did."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        rel = Path(os.path.normpath(candidate)).relative_to(root)
    except ValueError:
        return None
    if not rel.parts or rel.parts[0] == "..":
        return None
    return PurePosixPath(rel.as_posix())


def matches_glob(relpath: str, pattern: str) -> bool:
    """fnmatch where a leading `**/` may also match no folder at all."""
    if fnmatch.fnmatchcase(relpath, pattern):
        return True
    return pattern.startswith("**/") and matches_glob(relpath, pattern[3:])


def is_excluded(relpath: str, excludes=DEFAULT_EXCLUDES) -> bool:
    parts = relpath.split("/")
    for pattern in excludes:
        if pattern == "**/.*":  # any dot-file or dot-folder on the way
            if any(part.startswith(".") for part in parts):
                return True
        elif pattern.endswith("/**"):
            prefix = pattern[:-3]
            if any(matches_glob("/".join(parts[:i]), prefix) for i in range(1, len(parts))):
                return True
        elif matches_glob(relpath, pattern):
            return True
    return False


@dataclass(frozen=True)
class MemoryFile:
    """A file found in the memories directory, before it is read."""

    path: str  # absolute
    relpath: str
    size: int
    mtime_ns: int


@dataclass
class Skipped:
    relpath: str
    reason: str


def discover(root: Path, include=(), exclude=()) -> tuple[list[MemoryFile], list[Skipped]]:
    """Every *.md file under root that counts as a memory, and what was left out and why."""
    excludes = DEFAULT_EXCLUDES + tuple(exclude)
    real_root = root.resolve()
    found: list[MemoryFile] = []
    skipped: list[Skipped] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as error:
            skipped.append(Skipped(_rel(folder, root), f"unreadable folder ({error.strerror})"))
            continue
        for entry in entries:
            rel = _rel(entry.path, root)
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if target != real_root and real_root not in target.parents:
                        if entry.name.endswith(".md"):
                            skipped.append(Skipped(rel, "symlink leaving the memories directory"))
                        continue
                if entry.is_dir():
                    if not is_excluded(rel + "/x", excludes) and not entry.is_symlink():
                        stack.append(Path(entry.path))
                    continue
                if not entry.name.endswith(".md") or is_excluded(rel, excludes):
                    continue
                if not entry.is_file():
                    skipped.append(Skipped(rel, "not a regular file" if os.path.lexists(entry.path)
                                           and os.path.exists(entry.path) else "unreadable (dangling link)"))
                    continue
                if include and not any(matches_glob(rel, pattern) for pattern in include):
                    continue
                stat = entry.stat()
            except OSError as error:
                skipped.append(Skipped(rel, f"unreadable ({error.strerror})"))
                continue
            found.append(MemoryFile(os.path.abspath(entry.path), rel, stat.st_size, stat.st_mtime_ns))
    found.sort(key=lambda memory_file: memory_file.relpath)
    return found, skipped


def _rel(path, root: Path) -> str:
    return Path(path).relative_to(root).as_posix()


@dataclass
class Memory:
    """A parsed memory: its record, its body, and where the body starts in the file."""

    record: Record
    body: str
    body_start_line: int  # 1-based line of the body's first line


def read_memory(memory_file: MemoryFile) -> tuple[Memory, str]:
    """Read and parse one file; returns the memory and the raw text. Raises BadMemory."""
    if memory_file.size > MAX_FILE_BYTES:
        raise BadMemory(f"too large ({memory_file.size // (1024 * 1024)} MB > {MAX_FILE_BYTES // (1024 * 1024)} MB)")
    try:
        with open(memory_file.path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise BadMemory(f"unreadable ({error.strerror})") from None
    if b"\x00" in data[:8192]:
        raise BadMemory("binary content")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadMemory("not UTF-8 text") from None
    if not text.strip():
        raise BadMemory("empty")
    return parse_memory(memory_file.path, memory_file.relpath, text), text


def parse_memory(path: str, relpath: str, text: str) -> Memory:
    metadata, body, body_start_line = split_frontmatter(text)
    if not body.strip() and not metadata:
        raise BadMemory("empty")
    return Memory(make_record(path, relpath, metadata, body), body, body_start_line)


def split_frontmatter(text: str) -> tuple[dict, str, int]:
    """(frontmatter, body, 1-based line of the body). Raises BadMemory on invalid YAML."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 1
    import frontmatter  # python-frontmatter; imported here so search's hot path never pays for YAML

    try:
        metadata, _ = frontmatter.parse(text)
    except Exception as error:  # yaml raises several unrelated types
        raise BadMemory(f"invalid YAML frontmatter ({first_line(error)})") from None
    if not isinstance(metadata, dict):
        raise BadMemory("frontmatter is not a mapping")
    body = text[match.end():]
    return json_safe(metadata), body, text.count("\n", 0, match.end()) + 1


def read_record(path: str, relpath: str) -> Record:
    """The record of a file from its first 64 KiB; a file that cannot be read or parsed gets a record from its
    path alone."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            head = handle.read(64 * 1024)
        metadata, body, _ = split_frontmatter(head)
    except (OSError, UnicodeDecodeError, BadMemory):
        metadata, body = {}, ""
    return make_record(path, relpath, metadata, body)


def json_safe(value):
    """Frontmatter with dates turned into ISO strings, so it serializes as JSON."""
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
