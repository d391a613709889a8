#!/usr/bin/env python3
"""Start, stop or check the embedded PostgreSQL: see `db.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import db_command, run  # noqa: E402

run(db_command, "db.py")
