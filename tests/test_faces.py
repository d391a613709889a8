"""The open index the long-running faces share: read-only sessions, one model per process."""

from __future__ import annotations

import pytest

from conftest import index


def test_sessions_are_read_only_and_the_model_is_loaded_once(env, memories):
    import psycopg

    from memory_search.config import Settings
    from memory_search.faces import SharedMemories

    memories.write("wiki/a.md", "# Backups\n\nNightly dumps at 2 am.\n", title="Backups")
    index(env, memories)
    opened = SharedMemories(Settings.from_env().with_overrides(memories_dir=memories.root))
    try:
        opened.warm()
        for query in ("nightly backups", "dumps", "バックアップ"):
            assert opened.search(query, top=1)[0].record.title == "Backups"
        assert len(opened._embedders) == 1
        with opened._handle() as handle:
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                handle.connection.execute("CREATE TABLE written_by_a_face (x int)")
    finally:
        opened.close()
