#!/usr/bin/env python3
"""Build or refresh the index: see `index.py --help`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
from memory_search.faces.launch import launch  # noqa: E402  (standard library only until it is needed)

launch("index")
