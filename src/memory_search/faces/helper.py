"""The warm helper: one process per configuration that runs the read-only scripts warm.

client.py (standard library only) sends it a script's argv, working directory and per-call
environment; the helper runs the script's own click command in-process, with a Console of the
request's own streams, environment and working directory, and sends back the exact bytes of stdout
and stderr and the exit code (the wire format is described in client.py). It keeps the embedding
model and a small pool of read-only database connections between calls (resources.Resources).

One helper serves one configuration (database, provider, model, key, data dir, code version): its
socket is named by a hash of that configuration, and a request carrying another hash is refused.
Secrets reach it only through its own environment, inherited from the run that started it. Requests
are handled concurrently, each on its own thread with a deadline for reading the request, so a client
that stalls delays nobody; each request is acknowledged as soon as it is read (the handshake client.py
waits for). Idle helpers exit; at most helper_processes.MAX_HELPERS run at once per user.

Each helper writes its pid beside its socket, by which helper_processes.py finds and ends it."""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TextIO, cast

from . import client
from .helper_processes import STOP_GRACE, answers, end, evict_beyond_cap, own_helper_pid

IDLE_SECONDS = 15 * 60
MAX_RUNNING = 4  # requests run at once, and so database connections held
MAX_OPEN = 64  # connections accepted and not yet answered
REQUEST_DEADLINE = 2.0  # seconds a client has to send its whole request
SEND_DEADLINE = 10.0
MAX_REQUEST_BYTES = 1 << 20
SCRIPTS = {name: f"{name}.py" for name in client.HELPED}


def runtime_dir(environ=None) -> Path:
    return Path(client.folder_path(os.environ if environ is None else environ))


def socket_path(environ=None, cwd: str | None = None) -> Path:
    """This configuration's socket: named by the hash of the configuration."""
    environ = os.environ if environ is None else environ
    identity = client.identity(environ, cwd or os.getcwd())
    return Path(client.folder_path(environ)) / client.socket_name(identity)


# --- a request's output -------------------------------------------------------------------------

class _Output:
    """A request's output as (stream, bytes) segments in the order written."""

    def __init__(self) -> None:
        self.segments: list[list] = []
        self.totals = {"o": 0, "e": 0}

    def add(self, stream: str, data: bytes) -> None:
        if not data:
            return
        if self.segments and self.segments[-1][0] == stream:
            self.segments[-1][1] += data
        else:
            self.segments.append([stream, bytearray(data)])
        self.totals[stream] += len(data)

    def wire(self) -> bytes:
        return b"".join(stream.encode() + str(len(data)).encode() + b"\n" + bytes(data)
                        for stream, data in self.segments)


class _Stream(io.TextIOBase):
    """One of a request's streams, encoded as the client's would encode it."""

    encoding = "utf-8"

    def __init__(self, output: _Output, segment: str, errors: str, tty: bool):
        self.output, self.segment, self._errors, self.tty = output, segment, errors, tty

    @property  # io.TextIOBase's errors is read-only at run time; typeshed has it as a plain attribute
    def errors(self) -> str:  # type: ignore[override]
        return self._errors

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.output.add(self.segment, text.encode(self.encoding, self._errors))
        return len(text)

    def isatty(self) -> bool:
        return self.tty

    def writable(self) -> bool:
        return True


# --- the server ---------------------------------------------------------------------------------

