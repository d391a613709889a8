"""Which records a search may return: scope, status, project, tags, dates and Chroma-style `where`.

Each rule is defined once and rendered twice: as SQL over the managed chunks table, and as Python over a
Record (for layouts whose table holds no metadata). tests/test_filters.py proves the two agree.

`where` follows JSON: a boolean is not a number; a condition on a list field holds when an element
matches; `$ne` and `$nin` hold for a missing field; `$gt $gte $lt $lte` compare numbers with numbers and
strings with strings (by code point, as ISO dates sort), and are false for any other pairing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any

from ..directory.records import INACTIVE_STATUSES, KINDS, Record
from ..errors import PARAMETER as P, ParameterError, UsageError, quoted, require_text

SCOPES = (*KINDS, "all")
EQUALITY = ("$eq", "$ne", "$in", "$nin")
ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
OPERATORS = EQUALITY + tuple(ORDER)


@dataclass(frozen=True)
class Condition:
    """One `where` condition: the field (frontmatter key; `status` is the normalized one), operator, value."""

    field: str
    operator: str
    value: Any  # as parsed from JSON

    @property
    def negated(self) -> bool:
        return self.operator in ("$ne", "$nin")

    @property
    def choices(self) -> list:
        """The values an element may equal for $eq/$ne/$in/$nin."""
        return list(self.value) if self.operator in ("$in", "$nin") else [self.value]


@dataclass(frozen=True)
class Filters:
    scope: str = "all"
    include_superseded: bool = False
    project: str | None = None
    tags: tuple[str, ...] = ()
    since: dt.date | None = None
    until: dt.date | None = None
    where: tuple[Condition, ...] = ()  # all must hold

    def __post_init__(self):
        if self.scope not in SCOPES:
            raise ParameterError("scope", f"unknown {P} {quoted(self.scope)}: use one of {', '.join(SCOPES)}")
        _text("project", self.project)
        for tag in self.tags:
            _text("tags", tag)

    @property
    def narrows(self) -> bool:
        """True when the filters can drop records beyond the default status rule."""
        return bool(self.scope != "all" or self.project or self.tags or self.since or self.until or self.where)


def _text(parameter: str, value):
    """require_text, as a ParameterError."""
    try:
        return require_text(value, P)
    except UsageError as error:
        raise ParameterError(parameter, str(error)) from None


def parse_where(text: str | None, parameter: str = "where") -> tuple[Condition, ...]:
    """`{"field": value, "field": {"$op": value}}` as JSON text -> conditions. Raises ParameterError."""
    if not text:
        return ()
    _text(parameter, text)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ParameterError(parameter, f"{P} is not valid JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise ParameterError(parameter, f"{P} is nested too deeply") from None
    if not isinstance(document, dict):
        raise ParameterError(parameter, P + ' must be a JSON object, like {"project": "agents"}')
    return where_conditions(document, parameter)


def where_conditions(document: dict, parameter: str = "where") -> tuple[Condition, ...]:
    """Conditions from a parsed Chroma-style filter document; `parameter` names it in messages.
    Raises ParameterError."""
    if not isinstance(document, dict):
        raise ParameterError(parameter, P + ' must be an object, like {"project": "agents"}')
    if not document:
        raise ParameterError(parameter, P + ' {} names no field: give one like {"project": "agents"}, or leave '
                             + P + ' out')
    conditions = []
    for field, condition in document.items():
        if str(field).startswith("$"):
            raise ParameterError(parameter, f"{P}: {field} is not supported: give conditions on fields, "
                                            "which must all hold")
        if not isinstance(condition, dict):
            condition = {"$eq": condition}
        if not condition:
            raise ParameterError(parameter, f'{P}: no operator for {quoted(field)}: use {{"{field}": {{"$eq": ...}}}}')
        for operator, value in condition.items():
            conditions.append(_condition(str(field), operator, value, parameter))
    return tuple(conditions)


def _condition(field: str, operator: str, value, parameter: str) -> Condition:
    _text(parameter, field)
    for text in (value if isinstance(value, list) else [value]):
        if isinstance(text, str):
            _text(parameter, text)
    if operator not in OPERATORS:
        raise ParameterError(parameter, f"{P}: unknown operator {quoted(operator)} for {quoted(field)}: "
                                        f"use {' '.join(OPERATORS)}")
    if operator in ("$in", "$nin"):
        if not isinstance(value, list) or not all(_is_scalar(item) for item in value):
            raise ParameterError(parameter, f"{P}: {operator} for {quoted(field)} needs a list of strings, numbers or "
                                            "booleans")
        return Condition(field, operator, tuple(value))
    if operator in ORDER:
        if not (_is_number(value) or isinstance(value, str)):
            raise ParameterError(parameter, f"{P}: {operator} for {quoted(field)} needs a number or a string")
    elif not _is_scalar(value):
        raise ParameterError(parameter, f"{P}: {operator} for {quoted(field)} needs a string, a number or a boolean")
    return Condition(field, operator, value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_scalar(value) -> bool:
    return isinstance(value, (str, bool)) or _is_number(value)


# --- Python ---------------------------------------------------------------------------------------

def matches(filters: Filters, record: Record) -> bool:
    """Whether a record passes the filters; the same answer as sql_conditions gives over its rows."""
    if filters.scope != "all" and record.kind != filters.scope:
        return False
    if not filters.include_superseded and record.status in INACTIVE_STATUSES:
        return False
    if filters.project and record.project != filters.project:
        return False
    if filters.tags and not set(filters.tags) <= set(record.tags):
        return False
    if filters.since or filters.until:
        day = record.date
        if day is None or (filters.since and day < filters.since) or (filters.until and day > filters.until):
            return False
    return all(holds(condition, record.value(condition.field)) for condition in filters.where)


def holds(condition: Condition, actual) -> bool:
    """Whether a frontmatter value (None when missing) satisfies one condition."""
    if condition.operator in ORDER:
        if _is_number(condition.value) and _is_number(actual):
            pass
        elif isinstance(condition.value, str) and isinstance(actual, str):
            pass
        else:
            return False
        return {"$gt": actual > condition.value, "$gte": actual >= condition.value,
                "$lt": actual < condition.value, "$lte": actual <= condition.value}[condition.operator]
    elements = actual if isinstance(actual, list) else ([] if actual is None else [actual])
    found = any(_json_equal(element, choice) for element in elements for choice in condition.choices)
    return not found if condition.negated else found


def _json_equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    return isinstance(a, str) and isinstance(b, str) and a == b


# --- SQL, over the managed chunks table -------------------------------------------------------------

def sql_conditions(filters: Filters):
    """(list of sql.Composable clauses, parameters) over the managed chunks table's columns."""
    from psycopg import sql

    clauses: list = []
    params: list = []
    if filters.scope != "all":
        # Written out, not a parameter: every plan of the query, a prepared one too, then sees that the kind's
        # own vector graph (storage/writer.py's ensure_kind_graphs) holds all it asks for.
        clauses.append(sql.SQL("kind = {}").format(sql.Literal(filters.scope)))
    if not filters.include_superseded:
        clauses.append(sql.SQL("status <> ALL(%s)"))
        params.append(list(INACTIVE_STATUSES))
    if filters.project:
        clauses.append(sql.SQL("project = %s"))
        params.append(filters.project)
    if filters.tags:
        clauses.append(sql.SQL("tags @> %s::text[]"))
        params.append(list(filters.tags))
    if filters.since:
        clauses.append(sql.SQL("recorded_on >= %s"))
        params.append(filters.since)
    if filters.until:
        clauses.append(sql.SQL("recorded_on <= %s"))
        params.append(filters.until)
    for condition in filters.where:
        clause, values = _sql_condition(condition)
        clauses.append(clause)
        params.extend(values)
    return clauses, params


