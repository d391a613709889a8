"""What stands between the HTTP API and the network: the Host and Origin checks, the bearer token, a cap
on open connections and on MCP sessions, deadlines for requests, and logging that never floods.

- Host: the names the server is reached by, with or without its port. On loopback: 127.0.0.1, localhost
  and [::1]. On an address beyond loopback: that address and the machine's host names. On a bind-all
  address (0.0.0.0, ::): loopback, the machine's names and every address of the machine (an address is
  the machine's when a socket can be bound to it). --allowed-host adds names (a reverse proxy's). Anything
  else, a page that rebound its own name to 127.0.0.1 for one, gets 400.
- Origin: a request that carries one (a browser's, from a page) must come from a page of this server's;
  one from another site's page gets 403.
- Token: when one is configured, every route but /api/health needs `Authorization: Bearer TOKEN` (or the
  cookie GET /graph?token=TOKEN sets, for the graph page in a browser); without it, 401. A person signs in
  to the page once with the form at /signin (its POST, from this host only, sets the HttpOnly, SameSite
  cookie; the token never goes in a URL); the page's address without the cookie leads there. The form and
  the page's scripts and styles (/assets/) are open: they hold no data.
- Every 4xx carries a JSON body {"error": one line}, whoever answers it (this guard, the routes, the MCP
  transport, the HTTP parser).
- Connections: at most MAX_CONNECTIONS open (fewer when the descriptor limit is low). At the cap a new
  connection takes the place of the one that has waited longest for its client (an unfinished request, or
  a kept-alive one between requests); only when every one is being answered is the new one closed at once,
  so running out of descriptors turns into refusals, not silence. A request whose head and body have not
  all arrived within REQUEST_SECONDS of connecting, or of the last answer, is closed.
- MCP sessions (/mcp): at most MCP_SESSIONS per token (per server without one); at the cap a new session
  ends the one of that token unused longest, unless all are busy (then 503). A session idle for
  MCP_IDLE_SECONDS ends.
- Logs: one line per incident, the same line at most once a minute, never a traceback.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import re
import resource
import secrets
import socket
import stat
import threading
import time
from collections import OrderedDict
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import UsageError

MAX_CONNECTIONS = 200
DESCRIPTOR_RESERVE = 64  # for database connections, the model, logs and the listening socket itself
# Connections the event loop accepts at once before any is seen (the listening socket's backlog): they need
# descriptors before the cap can close the ones that give way.
ACCEPT_BATCH = 32
REQUEST_SECONDS = 10.0
MCP_SESSIONS = 32  # per token
MCP_IDLE_SECONDS = 600.0
TOKEN_COOKIE = "memory_search_token"
OPEN = ("/api/health", "/signin")  # answered without the token: a load balancer's probe, the sign-in form
OPEN_PREFIXES = ("/assets/",)  # the page's scripts and styles
SIGN_IN_LIMIT = 4096  # bytes of a sign-in form read at most
CREDENTIAL = "memory_search.credential"  # the ASGI scope key naming who a request authenticated as
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
BIND_ALL = ("0.0.0.0", "::", "")
_log = logging.getLogger("memory_search.http")


def connection_cap() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft - DESCRIPTOR_RESERVE - ACCEPT_BATCH))


class GuardedH11(H11Protocol):
    """Uvicorn's HTTP/1.1 protocol with a connection cap (the longest waiting connection gives way to a new one)
    and a deadline for each request to arrive whole."""

    cap = MAX_CONNECTIONS

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._request_timer = None
        self._waiting_since = self.loop.time()
        if len(self.connections) > self.cap:
            oldest = min((other for other in self.connections if other is not self and isinstance(other, GuardedH11)
                          and other._waiting() and not other.transport.is_closing()),
                         key=lambda other: other._waiting_since, default=None)
            if oldest is None:
                incident("refused a connection: %d are open and being answered, the most this server keeps", self.cap)
                transport.abort()
                return
            incident("closed the connections that waited longest for their client to make room for new ones "
                     "(%d open, the most this server keeps)", self.cap)
            oldest.transport.abort()
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting():
            self._arm()
        else:
            self._disarm()  # the whole request arrived: it is being answered

    def on_response_complete(self) -> None:
        self._waiting_since = self.loop.time()
        super().on_response_complete()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """The HTTP parser's refusal (no Host, a head too large, not HTTP), with a JSON body as every 4xx."""
        body = json.dumps({"error": f"{msg.rstrip('.').lower()}: send a well-formed HTTP/1.1 request"}).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            pass
        self.transport.close()

    def _waiting(self) -> bool:
        """Waiting for the client: for a request to start, or for the rest of its head or body."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

    def _arm(self) -> None:
        if getattr(self, "_request_timer", None) is None and not self.transport.is_closing():
            self._request_timer = self.loop.call_later(REQUEST_SECONDS, self._request_late)

    def _disarm(self) -> None:
        timer, self._request_timer = getattr(self, "_request_timer", None), None
        if timer is not None:
            timer.cancel()

    def _request_late(self) -> None:
        self._request_timer = None
        if self._waiting() and not self.transport.is_closing():
            incident("closed connections that sent no whole request within %.0f s", REQUEST_SECONDS)
            self.transport.abort()


class Hosts:
    """The Host header values (and Origin hosts) this server answers for."""

    def __init__(self, host: str, port: int, extra: tuple[str, ...] = ()):
        self.port = port
        self.any_address = host in BIND_ALL
        names = {host, *extra}
        if host in LOOPBACK_NAMES or self.any_address:
            names |= set(LOOPBACK_NAMES)
        if host not in LOOPBACK_NAMES:
            names |= machine_names()
        self.names = {name.lower().strip("[]").rstrip(".") for name in names if name} - {""}
        self._local: dict[str, tuple[bool, float]] = {}

    def allows(self, value: str) -> bool:
        name, port = split_host(value)
        if not name or (port is not None and port != self.port):
            return False
        if name in self.names:
            return True
        return self.any_address and self._is_local_address(name)

    def allows_origin(self, origin: str) -> bool:
        scheme, separator, rest = origin.strip().partition("://")
        if not separator or scheme.lower() not in ("http", "https") or "/" in rest:
            return False
        return self.allows(rest)

    def listed(self) -> list[str]:
        """The names, as a log line or an error message shows them."""
        return sorted(f"[{name}]" if ":" in name else name for name in self.names)

    def _is_local_address(self, name: str) -> bool:
        """Whether `name` is an IP address of this machine now (answers are kept a minute)."""
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        now = time.monotonic()
        known = self._local.get(name)
        if known is not None and now - known[1] < 60:
            return known[0]
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((name, 0))
            local = True
        except OSError:
            local = False
        if len(self._local) > 1024:
            self._local.clear()
        self._local[name] = (local, now)
        return local


def split_host(value: str) -> tuple[str, int | None]:
    """(name, port) of a Host header value, the name lower-case without brackets; ("", None) when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return "", None
        port_text = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    elif ":" in value:
        return "", None  # an IPv6 address must be bracketed
    else:
        name, port_text = value, None
    if port_text is None:
        return name.rstrip("."), None
    if not port_text.isdigit() or len(port_text) > 5:
        return "", None
    return name.rstrip("."), int(port_text)


