"""Starting, finding and ending the warm helpers (helper.py), standard library only.

Each helper writes its pid beside its socket (<name>.pid in the private folder). db.py stop, the cap on
helpers and a helper replacing a stuck one end a helper by that pid, answering or not, once the process
is seen to be ours: the pid file is a regular file of ours in our private folder, and the process runs
as us with the helper module's command line."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ..processes import detach_module
from . import client

MAX_HELPERS = 3  # per user: starting another stops the least recently used
STOP_GRACE = 3.0  # seconds a helper asked to stop has before it is killed
MODULE = "memory_search.faces.helper"


def start_in_background(warm: bool = True, environ=None, replace: bool = False) -> None:
    """Start a helper for this configuration, detached; it gives up at once if one already runs and answers.
    replace: the one that runs did not answer; the new one ends it and takes its place."""
    flags = [*(["--warm"] if warm else []), *(["--replace"] if replace else [])]
    detach_module(MODULE, flags, env=environ)


def stop(environ=None) -> bool:
    """End every helper of this user (db.py stop: their connections would break anyway), answering or not:
    each by its pid once it is seen to be ours; a socket with no helper of ours behind it is removed.
    False when none ran."""
    folder = client.private_folder(os.environ if environ is None else environ)
    if not folder:
        return False
    folder = Path(folder)
    ended = end([pid for path in folder.glob("*.pid") if (pid := own_helper_pid(path)) is not None])
    for path in [*folder.glob("*.sock"), *folder.glob("*.pid")]:  # what no helper of ours is behind any more
        if own_helper_pid(path.with_suffix(".pid")) is None:
            path.unlink(missing_ok=True)
    return ended


def own_helper_pid(pid_file: Path):
    """The pid in `pid_file` when that process is a helper of ours, else None. The file must be a regular file
    of this user's (in the private folder the caller checked); the process must run as this user with this
    module's command line, so neither a planted file nor a reused pid makes us signal someone else."""
    import stat

    try:
        status = os.lstat(pid_file)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid() or status.st_size > 32:
            return None
        pid = int(pid_file.read_text(encoding="ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if pid <= 1 or pid == os.getpid():
        return None
    owner, arguments = _process(pid)
    if owner != os.getuid() or arguments is None or MODULE not in arguments or _zombie(pid):
        return None
    return pid


def _process(pid: int) -> tuple[int | None, list[str] | None]:
    """(uid, command-line arguments) of a running process, (None, None) when there is none or it cannot be
    read."""
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return owner, [part.decode("utf-8", "replace") for part in handle.read().split(b"\0")]
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None, None  # /proc is there and the process is not
    except OSError:
        return None, None
    try:  # no /proc (macOS, the BSDs): ps says who runs it and how
        listed = subprocess.run(["ps", "-o", "uid=", "-o", "command=", "-p", str(pid)], capture_output=True,
                                text=True, timeout=5)
        uid, _, command = listed.stdout.strip().partition(" ")
        return int(uid), command.split()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None, None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def end(pids: list[int], grace: float = STOP_GRACE) -> bool:
    """End these helpers: SIGTERM (and SIGCONT, so a stopped one receives it), then SIGKILL for those still
    there after `grace` seconds. True when there were any."""
    import signal

    for pid in pids:
        for number in (signal.SIGTERM, signal.SIGCONT):
            try:
                os.kill(pid, number)
            except OSError:
                pass
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(pids)


def answers(path: Path) -> bool:
    """Whether a helper listens at `path` and completes the handshake in time."""
    reply = client._exchange(str(path), client.encode({"protocol": client.PROTOCOL, "ping": True}).encode() + b"\n",
                             reply_timeout=client.HANDSHAKE_SECONDS)
    return isinstance(reply, bytes) and reply.startswith(client.REPLY_MAGIC + b" pong")


def evict_beyond_cap(folder: Path, own: Path) -> None:
    """End the least recently used helpers so that at most MAX_HELPERS run (a socket's mtime is its last use)."""
    others = []
    for path in folder.glob("*.sock"):
        if path != own:
            try:
                others.append((path.stat().st_mtime, path))
            except OSError:
                pass
    others.sort()
    for _, path in others[:max(0, len(others) - (MAX_HELPERS - 1))]:
        pid = own_helper_pid(path.with_suffix(".pid"))
        if pid is not None:
            end([pid])
        else:
            path.unlink(missing_ok=True)  # no helper of ours behind it: a left-over
