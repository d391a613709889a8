"""Find the time words in a search query (Japanese or English) and the date window they name.

    >>> find_time("先週のリリース手順の打ち合わせで何を決めた?", datetime.date(2026, 12, 1))
    TimeWindow(since=datetime.date(2026, 11, 23), until=datetime.date(2026, 11, 29), \
phrases=('先週',), text='リリース手順の打ち合わせで何を決めた?')

Standard library only. It runs on every search, so importing it compiles nothing, and a query compiles
only what it could need: one small scan finds the words and characters that time words are made of (先週
holds 週, "last week" holds "week"), and only the rules those can start are compiled (each once per process)
and run. Every rule and decision is described in references/time-words.md.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

__all__ = ["TimeWindow", "find_time"]


@dataclass(frozen=True)
class TimeWindow:
    """The date window a query's time words name, and the query without them."""

    since: datetime.date | None  # inclusive
    until: datetime.date | None  # inclusive
    phrases: tuple[str, ...]  # the words as written in the query, in order, e.g. ("先週",)
    text: str  # the query with those words (and the glue around them) removed


def find_time(query: str, today: datetime.date) -> TimeWindow | None:
    """The date window a query's time words name, or None when it names none. Never raises: any text is a query.

    The window is what the words say, even when it starts after it ends ("since 2030", "after today"):
    the caller decides what such a window means."""
    read = _read(query, today)
    if read is None:
        return None
    windows, cuts = read
    sinces = [w.since for w in windows]
    untils = [w.until for w in windows]
    return TimeWindow(
        since=None if None in sinces else min(sinces),
        until=None if None in untils else max(untils),
        phrases=tuple(query[w.start : w.end] for w in windows),
        text=_remove(query, cuts),
    )


# A query in which more than this many expressions read as dates (a pasted log, a list of dates) names
# no window: it is searched as text. With the query's length (retrieval.MAX_QUERY_CHARS), it bounds the work.
MAX_CANDIDATES = 64


def _read(query, today: datetime.date) -> tuple[list[_Hit], list[tuple[int, int]]] | None:
    """The query's phrases (each a _Hit, in order) and the spans the text loses (each phrase with its glue,
    phrases next to each other joined), or None when it names no time."""
    if not isinstance(query, str) or not query:
        return None
    # Full-width digits and separators become ASCII one for one, so offsets in `norm`
    # are offsets in `query` and phrases can be cut from the query as written.
    norm = query.translate(_FULLWIDTH)
    rules = _rules_for(norm)
    if not rules:
        return None  # most queries: one small scan, no rule compiled or run
    hits = _find_hits(norm, today, rules)
    if not hits:
        return None
    windows = _combine(hits, norm, today)
    return windows, _cuts([_with_glue(w.start, w.end, norm) for w in windows], norm)


# --------------------------------------------------------------------------- dates

_ONE_DAY = datetime.timedelta(days=1)


def _days(n: int) -> datetime.timedelta:
    return datetime.timedelta(days=n)


class _NoSuchDay(ValueError):
    """A month 1..12 and a day 1..31 that the calendar does not have (2025-02-29, 4/31): not a time word,
    and no part of what it was written with is read either (2025年 in 2025年2月29日)."""


def _date(year: int, month: int, day: int) -> datetime.date:
    """The date, or _NoSuchDay when only the calendar forbids it, or ValueError when it is no date at all
    (month 13, day 32: then the numbers were not a date, and the words around them may still be)."""
    try:
        return datetime.date(year, month, day)
    except ValueError:
        if 1 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= 31:
            raise _NoSuchDay(f"no {year}-{month:02d}-{day:02d}") from None
        raise


def _monday(day: datetime.date) -> datetime.date:
    """Monday of the ISO week (Monday..Sunday) that holds `day`."""
    return day - _days(day.weekday())


def _week(today: datetime.date, weeks_back: int) -> tuple[datetime.date, datetime.date]:
    monday = _monday(today) - _days(7 * weeks_back)
    return monday, monday + _days(6)


def _month(year: int, month: int, months_back: int = 0) -> tuple[datetime.date, datetime.date]:
    """The whole calendar month `months_back` months before year-month."""
    if not 1 <= month <= 12:
        raise ValueError(f"no month {month}")  # 13月, 2026-13
    y, m0 = divmod(year * 12 + month - 1 - months_back, 12)
    first = datetime.date(y, m0 + 1, 1)
    next_first = datetime.date(y + 1, 1, 1) if m0 == 11 else datetime.date(y, m0 + 2, 1)
    return first, next_first - _ONE_DAY


def _year(year: int) -> tuple[datetime.date, datetime.date]:
    return datetime.date(year, 1, 1), datetime.date(year, 12, 31)


def _recent_month(today: datetime.date, month: int) -> tuple[int, int]:
    """Year and month of the most recent `month` not after today."""
    return (today.year if month <= today.month else today.year - 1), month


def _recent_day(today: datetime.date, month: int, day: int) -> datetime.date:
    """The most recent month/day not after today (2/29 goes back to the last leap year)."""
    year = today.year if (month, day) <= (today.month, today.day) else today.year - 1
    for y in range(year, year - 8, -1):
        try:
            return datetime.date(y, month, day)
        except ValueError:  # 2/29 in a common year, or 4/31 that never exists
            continue
    if 1 <= month <= 12 and 1 <= day <= 31:
        raise _NoSuchDay(f"no {month}/{day}")  # 2/30, 4/31
    raise ValueError(f"no {month}/{day}")  # 13/5, 11/32


def _weekday_on_or_before(today: datetime.date, weekday: int) -> datetime.date:
    return today - _days((today.weekday() - weekday) % 7)


def _shift_year(since: datetime.date, until: datetime.date, years: int):
    """A single day or a whole month, `years` years later (earlier if negative)."""
    if since == until:
        try:
            day = since.replace(year=since.year + years)
        except ValueError:  # 2/29
            day = since.replace(year=since.year + years, day=28)
        return day, day
    return _month(since.year + years, since.month)


# --------------------------------------------------------------------------- words

_KANJI_DIGIT = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_ENGLISH_NUMBER = {
    w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                                "seventeen", "eighteen", "nineteen", "twenty"))
}
_ENGLISH_NUMBER.update(a=1, an=1)


# The letters that Unicode case-insensitive matching reads as ASCII ones: (?i:s) matches ſ, (?i:k) the Kelvin
# sign, (?i:i) ı and İ. A word the patterns matched is looked up by its ASCII spelling ("laſt week").
_ASCII_FOLD = str.maketrans({"\u017f": "s", "\u212a": "k", "\u0131": "i", "\u0130": "i"})


