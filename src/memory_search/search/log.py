"""The search log: one JSON line per search, whichever face asks; off unless MEMORIES_SEARCH_LOG=1 (queries can be
private). api.Memories.run writes it.

It lives in the user's state folder, never in the memories directory, and a failure to write it never
fails the search. `summarize` answers stats.py --searches: how many, how fast, and what found nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import stat
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from ..errors import MemorySearchError
from .filters import Filters


def entry(query: str, filters: Filters, top: int, results: int, milliseconds: float, mode: str | None) -> dict:
    active = {key: value for key, value in asdict(filters).items()
              if value not in (None, (), [], False, "all")}
    if "where" in active:
        active["where"] = [asdict(condition) for condition in filters.where]
    return {"timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
            "query": query, "filters": active, "mode": mode, "top": top, "results": results,
            "ms": round(milliseconds, 1)}


def append(path: Path, memories_root: Path, item: dict) -> str | None:
    """Append one entry; returns a warning instead of raising when it cannot be written.

    Written only into a folder of the user's own that nobody else can write, and only to a regular
    file of the user's own, opened without following a symlink and without blocking on a FIFO; a log
    readable by others is made private (0600) first."""
    target = Path(os.path.abspath(path))
    if target == memories_root or memories_root in target.parents:
        return f"the search log {target} would be inside the memories directory: not written (set XDG_STATE_HOME)"
    line = (json.dumps(item, ensure_ascii=False, default=str) + "\n").encode("utf-8", "surrogatepass")
    try:
        problem = _private_folder(target.parent)
        if problem:
            return f"{problem}; the search was not logged"
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK
                             | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as error:
        return f"cannot write the search log {target} ({error.strerror}); the search itself worked"
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
            return f"the search log {target} is not a regular file of yours: not written (remove it)"
        if stat.S_IMODE(status.st_mode) & 0o077:
            os.fchmod(descriptor, 0o600)  # queries are private
        written = os.write(descriptor, line)  # one write of one line: concurrent searches do not interleave
        if written < len(line):  # a full disk took part of it
            _take_back(descriptor, written)
            return f"cannot write the search log {target} (the disk is full); the search itself worked"
    except OSError as error:
        return f"cannot write the search log {target} ({error.strerror}); the search itself worked"
    finally:
        os.close(descriptor)
    return None


def _take_back(descriptor: int, written: int) -> None:
    """Remove the part of a line just appended, so the next line does not join a torn one (unless another
    search appended after it meanwhile: its line is not ours to cut)."""
    try:
        end = os.fstat(descriptor).st_size
        if written and os.lseek(descriptor, 0, os.SEEK_CUR) == end:
            os.ftruncate(descriptor, end - written)
    except OSError:
        pass


def _private_folder(folder: Path) -> str | None:
    """Create the log's folder (0700) when missing; say why not to write when another user could."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = os.lstat(folder)
    if not stat.S_ISDIR(status.st_mode):
        return f"the search log's folder {folder} is not a folder"
    if status.st_uid != os.getuid() or stat.S_IMODE(status.st_mode) & 0o022:
        return (f"the search log's folder {folder} can be written by another user (chmod go-w it, or set "
                "XDG_STATE_HOME to a folder of your own)")
    return None


def summarize(path: Path, top: int = 10) -> dict:
    """Count, p50/p95 milliseconds, and the most frequent queries that found nothing. Torn lines, bytes
    that are not UTF-8 and times that are not finite numbers are skipped and counted."""
    times: list[float] = []
    empty: Counter = Counter()
    count = skipped = 0
    summary = {"log": str(path), "searches": 0, "p50_ms": None, "p95_ms": None, "no_results": [], "skipped": 0}
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return summary
    except OSError as error:
        raise MemorySearchError(f"cannot read the search log {path} ({error.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise MemorySearchError(f"the search log {path} is not a regular file: remove it")
        for raw in handle:
            try:
                item = json.loads(raw.decode("utf-8"))
                milliseconds = float(item["ms"])
                if not math.isfinite(milliseconds) or milliseconds < 0:
                    raise ValueError(milliseconds)
            except (ValueError, KeyError, TypeError):
                skipped += int(bool(raw.strip()))  # a torn, foreign or unreadable line
                continue
            count += 1
            times.append(milliseconds)
            if not item.get("results"):
                empty[" ".join(str(item.get("query", "")).split())] += 1
    times.sort()
    return summary | {"searches": count, "p50_ms": _percentile(times, 50), "p95_ms": _percentile(times, 95),
                      "no_results": [{"query": query, "count": times_seen}
                                     for query, times_seen in empty.most_common(top)],
                      "skipped": skipped}


def _percentile(ordered: list[float], percent: int) -> float | None:
    if not ordered:
        return None
    rank = max(0, min(len(ordered) - 1, round(percent / 100 * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[rank]
