"""Turning hits, records, index runs and index status into the text the scripts print."""

from __future__ import annotations

import json

from .directory.records import text_or_none
from .hints import command

NO_HITS = "検索結果なし"
NO_RECORDS = "該当する記録なし"
# What a record's time is, by kind: a session summary is written when the session ends, a web page when it
# is archived, minutes when the meeting is held. The labels are English, as the rest of the output is.
RECORD_TIME_LABELS = {"session": "ended", "web": "archived", "minutes": "held"}

# C0 controls, DEL and C1 controls, shown as \xNN: a memory's text could otherwise retitle the terminal,
# plant a hyperlink, clear the screen or start a new line that looks like another result.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7f, 0xa0))}


def _line(text) -> str:
    """Text from a memory (or a file name, or a query) as one printable line."""
    return str(text).translate(_CONTROLS)


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def hits_markdown(hits, explain: bool = False) -> str:
    if not hits:
        return NO_HITS
    blocks = []
    for number, hit in enumerate(hits, 1):
        lines = [
            f"### {number}. {_line(hit.record.title)}  _(score: {hit.score:.3f})_",
            f"- **path**: `{_line(hit.path)}`",
            f"- **status**: {_line(hit.record.status)}  **tags**: {_line(', '.join(hit.record.tags))}",
            f"- **snippet**: {_line(hit.snippet)}",
        ]
        if hit.stale:
            lines.append(f"- **note**: the file changed after it was indexed; read it, and run `{command('index')}`")
        window = getattr(hits, "window", None)
        if window is not None and window.inside and not window.holds(hit.record.date):
            lines.append(f"- **note**: dated {hit.record.date}, outside the {window_text(window)}")
        if explain:
            lines.append(f"- **explain**: {_explain(hit, window)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _explain(hit, window=None) -> str:
    parts = []
    for leg in ("semantic", "keyword", "rerank"):
        detail = hit.legs.get(leg)
        parts.append(f"{leg} #{detail.get('rank', '-')} ({detail['score']:.4f})" if detail else f"{leg} -")
    lines = f"lines {hit.start_line}-{hit.end_line}" if hit.start_line else "lines -"
    return ", ".join(parts) + f"; {lines}" + (f"; {window_text(window)}" if window else "") + _read_text(hit.legs)


def _read_text(legs: dict) -> str:
    """What the legs read of a long query: its leading part for meaning, its rarest terms for keywords."""
    read = legs.get("read") or {}
    parts = []
    if "meaning" in read:
        meaning = read["meaning"]
        parts.append(f"meaning from the first {meaning['characters']:,} of {meaning['of']:,} characters")
    if "keywords" in read:
        terms = read["keywords"]["terms"]
        if len(terms) < read["keywords"]["of"]:
            shown = ", ".join(_line(term) for term in terms[:8]) + (", ..." if len(terms) > 8 else "")
            parts.append(f"keywords: the {len(terms)} rarest of {read['keywords']['of']} terms ({shown})")
        for term, counts in (read["keywords"].get("sampled") or {}).items():
            if counts["read"]:
                parts.append(f"keywords: {_line(term)} in {counts['read']:,} of its {counts['of']:,} chunks, those "
                             "that hold it most often")
            else:
                counted = ("counted only in the chunks the rarer terms found" if read["keywords"].get("scored_by_all")
                           else "not counted")
                parts.append(f"keywords: {_line(term)} (in {counts['of']:,} chunks) left out, {counted}")
    return f"; read {'; '.join(parts)}" if parts else ""


def window_text(window) -> str:
    """`window 2026-11-23..2026-11-29 (先週)`, and whether anything inside it matched."""
    span = f"{window.since.isoformat() if window.since else '…'}..{window.until.isoformat() if window.until else '…'}"
    words = _line(", ".join(window.words))
    if window.inside:
        return f"window {span} ({words})"
    reach = ([f"the {window.around} days on each side"] if window.around else []) + (
        ["any date"] if window.anywhere else [])
    return f"window {span} ({words}), nothing inside matched" + (f": from {', then '.join(reach)}" if reach else "")


def hit_dict(hit, explain: bool = False, window=None) -> dict:
    """The seed's keys (score, path, snippet, frontmatter) first, then what this project adds; `window`, the
    date window the query's time words named (retrieval.Window), or null, its `inside` saying whether this
    hit is dated inside it."""
    record = hit.record
    item = {
        "score": hit.score,
        "path": hit.path,
        "snippet": hit.snippet,
        "frontmatter": record.frontmatter,
        "title": record.title,
        "status": record.status,
        "kind": record.kind,
        "project": record.project,
        "date": record.date.isoformat() if record.date else None,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "stale": hit.stale,
        "window": window.as_dict(record.date) if window else None,
    }
    if explain:
        item["explain"] = hit.legs
    return item


def hits_json(hits, explain: bool = False) -> str:
    window = getattr(hits, "window", None)
    return _json([hit_dict(hit, explain, window) for hit in hits])


def record_dict(record) -> dict:
    """The original recent.sh's keys in its order, then `kind`."""
    frontmatter = record.frontmatter
    duration = frontmatter.get("duration_minutes")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        duration = None
    return {
        "date": record.date.isoformat() if record.date else None,
        "time": record.time,
        "ended_at": text_or_none(frontmatter.get("ended_at")),
        "started_at": text_or_none(frontmatter.get("started_at")),
        "title": record.title,
        "project": record.project,
        "duration_minutes": duration,
        "tags": list(record.tags),
        "status": record.status,
        "path": record.path,
        "kind": record.kind,
    }


def records_json(records) -> str:
    return _json([record_dict(record) for record in records])


def records_paths(records) -> str:
    return "\n".join(record.path for record in records)


def records_markdown(records) -> str:
    if not records:
        return NO_RECORDS
    blocks = []
    for number, record in enumerate(records, 1):
        item = record_dict(record)
        when = _line(item["ended_at"] or f"{item['date']} {item['time']}")
        duration = f", {item['duration_minutes']:g} min" if item["duration_minutes"] is not None else ""
        label = RECORD_TIME_LABELS.get(record.kind, "dated")
        lines = [f"### {number}. {_line(record.title)}  _({label}: {when}{duration})_",
                 f"- **path**: `{_line(record.path)}`"]
        details = [f"**kind**: {record.kind}"]
        if record.project:
            details.append(f"**project**: {_line(record.project)}")
        if record.tags:
            details.append(f"**tags**: {_line(', '.join(record.tags))}")
        lines.append("- " + "  ".join(details))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def stats_text(stats) -> str:
    """The one-screen summary of an index run."""
    lines = [
        f"indexed {stats.success} file(s), {stats.chunks} chunk(s); unchanged {stats.skipped}; "
        f"deleted {stats.deleted}; failed {stats.failed}"
        + (f" ({stats.unreachable} out of reach, kept as they were)" if stats.unreachable else "")
        + f"  ({stats.duration_secs:.1f} s)",
        f"embedded {stats.embedded} text(s), {stats.cached} from the cache",
    ]
    for failure in stats.failures[:20]:
        lines.append(f"  skipped {_line(failure['path'])}: {_line(failure['reason'])}")
    if len(stats.failures) > 20:
        lines.append(f"  ... and {len(stats.failures) - 20} more (see --json)")
    for held in stats.emptied:
        lines.append(f"  kept what the index holds under {_line(held['folder'])}: it {_line(held['reason'])}; mount "
                     f"it again, or run {command('index', '--allow-removal')} if its files were removed on purpose")
    return "\n".join(lines)


def as_json(value) -> str:
    return _json(value)


def status_text(status: dict) -> str:
    lines = [
        f"index of {status['memories_dir']} ({status['table']})",
        f"  {status['files']} files, {status['chunks']} chunks, {status['index_bytes'] / 1048576:.1f} MB"
        + _parts_text(status.get("index_parts") or {}, status["chunks"])
        + (f"; {status['skipped']} skipped file(s) not counted (unreadable, below)" if status.get("skipped") else ""),
        f"  model {status['model']['provider']}/{status['model']['model']} ({status['model']['dimension']} dimensions)",
        f"  last indexed {status['last_indexed_at'] or 'never'}"
        + ("; an indexer is running now" + _progress_text(status.get("progress")) if status.get("building") else ""),
    ]
    for group in status["by_kind_and_status"]:
        lines.append(f"  {group['kind']:<8} {group['status']:<11} {group['files']:>6} files "
                     f"{group['chunks']:>7} chunks")
    links = status.get("links")
    if links is not None:
        lines.append(f"  links {links['links']}: {links['resolved']} resolved, {links['unresolved']} unresolved"
                     + (f" ({links['ambiguous']} ambiguous)" if links["ambiguous"] else ""))
    pending, waiting = status["pending"], status.get("waiting_for_embeddings") or 0
    if waiting:
        lines.append(f"  {waiting} chunk(s) wait for their embeddings: found by keyword, not yet by meaning"
                     + ("; the running indexer embeds them" if status.get("building")
                        else f"; run `{command('index')}` to embed them"))
    if pending is None:
        lines.append("  the memories are on another machine: their indexer keeps the index up to date")
    else:
        behind = pending["new"] + pending["changed"] + pending["deleted"]
        lines.append(f"  since then: {pending['new']} new, {pending['changed']} changed, {pending['deleted']} deleted"
                     + (f"; run `{command('index')}` to catch up" if behind
                        else "; embeddings still to compute" if waiting else "; up to date"))
    for note in status.get("server") or ():
        lines.append(f"  server: {note}")
    for item in status["unreadable"][:10]:
        lines.append(f"  unreadable {_line(item['path'])}: {_line(item['reason'])}")
    if len(status["unreadable"]) > 10:
        lines.append(f"  ... and {len(status['unreadable']) - 10} more unreadable (see --json)")
    return "\n".join(lines)


def _parts_text(parts: dict[str, int], chunks: int) -> str:
    """`: 9.1 KB a chunk (records 2.0, vector graphs 1.2, keywords 5.7, other 0.2)`."""
    if not chunks or not parts:
        return ""
    each = ", ".join(f"{name.replace('_', ' ')} {size / chunks / 1024:.1f}" for name, size in parts.items())
    return f": {sum(parts.values()) / chunks / 1024:.1f} KB a chunk ({each})"


def _progress_text(progress: dict | None) -> str:
    """`: files 12/40` or `: embeddings 300/900`, from run_progress's record."""
    if not progress:
        return ""
    counts = progress.get(progress.get("phase")) or {}
    return f": {progress.get('phase')} {counts.get('done', 0)}/{counts.get('total', 0)}"


# --- related memories ------------------------------------------------------------------------------

NO_RELATED = "関連する記録なし"


def related_dict(entry) -> dict:
    """A related memory: its reasons first, then the record's keys as recent.py prints them."""
    return {"reasons": entry.reasons, "similarity": entry.similarity, **record_dict(entry.record)}


def related_json(entries) -> str:
    return _json([related_dict(entry) for entry in entries])


def related_markdown(entries) -> str:
    if not entries:
        return NO_RELATED
    blocks = []
    for number, entry in enumerate(entries, 1):
        record = entry.record
        details = [f"**kind**: {record.kind}", f"**status**: {_line(record.status)}"]
        if record.tags:
            details.append(f"**tags**: {_line(', '.join(record.tags))}")
        blocks.append("\n".join([f"### {number}. {_line(record.title)}  _({', '.join(entry.reasons)})_",
                                 f"- **path**: `{_line(record.path)}`", "- " + "  ".join(details)]))
    return "\n\n".join(blocks)


# --- the search log ------------------------------------------------------------------------------

def search_summary_text(summary: dict) -> str:
    skipped = f"; {summary['skipped']} unreadable line(s) skipped" if summary.get("skipped") else ""
    if not summary["searches"]:
        return (f"no searches logged in {summary['log']} "
                "(set MEMORIES_SEARCH_LOG=1 to log searches)" + skipped)
    lines = [f"{summary['searches']} searches logged in {summary['log']}{skipped}",
             f"  time p50 {summary['p50_ms']:.0f} ms, p95 {summary['p95_ms']:.0f} ms"]
    if summary["no_results"]:
        lines.append("  most frequent queries that found nothing:")
        lines.extend(f"  {item['count']:>5}  {_line(item['query'])}" for item in summary["no_results"])
    else:
        lines.append("  every logged search found something")
    return "\n".join(lines)


# --- verification ----------------------------------------------------------------------------------

def verification_text(result) -> str:
    """Skipped files first, then the problems, and the repair last."""
    if result.clean:
        lines = [f"verified: {result.files} files and {result.chunks} chunks match the directory, "
                 f"postings, document frequencies, vectors and counts are consistent ({result.seconds:.1f} s)"]
    else:
        lines = [f"NOT clean: {len(result.problems)} problem(s) ({result.seconds:.1f} s)"]
    for item in result.skipped[:10]:
        lines.append(f"  skipped {_line(item['path'])}: {_line(item['reason'])}")
    if len(result.skipped) > 10:
        lines.append(f"  ... and {len(result.skipped) - 10} more skipped (see --json)")
    lines.extend(f"  problem: {_line(problem.text())}" for problem in result.problems)
    lines.extend(f"  repair: {command}" for command in result.repairs)
    return "\n".join(lines)


# --- for the page ------------------------------------------------------------------------------

def marks(text: str, query: str) -> list[tuple[int, int]]:
    """Where the words of `text` that the query's subject words match stand in it, to highlight (snippets.marks)."""
    from .search.snippets import marks

    return marks(text, query)


def plain(snippet_text: str) -> str:
    """A snippet as text, without the Markdown inside its lines (snippets.plain)."""
    from .search.snippets import plain

    return plain(snippet_text)


def shown_path(path: str, root) -> str:
    """A record's path as a listing shows it: relative to the memories directory, absolute for another source."""
    from .directory.sources import shown_path

    return shown_path(path, root)
