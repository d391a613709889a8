"""The request parameters every face accepts, each defined once: its type, range, default and meaning.

The command-line options (faces/console.py), the MCP tools' JSON Schemas (faces/mcp_tools.py) and the HTTP
query parsing (faces/http_api.py) are generated from these definitions, and the values they receive are
checked here, so a bad value is refused with the same words everywhere; only the parameter's spelling
differs (--since, since, ?since=), which each face puts where the message says PARAMETER.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any, Mapping

from .directory.recent import RECENT_KINDS
from .errors import PARAMETER as P, ParameterError, UsageError, quoted, require_text
from .search.filters import SCOPES, Filters, parse_where, where_conditions
from .search.query import MODES

MAX_TOP = 100
MAX_DATE_CHARS = 100  # a date's text (2026-11-20, 先週, the day before yesterday) is short; longer is no date


@dataclass(frozen=True)
class Parameter:
    name: str  # as the library and MCP call it
    kind: str  # text | texts | integer | number | boolean | choice | date | where
    help: str  # one line, for --help
    description: str = ""  # for MCP clients and HTTP documentation; default: help
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    default: object = None
    flag: str = ""  # the command-line spelling; default --name-with-dashes
    metavar: str | None = None

    @property
    def cli(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def value(self, raw):
        """The checked value of a raw one (JSON, click or text); None stays None. Raises ParameterError."""
        if raw is None:
            return None
        kind = self.kind
        if kind in ("text", "choice"):
            if not isinstance(raw, str):
                raise ParameterError(self.name, f"{P} must be text")
            _text(self.name, raw)
            if kind == "choice" and raw not in self.choices:
                raise ParameterError(self.name, f"{P} {quoted(raw)} is not one of {', '.join(self.choices)}")
            return raw
        if kind == "texts":
            items = [raw] if isinstance(raw, str) else raw
            if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
                raise ParameterError(self.name, f"{P} must be a list of texts")
            return tuple(_text(self.name, item) for item in items)
        if kind == "integer":
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise ParameterError(self.name, f"{P} {quoted(raw)} is not a whole number")
            if (self.minimum is not None and raw < self.minimum) or (self.maximum is not None and raw > self.maximum):
                raise ParameterError(self.name, f"{P} {raw} is out of range: give {self.range_text}")
            return raw
        if kind == "number":
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
                raise ParameterError(self.name, f"{P} {quoted(raw)} is not a number: give one like 0.5")
            if (self.minimum is not None and raw < self.minimum) or (self.maximum is not None and raw > self.maximum):
                raise ParameterError(self.name, f"{P} {raw:g} is out of range: give a number in {self.range_text}")
            return float(raw)
        if kind == "boolean":
            if not isinstance(raw, bool):
                raise ParameterError(self.name, f"{P} must be true or false")
            return raw
        if kind == "date":
            if isinstance(raw, dt.date):
                return raw
            if isinstance(raw, str) and len(raw) > MAX_DATE_CHARS:
                raise ParameterError(self.name, f"{P} is {len(raw):,} characters long, not a date: use YYYY-MM-DD")
            if isinstance(raw, str):
                try:
                    return dt.date.fromisoformat(raw)
                except ValueError:
                    day = _day_named(raw, last=self.name == "until")
                    if day is not None:
                        return day
            raise ParameterError(self.name, f"{P} {quoted(raw)} is not a date: use YYYY-MM-DD")
        if kind == "where":
            if isinstance(raw, dict):
                return where_conditions(raw, self.name)
            if isinstance(raw, str):
                return parse_where(raw, self.name)
            raise ParameterError(self.name, P + ' must be an object like {"project": "agents"}, or its JSON text')
        raise AssertionError(f"unknown parameter kind {kind}")

    def from_text(self, text: str):
        """The raw value of a parameter given as text (an HTTP query), for value(): numbers and booleans
        are read from their text. Raises ParameterError when they cannot be."""
        if self.kind == "integer":
            try:
                return int(text.strip())
            except ValueError:
                raise ParameterError(self.name, f"{P} {quoted(text)} is not a whole number") from None
        if self.kind == "number":
            try:
                return float(text.strip())
            except ValueError:
                raise ParameterError(self.name, f"{P} {quoted(text)} is not a number: give one like 0.5") from None
        if self.kind == "boolean":
            lowered = text.strip().lower()
            if lowered not in ("1", "true", "yes", "0", "false", "no"):
                raise ParameterError(self.name, f"{P} {quoted(text)} is not true or false")
            return lowered in ("1", "true", "yes")
        return text

    @property
    def range_text(self) -> str:
        if self.maximum is None:
            return f"{self.minimum} or more"
        return f"{self.minimum}..{self.maximum}"

    def schema(self, **overrides) -> dict:
        """The JSON Schema of the parameter, for an MCP tool's input."""
        kind = self.kind
        description = overrides.get("description") or self.description or self.help
        if kind in ("text", "choice"):
            schema: dict = {"type": "string"}
            if self.choices:
                schema["enum"] = list(self.choices)
        elif kind == "texts":
            schema = {"type": "array", "items": {"type": "string"}}
        elif kind == "integer":
            schema = {"type": "integer"}
            if self.minimum is not None:
                schema["minimum"] = self.minimum
            if self.maximum is not None:
                schema["maximum"] = self.maximum
        elif kind == "number":
            schema = {"type": "number"}
            if self.minimum is not None:
                schema["minimum"] = self.minimum
            if self.maximum is not None:
                schema["maximum"] = self.maximum
        elif kind == "boolean":
            schema = {"type": "boolean"}
        elif kind == "date":
            schema = {"type": "string", "format": "date"}
        else:
            schema = {"type": ["object", "string"]}
        if overrides.get("min_length"):
            schema["minLength"] = overrides["min_length"]
        schema["description"] = description
        return schema


