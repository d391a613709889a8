#!/usr/bin/env python3
"""Measure speed on synthetic memories: see `bench.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import bench_command, run  # noqa: E402

run(bench_command, "bench.py")
