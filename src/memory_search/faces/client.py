"""Hand a read-only script's run to the warm helper, with the standard library only.

The scripts' launcher (launch.py) imports this module first. When a helper of this configuration is
up, the script's argv, working directory and per-call environment go to it over a Unix socket; the
helper runs the same command in-process and sends back the exact bytes of stdout and stderr and the
exit code, which are written out here. No re-exec, no third-party import. When no helper answers, or anything looks
unexpected, the caller carries on in-process as if this module did not exist.

Wire format, version 2 (one request and one reply per connection):
  request: one line of JSON: {"protocol": 2, "identity": HEX, "script": NAME, "argv": [...],
           "cwd": DIR, "env": {NAME: VALUE} (PER_CALL names only), "stdout": {"tty": BOOL, "errors": STR},
           "stderr": {...}}; or {"protocol": 2, "identity": HEX, "stop": true}; or {"protocol": 2, "ping": true}
  reply:   the line `memory-search-helper/2 accepted` as soon as the request is read (the handshake), then
           one ASCII line `memory-search-helper/2 STATUS EXIT OUT ERR`, then the output as segments in
           the order it was written, each `o` or `e` (stdout, stderr), its length in ASCII digits, a newline
           and that many bytes; OUT and ERR are the byte totals of each stream. STATUS is ok, refused
           (another configuration, unknown script, bad request), stopped or pong; only ok carries output.

A helper that does not complete the handshake within HANDSHAKE_SECONDS (stopped, deadlocked, swapped
out) is bypassed: the script says so in one line on stderr, runs in-process, and the helper it starts
for the next call replaces the stuck one (helper.py ends it by its pid file).

Secrets never cross the socket: the database URL, the provider, the model and the API key are not
sent, only a hash of them (the configuration identity) that names the helper's socket and that the
helper compares with its own. The socket folder must belong to the user with mode 0700; any other
folder is ignored and no request is sent.
"""

import os
import sys

HELPED = ("search", "recent", "stats", "similar")  # the read-only scripts a warm helper may answer
PROTOCOL = 2
REPLY_MAGIC = b"memory-search-helper/2"
ACCEPTED = REPLY_MAGIC + b" accepted\n"
HANDSHAKE_SECONDS = 1.0  # to connect, send the request and hear it accepted: a working helper takes milliseconds
REPLY_TIMEOUT = 120.0
# What a reply may take after the handshake, by script: a search, a listing of recent records or a look for similar
# ones takes well under a second in a warm helper; one still silent after its budget (its pooled database
# connection hung, say) is bypassed as a stuck one is, and the call runs in-process. stats (--verify reads every
# file) keeps REPLY_TIMEOUT.
REPLY_BUDGET = {"search": 10.0, "similar": 10.0, "recent": 10.0}
STUCK = "stuck"  # what _exchange returns for a helper that accepts connections but does not answer
LATE = "late"  # ... for one that took the request but sent no whole reply within its budget
MAX_REPLY_BYTES = 64 << 20
MAX_SOCKET_PATH = 100  # bytes; a Unix socket address holds 108
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The package's folders of modules, relative to PACKAGE_DIR.
CODE_DIRS = ("", "directory", "storage", "indexing", "search", "embedding", "faces")

# What a run reads from the environment besides the configuration: sent with each request.
PER_CALL = ("MEMORIES_DIR", "MEMORIES_TABLE", "MEMORIES_DEBUG", "MEMORIES_SETUP_HINT", "MEMORIES_AUTO_INDEX", "COLUMNS",
            "LINES", "MEMORIES_CLAUDE_CODE", "CLAUDE_CONFIG_DIR")
# What selects the database, the model and the key, and so the helper: hashed, never sent. The search
# log's switch and folder are here too, so a caller that does not log is never served by a helper that does.
CONFIGURATION = ("MEMORIES_DATABASE_URL", "COCOINDEX_DATABASE_URL", "MEMORIES_EMBEDDING_PROVIDER",
                 "MEMORIES_EMBEDDING_MODEL", "VOYAGE_API_KEY", "MEMORIES_VOYAGE_BASE_URL", "MEMORIES_DATA_DIR",
                 "XDG_DATA_HOME", "HOME", "TZ", "MEMORIES_SEARCH_LOG", "XDG_STATE_HOME")
PATHS = ("MEMORIES_DATA_DIR", "XDG_DATA_HOME", "HOME", "XDG_STATE_HOME")  # made absolute before hashing


START, REPLACE = "start", "replace"  # what answer() asks of the in-process run


