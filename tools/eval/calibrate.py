#!/usr/bin/env python3
"""Refit the relevance score's parameters (src/memory_search/data/relevance.json) on the development sets.

    calibrate.py [--workdir DIR] [--features FILE] [--write]

1. Builds the development sets (tools/eval/abstention_sets.py): every collection found (examples/memories with
   its hand-written questions, the two cross-lingual sets, package-notes when `make eval-notes` built it,
   ../shared/eval's scifact-train, jsquad-dev and jaquad-train, and examples/eval/ja-dev-notes over
   ../shared/eval/tech-notes-dev, whose unanswerable questions are of its own topics), each with its answerable queries
   (qrels) and questions of other domains and languages that none of its documents answers.
2. Indexes each collection as a memories directory under --workdir (kept: a re-run only checks it), runs
   every question through the real search in each mode (ten results, no score floor) and records every
   shown hit's signals (hit.legs["relevance"]) and whether the qrels judge it relevant: --features FILE.
3. Fits one logistic model per mode on the pooled sets: each collection weighs the same; within one,
   answerable and unanswerable questions weigh half each, spread over their hits; the relevant hits weigh
   BALANCE times the rest (a missed answer costs BALANCE shown non-answers). BALANCE is the smallest of
   BALANCES at which, in every mode, the answerable same-language queries keep a relevant document at
   0.5 in 95 % of cases on average over the collections. Prints, per collection and mode, the share of
   unanswerable questions left with nothing at 0.5, the share of answerable ones keeping their relevant
   document, and the calibration, in-sample and leave-one-collection-out (the collection, and its
   questions asked elsewhere, left out of the fit).
4. With --write, writes the parameters, and as the hybrid baseline's fallback (for an index whose indexer
   kept no mean vectors) the median baseline of the questions. The hybrid ordering (relevance.fuse) keeps
   its weights.

Deterministic: fixed samples (--limit per set, seed), Newton's method from zero. Development tooling, not
installed; needs numpy (a dependency of the local model's wheel)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(1, str(ROOT / "src"))
sys.path.insert(1, str(ROOT / "tools" / "eval"))

MODES = ("semantic", "keyword", "hybrid")
FEATURES = {"semantic": ["cos"], "keyword": ["cov", "bm25n"], "hybrid": ["lift"]}
BALANCES = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)
THRESHOLD = 0.5
LIMIT = 800  # answerable queries per set at most (jsquad-dev has 4,442)
L2 = 1e-3
DATA = ROOT / "src" / "memory_search" / "data" / "relevance.json"
MODEL = "local:multilingual-e5-small:384"  # the bundled model, whose parameters relevance.json holds
# Collections that share their questions' topics are one group in leave-one-out (the two cross-lingual
# sets are about the same kinds of notes).
GROUPS = {"ja-questions-en-notes": "cross-lingual", "en-questions-ja-notes": "cross-lingual"}


def group(name: str) -> str:
    return GROUPS.get(name, name)


def collect(sets: dict[str, Path], unanswerable: dict[str, Path], workdir: Path, out: Path, limit: int) -> None:
    """Search every question of every collection in every mode; one JSON line per shown hit."""
    from eval_lib import _RememberingEmbedder, load_dataset, memories_once, read_queries

    from memory_search.config import Settings
    from memory_search.embedding import choose_spec, make_embedder
    from memory_search.indexing.indexer import Indexer
    from memory_search.search.layouts import layout_for
    from memory_search.search.retrieval import Searcher, SearchRequest
    from memory_search.storage.database import connect
    from memory_search.storage.schema import find_index

    _record_every_signal()
    settings = Settings.from_env()
    with open(out, "w", encoding="utf-8") as sink:
        for name, folder in sets.items():
            split = {"scifact-train": "train", "jsquad-dev": "dev", "jaquad-train": "train"}.get(name, "test")
            if name in ("package-notes", "ja-dev-notes"):
                datasets = [load_dataset(folder, "ja"), load_dataset(folder, "en")]
            else:
                datasets = [load_dataset(folder, split, limit)]
            dataset = datasets[0]
            root, paths = memories_once(dataset, workdir / name)
            run_settings = settings.with_overrides(memories_dir=str(root))
            started = time.monotonic()
            Indexer(run_settings).run()
            questions = [(query_id, text, data.qrels[query_id]) for data in datasets
                         for query_id, text in data.queries.items()]
            questions += [(query_id, text, None) for query_id, text in read_queries(unanswerable[name]).items()]
            with connect(run_settings, read_only=True) as conn:
                info = find_index(conn, run_settings.memories_root)
                embedder = _RememberingEmbedder(make_embedder(choose_spec(run_settings, info.spec), run_settings))
                searcher = Searcher(conn, layout_for(info, run_settings.memories_root), embedder)
                for query_id, text, qrels in questions:
                    for mode in MODES:
                        hits = searcher.search(SearchRequest(query=text, top=10, mode=mode, min_score=0.0,
                                                             snippets=False))
                        sink.write(json.dumps({
                            "set": name, "query": query_id, "mode": mode, "answerable": qrels is not None,
                            "language": _language(text),
                            "hits": [{"signals": hit.legs.get("relevance", {}), "score": hit.score,
                                      "relevant": bool(qrels and qrels.get(paths[hit.path], 0) > 0)}
                                     for hit in hits]}, ensure_ascii=False) + "\n")
            print(f"{name}: {len(questions)} questions in {time.monotonic() - started:.0f} s", file=sys.stderr)


def _record_every_signal() -> None:
    """Have each shown hit carry every numeric signal of its chunk, not only its model's features, so other
    features can be tried on one collection run."""
    from memory_search.search import relevance

    judge = relevance.judge

    def every_signal(model, signals):
        score, shown = judge(model, signals)
        shown.update({name: value for name, value in signals.items()
                      if isinstance(value, (int, float)) and not isinstance(value, bool)})
        return score, shown

    relevance.judge = every_signal


def _language(text: str) -> str | None:
    from memory_search.text.language import main_language

    return main_language(text)


# --- fitting ---------------------------------------------------------------------------------------

def load(features: Path) -> dict[str, list[dict]]:
    by_mode = defaultdict(list)
    with open(features, encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            by_mode[item["mode"]].append(item)
    return by_mode


def design(queries: list[dict], mode: str, balance: float, leave_out: str | None = None):
    """Rows (features), labels, weights and each row's query index, for the queries kept."""
    import numpy as np

    kept = [index for index, query in enumerate(queries) if leave_out is None or (
        group(query["set"]) != leave_out and group(_source(query)) != leave_out)]
    count = defaultdict(int)
    for index in kept:
        if queries[index]["hits"]:
            count[(queries[index]["set"], queries[index]["answerable"])] += 1
    collections = {name for name, _ in count}
    rows, labels, weights = [], [], []
    for index in kept:
        query = queries[index]
        hits = query["hits"]
        for hit in hits:
            rows.append([hit["signals"][name] for name in FEATURES[mode]])
            labels.append(1.0 if hit["relevant"] else 0.0)
            weights.append(1.0 / (len(collections) * 2 * count[(query["set"], query["answerable"])] * len(hits)))
    X, y, w = np.array(rows, dtype=float).reshape(-1, len(FEATURES[mode])), np.array(labels), np.array(weights)
    w = np.where(y == 1, w * balance * w[y == 0].sum() / max(w[y == 1].sum(), 1e-12), w)
    return X, y, w


