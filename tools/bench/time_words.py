#!/usr/bin/env python3
"""Measure what reading time words costs: see `time_words.py --help`. Development tooling, not installed."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")
TODAY = (2026, 12, 1)

# Queries a search sees first in a process: none names a time, several hold what time words are made of.
FIRST_QUERIES = {
    "en, no time word": "how do we tune the HNSW index",
    "ja, no time word": "セッション要約の保存先",
    "ja, 日 and 月 but no time word": "日本語の月次レポートの書き方",
    "en, a day word but no time word": "holiday schedule for the on-call rotation",
    "en, 'may' the verb": "this may help with the deploy",
    "ja, a time word": "先週のリリース手順の打ち合わせで何を決めた?",
    "en, a time word": "what did we decide last week about the schema",
}


def _to_length(piece: str, length: int = 2_000) -> str:
    return (piece * (length // len(piece) + 1))[:length]


def _ending_with(piece: str, ending: str, length: int = 2_000) -> str:
    return _to_length(piece, length - len(ending)) + ending


# 2,000-character queries (the most a search accepts), in both scripts: prose with a time word or two, and
# text made of nothing but date-like words, which is the worst case for the parser.
PARSE_QUERIES = {
    "en prose, no time word": _to_length("how do we tune the HNSW index for the nightly rebuild of the catalog "),
    "ja prose, no time word": _to_length("セッション要約の保存先とインデックスの再構築の手順を確認する。"),
    "en prose, one time word": "last week " + _to_length("we decided to tune the HNSW index for the nightly job ",
                                                         1_990),
    "ja prose, one time word": "先週の" + _to_length("日本語の検索で月次の報告を作る手順を確認した。", 1_997),
    "en prose ending in many time words": _ending_with(
        "we tuned the HNSW index and the nightly rebuild of the catalog, then checked the recall of the hybrid "
        "search against the evaluation set before the release; ",
        " since last Monday, Nov 20 to Dec 3, 3 days ago, yesterday and today, between May 5 and 7, in 2025, "
        "last week's Friday, the 20th of March 2026, 2026-11-20, 11/20"),
    "ja prose ending in many time words": _ending_with(
        "日本語の検索で月次の報告を作る手順とインデックスの再構築を確認した。",
        "先週の月曜から11月20日まで、2026年3月10日以降、3日前と昨日、今月の5日、去年の11月、先々週、一昨日、2週間前"),
    "en, dates only": _to_length("since last Monday, Nov 20 to Dec 3, 3 days ago, the 20th of May 2026; "),
    "ja, dates only": _to_length("先週の月曜から11月20日まで、2026年3月10日以降、3日前と昨日の"),
    "mixed prose ending in 60 date-like words": _ending_with(
        "we tuned the HNSW index and the nightly rebuild of the catalog; ",
        "laſt week 先週 2026-11-20 thıs Monday Auguſt 3 １１月２０日 11/20 " * 6),
    "mixed, dates and odd letters": _to_length("laſt week 先週 2026-11-20 thıs Monday Auguſt 3 １１月２０日 11/20 "),
    "digits only": "1" * 2_000,
    "spaces after a number": "1" + " " * 1_998 + "x",
}

FIRST_CODE = """
import datetime, sys, time
from memory_search.search.timewords import find_time
query = sys.argv[1]
started, started_cpu = time.perf_counter(), time.process_time()
find_time(query, datetime.date(*%r))
print((time.perf_counter() - started) * 1000, (time.process_time() - started_cpu) * 1000)
""" % (TODAY,)


def first_call_ms(query: str, runs: int, python: str) -> tuple[list[float], list[float]]:
    """The first find_time of a fresh process (after the import), in ms of wall and of CPU time, once per
    process."""
    env = dict(os.environ, PYTHONPATH=SRC, PYTHONDONTWRITEBYTECODE="1")
    wall, cpu = [], []
    for _ in range(runs):
        output = subprocess.run([python, "-c", FIRST_CODE, query], env=env, check=True, capture_output=True,
                                text=True).stdout.split()
        wall.append(float(output[0]))
        cpu.append(float(output[1]))
    return wall, cpu


def parse_ms(query: str, runs: int) -> tuple[list[float], list[float]]:
    """One find_time of a warm process (patterns compiled by a first call), in ms of wall and of CPU time,
    `runs` times each."""
    import datetime

    from memory_search.search.timewords import find_time

    today = datetime.date(*TODAY)
    find_time(query, today)  # raises on a parser that cannot read the query: reported as such
    wall, cpu = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        find_time(query, today)
        cpu.append((time.process_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="time_words.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure the time-word parser (src/memory_search/search/timewords.py): the first find_time of a "
                    "fresh process, for queries with and without time words (median over fresh processes), and "
                    "one find_time of a 2,000-character query in a warm process (median of --runs calls, wall "
                    "and CPU time), Japanese, English and mixed, prose and date-only text. Times are "
                    "milliseconds; on a busy machine the CPU time is the steadier figure.",
        epilog="examples:\n"
               "  time_words.py\n"
               "  time_words.py --runs 20 --json\n"
               "  time_words.py --skip first\n\n"
               "exit codes: 0 measured, 2 bad arguments")
    parser.add_argument("--runs", type=int, default=10, help="processes per first-call figure and calls per parse "
                                                              "figure (default 10)")
    parser.add_argument("--skip", choices=("first", "parse"), action="append", default=[],
                        help="leave a part out (repeatable)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the fresh processes "
                                                                 "(default: this one)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    sys.path.insert(0, SRC)
    report: dict[str, dict[str, dict[str, float]]] = {}

    def figure(part: str, name: str, times: list[float], cpu: list[float] | None = None) -> None:
        row = {"median_ms": round(statistics.median(times), 3), "max_ms": round(max(times), 3), "runs": len(times)}
        if cpu is not None:  # CPU time: what the parser costs, whatever else the machine runs
            row["median_cpu_ms"] = round(statistics.median(cpu), 3)
        report.setdefault(part, {})[name] = row
        if not args.json:
            print(f"  {name:<40} median {row['median_ms']:8.3f} ms   max {row['max_ms']:8.3f} ms"
                  + (f"   CPU median {row['median_cpu_ms']:8.3f} ms" if cpu is not None else ""), flush=True)

    if "first" not in args.skip:
        if not args.json:
            print(f"first find_time of a fresh process (median of {args.runs} processes):")
        for name, query in FIRST_QUERIES.items():
            figure("first_call", name, *first_call_ms(query, args.runs, args.python))
    if "parse" not in args.skip:
        if not args.json:
            print(f"a 2,000-character query in a warm process (median of {args.runs} calls):")
        for name, query in PARSE_QUERIES.items():
            try:
                figure("parse_2000", name, *parse_ms(query, args.runs))
            except Exception as error:  # an older parser that raises on it: a finding, not a figure
                report.setdefault("parse_2000", {})[name] = {"error": f"{type(error).__name__}: {error}"}
                if not args.json:
                    print(f"  {name:<40} raises {type(error).__name__}: {error}", flush=True)
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