def _fold(word: str) -> str:
    """An English word or phrase as the patterns matched it, spelt for lookup: lowercase ASCII letters,
    any run of whitespace as one space ("Laſt\u3000Week" -> "last week")."""
    return " ".join(word.translate(_ASCII_FOLD).lower().split())


def _number(word: str) -> int:
    """'12', '十二', 'twelve', 'a couple of' -> int."""
    word = _fold(word)
    if word.isascii() and word.isdigit():
        return int(word)
    if "couple" in word:
        return 2
    if word in _ENGLISH_NUMBER:
        return _ENGLISH_NUMBER[word]
    tens, ten, ones = word.partition("十")
    if not ten:
        return _KANJI_DIGIT[word]
    return (_KANJI_DIGIT[tens] if tens else 1) * 10 + (_KANJI_DIGIT[ones] if ones else 0)


_MONTH_NAMES = (
    ("january", "jan"),
    ("february", "feb"),
    ("march", "mar"),
    ("april", "apr"),
    ("may",),
    ("june", "jun"),
    ("july", "jul"),
    ("august", "aug"),
    ("september", "sept", "sep"),
    ("october", "oct"),
    ("november", "nov"),
    ("december", "dec"),
)
_MONTH_NUMBER = {name: i for i, names in enumerate(_MONTH_NAMES, 1) for name in names}
_FULL_MONTHS = {names[0] for names in _MONTH_NAMES}
_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS_JA = "月火水木金土日"


def _weekday(word: str) -> int:
    """'金' or 'Friday' or 'fri' -> 4 (Monday is 0, as in date.weekday())."""
    if len(word) == 1:
        return _WEEKDAYS_JA.index(word)
    return [d[:3] for d in _WEEKDAYS_EN].index(_fold(word)[:3])


def _month_number(word: str) -> int:
    return _MONTH_NUMBER[_fold(word).rstrip(".")]


# --------------------------------------------------------------------------- fixed words
# Words that name a window by themselves, looked up after one pattern per language matched.


def _this_week(today):
    return _monday(today), today  # up to today, not the coming Sunday


def _whole_week(weeks_back):
    return lambda today: _week(today, weeks_back)


def _weekend(weeks_back):
    def saturday_sunday(today):
        saturday = _week(today, weeks_back)[0] + _days(5)
        return saturday, saturday + _ONE_DAY

    return saturday_sunday


def _day(offset):
    return lambda today: (today + _days(offset),) * 2


def _this_month(today):
    return today.replace(day=1), today


def _whole_month(months_back):
    return lambda today: _month(today.year, today.month, months_back)


def _this_year(today):
    return datetime.date(today.year, 1, 1), today


def _whole_year(years_back):
    return lambda today: _year(today.year - years_back)


_JA_WORDS = {
    "今日": _day(0), "本日": _day(0),
    "昨日": _day(-1), "きのう": _day(-1),
    "一昨日": _day(-2), "おととい": _day(-2), "おとつい": _day(-2),
    "今週": _this_week, "先週": _whole_week(1), "先々週": _whole_week(2), "先先週": _whole_week(2),
    "今週末": _weekend(0), "先週末": _weekend(1),
    "今月": _this_month, "先月": _whole_month(1), "先々月": _whole_month(2), "先先月": _whole_month(2),
    "今年": _this_year, "去年": _whole_year(1), "昨年": _whole_year(1),
    "一昨年": _whole_year(2), "おととし": _whole_year(2),
}  # fmt: skip
_EN_WORDS = {
    "today": _day(0), "yesterday": _day(-1),
    "the day before yesterday": _day(-2), "day before yesterday": _day(-2),
    "this week": _this_week, "last week": _whole_week(1), "previous week": _whole_week(1),
    "the week before last": _whole_week(2), "week before last": _whole_week(2),
    "this weekend": _weekend(0), "last weekend": _weekend(1),
    "this month": _this_month, "last month": _whole_month(1), "previous month": _whole_month(1),
    "the month before last": _whole_month(2), "month before last": _whole_month(2),
    "this year": _this_year, "last year": _whole_year(1), "previous year": _whole_year(1),
    "the year before last": _whole_year(2), "year before last": _whole_year(2),
}  # fmt: skip
_FIXED_WORDS = {**_JA_WORDS, **_EN_WORDS}


def _alternatives(words) -> str:
    """Longest first, so that 先週末 wins over 先週; spaces match any run of whitespace."""
    return "|".join(w.replace(" ", r"\s+") for w in sorted(words, key=len, reverse=True))


# --------------------------------------------------------------------------- rules
# Each rule is (pattern, handler). A handler gets the match, today and the normalised query and
# returns _span(...), or None to reject the match ("may" the verb, "every Monday"). A date that
# does not exist (2/30, 13月) raises ValueError, which also rejects it. Patterns are
# case-sensitive; English parts opt in with (?i:...), so a handler can still tell "May" from "may".

_FULLWIDTH = str.maketrans("０１２３４５６７８９／－．：，", "0123456789/-.:,")

# A number that starts here is not inside v11.20 / ERR_11 / BSD-2/3 / build-2026-11-20.
_NOT_IN_NUMBER = r"(?<![0-9A-Za-z_.])(?<![A-Za-z_]-)"
_NUMBER_ENDS = r"(?![0-9A-Za-z_]|[.:][0-9])"  # ... nor runs on into 11.20 / 11:20
# ASCII only, so that 先週todayの still matches; todays, Monday.com, today-notes.md do not.
_WORD_STARTS = r"(?<![A-Za-z0-9_])(?<![A-Za-z0-9][.\-])"
_WORD_ENDS = r"(?![A-Za-z0-9_]|[.\-][A-Za-z0-9])"
_YEAR = r"((?:19|20)[0-9]{2})"
_JA_NUMBER = r"(?<![0-9数何十])([0-9]{1,3}|[一二三四五六七八九]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_EN_NUMBER_WORDS = (r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
                     r"|sixteen|seventeen|eighteen|nineteen|twenty")
