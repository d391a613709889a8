"""Retrieval quality on a BEIR-layout set, through the same indexer and search code as the scripts."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import random
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory_search.errors import UsageError

SEED = 20261130
CUTOFFS = {"ndcg@10": 10, "recall@10": 10, "recall@100": 100, "mrr@10": 10}
THRESHOLD = 0.5  # the --min-score the abstention figures are measured at
BINS = 10  # reliability bins of the calibration figures


@dataclass
class Dataset:
    name: str
    corpus: dict[str, tuple[str, str]]  # id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: grade}
    # Optional, for memories-shaped sets: where a document lives (metadata.path, e.g. raw/session/<date>/...) and
    # its frontmatter (metadata.frontmatter); the date a query is asked on (metadata.today).
    places: dict[str, tuple[str, dict]] = field(default_factory=dict)  # doc id -> (relpath, frontmatter)
    today: dict[str, dt.date] = field(default_factory=dict)  # query id -> its "today"
    # Optional, for conversation sets (locomo-dev): the turns that hold each answer, as (doc id, 1-based line of
    # the document's text) pairs (metadata.evidence), and each question's category (metadata.category).
    evidence: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # query id -> [(doc id, line)]
    category: dict[str, str] = field(default_factory=dict)  # query id -> category
    # Optional, for sets with answer lines (ja-dev-notes): the lines that hold each answer, as (doc id, first line,
    # last line) of the document's text (metadata.passages), and further labels to count them by (metadata.groups).
    passages: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)  # query id -> labels


def load_dataset(folder: Path, split: str, limit_queries: int | None = None, seed: int = SEED,
                 language: str | None = None) -> Dataset:
    """The set's documents, the queries of `split` that have a relevant document among them, and their qrels.

    language: keep only the documents whose metadata.language is this (one language of a bilingual set); a
    query whose relevant documents are all left out is left out too."""
    def jsonl(path: Path):
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    qrels_path = folder / "qrels" / f"{split}.tsv"
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not path.is_file():
            raise UsageError(f"{path} not found: DATASET_DIR needs corpus.jsonl, queries.jsonl and qrels/{split}.tsv")
    documents = jsonl(folder / "corpus.jsonl")
    if language is not None:
        documents = [doc for doc in documents
                     if isinstance(doc.get("metadata"), dict) and doc["metadata"].get("language") == language]
        if not documents:
            raise UsageError(f"no document of {folder / 'corpus.jsonl'} has metadata.language {language!r}")
    corpus = {str(doc["_id"]): (doc.get("title") or "", doc.get("text") or "") for doc in documents}
    places = {str(doc["_id"]): (str(doc["metadata"]["path"]), dict(doc["metadata"].get("frontmatter") or {}))
              for doc in documents if isinstance(doc.get("metadata"), dict) and doc["metadata"].get("path")}
    asked = jsonl(folder / "queries.jsonl")
    queries = {str(query["_id"]): query["text"] for query in asked}
    today = {str(query["_id"]): dt.date.fromisoformat(query["metadata"]["today"]) for query in asked
             if isinstance(query.get("metadata"), dict) and query["metadata"].get("today")}
    evidence = {str(query["_id"]): [(str(doc_id), int(line)) for doc_id, line in query["metadata"]["evidence"]]
                for query in asked if isinstance(query.get("metadata"), dict) and query["metadata"].get("evidence")}
    category = {str(query["_id"]): str(query["metadata"]["category"]) for query in asked
                if isinstance(query.get("metadata"), dict) and query["metadata"].get("category") is not None}
    passages = {str(query["_id"]): [(str(doc_id), int(first), int(last))
                                    for doc_id, first, last in query["metadata"]["passages"]]
                for query in asked if isinstance(query.get("metadata"), dict) and query["metadata"].get("passages")}
    groups = {str(query["_id"]): [str(label) for label in query["metadata"]["groups"]]
              for query in asked if isinstance(query.get("metadata"), dict) and query["metadata"].get("groups")}
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0 and str(row["corpus-id"]) in corpus:
                qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    chosen = sorted(query_id for query_id in qrels if query_id in queries)
    if limit_queries and limit_queries < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, limit_queries))
    name = folder.name + (f"-{language}-documents" if language else "")
    return Dataset(name, corpus, {query_id: queries[query_id] for query_id in chosen},
                   {query_id: qrels[query_id] for query_id in chosen}, places, today,
                   {query_id: evidence[query_id] for query_id in chosen if query_id in evidence},
                   {query_id: category[query_id] for query_id in chosen if query_id in category},
                   {query_id: passages[query_id] for query_id in chosen if query_id in passages},
                   {query_id: groups[query_id] for query_id in chosen if query_id in groups})


def memories_once(dataset: Dataset, folder: Path) -> tuple[Path, dict[str, str]]:
    """The set written as memories under folder/memories once (path -> doc id kept in folder/paths.json), so
    a later run indexes the same files."""
    root, paths_file = folder / "memories", folder / "paths.json"
    if not paths_file.is_file():
        paths_file.parent.mkdir(parents=True, exist_ok=True)
        paths_file.write_text(json.dumps(write_memories(dataset, root)), encoding="utf-8")
    return root, json.loads(paths_file.read_text(encoding="utf-8"))


def write_memories(dataset: Dataset, root: Path) -> dict[str, str]:
    """Each document as a memory: at its metadata.path with its frontmatter when the set gives them, else as
    wiki/<id>.md with its title in the frontmatter; returns path -> doc id."""
    import yaml

    paths = {}
    for number, (doc_id, (title, text)) in enumerate(dataset.corpus.items()):
        if doc_id in dataset.places:
            relpath, frontmatter = dataset.places[doc_id]
            path = root / relpath
            if title:
                frontmatter = {"title": title, **frontmatter}
        else:
            name = re.sub(r"[^A-Za-z0-9_-]+", "_", doc_id)[:80] + f"-{number}.md"
            path = root / "wiki" / name[:2] / name
            frontmatter = {"title": title} if title else {"doc_id": doc_id}
        path.parent.mkdir(parents=True, exist_ok=True)
        head = yaml.safe_dump(frontmatter, allow_unicode=True)
        path.write_text(f"---\n{head}---\n{text}\n", encoding="utf-8")
        paths[str(path)] = doc_id
    return paths


def ndcg(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    gains = sum((2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sum((2 ** grade - 1) / math.log2(i + 2)
                for i, grade in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return gains / ideal if ideal else 0.0


def recall(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def mrr(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def best_first(runs: dict[str, list[str]], dataset: Dataset) -> float | None:
    """The share of queries whose first hit is one of their highest-graded documents; None when no query has two
    grades (a bilingual set grades the page in the question's language above its twin in the other)."""
    graded = [query_id for query_id in runs if len(set(dataset.qrels[query_id].values())) > 1]
    if not graded:
        return None
    hits = 0
    for query_id in graded:
        relevant = dataset.qrels[query_id]
        ranked = runs[query_id]
        hits += bool(ranked) and relevant.get(ranked[0], 0) == max(relevant.values())
    return round(hits / len(graded), 4)


def out_of_order(scores: dict[str, list[float]]) -> float:
    """The share of searches whose shown scores are not in the order of the list: a hit scored above one shown
    before it."""
    if not scores:
        return float("nan")
    return round(sum(any(later > earlier + 1e-9 for earlier, later in zip(shown, shown[1:]))
                     for shown in scores.values()) / len(scores), 4)


def per_query_ndcg(runs: dict[str, list[str]], dataset: Dataset) -> dict[str, float]:
    return {query_id: round(ndcg(ranked, dataset.qrels[query_id], 10), 4) for query_id, ranked in runs.items()}


@dataclass
class Comparison:
    """How configuration B fares against A, query by query (nDCG@10)."""

    base: str
    other: str
    delta: float  # mean nDCG@10 of B minus A
    wins: int  # queries where B scores higher
    losses: int
    ties: int


def compare(base: str, base_scores: dict[str, float], other: str, other_scores: dict[str, float]) -> Comparison:
    shared = sorted(set(base_scores) & set(other_scores))
    if not shared:
        raise UsageError(f"{base} and {other} share no query: compare runs of the same set and sample")
    differences = [other_scores[query_id] - base_scores[query_id] for query_id in shared]
    return Comparison(base, other, round(sum(differences) / len(shared), 4),
                      sum(d > 1e-9 for d in differences), sum(d < -1e-9 for d in differences),
                      sum(abs(d) <= 1e-9 for d in differences))


def read_queries(path: Path) -> dict[str, str]:
    """Questions from a JSON Lines file ({_id, text} a line), or a BEIR folder's queries.jsonl."""
    path = path / "queries.jsonl" if path.is_dir() else path
    try:
        with open(path, encoding="utf-8") as handle:
            items = [json.loads(line) for line in handle if line.strip()]
        return {str(item["_id"]): str(item["text"]) for item in items}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"cannot read questions from {path} ({error}): give a JSON Lines file of "
                         '{"_id": ..., "text": ...}') from None


