"""The Claude Code plugin: manifests, hooks, the environment it builds itself, and Claude Code's own CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_script

CLAUDE = ROOT / ".tools/claude/node_modules/.bin/claude"  # installed by `make test` when npm is there
pytestmark = pytest.mark.plugin  # builds environments and drives Claude Code's CLI: `make test-all`
needs_claude = pytest.mark.skipif(not CLAUDE.exists(), reason=f"the claude CLI is not installed at {CLAUDE} "
                                                               "(`make test` installs it with npm when npm exists)")
BASE_PYTHON = getattr(sys, "_base_executable", None) or shutil.which("python3")
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")  # the real home's, read early


def manifest(name: str) -> dict:
    return json.loads((ROOT / ".claude-plugin" / name).read_text())


def test_the_manifests_describe_one_plugin_with_the_skill_at_the_root():
    project = {"version": re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)}
    plugin = manifest("plugin.json")
    assert plugin["name"] == "memory-search" and plugin["version"] == project["version"]
    assert plugin["license"] == "MIT" and "MIT License" in (ROOT / "LICENSE").read_text()
    assert plugin["author"]["name"] and len(plugin["description"]) > 50
    assert plugin["skills"] == ["./"] and (ROOT / "SKILL.md").exists()
    assert (ROOT / plugin["icon"]).read_bytes().startswith(b"\x89PNG")
    server = plugin["mcpServers"]["memory-search"]
    assert server["command"] == "${CLAUDE_PLUGIN_ROOT}/scripts/mcp_server.py"
    assert os.access(ROOT / "scripts/mcp_server.py", os.X_OK)
    listed = manifest("marketplace.json")["plugins"]
    assert [(entry["name"], entry["source"], entry["version"]) for entry in listed] == [
        ("memory-search", "./", project["version"])]


def hook_entry(event: str) -> dict:
    hooks = json.loads((ROOT / "hooks/hooks.json").read_text())["hooks"][event]
    (entry,) = [hook for group in hooks for hook in group["hooks"]]
    return entry


def test_the_hooks_are_the_recipes_of_the_hooks_reference():
    recipe = (ROOT / "references/hooks.md").read_text()
    for event in ("SessionStart", "SessionEnd"):
        entry = hook_entry(event)
        assert entry["command"] == "python3" and entry["args"] == [f"${{CLAUDE_PLUGIN_ROOT}}/hooks/{event.lower()[:7]}"
                                                                   f"_{event.lower()[7:]}.py"]
        assert json.dumps(entry["args"][0]) in recipe


def hook_env(env: dict, memories, data: Path | None = None) -> dict:
    """A hook's environment as Claude Code gives it (the options as CLAUDE_PLUGIN_OPTION_*)."""
    hook = {key: value for key, value in env.items() if not key.startswith("MEMORIES_")}
    hook.update({"CLAUDE_PLUGIN_ROOT": str(ROOT), "CLAUDE_PLUGIN_OPTION_MEMORIES_DIR": str(memories.root),
                 "MEMORIES_DATA_DIR": env["MEMORIES_DATA_DIR"]})
    if data is not None:
        hook["CLAUDE_PLUGIN_DATA"] = str(data)
    return hook


def test_the_session_end_hook_returns_at_once_and_indexes_in_the_background(env, memories, tmp_path):
    memories.write("wiki/hooks.md", "# Hooks\n\nThe SessionEnd hook indexes new memories.\n", title="Hooks")
    hook = hook_env(env, memories)
    (tmp_path / "plugin-data").mkdir()
    (tmp_path / "plugin-data" / "venv").symlink_to(ROOT / ".venv")  # the developer's environment: nothing to build
    hook["MEMORIES_VENV"] = str(tmp_path / "plugin-data" / "venv")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "hooks/session_end.py")], env=hook, capture_output=True,
                          text=True, timeout=10)
    assert done.returncode == 0 and time.monotonic() - started < 1.5  # Claude Code gives SessionEnd about 1.5 s
    log = tmp_path / "plugin-data" / "memory-search-setup.log"
    deadline = time.monotonic() + 180
    while "indexed 1 file(s)" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.5)


