#!/usr/bin/env python3
"""Build or refresh the index: see `index.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import index_command, run  # noqa: E402

run(index_command, "index.py")
