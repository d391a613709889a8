"""The lock (requirements/*.txt, written by `make lock`) holds every pin of pyproject.toml, with hashes: an edit
to the dependencies that was not locked again fails here rather than installing something else."""

from __future__ import annotations

import re
import tomllib

import pytest
from conftest import ROOT

LOCKS = {"plugin.txt": ("faces",), "dev.txt": ("faces", "test"), "langbot.txt": ("faces", "test", "langbot")}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock: str) -> dict[str, set[str]]:
    """Each package's pinned versions (one per Python version or platform), each pin with its hashes."""
    text = (ROOT / "requirements" / lock).read_text(encoding="utf-8")
    pins: dict[str, set[str]] = {}
    for entry in re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2]):
        name, version = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\\n]+)", entry).groups()
        assert "--hash=sha256:" in entry, f"{lock}: {name} has no hash"
        pins.setdefault(normalized(name), set()).add(version)
    return pins


@pytest.mark.parametrize("lock, extras", LOCKS.items())
def test_every_pin_of_pyproject_is_locked_at_its_version(lock, extras):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    pins = locked(lock)
    for requirement in wanted:
        name, version = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==(\S+)", requirement).groups()
        assert pins.get(normalized(name)) == {version}, f"{requirement} is not what {lock} holds: run `make lock`"
