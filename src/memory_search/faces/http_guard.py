"""What stands between the HTTP API and the network: the Host check, the bearer token, a cap on open
connections with a deadline for each request's head, and logging that never floods.

- Host: only the names the server was told it is reached by (the bound address, localhost and 127.0.0.1
  on loopback, --allowed-host names), with or without the port; anything else, a page that rebound its
  own name to 127.0.0.1 for one, gets 400 with no body.
- Token: when one is configured, every route but /api/health needs `Authorization: Bearer TOKEN` (or the
  cookie GET /graph?token=TOKEN sets, for the graph page in a browser); without it, 401. A person signs in
  to the page once with the form at /signin (its POST, from this host only, sets the HttpOnly, SameSite
  cookie; the token never goes in a URL); the page's address without the cookie leads there. The form and
  the page's scripts and styles (/assets/) are open: they hold no data.
- Connections: at most MAX_CONNECTIONS open (fewer when the descriptor limit is low); one more is closed
  at once, so running out of descriptors turns into refusals, not silence. A connection that has not sent
  a whole request head within HEAD_SECONDS of connecting, or of its last answer, is closed.
- Logs: one line per incident, the same line at most once a minute, never a traceback.
"""

from __future__ import annotations

import hmac
import logging
import os
import resource
import secrets
import stat
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import UsageError

MAX_CONNECTIONS = 200
DESCRIPTOR_RESERVE = 64  # for database connections, the model, logs and the listening socket itself
HEAD_SECONDS = 10.0
TOKEN_COOKIE = "memory_search_token"
OPEN = ("/api/health", "/signin")  # answered without the token: a load balancer's probe, the sign-in form
OPEN_PREFIXES = ("/assets/",)  # the page's scripts and styles
SIGN_IN_LIMIT = 4096  # bytes of a sign-in form read at most
_log = logging.getLogger("memory_search.http")


def connection_cap() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft - DESCRIPTOR_RESERVE))


class GuardedH11(H11Protocol):
    """Uvicorn's HTTP/1.1 protocol with a connection cap and a deadline for the request head."""

    cap = MAX_CONNECTIONS

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._head_timer = None
        if len(self.connections) > self.cap:
            incident("refused a connection: %d are open, the most this server keeps", self.cap)
            transport.abort()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._busy():
            self._disarm()  # the head arrived: the request is being answered
        else:
            self._arm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _busy(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        if getattr(self, "_head_timer", None) is None and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_late)

    def _disarm(self) -> None:
        timer, self._head_timer = getattr(self, "_head_timer", None), None
        if timer is not None:
            timer.cancel()

    def _head_late(self) -> None:
        self._head_timer = None
        if not self._busy() and not self.transport.is_closing():
            incident("closed connections that sent no whole request within %.0f s", HEAD_SECONDS)
            self.transport.abort()


class Guard:
    """ASGI middleware: the Host check, then the token."""

    def __init__(self, app, hosts: set[str], token: str | None):
        self.app, self.hosts, self.token = app, {host.lower() for host in hosts}, token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if host not in self.hosts:
            incident("refused requests for a host this server is not: %s", host[:80] or "(none)")
            return await _answer(send, 400, b"", [])
        path, method = scope["path"], scope.get("method", "GET")
        if self.token is not None and method == "POST" and path == "/signin":
            return await self._sign(scope, receive, send, headers)
        if self.token is None or path in OPEN or path.startswith(OPEN_PREFIXES):
            return await self.app(scope, receive, send)
        if scope["path"] in ("/graph", "/graph/") and self._query_token(scope):
            cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()
            return await _answer(send, 303, b"", [(b"location", b"/graph"), (b"set-cookie", cookie)])
        if self._authorized(headers):
            return await self.app(scope, receive, send)
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


def allowed_hosts(host: str, port: int, extra: tuple[str, ...] = ()) -> set[str]:
    """The Host header values the server answers: its names, with and without the port."""
    names = {host, *extra}
    if host in ("127.0.0.1", "::1", "localhost"):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    names = {f"[{name}]" if ":" in name and not name.startswith("[") else name for name in names}
    return {name.lower() for name in names} | {f"{name}:{port}".lower() for name in names}


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
        if record.exc_info:
            error = record.exc_info[1]
            detail = str(error).splitlines()[0][:200] if str(error) else ""
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {detail}"
            record.args, record.exc_info, record.exc_text = None, None, None
        key = f"{record.name}:{record.getMessage()}"
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
                        for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "asyncio", "memory_search")}}
