#!/usr/bin/env python3
"""Search the memories: see `search.py --help`."""
import _client

start_helper = _client.answer("search")  # exits here with a warm helper's answer

import _venv  # noqa: E402

_venv.ensure()

from memory_search.cli import search_command, run  # noqa: E402

run(search_command, "search.py", start_helper=start_helper)
