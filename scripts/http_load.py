#!/usr/bin/env python3
"""Measure the HTTP API under concurrent clients: see `http_load.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import run  # noqa: E402
from memory_search.http_load import load_command  # noqa: E402

run(load_command, "http_load.py")