def test_the_session_start_hook_exports_the_options_and_says_where_things_stand(env, memories, tmp_path):
    env_file = tmp_path / "sessionstart-hook-0.sh"
    env_file.write_text("")
    venv = tmp_path / "plugin-data" / "venv"  # the repository's, where its set-up log lands beside it
    venv.parent.mkdir()
    venv.symlink_to(ROOT / ".venv")
    hook = hook_env(env, memories)
    hook.update({"CLAUDE_ENV_FILE": str(env_file), "CLAUDE_PLUGIN_OPTION_VOYAGE_API_KEY": "vk-'quoted' $x",
                 "MEMORIES_VENV": str(venv)})
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "hooks/session_start.py")], env=hook, capture_output=True,
                          text=True, timeout=10)
    assert done.returncode == 0 and time.monotonic() - started < 1.5, done.stderr
    assert done.stdout.startswith(f"memory-search: memories in {memories.root}") and done.stdout.count("\n") == 1
    sourced = subprocess.run(["bash", "-c", f"source {env_file}; echo \"$MEMORIES_DIR|$VOYAGE_API_KEY|"
                                            "$MEMORIES_AUTO_INDEX\""], capture_output=True, text=True)
    assert sourced.stdout.strip() == f"{memories.root}|vk-'quoted' $x|1"
    hook.pop("CLAUDE_PLUGIN_OPTION_MEMORIES_DIR")
    unset = subprocess.run([sys.executable, str(ROOT / "hooks/session_start.py")], env=hook, capture_output=True,
                           text=True, timeout=10)
    assert "no memories folder is set yet" in unset.stdout and "/plugin configure memory-search@memory-search" \
        in unset.stdout


def test_a_script_without_a_memories_folder_says_how_to_set_it(env):
    from memory_search.faces.plugin import SETUP_HINT

    manifest_hint = json.loads((ROOT / ".claude-plugin/plugin.json").read_text())["mcpServers"]["memory-search"][
        "env"]["MEMORIES_SETUP_HINT"]
    assert manifest_hint == SETUP_HINT
    result = run_script("search", "anything", env={**env, "MEMORIES_DIR": "", "MEMORIES_SETUP_HINT": SETUP_HINT})
    assert result.returncode == 3 and result.stderr == f"search.py: error: no memories folder is set: {SETUP_HINT}\n"


def run_probe(tmp_path: Path, *modules: str, venv: str | None = None) -> subprocess.CompletedProcess:
    """A script that says it started, asks for the environment, then says where click came from."""
    probe = tmp_path / "probe.py"
    probe.write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'src')!r})\nprint('started', flush=True)\n"
                     f"from memory_search.faces import environment\nenvironment.ensure(*{modules!r})\n"
                     f"import click\nprint(click.__file__)\nprint(sys.executable)\n")
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "MEMORIES_VENV")}
    if venv:
        env["MEMORIES_VENV"] = venv
    return subprocess.run([BASE_PYTHON, str(probe)], env=env, capture_output=True, text=True, timeout=60)


def test_a_python_of_the_venvs_version_uses_its_packages_without_starting_again(tmp_path):
    venv = ROOT / ".venv"
    if not (venv / "bin/python").exists():
        pytest.skip("no .venv beside scripts/ (`make install` builds it)")
    run = run_probe(tmp_path)
    assert run.returncode == 0, run.stderr
    started, click_file, executable = run.stdout.splitlines()
    assert started == "started"  # once: the interpreter carried on, it was not re-run
    assert Path(click_file).is_relative_to(venv) and executable == str(venv / "bin/python")


def test_a_python_of_another_version_reruns_under_the_venv(tmp_path):
    venv = tmp_path / "venv"  # built for no Python this one can share packages with
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python").write_text('#!/bin/sh\necho "re-run with $*"\n')
    (venv / "bin/python").chmod(0o755)
    run = run_probe(tmp_path, "a_module_only_the_venv_has", venv=str(venv))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["started", f"re-run with {tmp_path / 'probe.py'}"]


def test_a_venv_without_the_dependencies_is_one_line_and_exit_1(tmp_path):
    venv = tmp_path / "venv"  # for this Python's version, but emptied
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}{sys.abiflags}"
    (venv / "lib" / version / "site-packages").mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin/python").symlink_to(BASE_PYTHON)
    run = run_probe(tmp_path, venv=str(venv))
    assert run.returncode == 1 and run.stdout == "started\n"
    assert run.stderr.count("\n") == 1 and f"{venv} lacks psycopg: run `make install`" in run.stderr


def copy_of_the_plugin(destination: Path) -> Path:
    """The repository's files as a marketplace user gets them: no .venv, no tools, no caches."""
    shutil.copytree(ROOT, destination, ignore=shutil.ignore_patterns(
        ".venv", ".venv.*", ".tools", ".git", "__pycache__", ".pytest_cache", "*.egg-info", ".venv-setup.log"))
    return destination


