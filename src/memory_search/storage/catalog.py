"""The indexes one database holds, and a role that may only read them: for a team whose machines index their
own memories into one shared PostgreSQL while a server searches them all.

Each machine's index of each memories folder is its own set of tables (memsearch_<folder>_<hash of host and
path>__*), written under its own advisory lock, so indexers never wait for each other and never mix."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from ..config import Settings
from ..errors import AccessDenied, UsageError, first_line, quoted
from ..hints import command
from .database import connect
from .schema import ManagedTables, columns_of, read_meta


@dataclass
class IndexEntry:
    prefix: str  # the tables' prefix: what MEMORIES_TABLE and serve.py's --db NAME=index:PREFIX name
    memories_dir: str  # on the machine that built it ("" when this role may not read it)
    host: str | None
    model: str
    files: int
    chunks: int
    last_indexed_at: str | None
    readable: bool = True  # whether the role connected may read every table of the index

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def indexes(settings: Settings) -> list[IndexEntry]:
    """Every memories index in the database's schema (not the knowledge bases, not a rebuild under way); those
    the role connected may not read are listed with readable False and nothing else known."""
    with connect(settings, read_only=True) as conn:
        return _indexes(conn)


def _indexes(conn) -> list[IndexEntry]:
    readable: dict[str, bool] = {}
    for name, allowed in conn.execute(
            "SELECT c.relname, has_table_privilege(c.oid, 'SELECT') FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r' "
            "AND c.relname LIKE 'memsearch\\_%\\_\\_%'").fetchall():
        prefix = name.rsplit("__", 1)[0]
        readable[prefix] = readable.get(prefix, True) and allowed
    found = []
    for prefix in sorted(readable):
        if prefix.startswith("memsearch_kb_") or prefix.endswith("_next") or prefix == "memsearch_embedding_cache":
            continue
        tables = ManagedTables(prefix)
        if not readable[prefix]:
            if columns_of(conn, tables.meta):
                found.append(IndexEntry(prefix, "", None, "", 0, 0, None, readable=False))
            continue
        meta = read_meta(tables.on(conn))
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
    answers come from the index alone. Raises UsageError naming the indexes there are, AccessDenied when this
    role may not read it."""
    entries = indexes(settings)
    for entry in entries:
        if entry.prefix == prefix and not entry.readable:
            raise AccessDenied(f"this database role may not read the index {prefix}: have the database owner run "
                               f"`{command('db', 'grant-read', '<this role>')}` again")
        if entry.prefix == prefix:
            return settings.with_overrides(memories_dir=entry.memories_dir, table=entry.prefix, remote=True)
    known = ", ".join(entry.prefix for entry in entries if entry.readable) or "none"
    raise UsageError(f"no index {quoted(prefix)} in this database: use one of {known} (db.py indexes lists them)")


READERS = "memsearch_readers"  # (reader, writer): grant-read's record of who reads the indexes each writer makes


def grant_read(settings: Settings, role: str, password: str | None = None, writers: tuple[str, ...] = ()) -> list[str]:
    """Let `role` read every memsearch table there is, and the memsearch tables the writer roles create later
    (new indexes, rebuilds): each writer grants those itself as it makes them (share_with_readers), as the
    READERS table records, so `role` reads no other table a writer makes in the schema. The writers are the
    roles that own memsearch tables, those named in `writers`, and, when there are none, the role running this.
    Default privileges an earlier version set (every table a writer creates) are revoked. With `password`,
    create the role first (it may log in). The role gets no other right. Returns the statements run, the
    password masked.

    Creating a role needs CREATEROLE; granting on a writer's tables and setting its default privileges needs
    the writer's privileges (a superuser, or a member of the writer role with INHERIT): AccessDenied says so."""
    for name in (role, *writers):
        if not name or not name.replace("_", "").isalnum():
            raise UsageError(f"role {quoted(name)}: use letters, digits and _")
    if password is not None and len(password) < 12:
        raise UsageError("the password is shorter than 12 characters: give a longer one")
    with connect(settings, read_only=False) as conn:
        return _grant_read(conn, role, password, tuple(writers))


