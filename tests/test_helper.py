"""The warm helper process: same results as without it, private, and bypassed when broken."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS, index, run_process, shared_resources

from memory_search.faces import client, helper, helper_processes


@pytest.fixture
def helper_env(env, monkeypatch):
    """search.py may use the helper; its socket lives in this test's own (short: socket paths are) runtime folder."""
    runtime = tempfile.mkdtemp(prefix="ms-run-", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    monkeypatch.delenv("MEMORIES_NO_DAEMON")
    environment = dict(env, XDG_RUNTIME_DIR=runtime)
    environment.pop("MEMORIES_NO_DAEMON")
    yield environment
    helper_processes.stop()
    # Every helper that was listening exits and removes its socket; what is left nobody listens on.
    assert _wait_until(lambda: not any(_listening(path) for path in helper.runtime_dir().glob("*.sock")), 15)
    shutil.rmtree(runtime, ignore_errors=True)


def _socket_path(environ=None) -> Path:
    return helper.socket_path(environ)


def _listening(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(path))
        return True
    except OSError:
        return False


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _wait_for_helper(timeout: float = 60, environ=None) -> None:
    path = _socket_path(environ)
    if not _wait_until(lambda: _listening(path), timeout):
        raise AssertionError("the helper did not start")


def _start_helper(environ=None) -> None:
    helper_processes.start_in_background(environ=environ)
    _wait_for_helper(environ=environ)


def _only_helper(name: str, *args: str, env: dict, memories=None) -> subprocess.CompletedProcess:
    """Run a script where only the helper can answer: no site-packages and no .venv to re-run under."""
    command = [sys.executable, "-S", str(SCRIPTS / f"{name}.py"), *args]
    if memories is not None:
        command += ["--memories", str(memories.root)]
    return subprocess.run(command, capture_output=True, text=True, env=dict(env, MEMORIES_VENV="/nonexistent"),
                          timeout=120)


@pytest.fixture
def notes(memories):
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees for two minutes.", title="Tea",
                   tags=["kitchen"])
    memories.write("wiki/bread.md", "# パン\n\n強力粉でパンを焼く。発酵は二回。", title="パン")
    memories.session("2026-11-03", "080000", "Kitchen session", "We tried brewing tea colder.", project="home")
    return memories


@pytest.mark.slow  # each query also as a fresh process that loads the model
def test_results_are_the_same_through_the_helper_and_without_it(helper_env, notes):
    index(helper_env, notes)
    queries = [["how hot should tea be"], ["パンの発酵", "--scope", "wiki"], ["tea", "--project", "home", "--explain"]]
    first = [run_process("search", *query, "--format", "json", env=helper_env, memories=notes, check=True).stdout
             for query in queries]  # the first call starts the helper and answers in-process
    _wait_for_helper()
    warm = [_only_helper("search", *query, "--format", "json", env=helper_env, memories=notes).stdout
            for query in queries]
    cold = [run_process("search", *query, "--format", "json", "--no-daemon", env=helper_env, memories=notes,
                       check=True).stdout for query in queries]
    assert first == warm == cold
    assert all(json.loads(output) for output in warm)


def test_the_helper_answers_with_the_library_results(helper_env, notes):
    from memory_search.api import Memories
    from memory_search.config import Settings
    from memory_search.render import hit_dict

    index(helper_env, notes)
    _start_helper()
    through_helper = json.loads(_only_helper("search", "green tea temperature", "--top", "5", "--format", "json",
                                             env=helper_env, memories=notes).stdout)
    with Memories(Settings.from_env().with_overrides(memories_dir=str(notes.root))) as memories:
        in_process = [hit_dict(hit) for hit in memories.search("green tea temperature", top=5)]
    assert through_helper and through_helper == json.loads(json.dumps(in_process, ensure_ascii=False))


def test_errors_come_back_as_they_would_without_the_helper(helper_env, notes, tmp_path):
    index(helper_env, notes)
    helper_processes.start_in_background()
    _wait_for_helper()
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _only_helper("search", "tea", "--memories", str(empty), env=helper_env)
    assert result.returncode == 3 and "index.py" in result.stderr


