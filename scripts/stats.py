#!/usr/bin/env python3
"""Show what the index holds: see `stats.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import stats_command, run  # noqa: E402

run(stats_command, "stats.py")
