"""What the long-running faces share (resources.Resources): read-only sessions, one model per process."""

from __future__ import annotations

import pytest
from conftest import index


def test_sessions_are_read_only_and_the_model_is_loaded_once(env, memories):
    import psycopg

    from memory_search.config import Settings
    from memory_search.resources import Resources

    memories.write("wiki/a.md", "# Backups\n\nNightly dumps at 2 am.\n", title="Backups")
    index(env, memories)
    settings = Settings.from_env().with_overrides(memories_dir=memories.root)
    shared = Resources()
    try:
        for query in ("nightly backups", "dumps", "バックアップ"):
            with shared.open(settings) as opened:
                assert opened.search(query, top=1)[0].record.title == "Backups"
        assert len(shared.embedders) == 1
        with shared.open(settings) as opened, pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            opened.connection.execute("CREATE TABLE written_by_a_face (x int)")
        with shared.open(settings) as opened:  # the connection given back was rolled back
            assert opened.search("dumps", top=1)[0].record.title == "Backups"
    finally:
        shared.close()


def test_concurrent_first_calls_share_one_model_and_each_get_their_answer(env, memories):
    from concurrent.futures import ThreadPoolExecutor

    from memory_search.config import Settings
    from memory_search.resources import Resources

    titles = {"Backups": "Nightly dumps at 2 am.", "Invoices": "Billing runs on the first of the month.",
              "Kanban": "Cards move from doing to done."}
    for title, body in titles.items():
        memories.write(f"wiki/{title.lower()}.md", f"# {title}\n\n{body}\n", title=title)
    index(env, memories)
    settings = Settings.from_env().with_overrides(memories_dir=memories.root)
    shared = Resources(connections=2)  # fewer connections than callers: the others wait for one
    queries = {"nightly dumps": "Backups", "billing first of the month": "Invoices", "cards doing done": "Kanban"}

    def search(query: str) -> str:
        with shared.open(settings) as opened:
            return opened.search(query, top=1, mode="semantic")[0].record.title

    try:  # no warm-up: the first calls race to load the model
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(search, list(queries) * 2))
        assert answers == list(queries.values()) * 2
        assert len(shared.embedders) == 1
        assert sum(len(idle) for idle in shared.connections._idle.values()) <= 2
    finally:
        shared.close()
