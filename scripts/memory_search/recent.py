"""The newest records by date folder and HHMMSS file name: no database, no model."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .memories import DATE_FOLDER, RAW_KINDS, TIMED_NAME, as_list, normalize_status, read_frontmatter, require_directory

RECENT_KINDS = RAW_KINDS + ("all",)


@dataclass
class Record:
    date: str
    time: str
    ended_at: str | None
    started_at: str | None
    title: str
    project: str | None
    duration_minutes: int | float | None
    tags: list[str] = field(default_factory=list)
    status: str = "active"
    path: str = ""
    kind: str = "session"


def list_recent(memories_root: Path, kind: str = "session", top: int = 10, project: str | None = None,
                days: int | None = None, today: dt.date | None = None) -> list[Record]:
    """Newest first: (date folder, HHMMSS) descending, optionally within `days` days and one project."""
    if kind not in RECENT_KINDS:
        raise UsageError(f"unknown kind {kind!r}: use one of {', '.join(RECENT_KINDS)}")
    require_directory(memories_root)
    oldest = None
    if days is not None:
        oldest = ((today or dt.date.today()) - dt.timedelta(days=days)).isoformat()
    entries: list[tuple[str, str, str, str]] = []  # (date, HHMMSS, kind, path)
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
                names = os.listdir(folder.path)
            except OSError:
                continue
            for name in names:
                match = TIMED_NAME.match(name)
                if match:
                    entries.append((folder.name, match.group(1), record_kind, os.path.join(folder.path, name)))
    entries.sort(reverse=True)
    records: list[Record] = []
    for day, clock, record_kind, path in entries:
        frontmatter = read_frontmatter(path)
        if project is not None and str(frontmatter.get("project") or "") != project:
            continue
        records.append(_record(day, clock, record_kind, path, frontmatter))
        if len(records) >= top:
            break
    return records


def _record(day: str, clock: str, kind: str, path: str, frontmatter: dict) -> Record:
    def text(key):
        value = frontmatter.get(key)
        return str(value) if value not in (None, "") else None

    duration = frontmatter.get("duration_minutes")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        duration = None
    return Record(
        date=day,
        time=f"{clock[:2]}:{clock[2:4]}:{clock[4:]}",
        ended_at=text("ended_at"),
        started_at=text("started_at"),
        title=text("title") or Path(path).stem,
        project=text("project"),
        duration_minutes=duration,
        tags=as_list(frontmatter.get("tags")),
        status=normalize_status(frontmatter.get("status")),
        path=os.path.abspath(path),
        kind=kind,
    )
