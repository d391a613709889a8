"""The Python environment the scripts run in, standard library only: used before it exists.

Claude Code calls `scripts/search.py` with whatever python3 is on PATH. The environment is a virtual
environment holding the dependencies: `.venv` at the top of a checkout (`make install` builds it), or
MEMORIES_VENV (the plugin sets it to ${CLAUDE_PLUGIN_DATA}/venv, which survives plugin updates). When
this Python is the version the environment was built with, its packages replace this Python's own
site-packages in place, which spares a second interpreter start; otherwise the script is re-run under
the environment's python (one exec).

A missing environment is built on first use: by one process at a time (a lock), into a temporary
folder beside it that is renamed into place only when complete, so an interrupted build never leaves a
half-built environment, from the lock (requirements/plugin.txt). One built for another pyproject.toml or
lock (a plugin update that changed the dependencies) is built again. `python3 environment.py prepare
[--index DIR]` builds it ahead of time and then indexes DIR: the plugin's hooks start it detached.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
STAMP = ".memory-search-pyproject"  # in an environment built here: the hash of the pyproject.toml and lock it had
LOCK = os.path.join("requirements", "plugin.txt")  # the package's and the faces' dependencies, pinned with hashes
UV = "uv==0.13.9"


def venv_path() -> str:
    return os.environ.get("MEMORIES_VENV") or os.path.join(ROOT, ".venv")


def ensure(*modules: str) -> None:
    """Run on under the environment: in place when this Python is its version, else by re-running under it
    when this Python lacks `psycopg` and `modules`, building it first (one line on stderr says so)."""
    venv = venv_path()
    if sys.prefix == venv and current(venv):  # the common case, decided without importing anything
        return
    if current(venv) and _enter(venv, modules):
        return
    import importlib.util

    if not os.environ.get("MEMORIES_VENV") and all(
            importlib.util.find_spec(name) is not None for name in ("psycopg", *modules)):
        return  # an installed memory-search, or a Python that has the dependencies
    python = os.path.join(venv, "bin", "python")
    if not current(venv):
        build(venv)
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, *sys.argv])
    _fail(f"the dependencies are not installed: run `make install` in {ROOT}")


def ready(modules: tuple[str, ...] = ()) -> bool:
    """Whether the environment is built, for this pyproject.toml, with `modules` (checked without importing)."""
    venv = venv_path()
    if not current(venv):
        import importlib.util

        return not os.environ.get("MEMORIES_VENV") and all(  # an installed memory-search, or a Python with them
            importlib.util.find_spec(name) is not None for name in ("psycopg", *modules))
    packages = _site_packages(venv)
    return packages is not None and all(os.path.isdir(os.path.join(packages, name)) for name in ("psycopg", *modules))


def current(venv: str) -> bool:
    """Built, and for this pyproject.toml when built here (an environment `make install` made has no stamp)."""
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        return False
    try:
        with open(os.path.join(venv, STAMP)) as stamp:
            return stamp.read().strip() == _project_hash()
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _project_hash() -> str:
    import hashlib

    digest = hashlib.sha256()
    for name in ("pyproject.toml", LOCK):  # a new lock builds the environment again, as a new pyproject.toml does
        try:
            with open(os.path.join(ROOT, name), "rb") as project:
                digest.update(project.read())
        except FileNotFoundError:
            pass
    return digest.hexdigest()


def _site_packages(venv: str):
    lib = os.path.join(venv, "lib")
    try:
        versions = [name for name in os.listdir(lib) if name.startswith("python")]
    except OSError:
        return None
    return os.path.join(lib, versions[0], "site-packages") if versions else None


def _enter(venv: str, modules: tuple[str, ...]) -> bool:
    """Run on with the environment's packages instead of this Python's own, as its python would, when it
    was built for this Python version (same site-packages folder name, so the same extension modules
    load); False when it was not."""
    packages = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}{sys.abiflags}",
                            "site-packages")
    if not os.path.isdir(packages):
        return False
    missing = [name for name in ("psycopg", *modules) if not os.path.isdir(os.path.join(packages, name))]
    if missing:
        _fail(f"{venv} lacks {', '.join(missing)}: run `make install` in {ROOT}, or delete {venv} "
              "to have it built again")
    import site

    own = set(site.getsitepackages()) | {site.getusersitepackages()}
    before = [entry for entry in sys.path if entry not in own]
    sys.path[:] = []
    site.addsitedir(packages)  # and its .pth files, such as the editable install's path
    sys.path[:] = before + sys.path
    # What the environment's python would see; helpers started from here run under it.
    sys.prefix = sys.exec_prefix = venv
    sys.executable = os.path.join(venv, "bin", "python")
    return True


def _fail(message: str) -> None:
    sys.stderr.write(f"{os.path.basename(sys.argv[0])}: error: {message}\n")
    sys.exit(1)


def log_path() -> str:
    """The set-up log: beside the plugin's environment, else in the user's state folder."""
    if os.environ.get("MEMORIES_VENV"):
        return os.path.join(os.path.dirname(os.environ["MEMORIES_VENV"]), "memory-search-setup.log")
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "memory-search", "setup.log")


def building() -> bool:
    """Whether a build holds the lock right now."""
    import fcntl

    try:
        with open(_lock_path(venv_path()), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def _lock_path(venv: str) -> str:
    return f"{venv}.lock"


def build(venv: str, quiet: bool = False) -> None:
    """Create the environment at `venv` unless another process did meanwhile (one builder at a time)."""
    import fcntl
    import shutil
    import signal
    import subprocess
    import time

    if sys.version_info < (3, 11):
        _fail(f"Python 3.11 or newer is needed (this is {sys.version.split()[0]}): put one first on PATH")
    parent = os.path.dirname(venv)
    try:
        os.makedirs(parent, exist_ok=True)
        lock = open(_lock_path(venv), "a")
    except OSError as error:
        _fail(f"cannot set up the environment in {venv} ({error.strerror}): run `make install` in {ROOT}")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits here, then finds the environment ready
        if current(venv):
            return
        prefix = f"{os.path.basename(venv)}.building-"
        for name in os.listdir(parent):  # left by a build that was killed
            if name.startswith(prefix):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        building_dir = os.path.join(parent, f"{prefix}{os.getpid()}")
        log = log_path()
        os.makedirs(os.path.dirname(log), exist_ok=True)
        if not quiet:
            sys.stderr.write(f"{os.path.basename(sys.argv[0])}: setting up the Python environment in {venv} "
                             f"(first run only, about a minute; log in {log})\n")
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still remove the unfinished folder
        try:
            with open(log, "w") as output:
                _step([sys.executable, "-m", "venv", building_dir], check=True, stdout=output, stderr=output)
                _install(os.path.join(building_dir, "bin", "python"), output, parent)
            with open(os.path.join(building_dir, STAMP), "w") as stamp:
                stamp.write(_project_hash() + "\n")
            if os.path.exists(venv):  # built for another pyproject.toml: out of the way, then gone
                old = f"{venv}.old-{os.getpid()}"
                os.rename(venv, old)
                shutil.rmtree(old, ignore_errors=True)
            os.rename(building_dir, venv)
        except BaseException as error:
            for _ in range(50):  # a killed installer's last writes may still land: until the folder is gone
                shutil.rmtree(building_dir, ignore_errors=True)
                if not os.path.exists(building_dir):
                    break
                time.sleep(0.1)
            if isinstance(error, subprocess.CalledProcessError):
                _fail(f"setting up the environment failed: see {log}, or run `make install` in {ROOT}")
            if isinstance(error, OSError):
                _fail(f"setting up the environment failed ({error}): run `make install` in {ROOT}")
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)


def _step(command: list[str], check: bool = False, **options):
    """subprocess.run in a process group of its own: interrupted (SIGTERM, Ctrl-C), the whole group is killed,
    so no installer's helper process goes on writing into the folder being removed."""
    import signal
    import subprocess

    process = subprocess.Popen(command, process_group=0, **options)
    try:
        returncode = process.wait()
    except BaseException:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()
        raise
    if check and returncode:
        raise subprocess.CalledProcessError(returncode, command)
    return subprocess.CompletedProcess(command, returncode)


