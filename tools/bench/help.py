"""How long each script's --help takes: the median of N fresh processes per script in scripts/ (found, not listed).

    python3 tools/bench/help.py [--runs 5] [--python python3] [--limit 0.5]

Each script runs as Claude Code runs it, by the python3 on PATH (the script enters .venv itself), with no warm
helper (MEMORIES_NO_DAEMON=1), so the figure is the script's own start-up. `python3 -c pass` is timed right
before each run, and each median is also given as a ratio to its median, which holds better than seconds on a
busy machine; the load average is printed with the figures. Exit codes: 0 every median within --limit
seconds; 1 some script above it; 2 usage error."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def timed(command: list[str], environ: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environ, cwd=ROOT)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"help.py: error: {' '.join(command[1:])} exited {result.returncode}: "
                         f"{result.stderr.decode(errors='replace').strip()[-300:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per script (default 5)")
    parser.add_argument("--python", default="python3", help="the interpreter that runs the scripts (default python3)")
    parser.add_argument("--limit", type=float, default=0.5, help="seconds a median may take (default 0.5)")
    options = parser.parse_args()
    environ = {**os.environ, "MEMORIES_NO_DAEMON": "1"}
    scripts = sorted((ROOT / "scripts").glob("*.py"))
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {options.runs} fresh processes by {options.python}")
    print(f"{'script':<16} {'median':>8} {'slowest':>8} {'python3 -c pass':>16} {'ratio':>6}")
    over = []
    for script in scripts:
        baselines, times = [], []
        for _ in range(options.runs):
            baselines.append(timed([options.python, "-c", "pass"], environ))
            times.append(timed([options.python, str(script), "--help"], environ))
        median, baseline = statistics.median(times), statistics.median(baselines)
        print(f"{script.name:<16} {median * 1000:>5.0f} ms {max(times) * 1000:>5.0f} ms {baseline * 1000:>13.0f} ms "
              f"{median / baseline:>5.1f}x")
        if median > options.limit:
            over.append(script.name)
    if over:
        sys.stdout.flush()
        print(f"above {options.limit} s: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