def answer(script: str) -> str:
    """Write the helper's answer and exit when a helper of this configuration serves `script` (search,
    recent, stats or similar).

    Otherwise return what the in-process run should do for the next call: START a helper (none is
    listening), REPLACE the one that did not answer (after saying so on stderr), or "" (helpers are
    disabled, the folder is not private, or a helper answered badly)."""
    environ = os.environ
    if _disabled(environ, sys.argv[1:]):
        return ""
    try:
        cwd = os.getcwd()
        folder = private_folder(environ)
    except OSError:
        return ""
    if folder is None:
        return ""
    if not (environ.get("MEMORIES_NO_DAEMON") or "").strip() and _dotenv_disables(dotenv_bytes(environ, cwd)):
        return ""
    if folder == "":
        return START  # no folder yet: the helper creates it
    name = identity(environ, cwd)
    path = os.path.join(folder, socket_name(name))
    if len(path.encode()) > MAX_SOCKET_PATH:
        return ""  # no helper can listen there
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return START
    except OSError:
        return ""
    if not _is_own_socket(status):
        return ""
    budget = REPLY_BUDGET.get(script, REPLY_TIMEOUT)
    reply = _exchange(path, _request(script, name, cwd, environ), reply_timeout=budget)
    if reply is None:
        return START  # nobody listening on a left-over socket
    if reply is STUCK or reply is LATE:
        waited = HANDSHAKE_SECONDS if reply is STUCK else budget
        _say(f"{script}.py: warning: the warm helper did not answer within {waited:.0f} s: running "
             "without it (a new helper replaces it)")
        return REPLACE
    parsed = parse_reply(reply)
    if parsed is None or parsed[0] != "ok":
        return ""
    _, code, segments = parsed
    _write_and_exit(segments, code)
    return ""  # not reached


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _disabled(environ, args) -> bool:
    if _truthy(environ.get("MEMORIES_NO_DAEMON")) or _truthy(environ.get("MEMORIES_DEBUG")):
        return True  # MEMORIES_DEBUG shows tracebacks: those come from an in-process run
    if "--no-daemon" in args:
        return True
    for stream in (sys.stdout, sys.stderr):  # the helper writes UTF-8, as the in-process run would here
        encoding = getattr(stream, "encoding", None) or ""
        if stream is None or encoding.lower().replace("-", "") != "utf8":
            return True
    return False


def _truthy(value) -> bool:
    return bool(value) and value.strip().lower() not in ("", "0", "false", "no", "off")


# --- the folder, the identity and the socket name (shared with the helper) ---------------------------

def runtime_base(environ) -> str:
    return environ.get("XDG_RUNTIME_DIR") or environ.get("TMPDIR") or "/tmp"


def folder_path(environ) -> str:
    return os.path.join(runtime_base(environ), f"memory-search-{os.getuid()}")


def private_folder(environ):
    """The socket folder when it is the user's own with mode 0700; "" when it does not exist; None otherwise."""
    path = folder_path(environ)
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return ""
    import stat

    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or stat.S_IMODE(status.st_mode) != 0o700:
        return None
    return path


def _is_own_socket(status) -> bool:
    import stat

    return stat.S_ISSOCK(status.st_mode) and status.st_uid == os.getuid()


def code_version() -> str:
    """Changes whenever a module of the package changes."""
    parts = []
    for directory in (os.path.join(PACKAGE_DIR, folder) for folder in CODE_DIRS):
        try:
            names = sorted(name for name in os.listdir(directory) if name.endswith(".py"))
        except OSError:
            names = []
        for name in names:
            try:
                status = os.stat(os.path.join(directory, name))
            except OSError:
                continue
            parts.append(f"{directory}/{name}:{status.st_size}:{status.st_mtime_ns}")
    return _digest("\n".join(parts))


def identity(environ, cwd: str) -> str:
    """A hash of everything that selects the database, the embedding model and the key, and of the code."""
    parts = [f"protocol={PROTOCOL}", f"code={code_version()}"]
    for name in CONFIGURATION:
        value = (environ.get(name) or "").strip()
        if value and name in PATHS and not value.startswith("~"):
            value = os.path.normpath(os.path.join(cwd, value))
        parts.append(f"{name}={value}")
    dotenv = dotenv_bytes(environ, cwd)  # Settings.from_env reads this file too: part of the configuration
    parts.append("dotenv=" + (_digest(dotenv) if dotenv is not None else ""))
    return _digest("\n".join(parts))


def dotenv_bytes(environ, cwd: str):
    """~/.config/cocoindex/.env as bytes, None when absent."""
    home = (environ.get("HOME") or "").strip() or os.path.expanduser("~")
    try:
        with open(os.path.join(cwd, home, ".config/cocoindex/.env"), "rb") as dotenv:
            return dotenv.read()
    except OSError:
        return None


def _dotenv_disables(content) -> bool:
    """MEMORIES_NO_DAEMON set in the .env file (when the environment does not set it)."""
    if not content or b"MEMORIES_NO_DAEMON" not in content:
        return False
    for line in content.decode("utf-8", "replace").splitlines():
        key, _, value = line.strip().removeprefix("export ").partition("=")
        if key.strip() == "MEMORIES_NO_DAEMON":
            return _truthy(value.split(" #")[0].strip().strip("'\""))
    return False