_EN_NUMBER = rf"[0-9]{{1,3}}|an?|{_EN_NUMBER_WORDS}|(?:a\s+)?couple(?:\s+of)?"
_EN_WEEKDAY = "|".join(_WEEKDAYS_EN)
_EN_WEEKDAY_SHORT = r"(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?"
_EN_MONTH = (  # one group: the month word, full or abbreviated ("Nov." keeps its dot)
    "(" + "|".join(sorted(_FULL_MONTHS, key=len, reverse=True))
    + "|(?:" + "|".join(n for names in _MONTH_NAMES for n in names[1:]) + r")\.?)"
)
_ORDINAL = r"(?:st|nd|rd|th)?"
_ISO_TIME = r"(?:T[0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
# A weekday that only restates a date, taken into the date's phrase after it matched:
# "11月20日(金)", "11/20（金曜日）", "11月20日金曜", "Nov 20 (Fri)" ... and "Friday, Nov 20".
_WEEKDAY_AFTER_DATE = (
    rf"\s*[(（](?:[月火水木金土日](?:曜日?)?|(?i:{_EN_WEEKDAY}|{_EN_WEEKDAY_SHORT}))[)）]"
    r"|[月火水木金土日]曜日?"
)
_WEEKDAY_BEFORE_DATE = rf"(?<![A-Za-z0-9_])(?i:{_EN_WEEKDAY}|{_EN_WEEKDAY_SHORT}),?\s+$"


class _Span:
    """What a handler found: a window, and how a range may reinterpret it."""

    __slots__ = ("since", "until", "kind", "year_inferred")

    def __init__(self, since, until, kind, year_inferred):
        self.since, self.until = since, until
        # "date": an explicit calendar day, so "11月20日〜22日" may continue it with a bare day;
        # "weekday": a bare weekday, which a range re-reads as "the first one on/after its start".
        self.kind = kind
        self.year_inferred = year_inferred  # "12月" with no year: a range may move it a year


def _span(since, until=None, kind="", year_inferred=False) -> _Span:
    return _Span(since, since if until is None else until, kind, year_inferred)


def _fixed_word(m, today, text):
    """今日, 先週, last month, the week before last ... (see _JA_WORDS and _EN_WORDS)."""
    word = m.group()
    window = _FIXED_WORDS.get(word) or _FIXED_WORDS[_fold(word)]
    return _span(*window(today))


def _ago(m, today, text):
    """N日前 / N days ago: that day; weeks: that ISO week; months/years: that calendar month/year."""
    n = _number(m.group(1))
    unit = _fold(next(u for u in m.groups()[1:] if u))
    if unit in ("日", "day"):
        return _span(today - _days(n))
    if unit in ("週", "week"):
        return _span(*_week(today - _days(7 * n), 0))
    if unit in ("年", "year"):
        return _span(*_year(today.year - n))
    return _span(*_month(today.year, today.month, n))


_WEEKS_BACK = {"今週": 0, "this": 0, "先週": 1, "last": 1, "先々週": 2, "先先週": 2}
_MONTHS_BACK = {"今月": 0, "先月": 1, "先々月": 2, "先先月": 2}
_YEARS_BACK = {"今年": 0, "去年": 1, "昨年": 1, "一昨年": 2, "おととし": 2}


def _weekday_in_week(m, today, text):
    """先週の金曜 / this Monday / Friday last week: that weekday of that week."""
    monday = _week(today, _WEEKS_BACK[_fold(m.group("which"))])[0]
    return _span(monday + _days(_weekday(m.group("day"))))


def _bare_weekday(m, today, text):
    """月曜 / Monday: the most recent one on or before today ("every Monday" is no date)."""
    if _previous_word(text, m.start()) in ("every", "each"):
        return None
    return _span(_weekday_on_or_before(today, _weekday(m.group(1))), kind="weekday")


def _last_weekday(m, today, text):
    """last Monday: the most recent Monday strictly before today."""
    return _span(_weekday_on_or_before(today - _ONE_DAY, _weekday(m.group(1))))


def _day_of_relative_month(m, today, text):
    """先月の20日: that day of that month."""
    first, _ = _month(today.year, today.month, _MONTHS_BACK[m.group(1)])
    return _span(_date(first.year, first.month, int(m.group(2))), kind="date")


def _month_of_relative_year(m, today, text):
    """去年の11月 / 去年の11月20日: that month or day of that year."""
    year, month, day = today.year - _YEARS_BACK[m.group(1)], int(m.group(2)), m.group(3)
    if day:
        return _span(_date(year, month, int(day)), kind="date")
    return _span(*_month(year, month))


def _ymd(m, today, text):
    return _span(_date(int(m.group(1)), int(m.group(2)), int(m.group(3))), kind="date")


def _ym(m, today, text):
    return _span(*_month(int(m.group(1)), int(m.group(2))))


def _y(m, today, text):
    return _span(*_year(int(m.group(1))))


def _md(m, today, text):
    """11月20日 / 11/20 / 11/20/2026: with no year, the most recent one not after today."""
    month, day, year = int(m.group(1)), int(m.group(2)), m.group(3)
    if year:
        return _span(_date(int(year), month, day), kind="date")
    return _span(_recent_day(today, month, day), kind="date", year_inferred=True)


def _m(m, today, text):
    """11月: the whole month, its most recent occurrence not after today."""
    return _span(*_month(*_recent_month(today, int(m.group(1)))), year_inferred=True)


def _english_date(month_word, day, year, today) -> _Span:
    month = _month_number(month_word)
    if year:
        return _span(_date(int(year), month, int(day)), kind="date")
    return _span(_recent_day(today, month, int(day)), kind="date", year_inferred=True)


def _month_name_day(m, today, text):
    """November 20 / Nov. 20th, 2026."""
    return _english_date(m.group(1), m.group(2), m.group(3), today)


def _day_month_name(m, today, text):
    """20 November / the 20th of Nov 2026."""
    return _english_date(m.group(2), m.group(1), m.group(3), today)


def _month_name_year(m, today, text):
    """November 2026."""
    return _span(*_month(int(m.group(2)), _month_number(m.group(1))))


# A month name alone counts after these words even when it could be an English word.
# (this/last are a rule of their own: "this May" is a month, "this may help" is not.)
_MONTH_CUES = {"in", "on", "since", "during", "until", "till", "before", "after", "from", "of"}
# A bare 4-digit year counts only after these.
_YEAR_CUES = {"in", "during", "since", "until", "till", "before", "after", "from", "through"}


def _month_name(m, today, text):
    """November / Nov.: the whole month, its most recent occurrence not after today.

    "may" and "march" are usually words, so lowercase they need a cue (in may, since march);
    capitalised they count unless "May" asks something (May I / May we ...). A bare
    abbreviation counts only capitalised (Nov, not nov), and "Jan" (a name) only as "Jan.".
    """
    word = m.group(1)
    key = _fold(word).rstrip(".")
    if _previous_word(text, m.start()) not in _MONTH_CUES:
        capitalised = word[0].isupper()
        if key in ("may", "march"):
            if not capitalised or (key == "may" and _compiled(_PRONOUN_AFTER).match(text, m.end())):
                return None
        elif key == "jan":
            if not word.endswith("."):
                return None
        elif key not in _FULL_MONTHS and not capitalised:
            return None
    return _span(*_month(*_recent_month(today, _month_number(word))), year_inferred=True)