def _source(query: dict) -> str:
    """The set an unanswerable question comes from (its id is SOURCE:ID), else its own set."""
    if query["answerable"] or ":" not in query["query"]:
        return query["set"]
    return query["query"].split(":", 1)[0]


def fit(X, y, w, l2: float = L2, iterations: int = 100) -> tuple[float, list[float]]:
    """Weighted logistic regression by Newton's method on standardised features; (intercept, coefficients)."""
    import numpy as np

    mean, std = X.mean(0), X.std(0) + 1e-12
    A = np.hstack([np.ones((len(X), 1)), (X - mean) / std])
    beta = np.zeros(A.shape[1])
    w = w / w.sum()
    penalty = np.r_[0.0, np.full(A.shape[1] - 1, l2)]
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-A @ beta))
        gradient = A.T @ (w * (p - y)) + penalty * beta
        hessian = (A * (w * p * (1 - p))[:, None]).T @ A + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    coef = beta[1:] / std
    return float(beta[0] - (beta[1:] * mean / std).sum()), [float(c) for c in coef]


def probability(model, signals: dict, mode: str) -> float:
    intercept, coef = model
    z = intercept + sum(c * signals[name] for name, c in zip(FEATURES[mode], coef))
    return 1 / (1 + math.exp(-z)) if z > -700 else 0.0