def test_a_plugin_session_gets_its_own_hint_from_a_helper_started_elsewhere(helper_env, notes):
    index(helper_env, notes)
    _start_helper()  # started from a plain shell: no hint of its own
    result = _only_helper("search", "tea", env={**helper_env, "MEMORIES_DIR": "", "MEMORIES_SETUP_HINT": "set X"})
    assert result.returncode == 3 and result.stderr.endswith("no memories folder is set: set X\n")


def test_the_helper_socket_is_private(helper_env, notes):
    helper_processes.start_in_background()
    _wait_for_helper()
    folder = _socket_path().parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.stat().st_uid == os.getuid()
    assert stat.S_ISSOCK(_socket_path().stat().st_mode) and _socket_path().stat().st_uid == os.getuid()


def test_a_broken_helper_is_bypassed(helper_env, notes):
    index(helper_env, notes)
    folder = _socket_path().parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _socket_path().write_text("not a socket")
    result = run_process("search", "tea", "--format", "json", env=helper_env, memories=notes, check=True)
    assert json.loads(result.stdout)[0]["title"] == "Tea"


def test_a_request_for_another_configuration_is_refused(helper_env, notes):
    _start_helper()
    request = json.dumps({"protocol": client.PROTOCOL, "identity": "0" * 64, "script": "search", "argv": ["tea"],
                          "cwd": "/", "env": {}, "stdout": {"tty": False, "errors": "strict"},
                          "stderr": {"tty": False, "errors": "strict"}}).encode() + b"\n"
    reply = client._exchange(str(_socket_path()), request)
    assert client.parse_reply(reply)[0] == "refused"


def test_an_idle_helper_exits(helper_env, notes, monkeypatch):
    monkeypatch.setenv("MEMORIES_HELPER_IDLE", "1")
    helper_processes.start_in_background()
    _wait_for_helper()
    assert _wait_until(lambda: not _socket_path().exists(), timeout=15)


def _same_bytes(name, *args, env, memories=None):
    """The script's stdout, stderr and exit code through the helper (stdlib client) and in-process."""
    helped = _only_helper(name, *args, env=env, memories=memories)
    in_process = run_process(name, *args, env=dict(env, MEMORIES_NO_DAEMON="1"), memories=memories)
    assert (helped.stdout, helped.stderr, helped.returncode) == \
           (in_process.stdout, in_process.stderr, in_process.returncode), (name, args)
    return helped


@pytest.mark.slow  # each call also as a fresh process that loads the model
def test_every_script_prints_the_same_bytes_through_the_helper(helper_env, notes, tmp_path):
    index(helper_env, notes)
    _start_helper()
    empty = tmp_path / "empty"
    empty.mkdir()
    calls = [
        ("search", ["green tea"]), ("search", ["パンの発酵", "--format", "json", "--explain"]),
        ("search", ["zzqx", "--mode", "keyword"]),  # no hits
        ("search", ["tea", "--top", "500"]), ("search", ["   "]), ("search", ["tea", "--bogus"]),  # usage errors
        ("search", ["tea", "--where", '{"x": {"$regex": 1}}']), ("search", ["--help"]),
        ("recent", ["--kind", "all"]), ("recent", ["--kind", "session", "--format", "json"]),
        ("recent", ["--format", "paths", "--project", "home"]), ("recent", ["--kind", "bogus"]), ("recent", ["--help"]),
        ("stats", []), ("stats", ["--json"]),
        ("similar", ["wiki/tea.md"]), ("similar", ["wiki/tea.md", "--format", "json", "--scope", "session"]),
        ("similar", ["wiki/none.md"]), ("similar", ["--help"]),
    ]
    for name, args in calls:
        _same_bytes(name, *args, env=helper_env, memories=notes)
    for name, args in [("search", ["tea"]), ("stats", []), ("recent", [])]:  # index missing, directory missing
        _same_bytes(name, *args, "--memories", str(empty), env=helper_env)
        _same_bytes(name, *args, "--memories", str(tmp_path / "absent"), env=helper_env)
    relative = _only_helper("search", "green tea", "--memories", os.path.relpath(notes.root), env=helper_env)
    assert relative.returncode == 0 and "tea.md" in relative.stdout  # the client's working directory counts


