"""Which records a search may return: scope, status, project, tags, dates and Chroma-style `where`.

The same rules run as SQL on the managed index and as Python after retrieval on a CocoIndex table."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from .errors import UsageError
from .memories import INACTIVE_STATUSES, SCOPES, as_list, in_scope, normalize_status, record_date

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
_SQL_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


@dataclass(frozen=True)
class Filters:
    scope: str = "all"
    include_superseded: bool = False
    project: str | None = None
    tags: tuple[str, ...] = ()
    since: dt.date | None = None
    until: dt.date | None = None
    where: tuple[tuple[str, str, object], ...] = ()  # (field, operator, value), all ANDed

    def __post_init__(self):
        if self.scope not in SCOPES:
            raise UsageError(f"unknown scope {self.scope!r}: use one of {', '.join(SCOPES)}")

    @property
    def narrows(self) -> bool:
        """True when the filters can drop records beyond the default status rule."""
        return bool(self.scope != "all" or self.project or self.tags or self.since or self.until or self.where)


def parse_where(text: str | None) -> tuple[tuple[str, str, object], ...]:
    """`{"field": value, "field": {"$op": value}}` -> conditions. Raises UsageError."""
    if not text:
        return ()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"--where is not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(document, dict):
        raise UsageError('--where must be a JSON object, like {"project": "agents"}')
    conditions = []
    for field, condition in document.items():
        if not isinstance(condition, dict):
            condition = {"$eq": condition}
        for operator, value in condition.items():
            if operator not in OPERATORS:
                raise UsageError(f"--where: unknown operator {operator!r} for {field!r}: use {' '.join(OPERATORS)}")
            if operator in ("$in", "$nin") and not isinstance(value, list):
                raise UsageError(f"--where: {operator} for {field!r} needs a list")
            if operator in _SQL_COMPARE and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
                raise UsageError(f"--where: {operator} for {field!r} needs a number or a string")
            conditions.append((str(field), operator, value))
    return tuple(conditions)


# --- SQL, for the managed index ------------------------------------------------------------------

def sql_conditions(filters: Filters) -> tuple[list[str], list]:
    """WHERE clauses and their parameters over the managed chunks table."""
    clauses: list[str] = []
    params: list = []
    if filters.scope != "all":
        clauses.append("kind = %s")
        params.append(filters.scope)
    if not filters.include_superseded:
        clauses.append("status <> ALL(%s)")
        params.append(list(INACTIVE_STATUSES))
    if filters.project:
        clauses.append("project = %s")
        params.append(filters.project)
    if filters.tags:
        clauses.append("tags @> %s::text[]")
        params.append(list(filters.tags))
    if filters.since:
        clauses.append("recorded_on >= %s")
        params.append(filters.since)
    if filters.until:
        clauses.append("recorded_on <= %s")
        params.append(filters.until)
    for field, operator, value in filters.where:
        clause, values = _sql_condition(field, operator, value)
        clauses.append(clause)
        params.extend(values)
    return clauses, params


def _sql_condition(field: str, operator: str, value) -> tuple[str, list]:
    if field == "status":  # a missing status means active: use the normalized column
        target, as_text = "to_jsonb(status)", "status"
    else:
        target, as_text = "(frontmatter -> %s)", "(frontmatter ->> %s)"
    key = [] if field == "status" else [field]
    if operator in ("$eq", "$ne"):
        match = (f"(CASE WHEN jsonb_typeof({target}) = 'array' THEN {target} @> jsonb_build_array(%s::jsonb) "
                 f"ELSE {target} = %s::jsonb END)")
        params = key + key + [json.dumps(value)] + key + [json.dumps(value)]
        return (f"coalesce({match}, false)" if operator == "$eq" else f"NOT coalesce({match}, false)"), params
    if operator in ("$in", "$nin"):
        match = (f"(CASE WHEN jsonb_typeof({target}) = 'array' THEN {target} ?| %s::text[] "
                 f"ELSE {target} = ANY(%s::jsonb[]) END)")
        strings = [str(item) for item in value if isinstance(item, str)]
        params = key + key + [strings] + key + [[json.dumps(item) for item in value]]
        return (f"coalesce({match}, false)" if operator == "$in" else f"NOT coalesce({match}, false)"), params
    symbol = _SQL_COMPARE[operator]
    if isinstance(value, (int, float)):
        number = f"CASE WHEN jsonb_typeof({target}) = 'number' THEN ({as_text})::numeric {symbol} %s END"
        return f"coalesce({number}, false)", key + key + [value]
    return f"coalesce({as_text} {symbol} %s, false)", key + [value]


# --- Python, after retrieval on a CocoIndex table ------------------------------------------------

def matches(filters: Filters, relpath: str, frontmatter: dict) -> bool:
    """The same rules as sql_conditions, over a file's path and frontmatter."""
    if not in_scope(relpath, filters.scope):
        return False
    status = normalize_status(frontmatter.get("status"))
    if not filters.include_superseded and status in INACTIVE_STATUSES:
        return False
    if filters.project and str(frontmatter.get("project") or "") != filters.project:
        return False
    if filters.tags and not set(filters.tags) <= set(as_list(frontmatter.get("tags"))):
        return False
    if filters.since or filters.until:
        day, _ = record_date(relpath, frontmatter)
        if day is None or (filters.since and day < filters.since) or (filters.until and day > filters.until):
            return False
    for field, operator, value in filters.where:
        actual = status if field == "status" else frontmatter.get(field)
        if not _matches_condition(actual, operator, value):
            return False
    return True


def _matches_condition(actual, operator: str, value) -> bool:
    if operator in ("$eq", "$ne"):
        hit = value in actual if isinstance(actual, list) else (actual is not None and actual == value)
        return hit if operator == "$eq" else not hit
    if operator in ("$in", "$nin"):
        if isinstance(actual, list):
            hit = any(item in value for item in actual)
        else:
            hit = actual is not None and actual in value
        return hit if operator == "$in" else not hit
    if isinstance(value, (int, float)):
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):
            return False
    elif actual is None or isinstance(actual, (list, dict)):
        return False
    else:
        actual = str(actual)
    return {"$gt": actual > value, "$gte": actual >= value, "$lt": actual < value, "$lte": actual <= value}[operator]

