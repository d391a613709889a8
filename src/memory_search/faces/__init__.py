"""The faces: command line (cli, with the click plumbing in console), warm helper (helper, helper_processes,
client, launch), MCP server (mcp_server, mcp_tools, mcp_relay), HTTP API (http_api, http_guard), the
knowledge-base page and graph page (page, graph, markdown_html) and the Claude Code plugin (plugin, environment).

Each parses its protocol, calls the library through its public modules (api, knowledge_base, errors,
config, params, render, resources, hints, processes: tests/test_layers.py holds them to it), renders its
protocol's shape and maps errors to its protocol's form (outcomes.py)."""
