"""What the Claude Code plugin's hooks do, standard library only: the hooks run under any python3.

Claude Code hands the options set with /plugin configure to hooks as CLAUDE_PLUGIN_OPTION_<KEY> and to
the MCP server through ${user_config.KEY} in plugin.json; the plugin's persistent folder is
CLAUDE_PLUGIN_DATA. These become the scripts' own variables here."""

from __future__ import annotations

import os

PLUGIN = "memory-search@memory-search"
SETUP_HINT = (f"set it with /plugin configure {PLUGIN} in Claude Code (or `claude plugin configure {PLUGIN}` "
              "in a shell)")
OPTIONS = {"MEMORIES_DIR": "MEMORIES_DIR", "DATABASE_URL": "MEMORIES_DATABASE_URL",
           "VOYAGE_API_KEY": "VOYAGE_API_KEY",
           "CLAUDE_CODE_MEMORIES": "MEMORIES_CLAUDE_CODE"}  # CLAUDE_PLUGIN_OPTION_<key> -> the scripts' variable


def session_environment(environ) -> dict[str, str]:
    """The variables the scripts need in a session: the configured options, where the environment lives, the
    hint for an unset folder, and auto-indexing on."""
    exports = {"MEMORIES_SETUP_HINT": SETUP_HINT, "MEMORIES_AUTO_INDEX": "1"}
    data = (environ.get("CLAUDE_PLUGIN_DATA") or "").strip()
    if data:
        exports["MEMORIES_VENV"] = os.path.join(data, "venv")
    for option, variable in OPTIONS.items():
        value = (environ.get(f"CLAUDE_PLUGIN_OPTION_{option}") or "").strip()
        if value:
            exports[variable] = os.path.expanduser(value)
    return exports


def start_catching_up(environ) -> str:
    """Start the detached set-up and index run; one line on where things stand."""
    from . import environment

    memories = (environ.get("MEMORIES_DIR") or "").strip()
    if not memories:
        environment.start_preparing(environ=environ)
        return f"memory-search: no memories folder is set yet; ask the user to {SETUP_HINT}."
    if not os.path.isdir(memories):
        environment.start_preparing(environ=environ)
        return f"memory-search: the memories folder {memories} does not exist; ask the user to {SETUP_HINT}."
    environment.start_preparing(index=memories, environ=environ)
    ready = "ready" if environment.ready(("mcp",)) else "being set up (first use, a minute or two)"
    return (f"memory-search: memories in {memories}; the environment is {ready}, and the index is being brought "
            "up to date in the background.")