def socket_name(identity_hex: str) -> str:
    return f"{identity_hex[:20]}.sock"


def _digest(data) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    try:
        from _sha256 import sha256  # Python 3.10-3.11: no OpenSSL to load
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12+
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


# --- one exchange -------------------------------------------------------------------------------

def _request(script: str, name: str, cwd: str, environ) -> bytes:
    env = {key: environ[key] for key in PER_CALL if key in environ}
    if "COLUMNS" not in env:  # click sizes --help to the terminal, which the helper does not have
        try:
            if sys.__stdout__ is not None:  # None: Python started without a standard output
                env["COLUMNS"] = str(os.get_terminal_size(sys.__stdout__.fileno()).columns)
        except (AttributeError, ValueError, OSError):
            pass
    streams = {}
    for label, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError, OSError):
            tty = False
        streams[label] = {"tty": tty, "errors": getattr(stream, "errors", None) or "strict"}
    message = {"protocol": PROTOCOL, "identity": name, "script": script, "argv": list(sys.argv[1:]), "cwd": cwd,
               "env": env, **streams}
    return encode(message).encode("ascii") + b"\n"


def encode(value) -> str:
    """JSON, without importing json (whose import costs more than the whole exchange)."""
    try:
        from _json import encode_basestring_ascii as string
    except ImportError:
        import json

        return json.dumps(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(encode(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{string(str(key))}: {encode(item)}" for key, item in value.items()) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")


def _exchange(path: str, request: bytes, reply_timeout: float = REPLY_TIMEOUT):
    """The raw reply after the handshake, b"" when the helper broke off, None when nobody listens, STUCK when
    the helper does not connect, take the request and say it accepted it within HANDSHAKE_SECONDS, LATE when
    its whole reply has not come within reply_timeout after that."""
    import _socket
    from time import monotonic

    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    deadline = monotonic() + HANDSHAKE_SECONDS
    try:
        connection.settimeout(HANDSHAKE_SECONDS)
        try:
            connection.connect(path)
        except _socket.timeout:
            return STUCK  # its backlog is full: it accepts nobody
        except OSError:
            return None
        chunks = []
        try:
            connection.settimeout(max(0.001, deadline - monotonic()))
            connection.sendall(request)
            head = b""
            while len(head) < len(ACCEPTED):
                connection.settimeout(max(0.001, deadline - monotonic()))
                chunk = connection.recv(1 << 16)
                if not chunk:
                    return b""
                head += chunk
        except _socket.timeout:
            return STUCK
        except OSError:
            return b""
        if not head.startswith(ACCEPTED):
            return b""
        chunks.append(head[len(ACCEPTED):])
        size = len(chunks[0])
        end = monotonic() + reply_timeout
        try:
            while True:
                connection.settimeout(max(0.001, end - monotonic()))  # a reply trickled byte by byte ends too
                chunk = connection.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    return b""
        except _socket.timeout:
            return LATE
        except OSError:
            return b""
        return b"".join(chunks)
    finally:
        connection.close()


def parse_reply(reply: bytes):
    """(status, exit code, [(1 or 2, bytes), ...]), or None when the reply is not well formed."""
    head, newline, body = reply.partition(b"\n")
    fields = head.split(b" ")
    if not newline or len(fields) != 5 or fields[0] != REPLY_MAGIC:
        return None
    try:
        status = fields[1].decode("ascii")
        code, out_size, err_size = (int(field) for field in fields[2:])
    except (UnicodeDecodeError, ValueError):
        return None
    if not 0 <= code <= 255:
        return None
    segments, totals, position = [], {1: 0, 2: 0}, 0
    while position < len(body):
        stream = {b"o"[0]: 1, b"e"[0]: 2}.get(body[position])
        end = body.find(b"\n", position)
        if stream is None or end < 0 or not body[position + 1:end].isdigit():
            return None
        size = int(body[position + 1:end])
        data = body[end + 1:end + 1 + size]
        if len(data) != size:
            return None
        segments.append((stream, data))
        totals[stream] += size
        position = end + 1 + size
    if totals != {1: out_size, 2: err_size}:
        return None
    return status, code, segments


def _write_and_exit(segments, code: int) -> None:
    """Replay the output in the order it was written, so a shared terminal or 2>&1 sees the same bytes."""
    streams = {1: sys.stdout, 2: sys.stderr}
    try:
        for number, data in segments:
            stream = streams[number]
            stream.flush()
            stream.buffer.write(data)
            stream.buffer.flush()
    except BrokenPipeError:
        code = 0  # as the in-process run: a closed pipe ends the output quietly
    os._exit(code)  # nothing left to clean up; skipping interpreter teardown saves milliseconds
