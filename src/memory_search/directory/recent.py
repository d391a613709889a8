"""The newest records by date folder and HHMMSS file name: no database, no model."""

from __future__ import annotations

import datetime as dt
import os
import stat
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from ..errors import UsageError, quoted
from .files import memory_record, name_problem, require_directory
from .records import DATE_FOLDER, RAW_KINDS, TIMED_NAME, Record

RECENT_KINDS = RAW_KINDS + ("claude", "all")  # claude: Claude Code's memories, by when they last changed (sources.py)


class RecentRecords(list):
    """Records newest first, and the folders that could not be read just now (`skipped`: [{"folder", "reason"}]):
    the records in those are missing from the list, not gone."""

    skipped: list[dict]

    def __init__(self, records=(), skipped=()):
        super().__init__(records)
        self.skipped = list(skipped)


def list_recent(memories_root: Path, kind: str = "session", top: int = 10, project: str | None = None,
                days: int | None = None, today: dt.date | None = None, since: dt.date | None = None,
                until: dt.date | None = None, missing: str | None = None, warn=None) -> RecentRecords:
    """Newest first: (date folder, HHMMSS) descending, optionally within `days` days (or since/until, both
    inclusive) and one project. A folder that cannot be read right now is not taken for empty: the answer's
    `skipped` names it, `warn` is told which, once, and the records it holds are missing from the list."""
    if kind not in RECENT_KINDS:
        raise UsageError(f"unknown kind {quoted(kind)}: use one of {', '.join(RECENT_KINDS)}")
    require_directory(memories_root, missing)
    oldest = since.isoformat() if since else None
    if days is not None:
        try:
            oldest = max(oldest or "", ((today or dt.date.today()) - dt.timedelta(days=days)).isoformat())
        except OverflowError:  # further back than dates go: no limit
            pass
    newest = until.isoformat() if until else None
    # Newest date first, and within a date newest file first: only the folders and files up to
    # the last record printed are listed, checked and read, however large the directory.
    folders: list[tuple[str, str, str]] = []  # (date, kind, folder path)
    unreadable: list[dict] = []  # {"folder": "raw/session/2026-11-30", "reason": "Permission denied"}
    for record_kind in (RAW_KINDS if kind == "all" else (kind,)):
        try:
            with os.scandir(memories_root / "raw" / record_kind) as scan:
                folders += [(entry.name, record_kind, entry.path) for entry in scan
                            if DATE_FOLDER.match(entry.name) and not (oldest and entry.name < oldest)
                            and not (newest and entry.name > newest) and entry.is_dir()]
        except FileNotFoundError:  # no record of this kind yet
            continue
        except OSError as error:
            unreadable.append({"folder": f"raw/{record_kind}", "reason": error.strerror or str(error)})
    folders.sort(reverse=True)
    try:
        return RecentRecords(_newest(folders, top, project, unreadable), unreadable)
    finally:
        if unreadable and warn is not None:
            named = ", ".join(f"{item['folder']} ({item['reason']})" for item in unreadable)
            warn(f"could not read {named}: the records there are not listed; check the folder's permissions, or "
                 "that its disk is mounted")


def _newest(folders: list[tuple[str, str, str]], top: int, project: str | None,
            unreadable: list[dict]) -> list[Record]:
    records: list[Record] = []
    for date, same_date in groupby(folders, key=itemgetter(0)):
        entries: list[tuple[str, str, str, str]] = []  # (HHMMSS, kind, name, folder path)
        for _, record_kind, folder in same_date:
            try:
                names = os.listdir(folder)
            except FileNotFoundError:  # removed since it was listed
                continue
            except OSError as error:
                unreadable.append({"folder": f"raw/{record_kind}/{date}", "reason": error.strerror or str(error)})
                continue
            entries += [(name[:6], record_kind, name, folder) for name in names if TIMED_NAME.match(name)]
        entries.sort(reverse=True)
        for _, record_kind, name, folder in entries:
            relpath = f"raw/{record_kind}/{date}/{name}"
            path = os.path.abspath(os.path.join(folder, name))
            if name_problem(relpath) or not _regular(path):
                continue
            record = memory_record(path, relpath)
            if record is None:  # a file index.py skips (binary, broken frontmatter) is no record here either
                continue
            if project is not None and (record.project or "") != project:
                continue
            records.append(record)
            if len(records) >= top:
                return records
    return records


def _regular(path: str) -> bool:
    """A regular file, not a link: a link is not a memory of its own, as the index takes it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def newest_files(memories_root: Path, folders: int = 2) -> dict[str, tuple[int, int]]:
    """path -> (size, mtime_ns) of the files in the newest `folders` date folders of each kind: where a new
    session summary or page lands, so a cheap look at them tells whether an index is behind."""
    found: dict[str, tuple[int, int]] = {}
    for record_kind in RAW_KINDS:
        try:
            with os.scandir(memories_root / "raw" / record_kind) as scan:
                dates = sorted((entry.name, entry.path) for entry in scan if DATE_FOLDER.match(entry.name))
        except OSError:
            continue
        for _, folder in dates[-folders:]:
            try:
                with os.scandir(folder) as scan:
                    for entry in scan:
                        if TIMED_NAME.match(entry.name) and entry.is_file(follow_symlinks=False):
                            status = entry.stat(follow_symlinks=False)
                            found[os.path.abspath(entry.path)] = (status.st_size, status.st_mtime_ns)
            except OSError:
                continue
    return found
