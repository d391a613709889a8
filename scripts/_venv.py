"""Run a script under the skill's own virtual environment (.venv beside scripts/) when needed.

Claude Code calls `scripts/search.py` with whatever python3 is on PATH; when that Python lacks
the dependencies and the skill's .venv exists, the script is re-run there (one exec)."""

import os
import sys


def ensure() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    venv = os.environ.get("MEMORIES_VENV") or os.path.join(root, ".venv")
    if sys.prefix == venv:  # the common case, decided without importing anything
        return
    import importlib.util

    if importlib.util.find_spec("psycopg") is not None:
        return
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, *sys.argv])
    sys.stderr.write(f"{os.path.basename(sys.argv[0])}: error: the dependencies are not installed: "
                     f"run `make install` in {root}\n")
    sys.exit(1)
