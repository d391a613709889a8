"""A plain `pip install .` (no -e, no checkout beside it) runs every command the package offers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.e2e  # a fresh environment installed from the registry: `make test-all`

PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """memory-search installed from a wheel into a fresh virtual environment."""
    folder = tmp_path_factory.mktemp("installed")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    result = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                             f"{ROOT}[faces]"], capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PIP_CACHE_DIR": PIP_CACHE})
    if result.returncode != 0:
        pytest.skip(f"pip could not install the package here: {result.stderr.strip().splitlines()[-1:]}")
    return venv / "bin/memory-search"


def test_a_plain_install_searches_stops_its_database_and_offers_both_servers(installed, base_env, memories,
                                                                               tmp_path):
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees.", title="Tea")
    env = {**base_env, "MEMORIES_DIR": str(memories.root), "MEMORIES_DATA_DIR": str(tmp_path / "own-database"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    env.pop("PYTHONPATH", None)
    (tmp_path / "run").mkdir()

    def run(*args):
        return subprocess.run([str(installed), *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=300)

    probe = "import memory_search; print(memory_search.__file__)"
    where = subprocess.run([str(installed.parent / "python"), "-c", probe], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=60).stdout
    assert where.startswith(str(installed.parent.parent))  # the installed copy, not the checkout's src/
    indexed = run("index")
    assert indexed.returncode == 0, indexed.stderr
    found = run("search", "green tea temperature", "--top", "1")
    assert found.returncode == 0 and "tea.md" in found.stdout, found.stderr
    stopped = run("db", "stop")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "stopped"), stopped.stderr
    for server in ("serve", "mcp"):
        shown = run(server, "--help")
        assert shown.returncode == 0 and shown.stdout.startswith(f"Usage: memory-search {server}"), shown.stderr
