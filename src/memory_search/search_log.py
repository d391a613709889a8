"""The search log: one JSON line per search.py query, off unless MEMORIES_SEARCH_LOG=1 (queries can be private).

It lives in the user's state folder, never in the memories directory, and a failure to write it never
fails the search. `summarize` answers stats.py --searches: how many, how fast, and what found nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from dataclasses import asdict
from pathlib import Path

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
    """Append one entry; returns a warning instead of raising when it cannot be written."""
    target = Path(os.path.abspath(path))
    if target == memories_root or memories_root in target.parents:
        return f"the search log {target} would be inside the memories directory: not written (set XDG_STATE_HOME)"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(item, ensure_ascii=False, default=str) + "\n"
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # queries are private
        with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
            handle.write(line)  # one write of one line: concurrent searches do not interleave
    except OSError as error:
        return f"cannot write the search log {target} ({error.strerror}); the search itself worked"
    return None


def summarize(path: Path, top: int = 10) -> dict:
    """Count, p50/p95 milliseconds, and the most frequent queries that found nothing."""
    times: list[float] = []
    empty: Counter = Counter()
    count = 0
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        return {"log": str(path), "searches": 0, "p50_ms": None, "p95_ms": None, "no_results": []}
    with handle:
        for line in handle:
            try:
                item = json.loads(line)
                milliseconds = float(item["ms"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn or foreign line
            count += 1
            times.append(milliseconds)
            if not item.get("results"):
                empty[" ".join(str(item.get("query", "")).split())] += 1
    times.sort()
    return {"log": str(path), "searches": count, "p50_ms": _percentile(times, 50), "p95_ms": _percentile(times, 95),
            "no_results": [{"query": query, "count": times_seen} for query, times_seen in empty.most_common(top)]}


def _percentile(ordered: list[float], percent: int) -> float | None:
    if not ordered:
        return None
    rank = max(0, min(len(ordered) - 1, round(percent / 100 * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[rank]