def _last_or_this_month_name(m, today, text):
    """this May = May of this year; last May = the most recent May before this month."""
    word = m.group(2)
    if _fold(word) in ("may", "march") and not word[0].isupper():
        return None  # "this may help", "last march"
    month = _month_number(word)
    if _fold(m.group(1)) == "this":
        return _span(*_month(today.year, month))
    return _span(*_month(today.year if month < today.month else today.year - 1, month))


def _year_after_cue(m, today, text):
    """A bare 4-digit year is a number ("2026 roadmap"); "in 2026" / "since 2025" is a year."""
    cued = _previous_word(text, m.start()) in _YEAR_CUES
    if cued or _compiled(_YEAR_THEN_CONNECTOR).search(text, max(0, m.start() - 16), m.start()):
        return _span(*_year(int(m.group(1))))
    return None


# Each rule is (needs, pattern, handler). needs: groups of features (see _features), each group naming the
# features of which a match always holds at least one; a rule is compiled and run only when the query holds a
# feature of every group. The differential test in tests/test_timewords.py checks these against every rule.
_JA_WORD = ("ja word",)  # any of _JA_WORDS
_DIGIT = ("digit",)
_WEEKDAY = ("weekday",)  # an English weekday name
_MONTH_WORD = ("month word",)  # an English month name or abbreviation; lowercase may/march only after a cue
_MONTH_OR_VERB = ("month word", "may or march")  # with a day or year after it, lowercase may/march too
_LAST_OR_THIS = ("last", "this")
_RULES = (
    # ---- fixed words. 今年度/昨年度 are fiscal years, whose start varies: left alone.
    ((_JA_WORD,), rf"(?:{_alternatives(_JA_WORDS)})(?!度)", _fixed_word),
    ((("today", "yesterday", "weekend", "week", "month", "year"),),
     _WORD_STARTS + rf"(?i:{_alternatives(_EN_WORDS)})" + _WORD_ENDS, _fixed_word),
    # ---- Japanese, relative: 3日前, 三日前, 2週間前, 2週前, 3か月前, 3ヶ月前, 3カ月前, 3箇月前, 1年前
    # (not 3日前後, "about three days")
    ((("前",), ("日", "週", "月", "年")), _JA_NUMBER + r"(?:(日|週)間?|[かヶカケヵ箇个](月)|(年))前(?!後)", _ago),
    ((("曜",), ("週",)), r"(?P<which>今週|先週|先々週|先先週)の?(?P<day>[月火水木金土日])曜日?", _weekday_in_week),
    # 毎週月曜 / 隔週月曜 / 月曜ごと / 第1月曜 repeat: no date.
    ((("曜",),), r"(?:この前|この間|前回)の([月火水木金土日])曜日?", _last_weekday),  # as "last Monday"
    ((("曜",),), r"(?<![0-9毎])(?<!毎週)(?<!隔週)([月火水木金土日])曜日?(?!ごと|毎)", _bare_weekday),
    ((("日",), ("月",), _DIGIT), r"(今月|先月|先々月|先先月)の?([0-9]{1,2})日(?![0-9前間])", _day_of_relative_month),
    ((("月",), _DIGIT, _JA_WORD), r"(今年|去年|昨年|一昨年|おととし)の?([0-9]{1,2})月(?:([0-9]{1,2})日)?(?![0-9])",
     _month_of_relative_year),
    # ---- Japanese and numeric, absolute. 毎月20日 / 毎年11月 repeat; 3月期 is a fiscal period.
    ((("年",), ("月",), ("日",), _DIGIT), _NOT_IN_NUMBER + _YEAR + r"年([0-9]{1,2})月([0-9]{1,2})日", _ymd),
    ((("年",), ("月",), _DIGIT), _NOT_IN_NUMBER + _YEAR + r"年([0-9]{1,2})月(?![0-9])", _ym),
    ((("年",), _DIGIT), _NOT_IN_NUMBER + _YEAR + r"年(?![0-9度])", _y),
    ((("月",), ("日",), _DIGIT), r"(?<!毎月)" + _NOT_IN_NUMBER + r"([0-9]{1,2})月([0-9]{1,2})日()", _md),
    ((("月",), _DIGIT), r"(?<!毎年)" + _NOT_IN_NUMBER + r"([0-9]{1,2})月(?![0-9曜期間])", _m),
    ((("-",), _DIGIT), _NOT_IN_NUMBER + _YEAR + r"-([0-9]{1,2})-([0-9]{1,2})" + _ISO_TIME + _NUMBER_ENDS, _ymd),
    ((("/",), _DIGIT), _NOT_IN_NUMBER + _YEAR + r"/([0-9]{1,2})/([0-9]{1,2})" + _NUMBER_ENDS, _ymd),
    ((("-", "/"), _DIGIT), _NOT_IN_NUMBER + _YEAR + r"[-/]([0-9]{1,2})(?![0-9A-Za-z_]|[-/.:][0-9])", _ym),  # 2026-11
    # 11/20 and 11/20/2026, month first; not in paths (docs/11/20) nor inside longer numbers.
    ((("/",), _DIGIT),
     r"(?<![0-9A-Za-z_./])(?<![A-Za-z_]-)([0-9]{1,2})/([0-9]{1,2})(?:/" + _YEAR + r")?(?![0-9A-Za-z_]|[/.:][0-9])",
     _md),
    # ---- English, relative
    ((("ago",), ("day", "week", "month", "year")),
     _WORD_STARTS + rf"(?i:({_EN_NUMBER})\s+(day|week|month|year)s?\s+ago)" + _WORD_ENDS, _ago),
    ((("last",), _WEEKDAY), _WORD_STARTS + rf"(?i:last\s+({_EN_WEEKDAY}))" + _WORD_ENDS, _last_weekday),
    ((("this",), _WEEKDAY), _WORD_STARTS + rf"(?i:(?P<which>this)\s+(?P<day>{_EN_WEEKDAY}))" + _WORD_ENDS,
     _weekday_in_week),
    ((_WEEKDAY, ("week",), _LAST_OR_THIS),
     _WORD_STARTS + rf"(?i:(?P<day>{_EN_WEEKDAY}),?\s+(?:of\s+)?(?P<which>last|this)\s+week)" + _WORD_ENDS,
     _weekday_in_week),
    ((_WEEKDAY, ("week",), _LAST_OR_THIS),
     _WORD_STARTS + rf"(?i:(?P<which>last|this)\s+week(?:'s|’s)?\s+(?P<day>{_EN_WEEKDAY}))" + _WORD_ENDS,
     _weekday_in_week),
    ((_WEEKDAY,), _WORD_STARTS + rf"(?i:({_EN_WEEKDAY}))" + _WORD_ENDS, _bare_weekday),
    # ---- English, absolute
    ((_MONTH_OR_VERB, _DIGIT),
     _WORD_STARTS + rf"(?i:{_EN_MONTH}(?:(?<=\.)\s*|\s+)([0-9]{{1,2}}){_ORDINAL}(?:,?\s+{_YEAR})?)" + _NUMBER_ENDS,
     _month_name_day),
    ((_MONTH_OR_VERB, _DIGIT),
     _WORD_STARTS + rf"(?i:(?:the\s+)?([0-9]{{1,2}}){_ORDINAL}\s+(?:of\s+)?{_EN_MONTH}(?:,?\s+{_YEAR})?)"
     + _WORD_ENDS, _day_month_name),
    ((_MONTH_OR_VERB, _DIGIT), _WORD_STARTS + rf"(?i:{_EN_MONTH},?\s+{_YEAR})" + _NUMBER_ENDS, _month_name_year),
    ((_MONTH_WORD, _LAST_OR_THIS), _WORD_STARTS + rf"(?i:(last|this)\s+{_EN_MONTH})" + _WORD_ENDS,
     _last_or_this_month_name),
    ((_MONTH_WORD,), _WORD_STARTS + rf"(?i:{_EN_MONTH})" + _WORD_ENDS, _month_name),
    ((_DIGIT,), r"(?<![0-9A-Za-z_.\-/])" + _YEAR + r"(?![0-9A-Za-z_]|[-/.:][0-9])", _year_after_cue),
)

