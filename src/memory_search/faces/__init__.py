"""The faces: command line (cli), warm helper (helper, client, launch), MCP server, HTTP API and graph page.

Each parses its protocol, calls the library (memory_search.api.Memories), renders its protocol's shape
and maps errors to its protocol's form (outcomes.py)."""