def abstention(hits_scores: dict[str, list[float]], threshold: float = THRESHOLD) -> float:
    """The share of unanswerable questions left with no hit at `threshold`."""
    if not hits_scores:
        return float("nan")
    return round(sum(all(score < threshold for score in scores) for scores in hits_scores.values())
                 / len(hits_scores), 4)


def keeping(judged: dict[str, list[tuple[float, int]]], threshold: float = THRESHOLD) -> tuple[float, int]:
    """Of the answerable questions whose first ten (unthresholded) held a relevant document, the share that
    still hold one at `threshold`; and how many such questions there were."""
    found = {query_id: hits for query_id, hits in judged.items() if any(grade > 0 for _, grade in hits)}
    if not found:
        return float("nan"), 0
    kept = sum(any(grade > 0 and score >= threshold for score, grade in hits) for hits in found.values())
    return round(kept / len(found), 4), len(found)


def reliability(judged: dict[str, list[tuple[float, int]]], bins: int = BINS) -> tuple[float, list[dict]]:
    """Expected calibration error and reliability bins of the scores of every hit shown (first ten) against
    the qrels: in each bin of score, the hits, their mean score and the share of them that are relevant."""
    pairs = [(score, 1.0 if grade > 0 else 0.0) for hits in judged.values() for score, grade in hits]
    table, error = [], 0.0
    for index in range(bins):
        low, high = index / bins, (index + 1) / bins
        inside = [(score, label) for score, label in pairs if low <= score < high or (index == bins - 1 and score == 1)]
        if inside:
            mean = sum(score for score, _ in inside) / len(inside)
            share = sum(label for _, label in inside) / len(inside)
            error += len(inside) / len(pairs) * abs(mean - share)
            table.append({"bin": f"{low:.1f}-{high:.1f}", "hits": len(inside), "mean_score": round(mean, 4),
                          "relevant": round(share, 4)})
    return (round(error, 4) if pairs else float("nan")), table


