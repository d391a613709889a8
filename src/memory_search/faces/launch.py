"""How a script in scripts/ starts: the warm helper's answer when one serves it, else the command in this
process, under the skill's environment (environment.py). Standard library only until that is ready.

The MCP server never makes its client wait for the environment: while it is being built, a stand-in
(mcp_relay.py) answers `initialize` and `tools/list` at once and hands the session to the real server
as soon as it can start."""

import sys

HELPED = ("search", "recent", "stats", "similar")  # the read-only scripts a warm helper may answer
NEEDS = {"serve": ("starlette", "uvicorn", "markdown_it"), "mcp_server": ("mcp",)}  # beyond the core dependencies


def launch(script: str) -> None:
    """Run scripts/<script>.py: through the warm helper, else in this process."""
    from . import environment

    start_helper = ""
    if script in HELPED:
        from . import client

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
    run(COMMANDS[script], f"{script}.py", start_helper=start_helper)
