#!/usr/bin/env python3
"""Build the development sets for abstention: questions that no document of a collection answers.

    abstention_sets.py OUT [--eval ../shared/eval] [--notes /tmp/memory-search-package-notes/set]

writes, under OUT:

- memories-questions/: examples/memories as a BEIR set (corpus.jsonl: one document per indexed memory,
  its id the path relative to the directory), with the hand-written questions of
  examples/eval/memories-questions (queries.jsonl, qrels/test.tsv) and its unanswerable.jsonl.
- unanswerable/<set>.jsonl for every collection found: questions of other domains or languages asked of it
  (a sample of at most --per-source from each source, fixed seed), with the hand-written unanswerable
  questions for examples/memories. Pairs of the same domain are never made: Japanese Wikipedia questions are
  not asked of the other Japanese Wikipedia set, nor developer-notes questions of developer notes.

Nothing public is copied into the repository: the sets are written to OUT at evaluation time. Development
tooling, not installed."""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(1, str(ROOT / "src"))

SEED = 20261201
MEMORIES = ROOT / "examples" / "memories"
QUESTIONS = ROOT / "examples" / "eval" / "memories-questions"
CROSS_LINGUAL = ("ja-questions-en-notes", "en-questions-ja-notes")

# The domain of each set's collection and of its questions; a question is asked of a collection of another
# domain only. notes: developer notes (ours, the cross-lingual sets); npm: package READMEs.
DOMAINS = {"scifact-train": "science", "jsquad-dev": "ja-wikipedia", "jaquad-train": "ja-wikipedia",
           "package-notes": "npm", "ja-questions-en-notes": "notes", "en-questions-ja-notes": "notes",
           "memories-questions": "notes"}
# Developer-notes questions are not asked of npm READMEs either: textlint's Japanese writing rules and
# stylelint's are close enough to questions about commit messages and tokenizers to answer some of them.
CLOSE = {("notes", "npm")}


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(path: Path, items) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")


def memories_set(out: Path) -> Path:
    """examples/memories with the hand-written questions, in BEIR layout."""
    from memory_search.directory.files import discover, read_memory

    folder = out / "memories-questions"
    documents = []
    for memory_file in sorted(discover(MEMORIES)[0], key=lambda found: found.path):
        memory, _ = read_memory(memory_file)
        relative = memory_file.relpath
        documents.append({"_id": relative, "title": memory.record.title or "", "text": memory.body})
    write_jsonl(folder / "corpus.jsonl", documents)
    write_jsonl(folder / "queries.jsonl", read_jsonl(QUESTIONS / "queries.jsonl"))
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text((QUESTIONS / "qrels" / "test.tsv").read_text(encoding="utf-8"),
                                              encoding="utf-8")
    write_jsonl(folder / "unanswerable.jsonl", read_jsonl(QUESTIONS / "unanswerable.jsonl"))
    return folder


def answerable_queries(folder: Path) -> list[dict]:
    """The set's queries that have a relevant document in some split."""
    judged = set()
    for qrels in (folder / "qrels").glob("*.tsv"):
        for line in qrels.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].strip() not in ("", "0"):
                judged.add(parts[0])
    return [query for query in read_jsonl(folder / "queries.jsonl") if str(query["_id"]) in judged]


def build(out: Path, eval_dir: Path | None, notes: Path | None, per_source: int) -> dict[str, Path]:
    sets: dict[str, Path] = {"memories-questions": memories_set(out)}
    for name in CROSS_LINGUAL:
        sets[name] = ROOT / "examples" / "eval" / name
    if eval_dir is not None:
        for name in ("scifact-train", "jsquad-dev", "jaquad-train"):
            if (eval_dir / name / "corpus.jsonl").is_file():
                sets[name] = eval_dir / name
    if notes is not None and (notes / "corpus.jsonl").is_file():
        sets["package-notes"] = notes
    sources = {name: answerable_queries(folder) for name, folder in sets.items()}
    written = {}
    for target in sets:
        chosen = []
        if target == "memories-questions":
            chosen += [dict(query, source="hand-written") for query in read_jsonl(QUESTIONS / "unanswerable.jsonl")]
        for source, queries in sources.items():
            pair = (DOMAINS[source], DOMAINS[target])
            if DOMAINS[source] == DOMAINS[target] or pair in CLOSE or pair[::-1] in CLOSE:
                continue
            sample = queries if len(queries) <= per_source else random.Random(f"{SEED}:{source}:{target}").sample(
                queries, per_source)
            chosen += [{"_id": f"{source}:{query['_id']}", "text": query["text"], "source": source}
                       for query in sample]
        written[target] = out / "unanswerable" / f"{target}.jsonl"
        write_jsonl(written[target], chosen)
    (out / "sets.json").write_text(json.dumps({name: str(folder) for name, folder in sets.items()}, indent=1) + "\n",
                                   encoding="utf-8")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder to write the sets to")
    parser.add_argument("--eval", dest="eval_dir", type=Path, default=ROOT.parent / "shared" / "eval",
                        help="the public sets (scifact-train, jsquad-dev, jaquad-train), if present")
    parser.add_argument("--notes", type=Path, default=Path("/tmp/memory-search-package-notes/set"),
                        help="the package-notes set `make eval-notes` builds, if present")
    parser.add_argument("--per-source", type=int, default=150,
                        help="questions sampled from each other set per collection (default 150)")
    args = parser.parse_args()
    for target, path in build(args.out, args.eval_dir, args.notes, args.per_source).items():
        print(f"{target}: {len(read_jsonl(path))} unanswerable questions in {path}")


if __name__ == "__main__":
    main()
