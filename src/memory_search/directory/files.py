"""The memories directory: which files count, reading them, and their frontmatter."""

from __future__ import annotations

import datetime as dt
import errno
import math
import os
import re
import stat as stat_module
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from ..errors import MemoriesMissing, MemoriesUnreachable, first_line
from .records import Record, make_record

# What the original's CocoIndex flow left out of the index.
DEFAULT_EXCLUDES = ("trashbox/**", "**/_*.md", "**/.git/**", "**/.*")

# What one file may cost; beyond these it is skipped with the reason.
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_FRONTMATTER_DEPTH = 32
MAX_FRONTMATTER_VALUES = 10_000  # after YAML aliases are expanded
HEAD_BYTES = 64 * 1024  # what recent and frontmatter-only readers read of a file

# Dashes as python-frontmatter accepts them: `---` opens, a line of three or more closes.
_FRONTMATTER = re.compile(r"\A-{3,}[ \t]*\r?\n(.*?\r?\n)?-{3,}[ \t]*(?:\r?\n|\Z)", re.S)


def require_directory(root: Path, message: str | None = None) -> Path:
    """The memories directory, or MemoriesMissing saying how to point at it (`message`, the settings'), or
    MemoriesUnreachable when it cannot be looked at right now."""
    try:
        is_folder = stat_module.S_ISDIR(os.stat(root).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_folder = False
    except OSError as error:
        raise unreachable_root(root, error) from None
    if not is_folder:
        raise MemoriesMissing(message or f"memories directory {root} not found: set MEMORIES_DIR to your memories "
                                         "folder")
    return root


def unreachable_root(root: Path, error: OSError) -> MemoriesUnreachable:
    return MemoriesUnreachable(f"the memories directory {root} cannot be read ({error.strerror or error}): check "
                               "its permissions, and that its disk or network share is mounted")


class BadMemory(Exception):
    """A file that cannot be indexed; the message is the reason."""


class UnreadableMemory(BadMemory):
    """A file that could not be opened or read just now (permissions, an I/O error): unlike a bad one, it
    may be fine. `errno` tells a file that is gone (ENOENT) from one out of reach."""

    def __init__(self, error: OSError):
        self.errno = error.errno
        super().__init__(f"unreadable ({error.strerror or error})")

    @property
    def gone(self) -> bool:
        return self.errno in (errno.ENOENT, errno.ENOTDIR)


def relative_path(path: str | os.PathLike, root: Path) -> PurePosixPath | None:
    """The path relative to the memories root, or None when it lies outside it.

    Relative paths are taken as relative to the root, as the original did."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    rel = _inside(Path(os.path.normpath(candidate)), root)
    if rel is None:  # the same place reached through a symlink (macOS /tmp is /private/tmp)
        rel = _inside(Path(os.path.realpath(candidate)), Path(os.path.realpath(root)))
    return rel


def _inside(path: Path, root: Path) -> PurePosixPath | None:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    if not rel.parts or rel.parts[0] == "..":
        return None
    return PurePosixPath(rel.as_posix())


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern:
    """A path glob: `*` and `?` stay inside one folder, `**` crosses folders, `**/` may match none."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            out.append("[^" + re.escape(body[1:]) + "]" if body.startswith("!") else "[" + re.escape(body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def matches_glob(relpath: str, pattern: str) -> bool:
    return _glob_regex(pattern).match(relpath) is not None


def may_hold(folder: str, pattern: str) -> bool:
    """Whether a folder (relative, with /) may hold a file the glob matches: the walk skips those that cannot
    (Claude Code's folder holds far more than its memories)."""
    parts, steps = folder.split("/"), pattern.split("/")
    for index, part in enumerate(parts):
        if index >= len(steps) - 1:
            return "**" in steps[index:]
        if "**" in steps[index]:
            return True
        if not matches_glob(part, steps[index]):
            return False
    return True


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


def name_problem(relpath: str) -> str | None:
    """Why a path cannot be indexed or shown on one line, or None."""
    try:
        relpath.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not valid UTF-8: rename it"
    if "\n" in relpath or "\r" in relpath:
        return "file name contains a line break: rename it"
    return None


def printable(relpath: str) -> str:
    """A path as text that can always be printed (bytes that are not UTF-8 shown as \\xNN)."""
    text = relpath.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.replace("\n", "\\n").replace("\r", "\\r")


@dataclass(frozen=True)
class MemoryFile:
    """A file found in the memories directory (or another source's folder, sources.py), before it is read."""

    path: str  # absolute
    relpath: str  # inside the memories directory; a file of another source's is its absolute path
    size: int
    mtime_ns: int
    kind: str | None = None  # set by a source whose records are all of one kind (sources.py)
    project: str | None = None  # the project a source's folder tells


@dataclass
class Skipped:
    relpath: str
    reason: str
    unreachable: str | None = None  # the system's reason when it could not be looked at just now: it may be there
    # A folder that lists empty or leads elsewhere now (an unmounted drive, a folder swapped for a link): what the
    # index holds under it is kept unless the removal is meant.
    emptied: bool = False


GONE = (errno.ENOENT, errno.ENOTDIR)  # what a folder or file that is no longer there answers


def discover(root: Path, include=(), exclude=()) -> tuple[list[MemoryFile], list[Skipped]]:
    """Every *.md file under root that counts as a memory, and what was left out and why.

    A folder that cannot be listed or a file that cannot be looked at (permissions, an I/O error, a dropped
    mount) is left out with `unreachable` set: what lies there is unknown, not gone. Raises MemoriesMissing
    or MemoriesUnreachable when the root itself cannot be listed, or went away during the walk."""
    excludes = DEFAULT_EXCLUDES + tuple(exclude)
    real_root = root.resolve()
    found: list[MemoryFile] = []
    skipped: list[Skipped] = []
    stack = [root]
    vanished = False  # something listed went away during the walk: the root is checked again at the end
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as error:
            if folder is root:
                if error.errno in GONE:
                    raise MemoriesMissing(f"memories directory {root} not found (it went away while it was "
                                          "read)") from None
                raise unreachable_root(root, error) from None
            if error.errno in GONE:  # listed in its parent a moment ago, and gone since
                vanished = True
                continue
            reason = error.strerror or str(error)
            skipped.append(Skipped(printable(_rel(folder, root)), f"folder cannot be listed ({reason})", reason))
            continue
        for entry in entries:
            rel = _rel(entry.path, root)
            if entry.name.startswith("."):
                continue
            problem = name_problem(rel)
            if problem and (entry.name.endswith(".md") or entry.is_dir(follow_symlinks=False)):
                skipped.append(Skipped(printable(rel), problem))
                continue
            try:
                if entry.is_symlink():
                    # A link is not a memory of its own: one inside the directory leads to a file that is
                    # indexed under its own path (when its path is indexed at all), so no memory is there twice.
                    target = Path(os.path.realpath(entry.path))
                    if entry.name.endswith(".md"):
                        if target != real_root and real_root not in target.parents:
                            skipped.append(Skipped(rel, "symlink leaving the memories directory"))
                        elif not os.path.exists(entry.path):
                            skipped.append(Skipped(rel, "unreadable (dangling link)"))
                    continue
                if entry.is_dir():
                    if not is_excluded(rel + "/x", excludes) and not entry.is_symlink() \
                            and (not include or any(may_hold(rel, pattern) for pattern in include)):
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
                if error.errno in GONE:  # deleted between the listing and this look at it
                    vanished = True
                    continue
                reason = error.strerror or str(error)
                skipped.append(Skipped(rel, f"cannot be looked at ({reason})", reason))
                continue
            found.append(MemoryFile(os.path.abspath(entry.path), rel, stat.st_size, stat.st_mtime_ns))
    if vanished:  # a root that went away (an unmounted disk) is not a directory whose memories were all deleted
        try:
            os.listdir(root)
        except OSError as error:
            if error.errno in GONE:
                raise MemoriesMissing(f"memories directory {root} not found (it went away while it was read)") \
                    from None
            raise unreachable_root(root, error) from None
    found.sort(key=lambda memory_file: memory_file.relpath)
    return found, skipped


def out_of_reach(root: Path, skipped: Iterable[Skipped], allow_removal: bool = False):
    """A function telling, for an absolute path under root of a file not found, the Skipped that keeps it: the
    unreachable folder it lies in or is, else (unless allow_removal) the folder on its way that lists empty now
    (a drive that is not mounted leaves its empty mount point) or is now a link (the path resolves elsewhere).
    None when its folder was listed and holds other entries: a file not found there is gone."""
    unreachable = {os.path.join(str(root), item.relpath): item for item in skipped if item.unreachable}
    top = str(root)
    emptied: dict[str, Skipped | None] = {}

    def emptied_on_the_way(folder: str) -> Skipped | None:
        if folder not in emptied:
            above = None if len(folder) <= len(top) else emptied_on_the_way(os.path.dirname(folder))
            emptied[folder] = above or _emptied(root, folder)
        return emptied[folder]

    def lookup(path: str) -> Skipped | None:
        where = path
        while unreachable and where != top:  # up to the root, or to / for a file of another source
            if where in unreachable:
                return unreachable[where]
            parent = os.path.dirname(where)
            if parent == where:
                break
            where = parent
        if allow_removal or not path.startswith(top + os.sep):
            return None
        return emptied_on_the_way(os.path.dirname(path))

    return lookup


def _emptied(root: Path, folder: str) -> Skipped | None:
    """A Skipped when `folder` (root or a folder under it) is a link now, or a folder listing nothing but dot-files;
    None when it holds entries, or is not there (its parent was listed without it: it was removed)."""
    top = len(folder) <= len(str(root))
    name = str(root) if top else printable(_rel(folder, root))
    if not top and os.path.islink(folder):
        target = os.path.realpath(folder)
        return Skipped(name, f"is now a link to {printable(target)}", "leads elsewhere now", emptied=True)
    try:
        with os.scandir(folder) as entries:
            if any(not entry.name.startswith(".") for entry in entries):
                return None
    except OSError as error:
        if error.errno in GONE:
            return None
        reason = error.strerror or str(error)
        return Skipped(name, f"cannot be listed ({reason})", reason)
    return Skipped(name, "lists empty now (a drive that is not mounted?)", "lists empty now", emptied=True)


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
    data = read_bytes(memory_file.path, MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise BadMemory(f"too large (> {MAX_FILE_BYTES // (1024 * 1024)} MB)")
    if b"\x00" in data:
        raise BadMemory("binary content (NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadMemory("not UTF-8 text") from None
    if not text.strip():
        raise BadMemory("empty")
    return parse_memory(memory_file.path, memory_file.relpath, text, memory_file.kind, memory_file.project), text


def memory_record(path: str, relpath: str) -> Record | None:
    """The record of a file read as index.py reads it, or None when index.py skips it (binary, not UTF-8, empty,
    too large, frontmatter it cannot read): what counts as a memory, for the readers that use no index. A file
    the system will not let us read just now gets a record from its path alone, as it may well be one."""
    try:
        memory, _ = read_memory(MemoryFile(path, relpath, os.stat(path).st_size, 0))
    except (UnreadableMemory, OSError):
        return make_record(path, relpath, {}, "")
    except BadMemory:
        return None
    return memory.record


def read_bytes(path: str, limit: int) -> bytes:
    """At most `limit` bytes of a regular file; anything else (a FIFO, a device) is refused without
    blocking. Raises BadMemory, UnreadableMemory when the system refused to open or read it."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise UnreadableMemory(error) from None
    try:
        if not stat_module.S_ISREG(os.fstat(handle).st_mode):
            raise BadMemory("not a regular file")
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(handle, min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise UnreadableMemory(error) from None
    finally:
        os.close(handle)


def parse_memory(path: str, relpath: str, text: str, kind: str | None = None, project: str | None = None) -> Memory:
    """kind/project: what the file's source tells (sources.py), over its path and frontmatter."""
    metadata, body, body_start_line = split_frontmatter(text)
    if not body.strip() and not metadata:
        raise BadMemory("empty")
    return Memory(make_record(path, relpath, metadata, body, kind, project), body, body_start_line)


def split_frontmatter(text: str) -> tuple[dict, str, int]:
    """(frontmatter, body, 1-based line of the body). Raises BadMemory when the frontmatter cannot be read.

    A leading block that YAML reads as something other than a mapping (a horizontal rule followed by
    prose, a list) is not frontmatter: the whole text is the body."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 1
    block = match.group(1) or ""
    if len(block.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        raise BadMemory(f"frontmatter larger than {MAX_FRONTMATTER_BYTES // 1024} KiB")
    try:
        metadata = _load_yaml(block)
    except RecursionError:
        raise BadMemory(f"frontmatter nested deeper than {MAX_FRONTMATTER_DEPTH} levels") from None
    except Exception as error:  # yaml raises several unrelated types
        raise BadMemory(f"invalid YAML frontmatter ({first_line(error)})") from None
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        return {}, text, 1
    body = text[match.end():]
    return json_safe(metadata), body, text.count("\n", 0, match.end()) + 1


@lru_cache(maxsize=1)
def _yaml_loader():
    import yaml  # imported here so search's hot path never pays for YAML

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):
        """Safe YAML whose impossible dates (2026-13-45) stay strings instead of failing the file."""

    def timestamp(loader, node):
        try:
            return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
        except (ValueError, OverflowError):
            return loader.construct_scalar(node)

    Loader.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    return yaml, Loader


def _load_yaml(block: str):
    yaml, loader = _yaml_loader()
    return yaml.load(block, Loader=loader)  # noqa: S506 - a SafeLoader subclass


def read_record(path: str, relpath: str, kind: str | None = None, project: str | None = None) -> Record:
    """The record of a file from its head; a file that cannot be read or parsed gets a record from its
    path alone. kind/project: what the file's source tells (sources.py)."""
    try:
        head = read_bytes(path, HEAD_BYTES).decode("utf-8-sig", "replace")
        metadata, body, _ = split_frontmatter(head)
    except BadMemory:
        metadata, body = {}, ""
    return make_record(path, relpath, metadata, body, kind, project)


def json_safe(value):
    """Frontmatter as JSON values: dates as ISO strings, non-finite numbers as text. Raises BadMemory past
    the depth and size limits (a YAML alias bomb expands here)."""
    budget = [MAX_FRONTMATTER_VALUES]

    def convert(item, depth):
        budget[0] -= 1
        if budget[0] < 0:
            raise BadMemory(f"frontmatter holds more than {MAX_FRONTMATTER_VALUES} values (YAML aliases?)")
        if depth > MAX_FRONTMATTER_DEPTH:
            raise BadMemory(f"frontmatter nested deeper than {MAX_FRONTMATTER_DEPTH} levels")
        if isinstance(item, dict):
            return {str(key): convert(child, depth + 1) for key, child in item.items()}
        if isinstance(item, (list, tuple)):
            return [convert(child, depth + 1) for child in item]
        if isinstance(item, (dt.date, dt.datetime, dt.time)):
            return item.isoformat()
        if isinstance(item, float) and not math.isfinite(item):
            return str(item)
        if item is None or isinstance(item, (str, int, float, bool)):
            return item
        return str(item)

    return convert(value, 0)