def _grant_read(conn, role: str, password: str | None, writers: tuple[str, ...] = ()) -> list[str]:
    import psycopg

    name = sql.Identifier(role)
    statements = []
    me, superuser, create_role = conn.execute(
        "SELECT rolname, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user").fetchone()
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    owner_hint = ("run it as the database owner or a superuser (their URL in MEMORIES_DATABASE_URL for this one "
                  "command)")
    if password is None and not exists:
        raise UsageError(f"role {quoted(role)} does not exist: give a password to create it")
    if password is not None and not (superuser or create_role or (exists and role == me)):
        raise AccessDenied(f"role {me!r} may not create roles or set their passwords (it lacks CREATEROLE): "
                           f"{owner_hint}, or another role with CREATEROLE")
    if password is not None:
        statements.append(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}" if exists else
                                  "CREATE ROLE {} LOGIN PASSWORD {}").format(name, sql.Literal(password)))
    database, schema = conn.execute("SELECT current_database(), current_schema()").fetchone()
    tables = conn.execute(
        "SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r' "
        "AND c.relname LIKE 'memsearch\\_%' ORDER BY 1").fetchall()
    unknown = [writer for writer in writers
               if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (writer,)).fetchone()]
    if unknown:
        raise UsageError(f"no role {', '.join(unknown)} in this database: name the roles that index")
    owners = sorted({owner for _, owner in tables} | set(writers)) or [me]
    barred = [owner for owner in owners if not conn.execute(
        "SELECT pg_has_role(current_user, %s, 'USAGE')", (owner,)).fetchone()[0]]
    if barred:
        raise AccessDenied(f"role {me!r} may not grant on the tables of {', '.join(barred)} nor choose what the "
                           f"tables they create later allow: {owner_hint}, or a member of "
                           f"{', '.join(barred)} (GRANT {barred[0]} TO {me})")
    statements.append(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), name))
    statements.append(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), name))
    for table, _ in tables:
        statements.append(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), name))
    # What each writer creates later (a new folder's index, a rebuild) is readable too: the writer grants it on
    # its memsearch tables as it makes them, reading who to grant to here.
    readers = sql.Identifier(READERS)
    statements.append(sql.SQL("CREATE TABLE IF NOT EXISTS {} (reader name NOT NULL, writer name NOT NULL, "
                              "PRIMARY KEY (reader, writer))").format(readers))
    for owner in owners:
        # Default privileges cover every table of the schema, not only the index's: an earlier grant-read's go.
        statements.append(sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA {} REVOKE SELECT ON TABLES FROM {}")
                          .format(sql.Identifier(owner), sql.Identifier(schema), name))
        statements.append(sql.SQL("INSERT INTO {} VALUES ({}, {}) ON CONFLICT DO NOTHING")
                          .format(readers, sql.Literal(role), sql.Literal(owner)))
        statements.append(sql.SQL("GRANT SELECT ON {} TO {}").format(readers, sql.Identifier(owner)))
    try:
        with conn.transaction():
            for statement in statements:
                conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege as error:
        raise AccessDenied(f"role {me!r} may not do this ({first_line(error)}): {owner_hint}") from None
    shown = [statement.as_string(conn) for statement in statements]
    return [text if "PASSWORD" not in text else text.split(" PASSWORD ")[0] + " PASSWORD ***" for text in shown]


def share_with_readers(conn) -> None:
    """Grant SELECT on this role's memsearch tables to the roles grant-read named as their readers (READERS):
    run by a writer as it creates its tables, so a new index or a rebuild is readable by them, and no other
    table of the writer's is."""
    found = conn.execute("SELECT to_regclass(%s)", (READERS,)).fetchone()[0]
    if found is None or not conn.execute("SELECT has_table_privilege(%s, 'SELECT')", (READERS,)).fetchone()[0]:
        return
    missing = conn.execute(
        sql.SQL("SELECT r.reader, c.relname FROM {} r JOIN pg_roles g ON g.rolname = r.reader "
                "CROSS JOIN pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE r.writer = current_user AND n.nspname = current_schema() AND c.relkind = 'r' "
                "AND c.relname LIKE 'memsearch\\_%%' AND c.relname <> {} "
                "AND pg_get_userbyid(c.relowner) = current_user "
                "AND NOT has_table_privilege(r.reader, c.oid, 'SELECT')")
        .format(sql.Identifier(READERS), sql.Literal(READERS))).fetchall()
    for reader, table in missing:
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), sql.Identifier(reader)))