def _day_named(text: str, last: bool) -> dt.date | None:
    """The first (or, for an upper bound, the last) day of what time words alone name: 先週, last monday."""
    from .search.timewords import find_time

    found = find_time(text, dt.date.today())
    if found is None or found.text.strip():
        return None  # no time words, or more than time words
    return found.until if last else found.since


def _text(name: str, value: str) -> str:
    try:
        return require_text(value, P)
    except UsageError as error:
        raise ParameterError(name, str(error)) from None


PARAMETERS: dict[str, Parameter] = {parameter.name: parameter for parameter in (
    Parameter("query", "text", "what to look for",
              "What to look for: a question or keywords, Japanese or English, up to 2,000 characters."),
    Parameter("top", "integer", "how many files (after dedupe) to return, 1..100",
              "How many files to return, best first (default 10; 3-5 saves context).",
              minimum=1, maximum=MAX_TOP, default=10),
    Parameter("scope", "choice", "wiki/** or raw/<kind>/** only",
              "Only one kind of record: session summaries (raw/session), archived web pages (raw/web), meeting "
              "minutes (raw/minutes) or wiki pages (wiki/). Default all.",
              choices=SCOPES, default="all"),
    Parameter("include_superseded", "boolean", "also return superseded and deprecated records",
              "Also return records whose status is superseded or deprecated (hidden by default); use it for "
              "the history of a decision.", default=False),
    Parameter("project", "text", "only records whose frontmatter project is NAME",
              "Only records whose frontmatter `project` equals this."),
    Parameter("tags", "texts", "only records with this tag (repeatable: all must match)",
              "Only records carrying every one of these frontmatter tags.", flag="--tag", default=()),
    Parameter("since", "date", "only records dated on or after YYYY-MM-DD (or 先週, last monday...)",
              "Only records dated on or after YYYY-MM-DD (date folder, else frontmatter date), or the first day "
              "of what time words name (先週, 3日前, last monday)."),
    Parameter("until", "date", "only records dated on or before YYYY-MM-DD (or 先週, yesterday...)",
              "Only records dated on or before YYYY-MM-DD, or the last day of what time words name."),
    Parameter("where", "where", 'frontmatter filter as JSON, Chroma style: {"field": {"$gte": 3}}',
              'Frontmatter filter, Chroma style: {"field": value} or {"field": {"$gte": 30}}; operators $eq $ne '
              "$gt $gte $lt $lte $in $nin; a list field matches when any element does. An object or its JSON text."),
    Parameter("mode", "choice", "retrieval legs (default: hybrid; semantic on a bare CocoIndex table)",
              "Retrieval legs: hybrid (default), semantic (meaning only) or keyword (exact words, identifiers, "
              "error codes).", choices=MODES),
    Parameter("time", "boolean", "read time words in the query (先週, yesterday, 11月20日) as a date window",
              "Read time words in the query (先週, 昨日, 3日前, yesterday, last week, Nov 20) as a date window on "
              "the records' dates, and search the rest of the query within it (default true; explicit since/until "
              "win). Undated records fall outside any window; fewer matches inside than asked for are followed by the "
              "7 days on each side, and when nothing inside matches, by the matches from any date after those; a "
              "hit outside the window has window.inside false.", default=True),
    Parameter("min_score", "number", "drop hits whose relevance score (0..1, every mode) is below this",
              "Drop hits whose relevance score is below this: the estimated probability that the hit answers "
              "the query, 0..1, on the same scale in every mode (0.5: likely an answer; none by default).",
              minimum=0, maximum=1),
    Parameter("path", "text", "a memory's path",
              "The memory: an absolute path from a result, or a path relative to the memories directory."),
    Parameter("start_line", "integer", "first line to return", "First line to return (default 1).",
              minimum=1, default=1),
    Parameter("end_line", "integer", "last line to return", "Last line to return (default: the end).", minimum=1),
    Parameter("kind", "choice", "which records", "Which records (default session).", choices=RECENT_KINDS,
              default="session"),
    Parameter("days", "integer", "only date folders from the last D days",
              "Only date folders from today minus this many days onward (0: today).", minimum=0),
)}

