"""Roles as a team sets them up on one database: the database owner, indexer roles that may create tables but
not roles, and a read-only role for the search server. Every role is a real PostgreSQL role in a database this
test makes (over the embedded server's local socket)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest
from conftest import SCRIPTS, MemoriesDir, run_process


class Team:
    """A database owned by a non-superuser owner (CREATEROLE), and indexer roles it made with CREATE on the
    schema: no CREATEROLE, and no membership of the owner in them."""

    def __init__(self, url: str):
        self.tag = uuid.uuid4().hex[:8]
        self.url = url
        self.host = url.split("host=")[1].split("&")[0]
        self.port = url.split("port=")[1].split("&")[0]
        self.database = f"team_{self.tag}"
        self.roles: list[str] = []

    def role(self, name: str) -> str:
        return f"{name}_{self.tag}"

    def url_of(self, role: str) -> str:
        return f"postgresql://{role}@/{self.database}?host={self.host}&port={self.port}"

    def sql(self, role: str, *statements: str, database: str | None = None) -> None:
        import psycopg

        target = self.url_of(role) if database is None else \
            f"postgresql://{role}@/{database}?host={self.host}&port={self.port}"
        with psycopg.connect(target, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def __enter__(self):
        owner = self.role("owner")
        self.roles = [owner]
        self.sql("postgres", f"CREATE ROLE {owner} LOGIN CREATEROLE",
                 f"CREATE DATABASE {self.database} OWNER {owner}", database="postgres")
        self.sql("postgres", "CREATE EXTENSION vector")
        return self

    def indexer(self, name: str) -> str:
        role = self.role(name)
        self.sql(self.role("owner"), f"CREATE ROLE {role} LOGIN", f"GRANT CREATE ON SCHEMA public TO {role}")
        self.roles.append(role)
        return role

    def __exit__(self, *exc):
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")
            for role in [*self.roles[1:], self.role("searcher"), self.roles[0]]:
                conn.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def team(database):
    with Team(database) as made:
        yield made


def as_role(env: dict, team: Team, role: str, **more) -> dict:
    return {**env, "MEMORIES_DATABASE_URL": team.url_of(role), **more}


def folder(root, name: str, words: str) -> MemoriesDir:
    memories = MemoriesDir(root / name)
    memories.write("wiki/note.md", f"# {name}\n\n{words}\n", title=name)
    return memories


def test_grant_read_names_the_role_that_must_run_it(env, team, tmp_path):
    indexer = team.indexer("indexer")
    alpha = folder(tmp_path, "alpha", "The quokka index was tuned.")
    run_process("index", env=as_role(env, team, indexer), memories=alpha, check=True)
    password = tmp_path / "password"
    password.write_text("searcher-password-1")
    searcher = team.role("searcher")

    by_indexer = run_process("db", "grant-read", searcher, "--password-file", str(password),
                             env=as_role(env, team, indexer))
    assert by_indexer.returncode == 1 and by_indexer.stdout == "" and by_indexer.stderr.count("\n") == 1
    assert "lacks CREATEROLE" in by_indexer.stderr and "database owner" in by_indexer.stderr, by_indexer.stderr

    owner = team.role("owner")
    by_owner = run_process("db", "grant-read", searcher, "--password-file", str(password),
                           env=as_role(env, team, owner))
    assert by_owner.returncode == 1 and by_owner.stderr.count("\n") == 1
    assert f"GRANT {indexer} TO {owner}" in by_owner.stderr, by_owner.stderr  # what makes the owner able to
    team.sql(owner, f"GRANT {indexer} TO {owner}")
    granted = run_process("db", "grant-read", searcher, "--password-file", str(password),
                          env=as_role(env, team, owner))
    assert granted.returncode == 0, granted.stderr
    assert f'ALTER DEFAULT PRIVILEGES FOR ROLE "{indexer}"' in granted.stdout and "PASSWORD ***" in granted.stdout
    assert "searcher-password-1" not in granted.stdout + granted.stderr


def test_tables_indexer_roles_create_later_stay_readable_and_serve_names_the_dbs_it_cannot_read(
        env, team, tmp_path):
    first, second = team.indexer("first"), team.indexer("second")
    owner, searcher = team.role("owner"), team.role("searcher")
    alpha = folder(tmp_path, "alpha", "The quokka index was tuned.")
    run_process("index", env=as_role(env, team, first), memories=alpha, check=True)
    team.sql(owner, f"GRANT {first}, {second} TO {owner}")
    password = tmp_path / "password"
    password.write_text("searcher-password-1")
    run_process("db", "grant-read", searcher, "--password-file", str(password), "--writer", second,
                env=as_role(env, team, owner), check=True)

    # After the grant: the first indexer indexes a new folder and rebuilds its first one; the second, which had
    # indexed nothing yet, indexes its own folder (sharing the embedding cache the first one made).
    beta = folder(tmp_path, "beta", "The wombat pipeline runs nightly.")
    gamma = folder(tmp_path, "gamma", "The numbat release is on Friday.")
    run_process("index", env=as_role(env, team, first), memories=beta, check=True)
    run_process("index", "--rebuild", env=as_role(env, team, first), memories=alpha, check=True)
    run_process("index", env=as_role(env, team, second), memories=gamma, check=True)

    reader = as_role(env, team, searcher)
    listed = json.loads(run_process("db", "indexes", "--json", env=reader, check=True).stdout)
    assert {entry["memories_dir"] for entry in listed} == {str(alpha.root), str(beta.root), str(gamma.root)}
    assert all(entry["readable"] for entry in listed)
    for memories, word in ((alpha, "quokka"), (beta, "wombat"), (gamma, "numbat")):
        hits = json.loads(run_process("search", word, "--format", "json", env=reader, memories=memories,
                                      check=True).stdout)
        assert hits and hits[0]["path"] == str(memories.root / "wiki/note.md"), (memories.root, hits)

    # A third indexer role, added after the grant and not named: its tables are not readable, and the server
    # starts with the dbs it can read, naming the one it cannot.
    third = team.indexer("third")
    delta = folder(tmp_path, "delta", "The bilby notes.")
    run_process("index", env=as_role(env, team, third), memories=delta, check=True)
    prefixes = {entry["memories_dir"]: entry["prefix"]
                for entry in json.loads(run_process("db", "indexes", "--json", env=as_role(env, team, "postgres"),
                                                    check=True).stdout)}
    unreadable = [entry for entry in json.loads(run_process("db", "indexes", "--json", env=reader).stdout)
                  if not entry["readable"]]
    assert [entry["prefix"] for entry in unreadable] == [prefixes[str(delta.root)]]
    refused = run_process("search", "bilby", env=reader, memories=delta)
    assert refused.returncode == 1 and "grant-read" in refused.stderr and refused.stderr.count("\n") == 1, \
        refused.stderr
    config = tmp_path / "config"
    endpoint = config / "memory-search" / "endpoint"
    log = tmp_path / "serve.log"
    server = subprocess.Popen([sys.executable, str(SCRIPTS / "serve.py"),
                               "--db", f"beta=index:{prefixes[str(beta.root)]}",
                               "--db", f"delta=index:{prefixes[str(delta.root)]}", "--db", f"gone={delta.root}"],
                              env={**reader, "MEMORIES_DIR": str(alpha.root), "XDG_CONFIG_HOME": str(config)},
                              stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        deadline = time.monotonic() + 120
        while not endpoint.exists():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        import urllib.request

        with urllib.request.urlopen(endpoint.read_text().strip() + "/api/list", timeout=30) as answer:
            assert json.loads(answer.read())["loaded"] == ["default", "beta"]
    finally:
        server.terminate()
        server.wait(30)
    said = log.read_text()
    assert "db 'delta' not loaded: this database role may not read the index" in said, said
    assert "db 'gone' not loaded: this database role may not read the index" in said, said
    assert "Traceback" not in said


def test_the_read_only_role_reads_no_table_a_writer_makes_later_beside_the_indexes(env, team, tmp_path):
    import psycopg

    indexer, owner, searcher = team.indexer("indexer"), team.role("owner"), team.role("searcher")
    alpha = folder(tmp_path, "alpha", "The quokka index was tuned.")
    run_process("index", env=as_role(env, team, indexer), memories=alpha, check=True)
    team.sql(owner, f"GRANT {indexer} TO {owner}")
    password = tmp_path / "password"
    password.write_text("searcher-password-1")
    run_process("db", "grant-read", searcher, "--password-file", str(password), env=as_role(env, team, owner),
                check=True)
    # What grant-read did before: default privileges on every table the writer makes. Run again, it undoes that.
    team.sql(owner, f"ALTER DEFAULT PRIVILEGES FOR ROLE {indexer} IN SCHEMA public GRANT SELECT ON TABLES "
                    f"TO {searcher}")
    run_process("db", "grant-read", searcher, env=as_role(env, team, owner), check=True)

    # Later the writer keeps an unrelated table in the same schema, and indexes a new folder.
    team.sql(indexer, "CREATE TABLE payroll (person text, salary int)", "INSERT INTO payroll VALUES ('a', 1)")
    beta = folder(tmp_path, "beta", "The wombat pipeline runs nightly.")
    run_process("index", env=as_role(env, team, indexer), memories=beta, check=True)

    reader = as_role(env, team, searcher)
    with psycopg.connect(team.url_of(searcher), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM payroll")
    for memories, word in ((alpha, "quokka"), (beta, "wombat")):
        hits = json.loads(run_process("search", word, "--format", "json", env=reader, memories=memories,
                                      check=True).stdout)
        assert hits and hits[0]["path"] == str(memories.root / "wiki/note.md"), (memories.root, hits)
