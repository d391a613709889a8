"""Claude Code's own memories as a source beside the memories directory (MEMORIES_CLAUDE_CODE): auto memory and
CLAUDE.md files indexed as kind claude with their project, found with the same filters, read-only."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import SCRIPTS, MemoriesDir, index, run_script, search, seeded
from hypothesis import HealthCheck, given, settings, strategies as st

AUTO_MEMORY = """\
# Memory

- [Debugging](debugging.md): the flaky payment test is a race in the webhook handler
- Build with `pnpm build:staging`; the staging variables load themselves
"""
DEBUGGING = """\
# Debugging notes

The payment test fails now and then: a race between the webhook handler and the order writer.
Run it with `pnpm test --runInBand` to confirm before touching the handler.
"""


class ClaudeHome:
    """A home folder with Claude Code's memories in it: ~/.claude and project folders."""

    def __init__(self, home: Path):
        self.home = home
        self.claude = home / ".claude"
        self.claude.mkdir(parents=True)

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def auto_memory(self, folder_name: str, name: str, text: str) -> Path:
        return self.write(self.claude / "projects" / folder_name / "memory" / name, text)

    def project(self, relative: str) -> Path:
        """A project folder under the home, and its folder under ~/.claude/projects as Claude Code names it."""
        folder = self.home / relative
        folder.mkdir(parents=True, exist_ok=True)
        (self.claude / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(folder))).mkdir(parents=True, exist_ok=True)
        return folder

    def snapshot(self) -> dict[str, tuple]:
        """Every file and folder under the home: its kind, size, time and content hash."""
        state = {}
        for folder, folders, files in os.walk(self.home):
            for name in folders + files:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest() if name in files else None
                state[path] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
        return state


@pytest.fixture
def claude_home(tmp_path) -> ClaudeHome:
    home = ClaudeHome(tmp_path / "home")
    home.auto_memory("-home-u-src-alpha", "MEMORY.md", AUTO_MEMORY)
    debugging = home.auto_memory("-home-u-src-alpha", "debugging.md", DEBUGGING)
    os.utime(debugging, (1_780_000_000, 1_780_000_000))  # changed after MEMORY.md (2026-05-28 UTC)
    os.utime(debugging.parent / "MEMORY.md", (1_770_000_000, 1_770_000_000))
    home.write(home.claude / "CLAUDE.md", "# My preferences\n\nIndent with two spaces; prefer const over let.\n")
    project = home.project("src/memory-search")
    home.write(project / "CLAUDE.md", "# memory-search\n\nRun the database migrations with `make migrate` "
                                      "before starting the API server.\n")
    home.write(project / ".claude" / "CLAUDE.md", "# Local\n\nMy sandbox answers on port 4100.\n")
    home.write(project / "notes.md", "# Not a memory\n\nA project's other files stay out of the index.\n")
    return home


@pytest.fixture
def memories(tmp_path) -> MemoriesDir:
    memories = MemoriesDir(tmp_path / "memories")
    memories.write("wiki/dev/payments.md", "# Payments\n\nThe payment service retries webhooks three times.\n",
                   title="Payments", project="alpha")
    return memories


def with_claude(env: dict, home: ClaudeHome, setting: str = "1") -> dict:
    return {**env, "HOME": str(home.home), "MEMORIES_CLAUDE_CODE": setting}


