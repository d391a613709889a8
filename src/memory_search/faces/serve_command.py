"""serve.py's command line (scripts/serve.py, `memory-search serve`): apart from http_api.py, so that --help
answers without importing Starlette and Uvicorn."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import ENVIRONMENT_HELP
from .console import Console, command, exit_codes_help, memories_option

SERVE_EXAMPLES = """\
  serve.py                                  # a free port; the URL goes to the endpoint file
  xdg-open "$(cat ~/.config/memory-search/endpoint)/"   # the knowledge-base page
  serve.py --port 8765 --db work=~/work-memories
  curl "$(cat ~/.config/memory-search/endpoint)/api/search?db=default&q=HNSW&limit=5"
  serve.py --token-file ~/.config/memory-search/token   # every route but /api/health needs the token
  serve.py --host 10.0.0.5 --port 8765 --token-file /etc/memory-search/token --allowed-host search.example.com
  serve.py --db alice=index:memsearch_memories_c527b163   # an index another machine builds (db.py indexes)
  claude mcp add --transport http memory-search http://127.0.0.1:8765/mcp --header "Authorization: Bearer $TOKEN\""""

SERVE_ENVIRONMENT = ENVIRONMENT_HELP + """
  XDG_CONFIG_HOME               holds memory-search/endpoint and
                                memory-search/databases.json (default ~/.config)"""


@command(SERVE_EXAMPLES, SERVE_ENVIRONMENT, exit_codes_help(
    "bad flag, beyond loopback without a token file, a databases.json that cannot be read", None,
    "the address cannot be bound, database", success="stopped by Ctrl-C or SIGTERM"))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to listen on; beyond loopback a token is required")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="port (0: a free one)")
@click.option("--db", "dbs", multiple=True, metavar="NAME=DIR|NAME=index:PREFIX",
              help="also serve this memories directory, or the index PREFIX that another machine builds in "
                   "the same database, as db NAME (repeatable)")
@click.option("--token-file", metavar="FILE",
              help="require a person's token (`Authorization: Bearer TOKEN`, or a browser's sign-in): FILE holds "
                   "NAME TOKEN lines, one person each, or one token alone (created with a random token, mode 0600, "
                   "when missing); removing a line revokes it")
@click.option("--allowed-host", "allowed", multiple=True, metavar="NAME",
              help="also answer requests for this host name (a reverse proxy's; repeatable)")
@memories_option
@click.pass_obj
def serve_command(console: Console, host, port, dbs, token_file, allowed, memories):
    """Serve the memories over a read-only HTTP API, on 127.0.0.1 by default.

    GET /api/health, /api/list, /api/search?db=&q=&limit=&target=keyword|semantic
    (and the deprecated /api/keyword, /api/semantic), /api/read?db=&path=; /?db= is the
    knowledge-base page for people (overview, search, a memory, recent records, the graph, index
    progress and refresh); /graph?db= draws the link graph in a browser; /mcp is the MCP server
    (Streamable HTTP) over the first db that loads. With a token file, a browser signs in at /signin
    and signs out with the page's button.
    The default db is the memories directory's index; databases.json
    in the configuration folder and --db add more. The base URL is written to
    <config>/memory-search/endpoint (mode 0600) and removed on exit. Only requests for the
    server's own host names are answered: on 0.0.0.0 or ::, loopback and every address and
    name of the machine; --allowed-host adds more. Every 4xx has a JSON body."""
    from .http_api import serve

    serve(console.settings(memories), host, port, tuple(dbs),
          lambda message: console.err(f"{console.prog}: {message}"),
          Path(console.absolute(token_file)) if token_file else None, tuple(allowed))
