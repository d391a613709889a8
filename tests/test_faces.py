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
        assert len(opened.embedders) == 1
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            opened._call(lambda handle: handle.connection.execute("CREATE TABLE written_by_a_face (x int)"))
        assert opened.search("dumps", top=1)[0].record.title == "Backups"  # its connection was rolled back
    finally:
        opened.close()


def test_concurrent_first_calls_share_one_model_and_each_get_their_answer(env, memories):
    from concurrent.futures import ThreadPoolExecutor

    from memory_search.config import Settings
    from memory_search.faces import SharedMemories

    titles = {"Backups": "Nightly dumps at 2 am.", "Invoices": "Billing runs on the first of the month.",
              "Kanban": "Cards move from doing to done."}
    for title, body in titles.items():
        memories.write(f"wiki/{title.lower()}.md", f"# {title}\n\n{body}\n", title=title)
    index(env, memories)
    opened = SharedMemories(Settings.from_env().with_overrides(memories_dir=memories.root))
    queries = {"nightly dumps": "Backups", "billing first of the month": "Invoices", "cards doing done": "Kanban"}
    try:  # no warm-up: the first calls race to load the model
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda query: opened.search(query, top=1, mode="semantic")[0].record.title,
                                    list(queries) * 2))
        assert answers == list(queries.values()) * 2
        assert len(opened.embedders) == 1
    finally:
        opened.close()