def _sql_condition(condition: Condition):
    from psycopg import sql

    if condition.field == "status":  # a missing status means active: use the normalized column
        target, key = sql.SQL("to_jsonb(status)"), []
    else:
        target, key = sql.SQL("(frontmatter -> %s)"), [condition.field]
    if condition.operator in ORDER:
        kind = "string" if isinstance(condition.value, str) else "number"
        value = sql.SQL("({t} #>> '{{}}') COLLATE \"C\"" if kind == "string" else "({t})::numeric").format(t=target)
        test = sql.SQL("CASE WHEN jsonb_typeof({t}) = {kind} THEN {value} {op} %s END").format(
            t=target, kind=sql.Literal(kind), value=value, op=sql.SQL(ORDER[condition.operator]))
        return sql.SQL("coalesce({}, false)").format(test), key + key + [condition.value]
    elements = sql.SQL("jsonb_array_elements(CASE jsonb_typeof({t}) WHEN 'array' THEN {t} "
                       "ELSE jsonb_build_array({t}) END)").format(t=target)
    exists = sql.SQL("EXISTS (SELECT 1 FROM {} AS e (element) WHERE e.element = ANY(%s::jsonb[]))").format(elements)
    params = key + key + key + [[json.dumps(choice) for choice in condition.choices]]
    return (sql.SQL("NOT {}").format(exists) if condition.negated else exists), params