def test_claude_codes_memories_are_found_with_scope_claude_and_their_project(env, claude_home, memories):
    before = claude_home.snapshot()
    claude_env = with_claude(env, claude_home)
    stats = index(claude_env, memories)
    assert (stats["success"], stats["failed"]) == (6, 0)  # none of Claude Code's files has frontmatter

    auto = search(claude_env, memories, "payment test race", "--scope", "claude", "--project", "alpha")
    memory = claude_home.claude / "projects/-home-u-src-alpha/memory"
    assert {hit["path"] for hit in auto} == {str(memory / "debugging.md"), str(memory / "MEMORY.md")}
    assert {(hit["kind"], hit["project"]) for hit in auto} == {("claude", "alpha")}
    assert auto[0]["path"] == str(memory / "debugging.md") and auto[0]["title"] == "Debugging notes"
    # The same words without the scope reach the memories directory too; with another scope, only it.
    assert str(memories.root / "wiki/dev/payments.md") in [hit["path"] for hit in search(
        claude_env, memories, "payment test race", "--project", "alpha")]
    assert [hit["kind"] for hit in search(claude_env, memories, "payment test race", "--scope", "wiki")] == ["wiki"]

    project = claude_home.home / "src/memory-search"  # a name with a dash, found from the encoded folder name
    instructions = search(claude_env, memories, "database migrations", "--scope", "claude", "--project",
                          "memory-search")
    assert {hit["path"] for hit in instructions} == {str(project / "CLAUDE.md"), str(project / ".claude/CLAUDE.md")}
    user = search(claude_env, memories, "indent with two spaces", "--scope", "claude", "--top", "1")
    assert user[0]["path"] == str(claude_home.claude / "CLAUDE.md") and user[0]["project"] is None

    exported = run_script("export", "--scope", "claude", "--format", "json", env=claude_env, memories=memories,
                          check=True)
    rows = json.loads(exported.stdout)
    assert {row["path"] for row in rows} == {str(memory / "MEMORY.md"), str(memory / "debugging.md"),
                                              str(claude_home.claude / "CLAUDE.md"), str(project / "CLAUDE.md"),
                                              str(project / ".claude/CLAUDE.md")}
    assert str(project / "notes.md") not in exported.stdout
    related = run_script("related", str(memory / "MEMORY.md"), "--format", "json", env=claude_env,
                         memories=memories, check=True)
    assert str(memory / "debugging.md") in [item["path"] for item in json.loads(related.stdout)]
    recent = json.loads(run_script("recent", "--kind", "claude", "--project", "alpha", "--format", "json",
                                   env=claude_env, memories=memories, check=True).stdout)
    assert [(item["path"], item["kind"], item["project"]) for item in recent] == [
        (str(memory / "debugging.md"), "claude", "alpha"), (str(memory / "MEMORY.md"), "claude", "alpha")]
    verified = run_script("stats", "--verify", env=claude_env, memories=memories)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert index(claude_env, memories)["skipped"] == 6  # nothing new: none read again
    assert claude_home.snapshot() == before  # read-only: nothing under the home changed


def test_without_the_setting_claude_codes_memories_are_not_indexed_and_turning_it_off_removes_them(
        env, claude_home, memories):
    assert index(with_claude(env, claude_home, "0"), memories)["success"] == 1
    assert search(with_claude(env, claude_home, "0"), memories, "payment test race", "--scope", "claude") == []
    assert index(with_claude(env, claude_home), memories)["success"] == 5
    off = index({**env, "HOME": str(claude_home.home)}, memories)
    assert off["deleted"] == 5
    assert search(with_claude(env, claude_home), memories, "payment test race", "--scope", "claude") == []


def test_a_claude_folder_that_went_away_keeps_its_records_and_says_so(env, claude_home, memories, tmp_path):
    claude_env = with_claude(env, claude_home)
    index(claude_env, memories)
    away = tmp_path / "away"
    claude_home.claude.rename(away)  # the home on a disk that is not mounted now
    run = run_script("index", env=claude_env, memories=memories)
    assert run.returncode == 4
    assert "kept in the index as it was" in run.stderr and str(claude_home.claude) in run.stderr
    kept = json.loads(run_script("export", "--scope", "claude", "--format", "json", env=claude_env,
                                 memories=memories, check=True).stdout)
    assert len({row["path"] for row in kept}) == 5  # the project's CLAUDE.md files too: its folder is unknown now
    away.rename(claude_home.claude)
    back = index(claude_env, memories)
    assert (back["deleted"], back["success"], back["skipped"]) == (0, 0, 6)

    project = claude_home.home / "src/memory-search"
    project.rename(tmp_path / "project-away")  # a project folder that went away
    run = run_script("index", env=claude_env, memories=memories)
    assert run.returncode == 4 and f"the project folder {project} is not found" in run.stderr
    (tmp_path / "project-away").rename(project)
    assert index(claude_env, memories)["deleted"] == 0

    (claude_home.claude / "projects/-home-u-src-alpha/memory/debugging.md").unlink()  # forgotten by Claude Code
    assert index(claude_env, memories)["deleted"] == 1


