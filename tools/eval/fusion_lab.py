#!/usr/bin/env python3
"""Measure hybrid orderings offline, with leave-one-collection-out figures for anything tuned.

    fusion_lab.py collect OUT.jsonl [--sets NAME,...] [--limit N]
    fusion_lab.py compare OUT.jsonl [--variants FILE.json]

collect runs every question of every development set through the real search (hybrid, time words read,
as search.py) and records, per question, every candidate chunk both legs returned (100 deep each) with the
signals the fusion reads (cosine, BM25 over the query's ceiling, coverage over the terms the chunk can hold,
the share of the query's term weight it can hold, its languages), its file, the query's language and the
language shift; nothing is fitted here.

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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(1, str(ROOT / "src"))
sys.path.insert(1, str(ROOT / "tools" / "eval"))

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
MODEL = "local:multilingual-e5-small:384"  # the bundled model, whose fusion weights relevance.json holds


# --- collect -------------------------------------------------------------------------------------------

def collect(out: Path, names: list[str], limit: int, workdir: Path) -> None:
    from eval_lib import load_dataset, memories_once

    from memory_search.config import Settings
    from memory_search.embedding import choose_spec, make_embedder
    from memory_search.indexing.indexer import Indexer
    from memory_search.search import relevance, retrieval
    from memory_search.search.layouts import layout_for
    from memory_search.search.retrieval import Searcher, SearchRequest, search_in_time
    from memory_search.storage.database import connect
    from memory_search.storage.schema import find_index

    seen: dict = {}
    real_fuse = relevance.fuse

    def recording_fuse(signals, query_language, weights, shift=0.0, base=0.0):
        seen["pool"] = ({chunk_id: dict(signal) for chunk_id, signal in signals.items()}, query_language, shift)
        return real_fuse(signals, query_language, weights, shift, base)

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
            root, paths = memories_once(dataset, workdir / name)
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
                        "set": name, "query": query_id, "language": query_language, "shift": shift,
                        "relevant": dataset.qrels[query_id],
                        "candidates": [[paths.get(files[chunk_id], files[chunk_id]), round(s["cos"], 5),
                                        round(s.get("bm25n", 0.0), 5), round(s.get("cov", 0.0), 5),
                                        s["attainable"], sorted(s["languages"])] for chunk_id, s in signals.items()],
                        "ids": list(signals),
                        "keyword": order.get("keyword", []), "semantic": order.get("semantic", []),
                        "shown": [paths.get(hit.path, hit.path) for hit in hits],
                    }, ensure_ascii=False) + "\n")
                    if number % 100 == 0:
                        print(f"{name}: {number}/{len(dataset.queries)}", file=sys.stderr)


def count_scripts(out: Path, names: list[str], workdir: Path) -> None:
    """OUT.counts.json: per set, the chunks in Latin and in CJK script its index holds (the language baseline's
    floor reads them)."""
    from memory_search.config import Settings
    from memory_search.storage.database import connect
    from memory_search.storage.schema import ManagedTables, read_meta

    counts = {}
    settings = Settings.from_env()
    for name in names:
        root = workdir / name / "memories"
        if not root.is_dir():
            continue
        with connect(settings.with_overrides(memories_dir=str(root)), read_only=True) as conn:
            kept = json.loads(read_meta(ManagedTables.of(root.absolute()).on(conn)).get("script_means") or "{}")
        counts[name] = [kept.get("latin", [0])[0], kept.get("cjk", [0])[0]]
    out.with_suffix(".counts.json").write_text(json.dumps(counts), encoding="utf-8")


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
    """The fusion's order (relevance.fuse, the code search.py runs) on one question's recorded candidates, with
    `knobs` over the shipped fusion weights; shift_scale and floor (the least chunks of either script) vary the
    language baseline."""
    from memory_search.search import relevance

    weights = {**relevance.calibration(MODEL).fusion, **knobs}
    shift = query["shift"] * knobs.get("shift_scale", 1.0)
    if min(query.get("script_chunks", (10 ** 9,))) < knobs.get("floor", relevance.MIN_LANGUAGE_CHUNKS):
        shift = 0.0
    signals = {chunk_id: {"cos": cos, "bm25n": bm25n, "cov": cov, "attainable": attainable,
                          "languages": frozenset(languages)}
               for chunk_id, (_, cos, bm25n, cov, attainable, languages) in zip(query["ids"], query["candidates"])}
    return [chunk_id for chunk_id, _ in relevance.fuse(signals, query["language"], weights, shift)]


def per_query(queries: list[dict], knobs: dict | None, score=None) -> dict:
    """(set, mode) -> [nDCG@10 of each question, or `score(shown, relevant)`], mode keyword, semantic (knobs
    None) or hybrid."""
    score = score or ndcg_at_10
    runs = defaultdict(list)
    for query in queries:
        doc_of = {chunk_id: candidate[0] for chunk_id, candidate in zip(query["ids"], query["candidates"])}
        if knobs is None:
            for leg in ("keyword", "semantic"):
                runs[(query["set"], leg)].append(score(files_of(query[leg], doc_of), query["relevant"]))
        else:
            runs[(query["set"], "hybrid")].append(score(files_of(order_by(query, knobs), doc_of), query["relevant"]))
    return runs


def ndcg_at_10(shown: list[str], relevant: dict) -> float:
    return ndcg(shown, relevant)


def best_first(shown: list[str], relevant: dict) -> float | None:
    """1 when the first hit has the question's top grade (the page in its own language, of a bilingual set's
    twins), 0 when not; None for a question whose relevant documents all have one grade."""
    if len(set(relevant.values())) < 2:
        return None
    return 1.0 if shown and relevant.get(shown[0], 0) == max(relevant.values()) else 0.0


def mean(values: list[float]) -> float:
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else 0.0


def below(hybrid: list[float], leg: list[float]) -> bool:
    """Whether hybrid loses to a leg beyond noise: its mean paired difference under minus two standard errors."""
    diffs = [a - b for a, b in zip(hybrid, leg)]
    spread = math.sqrt(sum((d - mean(diffs)) ** 2 for d in diffs) / max(len(diffs) - 1, 1))
    return mean(diffs) < -2 * spread / math.sqrt(len(diffs)) if diffs else False


def group(name: str) -> str:
    """Sets of one collection (the same documents, or the two cross-lingual sets) leave together."""
    for prefix in ("twins", "package-notes", "web-archive"):
        if name.startswith(prefix):
            return prefix
    return "cross-lingual" if name in ("ja-q-en-notes", "en-q-ja-notes") else name


def compare(path: Path, grid: dict[str, list]) -> None:
    queries = [json.loads(line) for line in open(path, encoding="utf-8")]
    counts_file = path.with_suffix(".counts.json")
    counts = json.loads(counts_file.read_text(encoding="utf-8")) if counts_file.is_file() else {}
    for query in queries:
        query["script_chunks"] = counts.get(query["set"], (10 ** 9, 10 ** 9))
    names = sorted({query["set"] for query in queries})
    legs = per_query(queries, None)
    now = per_query(queries, {})
    keys = sorted(grid)
    variants = [dict(zip(keys, values)) for values in itertools.product(*(grid[key] for key in keys))]
    results = [(variant, per_query(queries, variant)) for variant in variants]
    print(f"{'set':22} {'n':>5} {'keyword':>8} {'semantic':>8} {'hybrid':>8}")
    for name in names:
        flag = " < a leg" if any(below(now[(name, "hybrid")], legs[(name, leg)]) for leg in ("keyword", "semantic")) \
            else ""
        print(f"{name:22} {len(now[(name, 'hybrid')]):5} {mean(legs[(name, 'keyword')]):8.4f} "
              f"{mean(legs[(name, 'semantic')]):8.4f} {mean(now[(name, 'hybrid')]):8.4f}{flag}")
    graded = [name for name in names if any(query["set"] == name and len(set(query["relevant"].values())) > 1
                                            for query in queries)]
    if graded:
        first_legs = per_query(queries, None, best_first)
        first = {json.dumps(variant): per_query(queries, variant, best_first) for variant in [{}] + variants}
        print("\nbest first (graded sets: the share of questions whose first hit has their top grade)")
        print(f"{'set':22} {'keyword':>8} {'semantic':>8} {'hybrid':>8}   best variant on this set")
        for name in graded:
            top = max(variants, key=lambda variant: mean(first[json.dumps(variant)][(name, "hybrid")]))
            print(f"{name:22} {mean(first_legs[(name, 'keyword')]):8.4f} {mean(first_legs[(name, 'semantic')]):8.4f} "
                  f"{mean(first['{}'][(name, 'hybrid')]):8.4f}   {json.dumps(top)} "
                  f"{mean(first[json.dumps(top)][(name, 'hybrid')]):.4f}")
    groups = sorted({group(name) for name in names})
    print("\nleave-one-collection-out: the variant with the best mean over the other collections' sets, "
          "on the sets left out")
    print(f"{'left out':22} {'chosen':58} {'now':>8} {'chosen':>8}  {'best leg':>8}   (+/-: beyond noise)")
    for left in groups:
        others = [n for n in names if group(n) != left]
        variant, got = max(results, key=lambda item: mean([mean(item[1][(n, "hybrid")]) for n in others]))
        for name in (n for n in names if group(n) == left):
            best = max(mean(legs[(name, "keyword")]), mean(legs[(name, "semantic")]))
            losing = any(below(got[(name, "hybrid")], legs[(name, leg)]) for leg in ("keyword", "semantic"))
            flag = " < a leg" if losing else ""
            change = ("-" if below(got[(name, "hybrid")], now[(name, "hybrid")])
                      else "+" if below(now[(name, "hybrid")], got[(name, "hybrid")]) else " ")
            print(f"{name:22} {json.dumps(variant):58} {mean(now[(name, 'hybrid')]):8.4f} "
                  f"{mean(got[(name, 'hybrid')]):8.4f}{change} {best:8.4f}{flag}")
    print("\nevery variant: mean over sets, worst change against now, sets below a leg beyond noise")
    for variant, got in sorted(results, key=lambda item: -mean([mean(item[1][(n, "hybrid")]) for n in names])):
        worst = min(mean(got[(n, "hybrid")]) - mean(now[(n, "hybrid")]) for n in names)
        losing = [n for n in names if any(below(got[(n, "hybrid")], legs[(n, leg)]) for leg in ("keyword", "semantic"))]
        print(f"{json.dumps(variant):58} {mean([mean(got[(n, 'hybrid')]) for n in names]):.4f} {worst:+.4f} "
              f"{','.join(losing)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("out", type=Path)
    c.add_argument("--sets", default=",".join(SETS))
    c.add_argument("--limit", type=int, default=LIMIT)
    c.add_argument("--workdir", type=Path, default=Path("/tmp/memory-search-fusion-lab"))
    n = sub.add_parser("counts")
    n.add_argument("out", type=Path)
    n.add_argument("--sets", default=",".join(SETS))
    n.add_argument("--workdir", type=Path, default=Path("/tmp/memory-search-fusion-lab"))
    r = sub.add_parser("compare")
    r.add_argument("pools", type=Path)
    r.add_argument("--grid", default='{"unattainable": [0, 0.01, 0.02, 0.03, 0.05, 0.08], "shift_scale": [0, 1.0]}',
                   help="JSON: knob -> values to try, every combination: the fusion weights of relevance.json "
                        "(coverage_cubed, bm25n, unattainable), shift_scale, floor")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.out, args.sets.split(","), args.limit, args.workdir)
        count_scripts(args.out, args.sets.split(","), args.workdir)
    elif args.command == "counts":
        count_scripts(args.out, args.sets.split(","), args.workdir)
    else:
        compare(args.pools, json.loads(args.grid))


if __name__ == "__main__":
    main()