def test_an_interrupted_setup_leaves_no_environment_behind(tmp_path):
    plugin = copy_of_the_plugin(tmp_path / "plugin")
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "MEMORIES_VENV")}
    env["PIP_CACHE_DIR"] = PIP_CACHE
    process = subprocess.Popen([BASE_PYTHON, str(plugin / "src/memory_search/faces/environment.py")], env=env,
                               stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline()
    assert "setting up the Python environment" in line
    deadline = time.monotonic() + 60
    while not list(plugin.glob(".venv.building-*/bin/python")):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1)  # into pip's work
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert not (plugin / ".venv").exists()
    assert not list(plugin.glob(".venv.building-*"))


@needs_claude
def test_claude_validates_the_plugin_and_the_marketplace(tmp_path):
    env = claude_env(tmp_path)
    for target in (".", ".claude-plugin/plugin.json"):  # the marketplace (and the plugin in it), the plugin
        for extra in ([], ["--profile", "directory"]):
            result = subprocess.run([str(CLAUDE), "plugin", "validate", target, *extra], cwd=ROOT, env=env,
                                    capture_output=True, text=True, timeout=120)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "Validation passed" in result.stdout


@needs_claude
def test_claude_connects_to_the_mcp_server(env, memories, tmp_path):
    from conftest import index

    memories.write("wiki/a.md", "# A\n\nSomething to find.\n")
    index(env, memories)
    claude = {**claude_env(tmp_path), **{key: value for key, value in env.items() if key.startswith("MEMORIES_")},
              "MEMORIES_DIR": str(memories.root)}
    project = tmp_path / "project"
    project.mkdir()
    added = subprocess.run([str(CLAUDE), "mcp", "add", "memory-search", "--", str(ROOT / "scripts/mcp_server.py")],
                           cwd=project, env=claude, capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    listed = subprocess.run([str(CLAUDE), "mcp", "list"], cwd=project, env=claude, capture_output=True, text=True,
                            timeout=180)
    assert "memory-search: " in listed.stdout and "Connected" in listed.stdout, listed.stdout + listed.stderr


def claude(args: list[str], env: dict, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLAUDE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(1)


@needs_claude
def test_first_use_from_the_marketplace_needs_nothing_typed(base_env, tmp_path):
    """From `claude plugin install --config`, on a machine with no environment built: Connected at once, a search
    through MCP and through the skill's script finds the right memory within 5 minutes, and a memory written
    during a session is found within 2 minutes after it ends. The timings are written to the test's output."""
    from conftest import MemoriesDir

    memories = MemoriesDir(tmp_path / "memories")
    memories.write("wiki/ops/backup.md", "# バックアップ運用\n\n毎晩 2 時にデータベースのダンプを取る。\n",
                   title="バックアップ運用")
    memories.session("2026-11-02", "101500", "Tuning the HNSW index",
                     "# Tuning the HNSW index\n\nWe raised ef_search from 40 to 100; recall went to 0.98.\n")
    plugin = copy_of_the_plugin(tmp_path / "checkout")
    env = {**claude_env(tmp_path), "PIP_CACHE_DIR": PIP_CACHE}
    data_home = Path(env["HOME"]) / ".local/share/memory-search"
    project = tmp_path / "project"
    project.mkdir()
    timings = {}
    started = time.monotonic()
    try:
        assert claude(["plugin", "marketplace", "add", str(plugin)], env, project).returncode == 0
        installed = claude(["plugin", "install", "memory-search@memory-search", "--config",
                            f"memories_dir={memories.root}"], env, project)
        assert installed.returncode == 0 and "not applied" not in installed.stdout, installed.stdout
        timings["install"] = round(time.monotonic() - started, 1)

        began = time.monotonic()
        listed = claude(["mcp", "list"], env, project)  # nothing built yet: the stand-in answers
        timings["connected"] = round(time.monotonic() - began, 1)
        assert "plugin:memory-search:memory-search" in listed.stdout and "✔ Connected" in listed.stdout, listed.stdout
        for _ in range(3):  # more clients meanwhile: still one build
            claude(["mcp", "list"], env, project)
        data = Path(env["HOME"]) / ".claude/plugins/data/memory-search-memory-search"
        assert len(list(data.glob("venv.building-*"))) <= 1

        session = claude(["-p", "hi"], env, project)  # offline: fires SessionStart and SessionEnd, then stops
        env_files = list((Path(env["HOME"]) / ".claude/session-env").glob("*/sessionstart-hook-*.sh"))
        assert env_files, session.stdout + session.stderr
        bash = dict(env)

        def skill_search(*args):  # as the Bash tool runs it: the session's exports first
            command = f"source {env_files[0]}; {plugin / 'scripts/search.py'} " + " ".join(
                f"'{arg}'" for arg in args) + " --format json"
            result = subprocess.run(["bash", "-c", command], env=bash, capture_output=True, text=True, timeout=300)
            return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else []

        def found(hits, name):
            return any(hit["path"].endswith(name) for hit in hits)

        wait_for(lambda: any("101500_" in hit["path"] for hit in skill_search("ef_search recall", "--mode",
                                                                               "keyword")), 300, "a keyword hit")
        timings["first_keyword_hit"] = round(time.monotonic() - started, 1)
        wait_for(lambda: found(skill_search("データベースのバックアップはいつ?", "--mode", "semantic"), "backup.md"),
                 300, "a semantic hit")
        timings["first_semantic_hit"] = round(time.monotonic() - started, 1)

        mcp = {**env, "MEMORIES_DIR": str(memories.root), "MEMORIES_VENV": str(data / "venv"),
               "MEMORIES_AUTO_INDEX": "1"}
        through_mcp = subprocess.run([sys.executable, "-c", MCP_SEARCH, str(plugin / "scripts/mcp_server.py"),
                                      "夜間のダンプ"], env=mcp, capture_output=True, text=True, timeout=300)
        assert "backup.md" in through_mcp.stdout, through_mcp.stdout + through_mcp.stderr

        memories.session("2026-11-03", "090000", "Quokka migration", "# Quokka\n\nWe moved the quokka cluster.\n")
        ended = time.monotonic()
        claude(["-p", "hi"], env, project)  # SessionEnd indexes it, detached
        wait_for(lambda: any("090000_" in hit["path"] for hit in skill_search("quokka cluster", "--mode", "keyword")),
                 120, "the new memory")
        timings["memory_after_session_end"] = round(time.monotonic() - ended, 1)
    finally:
        print("first-use timings (s):", json.dumps(timings))
        subprocess.run([sys.executable, str(plugin / "scripts/db.py"), "stop"], capture_output=True, timeout=120,
                       env={**env, "MEMORIES_DATA_DIR": str(data_home),
                            "MEMORIES_VENV": str(Path(env["HOME"]) / ".claude/plugins/data/"
                                                 "memory-search-memory-search/venv")})
    # Connecting must not wait for the environment's build (minutes); seconds, even on a loaded machine.
    assert timings["connected"] < 15 and timings["first_semantic_hit"] < 300


MCP_SEARCH = """
import sys, json, anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
import os

async def main():
    parameters = StdioServerParameters(command=sys.argv[1], args=[], env=dict(os.environ))
    async with stdio_client(parameters) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search", {"query": sys.argv[2], "top": 3})
            print(result.content[0].text)

anyio.run(main)
"""


def claude_env(tmp_path: Path) -> dict:
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MEMORIES_", "ANTHROPIC_", "CLAUDE"))}
    env.update({"HOME": str(home), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    return env


def test_the_mcp_server_answers_at_once_while_its_environment_is_built_and_holds_calls_a_bounded_time(monkeypatch):
    """The stand-in: initialize and tools/list at once, a tool call answered with when to try again."""
    import io
    import threading

    from memory_search.faces import environment, mcp_relay
    from memory_search.faces.mcp_tools import TOOLS

    monkeypatch.setattr(environment, "ready", lambda modules=(): False)
    monkeypatch.setattr(environment, "building", lambda: True)  # someone else's build: none started here
    monkeypatch.setattr(mcp_relay, "WAIT", 1.0)
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}}]
    read_end, write_end = os.pipe()
    replies = io.BytesIO()
    relay = mcp_relay.Relay(os.fdopen(read_end, "rb"), replies)
    runner = threading.Thread(target=relay.run, daemon=True)
    began = time.monotonic()
    runner.start()
    with os.fdopen(write_end, "wb") as client:
        client.write(b"".join(json.dumps(request).encode() + b"\n" for request in requests))
        client.flush()
        while replies.getvalue().count(b"\n") < 3 and time.monotonic() - began < 10:
            time.sleep(0.05)
    answers = [json.loads(line) for line in replies.getvalue().splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2, 3]
    assert answers[0]["result"]["serverInfo"]["name"] == "memory-search"
    assert [tool["name"] for tool in answers[1]["result"]["tools"]] == list(TOOLS)
    assert answers[2]["result"]["isError"] and "try again in about" in answers[2]["result"]["content"][0]["text"]
    assert 1.0 <= time.monotonic() - began < 5
    runner.join(timeout=5)
