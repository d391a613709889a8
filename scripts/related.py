#!/usr/bin/env python3
"""What a memory is connected to: see `related.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import related_command, run  # noqa: E402

run(related_command, "related.py")