FILTER_NAMES = ("scope", "include_superseded", "project", "tags", "since", "until", "where")


def check(values: Mapping[str, object], names=None) -> dict:
    """The checked values of the named parameters (default: those given); missing ones take their defaults.
    Raises ParameterError for the first bad one, UsageError for a name no parameter has."""
    names = tuple(values) if names is None else tuple(names)
    unknown = [name for name in values if name not in names]
    if unknown:
        raise UsageError(f"unknown parameter {quoted(unknown[0])}: use {', '.join(names)}")
    checked: dict[str, Any] = {}
    for name in names:
        parameter = PARAMETERS[name]
        raw = values.get(name)
        checked[name] = parameter.default if raw is None else parameter.value(raw)
    since, until = checked.get("since"), checked.get("until")
    if since is not None and until is not None and since > until:
        raise ParameterError("since", f"{P} {since.isoformat()} is after the until date {until.isoformat()}: "
                                      "no day is in between")
    return checked


def from_texts(values: Mapping[str, list[str]], names) -> dict:
    """Raw values, for check(), of the named parameters given as texts (an HTTP query: name -> the texts
    given, a repeated name for a list); absent names are left out."""
    raw = {}
    for name in names:
        texts = values.get(name) or []
        if texts:
            parameter = PARAMETERS[name]
            raw[name] = tuple(texts) if parameter.kind == "texts" else parameter.from_text(texts[-1])
    return raw


def knowledge_filters(workspace: str | None, metadata: Mapping[str, object]) -> Filters:
    """The filters of the seed's knowledge_search: the workspace is a project, and each metadata field given
    must hold its value."""
    given = {field: value for field, value in metadata.items() if value is not None}
    return Filters(project=workspace, where=where_conditions(given, "metadata") if given else ())


def filters(values: Mapping[str, object], **defaults) -> Filters:
    """Filters from checked values (check()); `defaults` replace the parameters' own defaults."""
    given: dict[str, Any] = {name: (defaults.get(name, PARAMETERS[name].default) if value is None else value)
                             for name, value in ((name, values.get(name)) for name in FILTER_NAMES)}
    return Filters(scope=given["scope"] or "all", include_superseded=bool(given["include_superseded"]),
                   project=given["project"], tags=tuple(given["tags"] or ()), since=given["since"],
                   until=given["until"], where=tuple(given["where"] or ()))