def score_run(runs: dict[str, list[str]], deep_runs: dict[str, list[str]], dataset: Dataset) -> dict[str, float]:
    """The @10 figures from `runs` (searches for 10 results, as a user makes them), R@100 from `deep_runs`."""
    totals = dict.fromkeys(CUTOFFS, 0.0)
    for query_id, ranked in runs.items():
        relevant = dataset.qrels[query_id]
        totals["ndcg@10"] += ndcg(ranked, relevant, 10)
        totals["recall@10"] += recall(ranked, relevant, 10)
        totals["recall@100"] += recall(deep_runs[query_id], relevant, 100)
        totals["mrr@10"] += mrr(ranked, relevant, 10)
    return {name: round(value / max(len(runs), 1), 4) for name, value in totals.items()}


# LoCoMo's question categories (metadata.category); a set of other categories shows its own values.
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
CONVERSATION_DEPTH = 5  # the conversation figures look at the first five hits


def conversation_figures(spans: dict[str, list[tuple[str, int | None, int | None]]], dataset: Dataset,
                         depth: int = CONVERSATION_DEPTH) -> dict[str, dict]:
    """Per category ("all" first) of the questions with evidence: "session", the share with an evidence document
    (session) among the first `depth` hits; "all_sessions", of the questions whose evidence spans two or more
    sessions ("multi" of them), the share with every one among the first `depth`; "turn", the share with a hit
    among the first `depth` whose line range (in the document's text) holds an evidence line of its document.

    spans: query id -> the hits as (doc id, first line, last line), lines of the document's text, best first."""
    outcomes: dict[str, list[tuple[bool, bool | None, bool]]] = {}
    for query_id, hits in spans.items():
        if query_id not in dataset.evidence:
            continue
        wanted: dict[str, set[int]] = {}
        for doc_id, line in dataset.evidence[query_id]:
            wanted.setdefault(doc_id, set()).add(line)
        shown = hits[:depth]
        found = {doc_id for doc_id, _, _ in shown} & set(wanted)
        turn = any(doc_id in wanted and start is not None and end is not None
                   and any(start <= line <= end for line in wanted[doc_id]) for doc_id, start, end in shown)
        every = found == set(wanted) if len(wanted) > 1 else None
        for group in ("all", dataset.category.get(query_id, "-")):
            outcomes.setdefault(group, []).append((bool(found), every, turn))
    figures = {}
    for group in ["all"] + sorted(key for key in outcomes if key != "all"):
        if group not in outcomes:
            continue
        rows = outcomes[group]
        several = [every for _, every, _ in rows if every is not None]
        figures[group] = {"name": CATEGORIES.get(group, group) if group != "all" else "all",
                          "queries": len(rows),
                          "session": round(sum(found for found, _, _ in rows) / len(rows), 4),
                          "multi": len(several),
                          "all_sessions": round(sum(several) / len(several), 4) if several else None,
                          "turn": round(sum(turn for _, _, turn in rows) / len(rows), 4)}
    return figures


