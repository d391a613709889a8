#!/usr/bin/env python3
"""Measure retrieval quality on a BEIR-layout set: see `eval.py --help`. Development tooling, not installed."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.join(ROOT, "src"))
sys.path.insert(1, os.path.join(ROOT, "tools"))  # reports.py
from memory_search.faces.environment import ensure  # noqa: E402

ensure()

import click  # noqa: E402

from memory_search.config import Settings  # noqa: E402
from memory_search.errors import UsageError  # noqa: E402
from memory_search.faces.console import command, run  # noqa: E402

# --- eval ----------------------------------------------------------------------------------------

EVAL_EXAMPLES = """\
  eval.py ../shared/eval/jsquad-dev --split dev --limit-queries 500
  eval.py ../shared/eval/scifact-train --split train --json
  eval.py DATASET --split test --modes keyword,semantic,hybrid
  time_questions.py /tmp/time-set && eval.py /tmp/time-set --split test --modes hybrid,hybrid:no-time
  eval.py DATASET --split test --compare semantic,hybrid
  eval.py DATASET --split test --save before.json     # then, after a tokenizer change:
  eval.py DATASET --split test --against before.json
  eval.py examples/eval/ja-questions-en-notes --split test --abstain unanswerable.jsonl
  eval.py examples/eval/bilingual-twins --split ja --language en   # Japanese questions, English pages only
  examples/eval/ja-dev-notes/build.py /tmp/ja-dev-notes && eval.py /tmp/ja-dev-notes --split ja \
      --abstain /tmp/ja-dev-notes/unanswerable-ja.jsonl                # passage@5 from answer lines
  eval.py ../shared/eval/locomo-dev --split dev --abstain ../shared/eval/locomo-dev/unanswerable.jsonl
  eval.py ../shared/eval/scifact-train --split train --budget-at 1000000   # keyword search as at a million chunks
  (tools/eval/abstention_sets.py OUT writes unanswerable questions for every set: OUT/unanswerable/SET.jsonl)"""


@command(EVAL_EXAMPLES)
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--split", required=True, help="the qrels file to score against: qrels/SPLIT.tsv")
@click.option("--modes", default=None, help="comma-separated: keyword, semantic, hybrid, rerank, each optionally "
                                             "with :no-time (time words are not read) (default: "
                                             "keyword,semantic,hybrid, and rerank with a Voyage key)")
@click.option("--compare", metavar="A,B", help="also run modes A and B and count the queries B wins and loses "
                                               "against A (nDCG@10)")
@click.option("--save", "save_path", type=click.Path(dir_okay=False), help="write the report with every query's "
                                                                            "nDCG@10 and first ten documents to FILE "
                                                                            "(JSON)")
@click.option("--against", "against_path", type=click.Path(exists=True, dir_okay=False),
              help="compare each mode with the same mode in a report saved by --save (another build or version)")
@click.option("--language", metavar="LANG", help="index only the documents whose metadata.language is LANG (one "
                                                 "language of a bilingual set); queries with no relevant document "
                                                 "left are skipped")
@click.option("--limit-queries", type=click.IntRange(min=1), help="score a sample of N queries (fixed seed)")
@click.option("--abstain", "abstain_path", type=click.Path(exists=True),
              help="questions that no document of DATASET answers (JSON Lines of {_id, text}, or a BEIR folder): "
                   "also report, per mode, the share of them left with no result at --threshold, the share of "
                   "answerable queries that keep a relevant document, and the scores' calibration")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="the --min-score the abstention figures are measured at")
@click.option("--budget-at", type=click.IntRange(min=1), metavar="CHUNKS",
              help="search keywords as in an index of CHUNKS chunks: the keyword leg's postings budget "
                   "(layouts.POSTINGS_BUDGET) scaled by this set's chunks / CHUNKS, so that it leaves out the share "
                   "of a query's commoner terms it would leave out there (a term's chunks taken to grow with the "
                   "index)")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def eval_command(dataset, split, modes, compare, save_path, against_path, language, limit_queries, abstain_path,
                 threshold, budget_at, as_json):
    """Measure retrieval quality on a BEIR-layout set (corpus.jsonl, queries.jsonl, qrels/).

    Writes the documents as a memories directory in a temporary folder (each at its
    metadata.path with its metadata.frontmatter when the set gives them, else under wiki/),
    indexes it with the real indexer (the embedding cache makes re-runs cheap), runs every
    query through the same search code as search.py, time words included (a query's
    metadata.today is the date they count from), and prints nDCG@10, Recall@10, Recall@100, MRR@10 and the median
    query time per mode; with --compare or --against, each configuration's gain over the other
    with its per-query wins, losses and ties. The @10 figures and the time are those of a search
    for ten results, as search.py makes by default, with no score floor; Recall@100, of a search
    for 100.

    A set with graded qrels (a bilingual set grades the page in the question's language 2 and its
    twin in the other language 1) also gets "best first": the share of those queries whose first
    hit has their top grade.

    A set whose queries give metadata.evidence ([doc id, line] pairs: the turns of a conversation that
    hold the answer, lines of the document's text, as locomo-dev does) also gets, per mode and per
    metadata.category: session@5, the share of questions with an evidence document among the first
    five hits; all sessions@5, of the questions whose evidence lies in two or more documents, the
    share with every one among the first five; turn@5, the share with a first-five hit whose line
    range holds an evidence line of its document. They are read from the search for ten.

    A set whose queries give metadata.passages ([doc id, first line, last line]: the lines of the
    document's text that hold the answer, as ja-dev-notes does) also gets, per mode, for all questions,
    per metadata.category and per label of metadata.groups: file@5, the share with the answering
    document among the first five hits; passage@5, the share with a first-five hit whose shown lines
    overlap the answer's; whole@5, the share with one whose lines hold all of them.

    With --abstain, per mode: "abstain", the share of the unanswerable questions whose search for ten
    leaves nothing at --min-score THRESHOLD; "keep", of the answerable queries whose unthresholded
    first ten hold a relevant document, the share that still hold one at THRESHOLD; "ECE", the
    expected calibration error of every shown hit's score against the qrels (10 bins), with the bins."""
    import json
    from pathlib import Path

    from eval_lib import compare_reports, evaluate, parse_mode
    from reports import eval_text

    from memory_search.faces.progress import Progress
    from memory_search.render import as_json as to_json

    settings = Settings.from_env()
    chosen = modes.split(",") if modes else ["keyword", "semantic", "hybrid"] + (
        ["rerank"] if settings.voyage_api_key else [])
    pair = compare.split(",") if compare else []
    if compare and len(pair) != 2:
        raise UsageError(f"--compare takes two modes, A,B: got {compare!r}")
    chosen += [mode for mode in pair if mode not in chosen]
    for mode in chosen:
        parse_mode(mode)
    saved = None
    if against_path:
        try:
            saved = json.loads(Path(against_path).read_text(encoding="utf-8"))
            saved["per_query"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise UsageError(f"cannot read {against_path} as a report saved by --save ({error})") from None
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still drop the temporary index
    unanswerable = None
    if abstain_path:
        from eval_lib import read_queries

        unanswerable = read_queries(Path(abstain_path))
    report = evaluate(settings, Path(dataset), split, chosen, limit_queries, progress=Progress(),
                      unanswerable=unanswerable, threshold=threshold, language=language, budget_at=budget_at)
    compare_reports(report, pair, saved)
    if save_path:
        Path(save_path).write_text(to_json(report.summary() | {"per_query": report.per_query,
                                                              "runs": report.runs}) + "\n",
                                   encoding="utf-8")
    click.echo(to_json(report.summary()) if as_json else eval_text(report))


if __name__ == "__main__":
    run(eval_command, "eval.py")