def test_a_helper_of_another_configuration_is_never_used(helper_env, notes):
    index(helper_env, notes)
    _start_helper()
    first = _socket_path()
    used = first.stat().st_mtime_ns
    other = dict(helper_env, MEMORIES_EMBEDDING_PROVIDER="local")  # the same index, another configuration
    assert _socket_path(other) != first
    result = run_process("search", "green tea", "--format", "json", env=other, memories=notes, check=True)
    assert json.loads(result.stdout)[0]["title"] == "Tea"
    assert first.stat().st_mtime_ns == used  # the first helper served nothing
    _wait_for_helper(environ=other)  # the run started a helper of its own configuration


def _listening_decoy(path: Path):
    """A socket at `path` that records whatever a client sends."""
    received = []
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    server.settimeout(0.2)

    def accept():
        while not stopped.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    received.append(connection.recv(65536))
                    connection.sendall(b"memory-search-helper/1 ok 0 30 0\nhi\n")
                except OSError:
                    pass

    stopped = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()

    def stop():
        stopped.set()
        thread.join()
        server.close()

    return received, stop


@pytest.mark.parametrize("problem", ["loose permissions", "another owner"])
def test_a_socket_folder_that_is_not_private_is_never_used(helper_env, notes, problem):
    index(helper_env, notes)
    folder = _socket_path().parent
    folder.mkdir(mode=0o700)
    received, stop = _listening_decoy(_socket_path())
    if problem == "loose permissions":
        folder.chmod(0o755)
    elif os.getuid() == 0:
        os.chown(folder, 12345, 12345)
    else:
        pytest.skip("changing a folder's owner needs root")
    try:
        result = run_process("search", "green tea", "--format", "json", env=helper_env, memories=notes, check=True)
    finally:
        stop()
    assert received == []
    assert json.loads(result.stdout)[0]["title"] == "Tea"


def test_a_malformed_reply_falls_back_to_the_in_process_run(helper_env, notes):
    index(helper_env, notes)
    _socket_path().parent.mkdir(mode=0o700)
    received, stop = _listening_decoy(_socket_path())  # answers "hi" where the header announces 30 bytes
    try:
        result = run_process("search", "green tea", "--format", "json", env=helper_env, memories=notes, check=True)
    finally:
        stop()
    assert len(received) == 1
    assert json.loads(result.stdout)[0]["title"] == "Tea"


def test_no_secret_crosses_the_socket(helper_env, notes, monkeypatch):
    secrets = {"VOYAGE_API_KEY": "pa-secret-key-123", "MEMORIES_DATABASE_URL": "postgresql://u:hunter2@db/x"}
    environ = dict(helper_env, **secrets)
    monkeypatch.setattr(sys, "argv", ["search.py", "tea"])
    name = client.identity(environ, os.getcwd())
    request = client._request("search", name, os.getcwd(), environ)
    for value in ("pa-secret-key-123", "hunter2", "postgresql://"):
        assert value.encode() not in request and value not in name
    assert set(json.loads(request)["env"]) <= set(client.PER_CALL)
    assert client.identity(dict(environ, VOYAGE_API_KEY="another"), os.getcwd()) != name


def test_connections_stay_bounded_after_many_directories(helper_env, notes, tmp_path):
    import psycopg

    index(helper_env, notes)
    _start_helper()
    url = psycopg.conninfo.make_conninfo(helper_env.get("MEMORIES_DATABASE_URL") or _database_url(helper_env))
    directories = []
    for number in range(110):  # the embedded server allows 100 connections
        directory = tmp_path / f"d{number}"
        directory.mkdir()
        directories.append(directory)
    path = str(_socket_path())
    identity = client.identity(os.environ, os.getcwd())
    for directory in directories:
        reply = client.parse_reply(client._exchange(path, _search_request(identity, "tea", "--memories",
                                                                            str(directory))))
        assert reply[0] == "ok" and reply[1] == 3  # no index there: connected, looked, said so
    result = _only_helper("search", "green tea", "--format", "json", env=helper_env, memories=notes)
    assert result.returncode == 0 and json.loads(result.stdout)[0]["title"] == "Tea"
    shared_resources().close()  # this process's own pooled connections, from the scripts run in-process
    with psycopg.connect(url) as connection:
        helpers = connection.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                                     "AND pid <> pg_backend_pid()").fetchone()[0]
    assert helpers <= helper.MAX_RUNNING


