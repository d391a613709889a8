"""The Claude Code plugin: manifests, hooks, the environment it builds itself, and Claude Code's own CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import re
from pathlib import Path

import pytest

from conftest import ROOT

CLAUDE = ROOT / ".tools/claude/node_modules/.bin/claude"  # installed by `make test` when npm is there
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


def hook_command(event: str) -> str:
    hooks = json.loads((ROOT / "hooks/hooks.json").read_text())["hooks"][event]
    (command,) = [hook["command"] for group in hooks for hook in group["hooks"]]
    return command


def test_the_session_end_hook_is_the_recipe_of_the_hooks_reference():
    recipe = (ROOT / "references/hooks.md").read_text()
    assert json.dumps(hook_command("SessionEnd")) in recipe


def test_the_session_end_hook_returns_at_once_and_indexes_in_the_background(env, memories, tmp_path):
    memories.write("wiki/hooks.md", "# Hooks\n\nThe SessionEnd hook indexes new memories.\n", title="Hooks")
    hook_env = {**env, "MEMORIES_DIR": str(memories.root), "CLAUDE_PLUGIN_ROOT": str(ROOT)}
    started = time.monotonic()
    subprocess.run(["sh", "-c", hook_command("SessionEnd")], env=hook_env, check=True, timeout=10)
    assert time.monotonic() - started < 1.5  # Claude Code gives a SessionEnd hook about 1.5 s
    log = Path(env["HOME"]) / ".cache/memory-search-index.log"
    deadline = time.monotonic() + 180
    while "indexed 1 file(s)" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.5)


def run_probe(tmp_path: Path, *modules: str, venv: str | None = None) -> subprocess.CompletedProcess:
    """A script that says it started, asks the launcher for the dependencies, then says where click came from."""
    probe = tmp_path / "probe.py"
    probe.write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'src')!r})\nprint('started', flush=True)\n"
                     f"from memory_search.faces import launch\nlaunch.ensure(*{modules!r})\nimport click\n"
                     f"print(click.__file__)\nprint(sys.executable)\n")
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
    process = subprocess.Popen([BASE_PYTHON, str(plugin / "src/memory_search/faces/launch.py")], env=env,
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


@needs_claude
def test_a_plugin_installed_from_the_marketplace_sets_itself_up_and_connects(env, memories, tmp_path):
    """No `make`: the SessionStart hook's command builds the environment, then Claude Code connects."""
    from conftest import index

    memories.write("wiki/a.md", "# A\n\nSomething to find.\n")
    index(env, memories)
    plugin = copy_of_the_plugin(tmp_path / "checkout")
    claude = {**claude_env(tmp_path), **{key: value for key, value in env.items() if key.startswith("MEMORIES_")},
              "MEMORIES_DIR": str(memories.root), "PIP_CACHE_DIR": PIP_CACHE}
    project = tmp_path / "project"
    project.mkdir()
    for command in (["plugin", "marketplace", "add", str(plugin)],
                    ["plugin", "install", "memory-search@memory-search"]):
        done = subprocess.run([str(CLAUDE), *command], cwd=project, env=claude, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    # Before set-up, the MCP server starts the build in the background and says so in one line.
    first = subprocess.run([BASE_PYTHON, str(plugin / "scripts/mcp_server.py")], env=claude, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert first.returncode == 1 and first.stdout == ""
    assert first.stderr.count("\n") == 1 and "setting up the Python environment" in first.stderr
    setup = subprocess.run(["sh", "-c", hook_command("SessionStart").rstrip().removesuffix("&")],  # in the foreground
                           env={**claude, "CLAUDE_PLUGIN_ROOT": str(plugin)}, timeout=900)
    assert setup.returncode == 0 and (plugin / ".venv/bin/python").exists()
    assert not list(plugin.glob(".venv.building-*"))
    listed = subprocess.run([str(CLAUDE), "mcp", "list"], cwd=project, env=claude, capture_output=True, text=True,
                            timeout=180)
    assert "plugin:memory-search:memory-search" in listed.stdout and "Connected" in listed.stdout, listed.stdout


def claude_env(tmp_path: Path) -> dict:
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MEMORIES_", "ANTHROPIC_", "CLAUDE"))}
    env.update({"HOME": str(home), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    return env
