"""The newest records by date folder and HHMMSS file name: no database, no model."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from .errors import UsageError
from .memories import name_problem, read_record, require_directory
from .records import DATE_FOLDER, RAW_KINDS, TIMED_NAME, Record

RECENT_KINDS = RAW_KINDS + ("all",)


def list_recent(memories_root: Path, kind: str = "session", top: int = 10, project: str | None = None,
                days: int | None = None, today: dt.date | None = None) -> list[Record]:
    """Newest first: (date folder, HHMMSS) descending, optionally within `days` days and one project."""
    if kind not in RECENT_KINDS:
        raise UsageError(f"unknown kind {kind!r}: use one of {', '.join(RECENT_KINDS)}")
    require_directory(memories_root)
    oldest = None
    if days is not None:
        try:
            oldest = ((today or dt.date.today()) - dt.timedelta(days=days)).isoformat()
        except OverflowError:  # further back than dates go: no limit
            oldest = None
    real_root = os.path.realpath(memories_root)
    entries: list[tuple[str, str, str, str]] = []  # (date, HHMMSS, relpath, path)
    for record_kind in (RAW_KINDS if kind == "all" else (kind,)):
        base = memories_root / "raw" / record_kind
        try:
            folders = [entry for entry in os.scandir(base) if entry.is_dir() and DATE_FOLDER.match(entry.name)]
        except OSError:
            continue
        for folder in folders:
            if oldest and folder.name < oldest:
                continue
            try:
                files = list(os.scandir(folder.path))
            except OSError:
                continue
            for entry in files:
                match = TIMED_NAME.match(entry.name)
                relpath = f"raw/{record_kind}/{folder.name}/{entry.name}"
                if match and not name_problem(relpath) and _regular_inside(entry, real_root):
                    entries.append((folder.name, match.group(1), relpath, os.path.abspath(entry.path)))
    entries.sort(reverse=True)
    records: list[Record] = []
    for _, _, relpath, path in entries:
        record = read_record(path, relpath)
        if project is not None and (record.project or "") != project:
            continue
        records.append(record)
        if len(records) >= top:
            break
    return records


def _regular_inside(entry: os.DirEntry, real_root: str) -> bool:
    """A regular file, or a link to one that stays inside the memories directory (as the index takes it)."""
    try:
        if not entry.is_symlink():
            return entry.is_file(follow_symlinks=False)
        target = os.path.realpath(entry.path)
        return (target.startswith(real_root + os.sep) or target == real_root) and os.path.isfile(target)
    except OSError:
        return False
