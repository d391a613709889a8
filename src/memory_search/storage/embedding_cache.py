"""The embedding cache: one vector per (model, text hash), shared by every index in the database."""

from __future__ import annotations

from psycopg import sql

from ..embedding import ModelSpec

CACHE_TABLE = "memsearch_embedding_cache"
_TABLE = sql.Identifier(CACHE_TABLE)


def create_cache(conn) -> None:
    conn.execute(sql.SQL(
        "CREATE TABLE IF NOT EXISTS {} (model text NOT NULL, text_hash text NOT NULL, embedding vector NOT NULL, "
        "PRIMARY KEY (model, text_hash))").format(_TABLE))


def _allowed(conn, privilege: str) -> bool:
    """Whether this role may SELECT or INSERT in the cache: the first indexer role created it, and another
    indexer role of a team sharing the database may have no right to it (then it embeds without the cache)."""
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL AND has_table_privilege(to_regclass(%s), %s)",
                        (CACHE_TABLE, CACHE_TABLE, privilege)).fetchone()[0]


def cached_embeddings(conn, spec: ModelSpec, text_hashes: list[str]) -> dict[str, str]:
    """text hash -> embedding (pgvector text) for the hashes already embedded by this model."""
    if not text_hashes or not _allowed(conn, "SELECT"):
        return {}
    rows = conn.execute(
        sql.SQL("SELECT text_hash, embedding::text FROM {} WHERE model = %s AND text_hash = ANY(%s)").format(_TABLE),
        (spec.key, text_hashes),
    ).fetchall()
    return dict(rows)


def cache_embeddings(conn, spec: ModelSpec, vectors: dict[str, str]) -> None:
    if vectors and _allowed(conn, "INSERT"):
        conn.cursor().executemany(
            sql.SQL("INSERT INTO {} (model, text_hash, embedding) VALUES (%s, %s, %s::vector) "
                    "ON CONFLICT DO NOTHING").format(_TABLE),
            [(spec.key, text_hash, vector) for text_hash, vector in vectors.items()],
        )
