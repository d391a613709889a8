#!/usr/bin/env python3
"""Measure the MCP server and the HTTP API: see `bench_faces.py --help`."""
import _venv

_venv.ensure("mcp", "starlette")

from memory_search.cli import run  # noqa: E402
from memory_search.face_bench import bench_faces_command  # noqa: E402

run(bench_faces_command, "bench_faces.py")
