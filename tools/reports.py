"""The text of the eval and bench reports."""

from __future__ import annotations


def eval_text(report) -> str:
    lines = [f"{report.dataset} ({report.split}): {report.queries} queries over {report.documents} documents; "
             f"indexed in {report.index_seconds:.1f} s",
             f"{'mode':<22} {'nDCG@10':>8} {'R@10':>8} {'R@100':>8} {'MRR@10':>8} {'median ms':>10}"]
    for mode, metrics in report.results.items():
        lines.append(f"{mode:<22} {metrics['ndcg@10']:>8.4f} {metrics['recall@10']:>8.4f} "
                     f"{metrics['recall@100']:>8.4f} {metrics['mrr@10']:>8.4f} {report.query_ms[mode]:>10.1f}")
    if report.best_first:
        lines.append("best first (the first hit has the top grade, e.g. the page in the question's language): " +
                     ", ".join(f"{mode} {share:.4f}" for mode, share in report.best_first.items()))
    if report.out_of_order:
        lines.append("out of order (searches whose shown scores contradict the list's order): " +
                     ", ".join(f"{mode} {share:.4f}" for mode, share in report.out_of_order.items()))
    for comparison in report.comparisons:
        lines.append(f"{comparison.other} vs {comparison.base}: nDCG@10 {comparison.delta:+.4f}, "
                     f"{comparison.wins} queries better, {comparison.losses} worse, {comparison.ties} unchanged")
    if report.conversation:
        lines.append(conversation_text(report.conversation))
    if report.passage:
        lines.append(passage_text(report.passage))
    if report.abstention:
        first = next(iter(report.abstention.values()))
        lines.append(f"at --min-score {first['threshold']}: abstain = unanswerable questions ({first['unanswerable']}) "
                     f"left with no result; keep = answerable queries whose first ten held a relevant document "
                     f"({first['answerable']}) that still do; ECE = calibration of the shown hits' scores on the qrels")
        lines.append(f"{'mode':<22} {'abstain':>8} {'keep':>8} {'ECE':>8}   reliability (score bin: hits, mean "
                     f"score, share relevant)")
        for mode, figures in report.abstention.items():
            bins = "; ".join(f"{b['bin']}: {b['hits']}, {b['mean_score']:.2f}, {b['relevant']:.2f}"
                             for b in figures["bins"])
            lines.append(f"{mode:<22} {figures['abstain']:>8.4f} {figures['keep']:>8.4f} {figures['ece']:>8.4f}   "
                         f"{bins}")
    return "\n".join(lines)


def conversation_text(conversation: dict[str, dict[str, dict]]) -> str:
    """The conversation figures, a row per mode and question category."""
    lines = ["conversation questions, first five hits: session = an evidence session among them; all sessions = "
             "every evidence session among them (questions with two or more: n); turn = a hit whose line range "
             "holds an evidence turn",
             f"{'mode':<22} {'category':<14} {'queries':>7} {'session@5':>9} {'all sessions@5':>16} {'turn@5':>8}"]
    for mode, groups in conversation.items():
        for group, figures in groups.items():
            label = figures["name"] if group == "all" else f"{group} {figures['name']}"
            several = (f"{figures['all_sessions']:.4f} ({figures['multi']})" if figures["multi"] else "-")
            lines.append(f"{mode:<22} {label:<14} {figures['queries']:>7} {figures['session']:>9.4f} "
                         f"{several:>16} {figures['turn']:>8.4f}")
    return "\n".join(lines)


def passage_text(passage: dict[str, dict[str, dict]]) -> str:
    """The answer-line figures, a row per mode and label (all, the question's category, its groups)."""
    lines = ["questions with answer lines, first five hits: file = the answering file among them; passage = a hit "
             "whose shown lines overlap the answer's; whole = a hit whose lines hold all of them",
             f"{'mode':<22} {'label':<14} {'queries':>7} {'file@5':>8} {'passage@5':>9} {'whole@5':>8}"]
    for mode, labels in passage.items():
        for label, figures in labels.items():
            lines.append(f"{mode:<22} {label:<14} {figures['queries']:>7} {figures['file']:>8.4f} "
                         f"{figures['passage']:>9.4f} {figures['whole']:>8.4f}")
    return "\n".join(lines)