# ---- the features a query holds: what every time word is made of, found without a pattern.
# English words are found whole, as the rules match them: case-insensitive (so "laſt" is "last": the folded
# text has the query's length, ſ ı İ K read as s i i k), between characters that are not [A-Za-z0-9_].
_EN_FEATURE_WORDS = {
    **{word: word for word in ("today", "yesterday", "weekend", "week", "month", "year", "day", "ago", "last",
                               "this")},
    **{word + "s": word for word in ("day", "week", "month", "year")},
    **{day: "weekday" for day in _WEEKDAYS_EN},
    **{month: "month word" for month in _MONTH_NUMBER},
}
_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_CHARACTER_FEATURES = "日週月年曜前-/"


def _features(norm: str) -> set[str]:
    """What the query holds that time words are made of: the names the rules' needs use."""
    found = {c for c in _CHARACTER_FEATURES if c in norm}
    if any(digit in norm for digit in "0123456789"):
        found.add("digit")
    if any(word in norm for word in _JA_WORDS):
        found.add("ja word")
    folded = norm.translate(_ASCII_FOLD).lower()
    for word, feature in _EN_FEATURE_WORDS.items():
        start = folded.find(word)
        while start >= 0:
            end = start + len(word)
            if ((start == 0 or norm[start - 1] not in _WORD_CHARACTERS)
                    and (end == len(norm) or norm[end] not in _WORD_CHARACTERS)):
                found.add(_month_feature(norm, start, word) if feature == "month word" else feature)
                if feature != "month word" or "month word" in found:
                    break
            start = folded.find(word, start + 1)
    return found


def _month_feature(norm: str, start: int, word: str) -> str:
    """"month word"; "may or march" for a lowercase may or march with no cue before it, the verb and the noun
    ("this may help"), which only a day or a year after it makes a month (may 5)."""
    if word in ("may", "march") and not norm[start].isupper() and _previous_word(norm, start) not in _MONTH_CUES:
        return "may or march"
    return "month word"


def _rules_for(norm: str) -> list:
    """(compiled pattern, handler) of each rule the query could match, in _RULES order."""
    found = _features(norm)
    if not found:
        return []
    return [(_compiled(pattern), handler) for needs, pattern, handler in _RULES
            if all(not found.isdisjoint(group) for group in needs)]


# ---- what turns hits into ranges, and what is removed with a phrase
# X〜Y, XからY, X-Y, X to/through/until Y, (between) X and Y
_CONNECTOR = r"\s*(?:[〜～~\-–—]|から)\s*|\s+(?i:to|through|thru|until|till|and)\s+"
# 11月20日〜22日, Nov 20-22, between Nov 20 and 22, 11月20日、21日: a bare day after a date
_DAY_CONTINUATION = (
    r"(?:\s*(?:[〜～~\-–—、と]|から)\s*|\s+(?i:to|through|thru|until|till|and)\s+)"
    r"([0-9]{1,2})(?:日|(?i:st|nd|rd|th))?(?![0-9A-Za-z_/:月]|\.[0-9])"
)
_OPEN_SUFFIX = r"\s*(から|以降|以後|まで|以前|時点|現在|より前|より後|[〜～~](?![0-9]))"
_OPEN_PREFIX = r"(?<![A-Za-z0-9_])(?i:(since|after|from|until|till|through|before|between|as\s+of))\s+$"
_SINCE_WORDS = {"since", "から", "以降", "以後", "〜", "～", "~"}
_AFTER_WORDS = {"after", "より後"}
# "as of September" / 9月時点 / 9月現在: how things stood then, told by anything up to its end.
_UNTIL_WORDS = {"until", "till", "through", "as of", "まで", "以前", "時点", "現在"}
# Glue that only attached the phrase to the sentence: removed with it.
_GLUE_BEFORE = r"(?<![A-Za-z0-9_])(?i:(?:in|on|at|during|from|of|for|over)\s+(?:the\s+)?|the\s+)$"
_GLUE_AFTER = r"(?:'s|’s)|(?:[ \u3000]?(?:頃|ごろ))?(?:[ \u3000]?(?:には|では|にて|の|に|は(?!じめ)|で(?![すし])|も))?"
_LIST_GLUE = r"\s*(?:[,、と&や/]|(?i:and|or))?\s*"  # 昨日と今日 / yesterday and today


_UNTIL_SUFFIX = r"\s*まで"
_PREVIOUS_WORD = r"([A-Za-z\u0130\u0131\u017f\u212a]+)[\s,]*$"
_PRONOUN_AFTER = r"\s+(?:I|we|you|he|she|they|it|i)(?![A-Za-z])"
_YEAR_THEN_CONNECTOR = r"(?:19|20)[0-9]{2}\s*(?:[-–~〜]|(?i:to|and|until|through))\s*$"

_PATTERNS: dict[str, re.Pattern] = {}  # source -> compiled: empty at import


def _compiled(source: str) -> re.Pattern:
    """The pattern, compiled on its first use in the process."""
    pattern = _PATTERNS.get(source)
    if pattern is None:
        pattern = _PATTERNS[source] = re.compile(source)
    return pattern


