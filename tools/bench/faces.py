#!/usr/bin/env python3
"""Measure the MCP server and the HTTP API: see `faces.py --help`. Development tooling."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.join(ROOT, "src"))
from memory_search.faces.environment import ensure  # noqa: E402

ensure("mcp", "starlette")

from faces_lib import bench_faces_command  # noqa: E402

from memory_search.faces.console import run  # noqa: E402

if __name__ == "__main__":
    run(bench_faces_command, "faces.py")