def bench_text(report) -> str:
    lines = [f"note: {note}" for note in report.notes]
    if report.indexing:
        i = report.indexing
        lines.append(f"indexing ({i['files']} files, {i['chunks']} chunks, local model): {i['index_chunks_per_s']} "
                     f"chunks/s vs raw embedder {i['raw_embedder_texts_per_s']} texts/s ({i['ratio']:.0%}); "
                     f"cold index {i['cold_index_s']} s")
    if report.first_index:
        f = report.first_index
        found = f"{f['keyword_found_s']} s" if f["keyword_found_s"] is not None else "never"
        lines.append(f"first index ({f['files']} session files, {f['chunks']} chunks, local model): keyword search "
                     f"found the last-written file after {found}; all {f['embedded']} embedded in {f['index_s']} s, "
                     f"{f['index_chunks_per_s']} chunks/s vs raw embedder {f['raw_embedder_texts_per_s']} texts/s "
                     f"({f['ratio']:.0%})")
    if report.freshness:
        f = report.freshness
        lines.append(f"index.py over {f['files']} files: no-op {f['noop_index_s']} s, one-file edit "
                     f"{f['one_file_edit_s']} s")
    rows = []
    if report.recent:
        r = report.recent
        for key in ("helper_system_python", "helper", "no_helper_system_python", "no_helper"):
            if r.get(key):
                rows.append((f"{r['files']} files", f"recent.py {key}", r[key]))
    for size in report.sizes:
        for key in ("search_helper_system_python", "search_helper", "search_no_helper_system_python",
                    "search_no_helper", "in_process_semantic", "in_process_keyword", "in_process_hybrid",
                    "vector_exact_scan"):
            if size.get(key):
                rows.append((f"{size['chunks']} chunks{' hnsw' if size['hnsw'] else ''}", key, size[key]))
    if rows:
        lines.append(f"{'data':<20} {'figure':<40} {'median ms':>10} {'p95 ms':>8} {'x -c pass':>9} {'peak MB':>8}")
        for data, key, timing in rows:
            peak = f"{timing['peak_rss_mb']:.1f}" if timing.get("peak_rss_mb") else "-"
            ratio = f"{timing['ratio']:.2f}" if timing.get("ratio") else "-"
            lines.append(f"{data:<20} {key:<40} {timing['median_ms']:>10.1f} {timing['p95_ms']:>8.1f} {ratio:>9} "
                         f"{peak:>8}")
        baselines = [timing["baseline_ms"] for _, _, timing in rows if timing.get("baseline_ms")]
        if baselines:
            lines.append(f"(x -c pass: median over median of `python3 -c pass` run interleaved with each figure; "
                         f"those medians ranged {min(baselines):.1f}-{max(baselines):.1f} ms)")
    for size in report.sizes:
        if size.get("breakdown"):
            lines.append(f"warm search at {size['chunks']} chunks, part by part (median ms): " + ", ".join(
                f"{part} {value}" for part, value in size["breakdown"].items()))
    if report.knowledge:
        k = report.knowledge
        for output_format in ("jsonl", "csv"):
            e = k[f"export_{output_format}"]
            lines.append(f"export.py --format {output_format} over {k['export_chunks']} chunks: median "
                         f"{e['median_ms']} ms ({e['chunks_per_s']} chunks/s, {e['bytes'] / 1048576:.1f} MB), "
                         f"peak {e['peak_rss_mb']} MB")
        v = k["verify"]
        lines.append(f"stats.py --verify over {k['verify_files']} files: median {v['median_ms']} ms, "
                     f"p95 {v['p95_ms']} ms, peak {v['peak_rss_mb']} MB")
    return "\n".join(lines)