def _previous_word(text: str, start: int) -> str:
    """The English word just before `start`, spelt for lookup ('' if none)."""
    m = _compiled(_PREVIOUS_WORD).search(text, max(0, start - 16), start)
    return _fold(m.group(1)) if m else ""


# --------------------------------------------------------------------------- matching


class _Hit:
    """A recognised expression (or range) and where it sits in the query."""

    __slots__ = ("start", "end", "since", "until", "kind", "year_inferred")

    def __init__(self, start: int, end: int, span: _Span) -> None:
        self.start, self.end = start, end
        self.since, self.until = span.since, span.until
        self.kind, self.year_inferred = span.kind, span.year_inferred


def _find_hits(norm: str, today: datetime.date, rules) -> list[_Hit]:
    """Every rule's matches; where they overlap, the leftmost then the longest wins. A day the calendar does
    not have (2025年2月29日) takes every reading that overlaps it along; more than MAX_CANDIDATES matches that
    read as a time (a day the calendar lacks included) and the query names no time: nothing. Matches a rule's
    handler turns down do not count, so that the rules left out for a query (_rules_for), whose matches all
    would be turned down, change nothing."""
    found = []
    no_such_days = []
    candidates = 0
    for pattern, handler in rules:
        for m in pattern.finditer(norm):
            try:
                span = handler(m, today, norm)
            except _NoSuchDay:
                candidates += 1
                if candidates > MAX_CANDIDATES:
                    return []
                no_such_days.append((m.start(), m.end()))
                continue
            except (ValueError, OverflowError):  # 13月, day 32, or a date beyond year 1..9999
                continue
            if span is None:
                continue
            candidates += 1
            if candidates > MAX_CANDIDATES:
                return []
            start, end = m.start(), m.end()
            if span.kind == "date":  # take in a weekday that restates the date
                after = _compiled(_WEEKDAY_AFTER_DATE).match(norm, end)
                before = _compiled(_WEEKDAY_BEFORE_DATE).search(norm, max(0, start - 12), start)
                end = after.end() if after else end
                start = before.start() if before else start
            found.append((start, -end, _Hit(start, end, span)))
    found.sort(key=lambda f: (f[0], f[1]))
    hits: list[_Hit] = []
    for _, _, hit in found:
        if hits and hit.start < hits[-1].end:
            continue
        if any(hit.start < day_end and day_start < hit.end for day_start, day_end in no_such_days):
            continue
        hits.append(hit)
    return hits


def _combine(hits: list[_Hit], norm: str, today: datetime.date) -> list[_Hit]:
    """Join hits into ranges (X〜Y, since X, X まで ...); each result is one phrase."""
    windows = []
    i = 0
    while i < len(hits):
        hit = hits[i]
        following = hits[i + 1] if i + 1 < len(hits) else None
        try:
            ahead = _relative(following, norm) if following is not None else None
            closed = _weekday_relative(hit, following, norm) or _closed_range(hit, following, norm, today)
            if ahead is not None and ahead.start <= hit.start:  # "the last weekend of May": one phrase
                windows.append(_open_range(ahead, norm, today))
                i += 1
            elif closed is not None:
                windows.append(closed)
                i += 2
            else:
                continued = _continued_date(hit, following, norm)
                relative = _relative(continued or hit, norm)
                windows.append(_open_range(relative, norm, today) if relative else continued
                               or _open_range(hit, norm, today))
                i += 1
        except (ValueError, OverflowError):  # e.g. "11月20日〜31日": keep the date alone
            windows.append(hit)
            i += 1
        while i < len(hits) and hits[i].start < windows[-1].end:  # 11月20日の3日前: read as one phrase
            i += 1
    return windows


def _prefix_word(hit: _Hit, norm: str) -> tuple[str, int]:
    """('since', where 'since' starts) when a range word stands right before the hit."""
    m = _compiled(_OPEN_PREFIX).search(norm, max(0, hit.start - 12), hit.start)
    return (_fold(m.group(1)), m.start()) if m else ("", hit.start)


def _closed_range(left: _Hit, right: _Hit | None, norm: str, today) -> _Hit | None:
    """X〜Y / XからYまで / X to Y / between X and Y."""
    if right is None:
        return None
    gap = _compiled(_CONNECTOR).fullmatch(norm, left.end, right.start)
    if gap is None:
        return None
    word, start = _prefix_word(left, norm)
    if _fold(gap.group()) == "and" and word != "between":
        return None  # "yesterday and today" is a list: each stays a phrase of its own
    if word not in ("from", "between"):
        start = left.start
    since, until = left.since, right.until
    if right.kind == "weekday":  # 先週の月曜から水曜まで: the first Wednesday from that Monday
        until = left.since + _days((right.since.weekday() - left.since.weekday()) % 7)
    elif since > until:
        # A year-less right side first moves on a year, when the range has then begun by today:
        # "11月28日〜12月3日" on Dec 1 is this week's range, not one a year ago; "12月から1月"
        # on Dec 1 is this winter. Otherwise a year-less left side moves back a year.
        if right.year_inferred and left.since <= today:
            until = _shift_year(right.since, right.until, +1)[1]
        elif left.year_inferred:
            since = _shift_year(left.since, left.until, -1)[0]
        if since > until:
            since, until = min(left.since, right.since), max(left.until, right.until)
    end = right.end
    tail = _compiled(_UNTIL_SUFFIX).match(norm, end)
    return _Hit(start, tail.end() if tail else end, _span(since, until))


def _continued_date(left: _Hit, following: _Hit | None, norm: str) -> _Hit | None:
    """11月20日〜22日 / Nov 20-22: a date followed by a bare day (the next month's if smaller). Not a number
    that starts the following expression (1月1日と1週前: January 1st, and a week ago)."""
    if left.kind != "date":
        return None
    m = _compiled(_DAY_CONTINUATION).match(norm, left.end)
    if m is None:
        return None
    word, start = _prefix_word(left, norm)
    if _fold(m.group()).startswith("and") and word != "between":
        return None
    if word not in ("from", "between"):
        start = left.start
    day = int(m.group(1))
    first = left.since.replace(day=1) if day >= left.since.day else _month(left.since.year, left.since.month, -1)[0]
    tail = _compiled(_UNTIL_SUFFIX).match(norm, m.end())
    end = tail.end() if tail else m.end()
    if following is not None and end > following.start:
        return None
    return _Hit(start, end, _span(left.since, first.replace(day=day)))


