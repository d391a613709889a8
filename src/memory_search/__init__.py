"""memory-search: hybrid search over Markdown memories in PostgreSQL + pgvector.

    import memory_search
    with memory_search.open(memories_dir="~/memories") as memories:
        hits = memories.search("セッション要約の保存先", top=5)

Importing the package is cheap: the names below load their modules on first use.
"""

__all__ = ["open", "Memories", "Filters", "Settings", "Record", "Hit", "MemorySearchError"]

_WHERE = {"open": "api", "Memories": "api", "Filters": "search.filters", "Settings": "config",
          "Record": "directory.records", "Hit": "search.retrieval", "MemorySearchError": "errors"}


def __getattr__(name):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
