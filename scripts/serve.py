#!/usr/bin/env python3
"""Serve the memories over a read-only local HTTP API: see `serve.py --help`."""
import _venv

_venv.ensure("starlette", "uvicorn")

from memory_search.cli import run  # noqa: E402
from memory_search.http_api import serve_command  # noqa: E402

run(serve_command, "serve.py")
