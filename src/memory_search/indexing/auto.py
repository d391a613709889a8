"""The index keeps up by itself where that is asked for (MEMORIES_AUTO_INDEX=1, which the plugin sets):
a search that finds no index starts one and answers as soon as the first files are searchable; a search
that finds the newest records missing from the index starts a catch-up run. Either way the run is a
detached process (`python -m memory_search.indexing.auto DIR`) under the index's own lock, so any number
of searches start at most one indexer at a time. api.Memories applies this to every search, whichever
face asks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..config import Settings
from ..errors import IndexMissing, MemorySearchError
from ..processes import detach_module

FIRST_WAIT = 8.0  # seconds a search that found no index waits for the first searchable files
RESTART_AFTER = 60.0  # seconds before another search may start an indexer for the same directory


def start(settings: Settings) -> bool:
    """Start an index run of the settings' memories directory in the background, unless one was started for it
    within RESTART_AFTER seconds; True when it was started now."""
    marker = _marker(settings)
    try:
        if time.time() - marker.stat().st_mtime < RESTART_AFTER:
            return False
    except OSError:
        pass
    try:
        marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        return False
    _detach(settings.memories_root, marker.with_suffix(".log"), settings)
    return True


def _detach(directory: Path, log_path: Path, settings: Settings | None = None) -> None:
    """Run this module on `directory` in a process of its own session, writing to `log_path`. The run takes in
    the other sources `settings` name (a warm helper's own environment may name others)."""
    environment = dict(os.environ)
    if settings is not None:
        environment["MEMORIES_CLAUDE_CODE"] = os.pathsep.join(map(str, settings.claude_code)) or "0"
    detach_module("memory_search.indexing.auto", [str(directory)], str(log_path), environment)


def _marker(settings: Settings) -> Path:
    import hashlib

    name = hashlib.sha256(str(settings.memories_root).encode()).hexdigest()[:16]
    return (settings.state_dir or Path("/tmp")) / "indexing" / name


def searching(settings: Settings, search, warn, status=None, behind=None):
    """`search()`'s answer. With auto-indexing on: when there is no index, start one, wait up to FIRST_WAIT
    seconds for its first files, answer with what is searchable and say how much is still waiting
    (`status()` counts it); when `behind()` says the index misses the newest records, start a catch-up run."""
    if not settings.auto_index:
        return search()
    try:
        found = search()
    except IndexMissing:
        found = _first_results(settings, search, warn, status)
    if behind is not None:
        catch_up(settings, behind)
    return found


def _first_results(settings: Settings, search, warn, status):
    started = start(settings)
    deadline = time.monotonic() + FIRST_WAIT
    while True:
        time.sleep(0.5)
        try:
            found = search()
        except IndexMissing:
            found = None
        if found is not None:
            # The run makes the index's tables before it has written a file: an empty answer from them is no answer.
            held = _held(status) if status else None
            if found or not _still_empty(held):
                if not found:
                    found = search()  # files written after that search looked are in the count: look again
                warn(f"the index of {settings.memories_root} is being built"
                     + (f": {held['waiting']} file(s) still to index" if held and held["waiting"] else "")
                     + "; these are the first results, search again for all of them")
                return found
        if time.monotonic() >= deadline:
            raise IndexMissing(f"no index of {settings.memories_root} yet: "
                               + ("building it in the background now" if started else "it is being built")
                               + "; search again in a minute")


def _held(status) -> dict | None:
    """How many chunks the index can answer with (those with their embedding) and how many files still wait for
    it (None: not known yet); None when that cannot be told."""
    try:
        counts = status()
        return {"searchable": counts["embedded"], "waiting": counts["pending"]["new"]}
    except IndexMissing:
        return {"searchable": 0, "waiting": None}
    except Exception:  # a count for a message and a wait: never worth failing the search
        return None


def _still_empty(held: dict | None) -> bool:
    return held is not None and not held["searchable"] and held["waiting"] != 0


def catch_up(settings: Settings, behind) -> None:
    """Start a catch-up run when auto-indexing is on and `behind()` says the index misses the newest records."""
    if not settings.auto_index or _recently_started(settings):
        return
    try:
        late = behind()
    except Exception:  # a check for freshness: never worth failing the search
        return
    if late:
        start(settings)


def _recently_started(settings: Settings) -> bool:
    try:
        return time.time() - _marker(settings).stat().st_mtime < RESTART_AFTER
    except OSError:
        return False


def main(arguments: list[str]) -> int:
    """One index run of the directory `arguments[0]` that gives way at once to a run under way; what it did, or
    why it did nothing, on stderr (the log start() opened)."""
    from ..render import stats_text
    from .indexer import Indexer

    settings = Settings.from_env().with_overrides(memories_dir=arguments[0])
    try:
        stats = Indexer(settings).run(wait=False)
    except MemorySearchError as error:
        sys.stderr.write(f"{settings.memories_root}: {error}\n")
        return 1
    sys.stderr.write(f"{settings.memories_root}: {stats_text(stats)}\n")
    return 4 if stats.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
