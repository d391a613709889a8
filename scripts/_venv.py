"""Run a script under the skill's own virtual environment (.venv beside scripts/) when needed.

Claude Code calls `scripts/search.py` with whatever python3 is on PATH; when that Python lacks
the dependencies and the skill's .venv exists, the script is re-run there (one exec, no import)."""

import importlib.util
import os
import sys


def ensure() -> None:
    if importlib.util.find_spec("psycopg") is not None:
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    python = os.path.join(os.environ.get("MEMORIES_VENV") or os.path.join(root, ".venv"), "bin", "python")
    venv = os.path.dirname(os.path.dirname(python))
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, *sys.argv])
    sys.stderr.write(f"{os.path.basename(sys.argv[0])}: error: the dependencies are not installed: "
                     f"run `make install` in {root}\n")
    sys.exit(1)
