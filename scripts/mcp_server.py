#!/usr/bin/env python3
"""Serve the memories to MCP clients over stdio: see `mcp_server.py --help`."""
import _venv

_venv.ensure("mcp", background=True)

from memory_search.mcp_server import main  # noqa: E402

main()
