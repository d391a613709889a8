"""The examples README.md and SKILL.md show run as written, over the sample memories (examples/memories):
every script call in their shell blocks exits 0 with no traceback, and the Python blocks run.

Left out, each for its reason: commands that set up or stop the machine's database (db.py start/stop, the team
server's roles on db.internal), that run until stopped (--watch, serve.py, mcp_server.py) and what is not a
script of this repository (make, claude, export, curl)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, MemoriesDir, index, run_script

pytestmark = pytest.mark.e2e  # the 29 sample memories embedded (150 chunks): `make test-all`

SAMPLE = ROOT / "examples" / "memories"
SCRIPT_CALL = re.compile(r"(?:\$\{CLAUDE_SKILL_DIR\}/)?scripts/([a-z_]+)\.py")
NEVER_RUN = ("db.py stop", "db.py start", "db.internal", "--watch", "serve.py", "mcp_server.py")
# Stand-ins the documents use for a path a reader copies from a result.
PLACEHOLDERS = {"/abs/path/from/a/result.md": "{root}/wiki/search/embedding-model.md",
                "/abs/path/to/raw/session/2026-11-05/091130_x.md": "{root}/raw/session/2026-11-05/"
                                                                    "091130_7c2d9e41_2a3b4c5d.md"}


def shell_lines(document: str) -> list[str]:
    """The lines of the document's sh and bash blocks, continuations joined."""
    text = (ROOT / document).read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"^ *```(?:sh|bash)\n(.*?)^ *```", text, re.S | re.M):
        lines += [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return lines


def script_calls(document: str) -> list[str]:
    return [line for line in shell_lines(document)
            if SCRIPT_CALL.search(line) and not any(skip in line for skip in NEVER_RUN)]


@pytest.fixture(scope="module")
def sample(tmp_path_factory, base_env, database) -> MemoriesDir:
    """The sample memories, copied and indexed once for the module."""
    memories = MemoriesDir(tmp_path_factory.mktemp("documented") / "memories")
    shutil.copytree(SAMPLE, memories.root, dirs_exist_ok=True)
    index(base_env, memories)
    return memories


def run_documented(line: str, base_env: dict, sample: MemoriesDir, cwd: Path):
    for placeholder, path in PLACEHOLDERS.items():
        line = line.replace(placeholder, path.format(root=sample.root))
    words = shlex.split(line, comments=True)
    environ = {**base_env, "MEMORIES_DIR": str(sample.root), "XDG_STATE_HOME": str(cwd / "state")}
    while "=" in words[0] and not SCRIPT_CALL.search(words[0]):  # VAR=value before the command
        name, value = words.pop(0).split("=", 1)
        environ[name] = value
    script = SCRIPT_CALL.fullmatch(words[0]).group(1)
    return run_script(script, *words[1:], env=environ, cwd=str(cwd))


@pytest.mark.parametrize("document", ["README.md", "SKILL.md"])
def test_every_documented_script_call_runs_as_written(document, base_env, sample, tmp_path):
    calls = script_calls(document)
    assert len(calls) >= 10, f"{document}: the examples were not found"
    for line in calls:
        result = run_documented(line, base_env, sample, tmp_path)
        assert result.returncode == 0, f"{document}: `{line}` exited {result.returncode}: {result.stderr}"
        assert "Traceback" not in result.stderr, f"{document}: `{line}`: {result.stderr}"


def test_the_readmes_python_examples_run(base_env, sample, monkeypatch):
    for key, value in base_env.items():
        monkeypatch.setenv(key, value)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 2, "README.md's Python examples were not found"
    library, knowledge_base = blocks
    library = library.replace('memories_dir="~/memories"', f"memories_dir={str(sample.root)!r}")
    exec(compile(library, "README.md (From Python)", "exec"), {})
    namespace = {"text": "# Deploy\n\nデプロイは毎週木曜の夕方に行う。\n"}
    exec(compile(knowledge_base.replace('"support-notes"', '"readme-example"'), "README.md (LangBot)", "exec"),
         namespace)
    assert isinstance(namespace["hits"], list)
