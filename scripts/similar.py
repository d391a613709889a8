#!/usr/bin/env python3
"""List the memories closest in meaning to a memory: see `similar.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import run, similar_command  # noqa: E402

run(similar_command, "similar.py")
