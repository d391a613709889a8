#!/usr/bin/env python3
"""The plugin's SessionEnd hook: index what the session wrote, in a detached process, and return at once
(Claude Code gives SessionEnd hooks about 1.5 s). Standard library only."""

import os
import sys

ROOT = os.environ.get("CLAUDE_PLUGIN_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))
from memory_search.faces import plugin  # noqa: E402  (standard library only)

os.environ.update(plugin.session_environment(os.environ))
plugin.start_catching_up(os.environ)