def _database_url(env) -> str:
    from memory_search.storage.database import EmbeddedServer

    return EmbeddedServer(Path(env["MEMORIES_DATA_DIR"])).running_url()


def _search_request(identity, *argv) -> bytes:
    return json.dumps({"protocol": client.PROTOCOL, "identity": identity, "script": "search", "argv": list(argv),
                       "cwd": os.getcwd(), "env": {}, "stdout": {"tty": False, "errors": "strict"},
                       "stderr": {"tty": False, "errors": "strict"}}).encode() + b"\n"


def test_a_stalled_client_does_not_delay_another(helper_env, notes):
    index(helper_env, notes)
    _start_helper()
    path = str(_socket_path())
    identity = client.identity(os.environ, os.getcwd())
    request = _search_request(identity, "green tea", "--memories", str(notes.root))
    assert client.parse_reply(client._exchange(path, request))[0] == "ok"  # model and connection warm
    stalled = []
    for _ in range(5):  # connect, send half a line, never finish
        connection = socket.socket(socket.AF_UNIX)
        connection.connect(path)
        connection.sendall(request[:20])
        stalled.append(connection)
    try:
        started = time.perf_counter()
        reply = client.parse_reply(client._exchange(path, request))
        elapsed = time.perf_counter() - started
    finally:
        for connection in stalled:
            connection.close()
    assert reply[0] == "ok" and reply[1] == 0 and b"tea.md" in b"".join(data for _, data in reply[2])
    assert elapsed < 1.0  # a helper reading one client at a time would wait out the 2 s request deadline


def test_the_reply_keeps_the_order_of_stdout_and_stderr_writes():
    """What a terminal or `2>&1` shows is the same through the helper: writes are replayed in order."""
    output = helper._Output()
    for stream, data in [("e", b"warning\n"), ("o", "結果 1\n".encode()), ("o", b"2\n"), ("e", b"done\n")]:
        output.add(stream, data)
    reply = helper._header("ok", 0, output.totals["o"], output.totals["e"]) + output.wire()
    assert client.parse_reply(reply) == ("ok", 0, [(2, b"warning\n"), (1, "結果 1\n2\n".encode()), (2, b"done\n")])
    assert client.parse_reply(reply[:-1]) is None  # cut short
    assert client.parse_reply(reply.replace(b" ok 0 ", b" ok 0 9")) is None  # totals that do not add up


def test_the_search_log_setting_selects_its_own_helper(tmp_path):
    """A caller that does not log its queries is never served by a helper that does, nor the reverse."""
    base = {"HOME": str(tmp_path), "MEMORIES_DIR": str(tmp_path / "memories")}
    plain = client.identity(base, str(tmp_path))
    logging = client.identity(dict(base, MEMORIES_SEARCH_LOG="1"), str(tmp_path))
    elsewhere = client.identity(dict(base, MEMORIES_SEARCH_LOG="1", XDG_STATE_HOME=str(tmp_path / "s")),
                                 str(tmp_path))
    assert len({plain, logging, elsewhere}) == 3
    assert client.identity(dict(base, MEMORIES_DIR="/elsewhere"), str(tmp_path)) == plain  # per-call, not identity


def test_searches_through_the_helper_are_logged_as_asked(helper_env, notes, tmp_path):
    index(helper_env, notes)
    state = tmp_path / "state"
    logging = dict(helper_env, MEMORIES_SEARCH_LOG="1", XDG_STATE_HOME=str(state))
    plain = dict(helper_env, XDG_STATE_HOME=str(state))
    for caller in (logging, plain):
        _start_helper(caller)
        assert _only_helper("search", "green tea", env=caller, memories=notes).returncode == 0
    log = state / "memory-search" / "searches.jsonl"
    assert [json.loads(line)["query"] for line in log.read_text(encoding="utf-8").splitlines()] == ["green tea"]
    assert helper.socket_path(logging) != helper.socket_path(plain)


