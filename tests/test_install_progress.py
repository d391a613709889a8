"""tools/install.py's progress (`make install`, `make demo`): the packages counted as pip takes them, the pins for
another platform left out of the count from the start."""

from __future__ import annotations

import re
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import install  # noqa: E402


def _pin(lock: str, name: str) -> str:
    """The lines of one pin in requirements/dev.txt, hashes and all."""
    lines = lock.splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith(f"{name}=="))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    --hash"):
        end += 1
    return "\n".join(lines[start:end]) + "\n"


def test_the_count_leaves_out_the_pins_for_other_platforms_from_the_start(tmp_path, capsys):
    locked = (ROOT / "requirements/dev.txt").read_text(encoding="utf-8")
    lock = tmp_path / "lock.txt"  # a Windows-only pin first, as the real lock has some, then one for here
    lock.write_text(_pin(locked, "colorama") + _pin(locked, "idna"), encoding="utf-8")
    # The project's environment already holds idna: pip checks it and changes nothing.
    assert install.install_locked(str(ROOT / ".venv/bin/python"), str(lock)) == 0
    counted = re.findall(r"install: \[(\d+)/(\d+)\] (\S+)", capsys.readouterr().err)
    assert counted == [("1", "1", _pin(locked, "idna").split()[0])]
