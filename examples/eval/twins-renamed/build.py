#!/usr/bin/env python3
"""Write the twins-renamed set in BEIR layout: bilingual-twins with its Japanese pages under Japanese file names.

    python3 build.py OUT_DIR

The pages and questions are those of ../bilingual-twins (read from there, not copied); names.tsv gives each
Japanese page its own file name (`wiki/ja/CIキャッシュ.md` for `ci-cache`), a translation or a romanisation
from which no rule on paths can pair it with its English twin (`wiki/en/ci-cache.md`). corpus.jsonl: every
page in both languages, `_id` LANG/SLUG (ids are never shown to the search), metadata.path, metadata.language
and metadata.frontmatter; queries.jsonl and qrels/ja.tsv, qrels/en.tsv as bilingual-twins writes them (the
page in the question's language graded 2, its twin 1). Standard library only; the output is a function of the
sources."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TWINS = HERE.parent / "bilingual-twins"


def twins_build():
    """bilingual-twins' build.py as a module: its page reader and its BEIR writer."""
    spec = importlib.util.spec_from_file_location("twins_build", TWINS / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(out: Path) -> None:
    twins = twins_build()
    with open(HERE / "names.tsv", encoding="utf-8") as handle:
        names = {row["page"]: row["ja_name"] for row in csv.DictReader(handle, delimiter="\t")}
    slugs = sorted(path.stem for path in (TWINS / "pages" / "en").glob("*.md"))
    if sorted(names) != slugs:
        raise SystemExit(f"names.tsv must name every page of {TWINS / 'pages'}: "
                         f"missing {sorted(set(slugs) - set(names))}, unknown {sorted(set(names) - set(slugs))}")
    clashes = [slug for slug, name in names.items() if name.lower() == slug or "/" in name]
    if clashes or len(set(names.values())) != len(names):
        raise SystemExit(f"names.tsv: a Japanese name must be unique, differ from its slug and hold no '/': {clashes}")
    out.mkdir(parents=True, exist_ok=True)
    twins.main(out)  # the twins' questions and qrels, and their corpus, rewritten below with the new names
    documents = []
    with open(out / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            document = json.loads(line)
            language, slug = document["_id"].split("/", 1)
            if language == "ja":
                document["metadata"]["path"] = f"wiki/ja/{names[slug]}.md"
            documents.append(document)
    (out / "corpus.jsonl").write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in documents),
                                      encoding="utf-8")
    print(f"twins-renamed: the Japanese pages under their names of names.tsv -> {out}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: build.py OUT_DIR (the set is built from ../bilingual-twins at run time)")
    main(Path(sys.argv[1]))
