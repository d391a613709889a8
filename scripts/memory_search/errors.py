"""Errors a user can act on, each with the exit code the scripts document, and the masking of secrets."""

import re

EXIT_OK = 0
EXIT_FAILURE = 1  # database, embedding service, anything at run time
EXIT_USAGE = 2  # bad arguments
EXIT_MISSING = 3  # the memories directory or the index is missing
EXIT_PARTIAL = 4  # index.py: the index is up to date except for files it had to skip (listed)

_SECRETS = [
    # scheme://user:password@host
    (re.compile(r"(://[^:@/\s]*:)[^@/\s]+@"), r"\1***@"),
    # password=..., token=..., api_key=... in libpq key=value strings, URL queries, JSON and messages
    (re.compile(r"""(?i)([\w-]*(?:password|passwd|pwd|token|secret|api[_-]?key|apikey)[\w-]*["']?\s*[=:]\s*)"""
                r"""('[^']*'|"[^"]*"|[^\s&;,'"}]+)"""), r"\1***"),
    # Authorization: Bearer ..., Basic ...
    (re.compile(r"""(?i)(authorization["']?\s*[=:]\s*["']?(?:bearer\s+|basic\s+|token\s+)?)[^\s"',}]{4,}"""),
     r"\1***"),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{4,}"), r"\1***"),
]


def mask_secrets(text: str, *secrets) -> str:
    """The text with passwords, tokens, keys and the given secret values replaced by ***."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def first_line(error: Exception, limit: int = 300) -> str:
    """An exception's first line, for one-line messages; its type when it says nothing."""
    text = str(error).strip()
    return text.splitlines()[0][:limit] if text else type(error).__name__


def require_text(value, what: str):
    """A text argument PostgreSQL and the model can take (valid UTF-8, no NUL), or UsageError."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} holds bytes that are not UTF-8: pass UTF-8 text") from None
    if "\x00" in value:
        raise UsageError(f"{what} holds a NUL character: remove it")
    return value


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
