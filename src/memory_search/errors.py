"""Errors a user can act on, and the masking of secrets.

Each face turns an error into its own outcome (an exit code, a JSON-RPC error, an HTTP status) by
its class: see faces/outcomes.py."""

import re

_SECRETS = [
    # scheme://user:password@host
    (re.compile(r"(://[^:@/\s]*:)[^@/\s]+@"), r"\1***@"),
    # password=..., token=..., api_key=... in libpq key=value strings, URL queries, JSON and messages
    # (not a path's component: /etc/passwd: is a file name, not a key)
    (re.compile(r"""(?i)(?<![/\\.\w-])([\w-]*(?:password|passwd|pwd|token|secret|api[_-]?key|apikey)[\w-]*["']?"""
                r"""\s*[=:]\s*)"""
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


def first_line(error: BaseException, limit: int = 300) -> str:
    """An exception's first line, for one-line messages; its type when it says nothing."""
    text = str(error).strip()
    return text.splitlines()[0][:limit] if text else type(error).__name__


QUOTED_CHARS = 60  # of a value a message quotes back: enough to recognise it, never a pasted page


def quoted(value) -> str:
    """A value as a message quotes it back: its repr, cut to its first QUOTED_CHARS characters with its length
    said when longer (a megabyte sent as a flag's value is not echoed to stderr, a log or an HTTP body)."""
    text = repr(value)
    if len(text) <= QUOTED_CHARS + 2:
        return text
    length = f"{len(value):,} characters" if isinstance(value, str) else f"{len(text):,} characters as written"
    return f"{text[:QUOTED_CHARS]}... ({length})"


_LONG_QUOTE = re.compile("'([^'\\n]{%d,})'" % (QUOTED_CHARS + 1))


def shorten_quotes(message: str) -> str:
    """A message another library wrote (click's "'VALUE' is not one of ...") with each quoted value longer than
    QUOTED_CHARS cut as quoted() cuts it."""
    return _LONG_QUOTE.sub(lambda m: f"'{m.group(1)[:QUOTED_CHARS - 1]}... ({len(m.group(1)):,} characters)", message)


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


class UsageError(MemorySearchError):
    """The caller's mistake: a bad argument or parameter."""


class ParameterError(UsageError):
    """A request parameter's value is wrong. The message names the parameter where PARAMETER stands, so each
    face can spell it its own way (--since, since, ?since=); str() uses the plain name."""

    def __init__(self, parameter: str, template: str):
        self.parameter, self.template = parameter, template
        super().__init__(self.spelled(parameter))

    def spelled(self, name: str) -> str:
        return self.template.replace(PARAMETER, name)


PARAMETER = "\x00"  # never in a parameter's value: require_text refuses NUL


class PathOutside(UsageError):
    """A path that does not name a memory inside the memories directory."""


class NotFound(MemorySearchError):
    """Something a call needs does not exist: the memories directory, its index, a memory."""


class MemoriesMissing(NotFound):
    """The memories directory is not there."""


class MemoriesUnreachable(MemoriesMissing):
    """The memories directory may be there but cannot be read right now (permissions, an I/O error, a dropped
    mount): nothing is concluded about the memories in it."""


class IndexMissing(NotFound):
    """The memories directory has no index (in this database)."""


class MemoryNotFound(NotFound):
    """The memory a request names is not a file, or not in the index."""


class DatabaseUnavailable(MemorySearchError):
    pass


class AccessDenied(MemorySearchError):
    """The database role may not do what was asked: the message names the role that may."""


class EmbeddingFailed(MemorySearchError):
    pass


class IndexMismatch(MemorySearchError):
    """The index was built with another model, dimension or chunker."""


class IndexBusy(MemorySearchError):
    """Another indexer holds the lock on this index."""
