"""The indexes one database holds, and a role that may only read them: for a team whose machines index their
own memories into one shared PostgreSQL while a server searches them all.

Each machine's index of each memories folder is its own set of tables (memsearch_<folder>_<hash of host and
path>__*), written under its own advisory lock, so indexers never wait for each other and never mix."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from .config import Settings
from .database import connect
from .errors import UsageError
from .schema import ManagedTables, read_meta


@dataclass
class IndexEntry:
    prefix: str  # the tables' prefix: what MEMORIES_TABLE and serve.py's --db NAME=index:PREFIX name
    memories_dir: str  # on the machine that built it
    host: str | None
    model: str
    files: int
    chunks: int
    last_indexed_at: str | None

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def indexes(settings: Settings) -> list[IndexEntry]:
    """Every memories index in the database's schema (not the knowledge bases, not a rebuild under way)."""
    with connect(settings, read_only=True) as conn:
        return _indexes(conn)


def _indexes(conn) -> list[IndexEntry]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'memsearch\\_%\\_\\_meta' "
        "AND c.relname NOT LIKE 'memsearch\\_kb\\_%' AND c.relname NOT LIKE '%\\_next\\_\\_meta' ORDER BY 1"
    ).fetchall()
    found = []
    for (name,) in rows:
        tables = ManagedTables(name.removesuffix("__meta"))
        meta = read_meta(conn, tables)
        if not meta.get("memories_dir"):
            continue
        files = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE error IS NULL").format(
            tables.sql("files"))).fetchone()[0]
        found.append(IndexEntry(tables.prefix, meta["memories_dir"], meta.get("host"),
                                f"{meta.get('provider')}/{meta.get('model')}", files, int(meta.get("chunks") or 0),
                                meta.get("last_indexed_at")))
    return found


def served(settings: Settings, prefix: str) -> Settings:
    """The settings that read the index with this prefix, built on another machine: the memories are there, so
    answers come from the index alone. Raises UsageError naming the indexes there are."""
    entries = indexes(settings)
    for entry in entries:
        if entry.prefix == prefix:
            return settings.with_overrides(memories_dir=entry.memories_dir, table=entry.prefix, remote=True)
    known = ", ".join(entry.prefix for entry in entries) or "none"
    raise UsageError(f"no index {prefix!r} in this database: use one of {known} (db.py indexes lists them)")


def grant_read(settings: Settings, role: str, password: str | None = None) -> list[str]:
    """Let `role` read every memsearch table there is, and every table the configured role creates later in
    the schema (new indexes, rebuilds: give the indexers a role of their own); with `password`, create the role
    first (it may log in). The role gets no other right. Returns the statements run, the password masked."""
    if not role or not role.replace("_", "").isalnum():
        raise UsageError(f"role {role!r}: use letters, digits and _")
    if password is not None and len(password) < 12:
        raise UsageError("the password is shorter than 12 characters: give a longer one")
    with connect(settings, read_only=False) as conn:
        return _grant_read(conn, role, password)


def _grant_read(conn, role: str, password: str | None) -> list[str]:
    name = sql.Identifier(role)
    statements = []
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if password is None and not exists:
        raise UsageError(f"role {role!r} does not exist: give a password to create it")
    if password is not None:
        statements.append(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}" if exists else
                                  "CREATE ROLE {} LOGIN PASSWORD {}").format(name, sql.Literal(password)))
    database, schema = conn.execute("SELECT current_database(), current_schema()").fetchone()
    statements.append(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), name))
    statements.append(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), name))
    tables = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'memsearch\\_%' ORDER BY 1"
    ).fetchall()
    for (table,) in tables:
        statements.append(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), name))
    statements.append(sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT SELECT ON TABLES TO {}").format(
        sql.Identifier(schema), name))
    with conn.transaction():
        for statement in statements:
            conn.execute(statement)
    shown = [statement.as_string(conn) for statement in statements]
    return [text if "PASSWORD" not in text else text.split(" PASSWORD ")[0] + " PASSWORD ***" for text in shown]
