"""How a script in scripts/ starts: the warm helper's answer when one serves it, else the command in
this process, under the skill's own virtual environment (.venv at the top of the checkout).

Standard library only until the environment is ready: Claude Code calls `scripts/search.py` with
whatever python3 is on PATH. When that Python is the
version the .venv was built with, the .venv's packages replace its own site-packages in place,
which spares a second interpreter start; otherwise, when it lacks the dependencies, the script is
re-run in the skill's .venv (one exec). When there is no .venv yet (a plugin installed from a
marketplace, where nobody ran `make install`), the first call builds it: in a temporary folder
beside it, renamed into place only when complete, so an interrupted build never leaves a half-built
environment. Running this file builds it ahead of time (the plugin's SessionStart hook does, in the
background)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXTRAS = "faces"  # the MCP server and the HTTP API need these too
HELPED = ("search", "recent", "stats", "similar")  # the read-only scripts a warm helper may answer
NEEDS = {"serve": ("starlette", "uvicorn"), "mcp_server": ("mcp",)}  # beyond the core dependencies


def launch(script: str) -> None:
    """Run scripts/<script>.py: through the warm helper, else in this process."""
    start_helper = False
    if script in HELPED:
        from . import client

        start_helper = client.answer(script)  # exits here with a warm helper's answer
    ensure(*NEEDS.get(script, ()), background=script == "mcp_server")
    if script == "mcp_server":
        from .mcp_server import main

        main()
        return
    from .cli import COMMANDS, run

    if script == "serve":
        from .http_api import serve_command

        run(serve_command, "serve.py")
    run(COMMANDS[script], f"{script}.py", start_helper=start_helper)


def ensure(*modules: str, background: bool = False) -> None:
    """Use the skill's .venv: in place when this Python is its version, else by re-running under it when
    this Python lacks `psycopg` and `modules`, building it first.

    background: start the build detached and exit with one line instead of waiting for it (for the
    MCP server, whose client gives up on a server that does not answer within seconds)."""
    venv = os.environ.get("MEMORIES_VENV") or os.path.join(ROOT, ".venv")
    if sys.prefix == venv:  # the common case, decided without importing anything
        return
    if _enter(venv, modules):
        return
    import importlib.util

    if all(importlib.util.find_spec(name) is not None for name in ("psycopg", *modules)):
        return
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python) and not os.environ.get("MEMORIES_VENV"):
        if background:
            _build_in_background()
        build(venv)
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, *sys.argv])
    _fail(f"the dependencies are not installed: run `make install` in {ROOT}")


def _enter(venv: str, modules: tuple[str, ...]) -> bool:
    """Run on with the .venv's packages instead of this Python's own, as the .venv's python would,
    when the .venv was built for this Python version (same site-packages folder name, so the same
    extension modules load); False when it was not, or is not built yet."""
    packages = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}{sys.abiflags}",
                            "site-packages")
    python = os.path.join(venv, "bin", "python")
    if not (os.path.isdir(packages) and os.path.exists(python)):
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
    # What the .venv's python would see; helpers started from here run under the .venv's python.
    sys.prefix = sys.exec_prefix = venv
    sys.executable = python
    return True


def _fail(message: str) -> None:
    sys.stderr.write(f"{os.path.basename(sys.argv[0])}: error: {message}\n")
    sys.exit(1)


def _build_in_background() -> None:
    import subprocess

    log = os.path.join(ROOT, ".venv-setup.log")
    try:
        subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=ROOT)
    except OSError as error:
        _fail(f"cannot start setting up the environment ({error.strerror}): run `make install` in {ROOT}")
    _fail(f"setting up the Python environment in {os.path.join(ROOT, '.venv')} (first run only, about a minute "
          f"or two; log in {log}): try again then")


def build(venv: str) -> None:
    """Create the environment at `venv` unless another process did meanwhile (one builder at a time)."""
    import fcntl
    import shutil
    import signal
    import subprocess

    if sys.version_info < (3, 10):
        _fail(f"Python 3.10 or newer is needed (this is {sys.version.split()[0]}): put one first on PATH")
    parent = os.path.dirname(venv)
    try:
        lock = open(os.path.join(parent, ".venv.lock"), "w")
    except OSError as error:
        _fail(f"cannot set up the environment in {venv} ({error.strerror}): run `make install` in {ROOT}")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits here, then finds the environment ready
        if os.path.exists(os.path.join(venv, "bin", "python")):
            return
        for name in os.listdir(parent):  # left by a build that was killed
            if name.startswith(".venv.building-"):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        building = os.path.join(parent, f".venv.building-{os.getpid()}")
        log = os.path.join(parent, ".venv-setup.log")
        sys.stderr.write(f"{os.path.basename(sys.argv[0])}: setting up the Python environment in {venv} "
                         f"(first run only, about a minute; log in {log})\n")
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still remove the unfinished folder
        try:
            with open(log, "w") as output:
                subprocess.run([sys.executable, "-m", "venv", building], check=True, stdout=output, stderr=output)
                subprocess.run([os.path.join(building, "bin", "python"), "-m", "pip", "install", "--quiet",
                                "--disable-pip-version-check", "-e", f"{ROOT}[{EXTRAS}]"],
                               check=True, stdout=output, stderr=output, cwd=ROOT)
            os.rename(building, venv)
        except BaseException as error:
            shutil.rmtree(building, ignore_errors=True)
            if isinstance(error, subprocess.CalledProcessError):
                _fail(f"setting up the environment failed: see {log}, or run `make install` in {ROOT}")
            if isinstance(error, OSError):
                _fail(f"setting up the environment failed ({error}): run `make install` in {ROOT}")
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    target = os.environ.get("MEMORIES_VENV") or os.path.join(ROOT, ".venv")
    if not os.path.exists(os.path.join(target, "bin", "python")):
        build(target)