def _install(python: str, output, cwd: str) -> None:
    """Install the locked dependencies (requirements/plugin.txt, hash-checked), then the package without resolving
    anything again; with uv when it can be had (half the time of pip on two cores: about 15 s against 30 s,
    measured from an empty cache), else with pip."""
    import shutil

    lock = os.path.join(ROOT, LOCK)
    run = dict(stdout=output, stderr=output, cwd=cwd)
    uv = shutil.which("uv")
    if uv is None and _step([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", UV],
                            **run).returncode == 0:
        uv = os.path.join(os.path.dirname(python), "uv")
    if uv:
        steps = [[uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, *arguments]
                 for arguments in (["--require-hashes", "-r", lock], ["--no-deps", ROOT])]
        if all(_step(step, **run).returncode == 0 for step in steps):
            return
    for arguments in (["--require-hashes", "--no-deps", "-r", lock], ["--no-deps", ROOT]):
        _step([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *arguments], check=True,
              **run)


def start_preparing(index: str | None = None, environ=None) -> None:
    """Build the environment (and then index `index`) in a detached process; it writes to the setup log and
    holds no descriptor of this one. A second one while a build runs waits for it and finds it done."""
    from ..processes import detach

    command = [sys.executable, os.path.abspath(__file__), "prepare", *(["--index", index] if index else [])]
    try:
        os.makedirs(os.path.dirname(log_path()), exist_ok=True)
    except OSError:
        pass  # then the log cannot be opened either, and the build writes nowhere
    detach(command, log_path(), dict(os.environ if environ is None else environ), cwd=ROOT)


def prepare(index: str | None) -> int:
    """Build the environment if it is missing, then index `index` (a memories directory) with it."""
    import subprocess

    venv = venv_path()
    if not current(venv):
        build(venv, quiet=True)
    if not index:
        return 0
    if not os.path.isdir(index):
        sys.stderr.write(f"environment.py: memories directory {index} not found: nothing indexed\n")
        return 3
    return subprocess.run([os.path.join(venv, "bin", "python"), os.path.join(ROOT, "scripts", "index.py"),
                           "--no-wait", "--memories", index], cwd=ROOT).returncode


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["prepare"]:
        target = arguments[2] if arguments[1:2] == ["--index"] and len(arguments) > 2 else None
        sys.exit(prepare(target))
    if not current(venv_path()):
        build(venv_path())
