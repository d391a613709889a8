#!/usr/bin/env python3
"""Show what the index holds: see `stats.py --help`."""
import _client

start_helper = _client.answer("stats")  # exits here with a warm helper's answer

import _venv  # noqa: E402

_venv.ensure()

from memory_search.cli import stats_command, run  # noqa: E402

run(stats_command, "stats.py", start_helper=start_helper)