def _open_range(hit: _Hit, norm: str, today: datetime.date) -> _Hit:
    """since X / X から / X以降: X..today; until X / X まで: ..X; before X / X より前: ..X-1."""
    start, end = hit.start, hit.end
    word, prefix_start = _prefix_word(hit, norm)
    if word and word not in ("from", "between"):
        start = prefix_start
    else:
        suffix = _compiled(_OPEN_SUFFIX).match(norm, end)
        if suffix is None:
            return hit  # "from last week" alone is just last week; "from" is glue
        word, end = suffix.group(1), suffix.end()
    if word in _SINCE_WORDS:
        since, until = hit.since, today
    elif word in _AFTER_WORDS:
        since, until = hit.until + _ONE_DAY, today
    elif word in _UNTIL_WORDS:
        since, until = None, hit.until
    else:  # before, より前
        since, until = None, hit.since - _ONE_DAY
    return _Hit(start, end, _span(since, until))


# ---- a day, week, weekend, month or year told from a date: "the day after November 20", "the weekend before
# 4 October", "two weeks after 6/1", "the Monday before July 24", "the first weekend of August 2023",
# 11月20日の前日 / 翌週 / 3日前. Each names the days it says, not everything before or after the date.
_COUNT = rf"{_EN_NUMBER}|(?:a\s+)?few|several"
_UNIT_BEFORE = (
    r"(?<![A-Za-z0-9_])(?i:"
    rf"(?P<phrase>(?:the\s+)?(?:(?P<count>{_COUNT})\s+)?"
    r"(?P<unit>day|night|morning|evening|afternoon|week|weekend|month|year)(?P<plural>s)?\s+(?P<direction>before|after))"
    r"\s+)$"
)
_NTH = r"first|second|third|fourth|last|1st|2nd|3rd|4th"
_NTH_UNIT_OF = (
    rf"(?<![A-Za-z0-9_])(?i:(?P<phrase>(?:the\s+)?(?P<nth>{_NTH})\s+(?P<unit>week|weekend|{_EN_WEEKDAY})"
    r"\s+(?:of|in))\s+)$"
)
_WEEK_OF = r"(?<![A-Za-z0-9_])(?i:(?P<phrase>(?:the\s+)?week(?P<end>end)?\s+of)\s+)$"
_WEEKDAY_LINK = r"\s+(?i:(before|after))\s+"
_JA_RELATIVE = (
    r"の?(?:(?P<day>(?:前日|翌日)(?!比))|(?P<week>(?:前週|翌週)(?![末比])|前の週(?!末)|次の週(?!末))"
    r"|(?P<weekend>(?:直?前|次)の週末)|(?P<following_weekend>翌週末)|(?:直?前|次)の(?P<weekday>[月火水木金土日])曜日?"
    r"|(?P<month>(?:前月|翌月)(?!比)|前の月|次の月)|(?P<same_week>の週)(?=[にのはでも、，,。?？!！\s]|$)"
    r"|(?P<count>[0-9]{1,3}|[一二三四五六七八九]?十[一二三四五六七八九]?|[一二三四五六七八九])日(?P<way>前|後)(?!後))"
)
_FUZZY_COUNTS = {"few": 3, "several": 7}
_NTH_NUMBER = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}


def _relative(hit: _Hit, norm: str) -> _Hit | None:
    """The days a phrase around a date names from it (see above), or None when none stands around it."""
    if hit.since is None or hit.until is None:
        return None
    # Each pattern is compiled and run only where a word it needs stands next to the date.
    lead = norm[max(0, hit.start - 40):hit.start].translate(_ASCII_FOLD).lower()
    tail = norm[hit.end:hit.end + 12]
    m = ("before" in lead or "after" in lead) and _compiled(_UNIT_BEFORE).search(norm, max(0, hit.start - 40),
                                                                                 hit.start)
    if m:
        n, fuzzy = _count(_fold(m.group("count") or ""), bool(m.group("plural")))
        since, until = _from_date(hit, _fold(m.group("unit")), n, fuzzy, _fold(m.group("direction")) == "after")
        return _Hit(m.start("phrase"), hit.end, _span(since, until))
    m = (any(word in lead for word in _NTH_NUMBER) or "last" in lead) and _compiled(_NTH_UNIT_OF).search(
        norm, max(0, hit.start - 30), hit.start)
    if m:
        unit, nth = _fold(m.group("unit")), _fold(m.group("nth"))
        if unit == "week":
            start = hit.until - _days(6) if nth == "last" else hit.since + _days(7 * (_NTH_NUMBER[nth] - 1))
            return _Hit(m.start("phrase"), hit.end, _span(start, start + _days(6)))
        weekday = 5 if unit == "weekend" else _weekday(unit)  # a weekend counts by its Saturday
        if nth == "last":
            day = hit.until - _days((hit.until.weekday() - weekday) % 7)
        else:
            day = hit.since + _days((weekday - hit.since.weekday()) % 7 + 7 * (_NTH_NUMBER[nth] - 1))
        if not hit.since <= day <= hit.until:
            return None  # the fifth Monday of a month that has four
        return _Hit(m.start("phrase"), hit.end, _span(day, day + _ONE_DAY if unit == "weekend" else day))
    m = hit.since == hit.until and "week" in lead and _compiled(_WEEK_OF).search(norm, max(0, hit.start - 20),
                                                                                 hit.start)
    if m:  # the week of November 20: the calendar week that holds the day; its weekend, that week's
        monday = _monday(hit.since)
        since, until = (monday + _days(5), monday + _days(6)) if m.group("end") else (monday, monday + _days(6))
        return _Hit(m.start("phrase"), hit.end, _span(since, until))
    m = any(c in tail for c in "前翌次後週") and _compiled(_JA_RELATIVE).match(norm, hit.end)
    if m:
        after = m.group().removeprefix("の")[:1] in "翌次" or m.group("way") == "後"
        if m.group("following_weekend"):  # 11月20日の翌週末: the weekend of the calendar week after the date's
            monday = _week(hit.until + _days(7), 0)[0]
            since, until = monday + _days(5), monday + _days(6)
        elif m.group("same_week"):  # 11月20日の週: the calendar week that holds the day
            if hit.since != hit.until:
                return None
            since, until = _week(hit.since, 0)
        elif m.group("weekday"):  # 11月20日の前の金曜: the last Friday strictly before the date
            since = until = _weekday_next_to(hit, _weekday(m.group("weekday")), after)
        elif m.group("count"):
            since, until = _from_date(hit, "day", _number(m.group("count")), False, after)
        elif m.group("week"):  # 翌週 / 前の週: the calendar week after (before) the one that holds the date
            since, until = _week(hit.until + _days(7) if after else hit.since - _days(7), 0)
        else:
            unit = next(u for u in ("day", "weekend", "month") if m.group(u))
            since, until = _from_date(hit, unit, 0, False, after)
        return _Hit(hit.start, m.end(), _span(since, until))
    return None


