#!/usr/bin/env python3
"""Retrieval quality of the LangBot plugin on a BEIR-layout set, through the SDK's entities.

Each corpus entry becomes one document (Markdown, its title in the frontmatter, as tools/eval/eval.py
writes it), ingested into a fresh knowledge base through the host's file API; each query is a
`retrieve` call. Prints the same metrics as tools/eval/eval.py, then what the score threshold keeps.

  .venv/bin/python tests/langbot/evaluate_plugin.py ../shared/eval/jsquad-dev --split dev
  .venv/bin/python tests/langbot/evaluate_plugin.py DATASET --split dev --chunk-size 1000 --chunk-overlap 0
  .venv/bin/python tests/langbot/evaluate_plugin.py examples/eval/ja-questions-en-notes --embedding-model host-e5

The database and model are the configured ones (MEMORIES_DATABASE_URL / the embedded server,
the local model); the knowledge base is dropped at the end."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tools" / "eval")]
sys.path.insert(0, str(Path(__file__).resolve().parent))

THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--chunk-size", type=int, default=500)
    parser.add_argument("--chunk-overlap", type=int, default=50)
    parser.add_argument("--modes", default="hybrid", help="comma-separated: hybrid, semantic, keyword")
    parser.add_argument("--embedding-model", default="",
                        help="embed through the host's invoke_embedding (here: the local model without query/"
                             "passage roles, as a LangBot embedding model)")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--top-k", type=int, default=5, help="the top_k the threshold figures assume (LangBot's 5)")
    args = parser.parse_args()
    return asyncio.run(evaluate(args))


async def evaluate(args) -> int:
    import yaml
    from eval_lib import load_dataset, ndcg, score_run
    from harness import Bot, documents
    from langbot_plugin.api.entities.builtin.rag.enums import DocumentStatus

    dataset = load_dataset(args.dataset, args.split, args.limit_queries)
    creation = {"chunk_size": args.chunk_size, "chunk_overlap": args.chunk_overlap,
                "embedding_model": args.embedding_model}
    with tempfile.TemporaryDirectory(prefix="langbot-eval-") as storage:
        bot = Bot(Path(storage))
        engine = bot.engine
        kb_id = f"eval-{dataset.name}-{int(time.time())}"
        await engine.on_knowledge_base_create(kb_id, creation)
        try:
            started = time.monotonic()
            for number, (doc_id, (title, text)) in enumerate(dataset.corpus.items(), 1):
                head = yaml.safe_dump({"title": title} if title else {"doc_id": doc_id}, allow_unicode=True)
                result = await engine.ingest(bot.ingestion_context(
                    kb_id, f"{doc_id}.md", f"---\n{head}---\n{text}\n", document_id=doc_id, settings=creation))
                if result.status != DocumentStatus.COMPLETED:
                    print(f"{doc_id}: {result.error_message}", file=sys.stderr)
                if number % 200 == 0:
                    print(f"ingested {number}/{len(dataset.corpus)}", file=sys.stderr)
            ingest_seconds = round(time.monotonic() - started, 1)
            report = {"dataset": dataset.name, "split": args.split, "queries": len(dataset.queries),
                      "documents": len(dataset.corpus), "creation_settings": creation,
                      "ingest_seconds": ingest_seconds, "results": {}, "query_ms": {}, "threshold": {}}
            for mode in args.modes.split(","):
                runs, deep_runs, scores, timings = {}, {}, {}, []
                for query_id, query in dataset.queries.items():
                    # As tools/eval/eval.py: the @10 figures, the time and the thresholds from a retrieval
                    # of ten, R@100 from one of 100.
                    began = time.perf_counter()
                    response = await engine.retrieve(bot.retrieval_context(
                        kb_id, query, creation=creation, score_threshold=0, top_k=max(10, args.top_k),
                        retrieval_mode=mode))
                    timings.append(time.perf_counter() - began)
                    runs[query_id] = documents(response)
                    scores[query_id] = [entry.score for entry in response.results]
                    deep_runs[query_id] = documents(await engine.retrieve(bot.retrieval_context(
                        kb_id, query, creation=creation, score_threshold=0, top_k=100, retrieval_mode=mode)))
                report["results"][mode] = score_run(runs, deep_runs, dataset)
                report["query_ms"][mode] = round(sorted(timings)[len(timings) // 2] * 1000, 1)
                # The threshold cuts a prefix of the fused order, so one run at 0 shows every threshold.
                report["threshold"][mode] = {}
                for threshold in THRESHOLDS:
                    kept = {query_id: [doc for doc, score in zip(runs[query_id], scores[query_id])
                                       if score >= threshold][: args.top_k] for query_id in runs}
                    report["threshold"][mode][str(threshold)] = {
                        f"ndcg@{args.top_k}": round(sum(ndcg(kept[q], dataset.qrels[q], args.top_k) for q in kept)
                                                   / len(kept), 4),
                        "mean_results": round(sum(len(docs) for docs in kept.values()) / len(kept), 2),
                        "no_result": round(sum(not docs for docs in kept.values()) / len(kept), 4),
                        "relevant_kept": round(sum(bool(set(kept[q]) & set(dataset.qrels[q])) for q in kept)
                                               / len(kept), 4),
                    }
                print(f"{mode}: {report['results'][mode]}", file=sys.stderr)
        finally:
            await engine.on_knowledge_base_delete(kb_id)
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
