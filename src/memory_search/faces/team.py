"""Who may use a server in team mode: the people of its token file, and their browser sessions.

The token file holds one person a line, `NAME TOKEN` (`#` starts a comment); a file whose only line is a token
alone is the older form: one person, named `team`. The file is read again whenever it changes (checked at each
request), so removing a person's line revokes their token, and ends their browser sessions, at their next
request. A file that becomes unreadable or malformed refuses everyone until it is fixed.

A browser signs in at /signin with a person's token: the form carries an anti-forgery token tied to a
pre-session cookie this server set (HMAC of that cookie under a key of this process), so no other site can
post it, whatever Origin or Referer the browser sends. A good token starts a session: a random id, kept here
(hashed) with the person it belongs to, sent as a cookie that is not the token, named after the server's port
so that a second server on the same host keeps its own (cookies ignore ports). POST /signout ends it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import parse_qs, quote

from ..errors import UsageError

# The server's log (http_guard.quiet_logging keeps each distinct line to one a minute).
_log = logging.getLogger("memory_search.http")

UNNAMED = "team"  # the person of a token file in the older form: one token, no name
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
MIN_TOKEN = 16
SESSION_SECONDS = 7 * 24 * 3600  # a browser session lasts a week, then the person signs in again
SIGNIN_SECONDS = 3600  # a sign-in form is good for an hour
SESSIONS_PER_PERSON = 64  # browser sessions kept per person; the oldest ends first
FORM_LIMIT = 4096  # bytes of a sign-in form read at most
PERSON = "memory_search.person"  # the ASGI scope key naming the person a request authenticated as
TEAM = "memory_search.team"  # the ASGI scope key holding the Team (for the sign-in routes)
STATIC = Path(__file__).resolve().parent.parent / "static"


def read_tokens(path: Path) -> dict[str, str]:
    """{person: token} of the token file at `path`, which must be a regular file of the user's own that others
    cannot read; a missing file is created with one random token (the older form), mode 0600. Raises
    UsageError saying what is wrong."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    except OSError as error:
        raise UsageError(f"cannot create the token file {path} ({error.strerror})") from None
    else:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
    return _parse(path, _read_private(path))


def _read_private(path: Path) -> str:
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
        return handle.read(1 << 20)


