"""PostgreSQL: connecting (database), finding an index and reading its meta table (schema), the indexes a
database holds and the role that only reads them (catalog), writing the managed index's tables (writer), the
links table (links), postings packed by term (packing) and the embedding cache every index shares
(embedding_cache)."""
