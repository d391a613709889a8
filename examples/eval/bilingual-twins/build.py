#!/usr/bin/env python3
"""Write the bilingual-twins set in BEIR layout from its sources (pages/en, pages/ja, questions.tsv).

    python3 build.py [OUT_DIR]      (default: this folder)

corpus.jsonl: every page in both languages, `_id` LANG/SLUG, with metadata.path wiki/LANG/SLUG.md,
metadata.frontmatter (kind, tags) and metadata.language. queries.jsonl: the questions, `_id` LANG-NNN, with
metadata.language and metadata.page. qrels/ja.tsv and qrels/en.tsv: the questions in that language; the page in
the question's language is graded 2, its twin in the other language 1. Standard library only; the output is a
function of the sources."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGUAGES = ("en", "ja")


def read_page(path: Path) -> tuple[dict, str]:
    """A page's frontmatter (title, tags: the only keys the sources use) and its body."""
    match = re.match(r"---\n(.*?)\n---\n", path.read_text(encoding="utf-8"), re.S)
    if not match:
        raise SystemExit(f"{path}: no frontmatter")
    head = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        value = value.strip()
        if value.startswith("["):
            head[key] = [item.strip() for item in value.strip("[]").split(",") if item.strip()]
        else:
            head[key] = value[1:-1] if value.startswith('"') and value.endswith('"') else value
    return head, path.read_text(encoding="utf-8")[match.end():].lstrip("\n")


def main(out: Path) -> None:
    slugs = sorted(path.stem for path in (HERE / "pages" / "en").glob("*.md"))
    missing = [slug for slug in slugs if not (HERE / "pages" / "ja" / f"{slug}.md").is_file()]
    if missing or len(list((HERE / "pages" / "ja").glob("*.md"))) != len(slugs):
        raise SystemExit(f"every page needs both languages: {missing}")
    documents = []
    for language in LANGUAGES:
        for slug in slugs:
            head, body = read_page(HERE / "pages" / language / f"{slug}.md")
            documents.append({"_id": f"{language}/{slug}", "title": head["title"], "text": body,
                              "metadata": {"path": f"wiki/{language}/{slug}.md", "language": language,
                                           "frontmatter": {"kind": "wiki", "tags": head.get("tags", [])}}})
    with open(HERE / "questions.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    queries, qrels = [], {language: [] for language in LANGUAGES}
    numbers = dict.fromkeys(LANGUAGES, 0)
    for row in rows:
        language, slug = row["language"], row["page"]
        if slug not in slugs or language not in LANGUAGES:
            raise SystemExit(f"questions.tsv: unknown page or language in {row}")
        numbers[language] += 1
        query_id = f"{language}-{numbers[language]:03d}"
        queries.append({"_id": query_id, "text": row["question"], "metadata": {"language": language, "page": slug}})
        other = "ja" if language == "en" else "en"
        qrels[language] += [(query_id, f"{language}/{slug}", 2), (query_id, f"{other}/{slug}", 1)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    for name, items in (("corpus.jsonl", documents), ("queries.jsonl", queries)):
        (out / name).write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items),
                                encoding="utf-8")
    for language, pairs in qrels.items():
        (out / "qrels" / f"{language}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in pairs), encoding="utf-8")
    print(f"{len(documents)} pages ({len(slugs)} in each language), {numbers['ja']} Japanese and "
          f"{numbers['en']} English questions -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