def _parse(path: Path, text: str) -> dict[str, str]:
    lines = [(number, line.split()) for number, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if len(lines) == 1 and len(lines[0][1]) == 1:
        lines = [(lines[0][0], [UNNAMED, lines[0][1][0]])]
    people: dict[str, str] = {}
    for number, words in lines:
        where = f"{path}, line {number}"
        if len(words) != 2:
            raise UsageError(f"{where}: write one person a line, NAME TOKEN (a single token alone is allowed only "
                             "as the file's one line)")
        name, token = words
        if not NAME.match(name):
            raise UsageError(f"{where}: the name {name[:40]!r} must be letters, digits and . _ @ -")
        if len(token) < MIN_TOKEN:
            raise UsageError(f"{where}: the token is too short: use at least {MIN_TOKEN} characters")
        if name in people:
            raise UsageError(f"{where}: {name} is named twice: give each person one line")
        if token in people.values():
            raise UsageError(f"{where}: that token is another person's too: give each person their own")
        people[name] = token
    if not people:
        raise UsageError(f"the token file {path} holds no token: add a line NAME TOKEN")
    return people


def fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


class Tokens:
    """The people and tokens of a token file, read again when the file changes (checked at most every
    RECHECK_SECONDS); or a fixed set (`people`) for a server made in code."""

    RECHECK_SECONDS = 0.0  # at every request: a stat call is cheap, and a revocation takes hold at once

    def __init__(self, path: Path | None = None, people: dict[str, str] | None = None, warn=None):
        self.path = path
        self.warn = warn or (lambda message: None)
        self._lock = threading.Lock()
        self._seen: tuple | None = None
        self._checked = 0.0
        self._people: dict[str, str] = dict(people or {})
        if path is not None:
            self._people = read_tokens(path)  # at start a bad file is an error the user sees at once
            self._seen = self._signature()

    @classmethod
    def single(cls, token: str) -> "Tokens":
        return cls(people={UNNAMED: token})

    def _signature(self) -> tuple | None:
        if self.path is None:
            return None
        try:
            status = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        return status.st_ino, status.st_mtime_ns, status.st_size, status.st_mode, status.st_uid

    def people(self) -> dict[str, str]:
        if self.path is None:
            return self._people
        now = time.monotonic()
        with self._lock:
            if now - self._checked >= self.RECHECK_SECONDS:
                self._checked = now
                signature = self._signature()
                if signature != self._seen:
                    self._seen = signature
                    try:
                        self._people = _parse(self.path, _read_private(self.path)) if signature else {}
                        if not signature:
                            raise UsageError(f"the token file {self.path} is gone")
                    except UsageError as error:
                        self._people = {}
                        self.warn(f"every token refused until the token file is fixed: {error}")
            return self._people

    def who(self, token: str) -> str | None:
        """The person whose token this is, or None."""
        found = None
        given = token.encode()
        for name, known in self.people().items():  # every one compared, in constant time each
            if hmac.compare_digest(given, known.encode()):
                found = name
        return found

    def current(self, name: str, token_print: str) -> bool:
        """Whether `name` still holds the token with this fingerprint (not revoked, not replaced)."""
        token = self.people().get(name)
        return token is not None and hmac.compare_digest(fingerprint(token), token_print)


@dataclass
class Session:
    person: str
    token_print: str
    expires: float


class Team:
    """Tokens, browser sessions and the sign-in form's anti-forgery tokens of one server."""

    def __init__(self, tokens: Tokens, port: int):
        self.tokens = tokens
        self.cookie = f"memory_search_{port}"  # cookies ignore ports: one name per server on the host
        self.signin_cookie = f"memory_search_{port}_signin"
        self._key = secrets.token_bytes(32)
        self._sessions: dict[str, Session] = {}  # sha256 of a session id -> its session
        self._lock = threading.Lock()

    # --- sessions -----------------------------------------------------------------------------

    def start(self, person: str) -> str:
        """A new session of `person`; its Set-Cookie header value."""
        session = secrets.token_urlsafe(32)
        token = self.tokens.people().get(person, "")
        now = time.time()
        with self._lock:
            self._drop_expired(now)
            mine = [key for key, held in self._sessions.items() if held.person == person]
            for key in mine[:max(0, len(mine) - SESSIONS_PER_PERSON + 1)]:  # oldest first (insertion order)
                del self._sessions[key]
            self._sessions[_hashed(session)] = Session(person, fingerprint(token), now + SESSION_SECONDS)
        return (f"{self.cookie}={session}; Path=/; Max-Age={SESSION_SECONDS}; HttpOnly; SameSite=Strict")

    def person_of(self, cookie_header: str) -> str | None:
        """The person a request's session cookie names, if that session is live and its token not revoked."""
        value = cookie_value(cookie_header, self.cookie)
        if not value:
            return None
        with self._lock:
            session = self._sessions.get(_hashed(value))
            if session is None:
                return None
            if session.expires < time.time() or not self.tokens.current(session.person, session.token_print):
                del self._sessions[_hashed(value)]
                return None
            return session.person

    def end(self, cookie_header: str) -> str:
        """End the request's session; the Set-Cookie header value that removes the cookie."""
        value = cookie_value(cookie_header, self.cookie)
        if value:
            with self._lock:
                self._sessions.pop(_hashed(value), None)
        return f"{self.cookie}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"

    def _drop_expired(self, now: float) -> None:
        for key in [key for key, held in self._sessions.items() if held.expires < now]:
            del self._sessions[key]

    # --- the sign-in form's anti-forgery token ------------------------------------------------

    def form_token(self, presession: str) -> str:
        return hmac.new(self._key, b"signin:" + presession.encode(), "sha256").hexdigest()

    def form_is_ours(self, cookie_header: str, given: str) -> bool:
        presession = cookie_value(cookie_header, self.signin_cookie)
        return bool(presession) and bool(given) and hmac.compare_digest(self.form_token(presession).encode(),
                                                                        given.encode())


def _hashed(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()


def cookie_value(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value.strip()
    return ""


def own_page(back: str) -> str:
    """`back` when it is a page of this server, else "/"; quoted so nothing can end a header line."""
    if not back.startswith("/") or back.startswith("//") or "\\" in back:
        back = "/"
    return quote(back, safe="/?=&%:@!$'()*+,;~-._")


# --- the routes: GET and POST /signin, POST /signout ------------------------------------------

def signin_routes() -> list:
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    def redirect(location: str, *cookies: str) -> Response:
        response = Response(status_code=303, headers={"location": location, "cache-control": "no-store"})
        for cookie in cookies:
            response.headers.append("set-cookie", cookie)
        return response

    async def form(request):
        team: Team | None = request.scope.get(TEAM)
        if team is None:  # a server without tokens needs no sign-in
            return redirect("/")
        presession = secrets.token_urlsafe(24)
        back = request.query_params.get("next") or "/"
        text = (STATIC / "signin.html").read_text(encoding="utf-8")
        text = text.replace("{{next}}", escape(back, quote=True)).replace("{{csrf}}", team.form_token(presession))
        for notice in ("failed", "expired"):
            text = text.replace("{{%s}}" % notice, "" if request.query_params.get(notice) else "hidden")
        response = HTMLResponse(text, headers={"cache-control": "no-store"})
        response.headers.append("set-cookie", f"{team.signin_cookie}={presession}; Path=/signin; "
                                              f"Max-Age={SIGNIN_SECONDS}; HttpOnly; SameSite=Strict")
        return response

    async def sign_in(request):
        team: Team | None = request.scope.get(TEAM)
        if team is None:
            return redirect("/")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > FORM_LIMIT:
                break
        fields = parse_qs(body[:FORM_LIMIT].decode("utf-8", "replace"))
        given, back = fields.get("token", [""])[-1].strip(), own_page(fields.get("next", ["/"])[-1])
        cookies = request.headers.get("cookie", "")
        if not team.form_is_ours(cookies, fields.get("csrf", [""])[-1]):
            _log.warning("refused a sign-in without this server's form token (another site's form, or an old one)")
            return redirect(f"/signin?expired=1&next={quote(back, safe='')}")
        person = team.tokens.who(given) if given else None
        if person is None:
            _log.warning("refused a sign-in with a wrong token")
            return redirect(f"/signin?failed=1&next={quote(back, safe='')}")
        spent = f"{team.signin_cookie}=; Path=/signin; Max-Age=0; HttpOnly; SameSite=Strict"
        return redirect(back, team.start(person), spent)

    async def sign_out(request):
        team: Team | None = request.scope.get(TEAM)
        if team is None:
            return redirect("/")
        return redirect("/signin", team.end(request.headers.get("cookie", "")))

    return [Route("/signin", form, methods=["GET"]), Route("/signin", sign_in, methods=["POST"]),
            Route("/signout", sign_out, methods=["POST"])]
