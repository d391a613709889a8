#!/usr/bin/env python3
"""Measure hybrid orderings offline, with leave-one-collection-out figures for anything tuned.

    fusion_lab.py collect OUT.jsonl [--sets NAME,...] [--limit N]
    fusion_lab.py compare OUT.jsonl [--variants FILE.json]

collect runs every question of every development set through the real search (hybrid, time words read,
as search.py) and records, per question, every candidate chunk both legs returned (100 deep each) with the
signals the learned fusion reads (cosine, BM25 over the query's ceiling, coverage, the chunk's language),
its file, the query's language and the language shift; nothing is fitted here.

compare replays each ordering variant on those candidates (one best chunk per file, ten results) and prints
nDCG@10 per set for the keyword and semantic legs and every variant; then, for each tuned knob, the value
chosen on all sets but one and its figure on the set left out (leave-one-collection-out), so a value that
only wins where it was chosen shows. Development tooling, not installed."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(ROOT / "src"))
sys.path.insert(1, str(ROOT / "tools"))

SHARED = next((up / "shared" / "eval" for up in ROOT.parents if (up / "shared" / "eval").is_dir()), ROOT / "eval")
EXAMPLES = ROOT / "examples" / "eval"
# name -> (folder, split, documents' language or None)
SETS = {
    "scifact": (SHARED / "scifact-train", "train", None),
    "jsquad": (SHARED / "jsquad-dev", "dev", None),
    "jaquad": (SHARED / "jaquad-train", "train", None),
    "locomo": (SHARED / "locomo-dev", "dev", None),
    "ja-q-en-notes": (EXAMPLES / "ja-questions-en-notes", "test", None),
    "en-q-ja-notes": (EXAMPLES / "en-questions-ja-notes", "test", None),
    "memories-questions": (Path("/tmp/memory-search-abstention/memories-questions"), "test", None),
    "twins-ja": (EXAMPLES / "bilingual-twins", "ja", None),
    "twins-en": (EXAMPLES / "bilingual-twins", "en", None),
    "twins-ja-en-pages": (EXAMPLES / "bilingual-twins", "ja", "en"),
    "twins-en-ja-pages": (EXAMPLES / "bilingual-twins", "en", "ja"),
    "ja-conversations": (EXAMPLES / "ja-conversations", "dev", None),
    "web-archive-ja": (EXAMPLES / "web-archive", "ja", None),
    "web-archive-en": (EXAMPLES / "web-archive", "en", None),
    "package-notes-ja": (Path("/tmp/memory-search-package-notes/set"), "ja", None),
    "package-notes-en": (Path("/tmp/memory-search-package-notes/set"), "en", None),
    "time-bound": (Path("/tmp/memory-search-time-set"), "test", None),
}
LIMIT = 600  # questions per set at most (fixed sample)


# --- collect -------------------------------------------------------------------------------------------

def collect(out: Path, names: list[str], limit: int, workdir: Path) -> None:
    from evaluation import load_dataset, write_memories

    from memory_search import relevance, retrieval
    from memory_search.config import Settings
    from memory_search.database import connect
    from memory_search.embedding import choose_spec, make_embedder
    from memory_search.indexer import Indexer
    from memory_search.layouts import layout_for
    from memory_search.retrieval import SearchRequest, Searcher, search_in_time
    from memory_search.schema import find_index

    seen: dict = {}
    real_fuse = relevance.fuse

    def recording_fuse(signals, query_language, weights, shift=0.0):
        seen["pool"] = ({chunk_id: dict(signal) for chunk_id, signal in signals.items()}, query_language, shift)
        return real_fuse(signals, query_language, weights, shift)

    real_collect = Searcher._collect

    def recording_collect(self, fused, legs, request, term_weights, judge=None):
        seen["legs"] = {leg: [(c.id, c.filename, c.score) for c in candidates] for leg, candidates in legs.items()}
        return real_collect(self, fused, legs, request, term_weights, judge)

    relevance.fuse, Searcher._collect = recording_fuse, recording_collect
    retrieval.relevance.fuse = recording_fuse
    settings = Settings.from_env()
    with open(out, "a", encoding="utf-8") as sink:
        for name in names:
            folder, split, language = SETS[name]
            if not (folder / "corpus.jsonl").is_file():
                print(f"{name}: {folder} not built, skipped", file=sys.stderr)
                continue
            dataset = load_dataset(folder, split, limit, language=language)
            root = workdir / name / "memories"
            paths_file = workdir / name / "paths.json"
            if not paths_file.is_file():
                paths_file.parent.mkdir(parents=True, exist_ok=True)
                paths_file.write_text(json.dumps(write_memories(dataset, root)), encoding="utf-8")
            paths = json.loads(paths_file.read_text(encoding="utf-8"))
            run_settings = settings.with_overrides(memories_dir=str(root))
            Indexer(run_settings).run()
            with connect(run_settings, read_only=True) as conn:
                info = find_index(conn, run_settings.memories_root)
                embedder = make_embedder(choose_spec(run_settings, info.spec), run_settings)
                searcher = Searcher(conn, layout_for(info, run_settings.memories_root), embedder)
                for number, (query_id, text) in enumerate(dataset.queries.items()):
                    seen.clear()
                    request = SearchRequest(query=text, top=10, mode="hybrid", snippets=False,
                                            today=dataset.today.get(query_id))
                    hits = search_in_time(request, searcher.search)
                    if "pool" not in seen:
                        continue
                    signals, query_language, shift = seen["pool"]
                    files = {chunk_id: filename for candidates in seen["legs"].values()
                             for chunk_id, filename, _ in candidates}
                    order = {leg: [chunk_id for chunk_id, _, _ in candidates]
                             for leg, candidates in seen["legs"].items()}
                    sink.write(json.dumps({
                        "set": name, "query": query_id, "language": round(query_language, 4), "shift": shift,
                        "relevant": dataset.qrels[query_id],
                        "candidates": [[paths.get(files[chunk_id], files[chunk_id]), round(s["cos"], 5),
                                        round(s.get("bm25n", 0.0), 5), round(s.get("cov", 0.0), 5),
                                        round(s["lang"], 3)] for chunk_id, s in signals.items()],
                        "ids": list(signals),
                        "keyword": order.get("keyword", []), "semantic": order.get("semantic", []),
                        "shown": [paths.get(hit.path, hit.path) for hit in hits],
                    }, ensure_ascii=False) + "\n")
                    if number % 100 == 0:
                        print(f"{name}: {number}/{len(dataset.queries)}", file=sys.stderr)


# --- replay --------------------------------------------------------------------------------------------

def ndcg(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    gains = sum((2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return gains / ideal if ideal else 0.0


def files_of(order: list[int], doc_of: dict[int, str], k: int = 10) -> list[str]:
    shown, seen = [], set()
    for chunk_id in order:
        doc = doc_of[chunk_id]
        if doc not in seen:
            seen.add(doc)
            shown.append(doc)
            if len(shown) == k:
                break
    return shown


def order_by(query: dict, knobs: dict) -> list[int]:
    """The learned fusion's order (relevance.fuse) under `knobs`, on one question's recorded candidates."""
    cubed, bm25, gap = knobs.get("coverage_cubed", 0.1), knobs.get("bm25n", 0.1), knobs.get("language_gap", 0.5)
    margin, scale = knobs.get("other_margin", 0.0), knobs.get("shift_scale", 1.0)
    language, shift = query["language"], query["shift"] * scale
    own_cjk = language >= 0.1
    keyword, other, cos = {}, set(), {}
    for chunk_id, (_, c, b, v, lang) in zip(query["ids"], query["candidates"]):
        keyword[chunk_id] = cubed * v ** 3 + bm25 * b
        if abs(lang - language) > gap:
            other.add(chunk_id)
        cos[chunk_id] = c + (shift if shift and (lang >= 0.1) != own_cjk else 0.0)
    same = [keyword[i] for i in keyword if i not in other]
    neutral = max(same) if other and same else None
    score = {i: cos[i] + (neutral - margin if neutral is not None and i in other else keyword[i]) for i in keyword}
    return sorted(score, key=lambda i: -score[i])


def figures(queries: list[dict], knobs: dict | None) -> dict[str, float]:
    by_set = defaultdict(list)
    for query in queries:
        doc_of = {chunk_id: candidate[0] for chunk_id, candidate in zip(query["ids"], query["candidates"])}
        if knobs is None:
            runs = {"keyword": query["keyword"], "semantic": query["semantic"]}
            for leg, order in runs.items():
                by_set[(query["set"], leg)].append(ndcg(files_of(order, doc_of), query["relevant"]))
        else:
            by_set[query["set"]].append(ndcg(files_of(order_by(query, knobs), doc_of), query["relevant"]))
    return {key: sum(values) / len(values) for key, values in by_set.items()}


def compare(path: Path, grid: dict[str, list]) -> None:
    queries = [json.loads(line) for line in open(path, encoding="utf-8")]
    names = sorted({query["set"] for query in queries})
    legs = figures(queries, None)
    base = figures(queries, {})
    keys = sorted(grid)
    variants = [dict(zip(keys, values)) for values in itertools.product(*(grid[key] for key in keys))]
    results = [(variant, figures(queries, variant)) for variant in variants]
    print(f"{'set':22} {'keyword':>8} {'semantic':>8} {'hybrid now':>10}")
    for name in names:
        print(f"{name:22} {legs[(name, 'keyword')]:8.4f} {legs[(name, 'semantic')]:8.4f} {base[name]:10.4f}")
    print("\nleave-one-collection-out: the variant with the best mean over the other sets, on the set left out")
    print(f"{'left out':22} {'chosen':40} {'now':>8} {'chosen':>8} {'best leg':>8}")
    for name in names:
        others = [n for n in names if n != name]
        variant, got = max(results, key=lambda item: sum(item[1][n] for n in others) / len(others))
        best_leg = max(legs[(name, "keyword")], legs[(name, "semantic")])
        print(f"{name:22} {json.dumps(variant):40} {base[name]:8.4f} {got[name]:8.4f} {best_leg:8.4f}")
    print("\nevery variant: mean over sets, worst loss against hybrid now, sets below their best leg")
    for variant, got in sorted(results, key=lambda item: -sum(item[1].values())):
        mean = sum(got.values()) / len(got)
        worst = min(got[n] - base[n] for n in names)
        below = [n for n in names if got[n] < max(legs[(n, "keyword")], legs[(n, "semantic")]) - 0.005]
        print(f"{json.dumps(variant):50} {mean:.4f} {worst:+.4f} {','.join(below)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("out", type=Path)
    c.add_argument("--sets", default=",".join(SETS))
    c.add_argument("--limit", type=int, default=LIMIT)
    c.add_argument("--workdir", type=Path, default=Path("/tmp/memory-search-fusion-lab"))
    r = sub.add_parser("compare")
    r.add_argument("pools", type=Path)
    r.add_argument("--grid", default='{"other_margin": [0, 0.01, 0.02, 0.03], "shift_scale": [0.5, 0.75, 1.0]}')
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.out, args.sets.split(","), args.limit, args.workdir)
    else:
        compare(args.pools, json.loads(args.grid))


if __name__ == "__main__":
    main()
