"""Fixtures: one real embedded PostgreSQL for the session, memories directories built per test.

Randomised tests draw from one seed per run, printed at the end (and by each such test, shown with its
failure); MEMORIES_TEST_SEED=N replays a run.

Scripts run in this process by default, as the warm helper runs them (faces/console.py's Console: their own
streams, environment and working directory, one shared model and connection pool); run_process runs
one as a fresh process, for what only a process shows (start-up, signals, the helper itself)."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(ROOT / "src"))

SEED = int(os.environ.get("MEMORIES_TEST_SEED") or random.SystemRandom().randrange(2**32))
SEED_NOTE = f"seed {SEED} (MEMORIES_TEST_SEED={SEED} replays it)"


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"randomised tests: {SEED_NOTE}")


def seeded(test):
    """A Hypothesis test that draws from the run's seed (printed at the end of the run)."""
    from hypothesis import seed

    return seed(SEED)(test)


@pytest.fixture
def rng(request) -> random.Random:
    """A random generator for this test, from the run's seed and the test's id; it prints the seed."""
    print(f"{request.node.nodeid}: {SEED_NOTE}")
    return random.Random(f"{SEED}-{request.node.nodeid}")


def pytest_configure(config):
    """As root, the temporary folders are made in a folder of this run's own, not in /tmp/pytest-of-root: pytest
    sets that one back to 0700 whenever a run starts, and the embedded server's user must pass through it."""
    if os.geteuid() == 0 and not config.option.basetemp:
        import tempfile

        config.option.basetemp = tempfile.mkdtemp(prefix="pytest-memory-search-")
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))


def passable(folder: Path, tmp_path_factory) -> Path:
    """As root the embedded server runs as its own system user, which must pass through the folders pytest made
    (mode 0700) to reach a data folder in them: the suite lets it pass (x, never r) through its own folders, as
    a user would set MEMORIES_DATA_DIR to a folder that user can reach. The server changes no folder's mode."""
    if os.geteuid() != 0:
        return folder
    top = tmp_path_factory.getbasetemp()
    for made in [folder, *folder.parents]:
        made.chmod(made.stat().st_mode | 0o011)
        if made == top:
            break
    return folder


class _PassableTemp:
    """pytest's TempPathFactory, whose folders the server's user may pass through (see passable)."""

    def __init__(self, factory):
        self._factory = factory

    def __getattr__(self, name):
        return getattr(self._factory, name)

    def mktemp(self, basename: str, numbered: bool = True) -> Path:
        return passable(self._factory.mktemp(basename, numbered), self._factory)


@pytest.fixture(scope="session")
def tmp_path_factory(tmp_path_factory):
    """Also what tmp_path makes its folders with."""
    return _PassableTemp(tmp_path_factory) if os.geteuid() == 0 else tmp_path_factory


@pytest.fixture(scope="session")
def base_env(tmp_path_factory) -> dict[str, str]:
    """An environment with no user configuration: own HOME, own data dir, no keys."""
    home = tmp_path_factory.mktemp("home")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MEMORIES_", "VOYAGE_", "COCOINDEX_"))}
    env.update({"HOME": str(home), "XDG_DATA_HOME": str(home / ".local/share"),
                "MEMORIES_DATA_DIR": os.environ.get("MEMORIES_TEST_DATA_DIR") or str(home / "memory-search"),
                "MEMORIES_NO_DAEMON": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    return env


@pytest.fixture(scope="session")
def database(base_env):
    """The embedded server, started once; stopped at the end unless it was running before."""
    from memory_search.storage.database import EmbeddedServer

    server = EmbeddedServer(Path(base_env["MEMORIES_DATA_DIR"]))
    was_running = server.running_url() is not None
    url = server.start()
    yield url
    if not was_running:
        server.stop()


@pytest.fixture
def env(base_env, database, monkeypatch) -> dict[str, str]:
    """The test environment, also applied to this process for in-process library calls."""
    for key in list(os.environ):
        if key.startswith(("MEMORIES_", "VOYAGE_", "COCOINDEX_")):
            monkeypatch.delenv(key)
    for key, value in base_env.items():
        monkeypatch.setenv(key, value)
    return dict(base_env)


class MemoriesDir:
    """Builds a memories directory in tmp_path."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, relpath: str, body: str, **frontmatter) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        head = ""
        if frontmatter:
            head = "---\n" + yaml.safe_dump(frontmatter, allow_unicode=True, sort_keys=False) + "---\n"
        path.write_text(head + body, encoding="utf-8")
        return path

    def session(self, date: str, clock: str, title: str, body: str, **frontmatter) -> Path:
        return self.write(f"raw/session/{date}/{clock}_abcd1234_{abs(hash(title)) % 10**8:08d}.md", body,
                          kind="session", title=title, **frontmatter)


@pytest.fixture
def memories(tmp_path) -> MemoriesDir:
    return MemoriesDir(tmp_path / "memories")


_RESOURCES = []


def shared_resources():
    """One model and connection pool for every in-process run, as the warm helper keeps them."""
    if not _RESOURCES:
        from memory_search.resources import Resources

        _RESOURCES.append(Resources())
    return _RESOURCES[0]


class _Captured(io.StringIO):
    def __init__(self, tty: bool = False):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def run_script(name: str, *args: str, env: dict[str, str], memories: MemoriesDir | None = None,
               check: bool = False, cwd: str | None = None, tty: bool = False) -> subprocess.CompletedProcess:
    """Run scripts/<name>.py's command in this process; the result has returncode, stdout and stderr."""
    from memory_search.faces import cli

    argv = [*args] + (["--memories", str(memories.root)] if memories is not None else [])
    stdout, stderr = _Captured(tty), _Captured(tty)
    console = cli.Console(stdout=stdout, stderr=stderr, environ=dict(env), cwd=cwd or os.getcwd(),
                          resources=shared_resources())
    code = cli.run(cli.COMMANDS[name], f"{name}.py", args=argv, console=console, exits=False)
    result = subprocess.CompletedProcess([f"{name}.py", *argv], code, stdout.getvalue(), stderr.getvalue())
    if check and result.returncode != 0:
        raise AssertionError(f"{name}.py {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def run_process(name: str, *args: str, env: dict[str, str], memories: MemoriesDir | None = None,
                check: bool = False, timeout: float = 300, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run scripts/<name>.py as a fresh process."""
    command = [sys.executable, str(SCRIPTS / f"{name}.py"), *args]
    if memories is not None:
        command += ["--memories", str(memories.root)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    if check and result.returncode != 0:
        raise AssertionError(f"{name}.py {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def index(env, memories, *args) -> dict:
    """Run index.py --json and return its IndexStats; exit 4 (some files skipped) shows in its failures."""
    result = run_script("index", "--json", *args, env=env, memories=memories)
    stats = json.loads(result.stdout) if result.returncode in (0, 4) else None
    if stats is None or result.returncode != (4 if stats["failed"] else 0):
        raise AssertionError(f"index.py {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return stats


def search(env, memories, query, *args) -> list[dict]:
    """Run search.py --format json and return its hits."""
    return json.loads(run_script("search", query, "--format", "json", *args, env=env, memories=memories,
                                 check=True).stdout)


def names(hits) -> list[str]:
    return [Path(hit["path"]).name for hit in hits]
