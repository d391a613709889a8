#!/usr/bin/env python3
"""Build the package-notes evaluation set from the READMEs of installed npm packages.

Each package with a README.md and a one-line description (package.json) under a permissive
licence becomes a note: title = the package name, body = the README with its description taken
out. The description is the query, so queries share no sentence with the indexed text. Queries
in Japanese and in English are split apart (qrels/ja.tsv, qrels/en.tsv) over one mixed corpus.

    cp package.json package-lock.json /tmp/package-notes-src/ && (cd /tmp/package-notes-src && npm ci)
    build.py /tmp/package-notes-src/node_modules /tmp/package-notes
    scripts/eval.py /tmp/package-notes --split ja
"""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from pathlib import Path

PERMISSIVE = {"MIT", "MIT-0", "ISC", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "CC0-1.0", "BlueOak-1.0.0"}
MAX_README_CHARS = 2000  # short notes, and a set quick to embed on a laptop (about 700 chunks)
MIN_README_CHARS = 300  # less is a stub with nothing left once the description is out
_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_SPACE = re.compile(r"\s+")


def fold(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def without_description(readme: str, description: str) -> str:
    """The README less every line that holds the description."""
    target = fold(description).rstrip(".。")
    return "\n".join(line for line in readme.split("\n") if target not in fold(line))


def packages(node_modules: Path):
    for package_json in sorted(node_modules.glob("*/package.json")) + sorted(node_modules.glob("@*/*/package.json")):
        folder = package_json.parent
        readme = next((path for path in sorted(folder.iterdir()) if path.name.lower() == "readme.md"), None)
        meta = json.loads(package_json.read_text(encoding="utf-8"))
        description = str(meta.get("description") or "").strip()
        if readme is None or not description or meta.get("license") not in PERMISSIVE:
            continue
        text = readme.read_text(encoding="utf-8", errors="replace")
        if MIN_README_CHARS <= len(text) <= MAX_README_CHARS:
            yield meta["name"], meta["version"], meta["license"], description, text


def build(node_modules: Path, out: Path) -> dict[str, int]:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels, licences = [], [], {"ja": [], "en": []}, []
    for number, (name, version, licence, description, readme) in enumerate(packages(node_modules)):
        body = without_description(readme, description)
        if fold(description).rstrip(".。") in fold(body) or len(body.strip()) < MIN_README_CHARS // 2:
            continue
        doc_id, query_id = f"n{number}", f"q{number}"
        corpus.append({"_id": doc_id, "title": name, "text": body})
        queries.append({"_id": query_id, "text": description})
        qrels["ja" if _JAPANESE.search(description) else "en"].append((query_id, doc_id))
        licences.append((name, version, licence))
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(doc, ensure_ascii=False) + "\n" for doc in corpus)
    with open(out / "queries.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(query, ensure_ascii=False) + "\n" for query in queries)
    for split, pairs in qrels.items():
        with open(out / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as handle:
            handle.write("query-id\tcorpus-id\tscore\n")
            handle.writelines(f"{query_id}\t{doc_id}\t1\n" for query_id, doc_id in pairs)
    with open(out / "LICENCES.tsv", "w", encoding="utf-8") as handle:
        handle.write("package\tversion\tlicence\n")
        handle.writelines(f"{name}\t{version}\t{licence}\n" for name, version, licence in licences)
    return {"notes": len(corpus), "ja": len(qrels["ja"]), "en": len(qrels["en"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("node_modules", type=Path, help="the node_modules folder npm ci made")
    parser.add_argument("out", type=Path, help="where to write the BEIR-layout set")
    args = parser.parse_args()
    if not args.node_modules.is_dir():
        parser.error(f"{args.node_modules} is not a folder: run npm ci first (see --help)")
    print(json.dumps(build(args.node_modules, args.out)))


if __name__ == "__main__":
    main()