def _count(word: str, plural: bool) -> tuple[int, bool]:
    """(n, fuzzy) of a count before a unit: "two" (2, False); "a few", "several", "a couple of" days and a
    plural with no count ("the days before") (3, 7, 2, 3; True): up to that many; none (0, False): the one."""
    key = "couple" if "couple" in word else word.split()[-1] if word else ""
    if key in _FUZZY_COUNTS or (plural and key in ("couple", "")):
        return _FUZZY_COUNTS.get(key, 2 if key == "couple" else 3), True
    return (_number(word) if word else 0), False


def _weekday_next_to(hit: _Hit, weekday: int, after: bool) -> datetime.date:
    """The last such weekday strictly before the phrase's days, or the first strictly after them."""
    if after:
        return hit.until + _days((weekday - hit.until.weekday()) % 7 or 7)
    return hit.since - _days((hit.since.weekday() - weekday) % 7 or 7)


def _from_date(hit: _Hit, unit: str, n: int, fuzzy: bool, after: bool):
    """(since, until) of `n` units (0: the one next to it; fuzzy: up to n of them) before or after a phrase's
    days. A day-like unit (night, morning...) is a day; n weeks is the week around that day."""
    sign = 1 if after else -1
    edge = hit.until if after else hit.since
    if unit in ("night", "morning", "evening", "afternoon"):
        unit = "day"
    if unit == "weekend":
        unit, n = ("week", n) if fuzzy else ("weekend", max(n, 1))
    if unit == "day":
        if fuzzy:
            return _ordered(edge + _days(sign), edge + _days(sign * n))
        return (edge + _days(sign * max(n, 1)),) * 2
    if unit == "week":
        if fuzzy:
            return _ordered(edge + _days(sign), edge + _days(sign * 7 * n))
        if n:
            middle = edge + _days(sign * 7 * n)
            return middle - _days(3), middle + _days(3)
        return _ordered(edge + _days(sign), edge + _days(sign * 7))
    if unit == "weekend":  # the n-th Saturday and Sunday wholly before (after) the phrase's days
        if after:
            saturday = edge + _days((5 - edge.weekday()) % 7 or 7)
        else:
            saturday = edge - _days((edge.weekday() - 6) % 7 or 7) - _ONE_DAY
        saturday += _days(sign * 7 * (n - 1))
        return saturday, saturday + _ONE_DAY
    if unit == "month":
        if fuzzy:
            far = _month(edge.year, edge.month, -sign * n)
            return _ordered(edge + _days(sign), far[1] if after else far[0])
        return _month(edge.year, edge.month, -sign * max(n, 1))
    # year
    if fuzzy:
        return _ordered(edge + _days(sign), _year(edge.year + sign * n)[1 if after else 0])
    return _year(edge.year + sign * max(n, 1))


def _ordered(a: datetime.date, b: datetime.date) -> tuple[datetime.date, datetime.date]:
    return (a, b) if a <= b else (b, a)


def _weekday_relative(hit: _Hit, following: _Hit | None, norm: str) -> _Hit | None:
    """the Monday before July 24 / the Saturday after October 28: that one day."""
    if hit.kind != "weekday" or following is None or following.since is None or following.until is None:
        return None
    link = _compiled(_WEEKDAY_LINK).fullmatch(norm, hit.end, following.start)
    if link is None:
        return None
    day = _weekday_next_to(following, hit.since.weekday(), _fold(link.group(1)) == "after")
    return _Hit(hit.start, following.end, _span(day))


# --------------------------------------------------------------------------- removal


def _with_glue(start: int, end: int, norm: str) -> tuple[int, int]:
    """Widen a phrase's span over the particle or preposition that only attached it."""
    after = _compiled(_GLUE_AFTER).match(norm, end)
    possessive = after is not None and after.group() in ("'s", "’s")
    if after:
        end = after.end()
    # "notes from last week" -> "notes", but "notes from yesterday's standup" keeps "from".
    if not possessive:
        before = _compiled(_GLUE_BEFORE).search(norm, max(0, start - 12), start)
        if before:
            start = before.start()
    return start, end


_OPENERS = "([（「【"
_CLOSERS = ")]）」】"
_COMMAS = ",、，"
_EDGE_JUNK = " \t\r\n\u3000" + _COMMAS + ":;・"


def _cuts(spans: list[tuple[int, int]], norm: str) -> list[tuple[int, int]]:
    """The spans the text loses, in order and apart: two phrases in a row are one cut, with the list word
    between them (昨日と今日 / Mon and Tue)."""
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and (start <= merged[-1][1] or _compiled(_LIST_GLUE).fullmatch(norm, merged[-1][1], start)):
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _remove(query: str, cuts: list[tuple[int, int]]) -> str:
    """The query without the cuts, tidied where the cuts were, and only there."""
    text, pos = query[: cuts[0][0]], cuts[0][1]
    for start, end in cuts[1:]:
        text, pos = _join_at_cut(text, query[pos:start]), end
    return _join_at_cut(text, query[pos:]).strip(_EDGE_JUNK)


def _join_at_cut(left: str, right: str) -> str:
    """Join the text before a removed phrase to the text after it, so that it reads naturally."""
    stripped_left, stripped_right = left.rstrip(), right.lstrip()
    space_before, space_after = len(stripped_left) != len(left), len(stripped_right) != len(right)
    left, right = stripped_left, stripped_right
    if left[-1:] and left[-1] in _OPENERS and right[:1] and right[0] in _CLOSERS:
        left, right = left[:-1].rstrip(), right[1:].lstrip()  # "notes (yesterday)" -> "notes"
    if right[:1] and right[0] in _COMMAS and (not left or left[-1] in _COMMAS + _OPENERS):
        right = right[1:].lstrip()  # "先週、何を" -> "何を"; "A, yesterday, B" -> "A, B"
    if left[-1:] and left[-1] in _COMMAS and right[:1] and right[0] in "?!.？！。":
        left = left[:-1]  # "what did we decide, yesterday?" -> "what did we decide?"
    if not left or not right:
        return left + right
    if right[0] in ".,?!;:、。，？！" + _CLOSERS:
        return left + right  # punctuation hugs the word before it
    if left[-1] > "\u2e7f" and right[0] > "\u2e7f":
        # Between Japanese words a space stays only where the query had one on both sides
        # (リリース 先週 手順); 日は 2026-11-27 で確定 had it only around the removed date.
        spaced = space_before and space_after
    else:
        spaced = space_before or space_after
    return left + (" " if spaced else "") + right
