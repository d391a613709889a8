"""Every script in scripts/ (found, not listed) answers --help with its examples, environment and exit codes,
and every option it shows is documented in references/commands.md, in that script's section."""

from __future__ import annotations

import re
import subprocess

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


@pytest.mark.parametrize("script", sorted(path.name for path in SCRIPTS.glob("*.py")))
def test_a_script_run_by_its_path_never_starts_a_version_managers_python3_shim(base_env, tmp_path, script):
    """pyenv, asdf and mise put a shell script named python3 first on PATH; `#!/usr/bin/env python3` ran it on
    every call (130-525 ms a warm search against 45-73 ms). The script starts its environment's python itself."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    if not venv_python.exists():
        pytest.skip("no .venv beside scripts/ (`make install` builds it)")
    shims, called = tmp_path / "shims", tmp_path / "shim-called"
    shims.mkdir()
    (shims / "python3").write_text(f'#!/bin/sh\necho "$@" >> {called}\nexec {venv_python} "$@"\n')
    (shims / "python3").chmod(0o755)
    environ = {**base_env, "PATH": f"{shims}:{base_env['PATH']}"}
    shown = subprocess.run([str(SCRIPTS / script), "--help"], env=environ, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0 and "Exit codes:" in shown.stdout, shown.stderr
    assert not called.exists(), called.read_text()

    plugin_venv = tmp_path / "plugin-venv"  # the plugin's environment (MEMORIES_VENV) comes first
    (plugin_venv / "bin").mkdir(parents=True)
    (plugin_venv / "bin" / "python").write_text('#!/bin/sh\necho "plugin python: $*"\n')
    (plugin_venv / "bin" / "python").chmod(0o755)
    ran = subprocess.run([str(SCRIPTS / script), "--top", "1"], env={**environ, "MEMORIES_VENV": str(plugin_venv)},
                         capture_output=True, text=True, timeout=60)
    assert ran.stdout == f"plugin python: {SCRIPTS / script} --top 1\n" and not called.exists()
