"""Errors a user can act on, each with the exit code the scripts document."""

EXIT_OK = 0
EXIT_FAILURE = 1  # database, embedding service, anything at run time
EXIT_USAGE = 2  # bad arguments
EXIT_MISSING = 3  # the memories directory or the index is missing


def first_line(error: Exception, limit: int = 300) -> str:
    """An exception's first line, for one-line messages; its type when it says nothing."""
    text = str(error).strip()
    return text.splitlines()[0][:limit] if text else type(error).__name__


class MemorySearchError(Exception):
    """A failure with a one-line message that says what to do next."""

    exit_code = EXIT_FAILURE


class UsageError(MemorySearchError):
    exit_code = EXIT_USAGE


class MemoriesMissing(MemorySearchError):
    exit_code = EXIT_MISSING


class IndexMissing(MemorySearchError):
    exit_code = EXIT_MISSING


class DatabaseUnavailable(MemorySearchError):
    pass


class EmbeddingFailed(MemorySearchError):
    pass


class IndexMismatch(MemorySearchError):
    """The index was built with another model, dimension or chunker."""


class IndexBusy(MemorySearchError):
    """Another indexer holds the lock on this index."""
