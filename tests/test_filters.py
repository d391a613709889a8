"""Every filter means the same in SQL (managed index) and in Python (tables without metadata)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from psycopg import sql

import memory_search
from memory_search.directory.files import parse_memory
from memory_search.errors import UsageError
from memory_search.search.filters import Filters, matches, parse_where, sql_conditions
from memory_search.storage.schema import ManagedTables

FILES = {
    "wiki/numbers.md": dict(title="Numbers", n=3, ratio=2.5, flag=True, name="melon", labels=["x", "y"]),
    "wiki/float.md": dict(title="Float", n=3.0, ratio=1, flag=False, name="apple", labels=["y", 2]),
    "wiki/one.md": dict(title="One", n=1, flag=1, name="Banana", labels="x", project="agents"),
    "wiki/strings.md": dict(title="Strings", n="3", name="zebra", labels=[], day=dt.date(2026, 3, 1),
                            tags=["ops", "git"], project="infra"),
    "wiki/nested.md": dict(title="Nested", meta={"n": 3}, labels=[["x"]], n=None, status="Superseded"),
    "wiki/bare.md": dict(),
    "raw/session/2026-11-02/101500_abcd1234_00000001.md": dict(title="Session", kind="session", n=2,
                                                                 tags=["ops"], project="agents",
                                                                 day="2026-11-02", status="deprecated"),
    "raw/minutes/2026-10-10/140000_meeting.md": dict(title="Meeting", kind="minutes", n=5, labels=[2, 3],
                                                      tags="ops, planning"),
    "raw/web/2026-09-01/080000_page.md": dict(title="Page", kind="web", name="", flag="true", status="active"),
}

WHERE = [
    {"n": 3}, {"n": {"$eq": 3.0}}, {"n": {"$ne": 3}}, {"n": {"$gt": 2}}, {"n": {"$gte": 3}}, {"n": {"$lt": 3}},
    {"n": {"$lte": 2.5}}, {"n": {"$in": [1, 3]}}, {"n": {"$nin": [1, 3]}}, {"n": {"$gt": "2"}}, {"n": "3"},
    {"n": {"$eq": True}}, {"flag": True}, {"flag": {"$eq": 1}}, {"flag": {"$ne": True}}, {"flag": {"$in": [True, 1]}},
    {"flag": "true"}, {"ratio": {"$gt": 1}}, {"ratio": {"$lte": 1}},
    {"name": {"$gt": "m"}}, {"name": {"$lt": "b"}}, {"name": {"$gte": "Banana"}}, {"name": {"$lte": ""}},
    {"name": {"$in": ["melon", "zebra"]}}, {"name": {"$ne": "apple"}},
    {"day": {"$gte": "2026-01-01"}}, {"day": {"$lt": "2026-06-01"}}, {"day": "2026-03-01"},
    {"labels": "x"}, {"labels": {"$ne": "x"}}, {"labels": {"$in": ["x", 2]}}, {"labels": {"$nin": ["x"]}},
    {"labels": 2}, {"labels": {"$gt": "a"}}, {"labels": {"$in": [3.0]}},
    {"missing": {"$eq": "a"}}, {"missing": {"$ne": "a"}}, {"missing": {"$in": ["a"]}}, {"missing": {"$nin": ["a"]}},
    {"missing": {"$gt": 0}}, {"meta": {"$eq": "x"}}, {"meta": {"$ne": "x"}},
    {"status": "superseded"}, {"status": {"$in": ["active", "deprecated"]}}, {"status": {"$gt": "b"}},
    {"tags": "ops"}, {"title": {"$ne": "Numbers"}}, {"n": {"$gte": 2}, "name": {"$lt": "n"}},
]

FILTERS = [
    Filters(), Filters(include_superseded=True), Filters(scope="wiki"), Filters(scope="session"),
    Filters(scope="minutes", include_superseded=True), Filters(scope="web"), Filters(project="agents"),
    Filters(project="agents", include_superseded=True), Filters(tags=("ops",), include_superseded=True),
    Filters(tags=("ops", "planning")), Filters(since=dt.date(2026, 10, 1), include_superseded=True),
    Filters(until=dt.date(2026, 9, 30)), Filters(since=dt.date(2026, 3, 1), until=dt.date(2026, 10, 10)),
] + [Filters(include_superseded=True, where=parse_where(json.dumps(where))) for where in WHERE]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, base_env, database):
    import os

    root = tmp_path_factory.mktemp("filters") / "memories"
    for relpath, frontmatter in FILES.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        head = "---\n" + "".join(f"{key}: {_yaml(value)}\n" for key, value in frontmatter.items())
        path.write_text(head + f"---\n# {relpath}\n\nSome text about {relpath}.\n", encoding="utf-8")
    saved = dict(os.environ)
    os.environ.update(base_env)
    try:
        with memory_search.open(memories_dir=str(root)) as memories:
            stats = memories.index()
            assert stats.success == len(FILES), stats.failures
            records = {}
            for relpath in FILES:
                path = str(root / relpath)
                records[path] = parse_memory(path, relpath, (root / relpath).read_text(encoding="utf-8")).record
            yield memories, records
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _yaml(value) -> str:
    return value.isoformat() if isinstance(value, dt.date) else json.dumps(value)  # a date stays a YAML date


def _sql_matches(memories, filters: Filters) -> set[str]:
    clauses, params = sql_conditions(filters)
    where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")
    query = sql.SQL("SELECT DISTINCT filename FROM {}").format(ManagedTables.of(memories.root).sql("chunks")) + where
    return {row[0] for row in memories.connection.execute(query, params).fetchall()}


@pytest.mark.parametrize("filters", FILTERS, ids=lambda filters: repr(filters)[8:80])
def test_sql_and_python_select_the_same_records(indexed, filters):
    memories, records = indexed
    in_python = {path for path, record in records.items() if matches(filters, record)}
    assert _sql_matches(memories, filters) == in_python


def test_the_table_separates_the_records(indexed):
    """Each file is selected by some filter and left out by another, so agreement above means something."""
    memories, records = indexed
    selections = [_sql_matches(memories, filters) for filters in FILTERS]
    for path in records:
        assert any(path in chosen for chosen in selections) and any(path not in chosen for chosen in selections)


@pytest.mark.parametrize("where, meaning", [
    ({"flag": {"$eq": 1}}, {"wiki/one.md"}),  # a boolean is not a number
    ({"labels": {"$in": ["x", 2]}},
     {"wiki/numbers.md", "wiki/float.md", "wiki/one.md", "raw/minutes/2026-10-10/140000_meeting.md"}),
    ({"n": {"$gt": 2}}, {"wiki/numbers.md", "wiki/float.md", "raw/minutes/2026-10-10/140000_meeting.md"}),
    ({"missing": {"$ne": "a"}}, set(FILES)),
])
def test_where_follows_json_semantics(indexed, where, meaning):
    memories, records = indexed
    filters = Filters(include_superseded=True, where=parse_where(json.dumps(where)))
    assert {record.relpath for record in records.values() if matches(filters, record)} == meaning


@pytest.mark.parametrize("text", ['{"n": null}', '{"n": {"$in": 3}}', '{"n": {"$gt": true}}', '{"n": [1, 2]}',
                                  '{"n": {"$or": 1}}', '{"$and": [{"n": 1}]}', '{"n": {"$in": [[1]]}}',
                                  '{"n": NaN}', '{"n": {"$gt": {"a": 1}}}', '[1]', '{"n": '])
def test_a_where_it_cannot_apply_is_a_usage_error(text):
    with pytest.raises(UsageError):
        parse_where(text)
