"""Every script in scripts/ (found, not listed) answers --help with its examples, environment and exit codes,
and every option it shows is documented in references/commands.md, in that script's section."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, SCRIPTS, run_process

REFERENCE = ROOT / "references" / "commands.md"
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def options(help_text: str) -> set[str]:
    """The options a --help lists under Options: (both names of a --x / --no-x pair), less --help."""
    section = re.search(r"^Options:\n(.*?)(?=\n\n|\Z)", help_text, re.S | re.M)
    return set(OPTION.findall(section.group(1))) - {"--help"} if section else set()


def subcommands(help_text: str) -> list[str]:
    section = re.search(r"^Commands:\n(.*?)(?=\n\n|\Z)", help_text, re.S | re.M)
    return re.findall(r"^  ([a-z][a-z-]*)", section.group(1), re.M) if section else []


def reference_section(script: str) -> str:
    text = REFERENCE.read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(script)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert found, f"references/commands.md has no section for {script}"
    return found.group(1)


@pytest.mark.parametrize("script", sorted(path.name for path in SCRIPTS.glob("*.py")))
def test_every_script_documents_examples_environment_exit_codes_and_each_option(base_env, script):
    shown = run_process(script.removesuffix(".py"), "--help", env=base_env, check=True).stdout
    for heading in ("Examples:", "Environment:", "Exit codes:"):
        assert heading in shown, f"{script} --help lacks {heading}"
    listed = options(shown)
    for command in subcommands(shown):
        listed |= options(run_process(script.removesuffix(".py"), command, "--help", env=base_env,
                                      check=True).stdout)
    documented = set(OPTION.findall(reference_section(script)))
    assert listed <= documented, f"{script}: {sorted(listed - documented)} not in references/commands.md"