def machine_names() -> set[str]:
    """This machine's host name, short and fully qualified (the latter when the resolver answers within 2 s)."""
    names = set()
    try:
        hostname = socket.gethostname().lower()
    except OSError:
        return names
    if hostname:
        names |= {hostname, hostname.split(".")[0]}
    found: list[str] = []

    def qualify():
        try:
            found.append(socket.getaddrinfo(hostname, None, flags=socket.AI_CANONNAME)[0][3])
        except (OSError, IndexError, UnicodeError):
            pass

    resolver = threading.Thread(target=qualify, daemon=True)
    resolver.start()
    resolver.join(2.0)
    names |= {name.lower() for name in found if name}
    return names


class Guard:
    """ASGI middleware: the Host and Origin checks, then the token; every 4xx below it gets a JSON body."""

    def __init__(self, app, hosts: Hosts, token: str | None):
        self.app, self.hosts, self.token = app, hosts, token
        self._credential = "token:" + hmac.new(b"memory-search", token.encode(), "sha256").hexdigest()[:16] \
            if token else "open"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.hosts.allows(host):
            incident("refused requests for a host this server is not: %s", host[:80] or "(none)")
            return await _json_error(send, 400, "this server does not answer for that host name: use its address "
                                                "or name (serve.py --allowed-host adds one)")
        origin = headers.get(b"origin")
        if origin is not None and not self.hosts.allows_origin(origin.decode("latin-1")):
            incident("refused requests from another site's page: %s", origin.decode("latin-1")[:80])
            return await _json_error(send, 403, "requests from another site's page are refused")
        path, method = scope["path"], scope.get("method", "GET")
        if self.token is not None and method == "POST" and path == "/signin":
            return await self._sign(scope, receive, send, headers)
        if self.token is None or path in OPEN or path.startswith(OPEN_PREFIXES):
            scope[CREDENTIAL] = self._credential
            return await self.app(scope, receive, json_errors(send))
        if scope["path"] in ("/graph", "/graph/") and self._query_token(scope):
            cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()
            return await _answer(send, 303, b"", [(b"location", b"/graph"), (b"set-cookie", cookie)])
        if self._authorized(headers):
            scope[CREDENTIAL] = self._credential
            return await self.app(scope, receive, json_errors(send))
        if path == "/" and method == "GET":  # the page in a browser: to the sign-in form, and back here after
            query = scope.get("query_string", b"").decode("latin-1")
            back = quote("/" + ("?" + query if query else ""), safe="")
            return await _answer(send, 303, b"", [(b"location", f"/signin?next={back}".encode())])
        return await _answer(send, 401, b'{"error": "a bearer token is required: send Authorization: Bearer TOKEN"}',
                             [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")])

    def _authorized(self, headers: dict) -> bool:
        given = headers.get(b"authorization", b"").decode("latin-1")
        if given[:7].lower() == "bearer " and hmac.compare_digest(given[7:].strip().encode(), self.token.encode()):
            return True
        for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == TOKEN_COOKIE and hmac.compare_digest(value.encode(), self.token.encode()):
                return True
        return False

    async def _sign(self, scope, receive, send, headers: dict) -> None:
        """POST /signin (token=...&next=...): the cookie and back to the page, or the form again. Only from a
        page of this host (Origin), so no other site signs anyone in."""
        origin = headers.get(b"origin", b"").decode("latin-1")
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if origin and urlsplit(origin).netloc.lower() != host:
            incident("refused a sign-in from another site: %s", origin[:80])
            return await _answer(send, 403, b"", [])
        body = b""
        while len(body) <= SIGN_IN_LIMIT:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form = parse_qs(body[:SIGN_IN_LIMIT].decode("utf-8", "replace"))
        given, back = form.get("token", [""])[-1].strip(), form.get("next", ["/"])[-1]
        if not back.startswith("/") or back.startswith("//") or "\\" in back:
            back = "/"  # only this server's own pages
        back = quote(back, safe="/?=&%:@!$'()*+,;~-._")  # nothing that could end the header line
        if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
            incident("refused a sign-in with a wrong token")
            return await _answer(send, 303, b"", [(b"location", f"/signin?failed=1&next={quote(back, safe='')}"
                                                   .encode())])
        cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()
        return await _answer(send, 303, b"", [(b"location", back.encode()), (b"set-cookie", cookie)])

    def _query_token(self, scope) -> bool:
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[-1]
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())


async def _answer(send, status: int, body: bytes, headers: list) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def _json_error(send, status: int, message: str) -> None:
    await _answer(send, status, json.dumps({"error": message}).encode(), [(b"content-type", b"application/json")])


def json_errors(send):
    """`send` with every 4xx response that is not JSON turned into {"error": its first line}."""
    held: dict = {}

    async def sending(message):
        kind = message["type"]
        if kind == "http.response.start" and 400 <= message["status"] < 500 and not _is_json(message):
            held.update(start=message, body=bytearray())
            return
        if kind == "http.response.body" and "start" in held:
            held["body"] += message.get("body", b"")
            if message.get("more_body"):
                return
            start = held.pop("start")
            text = bytes(held.pop("body")).decode("utf-8", "replace").strip()
            if not text:
                from http import HTTPStatus

                try:
                    text = HTTPStatus(start["status"]).phrase
                except ValueError:
                    text = f"refused ({start['status']})"
            body = json.dumps({"error": text.splitlines()[0][:300]}).encode()
            headers = [(name, value) for name, value in start.get("headers", [])
                       if name.lower() not in (b"content-type", b"content-length")]
            await send({**start, "headers": [*headers, (b"content-type", b"application/json"),
                                             (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return sending


def _is_json(start) -> bool:
    return any(name.lower() == b"content-type" and b"json" in value.lower() for name, value in start.get("headers", []))


class SessionCap:
    """ASGI app in front of the MCP SDK's Streamable HTTP transport: at most `cap` sessions per credential (the
    token; the server's own when it has none). At the cap, a request that opens a session ends the session of
    that credential unused longest, if one is idle (no request in flight); else it gets 503. The SDK's own
    idle timeout ends sessions nobody uses."""

    def __init__(self, manager, app, cap: int | None = None):
        self.manager, self.app, self.cap = manager, app, cap or MCP_SESSIONS
        self.sessions: dict[str, OrderedDict] = {}  # credential -> session ids, least recently used first
        self.opening: dict[str, int] = {}  # credential -> requests opening a session now

    async def __call__(self, scope, receive, send):
        live = getattr(self.manager, "_server_instances", None)
        if scope["type"] != "http" or live is None:  # not a request, or an SDK whose sessions we cannot see
            return await self.app(scope, receive, send)
        credential = scope.get(CREDENTIAL, "open")
        sessions = self.sessions.setdefault(credential, OrderedDict())
        for ended in [session for session in sessions if session not in live]:
            del sessions[ended]
        given = dict(scope.get("headers") or []).get(b"mcp-session-id")
        if given is not None:
            session = given.decode("latin-1")
            if session in sessions:
                sessions.move_to_end(session)
            return await self.app(scope, receive, send)
        if len(sessions) + self.opening.get(credential, 0) >= self.cap and not await self._end_oldest_idle(sessions):
            incident("refused a new MCP session: %d are open for one token and all are busy", self.cap)
            return await _json_error(send, 503, f"{self.cap} MCP sessions are open for this token and all are busy: "
                                                "end one (DELETE /mcp) or try again later")

        async def sending(message):
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = dict(message.get("headers") or []).get(b"mcp-session-id")
                if opened:
                    sessions[opened.decode("latin-1")] = None
            await send(message)

        self.opening[credential] = self.opening.get(credential, 0) + 1
        try:
            await self.app(scope, receive, sending)
        finally:
            self.opening[credential] -= 1

    async def _end_oldest_idle(self, sessions: OrderedDict) -> bool:
        live = self.manager._server_instances
        for session in list(sessions):
            transport = live.get(session)
            if transport is not None and getattr(transport, "_requests_in_flight", 0):
                continue  # being used now
            del sessions[session]
            if transport is not None:
                incident("ended the MCP sessions unused longest to make room for new ones (%d per token)", self.cap)
                await self.manager._discard_session(session, transport)
            return True
        return False


def read_token(path: Path) -> str:
    """The token in `path`, which must be a regular file of the user's own that others cannot read; a missing
    file is created with a new random token, mode 0600. Raises UsageError."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    except OSError as error:
        raise UsageError(f"cannot create the token file {path} ({error.strerror})") from None
    else:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise UsageError(f"cannot read the token file {path} ({error.strerror}): give a regular file") from None
    with os.fdopen(descriptor, encoding="utf-8", errors="replace") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
            raise UsageError(f"the token file {path} is not a regular file of yours")
        if stat.S_IMODE(status.st_mode) & 0o077:
            raise UsageError(f"the token file {path} can be read by others: chmod 600 it")
        token = handle.read(4096).strip()
    if len(token) < 16 or any(character.isspace() for character in token):
        raise UsageError(f"the token in {path} is too short or has spaces: use at least 16 characters, one line")
    return token


# --- logging: one line per incident ----------------------------------------------------------------

_last: dict[str, float] = {}


def incident(message: str, *args) -> None:
    """Log a line, at most once a minute for the same message."""
    now = time.monotonic()
    if now - _last.get(message, -1e9) >= 60:
        _last[message] = now
        _log.warning(message, *args)


class _OneLine(logging.Filter):
    """Records without their traceback, each distinct one at most once a minute."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = (record.getMessage().splitlines() or [""])[0][:300]
        if record.exc_info:
            error = record.exc_info[1]
            detail = str(error).splitlines()[0][:200] if str(error) else ""
            message = f"{message}: {type(error).__name__}: {detail}"
        record.msg, record.args, record.exc_info, record.exc_text, record.stack_info = message, None, None, None, None
        # The same incident with other numbers (a descriptor, a timer, an address) is the same line.
        key = f"{record.name}:{re.sub(r'0x[0-9a-f]+|[0-9]+', '#', message)}"
        now = time.monotonic()
        if now - _last.get(key, -1e9) < 60:
            return False
        _last[key] = now
        return True


def quiet_logging(stream) -> dict:
    """The logging configuration for uvicorn and asyncio: warnings and worse, one line each, to `stream`."""
    return {"version": 1, "disable_existing_loggers": False,
            "filters": {"one_line": {"()": _OneLine}},
            "formatters": {"line": {"format": "serve.py: %(message)s"}},
            "handlers": {"stream": {"class": "logging.StreamHandler", "stream": stream, "formatter": "line",
                                    "filters": ["one_line"]}},
            "loggers": {name: {"handlers": ["stream"], "level": "WARNING", "propagate": False}
                        for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "asyncio", "memory_search", "mcp")}}
