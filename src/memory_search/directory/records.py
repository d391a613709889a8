"""One record type for a memory's metadata: built from a file, stored with each chunk, shown by every face."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

RAW_KINDS = ("session", "web", "minutes")
# claude: Claude Code's own memories (auto memory and CLAUDE.md files), a source beside the directory (sources.py);
# a record elsewhere in the directory has none
KINDS = (*RAW_KINDS, "wiki", "claude")
INACTIVE_STATUSES = ("superseded", "deprecated")

DATE_FOLDER = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIMED_NAME = re.compile(r"^(\d{6})_.+\.md$")
_FIRST_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)


@dataclass(frozen=True)
class Record:
    """What is known about one memory without reading its body."""

    path: str  # absolute
    relpath: str  # inside the memories directory, with /; a file of another source: its absolute path
    kind: str | None  # session | web | minutes | wiki | claude
    title: str
    status: str  # normalized: lower case, "active" when missing
    tags: tuple[str, ...] = ()
    project: str | None = None
    date: dt.date | None = None  # from raw/<kind>/YYYY-MM-DD/, else the frontmatter
    time: str | None = None  # HH:MM:SS from a HHMMSS_ file name
    frontmatter: dict = field(default_factory=dict, compare=False)

    @property
    def active(self) -> bool:
        return self.status not in INACTIVE_STATUSES

    def value(self, key: str):
        """A frontmatter value as filters see it; `status` is the normalized one."""
        return self.status if key == "status" else self.frontmatter.get(key)


def make_record(path: str, relpath: str, frontmatter: dict, body: str = "", kind: str | None = None,
                project: str | None = None) -> Record:
    """The record of a file, from its path and frontmatter; the title falls back to the first heading, then
    the file name. kind/project: what the file's source tells (sources.py), over the path and frontmatter."""
    heading = _FIRST_HEADING.search(body) if body else None
    title = frontmatter.get("title")
    if title in (None, ""):
        title = heading.group(1) if heading else PurePosixPath(relpath).stem
    day, clock = record_date(relpath, frontmatter)
    return Record(
        path=path,
        relpath=relpath,
        kind=kind or kind_of(relpath),
        title=str(title),
        status=normalize_status(frontmatter.get("status")),
        tags=tuple(as_list(frontmatter.get("tags"))),
        project=project or text_or_none(frontmatter.get("project")),
        date=day,
        time=clock,
        frontmatter=frontmatter,
    )


def kind_of(relpath: str | PurePosixPath) -> str | None:
    """session | web | minutes | wiki from the path inside the memories directory, else None."""
    parts = PurePosixPath(relpath).parts
    if parts and parts[0] == "wiki":
        return "wiki"
    if len(parts) >= 2 and parts[0] == "raw" and parts[1] in RAW_KINDS:
        return parts[1]
    return None


def normalize_status(status) -> str:
    """Lower case, "active" when missing; a list counts by its first entry (`status: [superseded]`)."""
    if isinstance(status, (list, tuple)):
        status = next((item for item in status if item not in (None, "")), None)
    return str(status).strip().lower() if status not in (None, "") else "active"


def text_or_none(value) -> str | None:
    return str(value) if value not in (None, "") else None


def as_list(value) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value if item not in (None, "")]
    return [part.strip() for part in str(value).split(",") if part.strip()]


def record_date(relpath: str, metadata: dict) -> tuple[dt.date | None, str | None]:
    """The record's date and HH:MM:SS: from raw/<kind>/YYYY-MM-DD/HHMMSS_*.md, else the frontmatter."""
    parts = PurePosixPath(relpath).parts
    if len(parts) >= 4 and parts[0] == "raw" and DATE_FOLDER.match(parts[2]):
        day = parse_date(parts[2])
        timed = TIMED_NAME.match(parts[-1])
        if day:
            clock = timed.group(1) if timed else None
            return day, f"{clock[:2]}:{clock[2:4]}:{clock[4:]}" if clock else None
    for key in ("date", "ended_at", "started_at", "updated", "created"):
        day = parse_date(metadata.get(key))
        if day:
            return day, None
    return None, None


def parse_date(value) -> dt.date | None:
    """The day of an ISO date or date-time; a date-time with a UTC offset is taken in the local time zone,
    the one `--since` and `--until` mean."""
    if not value or not isinstance(value, (str, dt.date)):
        return None
    text = str(value).strip()
    if len(text) > 10:
        try:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment.astimezone().date()
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None
