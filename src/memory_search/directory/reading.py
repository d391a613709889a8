"""Reading a memory's text for a client: the one way a face opens a file by a path it was given.

A path is resolved inside the memories directory, then opened one component at a time with O_NOFOLLOW
from the directory's own descriptor, so a folder swapped for a symlink between the check and the open
makes the open fail instead of leaving the directory; the opened file itself is checked with fstat.
Only Markdown memories (*.md, no hidden component) are read, and lines are streamed, so memory stays
flat for any file size.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import MemoriesMissing, MemoryNotFound, PathOutside, UsageError
from .files import relative_path

READ_LIMIT = 200_000  # characters returned at most; a larger range must be asked for in parts
_BLOCK = 1 << 16


@dataclass
class Passage:
    path: str  # absolute, inside the memories directory
    start_line: int
    end_line: int  # the last line returned (the file's last when it ends first)
    text: str


def resolve(root: Path, path: str) -> PurePosixPath:
    """The path of the memory `path` names, relative to the memories directory, symlinks inside it resolved.
    Raises PathOutside for anything else."""
    given = Path(path)
    if ".." in given.parts:
        raise PathOutside(f"{path}: '..' is not allowed; give a path inside the memories directory")
    relative = relative_path(given, root)
    if relative is None:
        raise PathOutside(f"{path} is outside the memories directory {root}: give a path inside it")
    try:
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(root, relative))
    except OSError:  # a link that changed while it was being followed
        raise MemoryNotFound(f"{path} is not a file in the memories directory {root}") from None
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise PathOutside(f"{path} leads outside the memories directory {root}: give a path inside it")
    inside = PurePosixPath(Path(real).relative_to(real_root).as_posix())
    if not inside.parts or any(part.startswith(".") for part in inside.parts) or inside.suffix != ".md":
        raise PathOutside(f"{path} is not a memory (a .md file, not hidden) in the memories directory {root}")
    return inside


def read(root: Path, path: str, start_line: int = 1, end_line: int | None = None,
         limit: int = READ_LIMIT) -> Passage:
    """Lines start_line..end_line (1-based, inclusive; None: to the end) of the memory at `path`."""
    if start_line < 1 or (end_line is not None and end_line < 1):
        raise UsageError("start_line and end_line count from 1")
    if end_line is not None and end_line < start_line:
        raise UsageError(f"end_line {end_line} is before start_line {start_line}")
    inside = resolve(root, path)
    descriptor = _open_inside(root, inside, path)
    try:
        lines, last, total = _lines(descriptor, start_line, end_line, limit, path)
    finally:
        os.close(descriptor)
    if start_line > max(total, 1):
        raise UsageError(f"{path} has {total} lines: start_line {start_line} is past the end")
    return Passage(str(Path(os.path.realpath(root)) / inside), start_line, last, "".join(lines))


def _open_inside(root: Path, inside: PurePosixPath, path: str) -> int:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        folder = os.open(os.path.realpath(root), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as error:
        raise MemoriesMissing(f"cannot open the memories directory {root} ({error.strerror})") from None
    try:
        for part in inside.parts[:-1]:
            try:
                step = os.open(part, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=folder)
            except OSError:
                raise MemoryNotFound(f"{path} is not a file in the memories directory {root}") from None
            os.close(folder)
            folder = step
        try:
            descriptor = os.open(inside.parts[-1], flags | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0), dir_fd=folder)
        except OSError:
            raise MemoryNotFound(f"{path} is not a file in the memories directory {root}") from None
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise MemoryNotFound(f"{path} is not a regular file in the memories directory {root}")
    return descriptor


def _lines(descriptor: int, start: int, end: int | None, limit: int, path: str) -> tuple[list[str], int, int]:
    """(the wanted lines, the last line number returned, lines counted), reading no further than needed."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    wanted: list[str] = []
    size = 0
    number = 0  # lines completed so far
    pending = ""
    while True:
        block = os.read(descriptor, _BLOCK)
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError:
            raise UsageError(f"{path} is not UTF-8 text") from None
        pending += text
        pieces = pending.split("\n")
        pending = pieces.pop()
        unterminated = not block and bool(pending)
        if unterminated:
            pieces.append(pending)  # the last line, without its line break
            pending = ""
        for index, piece in enumerate(pieces):
            number += 1
            line = piece if unterminated and index == len(pieces) - 1 else piece + "\n"
            if number >= start and (end is None or number <= end):
                size += len(line)
                if size > limit:
                    raise UsageError(f"{path} lines {start}-{end or 'end'} are more than {limit:,} characters: "
                                     "ask for a smaller line range")
                wanted.append(line)
            if end is not None and number >= end:
                return wanted, number, number
        if not block:
            return wanted, number, number
