#!/usr/bin/env python3
"""Time a pasted page as a query: see `long_query.py --help`. Development tooling, not installed."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "src"))

# A 2,000-character query in each language, made as an agent makes one: a page pasted whole.
ENGLISH = ("We tune the HNSW index: ef_search, m and ef_construction decide recall and latency, and the build "
           "needs memory for the whole graph. ")
JAPANESE = "夜間バッチでデータベースのダンプを取り、オブジェクトストレージへ送るバックアップの運用について確認した。"


def to_length(piece: str, length: int = 2_000) -> str:
    return (piece * (length // len(piece) + 1))[:length]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__ + "\n\nIndexes the memories (examples/memories by default) once, then runs each 2,000-"
        "character query --runs times per mode in this process, warm, and prints the median and the slowest in ms "
        "with the load average.\n\n  long_query.py [--memories DIR] [--runs 10] [--modes keyword,semantic,"
        "hybrid]", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", default=os.path.join(ROOT, "examples", "memories"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--modes", default="keyword,semantic,hybrid")
    args = parser.parse_args()

    import memory_search

    with memory_search.open(memories_dir=args.memories) as memories:
        memories.index()
        for name, query in (("ja", to_length(JAPANESE)), ("en", to_length(ENGLISH))):
            for mode in args.modes.split(","):
                memories.search(query, mode=mode)  # warm: the model and the connection
                times = []
                for _ in range(args.runs):
                    began = time.perf_counter()
                    memories.search(query, mode=mode)
                    times.append((time.perf_counter() - began) * 1000)
                print(f"{name} {len(query)} chars  {mode:<8}  median {statistics.median(times):7.1f} ms  "
                      f"max {max(times):7.1f} ms  (load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
