"""The text of the eval and bench reports."""

from __future__ import annotations


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
