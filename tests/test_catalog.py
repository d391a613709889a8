"""db.py indexes and grant-read on the test's own database: what a team's indexers and search server rely on.
(tests/test_team.py runs the same across machines.)"""

from __future__ import annotations

import json

import psycopg
import pytest
from conftest import index, run_script


@pytest.fixture
def notes(env, memories):
    memories.write("wiki/tea.md", "# Tea\n\nBrew green tea at 70 degrees.", title="Tea")
    memories.write("wiki/bread.md", "# パン\n\n強力粉でパンを焼く。", title="パン")
    index(env, memories)
    return memories


def test_indexes_lists_each_folder_with_its_prefix_and_counts(env, notes):
    listed = json.loads(run_script("db", "indexes", "--json", env=env, check=True).stdout)
    mine = [entry for entry in listed if entry["memories_dir"] == str(notes.root)]
    assert len(mine) == 1 and mine[0]["files"] == 2 and mine[0]["chunks"] >= 2
    assert mine[0]["prefix"].startswith("memsearch_") and mine[0]["last_indexed_at"]
    text = run_script("db", "indexes", env=env, check=True).stdout
    assert any(line.startswith(mine[0]["prefix"] + "\t") and str(notes.root) in line for line in text.splitlines())


def test_a_read_role_reads_every_index_and_writes_nothing(env, database, notes, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text("reader-password-123\n")
    granted = run_script("db", "grant-read", "ms_reader", "--password-file", str(password_file), env=env, check=True)
    assert "PASSWORD ***" in granted.stdout and "reader-password-123" not in granted.stdout + granted.stderr
    with psycopg.connect(psycopg.conninfo.make_conninfo(database, user="ms_reader", password="reader-password-123"),
                         autocommit=True) as conn:
        prefix = next(entry["prefix"] for entry in json.loads(run_script("db", "indexes", "--json", env=env).stdout)
                      if entry["memories_dir"] == str(notes.root))
        assert conn.execute(f"SELECT count(*) FROM {prefix}__files").fetchone()[0] == 2
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"DELETE FROM {prefix}__files")


@pytest.mark.parametrize("arguments, message", [
    (["bad role!"], "role 'bad role!': use letters, digits and _"),
    (["nobody_here"], "role 'nobody_here' does not exist: give a password to create it"),
    (["ms_short", "--password-file", "SHORT"], "the password is shorter than 12 characters: give a longer one"),
    (["ms_missing", "--password-file", "/nonexistent/password"], "cannot read /nonexistent/password"),
])
def test_grant_read_refuses_what_it_cannot_do_in_one_line(env, tmp_path, arguments, message):
    short = tmp_path / "short"
    short.write_text("abc")
    result = run_script("db", "grant-read", *[str(short) if arg == "SHORT" else arg for arg in arguments], env=env)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1