def passage_figures(spans: dict[str, list[tuple[str, int | None, int | None]]], dataset: Dataset,
                    depth: int = CONVERSATION_DEPTH) -> dict[str, dict]:
    """Per label ("all", the question's category, its groups) of the questions with answer lines: "file", the share
    with an answering document among the first `depth` hits; "passage" (passage@5), the share with a hit among them
    whose shown lines overlap the answer's lines; "whole", the share with a hit whose lines hold all of them."""
    outcomes: dict[str, list[tuple[bool, bool, bool]]] = {}
    for query_id, hits in spans.items():
        answers = dataset.passages.get(query_id)
        if not answers:
            continue
        shown = hits[:depth]
        found = any(doc_id == answer for doc_id, _, _ in shown for answer, _, _ in answers)
        overlap = whole = False
        for doc_id, start, end in shown:
            for answer, first, last in answers:
                if doc_id == answer and start is not None and end is not None:
                    overlap |= start <= last and first <= end
                    whole |= start <= first and last <= end
        labels = ["all", dataset.category.get(query_id, "-"), *dataset.groups.get(query_id, [])]
        for label in dict.fromkeys(labels):
            outcomes.setdefault(label, []).append((found, overlap, whole))
    return {label: {"queries": len(rows), "file": round(sum(row[0] for row in rows) / len(rows), 4),
                    "passage": round(sum(row[1] for row in rows) / len(rows), 4),
                    "whole": round(sum(row[2] for row in rows) / len(rows), 4)}
            for label, rows in outcomes.items()}


def in_text(doc_id: str, hit, first_lines: dict[str, int]) -> tuple[str, int | None, int | None]:
    """The hit as (doc id, first line, last line), its file lines turned into lines of the document's text."""
    if doc_id not in first_lines or hit.start_line is None or hit.end_line is None:
        return doc_id, None, None
    shift = first_lines[doc_id] - 1
    return doc_id, hit.start_line - shift, hit.end_line - shift


def text_lines(paths: dict[str, str]) -> dict[str, int]:
    """doc id -> the file line of its text's first line, as the written memory holds it (after the frontmatter)."""
    from memory_search.directory.files import split_frontmatter

    return {doc_id: split_frontmatter(Path(path).read_text(encoding="utf-8"))[2] for path, doc_id in paths.items()}


