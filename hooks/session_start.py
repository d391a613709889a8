#!/usr/bin/env python3
"""The plugin's SessionStart hook: name the memories folder for the session's commands, and bring the
Python environment and the index up to date in the background. Standard library only; returns at once.

- The options set with /plugin configure (CLAUDE_PLUGIN_OPTION_*) are exported into CLAUDE_ENV_FILE,
  so the skill's scripts, run through the Bash tool, find the memories with nothing set by hand.
- The environment lives in ${CLAUDE_PLUGIN_DATA}/venv, which survives plugin updates.
- A detached process builds the environment if it is missing, then runs index.py (keyword first, then
  embeddings): it catches up with whatever a missed SessionEnd left behind.
- One line on stdout tells Claude where things stand."""

import os
import shlex
import sys

ROOT = os.environ.get("CLAUDE_PLUGIN_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))
from memory_search.faces import plugin  # noqa: E402  (standard library only)

exports = plugin.session_environment(os.environ)
os.environ.update(exports)
env_file = os.environ.get("CLAUDE_ENV_FILE")
if env_file:
    try:
        with open(env_file, "a", encoding="utf-8") as handle:
            handle.writelines(f"export {name}={shlex.quote(value)}\n" for name, value in exports.items())
    except OSError as error:
        print(f"memory-search: cannot write the session's environment ({error.strerror}); the scripts need "
              "MEMORIES_DIR set")
print(plugin.start_catching_up(os.environ))
