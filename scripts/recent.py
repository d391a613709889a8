#!/usr/bin/env python3
"""List the newest records: see `recent.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import recent_command, run  # noqa: E402

run(recent_command, "recent.py")
