#!/usr/bin/env python3
"""Measure retrieval quality on a BEIR-layout set: see `eval.py --help`."""
import _venv

_venv.ensure()

from memory_search.cli import eval_command, run  # noqa: E402

run(eval_command, "eval.py")
