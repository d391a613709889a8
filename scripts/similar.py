#!/usr/bin/env python3
"""List the memories closest in meaning to a memory: see `similar.py --help`."""
import _client

start_helper = _client.answer("similar")  # exits here with a warm helper's answer

import _venv  # noqa: E402

_venv.ensure()

from memory_search.cli import run, similar_command  # noqa: E402

run(similar_command, "similar.py", start_helper=start_helper)