# --- a helper that accepts connections and never answers ------------------------------------------------

def _pid_of_helper(environ=None) -> int:
    pid = helper_processes.own_helper_pid(_socket_path(environ).with_suffix(".pid"))
    assert pid is not None, "the helper wrote no pid file of its own"
    return pid


def _gone(pid: int) -> bool:
    return not helper_processes._alive(pid)


def _timed_search(env, notes) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = run_process("search", "green tea", "--format", "json", env=env, memories=notes, timeout=30)
    return result, time.monotonic() - started


def test_a_stopped_helper_is_bypassed_replaced_and_ended_by_db_stop(helper_env, notes):
    import signal

    index(helper_env, notes)
    _start_helper()
    stuck = _pid_of_helper()
    os.kill(stuck, signal.SIGSTOP)  # accepts connections (the kernel queues them), answers nothing
    try:
        result, elapsed = _timed_search(helper_env, notes)
        assert result.returncode == 0 and json.loads(result.stdout)[0]["title"] == "Tea"
        assert elapsed < 5, elapsed  # the handshake gives up after a second, not the 120 s reply timeout
        print(f"search with a stopped helper answered in {elapsed:.2f} s")
        assert result.stderr.count("\n") == 1 and "warm helper did not answer" in result.stderr, result.stderr
        # The run started a helper that ended the stopped one and took its place.
        assert _wait_until(lambda: _gone(stuck), 20), "the stuck helper is still there"
        _wait_for_helper()
        fresh = _pid_of_helper()
        assert fresh != stuck
        through = _only_helper("search", "green tea", "--format", "json", env=helper_env, memories=notes)
        assert through.returncode == 0 and through.stderr == "" and json.loads(through.stdout)[0]["title"] == "Tea"
    finally:
        if not _gone(stuck):
            os.kill(stuck, signal.SIGKILL)

    # db.py stop ends a helper that does not answer, by its pid.
    os.kill(fresh, signal.SIGSTOP)
    started = time.monotonic()
    stopped = run_process("db", "stop", env=helper_env, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert _wait_until(lambda: _gone(fresh), 5) and time.monotonic() - started < 15
    assert not list(helper.runtime_dir().glob("*.sock")) and not list(helper.runtime_dir().glob("*.pid"))


def _silent_listener(path: Path):
    """A socket at the helper's path that accepts connections and never replies."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(64)
    held, stopped = [], threading.Event()
    server.settimeout(0.1)

    def accept():
        while not stopped.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()

    def stop():
        stopped.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()

    return held, stop


def test_a_listener_that_never_replies_is_bypassed_and_replaced(helper_env, notes):
    index(helper_env, notes)
    _socket_path().parent.mkdir(mode=0o700)
    held, stop = _silent_listener(_socket_path())
    try:
        result, elapsed = _timed_search(helper_env, notes)
        assert result.returncode == 0 and json.loads(result.stdout)[0]["title"] == "Tea"
        assert elapsed < 5, elapsed
        assert held and result.stderr.count("\n") == 1 and "did not answer" in result.stderr, result.stderr
        # A real helper takes the socket's place (the listener held no lock); the next search is answered.
        pid_file = _socket_path().with_suffix(".pid")
        assert _wait_until(lambda: helper_processes.own_helper_pid(pid_file)
                           and helper_processes.answers(_socket_path()), 30)
        through = _only_helper("search", "green tea", "--format", "json", env=helper_env, memories=notes)
        assert through.returncode == 0 and json.loads(through.stdout)[0]["title"] == "Tea"
    finally:
        stop()


def _accepting_then_silent_listener(path: Path):
    """A socket at the helper's path that takes each request and says it accepted it, then sends nothing more: a
    helper alive and accepting whose pooled database connection hangs after the handshake."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(64)
    held, stopped = [], threading.Event()
    server.settimeout(0.1)

    def serve():
        while not stopped.is_set():
            try:
                connection = server.accept()[0]
            except OSError:
                continue
            held.append(connection)
            connection.settimeout(2)
            try:
                request = b""
                while not request.endswith(b"\n"):
                    chunk = connection.recv(1 << 16)
                    if not chunk:
                        break
                    request += chunk
                connection.sendall(client.ACCEPTED)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def stop():
        stopped.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()

    return held, stop


def test_a_helper_that_accepts_but_never_replies_is_bypassed_within_the_searchs_budget(helper_env, notes):
    index(helper_env, notes)
    _socket_path().parent.mkdir(mode=0o700)
    held, stop = _accepting_then_silent_listener(_socket_path())
    try:
        result, elapsed = _timed_search(helper_env, notes)  # gives up after 30 s: the reply timeout was 120 s
        assert result.returncode == 0 and json.loads(result.stdout)[0]["title"] == "Tea"
        budget = client.REPLY_BUDGET["search"]
        assert budget <= elapsed < budget + 15, elapsed
        print(f"search past a helper that accepted and stayed silent answered in {elapsed:.2f} s")
        assert held and result.stderr.count("\n") == 1, result.stderr
        assert f"warm helper did not answer within {budget:.0f} s: running without it" in result.stderr
    finally:
        stop()


def test_db_stop_does_not_wait_on_a_listener_that_never_replies(helper_env, notes):
    _socket_path().parent.mkdir(mode=0o700)
    held, stop = _silent_listener(_socket_path())
    try:
        started = time.monotonic()
        result = run_process("db", "stop", env=helper_env, timeout=60)
        elapsed = time.monotonic() - started
    finally:
        stop()
    assert result.returncode == 0 and elapsed < 8, (elapsed, result.stderr)
    assert not _socket_path().exists()  # no helper of ours behind it: the socket is removed, the process left be


def test_a_pid_file_naming_another_process_is_never_signalled(helper_env, tmp_path):
    """db.py stop signals only a helper of ours: not whatever pid a planted or stale pid file names."""
    folder = _socket_path().parent
    folder.mkdir(mode=0o700)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (folder / "0123456789abcdef0123.pid").write_text(f"{bystander.pid}\n")
        (folder / "fedcba9876543210fedc.pid").symlink_to(tmp_path / "elsewhere")
        (tmp_path / "elsewhere").write_text(f"{bystander.pid}\n")
        assert helper_processes.own_helper_pid(folder / "0123456789abcdef0123.pid") is None
        assert helper_processes.own_helper_pid(folder / "fedcba9876543210fedc.pid") is None
        helper_processes.stop()
        time.sleep(0.5)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_db_stop_ends_an_embedded_server_that_was_stopped_by_a_signal(env, tmp_path):
    import signal

    from memory_search.storage.database import EmbeddedServer

    server = EmbeddedServer(tmp_path / "own-server")
    server.start()
    pid = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])
    os.kill(pid, signal.SIGSTOP)  # a fast shutdown request would wait for a server that hears nothing
    try:
        started = time.monotonic()
        result = run_process("db", "stop", env=dict(env, MEMORIES_DATA_DIR=str(tmp_path / "own-server")),
                             timeout=120)
        elapsed = time.monotonic() - started
        assert (result.returncode, result.stdout, result.stderr) == (0, "stopped\n", ""), result.stderr
        assert elapsed < 30 and server.running_url() is None and _gone(pid), elapsed
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_helper_refuses_and_reads_time_words_as_the_library_does(helper_env, notes):
    """An over-long query is refused with its length as sent, a window that starts after it ends is refused,
    and time words in ſ/ı/K spellings are read: exit 2, 2 and 0, as without the helper."""
    index(helper_env, notes)
    _start_helper()
    query = "先週の " + "tea " * 600
    long = _only_helper("search", query, env=helper_env, memories=notes)
    assert long.returncode == 2 and f"the query is {len(query):,} characters long" in long.stderr
    backwards = _only_helper("search", "tea since 2099", env=helper_env, memories=notes)
    assert backwards.returncode == 2 and "starts after it ends" in backwards.stderr
    odd = _only_helper("search", "laſt week tea", env=helper_env, memories=notes)
    assert odd.returncode == 0 and "(laſt week)" in odd.stderr, odd.stderr
