"""The reference pages' generated parts match the code (`make docs` writes them again), and the one table of
environment variables (config.ENVIRONMENT) names every variable the code reads, and only those."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT

from memory_search import config

GENERATED = ["references/commands.md", "references/configuration.md"]
VARIABLE = re.compile(r"[\"'](MEMORIES_[A-Z_]+|XDG_[A-Z_]+|VOYAGE_API_KEY|COCOINDEX_DATABASE_URL)[\"']")
TEST_ONLY = {"MEMORIES_TEST_SEED"}


def test_the_generated_parts_of_the_reference_pages_match_the_code():
    cog = [sys.executable, "-m", "cogapp", "--check", "-I", str(ROOT / "tools"), *GENERATED]
    result = subprocess.run(cog, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"run `make docs`: {result.stdout}{result.stderr}"


def test_the_environment_table_names_every_variable_the_code_reads():
    read = set()
    for folder in ("src", "scripts", "hooks"):
        for path in (ROOT / folder).rglob("*.py"):
            read |= set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    listed = [variable.name for variable in config.ENVIRONMENT]
    assert len(listed) == len(set(listed)), "a variable is listed twice"
    assert read - TEST_ONLY - set(listed) == set(), "read but not in config.ENVIRONMENT"
    assert set(listed) - read == set(), "in config.ENVIRONMENT but read nowhere"


def test_the_environment_the_help_shows_is_in_the_table():
    shown = set()
    for text in (config.ENVIRONMENT_HELP, config.RECENT_ENVIRONMENT_HELP, config.DATABASE_ENVIRONMENT_HELP):
        shown |= set(re.findall(r"\b(?:MEMORIES_[A-Z_]+|XDG_[A-Z_]+|VOYAGE_API_KEY|COCOINDEX_DATABASE_URL)\b", text))
    assert shown <= {variable.name for variable in config.ENVIRONMENT}