class Helper:
    def __init__(self, identity: str, path: Path, idle_seconds: float):
        from ..resources import Resources

        self.identity = identity
        self.path = path
        self.idle_seconds = idle_seconds
        self.code = client.code_version()
        self.resources = Resources(MAX_RUNNING)
        self.running = threading.BoundedSemaphore(MAX_RUNNING)
        self.open_slots = threading.BoundedSemaphore(MAX_OPEN)
        self.busy = 0
        self.busy_lock = threading.Lock()
        self.last_used = time.monotonic()
        self.stopping = threading.Event()
        self.inode: int | None = None  # the socket's, once it listens

    def warm_up(self) -> None:
        """Load the model and open a connection for the directory the helper was started for."""
        from ..config import Settings

        try:
            with self.resources.open(Settings.from_env()) as memories:
                memories.warm_up()
        except Exception:
            pass  # a wrong directory or an absent index: the first real request will say so

    def serve(self, server: socket.socket) -> None:
        server.settimeout(1.0)
        while not self.stopping.is_set():
            try:
                connection, _ = server.accept()
            except socket.timeout:
                if self._should_exit():
                    return
                continue
            except OSError:
                return
            if not self.open_slots.acquire(blocking=False):
                connection.close()  # too many at once: those clients run in-process
                continue
            with self.busy_lock:
                self.busy += 1
                self.last_used = time.monotonic()
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def drain(self, timeout: float = SEND_DEADLINE) -> None:
        """Let the requests under way finish before their connections close."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.busy_lock:
                if not self.busy:
                    return
            time.sleep(0.05)

    def _should_exit(self) -> bool:
        with self.busy_lock:
            idle = not self.busy and time.monotonic() - self.last_used > self.idle_seconds
        if idle or client.code_version() != self.code:
            return True  # idle, or the code changed: a new helper serves the new code
        try:  # the socket was removed or replaced: nobody can reach this helper any more
            return self.path.stat().st_ino != self.inode
        except OSError:
            return True

    def _handle(self, connection: socket.socket) -> None:
        try:
            with connection:
                message = _read_request(connection)
                connection.settimeout(SEND_DEADLINE)
                connection.sendall(client.ACCEPTED)  # the handshake: this helper is alive and has the request
                reply = self._reply(message) if message is not None else _header("refused", 0, 0)
                connection.sendall(reply)
        except OSError:
            pass
        finally:
            with self.busy_lock:
                self.busy -= 1
                self.last_used = time.monotonic()
            self.open_slots.release()

    def _reply(self, message: dict) -> bytes:
        protocol = client.PROTOCOL
        if not isinstance(message, dict) or message.get("protocol") != protocol:
            return _header("refused", 0, 0)
        if message.get("ping"):
            return _header("pong", 0, 0)
        if message.get("stop"):
            self.stopping.set()
            return _header("stopped", 0, 0)
        request = _valid_request(message)
        if request is None or message.get("identity") != self.identity:
            return _header("refused", 0, 0)  # another configuration, or not a request we know
        try:
            os.utime(self.path)  # the last use, for eviction
        except OSError:
            pass
        with self.running:
            code, output = self.run(request)
        if code is None:
            return _header("refused", 0, 0)
        return _header("ok", code, output.totals["o"], output.totals["e"]) + output.wire()

    def run(self, request: dict):
        """(exit code, _Output) of the script's command, or (None, None) on trouble."""
        from .cli import COMMANDS
        from .console import Console, run

        if not os.path.isdir(request["cwd"]):
            return None, None
        output = _Output()
        environ = {key: value for key, value in os.environ.items() if key not in client.PER_CALL}
        environ.update(request["env"])
        try:
            columns = int(environ.get("COLUMNS") or 0) or None
        except ValueError:
            columns = None
        # A _Stream does all Console asks of a text stream (write, flush, isatty, encoding, errors); to mypy an
        # io.TextIOBase is no typing.TextIO.
        console = Console(stdout=cast(TextIO, _Stream(output, "o", request["stdout"]["errors"],
                                                      request["stdout"]["tty"])),
                          stderr=cast(TextIO, _Stream(output, "e", request["stderr"]["errors"],
                                                      request["stderr"]["tty"])),
                          environ=environ, cwd=request["cwd"], resources=self.resources, columns=columns)
        name = request["script"]
        try:
            code = run(COMMANDS[name], SCRIPTS[name], args=request["argv"], console=console, exits=False)
        except SystemExit as done:
            code = _exit_code(done.code, output)
        except BaseException:  # noqa: BLE001 - a helper's own failure: the caller runs in-process
            return None, None
        return code, output


