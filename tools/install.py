"""Build the project's environment from its lock, saying what it is doing and how far it is (for `make install`).

    python3 tools/install.py VENV LOCK [EXTRA_SPEC]

Creates VENV when missing, installs exactly the pinned, hash-checked requirements in LOCK (requirements/*.txt,
written by `make lock`), then the project itself, editable, without resolving anything again. Progress goes to
stderr line by line, so it shows in a log or CI as well as on a terminal. Standard library only: it runs
before the environment exists. Exit codes: 0 done; 1 a step failed (pip's own message is shown above)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", re.M)


def say(message: str) -> None:
    sys.stderr.write(f"install: {message}\n")
    sys.stderr.flush()


def pins(lock: str) -> int:
    with open(lock, encoding="utf-8") as handle:
        return len(PIN.findall(handle.read()))


def install_locked(python: str, lock: str) -> int:
    """pip install -r LOCK --require-hashes, its output read line by line into a count of packages."""
    total, done, started = pins(lock), 0, time.monotonic()
    command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
               "--require-hashes", "--no-deps", "-r", lock]
    say(f"installing the pinned packages of {os.path.relpath(lock, ROOT)} (pip): {total} pins, those for other "
        "platforms or Pythons left out")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    shown: list[str] = []
    for line in process.stdout:
        shown.append(line)
        words = line.split()
        if line.startswith(("Collecting ", "Processing ", "Requirement already satisfied: ")):
            done += 1  # Processing: a wheel from a local folder or index, named by its file
            name = (words[1] if line.startswith("Collecting ") else words[3] if line.startswith("Requirement")
                    else "==".join(os.path.basename(words[1]).split("-")[:2]))
            say(f"[{done}/{total}] {name} ({time.monotonic() - started:.0f} s)")
        elif line.startswith("Ignoring "):
            total -= 1  # a pin for another platform or Python: pip names them all before it collects any
        elif line.startswith("Installing collected packages:"):
            count = len(line.split(":", 1)[1].split(","))
            say(f"unpacking {count} packages into the environment ({time.monotonic() - started:.0f} s so far)")
        elif line.startswith("Successfully installed"):
            say(f"installed in {time.monotonic() - started:.0f} s")
    code = process.wait()
    if code != 0:
        sys.stderr.writelines(shown[-20:])
    return code


def main(arguments: list[str]) -> int:
    if len(arguments) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    venv, lock = arguments[0], os.path.abspath(arguments[1])
    spec = arguments[2] if len(arguments) == 3 else "."
    python = os.path.join(venv, "bin", "python")
    started = time.monotonic()
    if not os.path.exists(python):
        say(f"creating the virtual environment {venv}")
        if subprocess.run([sys.executable, "-m", "venv", venv]).returncode != 0:
            return 1
    if install_locked(python, lock) != 0:
        say(f"pip could not install {os.path.relpath(lock, ROOT)}: see its message above")
        return 1
    say("installing memory-search itself (editable, no dependencies)")
    editable = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "-e", spec]
    if subprocess.run(editable, cwd=ROOT).returncode != 0:
        say("pip could not install the project: see its message above")
        return 1
    say(f"environment ready in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