def figures(queries: list[dict], scores: list[list[float]], threshold: float = THRESHOLD) -> dict:
    """abstain: unanswerable questions with no hit at the threshold; keep: answerable questions whose first
    ten held a relevant document that still hold one (same_keep: those in the collection's language);
    ece and bins: calibration of every shown hit of the answerable questions against the qrels."""
    unanswerable = [all(s < threshold for s in score) for query, score in zip(queries, scores)
                    if not query["answerable"]]
    found = [(query, score) for query, score in zip(queries, scores)
             if query["answerable"] and any(hit["relevant"] for hit in query["hits"])]
    kept = [any(hit["relevant"] and s >= threshold for hit, s in zip(query["hits"], score)) for query, score in found]
    pairs = [(s, 1.0 if hit["relevant"] else 0.0) for query, score in zip(queries, scores) if query["answerable"]
             for hit, s in zip(query["hits"], score)]
    bins, ece = [], 0.0
    for index in range(10):
        low, high = index / 10, (index + 1) / 10
        inside = [(s, label) for s, label in pairs if low <= s < high or (index == 9 and s == 1.0)]
        if inside:
            mean = sum(s for s, _ in inside) / len(inside)
            share = sum(label for _, label in inside) / len(inside)
            ece += len(inside) / len(pairs) * abs(mean - share)
            bins.append((f"{low:.1f}", len(inside), round(mean, 3), round(share, 3)))
    return {"abstain": _share(unanswerable), "unanswerable": len(unanswerable), "keep": _share(kept),
            "answerable": len(kept), "ece": round(ece, 4) if pairs else float("nan"), "bins": bins}


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else float("nan")


def evaluate(by_mode: dict[str, list[dict]], balance: float) -> dict:
    """Per mode: the model fitted on every set, and per collection its in-sample and leave-one-out figures."""
    report = {}
    for mode in MODES:
        queries = by_mode[mode]
        model = fit(*design(queries, mode, balance))
        sets = sorted({query["set"] for query in queries})
        per_set = {}
        held_out_models = {name: fit(*design(queries, mode, balance, leave_out=name))
                           for name in sorted({group(s) for s in sets})}
        for name in sets:
            members = [query for query in queries if query["set"] == name]
            inside = [[probability(model, hit["signals"], mode) for hit in query["hits"]] for query in members]
            held = held_out_models[group(name)]
            outside = [[probability(held, hit["signals"], mode) for hit in query["hits"]] for query in members]
            per_set[name] = {"in_sample": figures(members, inside), "held_out": figures(members, outside)}
        pooled = [[probability(model, hit["signals"], mode) for hit in query["hits"]] for query in queries]
        report[mode] = {"model": model, "sets": per_set, "pooled": figures(queries, pooled)}
    return report


def choose_balance(by_mode: dict[str, list[dict]]) -> tuple[float, dict]:
    """The smallest balance at which every mode keeps 95 % on average over the same-language collections."""
    for balance in BALANCES:
        report = evaluate(by_mode, balance)
        means = [sum(figures_["in_sample"]["keep"] for name, figures_ in report[mode]["sets"].items()
                     if group(name) != "cross-lingual") / max(1, sum(1 for name in report[mode]["sets"]
                                                                     if group(name) != "cross-lingual"))
                 for mode in MODES]
        print(f"balance {balance}: mean keep over same-language collections "
              + ", ".join(f"{mode} {mean:.3f}" for mode, mean in zip(MODES, means)), file=sys.stderr)
        if min(means) >= 0.95:
            return balance, report
    return balance, report


def print_report(report: dict, balance: float) -> None:
    print(f"balance {balance}; at score >= {THRESHOLD}: abstain = unanswerable questions left with no result, "
          "keep = answerable queries whose first ten held a relevant document that still hold one; ECE over "
          "the answerable queries' shown hits (qrels)")
    for mode in MODES:
        intercept, coef = report[mode]["model"]
        print(f"\n{mode}: p = 1 / (1 + exp(-({intercept:.4f} + "
              + " + ".join(f"{c:.4f} x {name}" for name, c in zip(FEATURES[mode], coef)) + ")))")
        print(f"  {'set':<24} {'in-sample abstain':>17} {'keep':>6} {'ECE':>6}   {'held-out abstain':>16} "
              f"{'keep':>6} {'ECE':>6}   questions (unanswerable / answerable)")
        for name, item in report[mode]["sets"].items():
            a, b = item["in_sample"], item["held_out"]
            print(f"  {name:<24} {a['abstain']:>17.3f} {a['keep']:>6.3f} {a['ece']:>6.3f}   {b['abstain']:>16.3f} "
                  f"{b['keep']:>6.3f} {b['ece']:>6.3f}   {a['unanswerable']} / {a['answerable']}")
        pooled = report[mode]["pooled"]
        print("  reliability, every answerable query's shown hits (bin: hits, mean score, share relevant): "
              + "; ".join(f"{low}: {n}, {mean:.2f}, {share:.2f}" for low, n, mean, share in pooled["bins"]))


def lenient_cutoff(by_mode: dict[str, list[dict]], report: dict) -> float:
    """The largest floor (of 0.01, 0.02, ...) at which semantic search keeps the right document of every
    answerable query of every set whose first ten held it: the counterpart of the seed's cosine 0.3."""
    model, queries = report["semantic"]["model"], by_mode["semantic"]
    scores = [[probability(model, hit["signals"], "semantic") for hit in query["hits"]] for query in queries]
    cutoff = 0.0
    for step in range(1, 51):
        floor = step / 100
        if figures(queries, scores, floor)["keep"] < 1.0:
            break
        cutoff = floor
    return cutoff


