#!/usr/bin/env python3
"""Export the indexed chunks: see `export.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import export_command, run  # noqa: E402

run(export_command, "export.py")
