#!/bin/sh
# Serve the memories over a read-only HTTP API: see `serve.py --help`.
#
# The shell starts the script under the skill's own Python environment once it is built (MEMORIES_VENV, else
# .venv beside scripts/), so no version manager's shim (pyenv, asdf, mise: a shell script that costs 100 ms
# and more) runs on every call; until then under python3 from PATH, which builds the environment
# (src/memory_search/faces/environment.py). Python reads these shell lines as a string and goes on below.
"true" '''\'
python="${MEMORIES_VENV:-${0%/*}/../.venv}/bin/python"
[ -x "$python" ] || python=python3
exec "$python" "$0" "$@"
'''
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
from memory_search.faces.launch import launch  # noqa: E402  (standard library only until it is needed)

launch("serve")
