#!/usr/bin/env python3
"""Check that every commit since SINCE has a subject of at most 72 characters (the detail goes in the body).

    commit_subjects.py [--since REV]

Commits before SINCE (the first commit under this rule's parent) are not checked. Exit 1 names each commit
over the limit; exit 0 when all hold, or when SINCE is not in this clone (a shallow one, or no git)."""

from __future__ import annotations

import argparse
import subprocess
import sys

LIMIT = 72
SINCE = "5f679d4"  # the last commit before the rule


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--since", default=SINCE, help=f"the commit after which subjects are checked (default {SINCE})")
    args = parser.parse_args()
    try:
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.since}^{{commit}}"],
                               capture_output=True, text=True)
    except FileNotFoundError:
        known = None
    if known is None or known.returncode != 0:
        print(f"commit_subjects.py: {args.since} is not in this clone: nothing checked", file=sys.stderr)
        return 0
    log = subprocess.run(["git", "log", "--format=%h %s", f"{args.since}..HEAD"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    long = [line for line in log if len(line.split(" ", 1)[1]) > LIMIT]
    for line in long:
        commit, subject = line.split(" ", 1)
        print(f"commit {commit}: subject of {len(subject)} characters (at most {LIMIT}): {subject[:60]}...",
              file=sys.stderr)
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