class _RememberingEmbedder:
    """Embeds each query once, however many modes ask for it."""

    def __init__(self, embedder):
        self.embedder, self.spec, self.seen = embedder, embedder.spec, {}

    def embed_query(self, text):
        if text not in self.seen:
            self.seen[text] = self.embedder.embed_query(text)
        return self.seen[text]


LEGS = ("keyword", "semantic", "hybrid", "rerank")


def parse_mode(mode: str) -> dict:
    """The search request's settings for an eval mode, LEG[:no-time], e.g. hybrid:no-time."""
    leg, _, options = mode.partition(":")
    if leg not in LEGS:
        raise UsageError(f"unknown mode {mode!r}: use {', '.join(LEGS)}, optionally with :no-time")
    request = dict(top=100, mode="hybrid" if leg == "rerank" else leg, rerank=leg == "rerank",
                   snippets=False, min_score=0.0)  # the ranking as it is, with no score floor
    for option in filter(None, options.split("+")):
        if option == "no-time":
            request["time"] = False
        else:
            raise UsageError(f"unknown option {option!r} in mode {mode!r}: use no-time")
    return request


def compare_reports(report: "Report", pair: list[str], saved: dict | None = None) -> None:
    """Add to the report B against A for --compare A,B, and each mode against the same mode of a saved run."""
    if pair:
        base, other = pair
        report.comparisons.append(compare(base, report.per_query[base], other, report.per_query[other]))
    if saved:
        for mode, scores in report.per_query.items():
            if mode in saved["per_query"]:
                report.comparisons.append(compare(f"{mode} (saved)", saved["per_query"][mode], mode, scores))


@dataclass
class Report:
    dataset: str
    split: str
    queries: int
    documents: int
    index_seconds: float
    results: dict[str, dict[str, float]] = field(default_factory=dict)  # mode -> metrics
    query_ms: dict[str, float] = field(default_factory=dict)  # mode -> median latency
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)  # mode -> query id -> nDCG@10
    runs: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # mode -> query id -> first ten doc ids
    # mode -> the share of queries with graded qrels whose first hit has the top grade (graded sets only)
    best_first: dict[str, float] = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    # mode -> abstain (unanswerable questions with no hit at the threshold), keep, ece, bins (--abstain)
    abstention: dict[str, dict] = field(default_factory=dict)
    # mode -> category -> session, all-sessions and turn figures at 5 (conversation sets: metadata.evidence)
    conversation: dict[str, dict[str, dict]] = field(default_factory=dict)
    # mode -> label -> file@5, passage@5 and whole@5 (sets with answer lines: metadata.passages)
    passage: dict[str, dict[str, dict]] = field(default_factory=dict)
    # mode -> the share of its searches for ten whose shown scores are out of the list's order (must be 0)
    out_of_order: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict:
        """The report without the per-query scores, as eval.py --json prints it."""
        return {key: value for key, value in self.__dict__.items() if key not in ("per_query", "runs")} | {
            "comparisons": [comparison.__dict__ for comparison in self.comparisons]}


