"""The warm helper process: same results as without it, private, and bypassed when broken."""

from __future__ import annotations

import json
import os
import socket
import stat
import time

import pytest

from conftest import index, run_script


@pytest.fixture
def helper_env(env, tmp_path, monkeypatch):
    """search.py may use the helper; its socket lives in this test's own runtime folder."""
    runtime = tmp_path / "run"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("MEMORIES_NO_DAEMON")
    helper = dict(env, XDG_RUNTIME_DIR=str(runtime))
    helper.pop("MEMORIES_NO_DAEMON")
    yield helper
    from memory_search import daemon

    daemon.stop()


def _wait_for_helper(timeout: float = 60) -> None:
    from memory_search import daemon

    deadline = time.time() + timeout
    while time.time() < deadline:
        if daemon.socket_path().exists():
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(str(daemon.socket_path()))
                return
            except OSError:
                pass
        time.sleep(0.1)
    raise AssertionError("the helper did not start")


@pytest.fixture
def notes(memories):
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees for two minutes.", title="Tea", tags=["kitchen"])
    memories.write("wiki/bread.md", "# パン\n\n強力粉でパンを焼く。発酵は二回。", title="パン")
    memories.session("2026-11-03", "080000", "Kitchen session", "We tried brewing tea colder.", project="home")
    return memories


def test_results_are_the_same_through_the_helper_and_without_it(helper_env, notes):
    index(helper_env, notes)
    queries = [["how hot should tea be"], ["パンの発酵", "--scope", "wiki"], ["tea", "--project", "home", "--explain"]]
    first = [run_script("search", *query, "--format", "json", env=helper_env, memories=notes, check=True).stdout
             for query in queries]  # the first call starts the helper and answers in-process
    _wait_for_helper()
    warm = [run_script("search", *query, "--format", "json", env=helper_env, memories=notes, check=True).stdout
            for query in queries]
    cold = [run_script("search", *query, "--format", "json", "--no-daemon", env=helper_env, memories=notes,
                       check=True).stdout for query in queries]
    assert first == warm == cold
    assert all(json.loads(output) for output in warm)


def test_the_helper_answers_with_the_library_results(helper_env, notes):
    from memory_search import daemon
    from memory_search.config import Settings
    from memory_search.api import Memories
    from memory_search.retrieval import SearchRequest

    index(helper_env, notes)
    settings = Settings.from_env().with_overrides(memories_dir=str(notes.root))
    request = SearchRequest(query="green tea temperature", top=5)
    daemon.start_in_background()
    _wait_for_helper()
    through_helper, warnings = daemon.ask(settings, request)
    assert warnings == []
    with Memories(settings) as memories:
        in_process = memories.run(request)
    assert through_helper and through_helper == in_process


def test_errors_come_back_as_they_would_without_the_helper(helper_env, notes, tmp_path):
    from memory_search import daemon

    index(helper_env, notes)
    daemon.start_in_background()
    _wait_for_helper()
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_script("search", "tea", "--memories", str(empty), env=helper_env)
    assert result.returncode == 3 and "index.py" in result.stderr


def test_the_helper_socket_is_private(helper_env, notes):
    from memory_search import daemon

    daemon.start_in_background()
    _wait_for_helper()
    folder = daemon.socket_path().parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.stat().st_uid == os.getuid()


def test_a_broken_helper_is_bypassed(helper_env, notes):
    from memory_search import daemon

    index(helper_env, notes)
    folder = daemon.socket_path().parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    daemon.socket_path().write_text("not a socket")
    result = run_script("search", "tea", "--format", "json", env=helper_env, memories=notes, check=True)
    assert json.loads(result.stdout)[0]["title"] == "Tea"


def test_a_helper_of_another_version_steps_aside(helper_env, notes):
    from memory_search import daemon

    daemon.start_in_background()
    _wait_for_helper()
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(str(daemon.socket_path()))
        connection.sendall(b'{"version": "older", "settings": {}, "request": {}}\n')
        assert json.loads(connection.recv(1000)) == {"stale": True}
    deadline = time.time() + 10
    while daemon.socket_path().exists() and time.time() < deadline:
        time.sleep(0.05)
    assert not daemon.socket_path().exists()


def test_an_idle_helper_exits(helper_env, notes, monkeypatch):
    from memory_search import daemon

    monkeypatch.setenv("MEMORIES_HELPER_IDLE", "1")
    daemon.start_in_background()
    _wait_for_helper()
    deadline = time.time() + 15
    while daemon.socket_path().exists() and time.time() < deadline:
        time.sleep(0.1)
    assert not daemon.socket_path().exists()
