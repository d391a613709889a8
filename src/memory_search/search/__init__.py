"""Searching the index: the pipeline from a query to hits (retrieval), a search's modes and query check (query),
each index layout's SQL (layouts), the relevance score (relevance), which records a search may return
(filters), time words in a query (timewords), snippets (snippets), what a memory is connected to (related), a
memory shown whole (document), exporting the indexed chunks (export) and the search log (log)."""