def median_baseline(by_mode: dict[str, list[dict]]) -> float:
    """The median over the hybrid questions of their baseline (relevance.baseline), those that fell back to the
    current fallback (an index with few chunks in the question's script) left out."""
    fallback = json.loads(DATA.read_text(encoding="utf-8"))["models"][MODEL]["fusion"].get("baseline")
    found = sorted(query["hits"][0]["signals"]["baseline"] for query in by_mode["hybrid"]
                   if query["hits"] and query["hits"][0]["signals"].get("baseline", fallback) != fallback)
    return round(found[len(found) // 2], 4) if found else 0.0


def write(report: dict, balance: float, cutoff: float, fallback: float, modes: tuple[str, ...] = MODES) -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    data["semantic_cutoff"] = cutoff
    data["about"] = ("fitted by tools/eval/calibrate.py: logistic models of the probability that a hit answers the "
                     f"query, relevant hits weighing {balance} x the rest; see src/memory_search/search/relevance.py")
    data["balance"] = balance

    def entry(mode):
        intercept, coef = report[mode]["model"]
        return {"features": FEATURES[mode], "intercept": round(intercept, 6), "coef": [round(c, 6) for c in coef]}

    model = data["models"][MODEL]
    if "keyword" in modes:
        data["keyword"] = entry("keyword")
    if "semantic" in modes:
        model["semantic"] = entry("semantic")
    if "hybrid" in modes:
        model["hybrid"] = entry("hybrid")
        model["fusion"]["baseline"] = fallback
    DATA.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memory-search-calibration"),
                        help="where the sets and their indexes are kept between runs")
    parser.add_argument("--eval", dest="eval_dir", type=Path, default=ROOT.parent / "shared" / "eval",
                        help="the public sets (scifact-train, jsquad-dev, jaquad-train)")
    parser.add_argument("--notes", type=Path, default=Path("/tmp/memory-search-package-notes/set"),
                        help="the package-notes set `make eval-notes` builds, if present")
    parser.add_argument("--features", type=Path, help="the hits' signals: read from FILE if it exists, else "
                                                      "collected into it (default: WORKDIR/features.jsonl)")
    parser.add_argument("--recollect", action="store_true", help="collect the signals again even if FILE exists")
    parser.add_argument("--limit", type=int, default=LIMIT, help=f"answerable queries per set (default {LIMIT})")
    parser.add_argument("--balance", type=float, help="use this balance instead of choosing it")
    parser.add_argument("--json", dest="json_path", type=Path, help="also write the report as JSON to FILE")
    parser.add_argument("--write", action="store_true", help=f"write the fitted parameters to {DATA.relative_to(ROOT)}")
    parser.add_argument("--only", choices=MODES, action="append",
                        help="with --write, write this mode's model only (repeatable; default: every mode)")
    args = parser.parse_args()
    features = args.features or args.workdir / "features.jsonl"
    if args.recollect or not features.is_file():
        from abstention_sets import build

        args.workdir.mkdir(parents=True, exist_ok=True)
        unanswerable = build(args.workdir / "sets", args.eval_dir, args.notes, per_source=150)
        sets = {name: Path(folder) for name, folder in
                json.loads((args.workdir / "sets" / "sets.json").read_text(encoding="utf-8")).items()}
        dev_notes = args.workdir / "sets" / "ja-dev-notes"
        if (args.eval_dir / "tech-notes-dev").is_dir():  # our own Japanese developer notes, both languages
            import subprocess

            subprocess.run([sys.executable, str(ROOT / "examples" / "eval" / "ja-dev-notes" / "build.py"),
                            str(dev_notes), "--articles", str(args.eval_dir / "tech-notes-dev")], check=True)
            sets["ja-dev-notes"], unanswerable["ja-dev-notes"] = dev_notes, dev_notes / "unanswerable.jsonl"
        collect(sets, unanswerable, args.workdir / "indexes", features, args.limit)
    by_mode = load(features)
    if args.balance is not None:
        balance, report = args.balance, evaluate(by_mode, args.balance)
    else:
        balance, report = choose_balance(by_mode)
    print_report(report, balance)
    if args.json_path:
        args.json_path.write_text(json.dumps({"balance": balance, "report": report}, indent=1) + "\n",
                                  encoding="utf-8")
    cutoff = lenient_cutoff(by_mode, report)
    print(f"\nlenient semantic cutoff (no right document lost in any set): {cutoff}")
    if args.write:
        write(report, balance, cutoff, median_baseline(by_mode), tuple(args.only or MODES))
        print(f"\nwrote {DATA}", file=sys.stderr)


if __name__ == "__main__":
    main()
