"""The commands a message tells the user to run, spelled to work from any directory: the skill's own
script by its absolute path in a checkout or a plugin, else the installed `memory-search` command."""

from __future__ import annotations

import shlex
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"


def command(name: str, *args: str) -> str:
    """How to run scripts/<name>.py (index, stats, db, ...) with `args`, as one shell command."""
    script = SCRIPTS / f"{name}.py"
    words = [str(script)] if script.is_file() else ["memory-search", name]
    return shlex.join([*words, *args])
