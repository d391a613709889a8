#!/usr/bin/env python3
"""Write the ja-conversations set in BEIR layout from its sources (sessions/*.md, questions.tsv, unanswerable.tsv).

    python3 build.py [OUT_DIR]      (default: this folder)

corpus.jsonl: one document per session, as a session summary of the memories layout (metadata.path under
raw/session/<date>/, metadata.frontmatter with started_at), the text exactly as in sessions/. queries.jsonl: the
questions with metadata.today (the day after the last session), metadata.category (1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop), metadata.answer and metadata.evidence, [session id, line] pairs, the 1-based line
of the document's text of each turn that holds the answer, found from the unique piece of that turn that
questions.tsv names (SESSION:piece). qrels/dev.tsv: each question's evidence sessions. unanswerable.jsonl:
questions nothing in the conversation answers (category 5). Standard library only."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONVERSATION = "haruka-daisuke"
CLOCKS = ["213000", "202000", "221500", "143000", "205000", "110000", "214500", "203000", "201500", "190000"]


def main(out: Path) -> None:
    sessions = sorted((HERE / "sessions").glob("s*.md"))
    documents, texts, dates = [], {}, {}
    for number, path in enumerate(sessions, start=1):
        text = path.read_text(encoding="utf-8").rstrip("\n")
        match = re.match(r"# (.+?), (\d{4})年(\d{1,2})月(\d{1,2})日\n\n", text)
        if not match:
            raise SystemExit(f"{path}: the first line must be '# A and B, YYYY年M月D日' and a blank line")
        day = dt.date(int(match.group(2)), int(match.group(3)), int(match.group(4)))
        doc_id = f"{CONVERSATION}-{path.stem}"
        clock = CLOCKS[(number - 1) % len(CLOCKS)]
        started = dt.datetime.combine(day, dt.time(int(clock[:2]), int(clock[2:4])))
        documents.append({"_id": doc_id, "title": f"{match.group(1)}: 会話 {number}", "text": text,
                          "metadata": {"path": f"raw/session/{day}/{clock}_{CONVERSATION}_{number:02d}.md",
                                       "frontmatter": {"kind": "session", "title": f"{match.group(1)}: 会話 {number}",
                                                       "status": "active", "project": CONVERSATION,
                                                       "started_at": started.isoformat()}}})
        texts[path.stem], dates[path.stem] = text.split("\n"), day
    today = (max(dates.values()) + dt.timedelta(days=1)).isoformat()

    def line_of(session: str, piece: str) -> int:
        found = [number for number, line in enumerate(texts[session], start=1) if piece in line]
        if len(found) != 1:
            raise SystemExit(f"questions.tsv: {session}:{piece} is in {len(found)} lines, not one")
        return found[0]

    queries, qrels = [], []
    with open(HERE / "questions.tsv", encoding="utf-8") as handle:
        for number, row in enumerate(csv.DictReader(handle, delimiter="\t"), start=1):
            evidence = []
            for pair in row["evidence"].split(";"):
                session, _, piece = pair.partition(":")
                evidence.append([f"{CONVERSATION}-{session}", line_of(session, piece)])
            query_id = f"{CONVERSATION}-q{number:03d}"
            queries.append({"_id": query_id, "text": row["question"], "metadata": {
                "today": today, "category": int(row["category"]), "conversation": CONVERSATION,
                "evidence": evidence, "answer": row["answer"]}})
            qrels += [(query_id, doc_id) for doc_id in dict.fromkeys(doc_id for doc_id, _ in evidence)]
    with open(HERE / "unanswerable.tsv", encoding="utf-8") as handle:
        unanswerable = [{"_id": f"{CONVERSATION}-u{number:03d}", "text": row["question"],
                         "metadata": {"today": today, "category": 5, "conversation": CONVERSATION}}
                        for number, row in enumerate(csv.DictReader(handle, delimiter="\t"), start=1)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    for name, items in (("corpus.jsonl", documents), ("queries.jsonl", queries),
                        ("unanswerable.jsonl", unanswerable)):
        (out / name).write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items),
                                encoding="utf-8")
    (out / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{query_id}\t{doc_id}\t1\n" for query_id, doc_id in qrels), encoding="utf-8")
    print(f"{len(documents)} sessions, {len(queries)} questions, {len(unanswerable)} unanswerable -> {out}",
          file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
