"""What stands between the HTTP API and the network: the Host and Origin checks, the bearer token, a cap
on open connections and on MCP sessions, deadlines for requests, and logging that never floods.

- Host: the names the server is reached by, with or without its port. On loopback: 127.0.0.1, localhost
  and [::1]. On an address beyond loopback: that address and the machine's host names. On a bind-all
  address (0.0.0.0, ::): loopback, the machine's names and every address of the machine (an address is
  the machine's when a socket can be bound to it). --allowed-host adds names (a reverse proxy's). Anything
  else, a page that rebound its own name to 127.0.0.1 for one, gets 400.
- Origin: a request that carries one (a browser's, from a page) must come from a page of this server's;
  one from another site's page gets 403.
- People: with a token file (team.py), every route but /api/health needs a person's token, `Authorization:
  Bearer TOKEN`, or the session cookie a browser gets by signing in at /signin (or GET /graph?token=TOKEN);
  without one, 401, and the page's address leads to the form. The form, sign-out and the page's scripts and
  styles (/assets/) are open: they hold no data.
- Every 4xx carries a JSON body {"error": one line}, whoever answers it (this guard, the routes, the MCP
  transport, the HTTP parser).
- Connections: at most MAX_CONNECTIONS open (fewer when the descriptor limit is low). At the cap a new
  connection takes the place of the one that has waited longest for its client (an unfinished request, or
  a kept-alive one between requests); only when every one is being answered is the new one closed at once,
  so running out of descriptors turns into refusals, not silence. A request whose head and body have not
  all arrived within REQUEST_SECONDS of connecting, or of the last answer, is closed.
- MCP sessions (/mcp): at most MCP_SESSIONS per person (per server without tokens); at the cap a new session
  ends that person's session unused longest, unless all are in use (then 503). A session idle for
  MCP_IDLE_SECONDS ends.
- Headers: every answer carries the same security headers (SecurityHeaders: a Content-Security-Policy with
  frame-ancestors 'none', X-Frame-Options, nosniff, Referrer-Policy same-origin).
- Logs: one line per incident, the same line at most once a minute, never a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import resource
import socket
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import UsageError

if TYPE_CHECKING:
    from asyncio import TimerHandle
    from collections.abc import Awaitable, Callable

    from .team import Team

MAX_CONNECTIONS = 200
DESCRIPTOR_RESERVE = 64  # for database connections, the model, logs and the listening socket itself
# Connections the event loop accepts at once before any is seen (the listening socket's backlog): they need
# descriptors before the cap can close the ones that give way.
ACCEPT_BATCH = 32
REQUEST_SECONDS = 10.0
MCP_SESSIONS = 32  # per person
MCP_IDLE_SECONDS = 600.0
MCP_ACTIVE_SECONDS = 60.0  # a session used this recently is in use, as is one with a request or stream open
# Answered without a token: a load balancer's probe, the sign-in form and sign-out (team.py checks them).
OPEN = ("/api/health", "/signin", "/signout")
OPEN_PREFIXES = ("/assets/",)  # the page's scripts and styles
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
    _request_timer: TimerHandle | None

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
    names: set[str] = set()
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
    """ASGI middleware: the Host and Origin checks, then who the request is from (a person's token, or their
    browser session); every 4xx below it gets a JSON body. `tokens`: team.Tokens, one token (a str: one
    person), or None (no token needed)."""

    def __init__(self, app, hosts: Hosts, tokens=None):
        from .team import Team, Tokens

        if isinstance(tokens, str):
            tokens = Tokens.single(tokens)
        self.app, self.hosts = app, hosts
        self.team = Team(tokens, hosts.port) if tokens is not None else None

    async def __call__(self, scope, receive, send):
        from .team import PERSON, TEAM

        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.hosts.allows(host):
            incident("refused requests for a host this server is not: %s", host[:80] or "(none)")
            return await _json_error(send, 400, "this server does not answer for that host name: use its address "
                                                "or name (serve.py --allowed-host adds one)")
        path, method = scope["path"], scope.get("method", "GET")
        origin = headers.get(b"origin")
        # A form posted from a page that sends no referrer says Origin: null; the sign-in form's own
        # anti-forgery token is what tells it from another site's.
        signing_in = path == "/signin" and origin == b"null"
        if origin is not None and not signing_in and not self.hosts.allows_origin(origin.decode("latin-1")):
            incident("refused requests from another site's page: %s", origin.decode("latin-1")[:80])
            return await _json_error(send, 403, "requests from another site's page are refused")
        team = scope[TEAM] = self.team
        if team is None:
            scope[CREDENTIAL] = "open"
            return await self.app(scope, receive, json_errors(send))
        if path in OPEN or path.startswith(OPEN_PREFIXES):
            return await self.app(scope, receive, json_errors(send))
        if path in ("/graph", "/graph/") and (person := _query_person(team, scope)):
            cookie = team.start(person).encode()
            return await _answer(send, 303, b"", [(b"location", b"/graph"), (b"set-cookie", cookie)])
        person = _person(team, headers)
        if person is not None:
            scope[CREDENTIAL] = "person:" + person
            scope[PERSON] = person
            return await self.app(scope, receive, json_errors(send))
        if path == "/" and method == "GET":  # the page in a browser: to the sign-in form, and back here after
            if headers.get(b"sec-fetch-site") == b"cross-site":
                # A link from another site: the browser held back the SameSite=Strict session cookie. The page
                # asks for itself again, from this site, which sends the cookie when there is one.
                return await _answer(send, 200, AGAIN_FROM_HERE, [(b"content-type", b"text/html; charset=utf-8"),
                                                                 (b"cache-control", b"no-store")])
            query = scope.get("query_string", b"").decode("latin-1")
            back = quote("/" + ("?" + query if query else ""), safe="")
            return await _answer(send, 303, b"", [(b"location", f"/signin?next={back}".encode())])
        return await _answer(send, 401, b'{"error": "a bearer token is required: send Authorization: Bearer TOKEN"}',
                             [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")])


def _person(team: Team, headers: dict) -> str | None:
    given = headers.get(b"authorization", b"").decode("latin-1")
    if given[:7].lower() == "bearer ":
        token = given[7:].strip()
        return team.tokens.who(token) if token else None
    return team.person_of(headers.get(b"cookie", b"").decode("latin-1"))


def _query_person(team: Team, scope) -> str | None:
    given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[-1]
    return team.tokens.who(given) if given else None


AGAIN_FROM_HERE = (b'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0">'
                   b"<title>memory-search</title>")


async def _answer(send, status: int, body: bytes, headers: list) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def _json_error(send, status: int, message: str) -> None:
    await _answer(send, status, json.dumps({"error": message}).encode(), [(b"content-type", b"application/json")])


def json_errors(send) -> Callable[[dict], Awaitable[None]]:
    """`send` with every 4xx response that is not JSON turned into {"error": its first line}."""
    held: dict = {}

    async def sending(message: dict) -> None:
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
    """ASGI app in front of the MCP SDK's Streamable HTTP transport: at most `cap` sessions per person (per
    server without tokens). At the cap, a request that opens a session ends that person's session unused
    longest, if one is idle: no request under way on it (a held GET stream is one) and none in the last
    MCP_ACTIVE_SECONDS. When all are in use it gets 503. One person's sessions never end another's. The SDK's
    own idle timeout ends sessions nobody uses."""

    def __init__(self, manager, app, cap: int | None = None):
        self.manager, self.app, self.cap = manager, app, cap or MCP_SESSIONS
        self.sessions: dict[str, OrderedDict] = {}  # credential -> {session id: last used}, least recent first
        self.opening: dict[str, int] = {}  # credential -> requests opening a session now
        self.under_way: dict[str, int] = {}  # session id -> its requests (and streams) under way

    async def __call__(self, scope, receive, send):
        live = getattr(self.manager, "_server_instances", None)
        if scope["type"] != "http" or live is None:  # not a request, or an SDK whose sessions we cannot see
            return await self.app(scope, receive, send)
        credential = scope.get(CREDENTIAL, "open")
        sessions = self.sessions.setdefault(credential, OrderedDict())
        for ended in [session for session in sessions if session not in live]:
            del sessions[ended]
            self.under_way.pop(ended, None)
        given = dict(scope.get("headers") or []).get(b"mcp-session-id")
        if given is not None:
            session = given.decode("latin-1")
            if session not in sessions:  # another person's session, or one that ended
                if any(session in theirs for theirs in self.sessions.values()):
                    return await _json_error(send, 404, "no such MCP session: open one (initialize)")
                return await self.app(scope, receive, send)
            sessions[session] = time.monotonic()
            sessions.move_to_end(session)
            self.under_way[session] = self.under_way.get(session, 0) + 1
            try:
                return await self.app(scope, receive, send)
            finally:
                if session in self.under_way:
                    self.under_way[session] -= 1
                if session in sessions:
                    sessions[session] = time.monotonic()
        if len(sessions) + self.opening.get(credential, 0) >= self.cap and not await self._end_oldest_idle(sessions):
            incident("refused a new MCP session: %d are open for one person and all are in use", self.cap)
            return await _json_error(send, 503, f"{self.cap} MCP sessions are open for this token and all are in "
                                                "use: end one (DELETE /mcp) or try again later")

        async def sending(message):
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = dict(message.get("headers") or []).get(b"mcp-session-id")
                if opened:
                    sessions[opened.decode("latin-1")] = time.monotonic()
            await send(message)

        self.opening[credential] = self.opening.get(credential, 0) + 1
        try:
            await self.app(scope, receive, sending)
        finally:
            self.opening[credential] -= 1

    async def _end_oldest_idle(self, sessions: OrderedDict) -> bool:
        live = self.manager._server_instances
        now = time.monotonic()
        for session, used in list(sessions.items()):
            if self.under_way.get(session, 0) or now - used < MCP_ACTIVE_SECONDS:
                continue  # in use
            del sessions[session]
            self.under_way.pop(session, None)
            transport = live.get(session)
            if transport is not None:
                incident("ended the MCP sessions unused longest to make room for new ones (%d per person)", self.cap)
                await self.manager._discard_session(session, transport)
            return True
        return False


def read_token(path: Path) -> str:
    """The token of a token file in the older form (one token alone), made as serve.py makes a missing one."""
    from .team import read_tokens

    people = read_tokens(path)
    if len(people) != 1:
        raise UsageError(f"the token file {path} names {len(people)} people: read it with team.read_tokens")
    return next(iter(people.values()))


# --- the headers every answer carries ---------------------------------------------------------------

# Scripts and styles from this server only, no inline script or style; nothing loaded from elsewhere; no page
# framed by another site; no address sent to another site (a same-origin Referer still goes with this
# server's own forms and fetches).
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
SECURITY_HEADERS = ((b"content-security-policy", POLICY.encode()), (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"))


class SecurityHeaders:
    """ASGI middleware: every answer, whoever gives it (a route, the guard, the MCP transport, an error), carries
    SECURITY_HEADERS, in place of any of the same name."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        names = {name for name, _ in SECURITY_HEADERS}

        async def sending(message):
            if message["type"] == "http.response.start":
                kept = [(name, value) for name, value in message.get("headers") or [] if name.lower() not in names]
                message = {**message, "headers": [*kept, *SECURITY_HEADERS]}
            await send(message)

        return await self.app(scope, receive, sending)


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