def test_the_mcp_server_searches_and_reads_claude_codes_memories_and_nothing_else(env, claude_home, memories):
    pytest.importorskip("mcp", reason="the mcp extra is not installed (make install installs it)")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    claude_env = {**with_claude(env, claude_home), "MEMORIES_DIR": str(memories.root)}
    index(claude_env, memories)
    memory = claude_home.claude / "projects/-home-u-src-alpha/memory"
    project = claude_home.home / "src/memory-search"

    async def main():
        parameters = StdioServerParameters(command=sys.executable, args=[str(SCRIPTS / "mcp_server.py")],
                                           env=claude_env)
        with open(claude_home.home.parent / "mcp-server.log", "a") as log:
            async with stdio_client(parameters, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    found = await session.call_tool("search", {"query": "payment test race", "scope": "claude",
                                                               "project": "alpha"})
                    latest = await session.call_tool("recent", {"kind": "claude", "project": "alpha"})
                    text = await session.call_tool("read_memory", {"path": str(memory / "debugging.md")})
                    refused = []
                    for path in (project / "notes.md", claude_home.claude / "settings.json"):
                        try:
                            await session.call_tool("read_memory", {"path": str(path)})
                        except MCPError as error:
                            refused.append(error.message)
                    return (json.loads(found.content[0].text), json.loads(latest.content[0].text),
                            text.content[0].text, refused)

    hits, latest, text, refused = anyio.run(main)
    assert hits == search(claude_env, memories, "payment test race", "--scope", "claude", "--project", "alpha")
    assert hits[0]["path"] == str(memory / "debugging.md") and hits[0]["kind"] == "claude"
    assert latest == json.loads(run_script("recent", "--kind", "claude", "--project", "alpha", "--format", "json",
                                           env=claude_env, memories=memories, check=True).stdout)
    assert [item["path"] for item in latest] == [str(memory / "debugging.md"), str(memory / "MEMORY.md")]
    assert text == DEBUGGING
    assert len(refused) == 2 and all("outside the memories directory" in message for message in refused)


def test_a_project_folder_is_found_from_its_encoded_name_whatever_its_characters(tmp_path):
    from memory_search.directory.sources import encoded, project_folder

    base = tmp_path / "projects"

    @seeded
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.text(alphabet="ab-_. 日", min_size=1, max_size=6).filter(lambda name: name not in (".", "..")),
                    min_size=1, max_size=3))
    def check(parts):
        shutil.rmtree(base, ignore_errors=True)
        folder = base.joinpath(*parts)
        folder.mkdir(parents=True)
        (base / "-".join(parts)).mkdir(exist_ok=True)  # a sibling whose name encodes alike, in the way
        found = project_folder(encoded(str(folder)))
        # Another folder may share the encoded name (a-b and a_b): any that exists and encodes alike is right.
        assert found is not None and found.is_dir() and encoded(str(found)) == encoded(str(folder))

    check()
    shutil.rmtree(base)
    assert project_folder("-no-such-folder-anywhere") is None and project_folder("relative") is None


def test_the_setting_and_the_plugin_option_name_the_claude_folders(tmp_path):
    from memory_search.config import Settings
    from memory_search.faces.plugin import session_environment

    home = str(tmp_path)

    def folders(**environ) -> tuple[Path, ...]:
        return Settings.from_env({"HOME": home, **environ}, cwd=home).claude_code

    assert folders() == folders(MEMORIES_CLAUDE_CODE="false") == folders(MEMORIES_CLAUDE_CODE="0") == ()
    assert folders(MEMORIES_CLAUDE_CODE="1") == folders(MEMORIES_CLAUDE_CODE="true") == (tmp_path / ".claude",)
    assert folders(MEMORIES_CLAUDE_CODE="on", CLAUDE_CONFIG_DIR="/srv/claude") == (Path("/srv/claude"),)
    assert folders(MEMORIES_CLAUDE_CODE=f"~/a{os.pathsep}/b") == (tmp_path / "a", Path("/b"))

    manifest = json.loads((SCRIPTS.parent / ".claude-plugin/plugin.json").read_text())
    option = manifest["userConfig"]["claude_code_memories"]
    assert (option["type"], option["default"]) == ("boolean", False)
    assert manifest["mcpServers"]["memory-search"]["env"]["MEMORIES_CLAUDE_CODE"] == \
        "${user_config.claude_code_memories}"
    exported = session_environment({"CLAUDE_PLUGIN_OPTION_CLAUDE_CODE_MEMORIES": "true"})  # the hooks' side
    assert exported["MEMORIES_CLAUDE_CODE"] == "true"
