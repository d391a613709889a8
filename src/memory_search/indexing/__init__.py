"""Building the index: index runs over the memories directory (indexer), the one write pipeline from a parsed
memory to its stored chunks (pipeline), an index run's progress (run_progress), what the index holds and lacks
(status), the proof that it matches the directory (verify) and the index that keeps up by itself where that is
asked for (auto). Chunks and keyword terms come from text/."""
