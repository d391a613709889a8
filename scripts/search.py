#!/usr/bin/env python3
"""Search the memories: see `search.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import search_command, run  # noqa: E402

run(search_command, "search.py")