def _exit_code(code, output: _Output) -> int:
    """As the interpreter maps sys.exit's argument to a status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    output.add("e", f"{code}\n".encode("utf-8", "backslashreplace"))
    return 1


def _header(status: str, code: int, out: int, err: int = 0) -> bytes:
    return client.REPLY_MAGIC + f" {status} {code} {out} {err}\n".encode("ascii")


def _read_request(connection: socket.socket):
    """The request's JSON object, or None when the client is too slow, too long-winded or unreadable."""
    deadline = time.monotonic() + REQUEST_DEADLINE
    chunks, size = [], 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        connection.settimeout(remaining)
        try:
            chunk = connection.recv(1 << 16)
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            return None
        if chunk.endswith(b"\n"):
            break
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return None


def _valid_request(message: dict):
    """The request's fields when they have the expected shapes; None otherwise."""
    script, argv, cwd, env = message.get("script"), message.get("argv"), message.get("cwd"), message.get("env")
    if script not in SCRIPTS or not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
        return None
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or not isinstance(env, dict):
        return None
    per_call = client.PER_CALL
    if not all(key in per_call and isinstance(value, str) for key, value in env.items()):
        return None
    streams = {}
    for label in ("stdout", "stderr"):
        stream = message.get(label)
        if not isinstance(stream, dict) or not isinstance(stream.get("tty"), bool):
            return None
        errors = stream.get("errors")
        if errors not in ("strict", "surrogateescape", "backslashreplace", "replace", "ignore", "xmlcharrefreplace",
                          "namereplace", "surrogatepass"):
            return None
        streams[label] = {"tty": stream["tty"], "errors": errors}
    return {"script": script, "argv": argv, "cwd": cwd, "env": env, **streams}


def serve(idle_seconds: float = IDLE_SECONDS, warm: bool = False, replace: bool = False) -> None:
    import signal

    environ = os.environ
    base = client.runtime_base(environ)
    folder = Path(client.folder_path(environ))
    if not os.path.isdir(base):
        return
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return
    if not client.private_folder(environ):
        return  # not the user's own 0700 folder: never listen there
    identity = client.identity(environ, os.getcwd())
    path = folder / client.socket_name(identity)
    if len(str(path).encode()) > client.MAX_SOCKET_PATH:
        return  # beyond what a Unix socket address can hold
    os.umask(0o077)
    lock = open(folder / (path.stem + ".lock"), "w")
    if not _lock(lock, path, replace):
        lock.close()
        return  # this configuration's helper already runs and answers
    pid_file = path.with_suffix(".pid")
    _write_pid(pid_file)
    # Everything slow comes before listening: a client that connects is answered at once, and one that finds no
    # socket meanwhile runs in-process, rather than waiting out the handshake and taking this helper for stuck.
    helper = Helper(identity, path, idle_seconds)
    signal.signal(signal.SIGTERM, lambda *_: helper.stopping.set())  # db.py stop: finish what is under way
    evict_beyond_cap(folder, path)
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(MAX_OPEN)
    helper.inode = path.stat().st_ino
    if warm:
        threading.Thread(target=helper.warm_up, daemon=True).start()
    try:
        helper.serve(server)
    finally:
        server.close()
        helper.drain()
        try:
            if path.stat().st_ino == helper.inode:
                path.unlink()
                os.unlink(lock.name)
        except OSError:
            pass
        try:
            if pid_file.read_text(encoding="ascii").strip() == str(os.getpid()):
                pid_file.unlink()
        except (OSError, UnicodeDecodeError):
            pass
        helper.resources.close()
        lock.close()


def _lock(lock, path: Path, replace: bool) -> bool:
    """Take this configuration's lock. When another helper holds it and `replace` is asked, that helper is
    ended if it does not answer now (it may have recovered since the caller gave up on it), and the lock taken."""
    import fcntl

    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        if not replace or answers(path):
            return False
    stuck = own_helper_pid(path.with_suffix(".pid"))
    if stuck is not None:
        end([stuck], grace=0.5)
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _write_pid(pid_file: Path) -> None:
    temporary = pid_file.with_name(f".{pid_file.name}.{os.getpid()}")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(f"{os.getpid()}\n")
        os.replace(temporary, pid_file)
    except OSError:
        temporary.unlink(missing_ok=True)


if __name__ == "__main__":
    serve(float(os.environ.get("MEMORIES_HELPER_IDLE", IDLE_SECONDS)), warm="--warm" in sys.argv[1:],
          replace="--replace" in sys.argv[1:])
