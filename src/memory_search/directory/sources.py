"""Where memories come from: the memories directory, and the folders of other kinds of notes beside it.

One mechanism: a list of sources (sources()), each a root folder, the files it takes in (globs) and the kind
its records get. The memories directory is the first (its records' kinds come from its layout); with the setting
MEMORIES_CLAUDE_CODE, Claude Code's own memories follow, as records of kind `claude`:

  <claude>/CLAUDE.md                                   the user's instructions for every project
  <claude>/projects/<project>/memory/**.md             auto memory: MEMORY.md and its topic files
  <project folder>/CLAUDE.md, CLAUDE.local.md          a project's instructions
  <project folder>/.claude/CLAUDE.md

<claude> is ~/.claude (or $CLAUDE_CONFIG_DIR); <project> is the project folder's absolute path with every
character but letters and digits made `-` (-home-alice-src-webapp), which is how the project folders are found.
Files of the memories directory are stored by their path inside it; files of the other sources by their
absolute path, in both the index's filename and relpath, so every reader that joins a relpath to the
memories directory reaches them unchanged.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ..errors import MemoriesMissing, MemoriesUnreachable, MemorySearchError
from .files import GONE, MemoryFile, Skipped, discover, matches_glob, read_record
from .records import Record

CLAUDE_KIND = "claude"
OTHER_SOURCE_KINDS = (CLAUDE_KIND,)  # the kinds of records whose files lie outside the memories directory
AUTO_MEMORY = "projects/*/memory/**/*.md"
PROJECT_FILES = ("CLAUDE.md", "CLAUDE.local.md")
MAX_LISTINGS = 64  # folders listed to find one project folder from its encoded name
_NOT_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9]")


@dataclass(frozen=True)
class Source:
    """A root folder, the files under it that count (globs; none: every memory file) and their records' kind
    (None: from the memories directory's layout). `projects` maps a folder inside the root to the project its
    files belong to."""

    root: Path
    kind: str | None = None
    include: tuple[str, ...] = ()
    projects: tuple[tuple[str, str], ...] = ()  # (folder relative to root, "" for all of it; project name)
    inside: Path | None = None  # a folder the root lies in: when that one is there and the root is not, it is gone

    def project_of(self, relpath: str) -> str | None:
        best = None
        for folder, name in self.projects:
            if (not folder or relpath == folder or relpath.startswith(folder + "/")) and \
                    (best is None or len(folder) > len(best[0])):
                best = (folder, name)
        return best[1] if best else None

    def takes(self, relpath: str) -> bool:
        """Whether a path inside the root is one of this source's files."""
        return not self.include or any(matches_glob(relpath, pattern) for pattern in self.include)


def encoded(path: str) -> str:
    """A project folder's name under <claude>/projects, as Claude Code makes it."""
    return _NOT_ALPHANUMERIC.sub("-", path)


def project_folder(name: str) -> Path | None:
    """The folder on this machine whose encoded path is `name`, or None: each `-` of the name may have been
    a `/` or another character, so the folders that fit are followed down from /."""
    budget = [MAX_LISTINGS]

    def descend(folder: str, rest: str) -> str | None:
        if not rest:
            return folder
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        try:
            with os.scandir(folder) as scan:
                names = sorted((entry.name for entry in scan if entry.is_dir()), key=len, reverse=True)
        except OSError:
            return None
        for entry in names:
            part = encoded(entry)
            if rest == part or rest.startswith(part + "-"):
                found = descend(os.path.join(folder, entry), rest[len(part) + 1:])
                if found:
                    return found
        return None

    if not name.startswith("-"):
        return None
    found = descend("/", name[1:])
    return Path(found) if found and encoded(found) == name else None


def project_name(name: str, folder: Path | None) -> str:
    """A project's name as session summaries' `project` has it: its folder's name; without the folder, the
    last part of the encoded name."""
    if folder is not None:
        return folder.name
    return name.rstrip("-").rsplit("-", 1)[-1] or name


@dataclass
class Listing:
    """The files every source holds now, what was left out, and how to tell a path that is gone from one that
    could not be looked at."""

    found: list[MemoryFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # Folders of other sources that could not be looked at now, by absolute path, with why: what the index
    # holds under them is kept, not taken for deleted. "" when the Claude folder itself could not be listed,
    # so which project folders are sources is unknown.
    out_of_reach: dict[str, str] = field(default_factory=dict)
    roots: list[Path] = field(default_factory=list)  # the roots of the other sources that were listed
    unfound: set[str] = field(default_factory=set)  # names under <claude>/projects whose folder is not found

    def kept(self, indexed, memories_root: Path) -> list[Skipped]:
        """Skipped entries, as discover() makes for a folder it could not list, for what the index holds where
        nothing could be looked at now: a source's root that is not there or cannot be read, and, when the
        Claude folder could not be listed, every file outside the sources that were (its project folders are
        unknown). What the indexer's compare() and verify keep rather than take for deleted."""
        entries = [Skipped(path, f"its folder {path} cannot be listed ({reason})", reason)
                   for path, reason in self.out_of_reach.items() if path]
        if "" not in self.out_of_reach and not self.unfound:
            return entries
        listed = [memories_root, *self.roots, *(Path(path) for path in self.out_of_reach if path)]
        for path in indexed:
            if any(_under(path, root) for root in listed):
                continue
            folder = os.path.dirname(path)
            folder = os.path.dirname(folder) if os.path.basename(folder) == ".claude" else folder
            if "" in self.out_of_reach:
                entries.append(Skipped(path, self.out_of_reach[""], self.out_of_reach[""]))
            elif encoded(folder) in self.unfound:  # a project folder that went away (an unmounted disk)
                entries.append(Skipped(path, f"the project folder {folder} is not found", "not found"))
        return entries


def claude_sources(folders: tuple[Path, ...], out_of_reach: dict[str, str], unfound: set[str]) -> list[Source]:
    """The sources of Claude Code's memories under each Claude folder; a folder that cannot be listed is told
    to `out_of_reach`, a project whose folder is not found to `unfound`."""
    sources: list[Source] = []
    for claude in folders:
        try:
            with os.scandir(claude / "projects") as scan:
                names = sorted(entry.name for entry in scan if entry.is_dir() and not entry.name.startswith("."))
        except FileNotFoundError:
            names = []
            if not claude.is_dir():
                out_of_reach[str(claude)] = "not found"
                out_of_reach[""] = f"the Claude Code folder {claude} is not found"
                continue
        except OSError as error:
            out_of_reach[str(claude)] = error.strerror or str(error)
            out_of_reach[""] = f"the Claude Code folder {claude} cannot be read ({error.strerror or error})"
            continue
        projects = []
        for name in names:
            folder = project_folder(name)
            project = project_name(name, folder)
            projects.append((f"projects/{name}", project))
            if folder is None:
                unfound.add(name)
            else:
                projects_of_folder = (("", project),)
                sources.append(Source(folder, CLAUDE_KIND, PROJECT_FILES, projects_of_folder))
                sources.append(Source(folder / ".claude", CLAUDE_KIND, ("CLAUDE.md",), projects_of_folder, folder))
        sources.insert(0, Source(claude, CLAUDE_KIND, ("CLAUDE.md", AUTO_MEMORY), tuple(projects)))
    return sources


def other_sources(settings, listing: Listing | None = None) -> list[Source]:
    """The sources beside the memories directory the settings ask for; what could not be read is told to the
    listing."""
    listing = listing or Listing()
    return claude_sources(tuple(settings.claude_code), listing.out_of_reach, listing.unfound)


def sources(settings, include=(), listing: Listing | None = None) -> list[Source]:
    """Every source, the memories directory first (`include`: the index's selection of its files)."""
    return [Source(settings.memories_root, None, tuple(include or ())), *other_sources(settings, listing)]


def list_sources(settings, include=(), exclude=()) -> Listing:
    """Every memory file of every source, each source listed by discover(). The memories directory's files
    keep their path inside it (include/exclude apply to them; a directory missing or out of reach raises
    MemoriesMissing or MemoriesUnreachable); another source's are named by their absolute path, and its root
    that cannot be looked at now is in out_of_reach. A file two sources take in is listed once, by the first."""
    listing = Listing()
    seen: set[str] = set()
    for source in sources(settings, include, listing):
        memories = source.kind is None
        try:
            files, left_out = discover(source.root, source.include, exclude if memories else ())
        except (MemoriesMissing, MemoriesUnreachable):
            if memories:
                raise
            reason = _reason(source.root)
            if reason != "not found" or source.inside is None or not source.inside.is_dir():
                listing.out_of_reach[str(source.root)] = reason
            continue  # a project without .claude/ holds nothing there
        if not memories:
            listing.roots.append(source.root)
            files = [replace(memory_file, relpath=memory_file.path, kind=source.kind,
                             project=source.project_of(memory_file.relpath)) for memory_file in files]
            left_out = [replace(item, relpath=os.path.join(str(source.root), item.relpath)) for item in left_out]
        listing.found += [memory_file for memory_file in files if memory_file.path not in seen]
        seen.update(memory_file.path for memory_file in files)
        listing.skipped += left_out
    return listing


def shown_path(path: str, root: Path) -> str:
    """A file's path as the index's relpath has it: inside the memories directory, else absolute (a file of
    another source)."""
    return Path(path).relative_to(root).as_posix() if Path(path).is_relative_to(root) else path


def _under(path: str, root: Path) -> bool:
    top = str(root).rstrip("/") + "/"
    return path.startswith(top)


def _reason(root: Path) -> str:
    try:
        os.listdir(root)
    except OSError as error:
        return "not found" if error.errno in GONE else (error.strerror or str(error))
    return "went away while it was read"


def owner(settings, path: str) -> tuple[Source, PurePosixPath] | None:
    """The other source whose file `path` (absolute) is, with its path inside that source's root, symlinks
    inside the root resolved; None when no source takes it in (a project's other files are not memories)."""
    from .reading import resolve

    if not settings.claude_code or not os.path.isabs(path):
        return None
    for source in sorted(other_sources(settings), key=lambda source: -len(str(source.root))):
        try:
            inside = Path(os.path.normpath(path)).relative_to(source.root).as_posix()
        except ValueError:
            continue
        if not source.takes(inside):
            continue
        try:
            resolved = resolve(source.root, inside)
        except MemorySearchError:
            return None
        return (source, resolved) if source.takes(str(resolved)) else None
    return None


def recent_claude(settings, top: int = 10, project: str | None = None, since: dt.date | None = None,
                  until: dt.date | None = None) -> list[Record]:
    """Claude Code's memories last changed first, dated by that change (they have no date folders), optionally
    one project's and within since..until (both inclusive); a folder that cannot be read is left out."""
    listing = Listing()
    changed: list[tuple[int, MemoryFile]] = []
    for source in other_sources(settings, listing):
        try:
            files, _ = discover(source.root, source.include)
        except (MemoriesMissing, MemoriesUnreachable):
            continue
        for memory_file in files:
            name = source.project_of(memory_file.relpath)
            if project is None or name == project:
                changed.append((memory_file.mtime_ns, replace(memory_file, kind=source.kind, project=name)))
    records: list[Record] = []
    for mtime_ns, memory_file in sorted(changed, key=lambda item: (-item[0], item[1].path)):
        moment = dt.datetime.fromtimestamp(mtime_ns / 1e9)
        if (since and moment.date() < since) or (until and moment.date() > until):
            continue
        record = read_record(memory_file.path, memory_file.path, memory_file.kind, memory_file.project)
        records.append(replace(record, date=moment.date(), time=moment.strftime("%H:%M:%S")))
        if len(records) >= top:
            break
    return records
