"""Turning hits, records and stats into the text the scripts print. Nothing else prints results."""

from __future__ import annotations

import json

NO_HITS = "検索結果なし"
NO_RECORDS = "該当する記録なし"


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def hits_markdown(hits, explain: bool = False) -> str:
    if not hits:
        return NO_HITS
    blocks = []
    for number, hit in enumerate(hits, 1):
        lines = [
            f"### {number}. {hit.title}  _(score: {hit.score:.3f})_",
            f"- **path**: `{hit.path}`",
            f"- **status**: {hit.status}  **tags**: {', '.join(hit.tags)}",
            f"- **snippet**: {hit.snippet}",
        ]
        if hit.stale:
            lines.append("- **note**: the file changed after it was indexed; read it, and run index.py")
        if explain:
            lines.append(f"- **explain**: {_explain(hit)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _explain(hit) -> str:
    parts = []
    for leg in ("semantic", "keyword", "rerank"):
        detail = hit.legs.get(leg)
        parts.append(f"{leg} #{detail.get('rank', '-')} ({detail['score']:.4f})" if detail else f"{leg} -")
    lines = f"lines {hit.start_line}-{hit.end_line}" if hit.start_line else "lines -"
    return ", ".join(parts) + f"; {lines}"


def hit_dict(hit, explain: bool = False) -> dict:
    """The seed's keys (score, path, snippet, frontmatter) first, then what this project adds."""
    item = {
        "score": hit.score,
        "path": hit.path,
        "snippet": hit.snippet,
        "frontmatter": hit.frontmatter,
        "title": hit.title,
        "status": hit.status,
        "kind": hit.kind,
        "date": hit.date,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "stale": hit.stale,
    }
    if explain:
        item["explain"] = hit.legs
    return item


def hits_json(hits, explain: bool = False) -> str:
    return _json([hit_dict(hit, explain) for hit in hits])


_RECORD_KEYS = ("date", "time", "ended_at", "started_at", "title", "project", "duration_minutes", "tags",
                "status", "path")


def records_json(records) -> str:
    """The original's keys in its order, then `kind`."""
    return _json([{key: getattr(record, key) for key in _RECORD_KEYS + ("kind",)} for record in records])


def records_paths(records) -> str:
    return "\n".join(record.path for record in records)


def records_markdown(records) -> str:
    if not records:
        return NO_RECORDS
    blocks = []
    for number, record in enumerate(records, 1):
        when = record.ended_at or f"{record.date} {record.time}"
        duration = f", {record.duration_minutes:g}分" if record.duration_minutes is not None else ""
        lines = [f"### {number}. {record.title}  _(ended: {when}{duration})_", f"- **path**: `{record.path}`"]
        details = [f"**kind**: {record.kind}"]
        if record.project:
            details.append(f"**project**: {record.project}")
        if record.tags:
            details.append(f"**tags**: {', '.join(record.tags)}")
        lines.append("- " + "  ".join(details))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def stats_text(stats) -> str:
    """The one-screen summary of an index run."""
    lines = [
        f"indexed {stats.success} file(s), {stats.chunks} chunk(s); unchanged {stats.skipped}; "
        f"deleted {stats.deleted}; failed {stats.failed}  ({stats.duration_secs:.1f} s)",
        f"embedded {stats.embedded} text(s), {stats.cached} from the cache",
    ]
    for failure in stats.failures[:20]:
        lines.append(f"  skipped {failure['path']}: {failure['reason']}")
    if len(stats.failures) > 20:
        lines.append(f"  ... and {len(stats.failures) - 20} more (see --json)")
    return "\n".join(lines)


def as_json(value) -> str:
    return _json(value)


def eval_text(report) -> str:
    lines = [f"{report.dataset} ({report.split}): {report.queries} queries over {report.documents} documents; "
             f"indexed in {report.index_seconds:.1f} s",
             f"{'mode':<22} {'nDCG@10':>8} {'R@10':>8} {'R@100':>8} {'MRR@10':>8} {'median ms':>10}"]
    for mode, metrics in report.results.items():
        lines.append(f"{mode:<22} {metrics['ndcg@10']:>8.4f} {metrics['recall@10']:>8.4f} "
                     f"{metrics['recall@100']:>8.4f} {metrics['mrr@10']:>8.4f} {report.query_ms[mode]:>10.1f}")
    return "\n".join(lines)


def bench_text(report) -> str:
    lines = [f"note: {note}" for note in report.notes]
    if report.indexing:
        i = report.indexing
        lines.append(f"indexing ({i['files']} files, {i['chunks']} chunks, local model): {i['index_chunks_per_s']} "
                     f"chunks/s vs raw embedder {i['raw_embedder_texts_per_s']} texts/s ({i['ratio']:.0%}); "
                     f"cold index {i['cold_index_s']} s")
    if report.freshness:
        f = report.freshness
        lines.append(f"index.py over {f['files']} files: no-op {f['noop_index_s']} s, one-file edit "
                     f"{f['one_file_edit_s']} s")
    if report.recent:
        r = report.recent
        lines.append(f"recent.py over {r['files']} files: median {r['median_ms']} ms, p95 {r['p95_ms']} ms, "
                     f"peak {r['peak_rss_mb']} MB")
    if report.sizes:
        lines.append(f"{'chunks':>8} {'hnsw':>5} {'figure':<22} {'median ms':>10} {'p95 ms':>8} {'peak MB':>8}")
        for size in report.sizes:
            for key in ("search_helper", "search_no_helper", "in_process_semantic", "in_process_keyword",
                        "in_process_hybrid", "vector_exact_scan"):
                timing = size.get(key)
                if timing is None:
                    continue
                peak = f"{timing['peak_rss_mb']:.1f}" if timing.get("peak_rss_mb") else "-"
                lines.append(f"{size['chunks']:>8} {str(size['hnsw']):>5} {key:<22} {timing['median_ms']:>10.1f} "
                             f"{timing['p95_ms']:>8.1f} {peak:>8}")
    return "\n".join(lines)
