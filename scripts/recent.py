#!/usr/bin/env python3
"""List the newest records: see `recent.py --help`."""
import _client

start_helper = _client.answer("recent")  # exits here with a warm helper's answer

import _venv  # noqa: E402

_venv.ensure()

from memory_search.cli import recent_command, run  # noqa: E402

run(recent_command, "recent.py", start_helper=start_helper)
