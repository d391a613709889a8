"""Starting a process that outlives this one, standard library only: the warm path and the plugin's hooks start
one before the Python environment exists (faces.environment, faces.helper_processes), a search starts a
background index run (indexing.auto)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding memory_search


def detach(command: list[str], log: str | None = None, env: Mapping[str, str] | None = None,
           cwd: str | None = None) -> None:
    """Start `command` in a session of its own, holding no descriptor of this process: no input, its output
    appended to `log` (nowhere without one, or when it cannot be opened). A command that cannot be started is
    let go: the caller carries on without it."""
    import subprocess

    output = subprocess.DEVNULL
    if log is not None:
        try:
            output = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError:
            pass
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True,
                         close_fds=True, cwd=cwd, env=env)
    except OSError:
        pass
    finally:
        if output != subprocess.DEVNULL:
            os.close(output)


def detach_module(module: str, arguments: list[str], log: str | None = None,
                  env: Mapping[str, str] | None = None) -> None:
    """detach() `python -m module arguments` under this Python, which finds this package whatever the
    environment's PYTHONPATH (`env`: this process's environment when None)."""
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_PARENT, environment.get("PYTHONPATH")]))
    detach([sys.executable, "-m", module, *arguments], log, environment)