def evaluate(settings, folder: Path, split: str, modes: list[str], limit_queries: int | None = None,
             progress=None, keep_dir: Path | None = None, unanswerable: dict[str, str] | None = None,
             threshold: float = THRESHOLD, language: str | None = None, budget_at: int | None = None) -> Report:
    """Index the set as a memories directory, run every query in every mode, and score the runs.

    unanswerable: questions no document of the set answers; with them, each mode also reports the share of
    them left with no result at `threshold`, the share of answerable questions that keep their relevant
    document at `threshold`, and the calibration of the scores against the qrels. language: index only the
    documents in that language (metadata.language). budget_at: the keyword leg reads as many postings as in
    an index of that many chunks (see eval.py --budget-at)."""
    from memory_search.embedding import choose_spec, make_embedder, reranker
    from memory_search.indexing.indexer import Indexer
    from memory_search.search.filters import Filters
    from memory_search.search.layouts import layout_for
    from memory_search.search.retrieval import Searcher, SearchRequest, search_in_time
    from memory_search.storage.database import connect
    from memory_search.storage.schema import ManagedTables, find_index
    from memory_search.storage.writer import drop_schema

    dataset = load_dataset(folder, split, limit_queries, language=language)
    workdir = Path(tempfile.mkdtemp(prefix=f"memsearch-eval-{dataset.name}-")) if keep_dir is None else keep_dir
    root = workdir / "memories"
    try:
        paths = write_memories(dataset, root)
        evidence_docs = ({doc_id for pairs in dataset.evidence.values() for doc_id, _ in pairs}
                         | {doc_id for answers in dataset.passages.values() for doc_id, _, _ in answers})
        first_lines = text_lines({path: doc_id for path, doc_id in paths.items() if doc_id in evidence_docs})
        run_settings = settings.with_overrides(memories_dir=str(root))
        started = time.monotonic()
        Indexer(run_settings, progress=progress).run()
        report = Report(dataset.name, split, len(dataset.queries), len(dataset.corpus),
                        round(time.monotonic() - started, 1))
        with connect(run_settings, read_only=True) as conn:
            info = find_index(conn, run_settings.memories_root)
            embedder = _RememberingEmbedder(make_embedder(choose_spec(run_settings, info.spec), run_settings))
            rerank = reranker(run_settings) if settings.voyage_api_key else None
            layout = layout_for(info, run_settings.memories_root)
            if budget_at and layout.has_keyword_leg:
                layout.postings_budget = max(1, round(layout.postings_budget * layout.chunk_count / budget_at))
            searcher = Searcher(conn, layout, embedder, rerank)
            for mode in modes:
                request = parse_mode(mode) | {"filters": Filters()}
                runs, deep_runs, timings, judged, spans, shown = {}, {}, [], {}, {}, {}
                for query_id, text in dataset.queries.items():
                    asked = request | {"today": dataset.today.get(query_id)}
                    began = time.perf_counter()
                    hits = search_in_time(SearchRequest(query=text, **(asked | {"top": 10})), searcher.search)
                    timings.append(time.perf_counter() - began)
                    runs[query_id] = [paths[hit.path] for hit in hits]
                    shown[query_id] = [hit.score for hit in hits]
                    judged[query_id] = [(hit.score, dataset.qrels[query_id].get(paths[hit.path], 0)) for hit in hits]
                    if query_id in dataset.evidence or query_id in dataset.passages:
                        spans[query_id] = [in_text(paths[hit.path], hit, first_lines) for hit in hits]
                    # Reranking reorders only the first 30, so it cannot change R@100: not asked again.
                    deep = search_in_time(SearchRequest(query=text, **(asked | {"rerank": False})), searcher.search)
                    deep_runs[query_id] = [paths[hit.path] for hit in deep]
                report.results[mode] = score_run(runs, deep_runs, dataset)
                report.per_query[mode] = per_query_ndcg(runs, dataset)
                report.runs[mode] = runs
                if (first := best_first(runs, dataset)) is not None:
                    report.best_first[mode] = first
                report.out_of_order[mode] = out_of_order(shown)
                report.query_ms[mode] = round(sorted(timings)[len(timings) // 2] * 1000, 1)
                if spans and dataset.evidence:
                    report.conversation[mode] = conversation_figures(spans, dataset)
                if spans and dataset.passages:
                    report.passage[mode] = passage_figures(spans, dataset)
                if unanswerable is not None:
                    scores = {query_id: [hit.score for hit in searcher.search(
                        SearchRequest(query=text, **(request | {"top": 10, "rerank": False})))]
                        for query_id, text in unanswerable.items()}
                    keep, answerable = keeping(judged, threshold)
                    ece, bins = reliability(judged)
                    report.abstention[mode] = {"threshold": threshold, "unanswerable": len(scores),
                                               "abstain": abstention(scores, threshold), "answerable": answerable,
                                               "keep": keep, "ece": ece, "bins": bins}
        return report
    finally:
        with connect(settings.with_overrides(memories_dir=str(root)), read_only=False) as conn:
            tables = ManagedTables.of(Path(str(root)).absolute())
            if hasattr(tables, "on"):
                drop_schema(tables.on(conn))
            else:  # a library before ManagedIndex, measured by eval_all.py --against
                drop_schema(conn, tables)
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
