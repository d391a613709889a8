"""How a script in scripts/ starts: the warm helper's answer when one serves it, else the command in this
process, under the skill's environment (environment.py). Standard library only until that is ready.

The MCP server never makes its client wait for the environment: while it is being built, a stand-in
(mcp_relay.py) answers `initialize` and `tools/list` at once and hands the session to the real server
as soon as it can start."""

import sys

NEEDS = {"serve": ("starlette", "uvicorn", "markdown_it"), "mcp_server": ("mcp",)}  # beyond the core dependencies


def launch(script: str) -> None:
    """Run scripts/<script>.py: through the warm helper, else in this process."""
    from . import client, environment

    start_helper = ""
    if script in client.HELPED:
        start_helper = client.answer(script)  # exits here with a warm helper's answer
    if script == "mcp_server" and any(argument in ("-h", "--help") for argument in sys.argv[1:]):
        from .mcp_tools import HELP

        sys.stdout.write(HELP)  # without the MCP SDK's import time
        sys.exit(0)
    if script == "mcp_server" and not environment.ready(NEEDS["mcp_server"]) and not sys.argv[1:]:
        from .mcp_relay import relay

        sys.exit(relay())
    environment.ensure(*NEEDS.get(script, ()))
    if script == "mcp_server":
        from .mcp_server import main

        main()
        return
    from .cli import COMMANDS, run

    if script == "serve":
        from .serve_command import serve_command

        run(serve_command, "serve.py")
    run(COMMANDS[script], f"{script}.py", after=lambda code: _start_helper(script, start_helper, code))


def _start_helper(script: str, start_helper: str, code: int) -> None:
    """No warm helper answered this call: start one for the next ("start"), or one that replaces the helper
    that did not answer ("replace"): client.answer's word. Not after a run that failed (no index, say): the
    next call would fail the same way."""
    if start_helper and code == 0:
        from .helper_processes import start_in_background

        start_in_background(warm=script == "search", replace=start_helper == "replace")
