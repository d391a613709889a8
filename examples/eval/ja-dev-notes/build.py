#!/usr/bin/env python3
"""Write the ja-dev-notes set in BEIR layout: Japanese developer notes with code, and questions with answer lines.

    build.py OUT_DIR [--articles DIR]

The corpus is our own notes (notes/: session summaries and wiki runbooks in the memories layout) and the 80
articles of tech-notes-dev (DIR, default ../shared/eval/tech-notes-dev beside the repository), read from DIR at
run time and never stored here. Exits with code 3 and one line on stderr when DIR is absent.

questions.tsv: source (notes or articles), path (relative to this folder for notes, to DIR for articles), lines
(START-END, the 1-based lines of that file that hold the answer), language (ja, en), kind (paraphrase: not the
note's words; identifier: with a command, identifier or error message), question. unanswerable.tsv: language,
question (nothing in the corpus answers them).

Writes corpus.jsonl (`_id` notes/... or articles/memories/...: the path of questions.tsv with its source;
metadata.path: the file's place in a memories directory; metadata.frontmatter; metadata.source); queries.jsonl
(`_id` LANG-NNN; metadata.language, category = the kind, groups = [source, the answering file's kind: session,
wiki or web], path, lines, and passages = [[doc id, first, last]] in lines of the document's text, the body after
its frontmatter); qrels/ja.tsv, qrels/en.tsv and qrels/test.tsv (both); unanswerable.jsonl and
unanswerable-ja.jsonl, unanswerable-en.jsonl. Each answer range is checked: inside the file's body and not blank.
The output is a function of the sources."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_ARTICLES = HERE.parents[2].parent / "shared" / "eval" / "tech-notes-dev"
LANGUAGES = ("ja", "en")
KINDS = ("paraphrase", "identifier")
ABSENT = 3  # exit code: the articles' folder is not there
FRONTMATTER = re.compile(r"---\n(.*?)\n---\n", re.S)


def plain(value):
    """Frontmatter values as JSON can hold them (YAML reads dates and times as objects)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def read_memory(path: Path) -> tuple[dict, str, int]:
    """(frontmatter, body, how many file lines precede the body)."""
    text = path.read_text(encoding="utf-8")
    match = FRONTMATTER.match(text)
    if not match:
        raise SystemExit(f"{path}: no frontmatter")
    return plain(yaml.safe_load(match.group(1)) or {}), text[match.end():], text.count("\n", 0, match.end())


def document(doc_id: str, place: str, source: str, path: Path) -> tuple[dict, int]:
    head, body, offset = read_memory(path)
    title = str(head.pop("title", "") or "")
    return {"_id": doc_id, "title": title, "text": body,
            "metadata": {"path": place, "source": source, "frontmatter": head}}, offset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the set")
    parser.add_argument("--articles", type=Path, default=DEFAULT_ARTICLES,
                        help=f"the tech-notes-dev folder (default {DEFAULT_ARTICLES})")
    args = parser.parse_args(argv)
    articles = args.articles
    if not (articles / "memories").is_dir():
        print(f"ja-dev-notes: skipped: {articles}/memories not found (the set reads the tech-notes-dev articles "
              f"from there at run time; give --articles DIR)", file=sys.stderr)
        return ABSENT

    documents: dict[str, dict] = {}
    offsets: dict[str, int] = {}
    for path in sorted((HERE / "notes").rglob("*.md")):
        place = path.relative_to(HERE / "notes").as_posix()
        doc_id = f"notes/{place}"
        documents[doc_id], offsets[doc_id] = document(doc_id, place, "notes", path)
    for path in sorted((articles / "memories").rglob("*.md")):
        place = path.relative_to(articles / "memories").as_posix()
        doc_id = f"articles/memories/{place}"
        documents[doc_id], offsets[doc_id] = document(doc_id, place, "articles", path)

    with open(HERE / "questions.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    queries, qrels = [], {language: [] for language in LANGUAGES}
    numbers = dict.fromkeys(LANGUAGES, 0)
    for number, row in enumerate(rows, 2):
        where = f"questions.tsv line {number}"
        doc_id = row["path"] if row["source"] == "notes" else f"articles/{row['path']}"
        if doc_id not in documents:
            raise SystemExit(f"{where}: no document {doc_id}")
        if row["language"] not in LANGUAGES or row["kind"] not in KINDS:
            raise SystemExit(f"{where}: language must be one of {LANGUAGES} and kind one of {KINDS}")
        first, _, last = row["lines"].partition("-")
        start, end = int(first), int(last or first)
        offset, body = offsets[doc_id], documents[doc_id]["text"].split("\n")
        if not offset < start <= end <= offset + len(body) or not any(
                line.strip() for line in body[start - offset - 1:end - offset]):
            raise SystemExit(f"{where}: lines {start}-{end} are not in the body of {doc_id} "
                             f"(lines {offset + 1}-{offset + len(body)})")
        language = row["language"]
        numbers[language] += 1
        query_id = f"{language}-{numbers[language]:03d}"
        kind_of_file = documents[doc_id]["metadata"]["frontmatter"].get("kind", "wiki")
        queries.append({"_id": query_id, "text": row["question"],
                        "metadata": {"language": language, "category": row["kind"],
                                     "groups": [row["source"], kind_of_file], "path": row["path"],
                                     "lines": [start, end],
                                     "passages": [[doc_id, start - offset, end - offset]]}})
        qrels[language].append((query_id, doc_id, 1))
    with open(HERE / "unanswerable.tsv", encoding="utf-8") as handle:
        unanswerable = {language: [] for language in LANGUAGES}
        for row in csv.DictReader(handle, delimiter="\t"):
            items = unanswerable[row["language"]]
            items.append({"_id": f"{row['language']}-u{len(items) + 1:03d}", "text": row["question"],
                          "metadata": {"language": row["language"]}})

    out = args.out
    (out / "qrels").mkdir(parents=True, exist_ok=True)

    def lines_of(items: list[dict]) -> str:
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)

    (out / "corpus.jsonl").write_text(lines_of(list(documents.values())), encoding="utf-8")
    (out / "queries.jsonl").write_text(lines_of(queries), encoding="utf-8")
    (out / "unanswerable.jsonl").write_text(lines_of(unanswerable["ja"] + unanswerable["en"]), encoding="utf-8")
    for language in LANGUAGES:
        (out / f"unanswerable-{language}.jsonl").write_text(lines_of(unanswerable[language]), encoding="utf-8")
    for name, pairs in (("ja", qrels["ja"]), ("en", qrels["en"]), ("test", qrels["ja"] + qrels["en"])):
        (out / "qrels" / f"{name}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in pairs), encoding="utf-8")
    print(f"ja-dev-notes: {len(documents)} documents, {numbers['ja']} Japanese and {numbers['en']} English "
          f"questions, {len(unanswerable['ja'])} + {len(unanswerable['en'])} unanswerable -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
